"""A converter's Responses encoder reads a text part's text from the aggregator, keeping no copy.

A :class:`SharedTextWriter` counts the characters it wrote. When a message item ends while its
text part is still open (a Chat call starts after some text; the response is cut), the part
ends with that much of the aggregator's text: the aggregator may already have folded the rest of
the same source chunk, text written after the call included, which goes to a new content part.
The bytes must be those of an encoder that kept its own copy, whole and byte by byte.
"""

from __future__ import annotations

from typing import Any

import pytest

import maas_stream as ms
from maas_stream.protocols.openai_responses import StreamEncoder
from maas_stream.protocols.openai_responses._text_writer import SharedTextWriter
from tests.conftest import chat_chunk


def _text_call_text(finished: bool) -> bytes:
    """Text, a call, more text after the call (one message): the item ends while its part is open."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    args = {"index": 0, "function": {"arguments": '{"a": 1}'}}
    chunks = [
        chat_chunk({"role": "assistant", "content": ""}),
        *[chat_chunk({"content": f"before{i} é "}) for i in range(70)],  # past FRAGMENTS: joined pieces
        chat_chunk({"tool_calls": [call]}),
        chat_chunk({"tool_calls": [args]}),
        *[chat_chunk({"content": f"after{i} "}) for i in range(5)],
    ]
    if finished:
        chunks += [chat_chunk({}, "tool_calls"), b"data: [DONE]\n\n"]
    return b"".join(chunks)


def _kept(data: bytes) -> bytes:
    """What an encoder that keeps its own text writes for ``data`` (fed the converter's events)."""
    source = ms.StreamAggregator("openai-chat", emit=True)
    encoder = StreamEncoder()
    events = [*source.feed(data), *source.finish_events()]
    return b"".join([encoder.encode(e) for e in events]) + encoder.finish()


@pytest.mark.parametrize("finished", [True, False], ids=["finished", "cut"])
@pytest.mark.parametrize("size", [None, 1, 97], ids=["whole", "bytes", "97"])
def test_a_part_ended_early_reads_what_was_written(
    finished: bool, size: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _text_call_text(finished)
    read: list[str] = []
    original = SharedTextWriter.read_from

    def spy(self: SharedTextWriter, state: Any) -> str:
        text: str = original(self, state)
        read.append(text)
        return text

    monkeypatch.setattr(SharedTextWriter, "read_from", spy)
    conv = ms.StreamConverter("openai-responses", protocol="openai-chat", fail_closed=False)
    pieces = [data] if size is None else [data[i : i + size] for i in range(0, len(data), size)]
    out = b"".join([conv.feed(piece) for piece in pieces]) + conv.finish()
    before = "".join(f"before{i} é " for i in range(70))
    assert read == [before]  # the part ended at the call, with what was written before it
    assert out == _kept(data)
    response = ms.aggregate(out, protocol="openai-responses")
    texts = [p.text for m in response.messages for p in m.content if isinstance(p, ms.TextPart)]
    assert texts == [before, "".join(f"after{i} " for i in range(5))]
    assert response.status == ("completed" if finished else "incomplete")
