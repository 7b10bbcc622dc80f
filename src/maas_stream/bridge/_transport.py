"""A lean HTTP/1.1 transport for the bridge's own upstream client (httpx2's API, fewer layers).

The bridge's cost per event was mostly the upstream read: httpcore's connection pool and h11's
pure-Python parser, one event and six nested async generators per HTTP chunk. This transport
keeps httpx2's client (its requests, responses, content decoding and errors: everything the
readers and checks rely on) and replaces only what sits under it: a keep-alive pool of plain
anyio byte streams per host, the response head parsed once, and a body that yields everything
one socket read brought (a chunked body is de-chunked per read, so the frames of a burst reach
the converter as one piece).

Scope: plain HTTP/1.1 over TCP or TLS, no proxy (``new_client`` keeps httpx2's own transport
when the environment names a proxy). Errors are httpx2's own classes (``ConnectError``,
``ConnectTimeout``, ``PoolTimeout``, ``WriteError``, ``ReadError``, ``RemoteProtocolError``),
with httpcore's messages for the faults both can report.

It must not contain protocol logic.
"""

from __future__ import annotations

import select
import ssl
import time
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx2

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["LeanTransport"]

_READ = 65536
"""Bytes asked of the socket per read."""
_MAX_HEAD = 64 * 1024
"""The largest response head (status line and headers) accepted."""
_MAX_LINE = 4096
"""The longest chunk-size line (or trailer line) accepted."""
_NO_BODY = frozenset((204, 304))


class _Connection:
    """One open connection to a host: its stream and what was read beyond the last message."""

    __slots__ = ("buffer", "expires", "key", "sock", "stream")

    def __init__(self, stream: anyio.abc.ByteStream, key: tuple[bytes, bytes, int]) -> None:
        self.stream = stream
        self.key = key
        self.buffer = b""
        self.expires = 0.0
        self.sock: Any = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    def reusable(self, now: float) -> bool:
        """Still fresh, and nothing waits on it (an idle connection that reads is closed or broken)."""
        if now >= self.expires or self.buffer:
            return False
        if self.sock is None:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable


def _host_header(request: httpx2.Request) -> list[tuple[bytes, bytes]]:
    headers = list(request.headers.raw)
    if not any(k.lower() == b"host" for k, _ in headers):  # httpx2 always sets it; a safety net
        headers.insert(0, (b"Host", request.url.netloc))
    return headers


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with a keep-alive pool, for ``httpx2.AsyncClient(transport=...)``.

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
        self._idle: dict[tuple[bytes, bytes, int], list[_Connection]] = {}
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
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx2.UnsupportedProtocol(
                f"the bridge's upstream transport speaks http and https, not {scheme!r}"
            )
        port = url.port or (443 if scheme == b"https" else 80)
        key = (scheme, url.raw_host, port)
        try:
            self._slots.acquire_nowait()  # the usual case: no cancel scope needed
        except anyio.WouldBlock:
            try:
                with anyio.fail_after(timeouts.get("pool")):
                    await self._slots.acquire()
            except TimeoutError:
                raise httpx2.PoolTimeout("no free connection slot within the pool timeout") from None
        conn: _Connection | None = None
        try:
            conn = await self._take(key) or await self._connect(key, timeouts.get("connect"))
            await self._send(conn, request, timeouts.get("write"))
            status, reason, headers, version = await self._read_head(conn, timeouts.get("read"))
        except BaseException:
            self._slots.release()
            if conn is not None:
                await anyio.aclose_forcefully(conn.stream)
            raise
        close = _has_token(headers, b"connection", b"close") or _has_token(
            request.headers.raw, b"connection", b"close"
        )
        if version == b"HTTP/1.0" and not _has_token(headers, b"connection", b"keep-alive"):
            close = True
        if request.method == "HEAD" or status in _NO_BODY or status < 200:
            framing: int | None = 0
        elif _has_token(headers, b"transfer-encoding", b"chunked"):
            framing = None
        else:
            length = _header(headers, b"content-length")
            if length is None:
                framing, close = -1, True
            else:
                try:
                    framing = int(length)
                except ValueError:
                    await anyio.aclose_forcefully(conn.stream)
                    self._slots.release()
                    raise httpx2.RemoteProtocolError(f"invalid content-length {length!r}") from None
        body = _Body(self, conn, framing, close, timeouts.get("read"))
        return httpx2.Response(
            status,
            headers=headers,
            stream=body,
            extensions={"http_version": version, "reason_phrase": reason},
        )

    async def _take(self, key: tuple[bytes, bytes, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            if conn.reusable(now):
                return conn
            await anyio.aclose_forcefully(conn.stream)
        return None

    async def _connect(self, key: tuple[bytes, bytes, int], seconds: float | None) -> _Connection:
        scheme, raw_host, port = key
        host = raw_host.decode("ascii")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            with anyio.fail_after(seconds):
                if scheme == b"https":
                    if self._ssl is None:
                        self._ssl = httpx2.create_ssl_context()
                    stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                        host, port, ssl_context=self._ssl, tls_standard_compatible=False
                    )
                else:
                    stream = await anyio.connect_tcp(host, port)
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"connecting to {host}:{port} took longer than {seconds}s") from None
        except (OSError, ssl.SSLError, anyio.BrokenResourceError) as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return _Connection(stream, key)

    async def _send(self, conn: _Connection, request: httpx2.Request, seconds: float | None) -> None:
        head = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in _host_header(request):
            head += (name, b": ", value, b"\r\n")
        head.append(b"\r\n")
        chunked = _has_token(request.headers.raw, b"transfer-encoding", b"chunked")
        parts = [b"".join(head)]
        async for part in request.stream:  # type: ignore[union-attr]
            if chunked and part:
                parts += (f"{len(part):x}\r\n".encode(), part, b"\r\n")
            elif part:
                parts.append(part)
        if chunked:
            parts.append(b"0\r\n\r\n")
        try:
            with anyio.fail_after(seconds):
                await conn.stream.send(b"".join(parts))
        except TimeoutError:
            raise httpx2.WriteTimeout(f"sending the request took longer than {seconds}s") from None
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc

    async def _read_head(
        self, conn: _Connection, seconds: float | None
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes]:
        """The status, reason, headers and version of the next final (non-1xx) answer."""
        while True:
            buf = conn.buffer
            start = 0
            while (end := buf.find(b"\r\n\r\n", start)) < 0:
                if len(buf) > _MAX_HEAD:
                    raise httpx2.RemoteProtocolError("the response head is too large")
                start = max(len(buf) - 3, 0)
                data = await _receive(conn, seconds)
                if not data:
                    raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
                buf += data
            conn.buffer = buf[end + 4 :]
            lines = buf[:end].split(b"\r\n")
            try:
                version, code, *rest = lines[0].split(b" ", 2)
                status = int(code)
            except ValueError:
                raise httpx2.RemoteProtocolError(f"invalid status line {lines[0][:100]!r}") from None
            if not version.startswith(b"HTTP/1.") or not 100 <= status <= 999:
                raise httpx2.RemoteProtocolError(f"invalid status line {lines[0][:100]!r}")
            headers: list[tuple[bytes, bytes]] = []
            for line in lines[1:]:
                name, sep, value = line.partition(b":")
                if not sep or not name or name != name.strip():
                    raise httpx2.RemoteProtocolError(f"invalid header line {line[:100]!r}")
                headers.append((name, value.strip(b" \t")))
            if 100 <= status < 200 and status != 101:
                continue  # an informational answer (100 Continue, 103 Early Hints): the real one follows
            return status, rest[0] if rest else b"", headers, version

    async def _release(self, conn: _Connection, reuse: bool) -> None:
        """The request is over: keep its connection for the next one, or close it."""
        self._slots.release()
        if reuse and not self._closed and self._idle_count < self._max_keepalive:
            conn.expires = time.monotonic() + self._expiry
            self._idle.setdefault(conn.key, []).append(conn)
            self._idle_count += 1
        else:
            await anyio.aclose_forcefully(conn.stream)

    async def aclose(self) -> None:
        """Close every idle connection (those in use close with their responses)."""
        self._closed = True
        idle, self._idle, self._idle_count = self._idle, {}, 0
        for conns in idle.values():
            for conn in conns:
                await anyio.aclose_forcefully(conn.stream)


class _Body(httpx2.AsyncByteStream):
    """A response body read from its connection: one piece per socket read (de-chunked)."""

    def __init__(
        self,
        pool: LeanTransport,
        conn: _Connection,
        framing: int | None,
        close: bool,
        timeout: float | None,
    ) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._framing = framing  # None: chunked; -1: until the connection closes; n: content-length
        self._close = close
        self._timeout = timeout

    def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            raise httpx2.StreamClosed()
        data, conn.buffer = conn.buffer, b""
        if self._framing is None:
            return self._chunked(conn, data)
        if self._framing >= 0:
            return self._sized(conn, data, self._framing)
        return self._until_close(conn, data)

    async def _chunked(self, conn: _Connection, data: bytes) -> AsyncIterator[bytes]:
        reader = _Chunked()
        while True:
            out = reader.feed(data) if data else b""
            if reader.done:
                conn.buffer = reader.rest
                await self._finish(reuse=not self._close)
                if out:
                    yield out
                return
            if out:
                yield out
            data = await _receive(conn, self._timeout)
            if not data:
                raise httpx2.RemoteProtocolError(
                    "peer closed connection without sending complete message body: incomplete chunked read"
                )

    async def _sized(self, conn: _Connection, data: bytes, length: int) -> AsyncIterator[bytes]:
        left = length
        while True:
            if len(data) >= left:
                conn.buffer = data[left:]
                await self._finish(reuse=not self._close)
                if left:
                    yield data[:left]
                return
            if data:
                left -= len(data)
                yield data
            data = await _receive(conn, self._timeout)
            if not data:
                raise httpx2.RemoteProtocolError(
                    "peer closed connection without sending complete message body: "
                    f"received {length - left} bytes, expected {length}"
                )

    async def _until_close(self, conn: _Connection, data: bytes) -> AsyncIterator[bytes]:
        while True:
            if data:
                yield data
            data = await _receive(conn, self._timeout)
            if not data:
                await self._finish(reuse=False)
                return

    async def _finish(self, *, reuse: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._pool._release(conn, reuse and not conn.buffer)

    async def aclose(self) -> None:
        """Give the connection back: closed when the body was not read to its end."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool._slots.release()
            await anyio.aclose_forcefully(conn.stream)


class _Chunked:
    """The chunked transfer coding undone, across reads (``feed`` gives the data of one read)."""

    __slots__ = ("done", "left", "pending", "rest", "trailers")

    def __init__(self) -> None:
        self.left = 0  # data bytes left of the current chunk; -1: its CRLF is next
        self.pending = b""
        self.trailers = False
        self.done = False
        self.rest = b""

    def feed(self, data: bytes) -> bytes:
        """The body bytes in ``data`` (with what was pending); sets :attr:`done` at the last chunk.

        Raises:
            httpx2.RemoteProtocolError: The chunk framing is invalid.
        """
        buf = self.pending + data if self.pending else data
        pos, end = 0, len(buf)
        out: list[bytes] = []
        left = self.left
        while pos < end:
            if left > 0:
                take = min(left, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                left -= take
                if left:
                    break
                left = -1
            if left < 0:
                if end - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise httpx2.RemoteProtocolError("invalid chunked body: no CRLF after a chunk")
                pos += 2
                left = 0
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                if end - pos > _MAX_LINE:
                    raise httpx2.RemoteProtocolError("invalid chunked body: a chunk-size line is too long")
                break
            line = buf[pos:eol]
            pos = eol + 2
            if self.trailers:
                if not line:  # the blank line after the trailers: the body is complete
                    self.done = True
                    self.rest = buf[pos:]
                    pos = end
                    break
                continue
            size = _chunk_size(line)
            if size == 0:
                self.trailers = True
                continue
            stop = pos + size
            if buf[stop : stop + 2] == b"\r\n":  # the whole chunk is here (the usual case)
                out.append(buf[pos:stop])
                pos = stop + 2
            else:
                left = size
        self.left = left
        self.pending = buf[pos:] if pos < end else b""
        if not out:
            return b""
        return out[0] if len(out) == 1 else b"".join(out)


def _chunk_size(line: bytes) -> int:
    """The size a chunk-size line gives (hexadecimal, optionally followed by ``;`` extensions).

    Raises:
        httpx2.RemoteProtocolError: It is not a size.
    """
    try:
        size = int(line, 16)  # the usual case: the bare size
    except ValueError:
        text = line.split(b";", 1)[0].strip()
        try:
            size = int(text, 16)
        except ValueError:
            raise httpx2.RemoteProtocolError(f"invalid chunk size {text[:20]!r}") from None
    if size < 0:
        raise httpx2.RemoteProtocolError(f"invalid chunk size {line[:20]!r}")
    return size


async def _receive(conn: _Connection, seconds: float | None) -> bytes:
    """One socket read (``b""`` at the end of the stream)."""
    try:
        if seconds is None:
            return await conn.stream.receive(_READ)
        with anyio.fail_after(seconds):
            return await conn.stream.receive(_READ)
    except anyio.EndOfStream:
        return b""
    except TimeoutError:
        raise httpx2.ReadTimeout(f"no data within {seconds}s") from None
    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError) as exc:
        raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    found = None
    for key, value in headers:
        if key.lower() == name:
            found = value
    return found


def _has_token(headers: list[tuple[bytes, bytes]], name: bytes, token: bytes) -> bool:
    for key, value in headers:
        if key.lower() == name and token in (t.strip().lower() for t in value.split(b",")):
            return True
    return False
