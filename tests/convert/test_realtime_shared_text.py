"""A converter's Realtime encoder reads a text part's text from the aggregator, keeping no copy.

In a converter (``read_text_from``) each message item counts the characters written to a text
part (``Item.written``) rather than keeping them (``Item.pieces``); at the part's end the text
is read from the aggregator's part (``maas_stream._emit.written_text``): as far as it was
written when the item ends while the part is open (a call came between; the aggregator may
already have folded the rest of the source chunk), with the remainder handed on before the
part's ``PartDone`` when the source's final text completes the deltas. The bytes must be those
of the encoder used alone, which keeps its own copy.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import maas_stream as ms
from maas_stream import _emit
from maas_stream.protocols.openai_realtime import _encode
from maas_stream.protocols.openai_realtime._encode import StreamEncoder
from tests.conftest import chat_chunk
from tests.convert.test_responses_shared_text import _text_call_text  # (one home)

_TARGET = "openai-realtime"


def _alone(data: bytes, protocol: str) -> bytes:
    """What the encoder used alone (it keeps its own text) writes, fed the converter's events."""
    source = ms.StreamAggregator(protocol, emit=True)
    encoder = StreamEncoder()
    evs = [*source.feed(data), *source.finish_events()]
    return b"".join([encoder.encode(e) for e in evs]) + encoder.finish()


def _converted(data: bytes, protocol: str, size: int | None = None) -> bytes:
    conv = ms.StreamConverter(_TARGET, protocol=protocol, fail_closed=False)
    pieces = [data] if size is None else [data[i : i + size] for i in range(0, len(data), size)]
    return b"".join([conv.feed(piece) for piece in pieces]) + conv.finish()


def _texts(out: bytes) -> list[str]:
    """The texts of the ``response.output_text.done`` events."""
    msgs = [json.loads(line)["msg"] for line in out.splitlines()]
    return [m["text"] for m in msgs if m["type"] == "response.output_text.done"]


def test_a_converter_keeps_no_text_of_its_own() -> None:
    deltas = [f"word{i} é " for i in range(200)]  # past FRAGMENTS: an own copy would hold joined pieces
    start = chat_chunk({"role": "assistant", "content": ""})
    data = start + b"".join([chat_chunk({"content": d}) for d in deltas])
    conv = ms.StreamConverter(_TARGET, protocol="openai-chat")
    conv.feed(data)
    encoder = conv._encoder
    assert isinstance(encoder, StreamEncoder)
    (item,) = encoder._w.output
    assert item.pieces is None  # no text kept
    assert item.written == {0: len("".join(deltas))}  # only what was written, counted
    # The encoder used alone keeps its own copy (what the converter's does not).
    alone = StreamEncoder()
    source = ms.StreamAggregator("openai-chat", emit=True)
    for ev in source.feed(data):
        alone.encode(ev)
    (own,) = alone._w.output
    assert own.written is None
    assert own.pieces is not None
    assert "".join(own.pieces[0]) == "".join(deltas)
    finished = data + chat_chunk({}, "stop") + b"data: [DONE]\n\n"
    out = _converted(finished, "openai-chat")
    assert out == _alone(finished, "openai-chat")
    assert _texts(out) == ["".join(deltas)]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the encoder reads from the aggregator."""
    read: list[str] = []
    original = _emit.written_text

    def spy(state: Any, count: int, done: Any = None) -> str:
        text = original(state, count, done)
        read.append(text)
        return text

    monkeypatch.setattr(_encode, "written_text", spy)
    return read


@pytest.mark.parametrize("size", [None, 1, 97], ids=["whole", "bytes", "97"])
@pytest.mark.parametrize("finished", [True, False], ids=["finished", "cut"])
def test_a_part_ended_at_a_call_reads_what_was_written(
    monkeypatch: pytest.MonkeyPatch, finished: bool, size: int | None
) -> None:
    data = _text_call_text(finished)  # (the same stream the Responses test converts)
    read = _spy(monkeypatch)
    out = _converted(data, "openai-chat", size)
    before = "".join(f"before{i} é " for i in range(70))
    assert read == [before]  # read once: the part ended at the call; its rest keeps its own text
    assert out == _alone(data, "openai-chat")
    assert _texts(out) == [before, "".join(f"after{i} " for i in range(5))]


def _sse(event: str, body: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps({'type': event, **body})}\n\n".encode()


def _responses(deltas: list[str], final: str) -> bytes:
    """A Responses stream whose ``output_text.done`` text is ``final`` (not always the deltas')."""
    ids = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": final, "annotations": []}
    response = {"id": "resp_1", "object": "response", "model": "m", "output": []}
    return b"".join(
        [
            _sse("response.created", {"response": {**response, "status": "in_progress"}}),
            _sse("response.output_item.added", {"output_index": 0, "item": item}),
            _sse("response.content_part.added", {**ids, "part": {**part, "text": ""}}),
            *[_sse("response.output_text.delta", {**ids, "delta": d}) for d in deltas],
            _sse("response.output_text.done", {**ids, "text": final}),
            _sse("response.content_part.done", {**ids, "part": part}),
            _sse(
                "response.output_item.done",
                {"output_index": 0, "item": {**item, "status": "completed", "content": [part]}},
            ),
            _sse("response.completed", {"response": {**response, "status": "completed"}}),
        ]
    )


@pytest.mark.parametrize(
    ("final", "written"),
    [("Hello, world", "Hello, world"), ("Goodbye", "Hello, ")],
    ids=["completed by the final text", "a final text that differs"],
)
def test_a_part_done_reads_the_remainder_handed_on(
    final: str, written: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _responses(["Hel", "lo, "], final)
    read = _spy(monkeypatch)
    out = _converted(data, "openai-responses")
    assert read == [written]  # the remainder the aggregator handed on, which its fold does not keep
    assert out == _alone(data, "openai-responses")
    assert _texts(out) == [written]
