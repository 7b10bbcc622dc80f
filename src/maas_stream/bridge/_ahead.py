"""A new stream's steps go before the frames of streams already flowing: the one rule, its one home.

Under load, one turn of the event loop brings the reads of many streams, and the loop runs what
they wake in the order they came: a new request's step (its task made by uvicorn, or woken by its
body) or an exchange woken by its answer's first bytes waited behind every frame of the batch
(200 paced streams: up to a few ms, the tail of the time to first byte a bridge adds). So a
callback that schedules such a step calls :func:`go_first` right after it; :attr:`Ahead.waiting`
then stays up until the loop has run what was scheduled before the release, the step included
(one ``call_soon``: the loop runs its ready callbacks in order). A body read woken meanwhile
(``_body.Body``) yields once: it runs after the step, in the loop's next turn; so do the reads
a turn hands over to their readers' sinks (``_body``'s hand-over: :class:`HandOvers`, one
callback per turn, after the steps put ahead, a slice of :data:`SLICE` connections at a time
with a poll of the loop's sockets between two slices, so that a step which came meanwhile goes
before the rest of the batch).

Callers: ``_aiosock.AioConnection`` (an answer's first bytes: its head, for the exchange
waiting for it, and its body's first piece, for the body's reader, ``_body.Body``: the piece
the client's first byte is made of) and ``_uvicorn_http`` (a client's read: a request's task
made by uvicorn's HTTP/1.1 protocol, or woken by its body); its readers: ``_body.Body`` and
:class:`HandOvers`. The count is one per process (the bridge runs one event loop): another
loop's streams would at worst yield once more. It costs a read an attribute check, and a step
one ``call_soon``. The release is the loop's own callback, so whatever the step does (fails,
is cancelled, never starts) the count comes down; only a loop abandoned with the callback still
queued would leave it up, and then every body read yields once more (a cost, never an error).

It must not contain protocol logic.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    import asyncio

__all__ = ["AHEAD", "Ahead", "HandOvers", "go_first", "hand_overs"]


class Ahead:
    """How many steps put ahead wait in the loop's ready queue (see the module)."""

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting = 0
        """Steps put ahead and not yet run: while any, a woken body read yields once."""

    def release(self) -> None:
        """One step put ahead has run (the loop's callback scheduled by :func:`go_first`)."""
        self.waiting -= 1


AHEAD: Final = Ahead()
"""The process's count (see the module)."""


def go_first(loop: asyncio.AbstractEventLoop) -> None:
    """Put the step just scheduled on ``loop`` before the body reads woken in the same turn.

    Call it right after scheduling the step (a future's result set, a task made): the count
    is released by a callback scheduled after it.
    """
    AHEAD.waiting += 1
    loop.call_soon(AHEAD.release)


class HandsOver(Protocol):
    """A connection with data for its reader's sink (``_aiosock.AioConnection``)."""

    def hand_over(self) -> None:
        """Give what arrived to the sink (it must not raise)."""
        ...


SLICE: Final = 16
"""Hand-overs per callback: the loop polls between two slices of a turn's batch (a new stream's
steps wait behind one slice at most, ~0.2 ms, not behind the whole batch)."""


class HandOvers:
    """The hand-overs of one loop's turn (``_body``): run by one callback, after the steps put ahead.

    A read for a body's sink adds its connection (:meth:`add`); the first of a turn schedules
    the turn's callback, which the loop runs after what was ready before it (a step put ahead
    in the same turn included) and which goes once more behind such a step when one still
    waits. Reads that come after it ran form the next turn's batch, with a callback of their
    own: each read yields to the steps put ahead at most once, as a woken body read does, and a
    turn costs one callback, not one per read.
    """

    __slots__ = ("_loop", "_waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: list[HandsOver] = []

    def add(self, conn: HandsOver) -> None:
        """Hand over ``conn``'s data in the turn's callback (once: the caller marks it added)."""
        waiting = self._waiting
        if not waiting:
            self._loop.call_soon(self._run, waiting)
        waiting.append(conn)

    def _run(self, batch: list[HandsOver]) -> None:
        self._waiting = []  # (what reads add from now on is the next batch)
        self._go(batch, 0)

    def _go(self, batch: list[HandsOver], start: int) -> None:
        if AHEAD.waiting:
            self._loop.call_soon(self._hand, batch, start)  # behind the steps put ahead (once)
        else:
            self._hand(batch, start)

    def _hand(self, batch: list[HandsOver], start: int) -> None:
        end = start + SLICE
        for i in range(start, min(end, len(batch))):
            try:
                batch[i].hand_over()
            except BaseException:
                for rest in batch[i + 1 :]:  # (not a sink's error: it must not raise)
                    self.add(rest)
                raise
        if end < len(batch):
            # The rest in a callback of its own: the loop polls its sockets before it, so a new
            # stream's step that came meanwhile goes first (_go), not behind the whole batch.
            self._loop.call_soon(self._go, batch, end)


_HAND_OVERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HandOvers] = weakref.WeakKeyDictionary()


def hand_overs(loop: asyncio.AbstractEventLoop) -> HandOvers:
    """``loop``'s :class:`HandOvers` (made at the first call)."""
    found = _HAND_OVERS.get(loop)
    if found is None:
        found = _HAND_OVERS[loop] = HandOvers(loop)
    return found
