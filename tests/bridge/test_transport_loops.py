"""The lean transport's connection on each loop: asyncio's protocol (plain and uvloop), trio's anyio stream.

On asyncio the connection reads its socket through a protocol that stays registered
(``_aiosock``): a slow reader must still pause the upstream's read (backpressure), a reset or a
cut upstream must reach the reader as httpx2's errors, a cancelled read must close the socket,
and a read timeout must still be one. The transport's main tests (``test_transport``) run on
plain asyncio; a few of them run here again on uvloop and trio.
"""

from __future__ import annotations

import socket
import ssl
import struct
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx2
import pytest
from anyio.streams.tls import TLSListener

from maas_stream.bridge import Timeouts
from maas_stream.bridge._aiosock import HIGH_WATER, AioConnection
from maas_stream.bridge._transport import LeanTransport
from maas_stream.bridge._upstream import new_client
from tests.bridge.realtime_fakes import tls_files
from tests.bridge.test_transport import (
    BODY,
    answer,
    raw_server,
    read_request,
    test_a_body_cut_by_a_close_is_a_remote_protocol_error,  # noqa: F401 - run again on each loop
    test_a_connection_the_server_closed_while_idle_is_not_reused,  # noqa: F401
    test_the_body_is_the_framed_bytes_whatever_the_cut,  # noqa: F401
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

pytestmark = pytest.mark.anyio

LOOPS = [
    pytest.param(("asyncio", {}), id="asyncio"),
    pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
    pytest.param(("trio", {}), id="trio"),
]


@pytest.fixture(params=LOOPS)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    backend, _ = request.param
    pytest.importorskip("uvloop" if request.param[1] else backend)
    return request.param


def on_asyncio(backend: Any) -> bool:
    return bool(backend[0] == "asyncio")


def client(**timeouts: float) -> httpx2.AsyncClient:
    found: httpx2.AsyncClient = new_client(Timeouts(connect=2.0, **timeouts), 10)
    assert isinstance(found._transport, LeanTransport)
    return found


def connection(c: httpx2.AsyncClient) -> Any:
    """The one connection ``c``'s transport keeps idle."""
    transport = c._transport
    assert isinstance(transport, LeanTransport)
    [conns] = transport._idle.values()
    return conns[0]


async def read_into(resp: httpx2.Response, pieces: list[bytes]) -> None:
    async for part in resp.aiter_raw():
        pieces.append(part)


async def test_a_slow_reader_pauses_the_upstream_read(anyio_backend: Any) -> None:
    """While the reader does not read, no more than the high-water mark (and one socket read) waits."""
    if not on_asyncio(anyio_backend):
        pytest.skip("anyio's stream reads only when asked")
    total = 64 * 1024 * 1024
    sent = [0]
    done = anyio.Event()

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % total)
        piece = b"x" * 65536
        while sent[0] < total:
            await stream.send(piece)
            sent[0] += len(piece)
        done.set()
        return True

    async with raw_server(handler) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            parts = resp.aiter_raw()
            got = len(await parts.__anext__())
            conn = resp.stream._stream._conn  # type: ignore[union-attr]
            assert isinstance(conn, AioConnection)
            with anyio.fail_after(10):
                while not conn._paused:  # noqa: ASYNC110 - a flag of the connection, no event
                    await anyio.sleep(0.01)
            await anyio.sleep(0.3)  # time enough to receive megabytes, were reading not paused
            assert conn._size <= HIGH_WATER + 256 * 1024  # one socket read past the mark at most
            assert sent[0] < total  # the server's writes wait on the TCP window
            assert not done.is_set()
            async for part in parts:
                got += len(part)
    assert got == total


async def test_a_reset_upstream_is_a_read_error(anyio_backend: Any) -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        data = answer(BODY, framing="length")
        await stream.send(data[:300])
        sock = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await anyio.sleep(0.05)  # the first bytes are read before the reset
        return False  # closed with SO_LINGER 0: a reset

    async with raw_server(handler) as (url, _), client() as c:
        pieces: list[bytes] = []
        async with c.stream("POST", url, json={}) as resp:
            with pytest.raises((httpx2.ReadError, httpx2.RemoteProtocolError)) as info:
                await read_into(resp, pieces)
    got = b"".join(pieces)
    assert BODY.startswith(got)
    assert len(got) < len(BODY)
    if isinstance(info.value, httpx2.RemoteProtocolError):  # the reset came as an end of stream
        assert "expected" in str(info.value)


async def test_a_cancelled_read_closes_the_socket(anyio_backend: Any) -> None:
    closed = anyio.Event()

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            closed.set()
        return False

    async with raw_server(handler) as (url, connections), client() as c:
        with anyio.move_on_after(0.2) as scope:
            async with c.stream("POST", url, json={}) as resp:
                async for _ in resp.aiter_raw():
                    pass  # the rest never comes: cancelled while waiting
        assert scope.cancelled_caught
        with anyio.fail_after(10):
            await closed.wait()  # the client closed its end
        transport = c._transport
        assert isinstance(transport, LeanTransport)
        assert transport._idle_count == 0
        async with c.stream("POST", url, json={}) as resp:  # the slot was given back
            assert resp.status_code == 200
    assert connections == [1, 1]


async def test_a_silent_upstream_is_a_read_timeout(anyio_backend: Any) -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await anyio.sleep(30)
        return False

    async with raw_server(handler) as (url, _):
        transport = LeanTransport(max_connections=2, max_keepalive=2, keepalive_expiry=4.0)
        async with httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(2.0, read=0.1)) as c:
            async with c.stream("POST", url, json={}) as resp:
                parts = resp.aiter_raw()
                assert await parts.__anext__() == b"hello"
                with pytest.raises(httpx2.ReadTimeout):
                    await parts.__anext__()


async def test_an_idle_connection_that_got_bytes_is_not_reused(anyio_backend: Any) -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(answer(b"data: {}\n\n", framing="length"))
        await anyio.sleep(0.05)
        await stream.send(b"junk")  # after the answer, while the connection is idle
        return True

    async with raw_server(handler) as (url, connections), client() as c:
        resp = await c.post(url, json={})
        assert resp.content == b"data: {}\n\n"
        await anyio.sleep(0.2)  # the junk reaches the idle connection
        assert not connection(c).reusable(0.0)
        resp = await c.post(url, json={})
        assert resp.content == b"data: {}\n\n"
    assert connections == [1, 1]


@asynccontextmanager
async def tls_server(
    tmp_path: Path, serve_conn: Callable[[anyio.abc.ByteStream], Awaitable[None]]
) -> AsyncIterator[tuple[str, httpx2.AsyncClient]]:
    """A TLS server (closing without close_notify) running ``serve_conn``; its URL and a client trusting it."""
    pytest.importorskip("cryptography")
    cert, key, client_context = tls_files(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    listener = TLSListener(tcp, server_context, standard_compatible=False)
    transport = LeanTransport(
        max_connections=4, max_keepalive=4, keepalive_expiry=4.0, ssl_context=client_context
    )
    async with listener, anyio.create_task_group() as tg, httpx2.AsyncClient(transport=transport) as c:
        tg.start_soon(listener.serve, serve_conn)
        yield f"https://127.0.0.1:{port}/v1/x", c
        tg.cancel_scope.cancel()


async def test_https_with_keep_alive(anyio_backend: Any, tmp_path: Path) -> None:
    """TLS to the upstream: the answer is read whole and the connection serves the next request."""
    connections: list[int] = []

    async def serve_conn(stream: anyio.abc.ByteStream) -> None:
        connections.append(0)
        pending = bytearray()
        async with stream:
            while await read_request(stream, pending) is not None:  # type: ignore[arg-type]
                connections[-1] += 1
                await stream.send(answer(BODY))

    async with tls_server(tmp_path, serve_conn) as (url, c):
        for _ in range(2):
            async with c.stream("POST", url, json={}) as resp:
                assert b"".join([p async for p in resp.aiter_bytes()]) == BODY
    assert connections == [2]


async def test_a_tls_body_ended_by_a_close_without_close_notify_is_whole(
    anyio_backend: Any, tmp_path: Path
) -> None:
    """A close-delimited body over TLS whose server closes without a close_notify (anyio's
    ``tls_standard_compatible=False``): the body ends there, as it did on anyio's stream."""

    async def serve_conn(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            await read_request(stream, bytearray())  # type: ignore[arg-type]
            await stream.send(answer(BODY, framing="close"))

    async with tls_server(tmp_path, serve_conn) as (url, c):
        async with c.stream("POST", url, json={}) as resp:
            assert b"".join([p async for p in resp.aiter_bytes()]) == BODY
