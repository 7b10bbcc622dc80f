"""OpenAI Realtime: corpus responses against their response.done, recordings, encoder (openai SDK oracle)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

import maas_stream as ms
from maas_stream import AudioPart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from maas_stream.protocols import openai_realtime as rt
from tests.conftest import RECORDINGS, corpus, need_corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "openai-realtime"
SERVER_EVENT: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
BETA_EVENT: TypeAdapter[Any] = TypeAdapter(BetaServerEvent)


def frames(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The recorded frames, read with the stdlib (independent of our decoder)."""
    return [(f["dir"], f["msg"]) for f in map(json.loads, path.read_text().splitlines()) if f]


def strip(resp: ms.Response) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(resp)
    for key in ("unknown", "unknown_events", "warnings"):
        out.pop(key, None)
    return out


def assert_item_matches(message: Message, item: dict[str, Any], audio: dict[tuple[str, int], str]) -> None:
    """One ``response.done`` output item against our message, field by field."""
    assert message.id == item["id"]
    assert message.type == item["type"]
    assert message.status == item.get("status", "completed")
    content = message.content
    assert isinstance(content, list)
    if item["type"] == "function_call":
        assert content == [
            ToolCallPart(
                id=item["call_id"],
                name=item["name"],
                arguments=item["arguments"],
                item_id=item["id"],
                status="completed" if item["status"] == "completed" else "incomplete",
            )
        ]
        return
    if item["type"] != "message":
        assert isinstance(content[0], UnknownPart)
        assert content[0].raw == item
        return
    assert message.role == item["role"]
    assert len(content) == len(item["content"])
    for i, (part, wire) in enumerate(zip(content, item["content"], strict=True)):
        if wire["type"] == "output_text":
            assert part == TextPart(text=wire["text"])
        else:
            assert isinstance(part, AudioPart)
            assert part.transcript == wire["transcript"]
            assert (part.data or "") == audio.get((item["id"], i), "")


@pytest.mark.parametrize(
    "path", need_corpus(PROTO) + params([p for p in recordings(PROTO) if "cut_" not in p.name])
)
def test_each_response_matches_its_response_done(path: Path) -> None:
    audio: dict[tuple[str, int], str] = {}
    dones: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for direction, msg in frames(path):
        if direction != "server":
            if (
                msg.get("type") == "conversation.item.create"
                and msg["item"]["type"] == "function_call_output"
            ):
                outputs.append(msg["item"])
            continue
        if msg["type"] in ("response.output_audio.delta", "response.audio.delta"):
            key = (msg["item_id"], msg["content_index"])
            audio[key] = audio.get(key, "") + msg["delta"]
        elif msg["type"] == "response.done":
            dones.append(msg["response"])
    resp = ms.aggregate(path.read_bytes())  # detected
    assert resp.protocol == PROTO
    by_id = {m.id: m for m in resp.messages if m.id}
    for done in dones:
        for item in done["output"]:
            assert_item_matches(by_id[item["id"]], item, audio)
    assert resp.id == dones[-1]["id"]
    last_usage = dones[-1].get("usage")
    assert resp.usage is not None
    assert resp.usage.raw == last_usage
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == (
        last_usage["input_tokens"],
        last_usage["output_tokens"],
        last_usage["total_tokens"],
    )
    # client function outputs: one tool message each, after the call it answers
    results = [
        (i, p) for i, m in enumerate(resp.messages) for p in m.content if isinstance(p, ToolResultPart)
    ]
    assert [(p.tool_call_id, p.content) for _, p in results] == [(o["call_id"], o["output"]) for o in outputs]
    call_at = {p.id: i for i, m in enumerate(resp.messages) for p in m.content if isinstance(p, ToolCallPart)}
    assert all(i > call_at[p.tool_call_id] for i, p in results)


def assert_valid_realtime(out: bytes) -> int:
    """Every server event validates against the openai SDK's RealtimeServerEvent union.

    Events we write are GA events; a beta-shaped session event passed through from a beta
    source validates against the SDK's beta union instead.
    """
    n = 0
    for line in out.splitlines():
        frame = json.loads(line)
        if frame["dir"] == "server":
            try:
                SERVER_EVENT.validate_python(frame["msg"])
            except ValueError:
                assert frame["msg"]["event_id"] in PASSED_THROUGH_BETA, frame["msg"]
                BETA_EVENT.validate_python(frame["msg"])
            n += 1
    return n


PASSED_THROUGH_BETA = {"s0"}
"""Event ids of beta-shaped session events in our beta recording (kept verbatim)."""


@pytest.mark.parametrize("path", need_corpus(PROTO) + params(recordings(PROTO)))
def test_same_protocol_reencode_is_lossless_and_valid(path: Path) -> None:
    data = path.read_bytes()
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    assert strip(ms.aggregate(out, protocol=PROTO)) == strip(ms.aggregate(data, protocol=PROTO))
    assert assert_valid_realtime(out) > 0


def _content(resp: ms.Response) -> list[tuple[Any, Any]]:
    """(role, part) for every part, flattened: Realtime splits a message's calls into items."""
    out = []
    for m in resp.messages:
        parts: list[Any] = []
        for p in m.content if isinstance(m.content, list) else []:
            if isinstance(p, TextPart):
                parts.append(("text", p.text))
            elif isinstance(p, AudioPart) and m.role == "assistant":
                parts.append(("audio", p.data, p.transcript or None))
            elif isinstance(p, AudioPart):
                parts.append(("input", (p.transcript or "").strip()))
            elif isinstance(p, ToolCallPart):
                parts.append(("call", p.id, p.name, json.loads(p.arguments)))
            elif isinstance(p, ToolResultPart):
                parts.append(("result", p.tool_call_id))
        out += [(m.role, p) for p in parts]
    return out


@pytest.mark.parametrize(
    "path", params(corpus("google-live") + recordings("google-live")) or need_corpus("google-live")
)
def test_encoder_from_live_validates_and_keeps_content(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data, protocol="google-live")
    conv = ms.StreamConverter(PROTO, protocol="google-live")
    out = conv.feed(data) + conv.finish()
    assert_valid_realtime(out)
    back = ms.aggregate(out, protocol=PROTO)
    # Input transcriptions arrive whole at .completed, so their place among messages may move.
    assert [c for c in _content(back) if c[0] != "user"] == [c for c in _content(source) if c[0] != "user"]
    assert sorted(c for c in _content(back) if c[0] == "user") == sorted(
        c for c in _content(source) if c[0] == "user"
    )
    if any(m.role == "assistant" and m.content for m in source.messages):
        assert any("reasoning" in line.lower() for line in map(str, conv.lossy)) == any(
            isinstance(p, ReasoningPart) for m in source.messages for p in m.content
        )


def test_parallel_interleaved_calls_and_two_responses() -> None:
    resp = ms.aggregate((RECORDINGS / PROTO / "ga_text_then_parallel_calls.jsonl").read_bytes())
    calls = [p for m in resp.messages for p in m.content if isinstance(p, ToolCallPart)]
    assert [(c.id, c.item_id, c.arguments) for c in calls] == [
        ("call_A", "item_f1", '{"city":"Paris"}'),
        ("call_B", "item_f2", '{"city":"Oslo"}'),
    ]
    assert resp.id == "resp_maas2"
    assert resp.model == "gpt-realtime"
    assert resp.messages[-1].content == [TextPart(text="Paris 18C, Oslo 9C.")]
    assert resp.unknown["client.response.create"] == 2


def test_beta_names_input_transcription_cancel_and_error() -> None:
    beta = ms.aggregate((RECORDINGS / PROTO / "beta_event_names_audio.jsonl").read_bytes())
    assert beta.messages[0].content == [AudioPart(data="AAAA//8A", transcript="Hi there.")]
    assert beta.unknown["rate_limits.updated"] == 1
    resp = ms.aggregate((RECORDINGS / PROTO / "input_transcription_cancelled_error.jsonl").read_bytes())
    answer, user = resp.messages  # the transcription completed after the response it began in
    assert (user.role, user.type, user.id) == ("user", "input_transcription", "item_u")
    assert user.content == [AudioPart(transcript="Tell me a story.")]  # deltas spanned response.done
    assert answer.status == "incomplete"
    # The error event is recoverable (the session stays open): the cancelled response is the
    # last one, and the error is a session event.
    assert (resp.status, resp.error) == ("incomplete", None)
    session = ms.aggregate_session(
        (RECORDINGS / PROTO / "input_transcription_cancelled_error.jsonl").read_bytes()
    )
    errors = [e for e in session.events if e.kind == "error"]
    assert [e.error.code for e in errors if e.error] == ["item_truncate_invalid"]
    done_only = ms.aggregate((RECORDINGS / PROTO / "done_only_items_incomplete.jsonl").read_bytes())
    assert (done_only.status, done_only.finish_reason) == ("incomplete", "length")


def test_cut_mid_arguments() -> None:
    resp = ms.aggregate((RECORDINGS / PROTO / "cut_mid_arguments.jsonl").read_bytes())
    assert resp.status == "incomplete"
    call = resp.messages[0].content[0]
    assert isinstance(call, ToolCallPart)
    assert call.status == "incomplete"
    assert call.arguments == '{"q": "par'


def test_bad_events_give_clear_protocol_errors() -> None:
    with pytest.raises(ms.RemoteProtocolError, match="without a type") as info:
        ms.aggregate(b'{"dir":"server","msg":{"event_id":"x"}}\n', protocol=PROTO)
    assert info.value.frame == 1
    with pytest.raises(ms.RemoteProtocolError, match="invalid openai-realtime message"):
        ms.aggregate(
            b'{"dir":"server","msg":{"type":"response.output_text.delta","delta":5}}\n', protocol=PROTO
        )
    with pytest.raises(ms.RemoteProtocolError, match="object with a type"):
        ms.aggregate(b'{"dir":"client","msg":"hello"}\n', protocol=PROTO)


def test_history_items_round_trip_and_validate() -> None:
    body = {
        "items": [
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Be brief."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "18C"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "18C."}]},
        ]
    }
    messages = rt.to_canonical(body)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert rt.from_canonical(messages) == body
    assert rt.validate(body) == []
    assert rt.validate({"items": [body["items"][3]]}) == [
        "messages[0]: function_call_output c1 answers no earlier function_call"
    ]
