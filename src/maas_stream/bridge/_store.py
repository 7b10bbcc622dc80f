"""The conversation store: what the bridge keeps of a stored response, behind one small interface.

A :class:`Store` holds, per response id, one :class:`StoredResponse` (the owner, the expiry,
the status, the canonical request and the canonical :class:`~maas_stream.Response`) and the
client's encoded stream events, numbered from 0 (a resumed stream is "the events after N").
Ids are opaque and unguessable (:func:`new_id`); records hold canonical data only, so that any
stateful endpoint (Responses ``previous_response_id``, Interactions ``previous_interaction_id``)
can build on the same store. The owner is a digest of the bridge key (:func:`owner_of`), never
the key: a record read with another owner is absent, exactly like a missing one.

Two implementations: :class:`~maas_stream.bridge._store_sqlite.SQLiteStore` (the default; one
file, WAL, driven from worker threads) and :class:`~maas_stream.bridge._store_redis.RedisStore`
(shared by several workers or machines); :func:`open_store` picks one from a URL. Expiry and a
byte cap per owner are enforced by each store.

It must not contain protocol logic (the records are canonical) or know the ASGI app.
"""

from __future__ import annotations

import abc
import hashlib
import secrets
import time
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from .._envelope import Envelope
from .._model import Message, Response

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

__all__ = [
    "TERMINAL",
    "Store",
    "StoreFullError",
    "StoredRequest",
    "StoredResponse",
    "new_id",
    "open_store",
    "owner_of",
]

TERMINAL: Final = frozenset({"completed", "incomplete", "failed", "cancelled"})
"""Statuses after which a response gets no more events."""

DEFAULT_POLL: Final = 0.05
"""Seconds between two looks at another process's writes when the store cannot push them."""


class StoreFullError(Exception):
    """A write would take an owner past its byte cap (the record is not written)."""


class StoredRequest(msgspec.Struct, kw_only=True):
    """The canonical request of a stored response."""

    protocol: str
    """The client's protocol."""
    envelope: Envelope
    """The request's fields besides the conversation, canonical."""
    instructions: list[Message] = msgspec.field(default_factory=list)
    """This turn's system instructions (not carried to the next turn)."""
    input: list[Message] = msgspec.field(default_factory=list)
    """This turn's new input messages (the history before it is the previous response's)."""


class StoredResponse(msgspec.Struct, kw_only=True):
    """One stored response: who may see it, until when, the request and the answer."""

    id: str
    owner: str
    """:func:`owner_of` the bridge key that made it."""
    created_at: float
    expires_at: float | None = None
    """Unix time after which the record is gone; ``None``: kept until deleted."""
    status: str = "queued"
    """``queued``, ``in_progress``, or one of :data:`TERMINAL`."""
    kind: str = "response"
    """What the id names (``response``; an interaction store uses its own kind)."""
    background: bool = False
    previous_id: str | None = None
    """The stored response this one continues."""
    ancestors: list[str] = msgspec.field(default_factory=list)
    """Every earlier stored response of the conversation, oldest first (``previous_id`` last):
    the history is read in one :meth:`Store.get_many`."""
    upstream_id: str | None = None
    """The upstream's own id for this response (a same-protocol upstream keeps native state)."""
    upstream: str | None = None
    """The upstream protocol that answered."""
    request: StoredRequest
    response: Response | None = None
    """The canonical answer (its ``id`` is :attr:`id`), once there is one."""


_RECORD: Final = msgspec.json.Encoder()
_DECODE: Final = msgspec.json.Decoder(StoredResponse)


def encode_record(record: StoredResponse) -> bytes:
    """The record's bytes as stored."""
    return _RECORD.encode(record)


def decode_record(raw: bytes) -> StoredResponse:
    """A record from its stored bytes."""
    return _DECODE.decode(raw)


def new_id(prefix: str = "resp") -> str:
    """An unguessable id of OpenAI's shape: ``resp_`` and 48 hex digits (192 random bits)."""
    return f"{prefix}_{secrets.token_hex(24)}"


def owner_of(key: str | None) -> str:
    """The owner a bridge key stands for in the store: a digest, never the key itself."""
    if not key:
        return "anonymous"
    return hashlib.sha256(b"maas-stream store owner\0" + key.encode()).hexdigest()


class Store(abc.ABC):
    """Where stored responses live (see the module doc); every method is async and never blocks.

    Args:
        ttl: Seconds a record is kept (``None``: until deleted).
        max_bytes: The most bytes (records and events) one owner may have stored (``None``: no cap).
        poll: Seconds between two looks for another process's new events (stores that cannot
            push them).
    """

    def __init__(
        self, *, ttl: float | None = None, max_bytes: int | None = None, poll: float = DEFAULT_POLL
    ) -> None:
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.poll = poll
        self._changed: dict[str, anyio.Event] = {}

    def expiry(self, now: float | None = None) -> float | None:
        """The expiry of a record written now."""
        return None if self.ttl is None else (now or time.time()) + self.ttl

    # ------------------------------------------------------------------ the interface

    @abc.abstractmethod
    async def put(self, record: StoredResponse, events: Sequence[bytes] = ()) -> None:
        """Write ``record`` and add ``events`` after its own, at once.

        The record is a new one or a new state of one (its events are kept).

        Raises:
            StoreFullError: The owner would be past the byte cap (nothing is written).
        """

    @abc.abstractmethod
    async def get(self, rid: str, owner: str) -> StoredResponse | None:
        """The record, or ``None`` when it is missing, expired or ``owner``'s is not it."""

    @abc.abstractmethod
    async def get_many(self, rids: Sequence[str], owner: str) -> list[StoredResponse | None]:
        """:meth:`get` for several ids at once (one round trip), in order."""

    async def chain(self, rid: str, owner: str) -> list[StoredResponse | None] | None:
        """The record's ancestors (``None`` where gone) then the record; ``None`` without it.

        Stores that can read both at once override this (one round trip instead of two).
        """
        record = await self.get(rid, owner)
        if record is None:
            return None
        return [*await self.get_many(record.ancestors, owner), record]

    @abc.abstractmethod
    async def delete(self, rid: str, owner: str) -> bool:
        """Delete the record and its events; whether ``owner`` had it."""

    @abc.abstractmethod
    async def append(self, rid: str, events: Sequence[bytes]) -> bool:
        """Add encoded events after the record's last (numbered on); whether a cancel was asked.

        Raises:
            StoreFullError: The owner would be past the byte cap (nothing is added).
        """

    @abc.abstractmethod
    async def events(self, rid: str, after: int = -1) -> list[tuple[int, bytes]]:
        """The record's events numbered above ``after``, in order, with their numbers."""

    @abc.abstractmethod
    async def request_cancel(self, rid: str) -> None:
        """Ask whoever runs the response to stop (seen by its next :meth:`append`)."""

    @abc.abstractmethod
    async def usage(self, owner: str) -> int:
        """The bytes ``owner`` has stored (records that have not expired)."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release connections and threads."""

    async def _wait_elsewhere(self, rid: str, after: int, seconds: float) -> None:
        """Wait at most ``seconds`` for another process's events (default: just wait)."""
        await anyio.sleep(seconds)

    # ------------------------------------------------------------------ built on it

    def changed(self, rid: str) -> None:
        """Wake this process's readers of ``rid`` (new events or a new status)."""
        event = self._changed.pop(rid, None)
        if event is not None:
            event.set()

    async def wait(self, rid: str, after: int, seconds: float) -> None:
        """Return when ``rid`` may have changed in this process, or another's poll is due (at most ``seconds``)."""
        event = self._changed.setdefault(rid, anyio.Event())
        with anyio.move_on_after(seconds):
            async with anyio.create_task_group() as tg:

                async def local() -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                async def elsewhere() -> None:
                    await self._wait_elsewhere(rid, after, seconds)
                    tg.cancel_scope.cancel()

                tg.start_soon(local)
                tg.start_soon(elsewhere)

    async def tail(self, rid: str, owner: str, after: int = -1) -> AsyncIterator[tuple[int, bytes]]:
        """The events after ``after``: the stored ones, then each new one, until the response ends.

        Ends when the record is terminal and every event was given, or when it is gone.
        """
        while True:
            found = await self.events(rid, after)
            for seq, data in found:
                yield seq, data
                after = seq
            if found:
                continue
            record = await self.get(rid, owner)
            if record is None:
                return
            if record.status in TERMINAL:
                for seq, data in await self.events(rid, after):  # written before the status
                    yield seq, data
                return
            await self.wait(rid, after, self.poll)


def open_store(url: str, **options: Any) -> Store:
    """A store from its URL: ``sqlite:PATH`` (or a bare path) or ``redis://...`` / ``rediss://...``.

    Args:
        url: Where the store is.
        **options: :class:`Store`'s ``ttl``, ``max_bytes``, ``poll``.

    Raises:
        ValueError: The URL names no known store.
        ImportError: The Redis store needs the ``redis`` package (``maas-stream[store-redis]``).
    """
    if url.startswith(("redis://", "rediss://", "unix://")):
        from ._store_redis import RedisStore

        return RedisStore(url, **options)
    path = url.removeprefix("sqlite:")
    if path.startswith("//"):
        path = path[2:]
    if not path or "://" in path:
        raise ValueError(f"unknown store {url!r}: give sqlite:PATH or redis://HOST:PORT/DB")
    from ._store_sqlite import SQLiteStore

    return SQLiteStore(path, **options)
