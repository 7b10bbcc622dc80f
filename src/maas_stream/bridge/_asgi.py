"""The bridge's ASGI plumbing: what one request may send, and the few ways it is read and answered.

:class:`Limits` (body size and time, streams in flight), reading the body within them, reading
only the ``model`` of a body, watching for the client's hang-up, and sending a JSON or empty
answer. ``_app`` decides what to answer; this module only moves bytes and checks sizes.

It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio
import msgspec

from ._request import Rejected

__all__ = [
    "MAX_BODY",
    "Limits",
    "Receive",
    "Scope",
    "Send",
    "model_of",
    "read_body",
    "request_headers",
    "send_empty",
    "send_json",
    "hangup_watcher",
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


async def _watch_bare(receive: Receive, scope: anyio.CancelScope) -> None:
    # watch_disconnect inlined: one coroutine frame less per idle stream.
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:  # no one awaits a bare task: a server that cannot tell is a client gone
        pass
    scope.cancel()


def hangup_watcher(receive: Receive, scope: anyio.CancelScope) -> asyncio.Task[None] | None:
    """On asyncio, a bare task cancelling ``scope`` at the client's hang-up; ``None`` elsewhere.

    A bare asyncio task costs a fraction of a task group and its anyio task (which matters for
    thousands of idle streams); the caller cancels it when the exchange ends. On trio the caller
    runs :func:`watch_disconnect` in a task group.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # trio
        return None
    return loop.create_task(_watch_bare(receive, scope))


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
    with anyio.move_on_after(limits.body_timeout) as deadline:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Rejected(400, "the client went away before sending the whole request")
            chunks += message.get("body", b"")
            if len(chunks) > limit:
                raise Rejected(413, f"the request body is larger than {limit} bytes")
            if not message.get("more_body", False):
                return bytes(chunks)
    assert deadline.cancelled_caught
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


@functools.cache
def _model_reader(name: str) -> msgspec.json.Decoder[Any]:
    # Only the one field is materialized; the rest of the body is skipped, not built.
    return msgspec.json.Decoder(
        msgspec.defstruct("ModelOnly", [("value", Any, None)], rename={"value": name})
    )


def model_of(name: str, raw: bytes) -> str | None:
    """The model a request body names (``None``: no string there).

    Raises:
        Rejected: The body is not JSON, or not a JSON object (400): no route can be chosen.
    """
    try:
        found = _model_reader(name).decode(raw).value
    except msgspec.ValidationError:  # (a DecodeError too: first)
        raise Rejected(400, "the request body must be a JSON object") from None
    except msgspec.DecodeError as exc:
        raise Rejected(400, f"the request body is not valid JSON: {exc}") from None
    return found if isinstance(found, str) else None
