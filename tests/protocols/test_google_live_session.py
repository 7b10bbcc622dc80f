"""Google Live: cancellations, deltas-only encoding, drop records and honest errors."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import msgspec
import pytest
from google.genai import types as genai_types
from hypothesis import given, settings
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream import events as ev
from maas_stream.protocols import google_live as gl
from tests.conftest import RECORDINGS, recordings

PROTO = "google-live"


def jsonl(*frames: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(json.dumps({"dir": d, "msg": m}).encode() + b"\n" for d, m in frames)


def server_messages(out: bytes) -> list[dict[str, Any]]:
    """The server messages of a Live recording, each validated by google-genai."""
    msgs = []
    for line in out.splitlines():
        frame = json.loads(line)
        if frame["dir"] == "server":
            genai_types.LiveServerMessage.model_validate(frame["msg"])
            msgs.append(frame["msg"])
    return msgs


def encode(events: list[ev.Event], source: str = "openai-realtime") -> tuple[bytes, gl.StreamEncoder]:
    """Canonical events through the aggregator (as a converter feeds them) into the Live encoder."""
    agg = ms.Aggregator(source, emit=True)
    enc = gl.StreamEncoder()
    out = b"".join(enc.encode(e) for e in agg.feed_all(events))
    out += b"".join(enc.encode(e) for e in agg.finish_events())
    return out + enc.finish(), enc


CALLS = (
    "server",
    {
        "toolCall": {
            "functionCalls": [
                {"id": "fc-1", "name": "lookup", "args": {"q": "a"}},
                {"id": "fc-2", "name": "lookup", "args": {"q": "b"}},
            ]
        }
    },
)


# ---------------------------------------------------------------- cancellation


def test_tool_call_cancellation_is_one_cancelled_event_per_id() -> None:
    dec = gl.StreamDecoder()
    events = dec.feed(jsonl(CALLS, ("server", {"toolCallCancellation": {"ids": ["fc-2", "fc-1"]}})))
    cancelled = [e for e in events if isinstance(e, ev.Cancelled)]
    assert [c.call_id for c in cancelled] == ["fc-2", "fc-1"]
    # The decoder re-closes nothing itself (the aggregator finds the calls by id) ...
    after = events[events.index(cancelled[0]) :]
    assert not any(isinstance(e, ev.PartDone | ev.ResponseStart) for e in after)
    # ... and keeps the frame whole for a same-protocol re-encode.
    kept = [e for e in after if isinstance(e, ev.UnknownEvent)]
    assert [(k.provider_type, k.passthrough) for k in kept] == [("toolCallCancellation", True)]
    # The turn of the calls said "stop"; the aggregator says "tool_calls" for it.
    done = next(e for e in events if isinstance(e, ev.ResponseDone))
    assert done.finish_reason == "stop"


def test_cancelled_call_is_incomplete_in_the_aggregate() -> None:
    data = jsonl(
        CALLS,
        ("server", {"toolCallCancellation": {"ids": ["fc-2"]}}),
        ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "Never mind."}]}}}),
        ("server", {"serverContent": {"turnComplete": True}}),
    )
    resp = ms.aggregate(data, protocol=PROTO)
    turn = resp.messages[0]
    calls = [p for p in turn.content if isinstance(p, ms.ToolCallPart)]
    assert [(c.id, c.status) for c in calls] == [("fc-1", "completed"), ("fc-2", "incomplete")]
    assert turn.status == "incomplete"  # it holds a cancelled call
    assert resp.messages[1].content == [ms.TextPart(text="Never mind.")]
    # Each turn's end as handed to an encoder: the aggregator normalizes "stop" once.
    conv = ms.StreamAggregator(PROTO, emit=True)
    ends = [e for e in conv.feed(data) + conv.finish_events() if isinstance(e, ev.ResponseDone)]
    assert [e.finish_reason for e in ends] == ["tool_calls", "stop"]


def test_cancellation_of_a_call_from_an_earlier_turn_finds_it_by_id() -> None:
    resp = ms.aggregate((RECORDINGS / PROTO / "interrupted_cancelled_call.jsonl").read_bytes())
    call = resp.messages[0].content[1]
    assert isinstance(call, ms.ToolCallPart)
    assert (call.id, call.status) == ("fc-slow", "incomplete")
    assert resp.messages[0].status == "incomplete"
    assert not resp.warnings  # found: no "never arrived" warning


def test_live_cancellation_survives_a_same_protocol_reencode() -> None:
    data = (RECORDINGS / PROTO / "interrupted_cancelled_call.jsonl").read_bytes()
    out = ms.convert(data, to=PROTO)
    msgs = server_messages(out)
    assert [m for m in msgs if "toolCallCancellation" in m] == [
        {"toolCallCancellation": {"ids": ["fc-slow"]}}
    ]
    again = ms.aggregate(out, protocol=PROTO)
    call = again.messages[0].content[1]
    assert isinstance(call, ms.ToolCallPart)
    assert call.status == "incomplete"


def _call_events(*, cancel_before_send: bool) -> list[ev.Event]:
    out: list[ev.Event] = [
        ev.ResponseStart(protocol="openai-realtime", id="r1"),
        ev.MessageStart(message="m", role="assistant"),
        ev.PartStart(message="m", part="c", value=ms.ToolCallPart(id="call_1", name="book", arguments="")),
        ev.ArgumentsDelta(message="m", part="c", delta='{"seat":'),
        ev.ArgumentsDelta(message="m", part="c", delta=' "1A"}'),
        ev.PartDone(message="m", part="c"),
    ]
    if cancel_before_send:
        out.append(ev.Cancelled(message="m", part="c", reason="turn_detected"))
    out += [ev.MessageDone(message="m"), ev.ResponseDone(finish_reason="stop")]
    if not cancel_before_send:
        out.append(ev.Cancelled(call_id="call_1", reason="turn_detected"))
    return out


def test_a_call_cancelled_before_it_went_out_is_never_sent_to_live() -> None:
    out, _ = encode(_call_events(cancel_before_send=True))
    assert not any("toolCall" in m for m in server_messages(out))


def test_a_call_cancelled_after_it_went_out_is_followed_by_a_live_cancellation() -> None:
    out, _ = encode(_call_events(cancel_before_send=False))
    msgs = server_messages(out)
    assert msgs[0] == {
        "toolCall": {"functionCalls": [{"id": "call_1", "name": "book", "args": {"seat": "1A"}}]}
    }
    assert msgs[-1] == {"toolCallCancellation": {"ids": ["call_1"]}}
    back = ms.aggregate(out, protocol=PROTO)
    call = back.messages[0].content[0]
    assert isinstance(call, ms.ToolCallPart)
    assert call.status == "incomplete"


# ---------------------------------------------------------------- deltas only


def test_encoder_writes_content_from_deltas_even_when_the_source_gave_only_final_values() -> None:
    # A source that sends a part's whole value only in its done event (no deltas at all): the
    # aggregator turns it into deltas, and the encoder needs nothing else.
    events: list[ev.Event] = [
        ev.ResponseStart(protocol="openai-responses"),
        ev.MessageStart(message="m", role="assistant"),
        ev.PartStart(message="m", part=0, value=ms.TextPart(text="")),
        ev.PartDone(message="m", part=0, value=ms.TextPart(text="Whole at the end.")),
        ev.PartStart(message="m", part=1, value=ms.ToolCallPart(id="c1", name="f", arguments="")),
        ev.PartDone(message="m", part=1, value=ms.ToolCallPart(id="c1", name="f", arguments='{"x": 1}')),
        ev.MessageDone(message="m"),
        ev.ResponseDone(finish_reason="stop"),
    ]
    out, enc = encode(events, source="openai-responses")
    msgs = server_messages(out)
    assert {"serverContent": {"modelTurn": {"parts": [{"text": "Whole at the end."}]}}} in msgs
    assert {"toolCall": {"functionCalls": [{"id": "c1", "name": "f", "args": {"x": 1}}]}} in msgs
    assert enc.lossy == []


# ---------------------------------------------------------------- drops


def test_drops_are_records_with_kinds_and_no_ids() -> None:
    events: list[ev.Event] = [
        ev.ResponseStart(protocol="anthropic", id="msg_1"),
        ev.UnknownEvent(provider_type="session.created", raw={"type": "session.created"}, passthrough=True),
        ev.UnknownEvent(provider_type="ping_extra", raw={"type": "ping_extra"}),
        ev.MessageStart(message="m", role="assistant"),
        ev.PartStart(message="m", part=0, value=ms.ReasoningPart()),
        ev.ReasoningDelta(message="m", part=0, text="think"),
        ev.SignatureDelta(message="m", part=0, signature="sig-anthropic"),
        ev.PartDone(message="m", part=0),
        ev.PartStart(
            message="m",
            part=1,
            value=ms.ToolCallPart(id="srv_9", name="web_search", arguments="{}", kind="server"),
        ),
        ev.PartDone(message="m", part=1),
        ev.PartStart(message="m", part=2, value=ms.ToolCallPart(id="toolu_cut", name="book", arguments="")),
        ev.ArgumentsDelta(message="m", part=2, delta='{"seat": "1'),
        ev.RefusalDelta(message="m", part=3, text="no"),
        ev.StreamErrorEvent(error=ms.StreamError(type="overloaded_error", message="busy")),
    ]
    out, enc = encode(events, source="anthropic")  # cut: the last call never closes
    server_messages(out)
    records = enc.lossy
    assert all(isinstance(r, ms.Dropped) for r in records)
    kinds = {r.kind for r in records}
    assert kinds == {"session_frame", "unknown", "signature", "server_call", "field", "refusal", "error"}
    cut = next(r for r in records if r.kind == "field")
    assert cut.where == ("toolu_cut",)
    assert "cut" in str(cut)
    for rec in records:
        assert rec.target == PROTO
        assert rec.source == "anthropic"
        assert not any(i in rec.what for i in ("srv_9", "toolu_cut", "msg_1", "sig-anthropic"))
    assert len(records) == len({(r.kind, r.what) for r in records})


def test_history_drops_a_cut_call_instead_of_crashing_and_reports_records() -> None:
    messages = [
        ms.Message(role="user", content="Book it."),
        ms.Message(
            role="assistant",
            provider="anthropic",
            content=[
                ms.ReasoningPart(text="ok", signature="sig-anthropic"),
                ms.ToolCallPart(id="c_cut", name="book", arguments='{"seat": "1', status="incomplete"),
                ms.ToolCallPart(id="c_list", name="pick", arguments="[1, 2]"),
                ms.ToolCallPart(id="srv", name="web_search", arguments="{}", kind="server"),
                ms.CitationPart(kind="url_citation", url="https://example.com"),
            ],
        ),
    ]
    drops = ms.DropLog(PROTO, "anthropic")
    body = gl.from_canonical(messages, drops=drops)
    parts = body["clientContent"]["turns"][1]["parts"]
    assert parts == [
        {"text": "ok", "thought": True},  # the foreign signature is not replayed
        {"functionCall": {"id": "c_list", "name": "pick", "args": {"arguments": "[1, 2]"}}},
    ]
    by_kind: dict[str, list[ms.Dropped]] = {}
    for rec in drops.records:
        by_kind.setdefault(rec.kind, []).append(rec)
    assert sorted(by_kind) == ["citation", "field", "server_call", "signature"]
    assert sorted(w for r in by_kind["field"] for w in r.where) == ["messages[1]", "messages[1]"]
    assert all("c_cut" not in r.what and "c_list" not in r.what for r in drops.records)


def test_history_replays_live_signatures_to_live_only() -> None:
    body = {
        "clientContent": {
            "turns": [
                {"role": "model", "parts": [{"text": "t", "thought": True, "thoughtSignature": "c2ln"}]}
            ]
        }
    }
    messages = gl.to_canonical(body)
    assert messages[0].provider == PROTO
    drops = ms.DropLog(PROTO)
    assert (
        gl.from_canonical(messages, drops=drops)["clientContent"]["turns"] == body["clientContent"]["turns"]
    )
    assert not drops
    foreign = [msgspec.structs.replace(m, provider="gemini") for m in messages]
    out = gl.from_canonical(foreign, drops=drops)
    assert "thoughtSignature" not in json.dumps(out)
    assert [r.kind for r in drops.records] == ["signature"]


# ---------------------------------------------------------------- honest errors


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (("server", {"toolCall": {"functionCalls": [{"id": 7, "name": "f"}]}}), "id and name are strings"),
        (
            ("server", {"toolCall": {"functionCalls": [{"id": "a", "name": ["f"]}]}}),
            "id and name are strings",
        ),
        (("server", {"toolCall": {"functionCalls": [5]}}), "invalid google-live"),
        (("server", {"toolCallCancellation": {"ids": "fc-1"}}), "list of strings"),
        (("server", {"toolCallCancellation": {"ids": [1]}}), "list of strings"),
        (("server", {"toolCallCancellation": ["fc-1"]}), "list of strings"),
        (("client", {"toolResponse": {"functionResponses": [{"id": 3, "response": {}}]}}), "id and name"),
        (("client", {"toolResponse": {"functionResponses": ["x"]}}), "id and name"),
        (("server", {"serverContent": {"modelTurn": {"parts": [{"text": 5}]}}}), "invalid google-live"),
    ],
)
def test_bad_types_are_remote_protocol_errors(frame: tuple[str, dict[str, Any]], match: str) -> None:
    with pytest.raises(ms.RemoteProtocolError, match=match):
        ms.aggregate(jsonl(("client", {"setup": {"model": "m"}}), frame), protocol=PROTO)


_VALUES = [None, True, 0, -1, 10**12, "", "x", [], {}, [1], {"a": 1}, 1.5]


def _paths(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        out += _paths(value, (*path, key))
    return out


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    obj[path[0]] = _set(obj[path[0]], path[1:], value)
    return obj


def mutated(protocol: str, seed: int) -> bytes:
    """A recording of ``protocol`` with one to three values replaced by JSON of another type."""
    rnd = random.Random(seed)
    path = rnd.choice(recordings(protocol))
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for _ in range(rnd.randint(1, 3)):
        frame = rnd.choice(frames)
        frame["msg"] = _set(
            frame["msg"], rnd.choice(_paths(frame["msg"])), copy.deepcopy(rnd.choice(_VALUES))
        )
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


def outcome(data: bytes, source: str, target: str | None) -> str:
    """``ok``, or the protocol a ``RemoteProtocolError`` names; any other exception propagates."""
    try:
        if target is None:
            ms.aggregate(data, protocol=source)
        else:
            ms.convert(data, to=target, protocol=source, fail_closed=False)
    except ms.RemoteProtocolError as exc:
        return str(exc.protocol)
    return "ok"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_mutated_sessions_decode_or_raise_only_remote_protocol_errors(seed: int) -> None:
    data = mutated(PROTO, seed)
    for target in (None, PROTO, "openai-realtime", "anthropic"):
        assert outcome(data, PROTO, target) in ("ok", PROTO)  # never a TypeError, KeyError...
