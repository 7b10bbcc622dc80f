"""The bridge's websocket server protocol: uvicorn's websockets-sansio, paused only when behind.

uvicorn's :class:`~uvicorn.protocols.websockets.websockets_sansio_impl.WebSocketsSansIOProtocol`
pauses reading the socket after *every* client message and resumes it when the app has taken
them all: right as flow control, but two changes of the event loop's watch on the socket per
message (measured: 2,000 epoll changes, ``io_uring_enter`` under uvloop, per 1,000 realtime
round trips, which a plain relay does not make). :class:`BridgeWebSocketProtocol` keeps the backpressure and pauses only when
the app falls behind: when :data:`QUEUE_DEPTH` messages wait unread in its queue, or at once
after a message of :data:`LARGE_MESSAGE` bytes; it resumes as uvicorn does, when the app has
read them all. What a session holds unread stays bounded (about 1 MiB more than uvicorn's own
bound of one message and one read of the socket).

Its queue also knows its event loop (:class:`_LoopQueue`): an :class:`asyncio.Queue` looks the
running loop up each time ``get()`` waits, and CPython 3.11's lookup calls ``getpid()`` (a
system call) to tell a forked child's loop apart.

It wraps uvicorn's methods rather than copying them (``tests/bridge/test_ws_server.py`` pins
what it relies on). Importing it raises :class:`ImportError` where uvicorn has no sans-I/O
implementation (before 0.35) or ``websockets`` is missing: ``serve`` then leaves uvicorn's
``auto``. It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["LARGE_MESSAGE", "QUEUE_DEPTH", "BridgeWebSocketProtocol"]

QUEUE_DEPTH: Final = 16
"""Client messages waiting unread in a session's queue at which reading the socket pauses.

The bridge's relay takes each message as it comes (a realtime client waits for answers; it
stops only while the upstream is slower than the client), so the queue stays near empty and
reading never pauses. 16 lets a burst of small messages (audio appends of a few KiB) through
without a pause, and bounds what a flooding client makes a session hold, with
:data:`LARGE_MESSAGE`: under 16 x 64 KiB (1 MiB), plus one message of any size up to the limit,
plus what one read of the socket brought (as uvicorn's own bound, one message and one read)."""
LARGE_MESSAGE: Final = 64 * 1024
"""A client message of this many bytes or more pauses reading at once, as uvicorn does for each."""


class _LoopQueue(asyncio.Queue[Any]):  # noqa: TID251 (uvicorn's queue: its type, its put_nowait)
    """An :class:`asyncio.Queue` bound to its event loop when made, not when first awaited.

    ``asyncio.Queue.get`` asks ``asyncio.events._get_running_loop()`` for the loop each time it
    waits, to check it is used from one loop; that lookup calls ``getpid()``. The protocol is
    made on its loop and used only there.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._bound = loop

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        return self._bound


class BridgeWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets-sansio protocol, reading paused at :data:`QUEUE_DEPTH` unread messages."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = _LoopQueue(self.loop)

    def send_receive_event_to_app(self) -> None:
        # uvicorn pauses reading here unless it already has (read_paused): tell it that it has,
        # and pause only at depth or after a large message. receive() resumes when the queue is
        # empty, as uvicorn does; past the app's close, uvicorn drops messages and keeps reading.
        if self.read_paused:
            super().send_receive_event_to_app()
            return
        frames = self.frames
        size = len(frames[0]) if len(frames) == 1 else sum(map(len, frames))
        self.read_paused = True
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = False
        if (
            (size >= LARGE_MESSAGE or self.queue.qsize() >= QUEUE_DEPTH)
            and not self.close_sent
            and not self.transport.is_closing()
        ):
            self.read_paused = True
            self.transport.pause_reading()
