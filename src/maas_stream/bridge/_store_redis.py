"""The shared conversation store: Redis (``redis.asyncio``; the ``store-redis`` extra).

Keys, under a prefix: ``{p}:r:{id}`` the record (JSON), ``{p}:e:{id}`` its events as a Redis
stream with ids ``0-1``, ``0-2``... (event ``n`` is ``0-(n+1)``), ``{p}:c:{id}`` a cancel
request, and per owner ``{p}:o:{owner}`` (a sorted set of its ids by expiry) with
``{p}:s:{owner}`` (a hash id → bytes) for the byte cap. Expiry is Redis's own (``PEXPIREAT``
on every key of a record); the cap and the event numbers are kept by Lua scripts, which Redis
runs atomically whatever the number of workers. A reader waits for new events with
``XREAD BLOCK`` instead of polling.

It must not contain protocol logic.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Final

from ._store import Store, StoredResponse, StoreFullError, decode_record, encode_record

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["RedisStore"]

_RESERVE: Final = """
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, m in ipairs(expired) do redis.call('HDEL', KEYS[2], m) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local total = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do total = total + tonumber(v) end
local delta = tonumber(ARGV[3])
if ARGV[6] == '1' then
    local old = redis.call('HGET', KEYS[2], ARGV[2])
    if old then delta = delta - tonumber(old) end
end
if tonumber(ARGV[4]) >= 0 and total + delta > tonumber(ARGV[4]) then return -1 end
redis.call('HINCRBY', KEYS[2], ARGV[2], delta)
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[2])
return total + delta
"""
"""Reserve bytes for one id of one owner: KEYS owner's zset and hash; ARGV now, id, bytes, cap
(-1: none), expiry score, and whether the bytes replace the id's record (``1``) or add to it."""

_APPEND: Final = """
local n = redis.call('XLEN', KEYS[1])
for i = 2, #ARGV do redis.call('XADD', KEYS[1], '0-' .. (n + i - 1), 'd', ARGV[i]) end
if ARGV[1] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return n
"""
"""Number and add events: KEYS the stream; ARGV the expiry (ms, or empty) then the events."""


class RedisStore(Store):
    """The conversation store in Redis (see the module doc).

    Args:
        url: ``redis://HOST:PORT/DB`` (``rediss://`` for TLS, ``unix://`` for a socket).
        prefix: The prefix of every key.
        **options: :class:`~maas_stream.bridge._store.Store`'s ``ttl``, ``max_bytes``, ``poll``.
    """

    def __init__(self, url: str, *, prefix: str = "maas-stream", **options: Any) -> None:
        super().__init__(**options)
        import redis.asyncio

        self.url = url
        self.prefix = prefix
        self._redis: Any = redis.asyncio.from_url(url)
        self._reserve = self._redis.register_script(_RESERVE)
        self._append = self._redis.register_script(_APPEND)

    def _k(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    async def _reserve_bytes(
        self, owner: str, rid: str, size: int, expires: float | None, *, record: bool
    ) -> None:
        cap = -1 if self.max_bytes is None else self.max_bytes
        score = "+inf" if expires is None else repr(expires)
        total = await self._reserve(
            keys=[self._k("o", owner), self._k("s", owner)],
            args=[repr(time.time()), rid, size, cap, score, "1" if record else "0"],
        )
        if int(total) < 0:
            raise StoreFullError(f"the key's stored responses would pass {self.max_bytes} bytes")

    async def put(self, record: StoredResponse) -> None:
        """Write ``record``; raises :class:`StoreFullError` past the owner's cap."""
        data = encode_record(record)
        old = await self._redis.strlen(self._k("r", record.id))
        # The owner's hash counts record and events together: replace only the record's share.
        await self._reserve_bytes(
            record.owner, record.id, len(data) - int(old), record.expires_at, record=False
        )
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(self._k("r", record.id), data)
        for key in (self._k("r", record.id), self._k("o", record.owner), self._k("s", record.owner)):
            if record.expires_at is not None:
                pipe.pexpireat(key, math.ceil(record.expires_at * 1000))
        await pipe.execute()
        self.changed(record.id)

    async def get(self, rid: str, owner: str) -> StoredResponse | None:
        """The record if ``owner`` has it and it has not expired."""
        raw = await self._redis.get(self._k("r", rid))
        if raw is None:
            return None
        record = decode_record(raw)
        if record.owner != owner or (record.expires_at is not None and record.expires_at <= time.time()):
            return None
        return record

    async def delete(self, rid: str, owner: str) -> bool:
        """Delete ``owner``'s record and its events."""
        if await self.get(rid, owner) is None:
            return False
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(self._k("r", rid), self._k("e", rid), self._k("c", rid))
        pipe.zrem(self._k("o", owner), rid)
        pipe.hdel(self._k("s", owner), rid)
        await pipe.execute()
        self.changed(rid)
        return True

    async def append(self, rid: str, events: Sequence[bytes]) -> bool:
        """Number and add ``events``; whether a cancel was asked."""
        raw = await self._redis.get(self._k("r", rid))
        if raw is None:
            raise KeyError(rid)  # the record is written before its events
        record = decode_record(raw)
        added = sum(len(e) for e in events)
        await self._reserve_bytes(record.owner, rid, added, record.expires_at, record=False)
        expires = "" if record.expires_at is None else str(math.ceil(record.expires_at * 1000))
        await self._append(keys=[self._k("e", rid)], args=[expires, *events])
        self.changed(rid)
        return bool(await self._redis.exists(self._k("c", rid)))

    async def events(self, rid: str, after: int = -1) -> list[tuple[int, bytes]]:
        """The events numbered above ``after``."""
        found = await self._redis.xrange(self._k("e", rid), min=f"0-{after + 2}", max="+")
        return [(_seq(i), fields[b"d"]) for i, fields in found]

    async def _wait_elsewhere(self, rid: str, after: int, seconds: float) -> None:
        # Blocks in Redis until an event past ``after`` is added (by any worker) or time is up.
        await self._redis.xread(
            {self._k("e", rid): f"0-{after + 1}"}, count=1, block=max(1, int(seconds * 1000))
        )

    async def request_cancel(self, rid: str) -> None:
        """Mark the record: its runner stops at its next append."""
        await self._redis.set(self._k("c", rid), b"1", ex=3600)

    async def usage(self, owner: str) -> int:
        """The bytes ``owner`` has stored."""
        now = time.time()
        live = await self._redis.zrangebyscore(self._k("o", owner), f"({now!r}", "+inf")
        if not live:
            return 0
        sizes = await self._redis.hmget(self._k("s", owner), live)
        return sum(int(s) for s in sizes if s is not None)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()


def _seq(stream_id: bytes) -> int:
    """Event ``n`` is stored under the stream id ``0-(n+1)``."""
    return int(stream_id.split(b"-", 1)[1]) - 1
