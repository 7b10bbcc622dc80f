"""The Gemini stream encoder on the aggregator's output: deltas only, one replay rule, drop records."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream import events as ev
from maas_stream.protocols import gemini
from tests.conftest import corpus, params, recordings
from tests.protocols.gemini_oracle import oracle

if TYPE_CHECKING:
    from pathlib import Path

SSE = ("openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions")
SOURCES = [p for name in SSE for p in [*recordings(name), *corpus(name)]]


def _encode(events: list[Any]) -> tuple[bytes, gemini.StreamEncoder, list[Any]]:
    """Run events through an emitting aggregator into the encoder, as the converter does."""
    agg = ms.Aggregator(events[0].protocol, emit=True)
    enc = gemini.StreamEncoder()
    seen: list[Any] = []
    out = b""
    for event in events:
        for canonical in agg.feed(event):
            seen.append(canonical)
            out += enc.encode(canonical)
    for canonical in agg.finish_events():
        seen.append(canonical)
        out += enc.encode(canonical)
    return out + enc.finish(), enc, seen


def _chunks(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(f[6:]) for f in out.split(b"\r\n\r\n") if f.startswith(b"data: ")]


def _parts(out: bytes) -> list[dict[str, Any]]:
    """The parts written, but for the bare empty text every finish chunk carries."""
    return [
        p
        for c in _chunks(out)
        for cand in c.get("candidates", [])
        for p in cand.get("content", {}).get("parts", [])
        if p != {"text": ""}
    ]


def test_whole_values_arrive_as_deltas_and_are_written_once() -> None:
    call = ms.ToolCallPart(id="call_1", name="f", arguments='{"a":1}')
    out, enc, seen = _encode(
        [
            ev.ResponseStart(protocol="anthropic", id="r"),
            ev.MessageStart(message=0),
            ev.PartStart(message=0, part=0, value=ms.TextPart(text="whole text")),
            ev.PartDone(message=0, part=0),
            ev.PartStart(message=0, part=1, value=ms.ReasoningPart(text="whole thought")),
            ev.PartDone(message=0, part=1),
            ev.PartStart(message=0, part=2, value=call),
            ev.PartDone(message=0, part=2),
            ev.MessageDone(message=0, finish_reason="stop"),
            ev.ResponseDone(finish_reason="stop"),
        ]
    )
    starts = [e.value for e in seen if isinstance(e, ev.PartStart)]
    assert [getattr(v, "text", None) or getattr(v, "arguments", "") for v in starts] == ["", "", ""]
    assert any(isinstance(e, ev.ArgumentsDelta) for e in seen)
    assert _parts(out) == [
        {"text": "whole text"},
        {"text": "whole thought", "thought": True},
        {"functionCall": {"id": "call_1", "name": "f", "args": {"a": 1}}},
    ]
    assert enc.lossy == []
    assert _chunks(out)[-1]["candidates"][0]["finishReason"] == "STOP"
    expected = oracle(out)
    assert [c["name"] for c in expected.candidates[0].calls] == ["f"]


def test_replay_follows_the_source_protocol() -> None:
    def events(protocol: str) -> list[Any]:
        return [
            ev.ResponseStart(protocol=protocol),
            ev.MessageStart(message=0),
            ev.PartStart(message=0, part=0, value=ms.TextPart(text="")),
            ev.SignatureDelta(message=0, part=0, signature="c2ln"),
            ev.TextDelta(message=0, part=0, text="hi"),
            ev.PartStart(
                message=0,
                part=1,
                value=ms.ToolCallPart(id="c", name="f", arguments="{}", signature="c2lnMg=="),
            ),
            ev.PartDone(message=0, part=1),
            ev.ResponseDone(finish_reason="stop"),
        ]

    own, enc, _ = _encode(events("gemini"))
    assert [p.get("thoughtSignature") for p in _parts(own)] == ["c2ln", "c2lnMg=="]
    assert enc.lossy == []
    foreign, enc, _ = _encode(events("anthropic"))
    assert b"thoughtSignature" not in foreign
    assert [(r.kind, r.count, r.source, r.target) for r in enc.lossy] == [
        ("signature", 2, "anthropic", "gemini")
    ]


def test_non_model_messages_are_left_out_like_in_the_body() -> None:
    out, enc, _ = _encode(
        [
            ev.ResponseStart(protocol="openai-realtime"),
            ev.MessageStart(message="u", role="user"),
            ev.PartStart(message="u", part=0, value=ms.TextPart(text="question")),
            ev.MessageDone(message="u"),
            ev.MessageStart(message="a"),
            ev.PartStart(message="a", part=0, value=ms.TextPart(text="answer")),
            ev.UnknownEvent(provider_type="session.created", raw={}),
            ev.ResponseDone(finish_reason="stop"),
        ]
    )
    assert _parts(out) == [{"text": "answer"}]
    assert {r.kind for r in enc.lossy} == {"message", "session_frame"}


def test_usage_known_before_an_error_is_written_before_it() -> None:
    out, _, _ = _encode(
        [
            ev.ResponseStart(protocol="openai-chat"),
            ev.MessageStart(message=0),
            ev.PartStart(message=0, part=0, value=ms.TextPart(text="partial")),
            ev.UsageUpdate(usage=ms.Usage(input_tokens=4, output_tokens=2)),
            ev.StreamErrorEvent(error=ms.StreamError(type="overloaded", message="busy")),
        ]
    )
    chunks = _chunks(out)
    assert chunks[-2]["usageMetadata"] == {
        "promptTokenCount": 4,
        "candidatesTokenCount": 2,
        "totalTokenCount": 6,
    }
    assert chunks[-1] == {"error": {"code": 500, "message": "busy", "status": "OVERLOADED"}}
    resp = ms.aggregate(out, protocol="gemini")
    assert resp.status == "failed"
    assert resp.usage is not None
    assert resp.usage.output_tokens == 2


def test_decoder_leaves_the_tool_calls_rule_to_the_aggregator() -> None:
    path = next(p for p in recordings("gemini") if p.name == "thoughts_text_parallel_calls.sse")
    decoder = gemini.StreamDecoder()
    events = decoder.feed(path.read_bytes()) + decoder.finish()
    done = [e for e in events if isinstance(e, ev.MessageDone | ev.ResponseDone)]
    assert {e.finish_reason for e in done} == {"stop"}
    assert all(e.value.provider == "gemini" for e in done if isinstance(e, ev.MessageDone) and e.value)
    assert ms.aggregate(path.read_bytes()).finish_reason == "tool_calls"


def _ids(resp: ms.Response) -> set[str]:
    ids = {resp.id} if resp.id else set()
    for msg in resp.messages:
        if msg.id:
            ids.add(msg.id)
        for part in msg.content if isinstance(msg.content, list) else ():
            for name in ("id", "item_id", "tool_call_id", "file_id"):
                value = getattr(part, name, None)
                if isinstance(value, str) and len(value) > 3:
                    ids.add(value)
    return ids


@pytest.mark.parametrize("path", params(SOURCES))
def test_drop_records_name_no_ids_and_match_the_body(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data)
    conv = ms.StreamConverter("gemini", protocol=resp.protocol, fail_closed=False)
    conv.feed(data)
    conv.finish()
    body_drops = ms.DropLog("gemini", resp.protocol)
    gemini.encode_response(resp, drops=body_drops)
    ids = _ids(resp)
    for record in [*conv.lossy, *body_drops.records]:
        assert isinstance(record, ms.Dropped)
        assert not [i for i in ids if i in record.what], record
        assert record.target == "gemini"
        assert record.source == resp.protocol
    stream_kinds = {r.kind for r in conv.lossy} - {"unknown", "logprobs"}  # frame-level: no body form
    body_kinds = {r.kind for r in body_drops.records}
    assert stream_kinds <= body_kinds | {"field", "media"}


def test_signature_given_only_in_the_done_value_is_written_as_in_the_body() -> None:
    events = [
        ev.ResponseStart(protocol="gemini"),
        ev.MessageStart(message=0),
        ev.PartStart(message=0, part=0, value=ms.TextPart(text="")),
        ev.TextDelta(message=0, part=0, text="done"),
        ev.PartDone(message=0, part=0, value=ms.TextPart(text="done", signature="c2ln")),
        ev.MessageDone(message=0, finish_reason="stop"),
        ev.ResponseDone(finish_reason="stop"),
    ]
    out, enc, _ = _encode(events)
    assert _parts(out) == [{"text": "done"}, {"text": "", "thoughtSignature": "c2ln"}]
    resp = ms.aggregate(out, protocol="gemini")
    assert resp.messages[0].content == [ms.TextPart(text="done", signature="c2ln")]
    foreign, enc, _ = _encode([ev.ResponseStart(protocol="openai-responses"), *events[1:]])
    assert b"c2ln" not in foreign
    assert [(r.kind, r.count) for r in enc.lossy] == [("signature", 1)]


def test_alternating_parts_keep_their_kind_and_the_usage_known_then() -> None:
    """Text chunks are pre-encoded once per kind: each part still carries its kind and the latest usage."""

    def part(index: int, text: str) -> list[Any]:
        if index % 2:
            return [
                ev.PartStart(message=0, part=index, value=ms.TextPart(text="")),
                ev.TextDelta(message=0, part=index, text=text),
                ev.PartDone(message=0, part=index),
            ]
        return [
            ev.PartStart(message=0, part=index, value=ms.ReasoningPart(text="")),
            ev.ReasoningDelta(message=0, part=index, text=text),
            ev.PartDone(message=0, part=index),
        ]

    usage = ev.UsageUpdate(usage=ms.Usage(input_tokens=3, output_tokens=1, total_tokens=4))
    start = [ev.ResponseStart(protocol="anthropic", id="r"), ev.MessageStart(message=0)]
    out, _, _ = _encode(
        [*start, *part(0, "think"), *part(1, "a"), usage, *part(2, "more"), *part(3, "b"), ev.ResponseDone()]
    )
    assert _parts(out) == [
        {"text": "think", "thought": True},
        {"text": "a"},
        {"text": "more", "thought": True},
        {"text": "b"},
    ]
    totals = [c.get("usageMetadata", {}).get("totalTokenCount") for c in _chunks(out)]
    assert totals[:4] == [None, None, 4, 4]
