"""A tiny HTTP/1.1 server on 127.0.0.1 for IO tests, written on anyio (runs under asyncio and trio).

Each test gives a script ``async def script(conn)`` that answers one request: ``conn.start()``
sends the status line and headers (chunked transfer encoding), ``conn.send()`` one chunk,
``conn.end()`` the last chunk. ``conn.wait_disconnect()`` returns when the client hangs up.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc
from anyio.abc import SocketAttribute


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Conn:
    stream: anyio.abc.SocketStream
    request: Request
    server: Server
    sent: int = 0

    async def start(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        hdrs = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        hdrs.update(headers or {})
        hdrs["transfer-encoding"] = "chunked"
        hdrs["connection"] = "close"
        head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
        await self.stream.send(head.encode())

    async def send(self, data: bytes) -> None:
        if data:
            await self.stream.send(b"%x\r\n%s\r\n" % (len(data), data))
            self.sent += len(data)

    async def end(self) -> None:
        await self.stream.send(b"0\r\n\r\n")

    async def wait_disconnect(self) -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            while True:
                await self.stream.receive()
        self.server.disconnected.set()


Script = Callable[[Conn], Awaitable[None]]


@dataclass
class Server:
    url: str
    requests: list[Request] = field(default_factory=list)
    disconnected: anyio.Event = field(default_factory=anyio.Event)
    errors: list[BaseException] = field(default_factory=list)


async def _read_request(stream: anyio.abc.SocketStream) -> Request:
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += await stream.receive()
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += await stream.receive()
    return Request(method, target, headers, body)


@contextlib.asynccontextmanager
async def serve(script: Script) -> AsyncIterator[Server]:
    """Run the server for the block; every connection is answered by ``script``."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    server = Server(url=f"http://127.0.0.1:{port}")

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                request = await _read_request(stream)
                server.requests.append(request)
                conn = Conn(stream, request, server)
                await script(conn)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, ConnectionError):
                server.disconnected.set()
            except Exception as exc:  # reported to the test, which asserts it is empty
                server.errors.append(exc)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        yield server
        tg.cancel_scope.cancel()


def odd_chunks(data: bytes, sizes: tuple[int, ...] = (1, 7, 13, 64, 3, 101, 2, 250)) -> list[bytes]:
    """``data`` cut into odd sizes (cycling), splitting frames, lines and UTF-8 sequences."""
    out = []
    pos = 0
    i = 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        out.append(data[pos : pos + size])
        pos += size
        i += 1
    return out


def send_recording(data: bytes, *, pause: float = 0.002, status: int = 200) -> Script:
    """A script that sends ``data`` in odd-sized chunks with pauses between them."""

    async def script(conn: Conn) -> None:
        await conn.start(status)
        for chunk in odd_chunks(data):
            await conn.send(chunk)
            await anyio.sleep(pause)
        await conn.end()

    return script
