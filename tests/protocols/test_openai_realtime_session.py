"""OpenAI Realtime: response.done as the authority on item status, deltas only, drops, honest errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

import maas_stream as ms
from maas_stream import events as ev
from maas_stream.protocols import openai_realtime as rt
from tests.conftest import RECORDINGS
from tests.protocols.test_google_live_session import jsonl, mutated, outcome

PROTO = "openai-realtime"
SERVER_EVENT: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)

SESSION = {
    "type": "session.created",
    "event_id": "event_s1",
    "session": {"type": "realtime", "object": "realtime.session", "id": "sess_1", "model": "gpt-realtime"},
}
CALL = {"id": "item_a", "type": "function_call", "name": "book", "call_id": "call_a"}


def session(item_done_status: str | None, done_status: str = "incomplete") -> bytes:
    """A response whose call is cut by a cancellation; ``response.done`` lists it ``done_status``."""
    frames: list[dict[str, Any]] = [
        SESSION,
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "item": {**CALL, "status": "in_progress", "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "item_a", "delta": '{"seat": "1'},
    ]
    final = {**CALL, "status": done_status, "arguments": '{"seat": "1'}
    if item_done_status is not None:
        frames.append({"type": "response.output_item.done", "item": {**final, "status": item_done_status}})
    details = {"type": "cancelled", "reason": "turn_detected"}
    response = {"id": "resp_1", "status": "cancelled", "status_details": details, "output": [final]}
    frames.append({"type": "response.done", "response": response})
    return jsonl(*(("server", f) for f in frames))


def server_events(out: bytes) -> list[dict[str, Any]]:
    msgs = []
    for line in out.splitlines():
        frame = json.loads(line)
        if frame["dir"] == "server":
            SERVER_EVENT.validate_python(frame["msg"])
            msgs.append(frame["msg"])
    return msgs


# ---------------------------------------------------------------- response.done is the authority


@pytest.mark.parametrize("item_done", [None, "incomplete", "completed"])
def test_a_call_response_done_lists_incomplete_comes_out_incomplete(item_done: str | None) -> None:
    resp = ms.aggregate(session(item_done))
    message = resp.messages[0]
    call = message.content[0]
    assert isinstance(call, ms.ToolCallPart)
    assert (call.id, call.status, call.arguments) == ("call_a", "incomplete", '{"seat": "1')
    assert message.status == "incomplete"
    assert (resp.status, resp.finish_reason, resp.provider_finish_reason) == (
        "incomplete",
        "other",
        "turn_detected",
    )


def test_the_decoder_cancels_what_response_done_lists_incomplete() -> None:
    events = rt.StreamDecoder().feed(session("completed"))
    cancelled = [e for e in events if isinstance(e, ev.Cancelled)]
    assert cancelled == [ev.Cancelled(message="item_a", reason="turn_detected")]
    assert events.index(cancelled[0]) < next(
        i for i, e in enumerate(events) if isinstance(e, ev.ResponseDone)
    )


def test_a_completed_response_with_calls_says_stop_and_the_aggregator_says_tool_calls() -> None:
    frames = [
        {"type": "response.created", "response": {"id": "resp_2", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "item": {**CALL, "status": "in_progress", "arguments": ""}},
        {"type": "response.output_item.done", "item": {**CALL, "status": "completed", "arguments": "{}"}},
        {"type": "response.done", "response": {"id": "resp_2", "status": "completed", "output": []}},
    ]
    data = jsonl(*(("server", f) for f in frames))
    done = [e for e in rt.StreamDecoder().feed(data) if isinstance(e, ev.ResponseDone)]
    assert [d.finish_reason for d in done] == ["stop"]
    assert ms.aggregate(data, protocol=PROTO).finish_reason == "tool_calls"


def test_the_incomplete_call_survives_a_same_protocol_reencode() -> None:
    out = ms.convert(session("completed"), to=PROTO)
    done = [e for e in server_events(out) if e["type"] == "response.done"]
    assert [item["status"] for item in done[0]["response"]["output"]] == ["incomplete"]
    assert done[0]["response"]["status"] == "cancelled"
    call = ms.aggregate(out, protocol=PROTO).messages[0].content[0]
    assert isinstance(call, ms.ToolCallPart)
    assert call.status == "incomplete"


def test_a_cancelled_call_is_not_handed_to_a_live_client() -> None:
    conv = ms.StreamConverter("google-live", protocol=PROTO)
    out = conv.feed(session("incomplete")) + conv.finish()
    assert b"toolCall" not in out
    assert [r.kind for r in conv.lossy if "cut" in r.what] == ["field"]


# ---------------------------------------------------------------- deltas only


def test_encoder_writes_values_given_only_at_the_end_from_the_aggregator_deltas() -> None:
    events: list[ev.Event] = [
        ev.ResponseStart(protocol="anthropic", id="msg_1"),
        ev.MessageStart(message="m", role="assistant"),
        ev.PartStart(message="m", part=0, value=ms.TextPart(text="")),
        ev.PartDone(message="m", part=0, value=ms.TextPart(text="Only at the end.")),
        ev.PartStart(message="m", part=1, value=ms.ToolCallPart(id="toolu_1", name="f", arguments="")),
        ev.PartDone(message="m", part=1, value=ms.ToolCallPart(id="toolu_1", name="f", arguments='{"x": 1}')),
        ev.MessageDone(message="m"),
        ev.ResponseDone(finish_reason="stop"),
    ]
    agg = ms.Aggregator("anthropic", emit=True)
    enc = rt.StreamEncoder()
    out = b"".join(enc.encode(e) for e in agg.feed_all(events)) + enc.finish()
    msgs = server_events(out)
    deltas = [(m["type"], m["delta"]) for m in msgs if m["type"].endswith(".delta")]
    assert deltas == [
        ("response.output_text.delta", "Only at the end."),
        ("response.function_call_arguments.delta", '{"x": 1}'),
    ]
    done = next(m for m in msgs if m["type"] == "response.function_call_arguments.done")
    assert done["arguments"] == '{"x": 1}'
    output = next(m for m in msgs if m["type"] == "response.done")["response"]["output"]
    assert output[0]["content"] == [{"type": "output_text", "text": "Only at the end."}]
    assert [o["status"] for o in output] == ["completed", "completed"]
    assert enc.lossy == []


# ---------------------------------------------------------------- drops


def test_drops_are_records_with_kinds_and_no_ids() -> None:
    data = (
        b'{"dir":"server","msg":{"setupComplete":{"sessionId":"sess-9"}}}\n'
        b'{"dir":"client","msg":{"realtimeInput":{"text":"hi"}}}\n'
        b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"plan","thought":true,'
        b'"thoughtSignature":"c2ln"},{"executableCode":{"language":"PYTHON","code":"1"}}]}}}}\n'
        b'{"dir":"server","msg":{"serverContent":{"turnComplete":true}}}\n'
    )
    conv = ms.StreamConverter(PROTO, protocol="google-live")
    server_events(conv.feed(data) + conv.finish())
    records = conv.lossy
    assert {r.kind for r in records} == {"session_frame", "reasoning", "signature", "code"}
    for rec in records:
        assert isinstance(rec, ms.Dropped)
        assert (rec.source, rec.target) == ("google-live", PROTO)
        assert "sess-9" not in rec.what
    frames = [r for r in records if r.kind == "session_frame"]
    assert sorted(r.what for r in frames) == [
        "google-live session frames ('client.realtimeInput')",
        "google-live session frames ('setupComplete')",
    ]


def test_history_drops_are_records() -> None:
    messages = [
        ms.Message(role="user", content="Hi"),
        ms.Message(
            role="assistant",
            content=[ms.ReasoningPart(text="hm"), ms.TextPart(text="Hello"), ms.ImagePart(url="https://x")],
        ),
    ]
    drops = ms.DropLog(PROTO)
    body = rt.from_canonical(messages, drops=drops)
    assert [i["role"] for i in body["items"]] == ["user", "assistant"]
    assert [(r.kind, r.where) for r in drops.records] == [
        ("reasoning", ("messages[1]",)),
        ("media", ("messages[1]",)),
    ]
    assert rt.to_canonical(body)[0].provider == PROTO


# ---------------------------------------------------------------- honest errors


@pytest.mark.parametrize(
    ("msg", "match"),
    [
        (
            {"type": "response.output_item.added", "item": {"id": 5, "type": "message"}},
            "'id' must be a string",
        ),
        ({"type": "response.output_item.added", "item": {"id": "i", "type": ["message"]}}, "'type' must be"),
        (
            {"type": "response.output_item.done", "item": {**CALL, "call_id": 1}},
            "call_id, name and arguments must be",
        ),
        (
            {"type": "response.output_item.done", "item": {**CALL, "arguments": {"a": 1}}},
            "call_id, name and arguments must be",
        ),
        ({"type": "response.created", "response": {"id": 9}}, "'id' must be a string"),
        ({"type": "response.done", "response": {"status": 1}}, "'status' must be"),
        ({"type": "response.done", "response": {"output": [{"id": []}]}}, "'id' must be a string"),
        ({"type": 5}, "invalid openai-realtime message"),
        (
            {"type": "response.output_text.delta", "content_index": "0", "delta": "x"},
            "invalid openai-realtime",
        ),
    ],
)
def test_bad_types_are_remote_protocol_errors(msg: dict[str, Any], match: str) -> None:
    data = jsonl(("server", {"type": "session.created", "session": {}}), ("server", msg))
    with pytest.raises(ms.RemoteProtocolError, match=match):
        ms.aggregate(data, protocol=PROTO)


def test_an_unhashable_role_or_a_bad_client_item_is_no_type_error() -> None:
    item = {"type": "response.output_item.added", "item": {"id": "i", "type": "message", "role": ["user"]}}
    resp = ms.aggregate(jsonl(("server", {"type": "session.created"}), ("server", item)), protocol=PROTO)
    assert resp.messages[0].role == "assistant"
    client = {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": 1}}
    with pytest.raises(ms.RemoteProtocolError, match="call_id must be a string"):
        ms.aggregate(jsonl(("client", client)), protocol=PROTO)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_mutated_sessions_decode_or_raise_only_remote_protocol_errors(seed: int) -> None:
    data = mutated(PROTO, seed)
    for target in (None, PROTO, "google-live", "openai-chat"):
        assert outcome(data, PROTO, target) in ("ok", PROTO)  # never a TypeError, KeyError...


@pytest.mark.parametrize(
    "source", ["anthropic/thinking_parallel_tools.sse", "openai-chat/readme_text_then_parallel_tools.sse"]
)
def test_a_source_failing_mid_response_ends_it_with_a_failed_response_done(source: str) -> None:
    # A Realtime client waits for response.done; an `error` event alone would leave it waiting.
    data = (RECORDINGS / source).read_bytes()
    conv = ms.StreamConverter(PROTO, protocol=source.split("/")[0])
    head = conv.feed(data[: len(data) * 3 // 4])
    tail = conv.fail(ms.StreamError(type="api_error", message="upstream broke", code="502"))
    adapter: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
    started = [adapter.validate_python(json.loads(line)["msg"]) for line in head.splitlines()]
    ended = [adapter.validate_python(json.loads(line)["msg"]) for line in tail.splitlines()]
    assert started[0].type == "response.created"
    assert (ended[0].type, ended[-1].type) == ("error", "response.done")
    assert all(e.type.endswith(".done") for e in ended[1:-1])  # only the open items' ends between
    assert sum(e.type == "response.done" for e in [*started, *ended]) == 1
    done = ended[-1].response
    assert done.id == started[0].response.id
    assert done.status == "failed"
    assert done.status_details.error.message == "upstream broke"


def test_a_failure_before_any_response_is_the_error_alone() -> None:
    conv = ms.StreamConverter(PROTO, protocol="anthropic")
    tail = conv.fail(ms.StreamError(type="api_error", message="refused", code="502"))
    assert [json.loads(line)["msg"]["type"] for line in tail.splitlines()] == ["error"]
