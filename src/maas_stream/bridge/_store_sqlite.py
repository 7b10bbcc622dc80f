"""The default conversation store: one SQLite file (stdlib ``sqlite3``, WAL), no setup.

One connection per store object, used from one worker thread at a time (a capacity limiter of
one) through :func:`anyio.to_thread.run_sync`, so the event loop never waits on the disk. Writes
run in ``BEGIN IMMEDIATE`` transactions, which makes the owner's byte cap and the event numbers
exact even when several processes share the file (WAL lets readers go on meanwhile; a writer
waits up to ``busy_timeout`` for another). Other processes' new events are found by polling.

It must not contain protocol logic.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.to_thread

from ._store import Store, StoredResponse, StoreFullError, decode_record, encode_record

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["SQLiteStore"]

T = TypeVar("T")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at REAL,
    cancel INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL,
    record BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_owner ON responses (owner);
CREATE INDEX IF NOT EXISTS responses_expiry ON responses (expires_at);
CREATE TABLE IF NOT EXISTS events (
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (id, seq)
) WITHOUT ROWID;
"""

_LIVE: Final = "(expires_at IS NULL OR expires_at > ?)"
_PURGE_EVERY: Final = 60.0
"""Seconds between two sweeps of expired rows (reads skip them meanwhile)."""


class SQLiteStore(Store):
    """The conversation store in a SQLite file (see the module doc).

    Args:
        path: The database file (created with its folder); ``:memory:`` for a private one.
        **options: :class:`~maas_stream.bridge._store.Store`'s ``ttl``, ``max_bytes``, ``poll``.
    """

    def __init__(self, path: str | Path, **options: Any) -> None:
        super().__init__(**options)
        self.path = str(path)
        self._conn: sqlite3.Connection | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._purged = 0.0

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            return fn(self._connect())

        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    @staticmethod
    def _usage(conn: sqlite3.Connection, owner: str, now: float, skip: str | None = None) -> int:
        row = conn.execute(
            f"SELECT COALESCE(SUM(size), 0) FROM responses WHERE owner = ? AND {_LIVE} AND id IS NOT ?",
            (owner, now, skip),
        ).fetchone()
        return int(row[0])

    def _purge(self, conn: sqlite3.Connection, now: float) -> None:
        if now - self._purged < _PURGE_EVERY:
            return
        self._purged = now
        conn.execute(
            "DELETE FROM events WHERE id IN (SELECT id FROM responses WHERE expires_at <= ?)", (now,)
        )
        conn.execute("DELETE FROM responses WHERE expires_at <= ?", (now,))

    async def put(self, record: StoredResponse, events: Sequence[bytes] = ()) -> None:
        """Write ``record`` (and events); raises :class:`StoreFullError` past the owner's cap."""
        data = encode_record(record)
        added = sum(len(e) for e in events)

        def write(conn: sqlite3.Connection) -> None:
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._purge(conn, now)
                row = conn.execute(
                    "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM events WHERE id = ?", (record.id,)
                ).fetchone()
                size = len(data) + int(row[0]) + added
                if self.max_bytes is not None and (
                    self._usage(conn, record.owner, now, record.id) + size > self.max_bytes
                ):
                    raise StoreFullError(f"the key's stored responses would pass {self.max_bytes} bytes")
                conn.execute(
                    "INSERT INTO responses (id, owner, expires_at, size, record) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at,"
                    " size = excluded.size, record = excluded.record",
                    (record.id, record.owner, record.expires_at, size, data),
                )
                if events:
                    self._add(conn, record.id, events)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        await self._run(write)
        self.changed(record.id)

    @staticmethod
    def _add(conn: sqlite3.Connection, rid: str, events: Sequence[bytes]) -> None:
        last = conn.execute("SELECT COALESCE(MAX(seq), -1) FROM events WHERE id = ?", (rid,)).fetchone()
        start = int(last[0]) + 1
        conn.executemany(
            "INSERT INTO events (id, seq, data) VALUES (?, ?, ?)",
            [(rid, start + i, e) for i, e in enumerate(events)],
        )

    async def get(self, rid: str, owner: str) -> StoredResponse | None:
        """The record if ``owner`` has it and it has not expired."""
        found = await self.get_many([rid], owner)
        return found[0]

    async def get_many(self, rids: Sequence[str], owner: str) -> list[StoredResponse | None]:
        """The records (``None`` where missing, expired or another owner's), 500 ids a query."""
        found = await self._run(lambda conn: _read(conn, rids, owner)) if rids else {}
        return [decode_record(found[r]) if r in found else None for r in rids]

    async def chain(self, rid: str, owner: str) -> list[StoredResponse | None] | None:
        """The record's ancestors then the record, read in one go."""

        def read(conn: sqlite3.Connection) -> tuple[StoredResponse, dict[str, bytes]] | None:
            found = _read(conn, [rid], owner)
            if rid not in found:
                return None
            record = decode_record(found[rid])
            return record, _read(conn, record.ancestors, owner)

        got = await self._run(read)
        if got is None:
            return None
        record, found = got
        return [*(decode_record(found[r]) if r in found else None for r in record.ancestors), record]

    async def delete(self, rid: str, owner: str) -> bool:
        """Delete ``owner``'s record and its events."""

        def remove(conn: sqlite3.Connection) -> bool:
            conn.execute("BEGIN IMMEDIATE")
            found = conn.execute(
                f"DELETE FROM responses WHERE id = ? AND owner = ? AND {_LIVE}", (rid, owner, time.time())
            ).rowcount
            if found:
                conn.execute("DELETE FROM events WHERE id = ?", (rid,))
            conn.execute("COMMIT")
            return bool(found)

        done = await self._run(remove)
        self.changed(rid)
        return done

    async def append(self, rid: str, events: Sequence[bytes]) -> bool:
        """Number and add ``events``; whether a cancel was asked."""
        added = sum(len(e) for e in events)

        def write(conn: sqlite3.Connection) -> bool:
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT owner, cancel FROM responses WHERE id = ?", (rid,)).fetchone()
                if row is None:
                    raise KeyError(rid)  # the record is written before its events
                owner, cancel = row
                if self.max_bytes is not None and self._usage(conn, owner, now) + added > self.max_bytes:
                    raise StoreFullError(f"the key's stored responses would pass {self.max_bytes} bytes")
                self._add(conn, rid, events)
                conn.execute("UPDATE responses SET size = size + ? WHERE id = ?", (added, rid))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return bool(cancel)

        cancel = await self._run(write)
        self.changed(rid)
        return cancel

    async def events(self, rid: str, after: int = -1) -> list[tuple[int, bytes]]:
        """The events numbered above ``after``."""

        def read(conn: sqlite3.Connection) -> list[tuple[int, bytes]]:
            rows = conn.execute(
                "SELECT seq, data FROM events WHERE id = ? AND seq > ? ORDER BY seq", (rid, after)
            ).fetchall()
            return [(int(s), bytes(d)) for s, d in rows]

        return await self._run(read)

    async def request_cancel(self, rid: str) -> None:
        """Mark the record: its runner stops at its next append."""
        await self._run(lambda conn: conn.execute("UPDATE responses SET cancel = 1 WHERE id = ?", (rid,)))

    async def usage(self, owner: str) -> int:
        """The bytes ``owner`` has stored."""
        return await self._run(lambda conn: self._usage(conn, owner, time.time()))

    async def aclose(self) -> None:
        """Close the connection."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await anyio.to_thread.run_sync(conn.close, limiter=self._limiter)


def _read(conn: sqlite3.Connection, rids: Sequence[str], owner: str) -> dict[str, bytes]:
    """The live records of ``owner`` among ``rids``, by id (500 ids a query)."""
    now, out = time.time(), dict[str, bytes]()
    for i in range(0, len(rids), 500):
        chunk = list(rids[i : i + 500])
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id, record FROM responses WHERE id IN ({marks}) AND owner = ? AND {_LIVE}",
            (*chunk, owner, now),
        ).fetchall()
        out.update((str(r), bytes(d)) for r, d in rows)
    return out
