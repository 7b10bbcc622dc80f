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

Its queue (:class:`_Inbox`) is a deque and one waiter bound to its loop, not an
:class:`asyncio.Queue` (whose ``get()`` looks the running loop up each time it waits, and CPython
3.11's lookup calls ``getpid()``, a system call; and which holds an event and two more deques per
connection).

The bridge's own session (:class:`~maas_stream.bridge._ws.ClientSocket`, when uvicorn hands it
this protocol's ``receive`` and ``send`` unwrapped) takes a direct path: :meth:`~BridgeWebSocketProtocol.go_direct`
makes the protocol queue each client message as its ``str`` or ``bytes`` (not an ASGI dict), the
socket takes them with :meth:`~BridgeWebSocketProtocol.take` and awaits :meth:`_Inbox.wait` when
there are none (no ``receive()`` and ``Queue.get()`` coroutines per message), and sends with
:meth:`~BridgeWebSocketProtocol.send_data` (no ASGI dict, no ``send()`` coroutine). The rules
stay uvicorn's: what it queues otherwise (the disconnects) are its dicts; a send it would refuse
or wait for (not writable, not open, closing) goes through its ``send()``.

It wraps uvicorn's methods rather than copying them (``tests/bridge/test_ws_server.py`` pins
what it relies on). Importing it raises :class:`ImportError` where uvicorn has no sans-I/O
implementation (before 0.35) or ``websockets`` is missing: ``serve`` then leaves uvicorn's
``auto``. It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState

from ._ws_parser import drop_handshake

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


class _Waiters:
    """One future that every task waiting on the object awaits, made on its loop when first awaited."""

    __slots__ = ("_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None

    def _future(self) -> asyncio.Future[None]:
        """A future done at the next :meth:`_wake` (the one already waiting, if any)."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = self._loop.create_future()
        return waiter

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)


class _Inbox(_Waiters):
    """The protocol's queue: what uvicorn asks of an :class:`asyncio.Queue`, for one loop.

    ``put_nowait`` wakes the waiter; ``get()`` waits for a message (any number of tasks may wait:
    all are woken, one takes it, the others wait again). It never refuses a message: the
    protocol bounds it by pausing reading (and uvicorn's own queue is unbounded too). The
    messages are a list and the index of the first (an empty list is 56 bytes, a deque ~600).
    """

    __slots__ = ("_first", "_items")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._items: list[Any] = []
        self._first = 0

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        self._wake()

    wait = _Waiters._future
    """A future done when a message is put."""

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items) - self._first

    def get_nowait(self) -> Any:
        """The first message (:class:`asyncio.QueueEmpty` when there is none)."""
        items, first = self._items, self._first
        if not items:
            raise asyncio.QueueEmpty
        item = items[first]
        if first + 1 == len(items):
            items.clear()
            self._first = 0
        else:
            items[first] = None
            self._first = first + 1
        return item

    async def get(self) -> Any:
        while not self._items:
            await self.wait()
        return self.get_nowait()


class _Flag(_Waiters):
    """What uvicorn asks of its ``writable`` :class:`asyncio.Event`, without its deque of waiters (~600 bytes)."""

    __slots__ = ("_set",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        self._wake()

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        """Return once set (as :meth:`asyncio.Event.wait`: at once when set, else when next set)."""
        if not self._set:
            await self._future()
        return True


class BridgeWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets-sansio protocol, reading paused at :data:`QUEUE_DEPTH` unread messages."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox = _Inbox(self.loop)
        self.queue = self.inbox  # type: ignore[assignment]  # uvicorn's queue (what it asks of one)
        self.writable = _Flag(self.loop)  # type: ignore[assignment]  # (set, as uvicorn's)
        self.direct = False
        """Client messages are queued as their ``str`` or ``bytes`` (:meth:`go_direct`)."""
        self.held = True
        """The frame parser still holds the handshake's request (``_ws_parser``)."""

    def go_direct(self) -> None:
        """Queue client messages from now on as they are (the bridge's session takes them: :meth:`take`)."""
        self.direct = True

    def take(self) -> Any:
        """The next queued message (``None`` when there is none), resuming reading as ``receive()`` does."""
        queue = self.inbox
        if queue.empty():
            return None
        message = queue.get_nowait()
        if self.read_paused and queue.empty():
            self.read_paused = False
            self.transport.resume_reading()
        return message

    async def receive(self) -> Any:  # uvicorn's, without a coroutine more per message
        while (message := self.take()) is None:
            await self.inbox.wait()
        return message

    async def send(self, message: Any) -> None:
        await super().send(message)
        if self.handshake_complete and self.request is not None:
            # The handshake's request and answer are not read again (~3.5 KiB), nor is the
            # request the parser's frame keeps (~2.5 KiB: now, or after a read if a frame is
            # half read).
            self.request = self.response = None  # type: ignore[assignment]
            self.held = not drop_handshake(self.conn)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.held and self.request is None:
            self.held = not drop_handshake(self.conn)

    def send_data(self, data: str | bytes) -> bool:
        """Send one message as ``send()`` would a ``websocket.send``; ``False`` when that must go through ``send()``.

        ``send()`` would wait (not writable), raise (disconnected) or refuse (the handshake not
        done, an HTTP answer, the close sent): those cases are left to it.

        Raises:
            ClientDisconnected: The connection is closing (as ``send()`` raises).
        """
        if (
            self.disconnected
            or self.close_sent
            or not self.handshake_complete
            or self.initial_response is not None
            or not self.writable.is_set()
        ):
            return False
        conn = self.conn
        try:
            if isinstance(data, str):
                conn.send_text(data.encode())
            else:
                conn.send_binary(data)
        except InvalidState:
            raise ClientDisconnected from None
        self.transport.write(b"".join(conn.data_to_send()))
        return True

    def send_receive_event_to_app(self) -> None:
        # uvicorn pauses reading here unless it already has (read_paused): tell it that it has,
        # and pause only at depth or after a large message. receive() resumes when the queue is
        # empty, as uvicorn does; past the app's close, uvicorn drops messages and keeps reading.
        # Direct, the message is queued as it is (uvicorn's way when it is not valid UTF-8 text).
        frames = self.frames
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        if (
            self.direct
            and not self.close_sent
            and (message := _as_sent(data, self.curr_msg_data_type)) is not None
        ):
            self.frames = []
            self.inbox.put_nowait(message)
        elif self.read_paused:
            super().send_receive_event_to_app()
            return
        else:
            self.read_paused = True
            try:
                super().send_receive_event_to_app()
            finally:
                self.read_paused = False
        if (
            not self.read_paused
            and (len(data) >= LARGE_MESSAGE or self.queue.qsize() >= QUEUE_DEPTH)
            and not self.close_sent
            and not self.transport.is_closing()
        ):
            self.read_paused = True
            self.transport.pause_reading()


def _as_sent(data: bytes, kind: str) -> str | bytes | None:
    """A client message as the session takes it: text decoded, bytes as they are (``None``: not UTF-8)."""
    if kind != "text":
        return data
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None
