"""Websocket sources (the ``websockets`` library, asyncio only) with a small JSON-lines test protocol.

No websocket protocol exists on this branch yet (Realtime / Live are being written), so the
test registers a minimal one: ``{"type": "delta", "text"}`` and ``{"type": "done"}`` messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

import maas_stream as ms
from maas_stream._registry import _REGISTRY, ProtocolSpec, register
from maas_stream.events import ResponseDone, TextDelta
from maas_stream.protocols import openai_chat
from maas_stream.protocols._jsonl import JSONLinesStreamDecoder

if TYPE_CHECKING:
    from collections.abc import Iterator

    from maas_stream.events import Event

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


class _Decoder(JSONLinesStreamDecoder):
    protocol = "test-jsonl"

    def on_message(self, msg: bytes | str, direction: str, decoded: object = None) -> list[Event]:
        frame = msgspec.json.decode(msg)
        if frame["type"] == "delta":
            return [TextDelta(message=0, part=0, text=frame["text"])]
        if frame["type"] == "done":
            return [ResponseDone(finish_reason="stop")]
        raise ms.RemoteProtocolError(f"unexpected message type {frame['type']!r}")


@pytest.fixture(autouse=True)
def jsonl_protocol() -> Iterator[None]:
    register(
        ProtocolSpec(
            name="test-jsonl",
            framing="jsonl",
            decoder=_Decoder,
            encoder=openai_chat.StreamEncoder,
            to_canonical=openai_chat.to_canonical,
            from_canonical=openai_chat.from_canonical,
            validate=openai_chat.validate,
            detect=lambda direction, payload: isinstance(payload, dict) and payload.get("type") == "delta",
        )
    )
    yield
    _REGISTRY.pop("test-jsonl")


MESSAGES = [
    '{"type":"delta","text":"Hel"}',
    b'{"type":"delta","text":"lo, w\xc3\xb6"}',  # a binary message is fed as is, too
    '{"type":"delta","text":"rld"}',
    '{"type":"done"}',
]


def sender(messages: list[Any], *, stall: bool = False) -> Any:
    async def handler(ws: ServerConnection) -> None:
        for msg in messages:
            await ws.send(msg)
        if stall:
            await ws.wait_closed()

    return handler


async def test_aaggregate_over_a_websocket() -> None:
    async with serve(sender(MESSAGES), "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}") as ws:
            resp = await ms.aaggregate(ws, protocol="test-jsonl")
        async with connect(f"ws://127.0.0.1:{port}") as ws:
            detected = await ms.aaggregate(ws)
    assert resp.status == "completed"
    assert resp.messages[0].content == [ms.TextPart(text="Hello, wörld")]
    assert detected == resp
    assert detected.protocol == "test-jsonl"


async def test_aconvert_a_websocket_to_sse() -> None:
    async with serve(sender(MESSAGES), "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}") as ws:
            out = [chunk async for chunk in ms.aconvert(ws, protocol="test-jsonl", to="openai-chat")]
    assert len(out) > 1
    back = ms.aggregate(b"".join(out), protocol="openai-chat")
    assert isinstance(back.messages[0].content, list)
    assert "".join(p.text for p in back.messages[0].content if isinstance(p, ms.TextPart)) == "Hello, wörld"


async def test_websocket_idle_timeout_and_sse_protocol_refused() -> None:
    async with serve(sender(MESSAGES[:1], stall=True), "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}") as ws:
            with anyio.fail_after(5), pytest.raises(ms.IdleTimeoutError, match="after 1 messages") as info:
                await ms.aaggregate(ws, protocol="test-jsonl", idle_timeout=0.2)
            assert info.value.received == 1
        async with connect(f"ws://127.0.0.1:{port}") as ws:
            with pytest.raises(ms.LocalProtocolError, match="not a websocket protocol"):
                await ms.aaggregate(ws, protocol="openai-chat")
