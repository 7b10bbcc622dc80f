"""The bridge's ASGI plumbing: what one request may send, and the few ways it is read and answered.

:class:`Limits` (body size and time, streams in flight), reading the body within them, reading
only the ``model`` of a body, watching for the client's hang-up, and sending a JSON or empty
answer. ``_app`` decides what to answer; this module only moves bytes and checks sizes.

It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from ..io._connect import deadline
from ._request import Rejected

if TYPE_CHECKING:
    import anyio

__all__ = [
    "MAX_BODY",
    "Limits",
    "Receive",
    "Scope",
    "Send",
    "decode_body",
    "model_of",
    "read_body",
    "request_headers",
    "send_empty",
    "send_json",
    "HangUp",
    "watch_disconnect",
]

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]

MAX_BODY = 32 * 1024 * 1024
"""The largest request body accepted by default (bytes)."""


@dataclass(frozen=True)
class Limits:
    """What one bridge process accepts (per process: several workers each have their own)."""

    max_body: int = MAX_BODY
    """The largest request body, in bytes (413 beyond, told by ``content-length`` or while reading)."""
    body_timeout: float | None = 60.0
    """Seconds allowed to receive the whole request body (408 beyond: a slow sender)."""
    max_streams: int | None = 1000
    """Upstream exchanges in flight at once, streaming or not (``None``: no limit); one more is
    answered 503 with ``retry-after`` in the client's error shape."""
    retry_after: int = 1
    """The ``retry-after`` seconds sent with a 503 over :attr:`max_streams`."""

    def __post_init__(self) -> None:
        if self.max_body < 0:
            raise ValueError(f"max_body must not be negative, not {self.max_body}")
        if self.max_streams is not None and self.max_streams < 1:
            raise ValueError(f"max_streams must be at least 1 or None, not {self.max_streams}")


async def watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` when the client hangs up (``http.disconnect``)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


class HangUp:
    """Cancels the request's task when the client hangs up: ``receive`` stepped from callbacks.

    On asyncio the pending ``receive()`` coroutine is driven by the done-callback of the future
    it waits on, as a task would drive it, but with no task, no cancel scope and no watcher
    coroutine of its own: per idle stream only this slotted object and the server's
    ``receive`` frame. An ``http.disconnect`` (or a ``receive`` that fails: a server that
    cannot tell is a client gone) cancels the task that started it (:attr:`fired`); the task
    takes that cancellation back (``uncancel``). Any other message is passed over and
    ``receive`` awaited again. :meth:`close` stops it. Use :meth:`start`, which returns
    ``None`` off asyncio (trio: :func:`watch_disconnect` in a task group).
    """

    __slots__ = ("_coro", "_receive", "_waiting", "fired", "task")

    def __init__(self, receive: Receive, task: asyncio.Task[Any]) -> None:
        self._receive = receive
        self.task = task
        self.fired = False
        self._waiting: asyncio.Future[Any] | None = None
        self._coro: Coroutine[Any, Any, Message] | None = receive()  # type: ignore[assignment]
        self()

    @classmethod
    def start(cls, receive: Receive) -> HangUp | None:
        """Watch ``receive`` for the hang-up of the current task's client; ``None`` off asyncio."""
        try:
            task = asyncio.current_task()
        except RuntimeError:  # trio
            return None
        return None if task is None else cls(receive, task)

    def __call__(self, done: asyncio.Future[Any] | None = None) -> None:
        """Step the pending ``receive()``.

        The callback of the future it waits on is the object itself: no bound method is made
        and held per wait.
        """
        coro = self._coro
        if coro is None:
            return
        self._waiting = None
        try:
            pending = coro.send(None)
        except StopIteration as stop:
            if stop.value["type"] == "http.disconnect":
                self._gone()
            else:  # (a late body chunk): wait for the next message
                self._coro = self._receive()  # type: ignore[assignment]
                self.task.get_loop().call_soon(self)
            return
        except BaseException:  # no one awaits it: a server that cannot tell is a client gone
            self._gone()
            return
        if pending is None:  # a bare yield (sleep(0)): step again on the next turn
            self.task.get_loop().call_soon(self)
            return
        pending._asyncio_future_blocking = False
        pending.add_done_callback(self)
        self._waiting = pending

    def _gone(self) -> None:
        self._coro = None
        self.fired = True
        self.task.cancel()

    def close(self) -> None:
        """Stop watching (the exchange is over): the pending ``receive`` is closed."""
        coro, self._coro = self._coro, None
        if self._waiting is not None:
            self._waiting.remove_done_callback(self)
            self._waiting = None
        if coro is not None:
            coro.close()


async def read_body(scope: Scope, receive: Receive, limits: Limits) -> bytes:
    """The whole request body, within the size and time limits.

    Raises:
        Rejected: Larger than ``limits.max_body`` (413, from ``content-length`` before reading
            when it is sent), slower than ``limits.body_timeout`` (408), or the client left (400).
    """
    limit = limits.max_body
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise Rejected(413, f"the request body is larger than {limit} bytes")
    chunks = bytearray()
    timer = deadline(limits.body_timeout)
    try:
        async with timer:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise Rejected(400, "the client went away before sending the whole request")
                chunks += message.get("body", b"")
                if len(chunks) > limit:
                    raise Rejected(413, f"the request body is larger than {limit} bytes")
                if not message.get("more_body", False):
                    return bytes(chunks)
    except TimeoutError:
        if not timer.expired():
            raise
    raise Rejected(408, f"the request body did not arrive within {limits.body_timeout:g}s")


async def send_json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = msgspec.json.encode(body)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def send_empty(send: Send, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def request_headers(scope: Scope) -> dict[str, str]:
    """The request headers by lower-case name (a repeated header: the last one)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}


def decode_body(raw: bytes) -> Any:
    """A request body decoded from JSON (once per request: its model is read from it too).

    Raises:
        Rejected: The body is not JSON (400).
    """
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise Rejected(400, f"the request body is not valid JSON: {exc}") from None


def model_of(name: str, body: Any) -> str | None:
    """The model a decoded request body names (``None``: no string there).

    Raises:
        Rejected: The body is not a JSON object (400): no route can be chosen.
    """
    if not isinstance(body, dict):
        raise Rejected(400, "the request body must be a JSON object")
    found = body.get(name)
    return found if isinstance(found, str) else None
