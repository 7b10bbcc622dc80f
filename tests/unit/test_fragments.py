"""Text buffers join fragments as they come: same text, few pieces, whatever the delta sizes."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream._accumulate import FRAGMENTS, add_fragment


@given(st.lists(st.text(max_size=40), max_size=600))
def test_the_joined_text_is_what_was_appended(pieces: list[str]) -> None:
    buf: list[str] = []
    for piece in pieces:
        add_fragment(buf, piece)
    assert "".join(buf) == "".join(pieces)
    assert len(buf) < FRAGMENTS + 2 * math.log2(len(pieces) + 2) + 2


def test_a_long_stream_keeps_few_pieces_and_its_text() -> None:
    frames = b"".join(
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"w%d "},"finish_reason":null}]}\n\n' % i
        for i in range(5000)
    )
    agg = ms.StreamAggregator("openai-chat")
    agg.feed(frames)
    text = "".join(f"w{i} " for i in range(5000))
    assert agg.snapshot().messages[0].content[0].text == text  # type: ignore[union-attr]
