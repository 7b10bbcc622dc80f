"""The bridge's upstream websocket client: ``websockets``' sans-I/O ``ClientProtocol`` over an asyncio protocol of its own.

``websockets.asyncio.client.connect`` gives each connection an asyncio protocol with its own
buffers, a message assembler, a keepalive task, futures and its ``connect()`` arguments (~13 KiB
of an idle session, tracemalloc). :class:`UpstreamConnection` keeps the sans-I/O protocol
(framing, masking, the handshake, pings answered, the close handshake, UTF-8 and size checks:
``websockets``' own code), and around it only what a relay needs: the messages not read yet, one
waiting reader, one timer (``io._timers``', not a loop handle). It has the face the session code
reads (``recv``, ``send``, ``close``, ``subprotocol``, ``async with``), and fails the same way:
``recv``/``send`` raise ``websockets``' ``ConnectionClosed`` (``rcvd``/``sent`` close frames,
from the sans-I/O protocol's ``close_exc``), the handshake ``InvalidStatus`` (a refusal, with its
response), ``InvalidHandshake`` (a bad response) or ``OSError``; the connect timeout
``TimeoutError``.

Kept as ``websockets`` does it: a ping every :data:`PING_INTERVAL` seconds, the connection failed
(1011 "keepalive ping timeout") when its pong is not back within :data:`PING_TIMEOUT` (one
timer: the next ping goes when the previous one's wait ends); the close handshake waits
:data:`CLOSE_TIMEOUT` seconds for the upstream to end the TCP connection, then aborts it; reading
pauses once :data:`MAX_QUEUE` messages wait unread (a slow client: the upstream's TCP window
fills) and resumes when the reader is down to :data:`LOW_QUEUE`. No compression is offered (as
the bridge asked ``websockets`` before: ``compression=None``), no ``User-Agent`` is sent.

Not here (``WebSocketUpstream.connect`` keeps ``websockets``' own ``connect()`` for them): a proxy
from the environment, credentials in the URL. Like that ``connect()``, it runs on asyncio's loop
or uvloop only (a websocket upstream's relay, ``_pump``, is asyncio's: no trio path either way).
Relied on in ``websockets`` (>= 13, pinned by ``tests/bridge/test_ws_client.py``): the sans-I/O
``ClientProtocol`` API and its ``close_exc``; once the handshake is over, its response is let go
(``_ws_parser.drop_handshake``, its own rule).

It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING, Any, Final

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import CLOSED, CONNECTING, OPEN

from ..io._timers import later
from ._ws_parser import FramedConnection, drop_handshake, unlabelled

OP_PONG = Opcode.PONG

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping

    from websockets.uri import WebSocketURI

    from ..io._timers import Timer

__all__ = [
    "CLOSE_TIMEOUT", "MAX_QUEUE", "PING_INTERVAL", "PING_TIMEOUT", "Opening", "UpstreamConnection", "open_upstream",
]  # fmt: skip

PING_INTERVAL: Final = 20.0
"""Seconds between keepalive pings (``websockets``' ``ping_interval`` default)."""
PING_TIMEOUT: Final = 20.0
"""Seconds a keepalive ping waits for its pong before the connection fails (``ping_timeout``)."""
CLOSE_TIMEOUT: Final = 10.0
"""Seconds the close handshake waits for the upstream to end the connection (``close_timeout``)."""
MAX_QUEUE: Final = 16
"""Unread messages past which the socket is not read (``websockets``' ``max_queue``)."""
LOW_QUEUE: Final = 4
"""Unread messages at which reading resumes (``max_queue`` // 4, as ``websockets``)."""

_CONTEXT: list[ssl.SSLContext] = []


def _tls() -> ssl.SSLContext:
    """The system's default TLS context (made once: a context costs ~1 ms and memory each)."""
    if not _CONTEXT:
        _CONTEXT.append(ssl.create_default_context())
    return _CONTEXT[0]


class Opening:
    """``await``: :func:`open_upstream` with these arguments (made by ``WebSocketUpstream.connect``, awaited once)."""

    __slots__ = ("args", "kwargs")

    proxy = None
    """No proxy: this client connects directly (``websockets``' ``connect()`` goes through one)."""

    def __init__(self, uri: WebSocketURI, **kwargs: Any) -> None:
        self.args = uri
        self.kwargs = kwargs

    def __await__(self) -> Generator[Any, None, UpstreamConnection]:
        return open_upstream(self.args, **self.kwargs).__await__()


async def open_upstream(
    uri: WebSocketURI,
    *,
    headers: Mapping[str, str],
    subprotocols: list[str] | None,
    max_size: int | None,
    open_timeout: float | None,
) -> UpstreamConnection:
    """Open a websocket connection to ``uri`` (TCP or TLS, the handshake) within ``open_timeout`` seconds.

    Raises:
        TimeoutError: Not open within ``open_timeout``.
        OSError: No connection (``ssl.SSLError``: a failed TLS handshake).
        InvalidStatus: The upstream answered the handshake with another status than 101.
        InvalidHandshake: Another bad handshake answer (or none).
    """
    loop = asyncio.get_running_loop()
    proto = unlabelled(ClientProtocol(uri, subprotocols=subprotocols or None, max_size=max_size))  # type: ignore[arg-type]
    request = proto.connect()
    request.headers.update(headers)
    proto.send_request(request)
    conn = UpstreamConnection(loop, proto)
    secure = uri.secure
    async with asyncio.timeout(open_timeout):
        await loop.create_connection(
            lambda: conn,
            uri.host,
            uri.port,
            ssl=_tls() if secure else None,
            server_hostname=uri.host if secure else None,
        )
        try:
            await conn.opened()
        except BaseException:
            conn.abort()
            raise
    return conn


class UpstreamConnection(FramedConnection):
    """One upstream websocket connection (see the module docstring)."""

    __slots__ = (
        "_closer", "_error", "_held", "_lost", "_opening", "_paused", "_ping", "_proto", "_timer",
        "_transport", "subprotocol",
    )  # fmt: skip

    def __init__(self, loop: asyncio.AbstractEventLoop, proto: ClientProtocol) -> None:
        super().__init__(loop)
        self._proto = proto
        self._transport: asyncio.Transport | None = None
        self._opening: asyncio.Future[None] | None = None  # the handshake, until it ends
        self._lost: asyncio.Future[None] | None = None  # a closer waiting for the connection's end
        self._paused = False
        self._timer: Timer | None = None  # the keepalive's
        self._ping: bytes | None = None  # the keepalive ping waiting for its pong
        self._closer: Timer | None = None  # aborts a close handshake past CLOSE_TIMEOUT
        self._error: BaseException | None = None  # why the connection broke (the close error's cause)
        self._held = False  # the parser still holds the handshake's response (_ws_parser)
        self.subprotocol: str | None = None
        """The subprotocol the upstream chose."""

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's are not subclasses
        self._opening = self._loop.create_future()
        self._flush()  # the handshake request

    def data_received(self, data: bytes) -> None:
        proto = self._proto
        proto.receive_data(data)
        self._flush()
        for event in proto.events_received():
            if type(event) is Frame:
                self._frame(event)
            else:  # the handshake's response
                self._handshake(answered=True)
        if self._held:
            self._held = not drop_handshake(proto)
        if proto.state is CONNECTING and proto.handshake_exc is not None:
            self._handshake()

    def eof_received(self) -> bool:
        self._proto.receive_eof()
        self._flush()
        self._handshake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        proto = self._proto
        proto.receive_eof()  # idempotent: the state is CLOSED after it
        if exc is not None and self._error is None:
            self._error = exc
        for timer in (self._timer, self._closer):
            if timer is not None:
                timer.cancel()
        self._timer = self._closer = None
        self._handshake()
        self._wake()
        self.resume_writing()
        lost, self._lost = self._lost, None
        if lost is not None and not lost.done():
            lost.set_result(None)

    # The handshake

    async def opened(self) -> None:
        """Wait for the handshake's end (the connection is open, or this raises why not)."""
        opening = self._opening
        if opening is not None:
            await opening

    def _handshake(self, answered: bool = False) -> None:
        """Settle the handshake's waiter once the response (``answered``) or the end has come."""
        waiter = self._opening
        if waiter is None or waiter.done():  # (done: cancelled, the open timed out)
            return
        proto = self._proto
        if answered and proto.handshake_exc is None:  # (the state may be past OPEN already)
            self._opening = None
            self.subprotocol = proto.subprotocol
            # ClientProtocol.parse's frame keeps the handshake's response (~1.6 KiB) as long as
            # the connection: let it go (now, or after a later read if a frame is half read).
            self._held = not drop_handshake(proto)
            self._timer = later(self._loop, PING_INTERVAL, self.keepalive)
            waiter.set_result(None)
        elif proto.handshake_exc is not None or proto.state is CLOSED:
            self._opening = None
            waiter.set_exception(
                proto.handshake_exc
                or self._error
                or ConnectionResetError("the upstream closed the connection during the handshake")
            )

    # Messages

    def _control(self, frame: Frame) -> None:
        # Pings are answered and close frames handled by the sans-I/O protocol.
        if frame.opcode is OP_PONG and self._ping is not None and frame.data == self._ping:
            self._ping = None

    def _message(self, message: str | bytes, size: int) -> None:
        messages = self._messages
        messages.append(message)
        if len(messages) >= MAX_QUEUE and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def _invalid_text(self) -> None:
        # As websockets' own client: the connection fails with 1007 (the reader sees it closed).
        if self._proto.state is OPEN:
            self._proto.fail(1007, "invalid UTF-8 in a text message")
            self._flush()
            self._expect_close()

    async def recv(self) -> str | bytes:
        """The upstream's next message (``str`` for text).

        Raises:
            ConnectionClosed: The connection is closed (and every message before its end was read).
        """
        while (message := self.take()) is None:
            await self.arrived()
        return message

    def take(self) -> str | bytes | None:
        """The upstream's next message already read, or ``None``: await :meth:`arrival`, then take again.

        :meth:`recv` without a coroutine (the session's relay reads this way).

        Raises:
            ConnectionClosed: The connection is closed (and every message before its end was read).
        """
        messages = self._messages
        if not messages:
            if self._proto.state is CLOSED:
                raise self._closed()
            return None
        message: str | bytes = messages.pop(0)
        if self._paused and len(messages) <= LOW_QUEUE:
            self._paused = False
            transport = self._transport
            if transport is not None and not transport.is_closing():
                transport.resume_reading()
        return message

    async def send(self, message: str | bytes) -> None:
        """Send one message (text for ``str``); waits while the write buffer is full.

        Raises:
            ConnectionClosed: The connection is closed or closing (raised once it is closed).
        """
        proto = self._proto
        if proto.state is not OPEN:
            await self._ended()
            raise self._closed()
        if isinstance(message, str):
            proto.send_text(message.encode())
        else:
            proto.send_binary(message)
        self._flush()
        drain = self._drain
        if drain is not None:
            await drain
            if proto.state is CLOSED:
                raise self._closed()

    def _closed(self) -> BaseException:
        exc = self._proto.close_exc
        if self._error is not None:
            exc.__cause__ = self._error
        return exc

    # Ends

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """The close handshake (a no-op once closed): returns when the connection has ended."""
        proto = self._proto
        if proto.state is OPEN:
            proto.send_close(code, reason)
            self._flush()
        await self._ended()

    async def _ended(self) -> None:
        """Wait for the connection's end (aborted past :data:`CLOSE_TIMEOUT`)."""
        if self._proto.state is CLOSED:
            return
        self._expect_close()
        lost = self._lost
        if lost is None:
            lost = self._lost = self._loop.create_future()
        await asyncio.shield(lost)

    def _expect_close(self) -> None:
        if self._closer is None and self._transport is not None:
            self._closer = later(self._loop, CLOSE_TIMEOUT, self._give_up)

    def _give_up(self) -> None:
        self._closer = None
        if self._error is None:
            self._error = TimeoutError("timed out while closing connection")
        self.abort()

    def abort(self) -> None:
        """End the connection at once (nothing more is sent)."""
        if self._transport is not None:
            self._transport.abort()

    def keepalive(self) -> None:
        """The keepalive timer: fail the connection if the last ping's pong is missing, else ping (again)."""
        proto = self._proto
        if self._timer is not None:  # (when called by hand: one timer at a time)
            self._timer.cancel()
            self._timer = None
        if proto.state is not OPEN:
            return
        if self._ping is not None:
            proto.fail(1011, "keepalive ping timeout")
            self._flush()
            self._expect_close()
            return
        self._ping = ping = self._loop.time().hex().encode()
        proto.send_ping(ping)
        self._flush()
        self._timer = later(self._loop, PING_TIMEOUT, self.keepalive)

    def _flush(self) -> None:
        """Write what the sans-I/O protocol has to send (``b""``: end the writing side)."""
        transport = self._transport
        if transport is None:
            return
        for data in self._proto.data_to_send():
            if data:
                transport.write(data)
            elif transport.can_write_eof():
                try:
                    transport.write_eof()
                except Exception:  # uvloop may raise RuntimeError (websockets ignores it too)
                    pass
            else:
                transport.close()
        if self._closer is None and self._proto.close_expected():
            self._expect_close()

    async def __aenter__(self) -> UpstreamConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
