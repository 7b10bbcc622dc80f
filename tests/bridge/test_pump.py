"""The relay's idle timer (``_pump.Pump``): one timer of the bridge's heap, re-armed to the last message's deadline.

The sessions' idle limit end to end is ``test_realtime_bridge``'s; here the timer itself: what it
is, when it checks again, and that a finished relay is not held by it until its deadline.
"""

from __future__ import annotations

import asyncio
import gc
import weakref

import anyio
import pytest

from maas_stream.bridge._pump import Pump
from maas_stream.io._timers import Timer

pytestmark = pytest.mark.anyio


async def test_the_idle_timer_checks_again_at_the_last_messages_deadline() -> None:
    checks: list[float] = []
    lefts = [0.02, 0.0]  # a message came meanwhile: 0.02 s more; then nothing: the limit
    timers: list[Timer | None] = []

    def idle_left() -> float:
        timers.append(pump._timer)
        left = lefts[len(checks)]
        checks.append(loop.time())
        if left <= 0:
            pump.stop()  # (as the session ends itself at the limit)
        return left

    loop = asyncio.get_running_loop()
    pump = Pump(idle_left)
    start = loop.time()
    with anyio.fail_after(5):
        await pump.run(anyio.sleep_forever(), anyio.sleep_forever(), 0.01)
    assert len(checks) == 2
    assert checks[0] - start >= 0.01
    assert checks[1] - checks[0] >= 0.02
    first, second = timers
    assert isinstance(first, Timer)
    assert isinstance(second, Timer)
    assert first is not second  # re-armed, not repeating
    assert second.cancelled()


async def test_a_finished_relay_is_not_held_by_its_idle_timer() -> None:
    async def done() -> None:
        pass

    class Session:
        def idle_left(self) -> float:
            return 60.0

    session = Session()
    gone = weakref.ref(session)  # (the session the relay's timer would hold, through the relay)
    pump = Pump(session.idle_left)
    await pump.run(done(), anyio.sleep_forever(), 60.0)
    timer = pump._timer
    assert isinstance(timer, Timer)
    assert timer.cancelled()
    del pump, session
    gc.collect()
    assert gone() is None
    assert timer._heap.timers == []  # (and the loop's timer dropped: nothing pending)
    assert timer._heap._handle is None
