"""A websocket upstream's relay on asyncio: two sides, one idle timer, and whose cancellation is whose.

The session's own task runs one side (client → upstream) and one more task the other (upstream →
client: a streamed answer's messages wake that shallow task, not the ASGI app's): an idle session
holds two tasks and one timer (of the loop's timer heap, ``io._timers``: not a loop handle), not a task
group (``websockets`` runs on asyncio only; an HTTP upstream's turns keep an anyio task group,
``_session_turns``).

Rules kept here: the idle limit is one timer that re-arms itself to the last message's
deadline (no timer, task or cancel scope per message); the first end stops the side(s) still
waiting, and the session's task takes back only the cancellation its own end asked for (as
``asyncio.timeout`` does), so a cancellation from outside goes on; a bug in either side cancels
the other and is raised.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..io._timers import later

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from ..io._timers import Timer

__all__ = ["Pump"]


class Pump:
    """Run a relay's two sides until the first ends (see the module docstring).

    Args:
        idle_left: Seconds left before the idle limit (from the last message); at zero or
            below it has ended the session itself (and stopped the pump).
    """

    __slots__ = ("_idle_left", "_loop", "_me", "_other", "_stopping", "_timer")

    def __init__(self, idle_left: Callable[[], float]) -> None:
        self._idle_left = idle_left
        self._loop = asyncio.get_running_loop()
        self._me: asyncio.Task[Any] | None = None
        self._other: asyncio.Task[None] | None = None
        self._timer: Timer | None = None
        self._stopping = False

    async def run(
        self,
        here: Coroutine[Any, Any, None],
        there: Coroutine[Any, Any, None],
        idle_timeout: float | None,
    ) -> None:
        """Run ``here`` in this task and ``there`` in one more, until both are over.

        Raises:
            Exception: What ``there`` raised (a bug); what ``here`` raised goes on as itself.
        """
        loop = self._loop
        me = self._me = asyncio.current_task(loop)
        assert me is not None
        other = self._other = loop.create_task(there)
        other.add_done_callback(self._other_done)
        if idle_timeout is not None:
            self._timer = later(loop, idle_timeout, self._check)
        try:
            await here
        except asyncio.CancelledError:
            if not self._stopping or me.uncancel() > 0:  # cancelled from outside: go on cancelling
                raise
        finally:
            self._me = None  # stop() cancels nothing more here
            if self._timer is not None:
                self._timer.cancel()
            other.cancel()  # (nothing once it is done)
        if not other.done():
            await asyncio.wait((other,))
        if not other.cancelled() and (error := other.exception()) is not None:
            raise error

    def stop(self) -> None:
        """Cancel the side(s) still waiting (not the calling one: it sees the end itself)."""
        current = asyncio.current_task(self._loop)
        other = self._other
        if other is not None and other is not current and not other.done():
            other.cancel()
        me = self._me
        if me is not None and me is not current and not self._stopping:
            self._stopping = True
            me.cancel()

    def _other_done(self, task: asyncio.Task[None]) -> None:
        me = self._me
        if me is not None and not self._stopping and not task.cancelled() and task.exception() is not None:
            self._stopping = True  # a bug: end the relay to raise it
            me.cancel()

    def _check(self) -> None:
        left = self._idle_left()
        if left > 0:
            self._timer = later(self._loop, left, self._check)
