"""The bridge's upstream websocket client (``_ws_client``) against real servers on 127.0.0.1.

A ``websockets`` server plays a live upstream; a raw asyncio server plays one that answers the
handshake and then nothing (no pongs) or drops the connection. Errors are read as the session
code reads them (``upstream_end``); the keepalive's clock is driven by calling its timer by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import Protocol
from websockets.uri import parse_uri
from websockets.utils import accept_key

from maas_stream.bridge import _ws_client
from maas_stream.bridge._session_wire import upstream_end
from maas_stream.bridge._ws_client import MAX_QUEUE, PING_INTERVAL, UpstreamConnection, open_upstream
from maas_stream.io._timers import Timer
from tests.bridge.realtime_fakes import tls_files

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

Handler = Callable[[ServerConnection], Awaitable[None]]


@contextlib.asynccontextmanager
async def upstream(handler: Handler, **options: Any) -> AsyncIterator[tuple[int, list[Request]]]:
    """A ``websockets`` server running ``handler``; yields its port and the handshake requests it saw."""
    seen: list[Request] = []

    def record(conn: ServerConnection, request: Request) -> Any:
        seen.append(request)
        return None

    async with serve(handler, "127.0.0.1", 0, process_request=record, compression=None, **options) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield port, seen


async def opened(port: int, **options: Any) -> UpstreamConnection:
    kwargs: dict[str, Any] = {"headers": {}, "subprotocols": None, "max_size": 2**20, "open_timeout": 5.0}
    kwargs.update(options)
    return await open_upstream(parse_uri(f"ws://127.0.0.1:{port}/v1/realtime?model=m"), **kwargs)


async def echo(ws: ServerConnection) -> None:
    async for message in ws:
        await ws.send(message)


async def test_the_handshake_offers_the_subprotocol_and_sends_the_headers() -> None:
    async with upstream(echo, subprotocols=["realtime"]) as (port, seen):
        conn = await opened(
            port, headers={"authorization": "Bearer sk-1"}, subprotocols=["other", "realtime"]
        )
        async with conn:
            assert conn.subprotocol == "realtime"
            # The response is not kept: the handshake's parser was swapped for a frame parser.
            assert conn._proto.parser.gi_code is Protocol.parse.__code__  # type: ignore[attr-defined]
            await conn.send("still parsing")
            assert await conn.recv() == "still parsing"
        (request,) = seen
        assert request.path == "/v1/realtime?model=m"
        assert request.headers["authorization"] == "Bearer sk-1"
        assert request.headers["sec-websocket-protocol"] == "other, realtime"
        assert "user-agent" not in request.headers  # none sent (as the bridge asked websockets before)
        assert "sec-websocket-extensions" not in request.headers  # no compression offered


async def test_a_refused_handshake_is_invalid_status_with_the_response() -> None:
    def refuse(conn: ServerConnection, request: Request) -> Response:
        return Response(403, "Forbidden", Headers({"content-length": "6"}), b"nope!\n")

    async with serve(echo, "127.0.0.1", 0, process_request=refuse) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        with pytest.raises(InvalidStatus) as caught:
            await opened(port)
    assert caught.value.response.status_code == 403
    assert caught.value.response.body == b"nope!\n"


async def test_no_handshake_within_the_open_timeout_is_a_timeout() -> None:
    done = anyio.Event()

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()  # the request, never answered, until the client gives up
        finally:
            writer.close()
            done.set()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    async with server:
        with pytest.raises(TimeoutError):
            await opened(server.sockets[0].getsockname()[1], open_timeout=0.05)
        await done.wait()


async def test_messages_each_way_text_binary_and_fragmented() -> None:
    async def talk(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)
            if message == "fragments":
                await ws.send(["frag", "ments ", "joined"])

    async with upstream(talk) as (port, _):
        async with await opened(port) as conn:
            await conn.send("hello")
            assert await conn.recv() == "hello"
            await conn.send(b"\x00\x01")
            assert await conn.recv() == b"\x00\x01"
            await conn.send("fragments")
            assert await conn.recv() == "fragments"
            assert await conn.recv() == "fragments joined"


async def test_take_and_arrival_read_as_recv_does() -> None:
    async with upstream(close_with) as (port, _):
        conn = await opened(port)
        assert conn.take() is None  # nothing read yet
        arrival = conn.arrival()
        assert conn.arrival() is arrival  # one future for the next message
        await conn.send("go")
        await arrival  # the close came (close_with answers "go" with a close)
        with pytest.raises(ConnectionClosed) as caught:
            conn.take()
    assert upstream_end(caught.value).code == 4000


async def test_a_readers_cancellation_is_not_another_readers() -> None:
    # Two recv() calls wait at once; cancelling one leaves the other waiting for the message.
    async with upstream(echo) as (port, _):
        conn = await opened(port)
        first = asyncio.ensure_future(conn.recv())
        second = asyncio.ensure_future(conn.recv())
        await anyio.lowlevel.checkpoint()
        first.cancel()
        await anyio.sleep(0.01)
        assert first.cancelled()
        assert not second.done()
        await conn.send("after")
        assert await asyncio.wait_for(second, 5) == "after"
        await conn.close()


async def test_wss_goes_through_tls_to_the_host_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("cryptography")
    cert, key, trusting = tls_files(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    monkeypatch.setattr(_ws_client, "_CONTEXT", [trusting])  # the system's trust, plus the test's certificate
    async with serve(echo, "127.0.0.1", 0, ssl=server_side) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        uri = parse_uri(f"wss://127.0.0.1:{port}/v1/realtime")
        conn = await open_upstream(uri, headers={}, subprotocols=None, max_size=None, open_timeout=5.0)
        async with conn:
            await conn.send("over tls")
            assert await conn.recv() == "over tls"
        monkeypatch.setattr(_ws_client, "_CONTEXT", [ssl.create_default_context()])  # not trusted: refused
        with pytest.raises(ssl.SSLCertVerificationError):
            await open_upstream(uri, headers={}, subprotocols=None, max_size=None, open_timeout=5.0)


async def close_with(ws: ServerConnection) -> None:
    await ws.recv()
    await ws.close(4000, "the model is overloaded")


async def test_a_server_close_is_seen_with_its_code_and_reason() -> None:
    async with upstream(close_with) as (port, _):
        conn = await opened(port)
        await conn.send("go")
        with pytest.raises(ConnectionClosed) as caught:
            await conn.recv()
        with pytest.raises(ConnectionClosed):  # and so is a send once closed
            await conn.send("more")
        await conn.close()  # a no-op once closed
    end = upstream_end(caught.value)
    assert (end.code, end.reason, end.failed) == (4000, "the model is overloaded", True)
    assert caught.value.sent is not None  # the close handshake answered
    assert caught.value.sent.code == 4000


async def test_our_close_is_a_close_handshake_the_server_sees() -> None:
    codes: list[tuple[int | None, str | None]] = []

    async def wait_close(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.recv()
        codes.append((ws.close_code, ws.close_reason))

    async with upstream(wait_close) as (port, _):
        conn = await opened(port)
        await conn.close(1001, "the client left")
        with pytest.raises(ConnectionClosed) as caught:
            await conn.recv()
    assert codes == [(1001, "the client left")]
    assert upstream_end(caught.value).code == 1001


async def test_an_upstream_dropping_the_connection_is_a_cut() -> None:
    async def drop(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send("partial")
        ws.transport.abort()

    async with upstream(drop) as (port, _):
        conn = await opened(port)
        await conn.send("go")
        assert await conn.recv() == "partial"  # what came before the cut is still read
        with pytest.raises(ConnectionClosed) as caught:
            await conn.recv()
        await conn.close()
    assert caught.value.rcvd is None
    assert upstream_end(caught.value).code == 1006


async def test_a_message_over_the_max_size_fails_the_connection_with_1009() -> None:
    async def big(ws: ServerConnection) -> None:
        await ws.send("x" * 2000)
        with contextlib.suppress(ConnectionClosed):
            await ws.recv()

    async with upstream(big) as (port, _):
        conn = await opened(port, max_size=1000)
        with pytest.raises(ConnectionClosedError) as caught:
            await conn.recv()
        await conn.close()
    assert caught.value.sent is not None
    assert caught.value.sent.code == 1009


async def test_a_ping_is_answered_and_the_keepalive_pings() -> None:
    pongs: list[float] = []

    async def ping(ws: ServerConnection) -> None:
        pongs.append(await (await ws.ping(b"are you there")))
        await echo(ws)

    async with upstream(ping) as (port, _):
        async with await opened(port) as conn:
            await conn.send("after the ping")  # echoed once the server's ping was answered
            assert await conn.recv() == "after the ping"
            assert len(pongs) == 1
            conn.keepalive()  # the timer fires: a ping goes out
            assert conn._ping is not None
            await conn.send("after our ping")  # the pong comes back before the echo
            assert await conn.recv() == "after our ping"
            assert conn._ping is None
            conn.keepalive()  # the next tick: the pong came, so it pings again, no failure
            await conn.send("still open")
            assert await conn.recv() == "still open"


async def accept_handshake(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer a websocket handshake by hand (a raw server: it then does what the test needs)."""
    head = await reader.readuntil(b"\r\n\r\n")
    key = next(
        line.split(b":", 1)[1].strip().decode()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key")
    )
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept_key(key).encode() + b"\r\n\r\n"
    )


async def test_the_keepalive_closes_an_upstream_that_stopped_answering() -> None:
    frames: list[int] = []

    async def dead(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept_handshake(reader, writer)
        data = b""
        while 0x8 not in frames and (more := await reader.read(65536)):  # no pong, ever
            data += more
            while len(data) >= 2 and len(data) >= 6 + (data[1] & 0x7F):  # small masked frames
                frames.append(data[0] & 0x0F)
                data = data[6 + (data[1] & 0x7F) :]
        writer.close()  # the close frame came: the connection ends

    server = await asyncio.start_server(dead, "127.0.0.1", 0)
    async with server:
        conn = await opened(server.sockets[0].getsockname()[1])
        conn.keepalive()  # a ping ...
        conn.keepalive()  # ... and no pong by the next tick
        with pytest.raises(ConnectionClosedError) as caught:
            await conn.recv()
    assert frames == [0x9, 0x8]  # a ping, then the close
    assert caught.value.sent is not None
    assert (caught.value.sent.code, caught.value.sent.reason) == (1011, "keepalive ping timeout")
    assert upstream_end(caught.value).code == 1006  # no close frame came back: the session says "lost"


async def test_invalid_utf8_text_fails_the_connection_with_1007() -> None:
    # The sans-I/O protocol does not check a text frame's UTF-8: the connection does (as
    # websockets' own client), after delivering the messages before it.
    frames: list[int] = []

    async def raw(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept_handshake(reader, writer)
        writer.write(Frame(Opcode.TEXT, b"fine").serialize(mask=False, extensions=[]))
        writer.write(Frame(Opcode.TEXT, b"\xff\xfe").serialize(mask=False, extensions=[]))
        data = await reader.read(65536)  # the client's close frame (masked)
        frames.append(data[0] & 0x0F)
        frames.append(int.from_bytes(bytes(a ^ b for a, b in zip(data[6:8], data[2:4], strict=True)), "big"))
        writer.close()

    server = await asyncio.start_server(raw, "127.0.0.1", 0)
    async with server:
        conn = await opened(server.sockets[0].getsockname()[1])
        assert await conn.recv() == "fine"
        with pytest.raises(ConnectionClosedError) as caught:
            await conn.recv()
    assert frames == [0x8, 1007]
    assert caught.value.sent is not None
    assert caught.value.sent.code == 1007


async def test_the_keepalive_and_close_timers_end_with_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Both are timers of the bridge's heap (_timers), not loop handles; a close the upstream never
    # answers is aborted when the close timer fires, and neither timer outlives the connection.
    monkeypatch.setattr(_ws_client, "CLOSE_TIMEOUT", 0.02)
    loop = asyncio.get_running_loop()

    async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept_handshake(reader, writer)
        while await reader.read(65536):  # the close frame too: never answered
            pass
        writer.close()

    server = await asyncio.start_server(deaf, "127.0.0.1", 0)
    async with server:
        conn = await opened(server.sockets[0].getsockname()[1])
        keepalive = conn._timer
        assert isinstance(keepalive, Timer)
        assert keepalive.when - loop.time() == pytest.approx(PING_INTERVAL, abs=0.5)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(conn.close)
                await anyio.lowlevel.checkpoint()  # the close frame sent, its answer awaited
                closer = conn._closer
                assert isinstance(closer, Timer)
                assert closer.when - loop.time() == pytest.approx(0.02, abs=0.01)
    assert (conn._timer, conn._closer) == (None, None)
    assert keepalive.cancelled()
    assert closer is not None
    assert closer.cancelled()  # (run: it aborted the connection)
    assert isinstance(conn._error, TimeoutError)
    with pytest.raises(ConnectionClosedError):
        await conn.recv()


async def test_a_slow_reader_pauses_reading_the_upstream() -> None:
    count = MAX_QUEUE * 4

    async def flood(ws: ServerConnection) -> None:
        for i in range(count):
            await ws.send(f"m{i}")
        await echo(ws)

    async with upstream(flood) as (port, _):
        async with await opened(port) as conn:
            paused = anyio.Event()
            transport: Any = conn._transport
            pause = transport.pause_reading

            def pausing() -> None:
                pause()
                paused.set()

            transport.pause_reading = pausing
            with anyio.fail_after(5):
                if not conn._paused:  # (paused already when the flood came with the handshake's answer)
                    await paused.wait()  # nobody reads: the queue fills, then the socket is not read
            assert conn._paused
            assert len(conn._messages) >= MAX_QUEUE
            got = [await conn.recv() for _ in range(count)]
            assert got == [f"m{i}" for i in range(count)]
            assert not conn._paused
            await conn.send("done")
            assert await conn.recv() == "done"


def test_it_runs_on_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def scenario() -> tuple[str, int | None]:
        async with upstream(close_with) as (port, _):
            conn = await opened(port)
            await conn.send("go")
            try:
                await conn.recv()
            except ConnectionClosed as exc:
                return "closed", upstream_end(exc).code
            return "open", 0

    assert uvloop.run(scenario()) == ("closed", 4000)


def test_the_client_keeps_websockets_defaults() -> None:
    assert (_ws_client.PING_INTERVAL, _ws_client.PING_TIMEOUT, _ws_client.CLOSE_TIMEOUT) == (20.0, 20.0, 10.0)
    assert _ws_client.MAX_QUEUE == 16
