"""An upstream connection on asyncio (uvloop or not): a protocol that stays registered for reading.

anyio's asyncio stream resumes reading its socket each time it waits and pauses it when data
came (on plain asyncio two ``epoll_ctl`` calls per read, on uvloop an ``io_uring_enter`` per
read or two): for a stream that brings one frame per read, as a model's tokens come, that is
as many system calls again as the read itself. :class:`AioConnection` lets the loop read the socket as data
arrives and wakes the one waiting reader with a future; it pauses reading only when more than
:data:`HIGH_WATER` bytes wait unread (a slow client: the upstream's TCP window fills, as with
anyio), and resumes when the reader takes them.

Each method raises what anyio's stream does for the same fault, as builtin classes (the
transport maps them to httpx2's): ``TimeoutError`` for a read or send past its timeout,
``OSError`` (or ``ssl.SSLError``) for a broken connection. A read returns ``b""`` at the end of
the stream. Used by ``_transport`` when an asyncio loop runs; on trio it keeps anyio's stream.

It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from typing import TYPE_CHECKING, cast

from ._ahead import go_first, hand_overs

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HIGH_WATER", "AioConnection", "WriteFlow", "connect"]

HIGH_WATER = 65536
"""Unread bytes past which the connection stops reading its socket until the reader takes them."""


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def _ragged(error: BaseException) -> bool:
    """A TLS peer closed without saying so: the stream's end (``tls_standard_compatible=False``)."""
    return isinstance(error, ssl.SSLEOFError) or (
        isinstance(error, ssl.SSLError) and error.reason == "UNEXPECTED_EOF_WHILE_READING"
    )


class WriteFlow(asyncio.Protocol):
    """The write side of the bridge's own asyncio protocols: one future a sender waits on.

    It is made when the transport's buffer passes its high-water mark (``pause_writing``) and
    done when the buffer drains (``resume_writing``) or the connection is lost (a subclass's
    ``connection_lost`` calls :meth:`resume_writing`).
    """

    __slots__ = ("_drain", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._drain: asyncio.Future[None] | None = None  # a sender waiting for the write buffer

    def pause_writing(self) -> None:
        if self._drain is None:
            self._drain = self._loop.create_future()

    def resume_writing(self) -> None:
        drain, self._drain = self._drain, None
        if drain is not None and not drain.done():
            drain.set_result(None)


class AioConnection(WriteFlow):
    """One open connection to a host: what arrived and was not read yet, and when it stops being reusable."""

    __slots__ = (
        "_closed",
        "_data",
        "_eof",
        "_error",
        "_hand_overs",
        "_handing",
        "_lost",
        "_paused",
        "_size",
        "_transport",
        "_waiter",
        "expires",
        "first",
        "key",
        "sink",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, key: tuple[bytes, bytes, int]) -> None:
        super().__init__(loop)
        self.key = key
        self.expires = 0.0
        self._transport: asyncio.Transport | None = None
        self._data: list[bytes] = []
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None  # the reader waiting for data
        self._paused = False  # reading paused: HIGH_WATER bytes wait unread
        self._eof = False
        self._lost = False
        self._error: BaseException | None = None
        self._closed = False  # closed by this side
        self.sink: Callable[[bytes], bool] | None = None
        """Set by a body's reader while it waits with nothing unread (``_body``'s hand-over): what
        arrives goes to it (:meth:`hand_over`) rather than waking the reader, who is woken only
        when it returns ``True`` (the sink then leaves)."""
        self._handing = False  # added to the turn's hand-overs
        self._hand_overs = hand_overs(loop)
        self.first = False
        """The next bytes are an answer's first: the reader they wake goes first (``_ahead``); set
        by an exchange about to wait for its answer's head, and by its body's reader about to wait
        for the first piece (``_body``), cleared when they come."""

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast("asyncio.Transport", transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        self._data.append(data)
        self._size += len(data)
        if self._size > HIGH_WATER and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        if self.sink is not None:
            if not self._handing:
                self._handing = True
                self._hand_overs.add(self)
            return
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        if self.first:
            self.first = False
            go_first(self._loop)  # (after the wake it puts first)

    def hand_over(self) -> None:
        """Give what arrived to the sink, in the turn's hand-overs (``_ahead.HandOvers``).

        The reader stopped waiting meanwhile (``sink`` gone): it takes the data itself. A sink
        that raises (it must not) fails the connection rather than leave its reader waiting.
        """
        self._handing = False
        sink = self.sink
        if sink is None or not self._data:
            return
        data = self.take()
        try:
            wake = sink(data) if data else False
        except Exception as exc:
            self._error, self._lost, wake = exc, True, True
            if self._transport is not None:
                self._transport.abort()
        if wake:
            self.sink = None
            self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if exc is not None:
            self._error = exc
        self._wake()
        self.resume_writing()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # What the transport calls

    async def receive(self, seconds: float | None) -> bytes:
        """Everything that arrived since the last read, waiting for some; ``b""`` at the end.

        (:meth:`take` and :meth:`wait`, for a caller that cannot inline them.)

        Raises:
            TimeoutError: Nothing within ``seconds``.
            OSError: The connection broke (or was closed).
        """
        while (data := self.take()) is None:
            await self.wait(seconds)
        return data

    def take(self) -> bytes | None:
        """Everything that arrived since the last read; ``b""`` at the end; ``None``: nothing yet.

        Raises:
            OSError: The connection broke (or was closed).
        """
        data = self._data
        if not data:
            if self._eof or self._lost:
                return self._end()
            return None
        out = data[0] if len(data) == 1 else b"".join(data)
        data.clear()
        self._size = 0
        if self._paused:
            self._paused = False
            if self._transport is not None and not self._transport.is_closing():
                self._transport.resume_reading()
        return out

    def wait(self, seconds: float | None) -> asyncio.Future[None]:
        """A future done when data or the end arrives (then :meth:`take`); awaited right away.

        Its exception is ``TimeoutError`` when nothing came within ``seconds``. No coroutine
        of its own: the reader awaits the future itself, one frame less per read.
        """
        waiter = self._waiter = self._loop.create_future()
        if seconds is not None:
            timer = self._loop.call_later(seconds, _expire, waiter)
            waiter.add_done_callback(lambda _: timer.cancel())  # (woken, timed out or cancelled)
        return waiter

    def _end(self) -> bytes:
        error = self._error
        if error is not None and not _ragged(error):
            raise error
        if self._closed:
            raise ConnectionAbortedError("the connection was closed")
        return b""  # an end without an error (uvloop's TLS ends a ragged close so): check_cut judges

    async def send(self, data: bytes, seconds: float | None) -> None:
        """Write ``data``; wait while the write buffer is full.

        Raises:
            TimeoutError: The buffer did not drain within ``seconds``.
            OSError: The connection broke (or was closed).
        """
        transport = self._transport
        if transport is None or self._lost or transport.is_closing():
            raise self._error or BrokenPipeError("the connection is closed")
        transport.write(data)
        drain = self._drain
        if drain is None:
            return
        timer = None if seconds is None else self._loop.call_later(seconds, _expire, drain)
        try:
            await drain
        finally:
            if timer is not None:
                timer.cancel()
        if self._lost:
            raise self._error or BrokenPipeError("the connection is closed")

    def reusable(self, now: float) -> bool:
        """Still fresh, and nothing came while idle (an idle connection that reads is closed or broken)."""
        return now < self.expires and not (self._data or self._eof or self._lost)

    async def aclose(self) -> None:
        """Close at once (what anyio's ``aclose_forcefully`` does: nothing more is sent)."""
        if self._transport is not None:
            self._transport.abort()
        self._lost = self._closed = True


async def connect(
    host: str, port: int, key: tuple[bytes, bytes, int], ssl_context: ssl.SSLContext | None
) -> AioConnection:
    """A connection to ``host`` (TLS when ``ssl_context`` is given), on the running loop.

    Raises:
        OSError: It could not be made (``ssl.SSLError`` for a failed handshake).
    """
    loop = asyncio.get_running_loop()
    open_connection = loop.create_connection
    if not type(loop).__module__.startswith("uvloop"):  # uvloop has no happy eyeballs
        open_connection = functools.partial(open_connection, happy_eyeballs_delay=0.25)  # anyio's
    _, conn = await open_connection(
        lambda: AioConnection(loop, key),
        host,
        port,
        ssl=ssl_context,
        server_hostname=None if ssl_context is None else host,
    )
    return conn
