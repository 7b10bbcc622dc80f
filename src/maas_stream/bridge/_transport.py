"""A lean HTTP/1.1 transport for the bridge's own upstream client (httpx2's API, fewer layers).

The bridge's cost per event was mostly the upstream read: httpcore's connection pool and h11's
pure-Python parser, one event and six nested async generators per HTTP chunk. This transport
keeps httpx2's client (its requests, responses, content decoding and errors: everything the
readers and checks rely on) and replaces only what sits under it: a keep-alive pool of
connections per host (on asyncio a protocol that stays registered for reading, ``_aiosock``;
on trio anyio's byte streams), and httptools' parser (llhttp, in C: what uvicorn's ``standard``
extra parses with) fed each socket read whole. A body yields everything one read brought (a
chunked body is de-chunked per read, so the frames of a burst reach the converter as one piece).

Scope: plain HTTP/1.1 over TCP or TLS, no proxy (``new_client`` keeps httpx2's own transport
when the environment names a proxy, or when httptools is not installed: ``_http1.AVAILABLE``).
Errors are httpx2's own classes (``ConnectError``, ``ConnectTimeout``, ``PoolTimeout``,
``WriteError``, ``ReadError``, ``RemoteProtocolError``), with httpcore's messages for the faults
both can report. Memory grows with the bytes received, never with a size the answer names: a
head beyond ``_http1.MAX_HEAD`` bytes, or ``_http1.MAX_LINE`` bytes of chunk framing without any
data, is refused.

It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import time
from typing import Any

import anyio
import anyio.abc
import httpx2

from ._aiosock import AioConnection, connect
from ._body import Body, receive
from ._http1 import MAX_HEAD, Answer

__all__ = ["LeanPoster", "LeanTransport", "Prepared"]

_READ = 65536
"""Bytes asked of the socket per read."""


class _Connection:
    """One open connection to a host, on anyio's stream (trio's; asyncio has :class:`AioConnection`)."""

    __slots__ = ("expires", "key", "sock", "stream")

    def __init__(self, stream: anyio.abc.ByteStream, key: tuple[bytes, bytes, int]) -> None:
        self.stream = stream
        self.key = key
        self.expires = 0.0
        self.sock: Any = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    def reusable(self, now: float) -> bool:
        """Still fresh, and nothing waits on it (an idle connection that reads is closed or broken)."""
        if now >= self.expires:
            return False
        if self.sock is None:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    async def receive(self, seconds: float | None) -> bytes:
        """One socket read (``b""`` at the end of the stream); raises as :meth:`AioConnection.receive`."""
        try:
            if seconds is None:
                return await self.stream.receive(_READ)
            with anyio.fail_after(seconds):
                return await self.stream.receive(_READ)
        except anyio.EndOfStream:
            return b""

    async def send(self, data: bytes, seconds: float | None) -> None:
        with anyio.fail_after(seconds):
            await self.stream.send(data)

    async def aclose(self) -> None:
        await anyio.aclose_forcefully(self.stream)


_Conn = _Connection | AioConnection


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with a keep-alive pool, for ``httpx2.AsyncClient(transport=...)``.

    Needs httptools (``_http1.AVAILABLE``).

    Args:
        max_connections: Requests in flight at once (one more waits for the pool timeout).
        max_keepalive: Idle connections kept per transport.
        keepalive_expiry: Seconds an idle connection is kept for reuse.
        ssl_context: The TLS settings for ``https`` (httpx2's default context when ``None``).
    """

    def __init__(
        self,
        *,
        max_connections: int,
        max_keepalive: int,
        keepalive_expiry: float,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.max_connections = max_connections
        """Requests in flight at once."""
        self._slots = anyio.Semaphore(max_connections)
        self._max_keepalive = max_keepalive
        self._expiry = keepalive_expiry
        self._ssl = ssl_context
        self._idle: dict[tuple[bytes, bytes, int], list[_Conn]] = {}
        self._idle_count = 0
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` on a pooled (or new) connection; the response's body streams from it.

        Raises:
            httpx2.PoolTimeout: No request slot within the pool timeout.
            httpx2.ConnectTimeout: Connecting took longer than the connect timeout.
            httpx2.ConnectError: The connection could not be made.
            httpx2.WriteTimeout: Sending took longer than the write timeout.
            httpx2.WriteError: The connection broke while sending.
            httpx2.ReadError: The connection broke while reading the answer.
            httpx2.RemoteProtocolError: The answer is not valid HTTP/1.1.
        """
        key = _key(request.url)
        head = _head(request, skip=())
        chunked = _has_token(request.headers, "transfer-encoding", "chunked")
        parts = [head, b"\r\n"]
        async for part in request.stream:  # type: ignore[union-attr]
            if chunked and part:
                parts += (f"{len(part):x}\r\n".encode(), part, b"\r\n")
            elif part:
                parts.append(part)
        if chunked:
            parts.append(b"0\r\n\r\n")
        close = _has_token(request.headers, "connection", "close")
        timeouts = request.extensions.get("timeout", {})
        return await self._exchange(key, b"".join(parts), timeouts, request, close=close)

    def prepare(self, request: httpx2.Request) -> Prepared:
        """The head of ``request`` (built by ``httpx2.AsyncClient.build_request``), for :meth:`send_prepared`.

        Its body, ``content-length`` and ``transfer-encoding`` are left out (each send has its
        own), and so is ``cookie``: a prepared head carries no cookies.

        Raises:
            httpx2.UnsupportedProtocol: Neither http nor https.
        """
        skip = (b"content-length", b"transfer-encoding", b"cookie")
        close = _has_token(request.headers, "connection", "close")
        timeouts = request.extensions.get("timeout", {})
        return Prepared(_key(request.url), _head(request, skip=skip), timeouts, request, close)

    async def send_prepared(self, prepared: Prepared, content: bytes) -> httpx2.Response:
        """Send a prepared head with ``content`` as its body.

        What :meth:`handle_async_request` does, without building the request again (httpx2's
        ``build_request`` costs more than the send).

        Raises:
            httpx2.PoolTimeout: As :meth:`handle_async_request`; so do the others.
        """
        data = b"%sContent-Length: %d\r\n\r\n%s" % (prepared.head, len(content), content)
        return await self._exchange(
            prepared.key, data, prepared.timeouts, prepared.request, close=prepared.close
        )

    async def _exchange(
        self,
        key: tuple[bytes, bytes, int],
        data: bytes,
        timeouts: dict[str, float | None],
        request: httpx2.Request,
        *,
        close: bool,
    ) -> httpx2.Response:
        """Send ``data`` (a whole request) on a pooled (or new) connection, read the answer's head."""
        try:
            self._slots.acquire_nowait()  # the usual case: no cancel scope needed
        except anyio.WouldBlock:
            try:
                with anyio.fail_after(timeouts.get("pool")):
                    await self._slots.acquire()
            except TimeoutError:
                raise httpx2.PoolTimeout("no free connection slot within the pool timeout") from None
        conn: _Conn | None = None
        answer = Answer(head_only=request.method == "HEAD")
        try:
            conn = await self._take(key) or await self._connect(key, timeouts.get("connect"))
            aio = conn if type(conn) is AioConnection else None
            if aio is not None:
                aio.first = True  # its answer's first bytes wake it ahead of flowing streams (_ahead)
            try:
                await _write(conn, data, timeouts.get("write"))
                await _read_head(conn, answer, timeouts.get("read"))
            finally:
                if aio is not None:
                    aio.first = False  # (no answer came: cancelled, timed out, broken)
        except BaseException:
            self._slots.release()
            if conn is not None:
                await conn.aclose()
            raise
        if close:
            answer.keep_alive = False
        body = Body(self, conn, answer, timeouts.get("read"))
        return httpx2.Response(
            answer.status,
            headers=answer.headers,
            stream=body,
            request=request,
            extensions={"http_version": answer.version, "reason_phrase": answer.reason},
        )

    async def _take(self, key: tuple[bytes, bytes, int]) -> _Conn | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            if conn.reusable(now):
                return conn
            await conn.aclose()
        return None

    async def _connect(self, key: tuple[bytes, bytes, int], seconds: float | None) -> _Conn:
        scheme, raw_host, port = key
        host = raw_host.decode("ascii")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if scheme == b"https" and self._ssl is None:
            self._ssl = httpx2.create_ssl_context()
        context = self._ssl if scheme == b"https" else None
        try:
            with anyio.fail_after(seconds):
                if _on_asyncio():
                    return await connect(host, port, key, context)
                if context is not None:
                    stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                        host, port, ssl_context=context, tls_standard_compatible=False
                    )
                else:
                    stream = await anyio.connect_tcp(host, port)
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"connecting to {host}:{port} took longer than {seconds}s") from None
        except (OSError, ssl.SSLError, anyio.BrokenResourceError) as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return _Connection(stream, key)

    async def release(self, conn: _Conn, reuse: bool) -> None:
        """A body was read to its end: keep its connection for the next request (``reuse``), or close it."""
        self._slots.release()
        if reuse and not self._closed and self._idle_count < self._max_keepalive:
            conn.expires = time.monotonic() + self._expiry
            self._idle.setdefault(conn.key, []).append(conn)
            self._idle_count += 1
        else:
            await conn.aclose()

    async def discard(self, conn: _Conn) -> None:
        """A body was not read to its end: close its connection."""
        self._slots.release()
        await conn.aclose()

    async def aclose(self) -> None:
        """Close every idle connection (those in use close with their responses)."""
        self._closed = True
        idle, self._idle, self._idle_count = self._idle, {}, 0
        for conns in idle.values():
            for conn in conns:
                await conn.aclose()


class Prepared:
    """A request head built once (see :meth:`LeanTransport.prepare`): where it goes, its bytes."""

    __slots__ = ("close", "head", "key", "request", "timeouts")

    def __init__(
        self,
        key: tuple[bytes, bytes, int],
        head: bytes,
        timeouts: dict[str, float | None],
        request: httpx2.Request,
        close: bool,
    ) -> None:
        self.key = key
        self.head = head
        """The request line and headers, without the blank line that ends them."""
        self.timeouts = timeouts
        self.request = request
        """The request it was built from (each response's ``request``)."""
        self.close = close


_PREPARED = 64
"""Prepared heads a :class:`LeanPoster` keeps (one per upstream URL and headers; bounded)."""


class LeanPoster:
    """The ``stream`` of an httpx2 client on a :class:`LeanTransport`, for the bridge's upstream POSTs.

    ``client.build_request`` (URL parsing, header merging: several times the cost of the send)
    runs once per URL and headers; each request then sends the prepared head with its own body.
    No cookie goes with a prepared head, and none from an answer is kept: each request is its
    own (the bridge serves many users; one user's upstream cookies must never reach another).
    Redirects are not followed (the bridge's own client follows none either).
    """

    __slots__ = ("_client", "_prepared", "_transport")

    def __init__(self, client: httpx2.AsyncClient, transport: LeanTransport) -> None:
        self._client = client
        self._transport = transport
        self._prepared: dict[tuple[str, str, tuple[tuple[str, str], ...]], Prepared] = {}

    def stream(self, method: str, url: str, *, headers: dict[str, str], content: bytes) -> _Sent:
        """Send ``content`` to ``url``; the context manager gives the response and closes it."""
        key = (method, url, tuple(headers.items()))
        prepared = self._prepared.get(key)
        if prepared is None:
            if len(self._prepared) >= _PREPARED:
                self._prepared.clear()
            request = self._client.build_request(method, url, headers=headers)
            prepared = self._prepared[key] = self._transport.prepare(request)
        return _Sent(self._transport, prepared, content)


class _Sent:
    """One prepared request sent (``async with``): its response, closed on the way out."""

    __slots__ = ("_content", "_prepared", "_response", "_transport")

    def __init__(self, transport: LeanTransport, prepared: Prepared, content: bytes) -> None:
        self._transport = transport
        self._prepared = prepared
        self._content: bytes | None = content
        self._response: httpx2.Response | None = None

    async def __aenter__(self) -> httpx2.Response:
        content, self._content = self._content, None  # sent once: not held while the stream lasts
        assert content is not None
        self._response = await self._transport.send_prepared(self._prepared, content)
        return self._response

    async def __aexit__(self, *exc: object) -> None:
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()


def _key(url: httpx2.URL) -> tuple[bytes, bytes, int]:
    """Where a request goes: its scheme, host and port.

    Raises:
        httpx2.UnsupportedProtocol: Neither http nor https.
    """
    scheme = url.raw_scheme
    if scheme not in (b"http", b"https"):
        raise httpx2.UnsupportedProtocol(
            f"the bridge's upstream transport speaks http and https, not {scheme!r}"
        )
    return scheme, url.raw_host, url.port or (443 if scheme == b"https" else 80)


def _head(request: httpx2.Request, *, skip: tuple[bytes, ...]) -> bytes:
    """The request line and headers (but those in ``skip``), without the blank line that ends them."""
    head = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    headers = request.headers.raw
    if not any(k.lower() == b"host" for k, _ in headers):  # httpx2 always sets it; a safety net
        head += (b"Host: ", request.url.netloc, b"\r\n")
    for name, value in headers:
        if name.lower() not in skip:
            head += (name, b": ", value, b"\r\n")
    return b"".join(head)


async def _write(conn: _Conn, data: bytes, seconds: float | None) -> None:
    try:
        await conn.send(data, seconds)
    except TimeoutError:
        raise httpx2.WriteTimeout(f"sending the request took longer than {seconds}s") from None
    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
        raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc


async def _read_head(conn: _Conn, answer: Answer, seconds: float | None) -> None:
    """Read until the final (non-1xx) answer's head is parsed (body bytes read with it are kept).

    Raises:
        httpx2.RemoteProtocolError: No answer, a head too large or not valid HTTP/1.1.
    """
    received = 0
    while not answer.final:
        data = await receive(conn, seconds)
        if not data:
            raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
        answer.feed(data)
        received += len(data)
        if received > MAX_HEAD and not answer.final:
            raise httpx2.RemoteProtocolError("the response head is too large")
    if answer.head_only and answer.pieces:  # body bytes after a HEAD answer's head
        answer.pieces.clear()
        answer.extra = True


def _has_token(headers: httpx2.Headers, name: str, token: str) -> bool:
    return any(t.strip().lower() == token for t in headers.get_list(name, split_commas=True))


def _on_asyncio() -> bool:
    """Whether an asyncio loop runs this task (uvloop or not): trio keeps anyio's stream."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
