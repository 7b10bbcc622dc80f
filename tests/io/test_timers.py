"""The loop timer heap (``io._timers``): ``loop.call_later``'s semantics on one loop timer.

Behaviour is checked on asyncio's loop and on uvloop with short real delays; what the heap asks of
the loop (which deadline its one timer is armed for, when it is re-armed or dropped, a loop timer
that fires early) is checked against :class:`FakeLoop`, a clock moved by hand.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from maas_stream.io import _timers
from maas_stream.io._timers import COMPACT_SIZE, Timer, later

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.anyio

pytest.importorskip("uvloop")


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    return request.param


def heap_of(loop: asyncio.AbstractEventLoop) -> Any:
    """The loop's heap (made by the first :func:`later` on it)."""
    return _timers._HEAPS[id(loop)]


class Owner:
    """A callback's owner, to see whether a timer still holds it."""

    def __init__(self, ran: list[str], name: str) -> None:
        self.ran, self.name = ran, name

    def run(self) -> None:
        self.ran.append(self.name)


async def test_the_tests_run_on_asyncio_and_on_uvloop(anyio_backend: Any) -> None:
    loop_type = type(asyncio.get_running_loop()).__module__
    assert loop_type.startswith("uvloop") is bool(anyio_backend[1])


async def test_timers_run_in_deadline_order_and_never_early() -> None:
    loop = asyncio.get_running_loop()
    ran: list[tuple[str, bool]] = []
    timers: dict[str, Timer] = {}
    done = anyio.Event()

    def record(name: str) -> Callable[[], None]:
        def callback() -> None:
            ran.append((name, loop.time() >= timers[name].when))
            if len(ran) == 4:
                done.set()

        return callback

    for name, delay in [("c", 0.03), ("a", 0.01), ("d", 0.04), ("x", 0.02), ("b", 0.02), ("a2", 0.01)]:
        timers[name] = later(loop, delay, record(name))
    timers["x"].cancel()
    timers["d"].cancel()
    with anyio.fail_after(5):
        await done.wait()
    assert ran == [("a", True), ("a2", True), ("b", True), ("c", True)]
    assert heap_of(loop).timers == []


async def test_a_cancelled_timer_lets_go_of_its_callback_at_once() -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    owner = Owner(ran, "owner")
    gone = weakref.ref(owner)
    timer = later(loop, 60, owner.run)
    keep = later(loop, 60, Owner(ran, "keep").run)  # the timer is not the only one pending
    del owner
    gc.collect()
    assert gone() is not None  # held by the pending timer
    timer.cancel()
    assert gone() is None  # no collection needed: nothing holds it any more
    assert timer.cancelled()
    timer.cancel()  # a no-op the second time
    keep.cancel()
    await anyio.sleep(0.02)
    assert ran == []


async def test_an_exception_goes_to_the_loops_handler_and_later_timers_still_run() -> None:
    loop = asyncio.get_running_loop()
    contexts: list[dict[str, Any]] = []
    ran: list[str] = []
    done = anyio.Event()
    error = ValueError("boom")

    def boom() -> None:
        raise error

    def after() -> None:
        ran.append("after")
        done.set()

    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: contexts.append(context))
    try:
        later(loop, 0.01, boom)
        later(loop, 0.01, Owner(ran, "same deadline").run)
        later(loop, 0.02, after)
        with anyio.fail_after(5):
            await done.wait()
    finally:
        loop.set_exception_handler(previous)
    assert ran == ["same deadline", "after"]
    assert [c["exception"] for c in contexts] == [error]
    assert contexts[0]["message"].startswith("Exception in callback ")
    assert "boom" in contexts[0]["message"]


async def test_the_loop_timer_is_armed_for_the_earliest_and_dropped_when_none_is_pending() -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    late = later(loop, 60, Owner(ran, "late").run)
    heap = heap_of(loop)
    first = heap._handle
    assert first is not None
    assert first.when() == pytest.approx(late.when, abs=0.002)
    later_still = later(loop, 120, Owner(ran, "later still").run)
    assert heap._handle is first  # not earlier: not re-armed
    soon = later(loop, 0.01, Owner(ran, "soon").run)
    assert heap._handle is not first
    assert first.cancelled()
    assert heap._handle.when() == pytest.approx(soon.when, abs=0.002)
    await anyio.sleep(0.05)
    assert ran == ["soon"]
    assert heap._handle.when() == pytest.approx(late.when, abs=0.002)  # re-armed when it fired
    late.cancel()
    assert heap._handle.when() == pytest.approx(late.when, abs=0.002)  # (the next firing re-arms)
    armed = heap._handle
    later_still.cancel()
    assert (heap._handle, heap.timers) == (None, [])
    assert armed.cancelled()


async def test_heaps_are_per_loop_made_once_and_keep_no_loop_alive() -> None:
    loop = asyncio.get_running_loop()
    timer = later(loop, 60, Owner([], "x").run)
    heap = heap_of(loop)
    assert heap._loop() is loop
    timer.cancel()
    later(loop, 60, Owner([], "y").run).cancel()
    assert heap_of(loop) is heap  # one heap for the loop's life, not one per timer's
    other = asyncio.new_event_loop()
    try:
        there = later(other, 60, Owner([], "y").run)
        here = later(loop, 60, Owner([], "z").run)
        assert heap_of(other).timers == [there]
        assert heap_of(loop).timers == [here]
        there.cancel()
        here.cancel()
    finally:
        other.close()
    key, gone = id(other), weakref.ref(other)
    del other, there
    gc.collect()
    assert gone() is None  # its heap did not keep it
    assert key not in _timers._HEAPS  # and its heap went with it


async def test_more_than_half_cancelled_sweeps_the_heap() -> None:
    loop = asyncio.get_running_loop()
    size = COMPACT_SIZE + 50
    timers = [later(loop, 60 + n, Owner([], str(n)).run) for n in range(size)]
    heap = heap_of(loop)
    for timer in reversed(timers[size // 2 :]):  # half: the latest, none at the top
        timer.cancel()
    assert (len(heap.timers), heap._cancelled) == (size, size // 2)
    timers[size // 2 - 1].cancel()  # one more than half
    assert (len(heap.timers), heap._cancelled) == (size // 2 - 1, 0)
    assert sorted(heap.timers) == timers[: size // 2 - 1]
    assert heap.timers[0] is timers[0]
    for timer in timers:
        timer.cancel()
    assert heap.timers == []


async def test_a_cancelled_timer_at_the_top_is_popped() -> None:
    loop = asyncio.get_running_loop()
    timers = [later(loop, 60 + n, Owner([], str(n)).run) for n in range(3)]
    heap = heap_of(loop)
    timers[1].cancel()  # not at the top: stays
    assert (len(heap.timers), heap._cancelled) == (3, 1)
    timers[0].cancel()  # at the top: popped, with the cancelled one under it
    assert (heap.timers, heap._cancelled) == ([timers[2]], 0)
    timers[2].cancel()


class FakeHandle:
    def __init__(
        self, when: float, callback: Callable[[], None], context: contextvars.Context | None
    ) -> None:
        self.when, self.callback, self.context, self.cancelled = when, callback, context, False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """What the heap asks of a loop, on a clock moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.handles: list[FakeHandle] = []
        self.errors: list[dict[str, Any]] = []

    def time(self) -> float:
        return self.now

    def call_at(
        self, when: float, callback: Callable[[], None], *, context: contextvars.Context | None = None
    ) -> Any:
        self.handles.append(FakeHandle(when, callback, context))
        return self.handles[-1]

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self.errors.append(context)

    @property
    def armed(self) -> FakeHandle | None:
        live = [h for h in self.handles if not h.cancelled]
        assert len(live) <= 1
        return live[0] if live else None

    def fire(self, at: float) -> None:
        """Move the clock to ``at`` and run the armed timer (as a loop may: early, at ``at`` < its deadline)."""
        handle = self.armed
        assert handle is not None
        self.now = at
        handle.cancelled = True  # (run once)
        handle.callback()


def test_equal_deadlines_run_first_come_first_run() -> None:
    loop: Any = FakeLoop()
    ran: list[str] = []
    names = ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"]
    for name in names:
        later(loop, 5, Owner(ran, name).run)
    later(loop, 4, Owner(ran, "first").run)
    loop.fire(105)
    assert ran == ["first", *names]
    assert loop.armed is None


def test_a_loop_timer_firing_early_runs_nothing_and_is_armed_again() -> None:
    loop: Any = FakeLoop()
    ran: list[str] = []
    timer = later(loop, 5, Owner(ran, "due").run)
    assert loop.armed.when == timer.when == 105
    loop.fire(105 - 1e-9)  # asyncio runs timers up to its clock's resolution early
    assert ran == []
    assert loop.armed.when == 105
    loop.fire(105)
    assert ran == ["due"]
    assert loop.armed is None


def test_timers_added_by_a_callback_run_at_the_next_firing() -> None:
    loop: Any = FakeLoop()
    ran: list[str] = []

    def again() -> None:
        ran.append("again")
        if len(ran) < 5:  # (a bound, should the heap run it in the same pass)
            later(loop, 0, again)  # due at once, but not in this pass: no endless firing

    later(loop, 1, again)
    later(loop, 1, Owner(ran, "tie").run)
    loop.fire(101)
    assert ran == ["again", "tie"]
    assert loop.armed.when == 101
    loop.fire(101)
    assert ran == ["again", "tie", "again"]
    assert len(loop.handles) == 3  # armed once per firing, not per timer added


def test_callbacks_run_in_the_heaps_own_empty_context() -> None:
    loop: Any = FakeLoop()
    later(loop, 1, lambda: None)
    context = loop.armed.context
    assert isinstance(context, contextvars.Context)
    assert len(context) == 0


def test_a_callback_may_cancel_the_other_due_timers() -> None:
    loop: Any = FakeLoop()
    ran: list[str] = []
    victims: list[Timer] = []

    def cancel_them() -> None:
        ran.append("canceller")
        for timer in victims:
            timer.cancel()

    later(loop, 1, cancel_them)
    victims.extend(later(loop, 1, Owner(ran, f"v{n}").run) for n in range(3))
    loop.fire(101)
    assert ran == ["canceller"]
    assert loop.armed is None
    assert heap_of(loop).timers == []


def test_an_exception_is_handled_and_the_next_timers_run_on_the_fake_loop() -> None:
    loop: Any = FakeLoop()
    ran: list[str] = []

    def boom() -> None:
        raise RuntimeError("bad")

    later(loop, 1, boom)
    later(loop, 1, Owner(ran, "next").run)
    later(loop, 2, Owner(ran, "later").run)
    loop.fire(101)
    assert ran == ["next"]
    assert [type(e["exception"]) for e in loop.errors] == [RuntimeError]
    assert loop.armed.when == 102


def test_keyboard_interrupt_goes_on_and_the_heap_stays_armed() -> None:
    loop: Any = FakeLoop()
    ran: list[str] = []

    def interrupt() -> None:
        raise KeyboardInterrupt

    later(loop, 1, interrupt)
    later(loop, 1, Owner(ran, "next").run)
    with pytest.raises(KeyboardInterrupt):
        loop.fire(101)
    assert loop.errors == []
    assert loop.armed.when == 101
    loop.fire(101)
    assert ran == ["next"]


def test_cancelling_a_timer_that_ran_changes_nothing() -> None:
    # (uvicorn and the relay cancel their timers at the end, run or not.)
    loop: Any = FakeLoop()
    ran: list[str] = []
    done = later(loop, 1, Owner(ran, "done").run)
    pending = later(loop, 2, Owner(ran, "pending").run)
    loop.fire(101)
    assert done.cancelled()  # its callback let go once run
    done.cancel()
    assert heap_of(loop).timers == [pending]
    assert loop.armed.when == 102
    loop.fire(102)
    assert ran == ["done", "pending"]
