"""Text buffers join fragments as they come: same text, few pieces, whatever the delta sizes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream._accumulate import FRAGMENTS, add_fragment, settle


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


@given(st.lists(st.text(max_size=40), max_size=200))
def test_a_settled_buffer_is_one_piece_of_the_same_text(pieces: list[str]) -> None:
    buf = list(pieces)
    held = buf
    settle(buf)
    assert buf is held  # in place: a decoder holding the buffer keeps it
    assert "".join(buf) == "".join(pieces)
    assert len(buf) <= 1 or len(pieces) == len(buf) == 1


def _runs(n: int) -> bytes:
    """A Gemini stream whose runs (text, thought) switch every 10 chunks."""
    chunk = b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"w%d ","thought":%s}]},"index":0}]}\n\n'
    return b"".join(chunk % (i, b"true" if (i // 10) % 2 else b"false") for i in range(n))


@pytest.mark.parametrize("emit", [False, True], ids=["direct fold", "events"])
def test_a_closed_part_holds_its_text_as_one_piece(emit: bool) -> None:
    agg = ms.StreamAggregator("gemini", emit=emit)
    agg.feed(_runs(100))
    state = agg._agg
    assert state is not None
    parts = state._messages[0].parts
    assert len(parts) == 10
    assert all(part.closed and len(part.text or ()) == 1 for part in parts[:-1])
    assert len(parts[-1].text or ()) == 10  # the open part still takes deltas one by one
    texts = [part.text for part in agg.finish().messages[0].content]  # type: ignore[union-attr]
    assert texts == ["".join(f"w{i} " for i in range(k, k + 10)) for k in range(0, 100, 10)]
