"""The body of a :class:`~._transport.LeanTransport` answer: read per socket read, or handed over.

A :class:`Body` yields one de-chunked piece per socket read: through httpx2's ``aiter_raw`` /
``aiter_bytes`` (``__aiter__``), or through :meth:`Body.maas_chunks` for the library's readers
(what ``aiter_raw`` does, without its generator and chunker around each read).

**The hand-over.** A reader that converts and writes each piece (the bridge's relay,
``io._relay``) may also give the body a sink (:meth:`Body.maas_push`). While its reader waits for
data on an asyncio connection (``_aiosock``), what a read brings is then de-chunked in one
callback per turn of the loop for every connection (``_ahead.HandOvers``: after what the loop
had ready, so the steps a new stream puts ahead still go first) and its piece handed to the
sink, which converts and writes it there: the reader's task is not woken, so a flowing stream
costs no future, no task step and no walk down its coroutine chain per read. Anything else
wakes the reader as before: the body's end, a framing error, a piece the sink does not take.
Order is kept: the sink is there only while the reader waits with nothing unread, and leaves
at the first piece it does not take. The body's first piece is never handed over, and its read
wakes the reader ahead of the flowing streams (``_ahead``: a new stream's step); in a streamed
answer the client's first byte is made of it, written with the answer's start from the task.

It must not contain protocol logic.
"""

from __future__ import annotations

import ssl
import types
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import httpx2

from ._ahead import AHEAD
from ._aiosock import AioConnection
from ._http1 import check_cut

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Generator

    from ._http1 import Answer

__all__ = ["READ_FAULTS", "Body", "Conn", "read_error", "receive"]


class Conn(Protocol):
    """A connection a body reads (``_transport``'s anyio one, or :class:`~._aiosock.AioConnection`)."""

    async def receive(self, seconds: float | None) -> bytes:
        """One read (``b""`` at the end); raises :data:`READ_FAULTS`."""
        ...

    async def aclose(self) -> None:
        """Close it."""
        ...


class Pool(Protocol):
    """Where a body gives its connection back (``_transport.LeanTransport``)."""

    async def release(self, conn: Any, reuse: bool) -> None:
        """The answer was read to its end: keep ``conn`` for the next request (``reuse``) or close it."""
        ...

    async def discard(self, conn: Any) -> None:
        """The answer was not read to its end: close ``conn``."""
        ...


class _Again:
    """What the sink left for the reader: the answer's pieces, or its end (:attr:`Body._kick`)."""

    __slots__ = ()


_AGAIN: Final = _Again()


class Body(httpx2.AsyncByteStream):
    """A response body read from its connection: one piece per socket read (de-chunked).

    Read through httpx2's ``aiter_raw`` / ``aiter_bytes`` (``__aiter__``), or by the library's
    readers through :meth:`maas_chunks` (``io._kinds.response_chunks`` looks for it), which may
    have its pieces handed over as they arrive (:meth:`maas_push`, the module's hand-over).
    """

    def __init__(self, pool: Pool, conn: Conn, answer: Answer, timeout: float | None) -> None:
        self._pool = pool
        self._conn: Conn | None = conn
        self._answer = answer
        self._timeout = timeout
        self._received = 0
        self._push: Callable[[bytes], bool] | None = None
        self._kick: _Again | httpx2.RemoteProtocolError | None = None
        """Set by the sink when it wakes the reader: go back to the answer (:data:`_AGAIN`), or raise."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            raise httpx2.StreamClosed()
        return self._read(conn, self._answer, None)

    def maas_chunks(self, response: httpx2.Response) -> AsyncIterator[bytes]:
        """The body of ``response`` (whose stream this is), as its ``aiter_raw()`` yields it.

        The same pieces, checks and ending: the response is marked consumed, counts
        ``num_bytes_downloaded``, is closed when the iterator ends (read to its end, failed or
        closed), and a ``httpx2.RequestError`` raised carries its request.
        """
        return self._read(self._conn, self._answer, response)

    def maas_push(self, sink: Callable[[bytes], bool] | None) -> None:
        """Hand the pieces :meth:`maas_chunks` would yield to ``sink`` as they arrive (``None``: stop).

        While the reader waits for data on an asyncio connection without a read timeout, the
        body data that arrives goes to ``sink`` in a callback of the loop (the turn's hand-overs,
        ``_ahead.HandOvers``), a piece at a time: ``True``, it took the piece, which is not
        yielded (it counts as read); ``False``, the reader wakes and yields it. ``sink`` must
        not raise. The body's end and a framing error go to the reader as before.
        """
        self._push = sink

    async def _read(
        self, conn: Conn | None, answer: Answer, response: httpx2.Response | None
    ) -> AsyncIterator[bytes]:
        conn = _consume(response, conn)  # (aiter_raw's checks, made at the first read as it makes them)
        aio = conn if type(conn) is AioConnection else None
        timeout = self._timeout
        # The hand-over: only for maas_chunks (aiter_raw's pieces may go through decoders), and
        # not with a read timeout (a piece handed over would not restart the wait's timer).
        sink = self._pushed if aio is not None and response is not None and timeout is None else None
        try:
            while True:
                out = answer.take()
                complete = answer.complete
                if complete:
                    await self._finish(reuse=answer.ended and answer.keep_alive and not answer.extra)
                if out:
                    self._received += len(out)
                    if response is not None:
                        response._num_bytes_downloaded = self._received
                    yield out
                if complete:
                    return
                try:  # (receive, inline: it runs per read; on asyncio the connection's take too)
                    if aio is None:
                        data = await conn.receive(timeout)
                    else:
                        got = aio.take()
                        if got is None:
                            got = await self._wait(aio, sink, timeout)
                            if got is None:
                                continue  # the sink left pieces, or the end, in the answer
                        data = got
                except READ_FAULTS as exc:
                    raise read_error(exc, timeout)  # noqa: B904 (the cause is set)
                if not data:
                    check_cut(answer.headers, self._received)
                    await self._finish(reuse=False)  # the body ran until the connection closed
                    return
                answer.feed_body(data)
        except httpx2.RequestError as exc:  # (httpx2's request_context, as aiter_raw has it)
            _attach(exc, response)
            raise
        finally:
            if response is not None:
                response._num_bytes_downloaded = self._received
                await response.aclose()

    async def _wait(
        self, aio: AioConnection, sink: Callable[[bytes], bool] | None, seconds: float | None
    ) -> bytes | None:
        """The next read's data on an asyncio connection; ``None``: the sink left pieces or the end.

        The hand-over's sink (``sink``, when a reader's is set) takes the reads while it waits.

        Raises:
            TimeoutError: Nothing within ``seconds``.
            OSError: The connection broke (or was closed).
            httpx2.RemoteProtocolError: A read the sink took broke the chunk framing.
        """
        # The answer's first piece is a new stream's step: its read wakes the reader ahead of
        # the flowing streams (``_ahead``), and is never handed over (the client's first byte
        # goes out with the answer's start, from the reader's task).
        first = not self._received
        if first:
            aio.first = True
        elif sink is not None and self._push is not None:
            aio.sink = sink
        try:
            while True:
                await aio.wait(seconds)
                if AHEAD.waiting and not first:  # a new stream's step came too: it goes first (_ahead)
                    await _yield()
                if self._kick is not None:
                    break
                got = aio.take()
                if got is not None:
                    return got
        finally:
            aio.sink = None
            aio.first = False
        kick, self._kick = self._kick, None
        if isinstance(kick, httpx2.RemoteProtocolError):
            raise kick
        return None

    def _pushed(self, data: bytes) -> bool:
        """What arrived while the reader waits (``AioConnection.sink``); ``True``: wake the reader.

        The data is always taken: de-chunked into the answer, its piece handed to the sink;
        what the reader must do then is left in :attr:`_kick`.
        """
        answer = self._answer
        try:
            answer.feed_body(data)
        except httpx2.RemoteProtocolError as exc:
            self._kick = exc  # raised by the reader, where feed_body would have raised it
            return True
        if answer.complete:
            self._kick = _AGAIN
            return True
        if not answer.pieces:
            return False  # chunk framing only
        piece = answer.take()
        push = self._push
        if push is not None and push(piece):
            self._received += len(piece)
            return False
        answer.give_back(piece)
        self._kick = _AGAIN
        return True

    async def _finish(self, *, reuse: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._pool.release(conn, reuse)

    async def aclose(self) -> None:
        """Give the connection back: closed when the body was not read to its end."""
        self._push = None
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._pool.discard(conn)


def _consume(response: httpx2.Response | None, conn: Conn | None) -> Conn:
    """Mark ``response`` (if any) consumed, as ``aiter_raw`` does before its first read; ``conn``.

    Raises:
        httpx2.StreamConsumed: It was read already.
        httpx2.StreamClosed: It was closed.
    """
    if response is not None:
        if response.is_stream_consumed:
            raise httpx2.StreamConsumed()
        if response.is_closed or conn is None:
            raise httpx2.StreamClosed()
        response.is_stream_consumed = True
        response._num_bytes_downloaded = 0
    if conn is None:
        raise httpx2.StreamClosed()
    return conn


def _attach(exc: httpx2.RequestError, response: httpx2.Response | None) -> None:
    """Give ``exc`` the response's request (if any), as httpx2's ``request_context`` does."""
    if response is not None and response._request is not None:
        exc.request = response._request


READ_FAULTS = (TimeoutError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError)
"""What a connection's ``receive`` raises for a fault (:func:`read_error` maps them)."""


def read_error(exc: BaseException, seconds: float | None) -> httpx2.TransportError:
    """httpx2's error for a read's fault, its cause set as ``raise ... from`` would."""
    error: httpx2.TransportError
    if isinstance(exc, TimeoutError):
        error = httpx2.ReadTimeout(f"no data within {seconds}s")
        error.__cause__ = None
    else:
        error = httpx2.ReadError(str(exc) or type(exc).__name__)
        error.__cause__ = exc
    error.__suppress_context__ = True
    return error


async def receive(conn: Conn, seconds: float | None) -> bytes:
    """One read (``b""`` at the end of the stream).

    Raises:
        httpx2.TransportError: A read's fault (:func:`read_error`).
    """
    try:
        return await conn.receive(seconds)
    except READ_FAULTS as exc:
        raise read_error(exc, seconds)  # noqa: B904 (the cause is set)


@types.coroutine
def _yield() -> Generator[None, None, None]:
    """Let the loop run what is ready first: the task steps again last in the loop's turn (a bare yield)."""
    yield
