"""A new stream's steps go before the frames of streams already flowing: the one rule, its one home.

Under load, one turn of the event loop brings the reads of many streams, and the loop runs what
they wake in the order they came: a new request's step (its task made by uvicorn, or woken by its
body) or an exchange woken by its answer's first bytes waited behind every frame of the batch
(200 paced streams: up to a few ms, the tail of the time to first byte a bridge adds). So a
callback that schedules such a step calls :func:`go_first` right after it; :attr:`Ahead.waiting`
then stays up until the loop has run what was scheduled before the release, the step included
(one ``call_soon``: the loop runs its ready callbacks in order). A body read woken meanwhile
(``_body.Body``) yields once: it runs after the step, in the loop's next turn; and a read that
comes meanwhile is not converted in its socket's callback (``_body``'s hand-over) but wakes its
reader, who yields so.

Callers: ``_aiosock.AioConnection`` (an answer's first bytes, for the exchange waiting for its
head) and ``_uvicorn_http`` (a client's read: a request's task made by uvicorn's HTTP/1.1
protocol, or woken by its body); its readers: ``_body.Body`` and ``_aiosock.AioConnection``
(the hand-over). The count is one per process (the bridge runs one event loop): another loop's
streams would at worst yield once more. It costs a read an attribute check, and a step one
``call_soon``. The release is the loop's own callback, so whatever the step does
(fails, is cancelled, never starts) the count comes down; only a loop abandoned with the
callback still queued would leave it up, and then every body read yields once more (a cost,
never an error).

It must not contain protocol logic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import asyncio

__all__ = ["AHEAD", "Ahead", "go_first"]


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
