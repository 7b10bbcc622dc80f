"""The bridge's websocket server protocol: reading paused only when the app falls behind.

The protocol is driven by hand (a fake transport, frames fed one read at a time), so what is
queued and when reading pauses are exact. The uvicorn behaviour it wraps is pinned here too: if
uvicorn stops pausing per message, or names its flags differently, these tests say so.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from uvicorn.config import Config
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol

from maas_stream.bridge._ws_server import (
    LARGE_MESSAGE,
    QUEUE_DEPTH,
    BridgeWebSocketProtocol,
    _Inbox,
)

pytestmark = pytest.mark.anyio

HANDSHAKE = (
    b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def frame(text: str) -> bytes:
    """One masked client text frame."""
    return Frame(Opcode.TEXT, text.encode()).serialize(mask=True, extensions=[])


class FakeTransport:
    """What the protocol asks of its transport; counts pauses and resumes."""

    def __init__(self) -> None:
        self.paused = False
        self.pauses = 0
        self.resumes = 0
        self.closing = False
        self.written: list[bytes] = []

    def pause_reading(self) -> None:
        assert not self.paused
        self.paused, self.pauses = True, self.pauses + 1

    def resume_reading(self) -> None:
        assert self.paused
        self.paused, self.resumes = False, self.resumes + 1

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)


async def opened(cls: type[WebSocketsSansIOProtocol], done: anyio.Event) -> tuple[Any, FakeTransport]:
    """A protocol past its handshake, its app accepted and waiting for ``done`` (not reading)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        await done.wait()

    config = Config(app=app, log_level="warning")
    proto = cls(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = FakeTransport()
    proto.connection_made(transport)  # type: ignore[arg-type]
    proto.data_received(HANDSHAKE)
    while not proto.handshake_complete:  # the app's task accepts
        await anyio.lowlevel.checkpoint()
    assert b"101 Switching Protocols" in b"".join(transport.written)
    return proto, transport


async def test_uvicorn_pauses_reading_after_every_message_and_resumes_when_read() -> None:
    # What the bridge's protocol wraps: uvicorn pauses unless ``read_paused`` says it has, and
    # ``receive()`` resumes when the queue is empty.
    done = anyio.Event()
    proto, transport = await opened(WebSocketsSansIOProtocol, done)
    proto.data_received(frame("one"))
    assert (transport.pauses, proto.read_paused) == (1, True)
    assert await proto.receive() == {"type": "websocket.receive", "text": "one"}
    assert (transport.resumes, proto.read_paused) == (1, False)
    done.set()


async def test_a_client_that_waits_for_its_answers_is_never_paused() -> None:
    done = anyio.Event()
    proto, transport = await opened(BridgeWebSocketProtocol, done)
    for n in range(3 * QUEUE_DEPTH):
        proto.data_received(frame(f"m{n}"))
        assert await proto.receive() == {"type": "websocket.receive", "text": f"m{n}"}
    assert (transport.pauses, transport.resumes) == (0, 0)
    done.set()


async def test_a_flooding_client_is_paused_at_the_queue_depth_and_resumed_when_all_are_read() -> None:
    done = anyio.Event()
    proto, transport = await opened(BridgeWebSocketProtocol, done)
    for _ in range(2):  # twice: a resumed session pauses again
        sent = 0
        while not transport.paused and sent < 10 * QUEUE_DEPTH:
            proto.data_received(frame(f"m{sent}"))
            sent += 1
        assert sent == QUEUE_DEPTH
        assert proto.queue.qsize() == QUEUE_DEPTH
        for n in range(QUEUE_DEPTH):
            assert transport.paused  # not resumed before the queue is empty
            assert await proto.receive() == {"type": "websocket.receive", "text": f"m{n}"}
        assert not transport.paused
    assert (transport.pauses, transport.resumes) == (2, 2)
    done.set()


async def test_messages_already_read_when_pausing_are_all_queued_in_order() -> None:
    # One read of the socket may hold more messages than the depth: none is lost or reordered,
    # and reading pauses once.
    done = anyio.Event()
    proto, transport = await opened(BridgeWebSocketProtocol, done)
    proto.data_received(b"".join(frame(f"m{n}") for n in range(QUEUE_DEPTH + 5)))
    assert (transport.pauses, proto.queue.qsize()) == (1, QUEUE_DEPTH + 5)
    got = [(await proto.receive())["text"] for _ in range(QUEUE_DEPTH + 5)]
    assert got == [f"m{n}" for n in range(QUEUE_DEPTH + 5)]
    assert transport.resumes == 1
    done.set()


@pytest.mark.parametrize("pieces", [1, 3], ids=["one frame", "fragmented"])
async def test_a_large_message_pauses_reading_at_once(pieces: int) -> None:
    # What a session holds stays near uvicorn's bound: small messages up to the depth, and
    # reading stops after any large one.
    done = anyio.Event()
    proto, transport = await opened(BridgeWebSocketProtocol, done)
    proto.data_received(frame("small"))
    assert not transport.paused
    text = "x" * LARGE_MESSAGE
    step = -(-len(text) // pieces)
    parts = [text[i : i + step].encode() for i in range(0, len(text), step)]
    for n, part in enumerate(parts):
        opcode = Opcode.TEXT if n == 0 else Opcode.CONT
        last = n == len(parts) - 1
        proto.data_received(Frame(opcode, part, fin=last).serialize(mask=True, extensions=[]))
        assert transport.paused is last
    assert [(await proto.receive())["text"] for _ in range(2)] == ["small", text]
    assert (transport.pauses, transport.resumes) == (1, 1)
    proto.data_received(frame("x" * (LARGE_MESSAGE - 1)))
    assert not transport.paused
    done.set()


async def test_closing_while_paused_resumes_reading_for_the_close_reply() -> None:
    done = anyio.Event()
    proto, transport = await opened(BridgeWebSocketProtocol, done)
    proto.data_received(b"".join(frame(f"m{n}") for n in range(QUEUE_DEPTH)))
    assert transport.paused
    await proto.send({"type": "websocket.close", "code": 1000})
    assert (transport.paused, proto.read_paused) == (False, False)
    # The app is past its close: uvicorn drops the client's messages and keeps reading.
    proto.data_received(frame("late"))
    proto.data_received(frame("x" * LARGE_MESSAGE))
    assert (transport.paused, transport.pauses, proto.queue.qsize()) == (False, 1, QUEUE_DEPTH + 1)
    done.set()


async def test_the_handshake_is_let_go_once_accepted() -> None:
    done = anyio.Event()
    proto, _ = await opened(BridgeWebSocketProtocol, done)
    assert (proto.held, proto.request, proto.response) == (False, None, None)
    assert proto.conn.parser.gi_code is Protocol.parse.__code__
    proto.data_received(frame("one"))
    assert await proto.receive() == {"type": "websocket.receive", "text": "one"}
    done.set()


async def test_a_frame_half_read_at_the_accept_keeps_the_handshake_until_it_is_read() -> None:
    accept = anyio.Event()
    got: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        got.append(await receive())
        await accept.wait()
        await send({"type": "websocket.accept"})
        got.append(await receive())
        await anyio.sleep_forever()

    config = Config(app=app, log_level="warning")
    proto = BridgeWebSocketProtocol(
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )
    proto.connection_made(FakeTransport())  # type: ignore[arg-type]
    data = frame("x" * 300)
    proto.data_received(HANDSHAKE + data[:2])  # the frame's header begun before the accept
    accept.set()
    while not proto.handshake_complete:
        await anyio.lowlevel.checkpoint()
    assert proto.held  # mid-frame: not restarted
    proto.data_received(data[2:])
    assert not proto.held
    assert proto.conn.parser.gi_code is Protocol.parse.__code__
    while len(got) < 2:
        await anyio.lowlevel.checkpoint()
    assert got == [{"type": "websocket.connect"}, {"type": "websocket.receive", "text": "x" * 300}]
    for task in list(proto.tasks):
        task.cancel()


async def test_the_queue_waits_without_looking_up_the_running_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # asyncio.Queue.get asks asyncio.events._get_running_loop() (getpid() in CPython) each time
    # it waits; the protocol's queue does not.
    calls = []
    lookup = asyncio.events._get_running_loop

    def counted() -> asyncio.AbstractEventLoop | None:
        calls.append(1)
        return lookup()

    monkeypatch.setattr(asyncio.events, "_get_running_loop", counted)
    loop = asyncio.get_running_loop()
    pairs: list[tuple[asyncio.Queue[int] | _Inbox, int]] = [(asyncio.Queue(), 1), (_Inbox(loop), 0)]  # noqa: TID251
    for queue, lookups in pairs:
        calls.clear()
        assert (await got_after_waiting(queue), len(calls)) == (7, lookups)


async def got_after_waiting(queue: asyncio.Queue[int] | _Inbox) -> int:  # noqa: TID251
    """What ``queue.get()`` returns when it had to wait for it."""
    got: list[int] = []

    async def get() -> None:
        got.append(await queue.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(get)
        await anyio.lowlevel.checkpoint()  # get() waits on the empty queue
        assert not got
        queue.put_nowait(7)
    return got[0]
