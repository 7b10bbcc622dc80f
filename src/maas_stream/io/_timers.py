"""The library's long, rarely firing timers: one heap per event loop, one loop timer for all of it.

A stream's idle and total limits (``_source.AsyncReader``: one timer per idle period, not per
read) and an idle realtime session's timers (the relay's idle limit, ``bridge._pump``; the
upstream connection's keepalive and close timeout, ``bridge._ws_client``; the client
connection's keepalive, ``bridge._ws_lean``) almost never fire. Each was a loop ``TimerHandle``: ~540 bytes under
uvloop (a libuv handle each, 6 blocks), ~200 on asyncio's loop. Here a timer is a small
:class:`Timer` (``__slots__``: its deadline, its order of arrival, its callback) in a ``heapq``
kept per loop (:class:`_Heap`), and the loop holds ONE ``TimerHandle``, armed for the earliest
pending deadline: re-armed only when a new timer is due before it, or when it fires. A pending
timer costs ~120 bytes (tracemalloc, either loop: the object, its deadline's float, its order's
int, a slot in the heap), its callback's bound method aside (which ``call_later`` holds too).

Kept as ``loop.call_later`` does it: a callback never runs early (only once ``loop.time()`` has
reached its deadline: the loop's own timer may fire up to its clock's resolution early, uvloop's
rounds to milliseconds), timers run in deadline order, first come first run at equal deadlines;
a cancelled timer lets go of its callback at once (a closed session is not kept alive until its
deadline); an exception in a callback goes to the loop's exception handler (as ``Handle._run``
does) and the other due timers still run. Cancelled timers stay in the heap until they come
first or until more than half of the heap is cancelled, then it is rebuilt (asyncio's rule in
``BaseEventLoop._run_once``); with nothing pending the loop's timer is cancelled.

Not kept: the caller's ``contextvars`` context (each ``call_later`` copies it: a callback here
runs in the heap's own empty context, like ``io._source``'s timers; none reads a context
variable), ``*args`` (pass a bound method) and the loop's debug checks. Relied on: the loop's
``time()``, ``call_at(..., context=)`` and ``call_exception_handler()`` (asyncio's loop and
uvloop alike), and one thread per loop (the heap is not locked).
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import weakref
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

__all__ = ["Timer", "at", "later"]

COMPACT_SIZE: Final = 100
"""Heap size past which cancelled timers are swept out together (asyncio's ``_MIN_SCHEDULED_TIMER_HANDLES``)."""
COMPACT_FRACTION: Final = 0.5
"""Share of cancelled timers past which the heap is rebuilt (``_MIN_CANCELLED_TIMER_HANDLES_FRACTION``)."""

_INF: Final = float("inf")


class Timer:
    """One pending call (:func:`later`): what a ``TimerHandle``'s owner asks of it, ``cancel()``."""

    __slots__ = ("_callback", "_heap", "_seq", "when")

    def __init__(self, when: float, seq: int, callback: Callable[[], object], heap: _Heap) -> None:
        self.when = when
        """The loop time at or after which the callback runs."""
        self._seq = seq
        self._callback: Callable[[], object] | None = callback  # None: cancelled or run
        self._heap = heap

    def __lt__(self, other: Timer) -> bool:
        when = self.when
        return when < other.when or (when == other.when and self._seq < other._seq)

    def cancel(self) -> None:
        """Do not run the callback (a no-op once run or cancelled); the callback is let go at once."""
        if self._callback is not None:
            self._callback = None
            self._heap.cancelled(self)

    def cancelled(self) -> bool:
        """``True`` once cancelled or run (as the callback is let go either way)."""
        return self._callback is None

    def __repr__(self) -> str:
        return f"<Timer when={self.when} {self._callback!r}>"


class _Heap:
    """One loop's pending timers and the loop timer armed for the earliest (see the module docstring)."""

    __slots__ = ("_armed", "_cancelled", "_context", "_handle", "_loop", "_seq", "timers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)  # (the loop keeps its heap, not the other way round)
        self.timers: list[Timer] = []
        """The heap: pending timers and cancelled ones not swept out yet."""
        self._cancelled = 0  # cancelled timers still in the heap
        self._seq = itertools.count()  # order of arrival, for equal deadlines
        self._handle: asyncio.TimerHandle | None = None  # the loop's timer
        self._armed = _INF  # its deadline (-inf while firing: nothing arms then)
        self._context = contextvars.Context()

    def at(self, when: float, callback: Callable[[], object]) -> Timer:
        timer = Timer(when, next(self._seq), callback, self)
        heapq.heappush(self.timers, timer)
        if when < self._armed:
            self._arm(when)
        return timer

    def _arm(self, when: float) -> None:
        handle = self._handle
        if handle is not None:
            handle.cancel()
        loop = self._loop()
        assert loop is not None  # (a timer is armed from the loop's own thread while it runs)
        self._handle = loop.call_at(when, self._fire, context=self._context)
        self._armed = when

    def _disarm(self) -> None:
        handle = self._handle
        if handle is not None:
            self._handle = None
            handle.cancel()
        self._armed = _INF

    def cancelled(self, timer: Timer) -> None:
        """Count ``timer`` (in the heap) as cancelled; sweep when nothing is pending or most are cancelled."""
        timers = self.timers
        self._cancelled += 1
        if self._cancelled == len(timers):  # nothing pending
            timers.clear()
            self._cancelled = 0
            if self._armed != -_INF:
                self._disarm()
        elif len(timers) > COMPACT_SIZE and self._cancelled > COMPACT_FRACTION * len(timers):
            timers[:] = [t for t in timers if t._callback is not None]
            heapq.heapify(timers)
            self._cancelled = 0
        elif timers[0] is timer:
            self._drop_cancelled()

    def _drop_cancelled(self) -> None:
        """Pop the cancelled timers at the top of the heap."""
        timers = self.timers
        while timers and timers[0]._callback is None:
            heapq.heappop(timers)
            self._cancelled -= 1

    def _fire(self) -> None:
        """The loop's timer: run every timer due (not those added meanwhile), then re-arm for the next."""
        self._handle = None
        self._armed = -_INF
        loop, timers = self._loop(), self.timers
        assert loop is not None  # (the loop is calling)
        now = loop.time()
        last = next(self._seq)  # timers added by the callbacks run at the next firing at the earliest
        try:
            while timers and (timer := timers[0]).when <= now and timer._seq < last:
                heapq.heappop(timers)
                callback = timer._callback
                if callback is None:
                    self._cancelled -= 1
                    continue
                timer._callback = None
                try:
                    callback()
                except (SystemExit, KeyboardInterrupt):
                    raise
                except BaseException as exc:  # as asyncio's Handle._run
                    message = f"Exception in callback {callback!r}"
                    loop.call_exception_handler({"message": message, "exception": exc})
        finally:
            self._armed = _INF
            self._drop_cancelled()
            if timers:
                self._arm(timers[0].when)


_HEAPS: dict[int, _Heap] = {}
"""Each loop's heap, by the loop's ``id``, for the loop's life: made once (a stream's timer comes and
goes with each request: its heap does not), dropped when the loop is collected (a finalizer: the
``id`` is not reused before). A heap holds its loop weakly, so this dictionary keeps no loop alive."""


def later(loop: asyncio.AbstractEventLoop, delay: float, callback: Callable[[], object]) -> Timer:
    """Call ``callback()`` on ``loop`` in ``delay`` seconds (as ``loop.call_later``, see the module docstring).

    ``loop`` is the running loop (the caller's own: not looked up here, a system call per lookup
    in CPython 3.11).
    """
    return at(loop, loop.time() + delay, callback)


def at(loop: asyncio.AbstractEventLoop, when: float, callback: Callable[[], object]) -> Timer:
    """Call ``callback()`` on ``loop`` once its time reaches ``when`` (as ``loop.call_at``; see :func:`later`)."""
    heap = _HEAPS.get(key := id(loop))
    if heap is None:
        heap = _HEAPS[key] = _Heap(loop)
        weakref.finalize(loop, _HEAPS.pop, key, None)
    return heap.at(when, callback)
