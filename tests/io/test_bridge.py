"""A loopback bridge: a websocket server replays a recorded session, our adapter re-encodes it.

The server sends a recording's SERVER messages (our recordings and the corpus, read in place)
over a real ``websockets`` connection on 127.0.0.1; ``ms.aconvert`` / ``ms.astream`` consume the
client side and re-encode as it goes: Google Live → OpenAI Realtime events and (one stream per
model turn) OpenAI Chat SSE; OpenAI Realtime → Google Live. The oracles are the official SDKs'
types (openai's ``RealtimeServerEvent``, google-genai's ``LiveServerMessage``, the openai Chat
stream accumulator) and ``ms.aggregate`` of the original recording.

Client messages (the tool results a client sends back) do not travel over a server's stream:
the bridge output carries the calls, and the test checks the client answered them in the order
the bridge emitted them. ``websockets`` is asyncio only.
"""

from __future__ import annotations

import json
import random
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.protocol import State

import maas_stream as ms
from maas_stream import AudioPart, TextPart, ToolCallPart, ToolResultPart
from maas_stream.events import ResponseStart
from maas_stream.protocols import openai_chat
from maas_stream.testing import serve_websocket, websocket_replay_handler
from tests.conftest import corpus, params, recordings
from tests.protocols.test_google_live import assert_valid_live, calls_and_results
from tests.protocols.test_openai_chat import sdk_stream
from tests.protocols.test_openai_realtime import _content, assert_valid_realtime

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable
    from pathlib import Path

    from websockets.asyncio.server import ServerConnection

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

LIVE = "google-live"
REALTIME = "openai-realtime"
PAUSE = 0.001
"""Seconds between two server messages."""
LIMIT = 5.0
"""No single session may take longer (a stall fails instead of hanging)."""


def server_messages(path: Path) -> list[str]:
    """The recording's server messages as JSON text, read with the stdlib."""
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [json.dumps(f["msg"], ensure_ascii=False) for f in frames if f["dir"] == "server"]


def recorded(path: Path, protocol: str) -> ms.Response:
    """The original recording (both directions) aggregated: the reference."""
    return ms.aggregate(path.read_bytes(), protocol=protocol)


def replay(messages: list[Any], *, gate: anyio.Event | None = None, sent: list[int] | None = None) -> Any:
    """A server handler sending ``messages`` with small pauses (waiting on ``gate`` after the first)."""

    async def hold(i: int) -> None:
        if i == 1 and gate is not None:
            with anyio.fail_after(LIMIT):
                await gate.wait()

    return websocket_replay_handler(
        [("server", m) for m in messages], await_client=False, pause=PAUSE, before_send=hold, sent=sent
    )


async def over_websocket(handler: Any, consume: Callable[[Any], Awaitable[Any]]) -> Any:
    """Serve ``handler`` on a free loopback port and run ``consume`` on a client connection."""
    async with serve_websocket(handler) as server, connect(server.url) as ws:
        with anyio.fail_after(LIMIT):
            return await consume(ws)


def assert_realtime_order(out: bytes) -> None:
    """Realtime's grammar: nothing of a content part after its ``.done``, nor of an item after its ``output_item.done``."""
    closed_items: set[str] = set()
    closed_parts: set[tuple[str, int]] = set()
    for line in out.splitlines():
        frame = json.loads(line)
        msg = frame["msg"]
        item = msg.get("item_id") or (msg.get("item") or {}).get("id")
        if frame["dir"] != "server" or not item or msg["type"].startswith("conversation."):
            continue
        assert item not in closed_items, f"{msg['type']} after output_item.done of {item}"
        part = (item, msg["content_index"]) if "content_index" in msg else None
        assert part not in closed_parts, f"{msg['type']} after content_part.done of {part}"
        if msg["type"] == "response.output_item.done":
            closed_items.add(item)
        elif msg["type"] == "response.content_part.done":
            closed_parts.add((item, msg["content_index"]))


def tool_result_ids(resp: ms.Response) -> list[str]:
    return [p.tool_call_id for m in resp.messages for p in m.content if isinstance(p, ToolResultPart)]


def call_ids(resp: ms.Response) -> list[str]:
    return [p.id for m in resp.messages for p in m.content if isinstance(p, ToolCallPart)]


def assert_results_follow_calls(bridged: ms.Response, original: ms.Response) -> None:
    """The client's results (recorded) answer the bridged calls, in the order they were bridged."""
    results = tool_result_ids(original)
    calls = call_ids(bridged)
    assert set(results) <= set(calls)
    assert [c for c in calls if c in set(results)] == results


LIVE_SESSIONS = params(recordings(LIVE) + corpus(LIVE))
REALTIME_SESSIONS = params(recordings(REALTIME) + corpus(REALTIME))


# ---------------------------------------------------------------- Live → Realtime


@pytest.mark.parametrize("path", LIVE_SESSIONS)
async def test_live_to_realtime_over_a_websocket(path: Path) -> None:
    lossy: list[ms.Dropped] = []

    async def consume(ws: Any) -> list[bytes]:
        converted = ms.aconvert(ws, protocol=LIVE, to=REALTIME, lossy=lossy)
        async with aclosing(converted) as frames:
            return [frame async for frame in frames]

    out = b"".join(await over_websocket(replay(server_messages(path)), consume))
    original = recorded(path, LIVE)
    assert assert_valid_realtime(out) > 0
    assert_realtime_order(out)
    bridged = ms.aggregate(out, protocol=REALTIME)
    # text, audio (data and transcript), calls (id, name, arguments): everything but the client's
    # own results, in order; input transcriptions arrive whole at .completed, so they may move.
    model = [c for c in _content(original) if c[0] not in ("user", "tool")]
    assert [c for c in _content(bridged) if c[0] != "user"] == model
    assert sorted(c for c in _content(bridged) if c[0] == "user") == sorted(
        c for c in _content(original) if c[0] == "user"
    )
    assert tool_result_ids(bridged) == []
    assert_results_follow_calls(bridged, original)
    assert (bridged.status == "incomplete") == (original.status == "incomplete")


# ---------------------------------------------------------------- Live → Chat, one stream per turn


def turn_content(message: ms.Message) -> tuple[str, list[tuple[str, str, Any]], str, str]:
    """Text, calls, audio data and transcript of one model turn."""
    parts = message.content if isinstance(message.content, list) else []
    return (
        "".join(p.text for p in parts if isinstance(p, TextPart)),
        [(p.id, p.name, json.loads(p.arguments)) for p in parts if isinstance(p, ToolCallPart)],
        "".join(p.data or "" for p in parts if isinstance(p, AudioPart)),
        "".join(p.transcript or "" for p in parts if isinstance(p, AudioPart)),
    )


async def chat_turns(ws: Any, sent: list[int] | None = None, gate: anyio.Event | None = None) -> list[bytes]:
    """The bridge: each Live model turn re-encoded as its own Chat SSE stream, as it arrives."""
    turns: list[bytearray] = []
    encoder: openai_chat.StreamEncoder | None = None
    async with aclosing(ms.astream(ws, protocol=LIVE)) as events:
        async for event in events:
            if isinstance(event, ResponseStart):
                encoder = openai_chat.StreamEncoder()
                turns.append(bytearray())
            if encoder is None:
                continue
            out = encoder.encode(event)
            if out and gate is not None and not gate.is_set():
                assert sent == [1], "the first Chat chunk waited for more input"
                gate.set()
            turns[-1] += out
    return [bytes(t) for t in turns]


@pytest.mark.parametrize("path", LIVE_SESSIONS)
async def test_live_text_turns_to_chat_sse(path: Path) -> None:
    turns = await over_websocket(replay(server_messages(path)), chat_turns)
    original = recorded(path, LIVE)
    model_turns = [m for m in original.messages if m.role == "assistant"]
    bridged = []
    for data in turns:
        messages = [m for m in ms.aggregate(data, protocol="openai-chat").messages if m.content]
        bridged += messages
        completion, exc = sdk_stream(data)
        assert exc is None
        if any(turn_content(m)[0] for m in messages):  # a text turn: the SDK reads the same text
            assert completion.choices[0].message.content == turn_content(messages[0])[0]
    assert [turn_content(m) for m in bridged] == [turn_content(m) for m in model_turns if m.content]
    assert any(turn_content(m)[0] or turn_content(m)[1] for m in bridged) or not any(
        turn_content(m)[0] or turn_content(m)[1] for m in model_turns
    )


# ---------------------------------------------------------------- streaming as it goes


def first_output_message(messages: list[str]) -> list[str]:
    """The session from its first model text on (session messages before it produce no output)."""
    for i, msg in enumerate(messages):
        parts = json.loads(msg).get("serverContent", {}).get("modelTurn", {}).get("parts", [])
        if any("text" in p and not p.get("thought") for p in parts):
            return messages[i:]
    raise AssertionError("no model text in the recording")


@pytest.mark.parametrize("target", [REALTIME, "openai-chat"])
async def test_bridge_yields_before_the_server_sends_more(target: str) -> None:
    path = next(p for p in recordings(LIVE) if p.name == "text_thought_parallel_tools.jsonl")
    messages = first_output_message(server_messages(path))
    gate = anyio.Event()
    sent: list[int] = []

    async def consume(ws: Any) -> bytes:
        if target == "openai-chat":
            return b"".join(await chat_turns(ws, sent, gate))
        out = bytearray()
        async with aclosing(ms.aconvert(ws, protocol=LIVE, to=target)) as frames:
            async for frame in frames:
                if not gate.is_set():
                    assert sent == [1], "the first output waited for more input"
                    assert b"Checking both cities now." in frame
                    gate.set()
                out += frame
        return bytes(out)

    out = await over_websocket(replay(messages, gate=gate, sent=sent), consume)
    assert gate.is_set()
    assert sent == list(range(1, len(messages) + 1))
    assert b"Paris 18" in out


# ---------------------------------------------------------------- Realtime → Live


@pytest.mark.parametrize("path", REALTIME_SESSIONS)
async def test_realtime_to_live_over_a_websocket(path: Path) -> None:
    async def consume(ws: Any) -> list[bytes]:
        async with aclosing(ms.aconvert(ws, protocol=REALTIME, to=LIVE)) as frames:
            return [frame async for frame in frames]

    out = b"".join(await over_websocket(replay(server_messages(path)), consume))
    original = recorded(path, REALTIME)
    written = assert_valid_live(out)
    bridged = ms.aggregate(out, protocol=LIVE) if out else None
    # a call the source cut is never handed to a Live client (it would run with half its arguments)
    complete = [
        (p.id, p.name, json.loads(p.arguments))
        for m in original.messages
        for p in m.content
        if isinstance(p, ToolCallPart) and p.status != "incomplete"
    ]
    if bridged is None:  # the only output was a cut call
        assert written == 0
        assert complete == []
        assert [
            m
            for m in original.messages
            if m.role != "tool" and any(not isinstance(p, ToolCallPart) for p in m.content)
        ] == []
        return
    assert [c for _, c in calls_and_results(bridged)[0]] == complete
    assert tool_result_ids(bridged) == []
    assert_results_follow_calls(bridged, original)
    assert all(
        p.status != "incomplete" for m in bridged.messages for p in m.content if isinstance(p, ToolCallPart)
    )

    def model(resp: ms.Response) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for m in resp.messages:
            for p in m.content if m.role == "assistant" and isinstance(m.content, list) else []:
                if isinstance(p, TextPart):
                    out.append(("text", p.text))
                elif isinstance(p, AudioPart):
                    out.append(("audio", p.data, p.transcript))
        return out

    assert model(bridged) == model(original)

    def inputs(resp: ms.Response) -> list[str | None]:
        return [
            p.transcript
            for m in resp.messages
            if m.role == "user"
            for p in m.content
            if isinstance(p, AudioPart)
        ]

    assert inputs(bridged) == inputs(original)


# ---------------------------------------------------------------- bad frames


_rng = random.Random(7)
ANY_BAD = [
    pytest.param(b"\x80\xff\x00garbage", id="random-binary"),
    pytest.param(bytes(_rng.randrange(256) for _ in range(64)), id="random-64-bytes"),
    pytest.param("not json at all", id="text"),
    pytest.param("[1, 2, 3]", id="json-array"),
    pytest.param('{"serverContent": {"modelTurn": {"parts": [{"text": "a"}]}}', id="truncated-json"),
]
# An object of an unknown kind is kept (unknown types are never an error); these break the grammar.
BAD = {
    LIVE: [
        *ANY_BAD,
        pytest.param('{"serverContent": 5}', id="content-not-an-object"),
        pytest.param('{"toolCall": {"functionCalls": 3}}', id="calls-not-a-list"),
    ],
    REALTIME: [
        *ANY_BAD,
        pytest.param('{"type": "response.output_text.delta", "delta": 5}', id="delta-not-text"),
        pytest.param('{"event_id": "x"}', id="no-type"),
    ],
}


@pytest.mark.parametrize("bad", BAD[LIVE])
async def test_bad_live_frames(bad: str | bytes) -> None:
    await expect_bad_frame_to_raise_and_close(LIVE, bad)


@pytest.mark.parametrize("bad", BAD[REALTIME])
async def test_bad_realtime_frames(bad: str | bytes) -> None:
    await expect_bad_frame_to_raise_and_close(REALTIME, bad)


async def drain(frames: AsyncGenerator[bytes, None]) -> None:
    async with aclosing(frames) as it:
        async for _ in it:
            pass


async def expect_bad_frame_to_raise_and_close(protocol: str, bad: str | bytes) -> None:
    """A bad second message: a RemoteProtocolError naming frame 2, and the connection closed."""
    good = server_messages(recordings(protocol)[0])[0]
    closed = anyio.Event()

    async def handler(ws: ServerConnection) -> None:
        await ws.send(good)
        await ws.send(bad)
        await ws.send(good)
        await ws.wait_closed()
        closed.set()

    async def consume(ws: Any) -> tuple[ms.RemoteProtocolError, Any]:
        with pytest.raises(ms.ProtocolError) as info:
            await drain(ms.aconvert(ws, protocol=protocol, to=LIVE))
        assert isinstance(info.value, ms.RemoteProtocolError), repr(info.value)
        with anyio.fail_after(LIMIT):
            await closed.wait()
        return info.value, ws.state

    error, state = await over_websocket(handler, consume)
    assert error.frame == 2
    assert "frame 2" in str(error)
    assert error.protocol == protocol
    assert state is State.CLOSED


async def test_bad_first_frame_without_a_protocol() -> None:
    """Detecting the protocol from a garbage first message fails as a detection error."""

    async def handler(ws: ServerConnection) -> None:
        await ws.send(b"\x00\x01binary")
        await ws.wait_closed()

    async def consume(ws: Any) -> Any:
        with pytest.raises(ms.ProtocolDetectionError, match="not JSON"):
            await ms.aaggregate(ws)
        return ws.state

    assert await over_websocket(handler, consume) is State.CLOSED
