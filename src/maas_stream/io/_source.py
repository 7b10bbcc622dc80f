"""Reading from whatever the caller holds, asynchronously: :class:`AsyncReader`, with its timeouts.

Kinds, told apart by duck typing (no import of httpx or websockets; how each is read is
``_kinds``' rule, which also holds the synchronous reader):

* an httpx / httpx2 streaming response (``aiter_bytes`` + ``aclose``, or ``iter_bytes`` +
  ``close``), also when wrapped by an official SDK (``.http_response`` of a raw streaming
  response, ``.response`` of an SDK ``Stream`` not yet iterated); a body sent without a
  content encoding is read with ``aiter_raw`` / ``iter_raw`` (the same bytes, without httpx's
  decoding layer), any other with ``aiter_bytes`` / ``iter_bytes``;
* a websocket (``recv`` + ``send``, like the ``websockets`` library's connections): each message
  is one frame of a JSON-lines protocol;
* an httpx-sse or httpx2 ``EventSource`` (its response's bytes are read: nothing is parsed twice);
* any (async) iterable of ``bytes``, or of server-sent events (httpx-sse's or httpx2's
  ``ServerSentEvent``, e.g. ``event_source.aiter_sse()``): each event is written back as one SSE
  frame, its event name, id and retry kept, for the protocol decoder.

Readers pull one chunk per call (no queue), check the HTTP status before the first read, and
close the source exactly once. The optional idle and total timeouts cost O(1) per stream, async
generators (``astream``, ``aconvert``) included: each read only stamps the time it began. On
asyncio one timer per stream on the loop's timer heap (``_timers``: one loop timer for all), re-armed
at most once per idle period, cancels the task of a read that passed its limit (the cancellation
is taken back and turned into the timeout error at the read, as ``asyncio.timeout`` does); no task
and no cancel scope per stream or per read. On trio a stream read through :meth:`AsyncReader.watch`
gets one watchdog task, and a read outside it one cancel scope (trio's scopes are cheap).

The status and content-type check and the translation of transport errors are ``_checks.py``'s
rule: a reader calls them, it must not judge a response or an exception itself. It must not
contain protocol logic.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio

from ._checks import check_response, request_of, transport_error
from ._exceptions import IdleTimeoutError, StreamTimeoutError, for_transport
from ._kinds import Kind, hint, is_response, is_websocket, reframe, response_chunks, unwrap
from ._timers import Timer, at

__all__ = ["AsyncReader"]

_DRAIN_LIMIT = 64

_T = TypeVar("_T")


def _loop_clock() -> Callable[[], float]:
    """The running event loop's clock as a plain function (``anyio.current_time`` looks it up per call).

    On asyncio it is the loop's own ``time`` (what anyio reads); elsewhere ``anyio.current_time``.
    """
    try:
        return asyncio.get_running_loop().time
    except RuntimeError:
        return anyio.current_time


def _asyncio_clock(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """The loop's clock: ``time.monotonic`` itself when the loop's ``time`` is asyncio's own.

    ``BaseEventLoop.time`` only returns ``time.monotonic()``; calling that directly saves a
    Python call per read (the timed readers stamp every read). Any other loop's ``time``
    (uvloop's, a test's) is used as it is.
    """
    clock: Callable[[], float] = loop.time
    if getattr(clock, "__func__", None) is asyncio.BaseEventLoop.time:  # (not patched on the loop)
        clock = time.monotonic
    return clock


_CANCEL_MSG = "maas_stream: read timed out"
"""The message of the cancellation the timer sends (told apart from any other in a traceback)."""


class AsyncReader:
    """Pull chunks (or websocket messages) from an async source, one read at a time.

    Args:
        source: See the module docstring.
        idle_timeout: Seconds allowed between two reads' data; ``None`` waits forever.
        total_timeout: Seconds allowed for the whole stream, counted from the first read.
        close: Close the source when done (always true for HTTP responses' own iterators).

    Raises:
        TypeError: ``source`` is none of the supported kinds.
    """

    __slots__ = (
        "_checked",
        "_clock",
        "_close",
        "_closed",
        "_deadline",
        "_exhausted",
        "_fired",
        "_handle",
        "_iter",
        "_loop",
        "_response_iter",
        "_since",
        "_task",
        "_timed",
        "_watched",
        "idle_timeout",
        "kind",
        "received",
        "source",
        "total_timeout",
    )

    def __init__(
        self,
        source: Any,
        *,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        close: bool = True,
    ) -> None:
        source = unwrap(source)
        self.source = source
        self.idle_timeout = idle_timeout
        self.total_timeout = total_timeout
        self.received = 0
        self._deadline: float | None = None
        self._watched = False
        self._since: float | None = None
        self._clock: Callable[[], float] = anyio.current_time
        self._fired: tuple[float, str] | None = None
        self._timed = idle_timeout is not None or total_timeout is not None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The asyncio loop whose timer enforces the timeouts (``None``: not on asyncio, or none)."""
        self._handle: Timer | None = None
        self._task: asyncio.Task[Any] | None = None
        self._checked = not is_response(source)
        self._close = close
        self._closed = False
        self._exhausted = False
        self._response_iter = False
        self.kind: Kind
        self._iter: AsyncIterator[Any]
        if hasattr(source, "aiter_bytes") and hasattr(source, "aclose"):
            self.kind = "bytes"
            self._iter = response_chunks(source)
            self._response_iter = True
        elif is_websocket(source) and isinstance(source, AsyncIterable):
            self.kind = "messages"
            self._iter = aiter(source)
        elif isinstance(source, AsyncIterable):
            self.kind = "bytes"
            self._iter = aiter(source)
        else:
            raise TypeError(
                f"cannot read a stream from {type(source).__name__}: expected an httpx/httpx2 streaming "
                "response, an SDK raw streaming response, an httpx-sse / httpx2 EventSource, a websocket, "
                "an AsyncIterable[bytes] or an AsyncIterable of server-sent events"
                + hint(source, "ms.io.areplay(path)", "ms.stream(...) or ms.aggregate(...)")
            )

    def _limit(self) -> tuple[float | None, str]:
        """The time the next read may take, and which limit that is (idle or total)."""
        timeout, phase = self.idle_timeout, "idle"
        if self.total_timeout is not None:
            now = anyio.current_time()
            if self._deadline is None:
                self._deadline = now + self.total_timeout
            left = max(self._deadline - now, 0.0)
            if timeout is None or left < timeout:
                timeout, phase = left, "total"
        return timeout, phase

    async def read(self) -> bytes | str | None:
        """The next chunk (``bytes``) or websocket message (``str`` or ``bytes``); ``None`` at the end.

        Raises:
            ProviderHTTPError: The response's status is not 2xx (checked before the first read).
            UnexpectedContentTypeError: The response is a whole JSON document, not a stream.
            IdleTimeoutError: Nothing arrived within ``idle_timeout`` seconds.
            StreamTimeoutError: The ``total_timeout`` ran out (``phase == "total"``), or the
                transport's own timeout fired.
            StreamTransportError: The connection broke (the transport's error is the cause).
        """
        try:
            if not self._checked:
                self._checked = True
                await check_response(self.source)
            if not self._timed:
                item = await anext(self._iter)
            elif self._loop is not None or self._on_asyncio():
                # One read under the loop's timer: the time it began is stamped, nothing else.
                # The timer handle (_check) is armed by the first read after it lapsed; when it
                # finds this read past its limit it cancels the reading task, and the
                # cancellation is taken back here and raised as the timeout error (one from
                # anywhere else goes on). Inline, not a coroutine of its own: it runs per read.
                # The loop is passed to current_task, which otherwise looks it up (3.11).
                self._begin_read()
                self._task = task = asyncio.current_task(self._loop)
                try:
                    item = await anext(self._iter)
                except asyncio.CancelledError:
                    error = self._timed_out(task)
                    if error is None:
                        raise
                    raise error from None
                finally:
                    self._since = None
            elif self._watched:
                item = await self._watched_read()
            else:
                timeout, phase = self._limit()
                assert timeout is not None
                with anyio.move_on_after(timeout) as scope:
                    item = await anext(self._iter)
                if scope.cancelled_caught:
                    self._exhausted = True  # the cancellation ended the iterator
                    raise self._timeout_error(timeout, phase)
        except StopAsyncIteration:
            self._exhausted = True
            return None
        except Exception as exc:
            self._exhausted = True  # an exception out of an async generator ends it
            mapped = transport_error(exc, received=self.received)
            if mapped is None:
                raise
            raise mapped from exc
        except BaseException:
            self._exhausted = True
            raise
        if self.kind == "bytes":
            if type(item) is not bytes:
                item = reframe(item)
            self.received += len(item)
        else:
            self.received += 1
        return item  # type: ignore[no-any-return]

    async def drain(self, feed: Callable[[bytes], object], batch: int) -> None:
        """Read a byte stream to its end, handing ``feed`` the chunks joined in batches of ``batch`` bytes.

        For a reader no one waits on chunk by chunk (``aaggregate``): one loop over the source's
        iterator, no call per chunk, the same checks, timeouts and errors as :meth:`read`.
        Everything read is fed before an error is raised.

        Raises:
            ProviderHTTPError: As :meth:`read`; so do the others.
        """
        pending: list[bytes] = []
        size = 0

        def flush() -> None:
            nonlocal size
            data = pending[0] if len(pending) == 1 else b"".join(pending)
            pending.clear()
            size = 0
            feed(data)

        try:
            if self._timed and self._loop is None and not self._on_asyncio():
                # trio with timeouts: a read at a time (see read)
                while (item := await self.read()) is not None:
                    pending.append(item)  # type: ignore[arg-type]
                    size += len(item)
                    if size >= batch:
                        flush()
            else:
                await self._drain(pending, flush, batch)
        finally:
            if pending:  # what was read before a failure counts
                flush()

    async def _drain(self, pending: list[bytes], flush: Callable[[], None], batch: int) -> None:
        received = self.received
        timed = self._timed
        task = None
        clock, deadline = self._clock, self._deadline  # (both set by _on_asyncio, fixed after)
        try:
            task = await self._open_loop()
            size = 0
            async for item in self._iter:
                if type(item) is not bytes:
                    item = reframe(item)
                received += len(item)
                pending.append(item)
                size += len(item)
                if size >= batch:
                    flush()
                    size = 0
                if timed:  # the next read begins (the timer does the rest): _begin_read, inline
                    self.received = received
                    since = clock()
                    if deadline is not None and since >= deadline:
                        self._begin_read()  # raises the total timeout
                    self._since = since
                    if self._handle is None:
                        self._arm(since)
        except asyncio.CancelledError:
            self.received = received
            error = self._timed_out(task)
            if error is None:
                raise
            raise error from None
        except Exception as exc:
            self.received = received
            mapped = None if isinstance(exc, StreamTimeoutError) else transport_error(exc, received=received)
            if mapped is None:
                raise
            raise mapped from exc
        finally:
            self._exhausted = True
            self._since = None
            self.received = received

    async def _open_loop(self) -> asyncio.Task[Any] | None:
        """Begin a loop over the source's iterator (:meth:`drain`, the relay); return the timed task.

        It checks the response; when timed, it takes the task the timer cancels and begins the
        first read (:meth:`_begin_read`).
        """
        if not self._checked:
            self._checked = True
            await check_response(self.source)
        if not self._timed:
            return None
        self._task = task = asyncio.current_task()
        self._begin_read()
        return task

    def _begin_read(self) -> None:
        """Stamp the time a read begins; arm the timer if it lapsed (see :meth:`read`).

        Raises:
            StreamTimeoutError: The total deadline has passed already.
        """
        since = self._clock()
        deadline = self._deadline
        if deadline is not None and since >= deadline:
            assert self.total_timeout is not None
            raise self._timeout_error(self.total_timeout, "total")
        self._since = since
        if self._handle is None:
            self._arm(since)

    def _timed_out(self, task: asyncio.Task[Any] | None) -> StreamTimeoutError | None:
        """The timeout error a cancellation during a timed read stands for, or ``None``.

        When the timer sent it, the cancellation is taken back from the task; a cancellation
        from elsewhere (``None``) goes on, and so does one sent from elsewhere too.
        """
        fired = self._fired
        if fired is None or task is None:
            return None
        task.uncancel()
        if task.cancelling():
            return None
        return self._timeout_error(*fired)

    def _on_asyncio(self) -> bool:
        """Whether the timeouts run on the asyncio loop's timer (decided at the first timed read)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # trio (anyio's other backend)
            return False
        self._loop, self._clock = loop, _asyncio_clock(loop)
        if self.total_timeout is not None and self._deadline is None:
            self._deadline = loop.time() + self.total_timeout
        return True

    def _arm(self, since: float) -> None:
        """Arm the timer for the read that began at ``since`` (its idle limit, or the deadline)."""
        idle, deadline = self.idle_timeout, self._deadline
        wake = since + idle if idle is not None else math.inf
        if deadline is not None and deadline < wake:
            wake = deadline
        assert self._loop is not None
        # On the loop's timer heap (~120 B a pending timer, not a loop handle: ~530 under
        # uvloop), in its empty context: no copy of the context held per stream.
        self._handle = at(self._loop, wake, self._check)

    def _check(self) -> None:
        """The timer: cancel the read in progress if it passed its limit, else re-arm for it.

        Between reads it lapses (the next read arms it again), so a flowing stream costs one
        timer event per idle period, not one per read.
        """
        self._handle = None
        since, task = self._since, self._task
        if since is None or task is None or self._fired is not None:
            return
        now = self._clock()
        idle, deadline = self.idle_timeout, self._deadline
        if deadline is not None and now >= deadline:
            assert self.total_timeout is not None
            self._fired = (self.total_timeout, "total")
        elif idle is not None and now >= since + idle:
            self._fired = (idle, "idle")
        else:
            self._arm(since)
            return
        task.cancel(_CANCEL_MSG)

    async def _watched_read(self) -> Any:
        """One read under the watchdog: only the time it began is stamped (see :meth:`watch`)."""
        since = self._clock()
        deadline = self._deadline
        if deadline is not None and since >= deadline:  # the watchdog only watches reads
            assert self.total_timeout is not None
            raise self._timeout_error(self.total_timeout, "total")
        self._since = since
        try:
            return await anext(self._iter)
        finally:
            self._since = None

    async def watch(self, body: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``body`` (a loop reading from this reader) under the idle and total timeouts.

        Each read only stamps the time it began; on asyncio the loop's timer (see the module
        docstring) does the rest and ``body`` is simply awaited. On trio one watchdog task per
        stream wakes when the read in progress would pass its limit (the idle limit after its
        start, or the total deadline), at most once per idle period while data flows. The
        semantics are those of a timeout on each read: only the time spent waiting for the
        source counts, not the time ``body`` spends between reads (a slow client, for example).
        Without timeouts ``body`` is simply awaited.

        Args:
            body: What reads; it must read only from within this call.

        Returns:
            What ``body`` returned.

        Raises:
            IdleTimeoutError: A read waited longer than ``idle_timeout``.
            StreamTimeoutError: A read was still waiting at the ``total_timeout`` deadline.
        """
        if not self._timed or self._loop is not None or self._on_asyncio():
            return await body()  # (on asyncio each read is timed by the loop's timer)
        self._clock = clock = _loop_clock()
        if self.total_timeout is not None and self._deadline is None:
            self._deadline = clock() + self.total_timeout
        self._watched = True
        failure: Exception | None = None
        done = False
        result: _T | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watchdog, tg.cancel_scope)
                try:
                    result = await body()
                    done = True
                except Exception as exc:
                    failure = exc  # raised below, outside the task group (which would wrap it)
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._watched = False
        if failure is not None:
            raise failure
        if not done:
            assert self._fired is not None  # only the watchdog cancels the group's own scope
            self._exhausted = True  # the cancellation ended the iterator
            raise self._timeout_error(*self._fired)
        return result  # type: ignore[return-value]

    async def _watchdog(self, scope: anyio.CancelScope) -> None:
        """Cancel ``scope`` when the read in progress passes its limit; sleep until then."""
        clock, idle, deadline = self._clock, self.idle_timeout, self._deadline
        idle_span = math.inf if idle is None else idle
        end = math.inf if deadline is None else deadline
        while True:
            since, now = self._since, clock()
            if since is None:  # between reads: the next read begins later than now
                wake = min(now + idle_span, end if end > now else math.inf)
            else:
                limit = min(since + idle_span, end)
                if now >= limit:
                    if limit == end:
                        assert self.total_timeout is not None
                        self._fired = (self.total_timeout, "total")
                    else:
                        assert idle is not None
                        self._fired = (idle, "idle")
                    scope.cancel()
                    return
                wake = limit
            if wake == math.inf:
                await anyio.sleep_forever()
            await anyio.sleep_until(wake)

    def _timeout_error(self, timeout: float, phase: str) -> StreamTimeoutError:
        what = f"{self.received} bytes" if self.kind == "bytes" else f"{self.received} messages"
        request = request_of(self.source) if is_response(self.source) else None
        if phase == "total":
            total = self.total_timeout
            assert total is not None
            cls: type[StreamTimeoutError] = for_transport(StreamTimeoutError, self.source)
            return cls(
                f"the stream took longer than {total:g}s in all (total timeout) after {what}",
                phase="total",
                timeout=total,
                received=self.received,
                request=request,
            )
        idle = for_transport(IdleTimeoutError, self.source)
        return idle(
            f"no data for {timeout:g}s (idle timeout) after {what}; the provider stalled",
            timeout=timeout,
            received=self.received,
            request=request,
        )

    async def aclose(self) -> None:
        """Close the iterator and the source (once; shielded from cancellation)."""
        if self._closed:
            return
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._task = None
        with anyio.CancelScope(shield=True):
            if self._response_iter:
                await self._close_response()
                return
            it_close = getattr(self._iter, "aclose", None)
            if it_close is not None and self._iter is not self.source:
                await it_close()
            if self._close:
                close = getattr(self.source, "aclose", None) or getattr(self.source, "close", None)
                if close is not None:
                    result = close()
                    if hasattr(result, "__await__"):
                        await result

    async def _close_response(self) -> None:
        # httpx's ``aiter_bytes`` nests async generators and closing the outer one leaves the
        # inner ones suspended (trio then warns when they are collected). Closing the response
        # first and reading once more ends the whole chain with an error from the closed stream.
        await self.source.aclose()
        if self._exhausted:
            return
        for _ in range(_DRAIN_LIMIT):
            try:
                await anext(self._iter)
            except (StopAsyncIteration, Exception):
                return
        await self._iter.aclose()  # type: ignore[attr-defined]
