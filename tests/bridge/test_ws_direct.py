"""The bridge's own session on its websocket protocol: messages taken and sent without ASGI dicts.

:class:`~maas_stream.bridge._ws.ClientSocket` handed the protocol's own ``receive`` and ``send``
takes the direct path (``_ws_lean``). These drive it by hand, as ``test_ws_lean`` does the ASGI
path: the same backpressure (a flooding client is paused at the depth, a large message at once),
the same limits, and the protocol's handling of what the direct path leaves to it (invalid UTF-8,
closes, a send while the socket is not writable or gone).
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from websockets.frames import Close, Frame, Opcode

from maas_stream.bridge._ws import ClientGone, ClientSocket, MessageTooBig
from maas_stream.bridge._ws_lean import LARGE_MESSAGE, QUEUE_DEPTH, LeanWebSocketProtocol

from .test_ws_lean import Held, Wire, masked, opened, settle, text

pytestmark = pytest.mark.anyio


async def direct(max_message: int = 1 << 20) -> tuple[LeanWebSocketProtocol, Wire, ClientSocket, Held]:
    proto, wire, app = await opened()
    socket = ClientSocket(app.scope, app.receive, app.send, max_message=max_message)
    assert socket._direct is proto
    assert proto._direct
    socket.accepted = True
    return proto, wire, socket, app


async def test_only_the_protocols_own_callables_go_direct() -> None:
    proto, _, app = await opened()

    async def wrapped() -> Any:
        return await app.receive()

    socket = ClientSocket(app.scope, wrapped, app.send, max_message=100)
    assert (socket._direct, proto._direct) == (None, False)
    proto.data_received(text("asgi"))
    assert proto._messages == [{"type": "websocket.receive", "text": "asgi"}]
    assert await socket.receive() == "asgi"  # the ASGI dict, read as before
    app.done.set()


async def test_messages_come_as_sent_text_and_bytes_and_sends_without_dicts() -> None:
    proto, wire, socket, app = await direct()
    proto.data_received(text("héllo") + masked(Opcode.BINARY, b"\x00\xff"))
    assert proto._messages == ["héllo", b"\x00\xff"]
    assert [await socket.receive(), await socket.receive(), socket.received] == ["héllo", b"\x00\xff", 2]
    assert wire.changes == []
    assert socket.send_now("out")
    assert socket.send_now(b"\x01")
    assert [(f.opcode, f.data) for f in wire.frames()] == [(Opcode.TEXT, b"out"), (Opcode.BINARY, b"\x01")]
    proto.pause_writing()  # the buffer is full: left to send(), which waits
    assert not socket.send_now("later")
    proto.resume_writing()
    app.done.set()


async def test_a_waiting_receive_gets_the_next_message() -> None:
    proto, _, socket, app = await direct()
    got: list[str | bytes] = []

    async def read() -> None:
        got.append(await socket.receive())

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await settle()
        assert not got
        proto.data_received(text("late"))
    assert got == ["late"]
    app.done.set()


async def test_take_and_arrival_read_without_a_coroutine() -> None:
    proto, _, socket, app = await direct(max_message=4)
    assert socket.direct
    assert socket.take() is None
    arrival = socket.arrival()
    assert not arrival.done()  # type: ignore[attr-defined]
    proto.data_received(text("one") + text("too big"))
    assert arrival.done()  # type: ignore[attr-defined]
    assert (socket.take(), socket.received) == ("one", 1)
    with pytest.raises(MessageTooBig):
        socket.take()
    proto.connection_lost(None)
    with pytest.raises(ClientGone):
        socket.take()
    app.done.set()


async def test_a_flooding_client_is_still_paused_at_the_depth_and_resumed_when_all_are_read() -> None:
    proto, wire, socket, app = await direct()
    for _ in range(2):
        sent = 0
        while not wire.paused and sent < 10 * QUEUE_DEPTH:
            proto.data_received(text(f"m{sent}"))
            sent += 1
        assert (sent, len(proto._messages)) == (QUEUE_DEPTH, QUEUE_DEPTH)
        for n in range(QUEUE_DEPTH):
            assert wire.paused
            assert await socket.receive() == f"m{n}"
        assert not wire.paused
    assert wire.changes == ["pause", "resume"] * 2
    app.done.set()


async def test_a_large_message_still_pauses_at_once_and_the_size_limit_holds() -> None:
    proto, wire, socket, app = await direct(max_message=LARGE_MESSAGE)
    proto.data_received(text("x" * LARGE_MESSAGE))
    assert wire.paused
    assert await socket.receive() == "x" * LARGE_MESSAGE
    assert not wire.paused
    proto.data_received(text("é" * LARGE_MESSAGE))  # 2 bytes a character: over the limit
    with pytest.raises(MessageTooBig):
        await socket.receive()
    app.done.set()


async def test_invalid_utf8_is_a_1007_close() -> None:
    _proto, wire, socket, app = await direct()
    _proto.data_received(masked(Opcode.TEXT, b"\xff\xfe"))
    with pytest.raises(ClientGone) as gone:
        await socket.receive()
    assert gone.value.code == 1007
    assert wire.closing
    app.done.set()


async def test_a_client_close_reaches_the_session_with_its_code_and_reason() -> None:
    proto, _, socket, app = await direct()
    proto.data_received(text("last"))
    proto.data_received(
        Frame(Opcode.CLOSE, Close(4001, "bye").serialize()).serialize(mask=True, extensions=[])
    )
    assert await socket.receive() == "last"
    with pytest.raises(ClientGone) as gone:
        await socket.receive()
    assert (gone.value.code, gone.value.reason, socket.closed) == (4001, "bye", True)
    app.done.set()


async def test_sends_are_written_at_once_and_wait_while_the_socket_is_not_writable() -> None:
    proto, wire, socket, app = await direct()
    await socket.send("one")
    await socket.send(b"two")
    assert [f.data for f in wire.frames()] == [b"one", b"two"]
    proto.pause_writing()
    async with anyio.create_task_group() as tg:
        tg.start_soon(socket.send, "three")
        await settle()
        assert len(wire.frames()) == 2  # send() waits for the transport
        proto.resume_writing()
    assert [f.data for f in wire.frames()] == [b"one", b"two", b"three"]
    assert socket.sent == 3
    app.done.set()


async def test_a_send_to_a_client_gone_raises_client_gone_and_a_close_is_sent_once() -> None:
    _proto, wire, socket, app = await direct()
    await socket.close(1011, "failed")
    written = len(wire.out)
    await socket.send("after the close")  # a no-op
    assert len(wire.out) == written
    proto2, _, socket2, app2 = await direct()
    proto2.connection_lost(None)
    with pytest.raises(ClientGone):
        await socket2.send("gone")
    app.done.set()
    app2.done.set()


async def test_the_disconnect_still_comes_as_a_dict_and_ends_the_session() -> None:
    proto, _, socket, app = await direct()
    proto.connection_lost(None)
    with pytest.raises(ClientGone, match="client closed the session"):
        await socket.receive()
    assert not socket.send_now("gone")
    app.done.set()
