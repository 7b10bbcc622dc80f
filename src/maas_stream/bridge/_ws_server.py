"""The bridge's websocket server protocol: uvicorn's websockets-sansio, paused only when behind.

uvicorn's :class:`~uvicorn.protocols.websockets.websockets_sansio_impl.WebSocketsSansIOProtocol`
pauses reading the socket after *every* client message and resumes it when the app has taken
them all: right as flow control, but two changes of the event loop's watch on the socket per
message (measured: 2,000 ``epoll_ctl`` per 1,000 realtime round trips, which a plain relay
does not make). :class:`BridgeWebSocketProtocol` keeps the backpressure and pauses only when
the app falls behind: when :data:`QUEUE_DEPTH` messages wait unread in its queue; it resumes as
uvicorn does, when the app has read them all. What a session holds unread stays bounded: the
queue depth times the message limit (``ws_max_size``), plus what one read of the socket had
already brought.

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

__all__ = ["QUEUE_DEPTH", "BridgeWebSocketProtocol"]

QUEUE_DEPTH: Final = 16
"""Client messages waiting unread in a session's queue at which reading the socket pauses.

The bridge's relay takes each message as it comes (a realtime client waits for answers), so
the queue stays near empty and reading never pauses; a client that floods is paused with 16
messages unread: at the default 16 MiB message limit, at most 256 MiB a session held (a burst
of 16 small audio appends costs a few KiB)."""


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
        # and pause only at depth. receive() resumes when the queue is empty, as uvicorn does.
        if self.read_paused:
            super().send_receive_event_to_app()
            return
        self.read_paused = True
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = False
        if self.queue.qsize() >= QUEUE_DEPTH and not self.transport.is_closing():
            self.read_paused = True
            self.transport.pause_reading()
