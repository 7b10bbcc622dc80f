"""Anthropic Messages: decoder against the SDK's accumulator, encoder against the SDK's stream
parser, same-protocol round trips, history conversion and validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import msgspec
import pytest
from anthropic.lib.streaming._beta_messages import accumulate_event

import maas_stream as ms
from maas_stream import _cli
from maas_stream._drops import DropLog
from maas_stream.protocols.anthropic import StreamEncoder, detect, from_canonical, to_canonical, validate
from maas_stream.sse import Decoder
from tests.conftest import corpus, need_corpus, params, recordings

ANTHROPIC = params(recordings("anthropic")) + need_corpus("anthropic")
CHAT = params(recordings("openai-chat")) + need_corpus("openai-chat")


def _payloads(data: bytes) -> list[tuple[str, Any]]:
    dec = Decoder()
    events = dec.feed(data) + dec.finish()
    return [(e.event, json.loads(e.data)) for e in events if e.data.strip()]


class SDKError(Exception):
    """The SDK's stream would raise on this ``event: error``."""

    def __init__(self, body: Any) -> None:
        super().__init__(str(body))
        self.body = body


def sdk_accumulate(data: bytes) -> tuple[Any, bool]:
    """The SDK's (beta) accumulator over the same bytes; returns (snapshot, saw message_stop)."""
    snapshot: Any = None
    bufs: dict[int, bytes] = {}
    stopped = False
    for name, payload in _payloads(data):
        if name == "ping":
            continue
        if name == "error":
            raise SDKError(payload)
        stopped = stopped or payload.get("type") == "message_stop"
        snapshot = accumulate_event(
            event=payload, current_snapshot=snapshot, json_bufs=bufs, request_headers=httpx2.Headers()
        )
    return snapshot, stopped


def _is_delta_part(part: Any) -> bool:
    return (
        isinstance(part, ms.UnknownPart)
        and isinstance(part.raw, dict)
        and part.raw.get("type") == "content_block_delta"
    )


def _compare_block(block: Any, part: Any, cut: bool) -> None:
    sdk = block.to_dict()
    kind = sdk["type"]
    if kind == "text":
        assert isinstance(part, ms.TextPart)
        assert part.text == sdk["text"]
        assert [c.raw for c in part.annotations or ()] == (sdk.get("citations") or [])
    elif kind == "thinking":
        assert isinstance(part, ms.ReasoningPart)
        assert not part.redacted
        assert (part.text or "") == sdk["thinking"]
        assert (part.signature or "") == sdk["signature"]
    elif kind == "redacted_thinking":
        assert isinstance(part, ms.ReasoningPart)
        assert part.redacted is True
        assert part.data == sdk["data"]
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        assert isinstance(part, ms.ToolCallPart)
        assert (part.id, part.name) == (sdk["id"], sdk["name"])
        assert part.kind == {"tool_use": "function", "server_tool_use": "server", "mcp_tool_use": "mcp"}[kind]
        if part.status == "incomplete":
            # The SDK reports a cut call with whatever partial JSON parsed; we must not call it done.
            assert cut
            assert isinstance(sdk["input"], dict)
        else:
            assert json.loads(part.arguments) == sdk["input"]
        if kind == "mcp_tool_use":
            assert part.server_name == sdk["server_name"]
    elif kind == "mcp_tool_result":
        assert isinstance(part, ms.ToolResultPart)
        assert part.tool_call_id == sdk["tool_use_id"]
        assert part.is_error == sdk.get("is_error")
        content = sdk["content"]
        if isinstance(content, str):
            assert part.content == content
        else:
            assert [p.text for p in part.content if isinstance(p, ms.TextPart)] == [
                c["text"] for c in content
            ]
    elif kind.endswith("_tool_result"):
        # A server tool's result: attached as a tool result, the block kept whole.
        assert isinstance(part, ms.ToolResultPart)
        assert part.tool_call_id == sdk["tool_use_id"]
        assert isinstance(part.content, list)
        (raw,) = part.content
        assert isinstance(raw, ms.UnknownPart)
        assert raw.raw["type"] == kind
        assert raw.raw["content"] == sdk["content"]
    else:
        assert isinstance(part, ms.UnknownPart)
        assert part.provider_type == kind
        for key in ("content", "encrypted_content", "file_id"):
            if key in sdk:
                assert part.raw.get(key) == sdk[key]


@pytest.mark.parametrize("path", ANTHROPIC)
def test_decoder_matches_sdk_accumulator(path: Path) -> None:
    data = path.read_bytes()
    ours = ms.aggregate(data, protocol="anthropic")
    rejected: Any = None
    try:
        snapshot, stopped = sdk_accumulate(data)
    except SDKError as exc:
        rejected = exc.body
    if rejected is not None:
        # The SDK raises on an in-band error; we keep what came before it and fail the response.
        assert ours.status == "failed"
        assert ours.error is not None
        assert ours.error.type == rejected["error"]["type"]
        assert ours.error.message == rejected["error"]["message"]
        assert ours.messages
        assert ours.messages[0].status == "incomplete"
        return
    assert ours.id == snapshot.id
    assert ours.model == snapshot.model
    (message,) = ours.messages
    assert isinstance(message.content, list)
    parts = [p for p in message.content if not _is_delta_part(p)]
    assert len(parts) == len(snapshot.content)
    for block, part in zip(snapshot.content, parts, strict=True):
        _compare_block(block, part, cut=not stopped or snapshot.stop_reason == "max_tokens")
    assert ours.provider_finish_reason == snapshot.stop_reason
    usage = ours.usage
    assert usage is not None
    # DESIGN's meaning: every prompt token (cache reads and writes included), summed over
    # every billed iteration when the SDK reports them (the top level holds only `message` ones).
    steps = snapshot.usage.iterations or [snapshot.usage]
    assert usage.input_tokens == sum(
        s.input_tokens + (s.cache_read_input_tokens or 0) + (s.cache_creation_input_tokens or 0)
        for s in steps
    )
    assert usage.output_tokens == sum(s.output_tokens for s in steps)
    if snapshot.usage.cache_creation_input_tokens is not None:
        assert usage.cache_write_tokens == sum(s.cache_creation_input_tokens or 0 for s in steps)
    if snapshot.usage.cache_read_input_tokens is not None:
        assert usage.cache_read_tokens == sum(s.cache_read_input_tokens or 0 for s in steps)
    if not stopped:
        assert ours.status == "incomplete"
    elif snapshot.stop_reason in ("max_tokens", "model_context_window_exceeded"):
        assert ours.status == "incomplete"
        assert ours.finish_reason == "length"
    else:
        assert ours.status == "completed"


@pytest.mark.parametrize("path", ANTHROPIC)
def test_open_tool_call_at_cut_is_incomplete(path: Path) -> None:
    """Where the SDK would hand back a cut call as if whole, we mark it incomplete."""
    data = path.read_bytes()
    payloads = _payloads(data)
    stopped_blocks = {p["index"] for _, p in payloads if p.get("type") == "content_block_stop"}
    started = {p["index"]: p["content_block"] for _, p in payloads if p.get("type") == "content_block_start"}
    ours = ms.aggregate(data, protocol="anthropic")
    calls = {
        p.id: p
        for m in ours.messages
        if isinstance(m.content, list)
        for p in m.content
        if isinstance(p, ms.ToolCallPart)
    }
    fragments: dict[int, str] = {}
    for _, p in payloads:
        if p.get("type") == "content_block_delta" and p["delta"].get("type") == "input_json_delta":
            fragments[p["index"]] = fragments.get(p["index"], "") + p["delta"]["partial_json"]
    for index, block in started.items():
        if block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
            expected = "completed" if index in stopped_blocks else "incomplete"
            call = calls[block["id"]]
            assert call.status == expected
            assert call.arguments == (fragments.get(index) or json.dumps(block["input"]))


# ---------------------------------------------------------------------- encoder


def sdk_stream(data: bytes, *, beta: bool = False) -> Any:
    """Feed bytes to the SDK's ``messages.stream()`` and return its final message."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = anthropic.Anthropic(
        api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(handler)), max_retries=0
    )
    api: Any = client.beta.messages if beta else client.messages
    with api.stream(
        model="claude-opus-4-8", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == "".join(b.text for b in final.content if b.type == "text")
    return final


def _assistant_parts(resp: ms.Response) -> list[Any]:
    out: list[Any] = []
    for m in resp.messages:
        if m.role == "assistant" and m.choice_index in (None, 0) and isinstance(m.content, list):
            out.extend(m.content)
    return out


def _assert_sequential(data: bytes) -> None:
    """Blocks are strictly sequential: each starts after the previous one stopped (or was cut)."""
    expected = 0
    open_block: int | None = None
    for name, payload in _payloads(data):
        if name == "content_block_start":
            assert payload["index"] == expected
            open_block = expected
            expected += 1
        elif name == "content_block_delta" and payload["delta"]["type"].endswith(
            ("text_delta", "json_delta")
        ):
            assert payload["index"] == open_block
        elif name == "content_block_stop":
            assert payload["index"] == open_block
            open_block = None


@pytest.mark.parametrize("path", ANTHROPIC + CHAT)
def test_encoder_output_accepted_by_sdk(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data)
    out = ms.convert(data, to="anthropic")
    _assert_sequential(out)
    assert out.startswith(b"event: message_start\n")
    if source.error is not None:
        with pytest.raises(anthropic.APIStatusError) as info:
            sdk_stream(out)
        body: Any = info.value.body
        assert body["error"]["type"] == source.error.type
        return
    final = sdk_stream(out)
    parts = _assistant_parts(source)
    text = "".join(p.text for p in parts if isinstance(p, ms.TextPart | ms.RefusalPart))
    assert "".join(b.text for b in final.content if b.type == "text") == text
    calls = [p for p in parts if isinstance(p, ms.ToolCallPart) and p.kind == "function"]
    got = [b for b in final.content if b.type == "tool_use"]
    assert [(b.id, b.name) for b in got] == [(c.id, c.name) for c in calls]
    for block, call in zip(got, calls, strict=True):
        if call.status == "completed":
            assert block.input == (json.loads(call.arguments) if call.arguments.strip() else {})
    if source.status == "incomplete" and source.finish_reason is None:
        assert final.stop_reason is None  # a cut source stays cut, claiming no reason it never gave
    else:
        assert final.stop_reason is not None


@pytest.mark.parametrize("path", ANTHROPIC)
def test_same_protocol_round_trip(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data, protocol="anthropic")
    conv = ms.StreamConverter("anthropic", protocol="anthropic")
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    assert msgspec.to_builtins(ms.aggregate(out, protocol="anthropic")) == msgspec.to_builtins(source)
    final = sdk_stream(out, beta=True) if source.error is None else None
    if final is not None:
        snapshot, _ = sdk_accumulate(data)
        # Known gap: the canonical ToolCallPart has no slot for a tool_use block's ``caller``.
        strip = ("caller",)
        got = [{k: v for k, v in b.to_dict().items() if k not in strip} for b in final.content]
        want = [{k: v for k, v in b.to_dict().items() if k not in strip} for b in snapshot.content]
        assert got == want
        assert final.stop_reason == snapshot.stop_reason


def test_interleaved_parallel_calls_are_held_until_the_open_one_closes() -> None:
    path = (
        Path(__file__).resolve().parents[2]
        / "recordings"
        / "openai-chat"
        / "readme_text_then_parallel_tools.sse"
    )
    data = path.read_bytes()
    out = ms.convert(data, to="anthropic")
    frames = _payloads(out)
    starts = [p["content_block"] for n, p in frames if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use", "tool_use"]
    final = sdk_stream(out)
    source = ms.aggregate(data)
    calls = [p for p in _assistant_parts(source) if isinstance(p, ms.ToolCallPart)]
    assert len(calls) == 2
    assert [b.input for b in final.content if b.type == "tool_use"] == [
        json.loads(c.arguments) for c in calls
    ]
    assert final.stop_reason == "tool_use"


def test_first_frames_are_written_before_the_source_ends() -> None:
    path = (
        Path(__file__).resolve().parents[2]
        / "recordings"
        / "openai-chat"
        / "readme_text_then_parallel_tools.sse"
    )
    conv = ms.StreamConverter("anthropic", protocol="openai-chat")
    chunks = path.read_bytes().split(b"\n\n")
    first = conv.feed(chunks[0] + b"\n\n")
    assert first.startswith(b"event: message_start")
    second = conv.feed(chunks[1] + b"\n\n")
    assert b"text_delta" in second


@pytest.mark.parametrize("path", [p for p in recordings("openai-chat") if "reasoning" in p.name] or [None])
def test_foreign_reasoning_stays_thinking_and_its_signature_is_dropped(path: Path | None) -> None:
    if path is None:
        pytest.skip("no openai-chat reasoning recording")
    data = path.read_bytes()
    source = ms.aggregate(data)
    reasoning = [p for p in _assistant_parts(source) if isinstance(p, ms.ReasoningPart)]
    assert reasoning
    conv = ms.StreamConverter("anthropic")
    out = conv.feed(data) + conv.finish()
    final = sdk_stream(out)
    thinking = [b for b in final.content if b.type == "thinking"]
    assert "".join(b.thinking for b in thinking) == "".join(p.text or "" for p in reasoning)
    assert all(b.signature == "" for b in thinking)
    texts = "".join(b.text for b in final.content if b.type == "text")
    for part in reasoning:
        if part.text:
            assert part.text not in texts  # never turned into text
    signed = [p for p in reasoning if p.signature]
    assert [(r.kind, r.count) for r in conv.lossy if r.kind == "signature"] == (
        [("signature", len(signed))] if signed else []
    )
    assert all(r.source == "openai-chat" for r in conv.lossy)


def test_server_tool_calls_are_never_client_tool_calls_elsewhere() -> None:
    (path,) = [p for p in recordings("anthropic") if p.name == "server_web_search.sse"]
    conv = ms.StreamConverter("openai-chat", protocol="anthropic")
    out = conv.feed(path.read_bytes()) + conv.finish()
    assert b"srvtoolu_" not in out
    assert any("server" in line for line in map(str, conv.lossy))


def test_encoder_without_any_usage_still_writes_message_delta_usage() -> None:
    enc = StreamEncoder()
    events: list[ms.events.Event] = [
        ms.events.ResponseStart(protocol="test", id="r1", model="m"),
        ms.events.MessageStart(message=0),
        ms.events.PartStart(message=0, part=0, value=ms.TextPart(text="")),
        ms.events.TextDelta(message=0, part=0, text="hi"),
        ms.events.PartDone(message=0, part=0),
        ms.events.MessageDone(message=0, finish_reason="stop"),
        ms.events.ResponseDone(),
    ]
    out = b"".join(enc.encode(e) for e in events)
    final = sdk_stream(out)
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 0
    assert [b.text for b in final.content] == ["hi"]


# ---------------------------------------------------------------------- decoder specifics


def _stream(*frames: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(f"event: {n}\ndata: {json.dumps(p)}\n\n".encode() for n, p in frames)


_START = (
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "model": "m",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    },
)


@pytest.mark.parametrize(
    ("reason", "finish", "status"),
    [
        ("end_turn", "stop", "completed"),
        ("stop_sequence", "stop", "completed"),
        ("max_tokens", "length", "incomplete"),
        ("tool_use", "tool_calls", "completed"),
        ("pause_turn", "pause", "completed"),
        ("refusal", "refusal", "completed"),
        ("model_context_window_exceeded", "length", "incomplete"),
        ("brand_new_reason", "other", "completed"),
    ],
)
def test_stop_reasons(reason: str, finish: str, status: str) -> None:
    data = _stream(
        _START,
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 3}},
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    resp = ms.aggregate(data, protocol="anthropic")
    assert (resp.finish_reason, resp.provider_finish_reason, resp.status) == (finish, reason, status)


def test_usage_is_assigned_never_added() -> None:
    data = _stream(
        _START,
        ("message_delta", {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 5}}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 9, "cache_read_input_tokens": 4},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    usage = ms.aggregate(data, protocol="anthropic").usage
    assert usage is not None
    # The start's input_tokens (10) stays; the cache read given later is added to the prompt.
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        10 + 4,
        9,
        4,
        None,
    )


def test_unknown_types_are_kept_and_counted() -> None:
    (path,) = [p for p in recordings("anthropic") if p.name == "unknown_types.sse"]
    resp = ms.aggregate(path.read_bytes(), protocol="anthropic")
    assert resp.unknown == {"message_metadata": 1, "hologram": 1, "hologram_delta": 1, "sparkle_delta": 1}
    assert resp.unknown_events is not None
    assert resp.unknown_events[0].raw["trace"] == {"id": "tr_01"}
    (message,) = resp.messages
    texts = [p.text for p in message.content if isinstance(p, ms.TextPart)]
    assert texts == ["Hello there."]  # an unknown delta inside a text block does not split it


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            b'event: message_start\ndata: {"type":"message_start","message":5}\n\n', id="message-not-object"
        ),
        pytest.param(
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":[]}\n\n',
            id="block-not-object",
        ),
        pytest.param(
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":"x"}\n\n',
            id="index-not-int",
        ),
        pytest.param(b"event: message_start\ndata: {not json\n\n", id="not-json"),
    ],
)
def test_bad_frames_raise_remote_protocol_error_with_frame_number(data: bytes) -> None:
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(data, protocol="anthropic")
    assert info.value.frame == 1
    assert info.value.protocol == "anthropic"


@pytest.mark.parametrize("path", ANTHROPIC)
def test_protocol_is_detected(path: Path) -> None:
    assert ms.detect_protocol(path.read_bytes(), final=True) == "anthropic"


def test_detect_rejects_other_shapes() -> None:
    assert not detect("message", {"object": "chat.completion.chunk", "choices": []})
    assert not detect("message_start", [])
    assert detect("message_start", {"type": "message_start", "message": {}})


# ---------------------------------------------------------------------- history


def test_history_round_trip_keeps_blocks_and_cache_control() -> None:
    body = {
        "system": [
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look:"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://example.org/a.png"}},
                    {"type": "document", "source": {"type": "file", "file_id": "file_01"}, "title": "Spec"},
                    {"type": "document", "source": {"type": "url", "url": "https://example.org/a.pdf"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Need the weather.", "signature": "EqQBsig=="},
                    {"type": "redacted_thinking", "data": "EmwKAhgBredacted"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "failed"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "Thanks", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {"role": "system", "content": "Answer in French from now on."},
            {"role": "assistant", "content": "D'accord."},
        ],
    }
    assert validate(body) == []
    messages = to_canonical(body)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user", "system", "assistant"]
    drops = DropLog("anthropic")
    assert from_canonical(messages, drops=drops) == body
    assert drops.records == []


def test_chat_tool_messages_merge_into_one_user_message_results_first() -> None:
    chat = {
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "w", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "w", "arguments": '{"city":"Oslo"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "3C"},
            {"role": "user", "content": "And tomorrow?"},
        ]
    }
    lossy: list[ms.Dropped] = []
    body = ms.convert_history(chat, to="anthropic", protocol="openai-chat", lossy=lossy)
    assert body["system"] == "Be brief."
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert [b["type"] for b in msgs[1]["content"]] == ["tool_use", "tool_use"]
    assert [b["input"] for b in msgs[1]["content"]] == [{"city": "Paris"}, {"city": "Oslo"}]
    last = msgs[2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in last[:2]] == ["call_1", "call_2"]
    assert validate(body) == []
    assert lossy == []  # nothing of a plain Chat conversation is lost
    back = ms.convert_history(body, to="openai-chat", protocol="anthropic")
    assert [m["role"] for m in back["messages"]][-3:] == ["tool", "tool", "user"]


def test_foreign_reasoning_is_not_replayed() -> None:
    messages = [
        ms.Message(role="user", content="hi"),
        ms.Message(
            role="assistant",
            provider="openai",
            content=[ms.ReasoningPart(encrypted_content="gAAAA", summary=["s"]), ms.TextPart(text="hello")],
        ),
    ]
    drops = DropLog("anthropic")
    body = from_canonical(messages, drops=drops)
    assert body["messages"][1]["content"] == [{"type": "text", "text": "hello"}]
    assert [(r.kind, r.where) for r in drops.records] == [("encrypted_reasoning", ("messages[1]",))]


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        pytest.param(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_A", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "here"},
                        {"type": "tool_result", "tool_use_id": "toolu_A", "content": "x"},
                    ],
                },
            ],
            "messages[2].content[1]: tool_result 'toolu_A' comes after a text block",
            id="text-before-result",
        ),
        pytest.param(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_A", "name": "f", "input": {}},
                        {"type": "tool_use", "id": "toolu_B", "name": "f", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "x"}],
                },
            ],
            "messages[1]: tool_use 'toolu_B' has no tool_result",
            id="missing-result",
        ),
        pytest.param(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_A", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "x"}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "x"}],
                },
            ],
            "messages[3]: two user messages in a row",
            id="not-alternating",
        ),
        pytest.param(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_A", "name": "f", "input": {}}],
                },
                {"role": "system", "content": "hush"},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "x"}],
                },
            ],
            "messages[2]: system message between tool_use 'toolu_A' and its tool_result",
            id="system-between-call-and-result",
        ),
        pytest.param(
            [{"role": "system", "content": "first"}, {"role": "user", "content": "go"}],
            "messages[0]: a system message cannot be the first message",
            id="system-first",
        ),
        pytest.param(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "ok"},
                {"role": "system", "content": "hush"},
            ],
            "messages[2]: a system message must follow a user message",
            id="system-after-plain-assistant",
        ),
    ],
)
def test_validate_names_message_and_id(messages: list[Any], needle: str) -> None:
    faults = validate({"messages": messages})
    assert any(f.startswith(needle) for f in faults), faults


CALL: Any = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "toolu_A", "name": "f", "input": {}}],
}


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "go"}, CALL, {"role": "user", "content": "no result"}],
        [
            {"role": "user", "content": "go"},
            CALL,
            {"role": "user", "content": "?"},
            {"role": "assistant", "content": "ok"},
        ],
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "assistant", "content": "c"},
        ],
        [
            {"role": "user", "content": "a"},
            {"role": ["user"], "content": "b"},
            "x",
            {"role": "user", "content": 5},
        ],
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok"},
            {"role": "system", "content": "s"},
        ],
    ],
)
def test_validate_reads_string_content_as_one_text_block(messages: list[Any]) -> None:
    as_blocks = [
        {**m, "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m, dict) and isinstance(m.get("content"), str)
        else m
        for m in messages
    ]
    faults = validate({"messages": messages})
    assert faults  # each case breaks a rule
    assert faults == validate({"messages": as_blocks})


def test_validate_accepts_system_after_server_tool_use() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "search"},
            {
                "role": "assistant",
                "content": [
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
                ],
            },
            {"role": "system", "content": "Prefer primary sources."},
            {"role": "assistant", "content": "Found it."},
        ]
    }
    assert validate(body) == []


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param(
            [
                {"type": "text", "text": "first"},
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"},
            ],
            "toolu_9",
            id="text-before-result",
        ),
        pytest.param([{"type": "text", "text": "no result"}], "toolu_9", id="missing-result"),
    ],
)
def test_cli_validate_rejects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, needle: str
) -> None:
    body = {
        "model": "claude-opus-4-8",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_9", "name": "f", "input": {}}],
            },
            {"role": "user", "content": content},
        ],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    code = _cli.main(["validate", "--protocol", "anthropic", str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert needle in err
    assert "messages[" in err


def test_cli_validate_accepts_a_valid_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert _cli.main(["validate", "--protocol", "anthropic", str(path)]) == 0
    assert "valid anthropic request" in capsys.readouterr().out


def test_corpus_is_not_copied() -> None:
    mine = {p.name for p in recordings("anthropic")}
    theirs = {p.name for p in corpus("anthropic")}
    for name in mine & theirs:
        (ours,) = [p for p in recordings("anthropic") if p.name == name]
        (real,) = [p for p in corpus("anthropic") if p.name == name]
        assert ours.read_bytes() != real.read_bytes()


def test_plain_text_turns_stay_strings_unless_they_merge_into_the_turn_before() -> None:
    messages = [
        ms.Message(role="user", content="a"),
        ms.Message(role="user", content="b"),
        ms.Message(role="assistant", content="c"),
        ms.Message(role="tool", content="r", tool_call_id="toolu_A"),
        ms.Message(role="user", content="d"),
    ]
    assert from_canonical(messages)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "c"},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_A", "content": "r"},
                {"type": "text", "text": "d"},
            ],
        },
    ]
