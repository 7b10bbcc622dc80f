"""Anthropic decoder: honest errors. Bad provider input raises ``RemoteProtocolError`` (naming
the frame), never ``TypeError``/``KeyError``; a block index costs memory by what was received."""

from __future__ import annotations

import json
import tracemalloc
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream.protocols.anthropic import to_canonical
from maas_stream.sse import Decoder
from tests.conftest import recordings, status_both_ways

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

BAD_VALUES: list[Any] = [None, 7, -1, 1.5, True, "x", [], [1], {}, {"type": 5}]
TARGETS = ("anthropic", "openai-chat", "openai-responses", "gemini", "google-interactions")
BODIES = ("anthropic", "openai-chat", "openai-responses", "gemini")


def _frames(path: Path) -> list[tuple[str, Any]]:
    dec = Decoder()
    return [
        (e.event, json.loads(e.data)) for e in dec.feed(path.read_bytes()) + dec.finish() if e.data.strip()
    ]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside a frame, three levels deep (lists: their first item)."""
    if len(prefix) >= 3:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, key)
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list) and value:
        yield (*prefix, 0)
        yield from _paths(value[0], (*prefix, 0))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [_replaced(value[0], rest, new), *value[1:]]


def _encode(frames: list[tuple[str, Any]]) -> bytes:
    return b"".join(f"event: {n}\ndata: {json.dumps(p)}\n\n".encode() for n, p in frames)


def _aggregate(data: bytes) -> ms.Response | ms.RemoteProtocolError:
    try:
        return ms.aggregate(data, protocol="anthropic")
    except ms.RemoteProtocolError as exc:  # only this one: anything else fails the test
        return exc


SMALL = [p for p in recordings("anthropic") if len(_frames(p)) <= 40]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in SMALL])
def test_wrong_json_types_raise_remote_protocol_error_only(path: Path) -> None:
    """Each field of each frame, given each wrong JSON type in turn: the stream decodes (and
    every encoder takes the result) or it raises RemoteProtocolError naming the frame. Nothing
    else: a citation whose ``type`` is a number once reached an encoder as a TypeError."""
    frames = _frames(path)
    raised = 0
    tried = 0
    for i, (name, payload) in enumerate(frames):
        for key_path in _paths(payload):
            for bad in BAD_VALUES:
                mutated = [*frames[:i], (name, _replaced(payload, key_path, bad)), *frames[i + 1 :]]
                data = _encode(mutated)
                tried += 1
                resp = _aggregate(data)
                if isinstance(resp, ms.RemoteProtocolError):
                    raised += 1
                    assert resp.frame is not None
                    assert resp.frame <= i + 1
                    assert resp.protocol == "anthropic"
                    continue
                # What was accepted is well-formed: every encoder takes it.
                for target in TARGETS:
                    out = ms.convert(data, to=target, protocol="anthropic", fail_closed=False)
                    assert out or not resp.messages
                for target in BODIES:
                    assert isinstance(ms.encode_response(resp, target), dict)
    assert tried > 100
    assert raised > 0


@pytest.mark.parametrize(
    ("frame", "needle"),
    [
        pytest.param(
            {"type": "content_block_start", "index": 0, "content_block": {"type": 5}}, "type", id="type"
        ),
        pytest.param(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": 3}},
            "'text' must be a string",
            id="text",
        ),
        pytest.param(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": []}},
            "'id' must be a string",
            id="call-id",
        ),
        pytest.param(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": "", "citations": [5]},
            },
            "citation must be an object",
            id="citation",
        ),
        pytest.param(
            {"type": "content_block_start", "index": -1, "content_block": {}}, "index", id="negative"
        ),
        pytest.param({"type": "content_block_delta", "index": 0, "delta": "x"}, "delta", id="delta-string"),
        pytest.param(
            {"type": "content_block_delta", "index": 0, "delta": {"type": 4}}, "type", id="delta-type"
        ),
        pytest.param(
            {"type": "message_delta", "delta": {"stop_reason": 1}, "usage": {}},
            "stop_reason",
            id="stop-reason",
        ),
        pytest.param(
            {"type": "message_delta", "delta": {}, "usage": {"output_tokens": "9"}},
            "integer",
            id="usage-count",
        ),
        pytest.param({"type": "message_delta", "delta": {}, "usage": 3}, "usage must be", id="usage-type"),
        pytest.param({"type": 5}, "type", id="frame-type"),
    ],
)
def test_named_faults(frame: dict[str, Any], needle: str) -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "content": [], "usage": {}}}
    data = _encode([("message_start", start), (str(frame["type"]), frame)])
    with pytest.raises(ms.RemoteProtocolError, match=needle) as info:
        ms.aggregate(data, protocol="anthropic")
    assert info.value.frame == 2


@pytest.mark.parametrize("index", [10**9, 2**62, 10**40])
def test_a_block_index_costs_memory_by_what_was_received(index: int) -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "content": [], "usage": {}}}
    frames = [
        ("message_start", start),
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": "hi"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ("message_stop", {"type": "message_stop"}),
    ]
    data = _encode(frames)
    tracemalloc.start()
    try:
        resp = ms.aggregate(data, protocol="anthropic")
        out = ms.convert(data, to="anthropic", protocol="anthropic")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024
    (message,) = resp.messages
    assert message.content == [ms.TextPart(text="hi")]
    assert b'"index":0' in out  # the output counts its own blocks


def test_history_block_of_wrong_type_is_a_validation_error() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]}
    with pytest.raises(ms.ValidationError, match=r"messages\[0\]\.content\[0\]"):
        to_canonical(body)


_EMPTY_START = {
    "type": "message_start",
    "message": {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [], "usage": {}},
}
_EMPTY_BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def _sse_of(*payloads: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + p["type"].encode() + b"\ndata: " + json.dumps(p).encode() + b"\n\n" for p in payloads
    )


@pytest.mark.parametrize("kind", ["text_delta", "thinking_delta", "input_json_delta"])
def test_an_empty_delta_after_the_end_is_the_same_error_both_ways(kind: str) -> None:
    # The direct fold skipped an empty delta before asking whether the message had ended.
    field = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}[kind]
    late = {"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: ""}}
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}
    both = status_both_ways(
        _sse_of(
            _EMPTY_START,
            _EMPTY_BLOCK,
            {"type": "content_block_stop", "index": 0},
            stop,
            {"type": "message_stop"},
            late,
        ),
        "anthropic",
    )
    assert both[0] == both[1]
    assert both[0].startswith("error: ")


def test_an_empty_delta_while_streaming_changes_nothing_either_way() -> None:
    def delta(text: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}

    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}
    end: list[dict[str, Any]] = [{"type": "content_block_stop", "index": 0}, stop, {"type": "message_stop"}]
    with_empty = _sse_of(_EMPTY_START, _EMPTY_BLOCK, delta("a"), delta(""), delta("b"), *end)
    without = _sse_of(_EMPTY_START, _EMPTY_BLOCK, delta("a"), delta("b"), *end)
    assert status_both_ways(with_empty, "anthropic") == ["completed", "completed"]
    assert ms.aggregate(with_empty, protocol="anthropic") == ms.aggregate(without, protocol="anthropic")
    assert ms.aggregate(with_empty, protocol="anthropic").messages[0].content[0].text == "ab"  # type: ignore[union-attr]
