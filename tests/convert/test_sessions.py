"""Sessions as first-class: each response of a Live or Realtime session apart, and converted apart.

The session streams here are written from the protocols' docs (PROTOCOLS.md §6 for Live; the
openai SDK's Realtime event types for Realtime), one per defect class: a call in a later
response, a recoverable error, a call cut by a cancellation, a failed response's items, a Live
``toolCallCancellation``, Interactions text blocks opened without text, routine session frames.
Every session recording and corpus capture is then converted to every one-response target:
each response's text and calls arrive in their own stream, or the drop is listed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from tests.conftest import CORPUS, corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions")


def _jsonl(*lines: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(msgspec.json.encode({"dir": d, "msg": m}) + b"\n" for d, m in lines)


def _server(msg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("server", msg)


def _client(msg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("client", msg)


_SESSION_CREATED = _server(
    {
        "type": "session.created",
        "event_id": "ev_0",
        "session": {"type": "realtime", "id": "sess_1", "model": "gpt-realtime"},
    }
)


def _created(rid: str) -> tuple[str, dict[str, Any]]:
    return _server(
        {
            "type": "response.created",
            "event_id": f"{rid}_c",
            "response": {"object": "realtime.response", "id": rid, "status": "in_progress", "output": []},
        }
    )


def _text_item(rid: str, item: str, text: str) -> list[tuple[str, dict[str, Any]]]:
    base = {"response_id": rid, "item_id": item, "output_index": 0, "content_index": 0}
    return [
        _server(
            {
                "type": "response.output_item.added",
                "event_id": f"{item}_a",
                "response_id": rid,
                "output_index": 0,
                "item": {
                    "id": item,
                    "type": "message",
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                },
            }
        ),
        _server(
            {
                "type": "response.content_part.added",
                "event_id": f"{item}_p",
                **base,
                "part": {"type": "text", "text": ""},
            }
        ),
        _server({"type": "response.output_text.delta", "event_id": f"{item}_d", **base, "delta": text}),
    ]


def _message(item: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def _call(item: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item,
        "type": "function_call",
        "status": status,
        "name": name,
        "call_id": call_id,
        "arguments": arguments,
    }


def _done(
    rid: str, status: str, output: list[dict[str, Any]], details: Any = None
) -> tuple[str, dict[str, Any]]:
    response = {
        "object": "realtime.response",
        "id": rid,
        "status": status,
        "status_details": details,
        "output": output,
        "usage": {"total_tokens": 12, "input_tokens": 8, "output_tokens": 4},
    }
    return _server({"type": "response.done", "event_id": f"{rid}_done", "response": response})


# A text response, then a user turn, then a response holding a call.
RT_TWO_RESPONSES = _jsonl(
    _SESSION_CREATED,
    _server(
        {
            "type": "rate_limits.updated",
            "event_id": "ev_r",
            "rate_limits": [{"name": "tokens", "limit": 1000, "remaining": 990, "reset_seconds": 1}],
        }
    ),
    _client(
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        }
    ),
    _client({"type": "response.create"}),
    _created("resp_1"),
    *_text_item("resp_1", "item_1", "Hello there."),
    _server(
        {
            "type": "response.output_item.done",
            "event_id": "i1_d",
            "response_id": "resp_1",
            "output_index": 0,
            "item": _message("item_1", "Hello there."),
        }
    ),
    _done("resp_1", "completed", [_message("item_1", "Hello there.")]),
    _client(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Time in UTC?"}],
            },
        }
    ),
    _client({"type": "response.create"}),
    _created("resp_2"),
    _server(
        {
            "type": "response.output_item.added",
            "event_id": "f_a",
            "response_id": "resp_2",
            "output_index": 0,
            "item": _call("item_f", "call_T", "get_time", "", "in_progress"),
        }
    ),
    _server(
        {
            "type": "response.function_call_arguments.delta",
            "event_id": "f_d",
            "response_id": "resp_2",
            "item_id": "item_f",
            "output_index": 0,
            "call_id": "call_T",
            "delta": '{"tz":"UTC"}',
        }
    ),
    _server(
        {
            "type": "response.function_call_arguments.done",
            "event_id": "f_dd",
            "response_id": "resp_2",
            "item_id": "item_f",
            "output_index": 0,
            "call_id": "call_T",
            "name": "get_time",
            "arguments": '{"tz":"UTC"}',
        }
    ),
    _server(
        {
            "type": "response.output_item.done",
            "event_id": "f_id",
            "response_id": "resp_2",
            "output_index": 0,
            "item": _call("item_f", "call_T", "get_time", '{"tz":"UTC"}'),
        }
    ),
    _done("resp_2", "completed", [_call("item_f", "call_T", "get_time", '{"tz":"UTC"}')]),
)

# response.cancel with nothing active: "Most errors are recoverable and the session will stay open".
RT_RECOVERABLE_ERROR = _jsonl(
    _SESSION_CREATED,
    _client({"type": "response.cancel"}),
    _server(
        {
            "type": "error",
            "event_id": "ev_e",
            "error": {
                "type": "invalid_request_error",
                "code": "response_cancel_not_active",
                "message": "Cancellation failed: no active response found",
                "param": None,
                "event_id": None,
            },
        }
    ),
    _client({"type": "response.create"}),
    _created("resp_1"),
    *_text_item("resp_1", "item_1", "Still here."),
    _done("resp_1", "completed", [_message("item_1", "Still here.")]),
)


def _cut_after_item_done() -> bytes:
    """The call's own events completed it; response.done then lists it incomplete."""
    return _jsonl(
        _SESSION_CREATED,
        _created("resp_1"),
        _server(
            {
                "type": "response.output_item.added",
                "event_id": "f_a",
                "response_id": "resp_1",
                "output_index": 0,
                "item": _call("item_f", "call_M", "set_timer", "", "in_progress"),
            }
        ),
        _server(
            {
                "type": "response.function_call_arguments.delta",
                "event_id": "f_d",
                "response_id": "resp_1",
                "item_id": "item_f",
                "output_index": 0,
                "call_id": "call_M",
                "delta": '{"minu',
            }
        ),
        _server(
            {
                "type": "response.output_item.done",
                "event_id": "f_id",
                "response_id": "resp_1",
                "output_index": 0,
                "item": _call("item_f", "call_M", "set_timer", '{"minu'),
            }
        ),
        _done(
            "resp_1",
            "cancelled",
            [_call("item_f", "call_M", "set_timer", '{"minu', "incomplete")],
            {"type": "cancelled", "reason": "turn_detected"},
        ),
    )


def test_response_done_overrules_a_call_its_own_events_completed() -> None:
    data = _cut_after_item_done()
    (response,) = ms.aggregate_session(data).responses
    call = response.messages[0].content[0]
    assert isinstance(call, ms.ToolCallPart)
    assert call.status == "incomplete"
    assert response.finish_reason != "tool_calls"
    conv = ms.StreamConverter("openai-chat")
    conv.feed(data)
    conv.finish()
    # The call went out before response.done said otherwise: listed, never silent.
    assert [d.what for d in conv.lossy if d.kind == "message"] == [
        "a cancellation of a call already sent (openai-chat cannot take a call back)"
    ]
    (stream,) = ms.convert_session(data, to="openai-chat")
    assert b"set_timer" not in stream  # the whole input says it was cut: not sent at all


def _cut_call(with_item_done: bool) -> bytes:
    """A call cut by a cancellation: response.done lists it incomplete, arguments half-streamed."""
    lines = [
        _SESSION_CREATED,
        _created("resp_1"),
        _server(
            {
                "type": "response.output_item.added",
                "event_id": "f_a",
                "response_id": "resp_1",
                "output_index": 0,
                "item": _call("item_f", "call_M", "set_timer", "", "in_progress"),
            }
        ),
        _server(
            {
                "type": "response.function_call_arguments.delta",
                "event_id": "f_d",
                "response_id": "resp_1",
                "item_id": "item_f",
                "output_index": 0,
                "call_id": "call_M",
                "delta": '{"minu',
            }
        ),
    ]
    if with_item_done:
        lines.append(
            _server(
                {
                    "type": "response.output_item.done",
                    "event_id": "f_id",
                    "response_id": "resp_1",
                    "output_index": 0,
                    "item": _call("item_f", "call_M", "set_timer", '{"minu', "incomplete"),
                }
            )
        )
    lines.append(
        _done(
            "resp_1",
            "cancelled",
            [_call("item_f", "call_M", "set_timer", '{"minu', "incomplete")],
            {"type": "cancelled", "reason": "client_cancelled"},
        )
    )
    return _jsonl(*lines)


# A failed response whose message response.done lists incomplete (its own events never closed it).
RT_FAILED_MESSAGE = _jsonl(
    _SESSION_CREATED,
    _created("resp_1"),
    *_text_item("resp_1", "item_1", "Partial ans"),
    _done(
        "resp_1",
        "failed",
        [_message("item_1", "Partial ans", "incomplete")],
        {
            "type": "failed",
            "error": {"type": "server_error", "code": "internal", "message": "The server had an error"},
        },
    ),
)

# Live: a call the server cancels (toolCallCancellation), then the model's next turn.
LIVE_CANCELLED_CALL = _jsonl(
    _client(
        {
            "setup": {
                "model": "models/gemini-live-2.5-flash-preview",
                "generationConfig": {"responseModalities": ["TEXT"]},
            }
        }
    ),
    _server({"setupComplete": {}}),
    _client(
        {
            "clientContent": {
                "turns": [{"role": "user", "parts": [{"text": "Set a 5 minute timer"}]}],
                "turnComplete": True,
            }
        }
    ),
    _server({"toolCall": {"functionCalls": [{"id": "fc-1", "name": "set_timer", "args": {"minutes": 5}}]}}),
    _server({"toolCallCancellation": {"ids": ["fc-1"]}}),
    _server({"serverContent": {"modelTurn": {"parts": [{"text": "Okay, no timer."}]}}}),
    _server(
        {
            "serverContent": {"turnComplete": True},
            "usageMetadata": {"promptTokenCount": 9, "responseTokenCount": 4, "totalTokenCount": 13},
        }
    ),
    _server({"sessionResumptionUpdate": {"newHandle": "h_1", "resumable": True}}),
)


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + e["event_type"].encode() + b"\ndata: " + msgspec.json.encode(e) + b"\n\n" for e in events
    )


# Interactions: a text block opened without a text field, in both schemas.
GI_LEGACY_TEXT = _sse(
    {
        "event_type": "interaction.start",
        "interaction": {
            "id": "v1_a",
            "object": "interaction",
            "status": "in_progress",
            "model": "gemini-3-pro",
        },
    },
    {"event_type": "content.start", "index": 0, "content": {"type": "text"}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": "Hello "}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": "world."}},
    {"event_type": "content.stop", "index": 0},
    {
        "event_type": "interaction.complete",
        "interaction": {
            "id": "v1_a",
            "object": "interaction",
            "status": "completed",
            "model": "gemini-3-pro",
            "outputs": [],
        },
    },
)
GI_CURRENT_TEXT = _sse(
    {
        "event_type": "interaction.created",
        "interaction": {
            "id": "v1_b",
            "object": "interaction",
            "status": "in_progress",
            "model": "gemini-3.5-flash",
        },
    },
    {"event_type": "step.start", "index": 0, "step": {"type": "model_output", "content": [{"type": "text"}]}},
    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Hello "}},
    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "world."}},
    {"event_type": "step.stop", "index": 0},
    {
        "event_type": "interaction.completed",
        "interaction": {
            "id": "v1_b",
            "object": "interaction",
            "status": "completed",
            "model": "gemini-3.5-flash",
        },
    },
)


# ---------------------------------------------------------------------- what a target's client reads


def _args(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text) if text else {}
        except json.JSONDecodeError:
            return text
    return text


def read(stream: bytes, target: str) -> tuple[str, list[tuple[str, Any]], ms.Response]:
    """The text and the finished client calls a client of ``target`` reads from one stream."""
    response = ms.aggregate(stream, protocol=target)
    text = ""
    calls: list[tuple[str, Any]] = []
    for message in response.messages:
        for part in message.content if isinstance(message.content, list) else ():
            if isinstance(part, ms.TextPart):
                text += part.text
            elif isinstance(part, ms.AudioPart) and part.transcript:
                text += part.transcript
            elif isinstance(part, ms.ToolCallPart) and part.status != "incomplete":
                calls.append((part.name, _args(part.arguments)))
    return text, calls, response


def expected(response: ms.Response) -> tuple[str, list[tuple[str, Any]]]:
    """The text (and audio transcripts) and the finished client calls of a source response."""
    text = ""
    calls: list[tuple[str, Any]] = []
    for message in response.messages:
        for part in message.content if isinstance(message.content, list) else ():
            if isinstance(part, ms.TextPart):
                text += part.text
            elif isinstance(part, ms.AudioPart) and part.transcript:
                text += part.transcript
            elif (
                isinstance(part, ms.ToolCallPart)
                and part.status != "incomplete"
                and part.kind in ("function", "custom")
            ):
                calls.append((part.name, _args(part.arguments)))
    return text, calls


# ---------------------------------------------------------------------- the session model


def test_each_response_of_a_session_is_its_own_response() -> None:
    session = ms.aggregate_session(RT_TWO_RESPONSES)
    assert [r.id for r in session.responses] == ["resp_1", "resp_2"]
    first, second = session.responses
    assert (first.status, first.finish_reason) == ("completed", "stop")
    assert (second.status, second.finish_reason) == ("completed", "tool_calls")
    assert [m.role for r in session.responses for m in r.messages] == ["assistant", "assistant"]
    assert first.usage is not None
    assert first.usage.total_tokens == 12
    kinds = [(e.kind, e.type, e.after) for e in session.events]
    assert kinds == [
        ("server", "session.created", 0),
        ("server", "rate_limits.updated", 0),
        ("client", "client.conversation.item.create", 0),
        ("client", "client.response.create", 0),
        ("client", "client.conversation.item.create", 1),
        ("client", "client.response.create", 1),
    ]
    assert session.status == "completed"
    # The compatible view: one response, every message, the last response's status.
    merged = ms.aggregate(RT_TWO_RESPONSES)
    assert [m.id for m in merged.messages] == ["item_1", "item_f"]
    assert (merged.status, merged.finish_reason, merged.id) == ("completed", "tool_calls", "resp_2")


def test_session_json_is_the_contract() -> None:
    session = ms.aggregate_session(RT_RECOVERABLE_ERROR)
    data = msgspec.to_builtins(session)
    assert set(data) == {"protocol", "status", "responses", "events", "model", "unknown", "warnings"}
    assert msgspec.json.decode(msgspec.json.encode(session), type=ms.Session) == session


def test_a_one_response_protocol_is_a_session_of_one() -> None:
    data = (RECORDINGS_DIR / "anthropic" / "thinking_parallel_tools.sse").read_bytes()
    session = ms.aggregate_session(data)
    assert session.responses == [ms.aggregate(data)]
    assert session.events == []


def test_a_recoverable_realtime_error_leaves_the_session_unaffected() -> None:
    session = ms.aggregate_session(RT_RECOVERABLE_ERROR)
    (response,) = session.responses
    assert (response.status, response.error) == ("completed", None)
    (error,) = [e for e in session.events if e.kind == "error"]
    assert error.error is not None
    assert (error.error.code, error.after) == ("response_cancel_not_active", 0)
    assert session.status == "completed"
    merged = ms.aggregate(RT_RECOVERABLE_ERROR)
    assert (merged.status, merged.error) == ("completed", None)
    assert merged.warnings is not None
    assert any("response_cancel_not_active" in w for w in merged.warnings)
    for target in TARGETS:
        (stream,) = ms.convert_session(RT_RECOVERABLE_ERROR, to=target)
        text, _, back = read(stream, target)
        assert text == "Still here."
        assert back.status == "completed", target
    # Same protocol: the error event goes back out as it came.
    assert b'"response_cancel_not_active"' in ms.convert(RT_RECOVERABLE_ERROR, to="openai-realtime")


@pytest.mark.parametrize("with_item_done", [True, False], ids=["item_done_incomplete", "only_response_done"])
def test_response_done_is_the_authority_on_a_cut_call(with_item_done: bool) -> None:
    data = _cut_call(with_item_done)
    response = ms.aggregate(data)
    (message,) = response.messages
    assert isinstance(message.content, list)
    (call,) = message.content
    assert isinstance(call, ms.ToolCallPart)
    assert (call.status, call.arguments, message.status) == ("incomplete", '{"minu', "incomplete")
    assert response.status == "incomplete"
    assert response.finish_reason != "tool_calls"
    for target in TARGETS:
        lossy: list[ms.Dropped] = []
        (stream,) = ms.convert_session(data, to=target, lossy=lossy)
        _, calls, back = read(stream, target)
        assert calls == [], f"{target}: a cut call arrives as a finished call"
        assert b"set_timer" not in stream
        assert b'"stop_reason":"tool_use"' not in stream
        assert back.finish_reason != "tool_calls"
        (drop,) = [d for d in lossy if d.kind == "message"]
        assert "cancelled before it completed" in drop.what
        assert drop.where == ("set_timer:call_M",)


def test_a_message_response_done_lists_incomplete_is_incomplete() -> None:
    session = ms.aggregate_session(RT_FAILED_MESSAGE)
    (response,) = session.responses
    assert response.status == "failed"
    assert response.error is not None
    assert response.error.type == "server_error"
    (message,) = response.messages
    assert message.status == "incomplete"
    assert message.content == [ms.TextPart(text="Partial ans")]


def test_a_live_call_cancelled_by_the_server_is_not_a_call_to_run() -> None:
    session = ms.aggregate_session(LIVE_CANCELLED_CALL)
    first, second = session.responses
    assert isinstance(first.messages[0].content, list)
    (call,) = first.messages[0].content
    assert isinstance(call, ms.ToolCallPart)
    assert (call.id, call.status) == ("fc-1", "incomplete")
    assert first.status == "incomplete"
    assert first.finish_reason == "stop"  # no call is left to run
    assert second.messages[0].content == [ms.TextPart(text="Okay, no timer.")]
    (cancel,) = [e for e in session.events if e.kind == "cancellation"]
    assert (cancel.call_id, cancel.after) == ("fc-1", 1)
    for target in TARGETS:
        lossy: list[ms.Dropped] = []
        streams = ms.convert_session(LIVE_CANCELLED_CALL, to=target, lossy=lossy)
        assert len(streams) == 2
        assert read(streams[1], target)[0] == "Okay, no timer."
        # The whole session is known: the cancelled call is not sent as a call to run.
        _, calls, back = read(streams[0], target)
        assert calls == [], target
        assert b"set_timer" not in streams[0]
        assert back.finish_reason != "tool_calls", target
        (drop,) = [d for d in lossy if d.kind == "message"]
        assert drop.where == ("set_timer:fc-1",)
        # Live, the call went out before the cancellation arrived: that is listed.
        conv = ms.StreamConverter(target)
        conv.feed(LIVE_CANCELLED_CALL)
        conv.finish()
        assert any("cancellation of a call already sent" in d.what for d in conv.lossy), target


@pytest.mark.parametrize(
    "data", [GI_LEGACY_TEXT, GI_CURRENT_TEXT], ids=["legacy_content_start", "current_step_start"]
)
def test_an_interactions_text_block_opened_without_text_keeps_its_deltas(data: bytes) -> None:
    response = ms.aggregate(data, protocol="google-interactions")
    assert [p for m in response.messages for p in m.content] == [ms.TextPart(text="Hello world.")]
    assert response.unknown == {}


def test_a_session_of_one_response_is_one_stream() -> None:
    """A session cut inside its only response: one stream, nothing listed, as without sessions."""
    data = _jsonl(_server({"serverContent": {"modelTurn": {"parts": [{"text": "Hi."}]}}}))
    conv = ms.StreamConverter("openai-chat", protocol="google-live")
    out = conv.feed(data) + conv.finish()
    assert conv.streams == [out]
    assert read(out, "openai-chat")[0] == "Hi."
    assert conv.lossy == []


def test_routine_session_frames_are_not_drops() -> None:
    for target in TARGETS:
        conv = ms.StreamConverter(target)
        conv.feed(RT_TWO_RESPONSES)
        conv.finish()
        assert len(conv.streams) == 2
        # The only drop: the single output stream holds one response.
        assert [(d.kind, d.what.split(" (")[0]) for d in conv.lossy] == [
            ("message", "a further response of the session")
        ], target
        lossy: list[ms.Dropped] = []
        assert len(ms.convert_session(RT_TWO_RESPONSES, to=target, lossy=lossy)) == 2
        assert lossy == [], target


def test_a_later_response_is_never_dropped_silently() -> None:
    """The call of the second response reaches every target, in the second stream."""
    for target in TARGETS:
        first, second = ms.convert_session(RT_TWO_RESPONSES, to=target)
        assert read(first, target)[:2] == ("Hello there.", [])
        assert read(second, target)[:2] == ("", [("get_time", {"tz": "UTC"})])
    # One stream holds one response: ms.convert writes the first and lists the second.
    out = ms.convert(RT_TWO_RESPONSES, to="anthropic")
    assert out == ms.convert_session(RT_TWO_RESPONSES, to="anthropic")[0]


# ---------------------------------------------------------------------- every session x every target

from tests.conftest import RECORDINGS as RECORDINGS_DIR  # noqa: E402

SESSIONS = [p for name in ("google-live", "openai-realtime") for p in (*recordings(name), *corpus(name))]
WRITTEN = {
    "rt_two_responses": RT_TWO_RESPONSES,
    "rt_recoverable_error": RT_RECOVERABLE_ERROR,
    "rt_cut_call_item_done": _cut_call(True),
    "rt_cut_call_response_done": _cut_call(False),
    "rt_failed_message": RT_FAILED_MESSAGE,
    "rt_cut_after_item_done": _cut_after_item_done(),
    "live_cancelled_call": LIVE_CANCELLED_CALL,
}


def _source_id(path: Path) -> str:
    return f"{'corpus' if CORPUS in path.parents else 'recordings'}/{path.parent.name}/{path.name}"


def _cases() -> list[object]:
    out: list[object] = [
        pytest.param(path.read_bytes(), target, id=f"{_source_id(path)}->{target}")
        for path in SESSIONS
        for target in TARGETS
    ]
    out += [
        pytest.param(data, target, id=f"{name}->{target}")
        for name, data in WRITTEN.items()
        for target in TARGETS
    ]
    return out


def _kinds(drops: list[ms.Dropped]) -> set[str]:
    return {d.kind for d in drops}


@pytest.mark.parametrize(("data", "target"), _cases())
def test_every_response_keeps_its_text_and_calls_or_lists_the_drop(data: bytes, target: str) -> None:
    session = ms.aggregate_session(data)
    lossy: list[ms.Dropped] = []
    streams = ms.convert_session(data, to=target, lossy=lossy, fail_closed=False)
    assert len(streams) == len(session.responses)
    for response, stream in zip(session.responses, streams, strict=True):
        text, calls = expected(response)
        got_text, got_calls, back = read(stream, target)
        if got_text != text:
            # Audio (with its transcript) where the target has no audio: listed, never silent.
            assert any("audio" in d.what for d in lossy), (target, text, got_text)
            assert got_text in text, (target, text, got_text)
        missing = [c for c in calls if c not in got_calls]
        assert [c for c in got_calls if c not in calls] == [], target
        if missing:
            where = {w for d in lossy if d.kind == "message" for w in d.where or ()}
            assert {name for name, _ in missing} <= {w.split(":")[0] for w in where}, (target, missing)
        if response.status == "completed":
            assert back.status == "completed", target
    routine = [d for d in lossy if d.kind == "session_frame"]
    assert routine == []
