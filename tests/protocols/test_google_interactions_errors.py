"""Google Interactions: honest errors for bad provider input, and the encoder's content path.

* Bad frames (a field of the wrong JSON type, JSON nested too deeply, random shapes) raise
  ``RemoteProtocolError`` and nothing else: never ``TypeError``, ``KeyError``,
  ``RecursionError`` or ``AttributeError``.
* A step index is a key, never a size: a huge one costs nothing.
* The encoder takes content only from the aggregator's deltas: an emitted ``PartStart`` has
  empty text and arguments, and a call's arguments arrive as ``ArgumentsDelta`` before its
  ``PartDone``. Its drops are structured records with stable kinds and no ids.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream import ReasoningPart, TextPart, ToolCallPart
from maas_stream import events as ev
from maas_stream._aggregate import Aggregator
from maas_stream.protocols import google_interactions as gi
from tests.conftest import corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "google-interactions"


def sse(*payloads: Any) -> bytes:
    out = b""
    for p in payloads:
        data = p if isinstance(p, bytes) else json.dumps(p).encode()
        found = p.get("event_type") if isinstance(p, dict) else None
        name = found if isinstance(found, str) and found.strip() else "message"
        out += b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"
    return out


CREATED = {"event_type": "interaction.created", "interaction": {"id": "v1_x", "status": "in_progress"}}


def start(step: Any, index: Any = 0) -> dict[str, Any]:
    return {"event_type": "step.start", "index": index, "step": step}


def delta(d: Any, index: Any = 0) -> dict[str, Any]:
    return {"event_type": "step.delta", "index": index, "delta": d}


DEEP = json.loads("[" * 80 + "]" * 80)
BAD_FRAMES = {
    "step-id-int": [start({"type": "function_call", "id": 7, "name": "f"})],
    "step-name-list": [start({"type": "function_call", "id": "c", "name": ["f"]})],
    "thought-signature-int": [start({"type": "thought", "signature": 5})],
    "thought-summary-str": [start({"type": "thought", "summary": "s"})],
    "output-content-obj": [start({"type": "model_output", "content": {"type": "text"}})],
    "result-is-error-str": [
        start({"type": "function_result", "call_id": "c", "is_error": "yes"}),
        {"event_type": "step.stop", "index": 0},
    ],
    "server-call-id-int": [
        start({"type": "google_search_call", "id": 1}),
        {"event_type": "step.stop", "index": 0},
    ],
    "legacy-call-delta-id-obj": [
        {"event_type": "content.start", "index": 0, "content": {"type": "function_call"}},
        {"event_type": "content.delta", "index": 0, "delta": {"type": "function_call", "id": {"a": 1}}},
    ],
    "step-not-object": [start("thought")],
    "delta-type-int": [start({"type": "model_output"}), delta({"type": 3})],
    "index-str": [start({"type": "thought"}, index="0")],
    "interaction-id-int": [{"event_type": "interaction.created", "interaction": {"id": 5}}],
    "model-obj": [{"event_type": "interaction.created", "interaction": {"model": {"m": 1}}}],
    "status-list": [{"event_type": "interaction.completed", "interaction": {"status": ["completed"]}}],
    "usage-str-count": [
        {"event_type": "interaction.completed", "interaction": {"usage": {"total_tokens": "9"}}}
    ],
    "steps-not-objects": [{"event_type": "interaction.created", "interaction": {"steps": [1]}}],
    "deep-step": [start({"type": "brand_new", "x": DEEP})],
    "deep-arguments": [start({"type": "function_call", "id": "c", "name": "f", "arguments": DEEP})],
    "deep-delta": [start({"type": "google_search_call", "id": "g"}), delta({"type": "x", "content": DEEP})],
    "deep-unknown-frame": [{"event_type": "brand.new", "x": DEEP}],
    "deep-error": [{"event_type": "error", "error": DEEP}],
    "deeper-than-msgspec": [
        b'{"event_type":"step.start","index":0,"step":' + b"[" * 3000 + b"]" * 3000 + b"}"
    ],
    "deeper-unknown-field": [b'{"event_type":"step.stop","index":0,"x":' + b"[" * 3000 + b"]" * 3000 + b"}"],
}


@pytest.mark.parametrize("frames", [pytest.param(v, id=k) for k, v in BAD_FRAMES.items()])
def test_bad_input_raises_remote_protocol_error(frames: list[Any]) -> None:
    data = sse(CREATED, *frames)
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(data, protocol=PROTO)
    assert info.value.protocol == PROTO
    assert info.value.frame is not None
    assert info.value.frame >= 2  # the bad frame, not the good one before it


def test_bad_input_through_the_converter_is_the_same_error() -> None:
    conv = ms.StreamConverter("openai-chat", protocol=PROTO)
    with pytest.raises(ms.RemoteProtocolError, match="nested"):
        conv.feed(sse(CREATED, start({"type": "function_call", "id": "c", "name": "f", "arguments": DEEP})))


def test_nesting_within_the_bound_is_kept_whole() -> None:
    ok = json.loads("[" * 60 + "1" + "]" * 60)
    resp = ms.aggregate(
        sse(CREATED, start({"type": "brand_new", "x": ok}), {"event_type": "step.stop", "index": 0})
    )
    part = resp.messages[0].content[0]
    assert isinstance(part, ms.UnknownPart)
    assert part.raw["x"] == ok


def test_a_step_index_is_a_key_not_a_size() -> None:
    big = 10**30
    data = sse(
        CREATED,
        start({"type": "model_output"}, index=big),
        delta({"type": "text", "text": "far"}, index=big),
        start({"type": "model_output"}, index=-3),
        delta({"type": "text", "text": " and negative"}, index=-3),
        {"event_type": "interaction.completed", "interaction": {"status": "completed"}},
    )
    tracemalloc.start()
    try:
        resp = ms.aggregate(data, protocol=PROTO)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000
    assert [m.content for m in resp.messages] == [[TextPart(text="far")], [TextPart(text=" and negative")]]


KEYS = ["event_type", "index", "step", "delta", "interaction", "content", "error", "type", "text"]
KEYS += ["arguments", "signature", "summary", "annotations", "id", "name", "status", "usage", "call_id"]
KEYS += ["result", "is_error", "errors", "steps", "outputs", "total_tokens", "server_name", "model"]
VALUES = ["step.start", "step.delta", "step.stop", "interaction.created", "interaction.completed"]
VALUES += ["content.start", "content.delta", "error", "text", "thought", "function_call", "function_result"]
VALUES += ["arguments_delta", "thought_signature", "thought_summary", "google_search_call", "model_output"]
VALUES += [
    "mcp_server_tool_call",
    "image",
    "text_annotation_delta",
    "failed",
    "requires_action",
    "user_input",
]
SHAPED = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(VALUES) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=st.lists(SHAPED, min_size=1, max_size=6))
def test_random_frames_raise_only_remote_protocol_errors(frames: list[Any]) -> None:
    data = sse(*[f if isinstance(f, dict) else {"event_type": "step.delta", "delta": f} for f in frames])
    try:
        resp = ms.aggregate(data, protocol=PROTO)
    except ms.RemoteProtocolError:
        return
    assert resp.protocol == PROTO


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=SHAPED)
def test_random_bodies_raise_only_remote_protocol_errors(body: Any) -> None:
    try:
        resp = gi.decode_response(body)
    except ms.RemoteProtocolError:
        return
    assert resp.protocol == PROTO
    gi.encode_response(resp)  # and what it read writes back


# ---------------------------------------------------------------- the encoder's content path


def emitted(path: Path, protocol: str) -> list[ev.Event]:
    decoder = ms.get_protocol(protocol).decoder()
    agg = Aggregator(protocol, emit=True)
    out: list[ev.Event] = []
    for event in decoder.feed(path.read_bytes()) + decoder.finish():
        out += agg.feed(event)
    return out + agg.finish_events()


SOURCES = [
    pytest.param(proto, path, id=f"{proto}/{path.name}")
    for proto in (PROTO, "anthropic", "openai-chat", "openai-responses", "gemini")
    for path in recordings(proto) + corpus(proto)[:4]
]


@pytest.mark.parametrize(("protocol", "path"), SOURCES)
def test_aggregator_hands_content_only_as_deltas(protocol: str, path: Path) -> None:
    args: dict[tuple[Any, Any], str] = {}
    texts: dict[tuple[Any, Any], str] = {}
    for event in emitted(path, protocol):
        key = (getattr(event, "message", None), getattr(event, "part", None))
        if isinstance(event, ev.PartStart):
            value = event.value
            if isinstance(value, TextPart | ReasoningPart | ms.RefusalPart):
                assert not value.text
            if isinstance(value, ToolCallPart):
                assert value.arguments == ""
                args[key] = ""
        elif isinstance(event, ev.ArgumentsDelta):
            args[key] += event.delta
        elif isinstance(event, ev.TextDelta):
            texts[key] = texts.get(key, "") + event.text
        elif isinstance(event, ev.PartDone) and isinstance(event.value, ToolCallPart):
            # every argument arrived as a delta before the call's end
            assert args.pop(key) == event.value.arguments
        elif isinstance(event, ev.PartDone) and isinstance(event.value, TextPart):
            assert texts.pop(key, "") == event.value.text


@pytest.mark.parametrize("path", params(recordings(PROTO) + corpus(PROTO)))
def test_encoder_writes_from_deltas_only(path: Path) -> None:
    """Blank every final value the encoder is given: the output must not change."""
    import msgspec

    events = emitted(path, PROTO)
    blanked = [
        msgspec.structs.replace(e, value=msgspec.structs.replace(e.value, arguments="[not sent]"))
        if isinstance(e, ev.PartDone) and isinstance(e.value, ToolCallPart) and e.value.kind != "server"
        else msgspec.structs.replace(e, value=msgspec.structs.replace(e.value, text="[not sent]"))
        if isinstance(e, ev.PartDone) and isinstance(e.value, TextPart)
        else e
        for e in events
    ]
    a, b = gi.StreamEncoder(), gi.StreamEncoder()
    assert b"".join(map(a.encode, events)) == b"".join(map(b.encode, blanked))
    assert a.lossy == b.lossy == []


def test_drops_are_records_with_stable_kinds_and_no_ids() -> None:
    enc = gi.StreamEncoder()
    events: list[ev.Event] = [
        ev.ResponseStart(protocol="openai-responses", id="resp_1"),
        ev.MessageStart(message=0, role="user"),
        ev.MessageDone(message=0),
        ev.MessageStart(message=1, choice_index=1),
        ev.MessageDone(message=1),
        ev.MessageStart(message=2),
        ev.PartStart(message=2, part=0, value=ReasoningPart(id="rs_123")),
        ev.PartDone(message=2, part=0, value=ReasoningPart(id="rs_123", encrypted_content="gAAA")),
        ev.PartStart(
            message=2, part=1, value=ToolCallPart(id="ws_1", name="web_search", arguments="", kind="server")
        ),
        ev.PartDone(
            message=2, part=1, value=ToolCallPart(id="ws_1", name="web_search", arguments="{}", kind="server")
        ),
        ev.PartStart(message=2, part=2, value=TextPart(text="")),
        ev.TextDelta(message=2, part=2, text="hi"),
        ev.LogprobsDelta(message=2, part=2, logprobs=[{"token": "hi"}]),
        ev.PartDone(message=2, part=2, value=TextPart(text="hi", logprobs=[{"token": "hi"}])),
        ev.PartStart(message=2, part=3, value=ms.RefusalPart(text="")),
        ev.RefusalDelta(message=2, part=3, text="no"),
        ev.PartDone(message=2, part=3, value=ms.RefusalPart(text="no")),
        ev.PartStart(message=2, part=4, value=ms.ImagePart(file_id="file_9")),
        ev.PartDone(message=2, part=4, value=ms.ImagePart(file_id="file_9")),
        ev.MessageDone(message=2),
        ev.UnknownEvent(provider_type="response.future", raw={"type": "response.future"}),
        ev.ResponseDone(finish_reason="stop"),
    ]
    out = b"".join(enc.encode(e) for e in events)
    kinds = [r.kind for r in enc.lossy]
    assert kinds == [
        "message",
        "message",
        "encrypted_reasoning",
        "server_call",
        "logprobs",
        "refusal",
        "media",
        "unknown",
    ]
    for rec in enc.lossy:
        assert rec.source == "openai-responses"
        assert rec.target == PROTO
        for ident in ("rs_123", "ws_1", "file_9", "resp_1"):
            assert ident not in rec.what
    assert enc.lossy[1].where == ("choice 1",)
    resp = ms.aggregate(out, protocol=PROTO)
    assert [p for m in resp.messages for p in m.content] == [ReasoningPart(), TextPart(text="hi")]
