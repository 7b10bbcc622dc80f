"""The bridge's own session on its websocket protocol: messages taken and sent without ASGI dicts.

:class:`~maas_stream.bridge._ws.ClientSocket` handed the protocol's own ``receive`` and ``send``
takes the direct path (``_ws_server``). These drive it by hand, as ``test_ws_server`` does the
ASGI path: the same backpressure (a flooding client is paused at the depth, a large message at
once), the same limits, and uvicorn's own handling of what the direct path leaves to it (invalid
UTF-8, closes, a send while the socket is not writable or gone).
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from websockets.frames import Close, Frame, Opcode

from maas_stream.bridge._ws import ClientGone, ClientSocket, MessageTooBig
from maas_stream.bridge._ws_server import LARGE_MESSAGE, QUEUE_DEPTH, BridgeWebSocketProtocol

from .test_ws_server import FakeTransport, frame, opened

pytestmark = pytest.mark.anyio


async def direct(max_message: int = 1 << 20) -> tuple[Any, FakeTransport, ClientSocket, anyio.Event]:
    done = anyio.Event()
    proto, transport = await opened(BridgeWebSocketProtocol, done)
    socket = ClientSocket(proto.scope, proto.receive, proto.send, max_message=max_message)
    assert socket._direct is proto
    assert proto.direct
    socket.accepted = True
    return proto, transport, socket, done


def server_frames(transport: FakeTransport) -> list[bytes]:
    """The payloads of the unmasked frames the protocol wrote after its handshake."""
    out = []
    for chunk in transport.written[1:]:
        assert chunk[1] < 126  # short frames only here
        out.append(chunk[2 : 2 + chunk[1]])
    return out


async def test_only_the_protocols_own_callables_go_direct() -> None:
    done = anyio.Event()
    proto, _ = await opened(BridgeWebSocketProtocol, done)

    async def wrapped() -> Any:
        return await proto.receive()

    socket = ClientSocket(proto.scope, wrapped, proto.send, max_message=100)
    assert (socket._direct, proto.direct) == (None, False)
    proto.data_received(frame("asgi"))
    assert await socket.receive() == "asgi"  # the ASGI dict, read as before
    done.set()


async def test_messages_come_as_sent_text_and_bytes() -> None:
    proto, transport, socket, done = await direct()
    proto.data_received(
        frame("héllo") + Frame(Opcode.BINARY, b"\x00\xff").serialize(mask=True, extensions=[])
    )
    assert proto.inbox.qsize() == 2
    assert [await socket.receive(), await socket.receive(), socket.received] == ["héllo", b"\x00\xff", 2]
    assert (transport.pauses, transport.resumes) == (0, 0)
    done.set()


async def test_a_waiting_receive_gets_the_next_message() -> None:
    proto, _, socket, done = await direct()
    got: list[str | bytes] = []

    async def read() -> None:
        got.append(await socket.receive())

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.lowlevel.checkpoint()
        assert not got
        proto.data_received(frame("late"))
    assert got == ["late"]
    done.set()


async def test_a_flooding_client_is_still_paused_at_the_depth_and_resumed_when_all_are_read() -> None:
    proto, transport, socket, done = await direct()
    for _ in range(2):
        sent = 0
        while not transport.paused and sent < 10 * QUEUE_DEPTH:
            proto.data_received(frame(f"m{sent}"))
            sent += 1
        assert (sent, proto.inbox.qsize()) == (QUEUE_DEPTH, QUEUE_DEPTH)
        for n in range(QUEUE_DEPTH):
            assert transport.paused
            assert await socket.receive() == f"m{n}"
        assert not transport.paused
    assert (transport.pauses, transport.resumes) == (2, 2)
    done.set()


async def test_a_large_message_still_pauses_at_once_and_the_size_limit_holds() -> None:
    proto, transport, socket, done = await direct(max_message=LARGE_MESSAGE)
    proto.data_received(frame("x" * LARGE_MESSAGE))
    assert transport.paused
    assert await socket.receive() == "x" * LARGE_MESSAGE
    assert not transport.paused
    proto.data_received(frame("é" * LARGE_MESSAGE))  # 2 bytes a character: over the limit
    with pytest.raises(MessageTooBig):
        await socket.receive()
    done.set()


async def test_invalid_utf8_goes_uvicorns_way_a_1007_close() -> None:
    proto, transport, socket, done = await direct()
    proto.data_received(Frame(Opcode.TEXT, b"\xff\xfe").serialize(mask=True, extensions=[]))
    with pytest.raises(ClientGone) as gone:
        await socket.receive()
    assert gone.value.code == 1007
    assert transport.closing
    done.set()


async def test_a_client_close_reaches_the_session_with_its_code_and_reason() -> None:
    proto, _, socket, done = await direct()
    proto.data_received(frame("last"))
    close = Frame(Opcode.CLOSE, Close(4001, "bye").serialize())
    proto.data_received(close.serialize(mask=True, extensions=[]))
    assert await socket.receive() == "last"
    with pytest.raises(ClientGone) as gone:
        await socket.receive()
    assert (gone.value.code, gone.value.reason, socket.closed) == (4001, "bye", True)
    done.set()


async def test_sends_are_written_at_once_and_wait_while_the_socket_is_not_writable() -> None:
    proto, transport, socket, done = await direct()
    await socket.send("one")
    await socket.send(b"two")
    assert server_frames(transport) == [b"one", b"two"]
    proto.pause_writing()
    async with anyio.create_task_group() as tg:
        tg.start_soon(socket.send, "three")
        await anyio.lowlevel.checkpoint()
        assert len(server_frames(transport)) == 2  # uvicorn's send() waits for the transport
        proto.resume_writing()
    assert server_frames(transport) == [b"one", b"two", b"three"]
    assert socket.sent == 3
    done.set()


async def test_a_send_to_a_client_gone_raises_client_gone_and_a_close_is_sent_once() -> None:
    _proto, transport, socket, done = await direct()
    await socket.close(1011, "failed")
    written = len(transport.written)
    await socket.send("after the close")  # a no-op
    assert len(transport.written) == written
    proto2, _, socket2, done2 = await direct()
    proto2.connection_lost(None)
    with pytest.raises(ClientGone):
        await socket2.send("gone")
    done.set()
    done2.set()


async def test_the_handshake_is_let_go_once_accepted() -> None:
    # uvicorn keeps the client's handshake request and its answer for the connection's life;
    # it reads neither once accepted (an idle session keeps ~3.5 KiB less).
    proto, _, socket, done = await direct()
    assert (proto.request, proto.response) == (None, None)
    proto.data_received(frame("still served"))
    assert await socket.receive() == "still served"
    await socket.close(1000)
    done.set()
