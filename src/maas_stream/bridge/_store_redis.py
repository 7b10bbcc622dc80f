"""The shared conversation store: Redis (``redis.asyncio``; the ``store-redis`` extra).

Keys, under a prefix: ``{p}:r:{id}`` the record (JSON), ``{p}:e:{id}`` its events as a Redis
stream with ids ``0-1``, ``0-2``... (event ``n`` is ``0-(n+1)``), ``{p}:c:{id}`` a cancel
request, and per owner ``{p}:o:{owner}`` (a sorted set of its ids by expiry) with
``{p}:s:{owner}`` (a hash: id → bytes, and ``_total``) for the byte cap. Expiry is Redis's
own (``PEXPIREAT`` on every key of a record). Each write is one Lua script, which Redis runs
atomically whatever the number of workers: the cap, the event numbers and the record cannot
disagree, and a turn costs one round trip per write. A reader waits for new events with
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

_CLEAN: Final = """
local function clean(zset, sizes, now)
    local expired = redis.call('ZRANGEBYSCORE', zset, '-inf', now)
    for _, m in ipairs(expired) do
        local v = redis.call('HGET', sizes, m)
        if v then
            redis.call('HINCRBY', sizes, '_total', -tonumber(v))
            redis.call('HDEL', sizes, m)
        end
    end
    redis.call('ZREMRANGEBYSCORE', zset, '-inf', now)
    return tonumber(redis.call('HGET', sizes, '_total') or '0')
end
local function add(stream, first)
    local n = redis.call('XLEN', stream)
    for i = first, #ARGV do redis.call('XADD', stream, '0-' .. (n + i - first + 1), 'd', ARGV[i]) end
end
"""
"""Lua shared by the scripts: drop an owner's expired ids from its byte count; add events."""

_PUT: Final = (
    _CLEAN
    + """
-- KEYS: record, events, owner zset, owner sizes; ARGV: now, id, data, cap, score, expiry ms, events...
local total = clean(KEYS[3], KEYS[4], ARGV[1])
local delta = string.len(ARGV[3]) - redis.call('STRLEN', KEYS[1])
for i = 7, #ARGV do delta = delta + string.len(ARGV[i]) end
if tonumber(ARGV[4]) >= 0 and total + delta > tonumber(ARGV[4]) then return -1 end
redis.call('HINCRBY', KEYS[4], ARGV[2], delta)
redis.call('HINCRBY', KEYS[4], '_total', delta)
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[2])
redis.call('SET', KEYS[1], ARGV[3])
add(KEYS[2], 7)
if ARGV[6] ~= '' then for _, k in ipairs(KEYS) do redis.call('PEXPIREAT', k, ARGV[6]) end end
return total + delta
"""
)

_APPEND: Final = (
    _CLEAN
    + """
-- KEYS: record, events, cancel, owner zset, owner sizes; ARGV: now, id, cap, expiry ms, events...
if redis.call('EXISTS', KEYS[1]) == 0 then return -2 end
local total = clean(KEYS[4], KEYS[5], ARGV[1])
local delta = 0
for i = 5, #ARGV do delta = delta + string.len(ARGV[i]) end
if tonumber(ARGV[3]) >= 0 and total + delta > tonumber(ARGV[3]) then return -1 end
redis.call('HINCRBY', KEYS[5], ARGV[2], delta)
redis.call('HINCRBY', KEYS[5], '_total', delta)
add(KEYS[2], 5)
if ARGV[4] ~= '' then redis.call('PEXPIREAT', KEYS[2], ARGV[4]) end
return redis.call('EXISTS', KEYS[3])
"""
)

_DELETE: Final = """
-- KEYS: record, events, cancel, owner zset, owner sizes; ARGV: id
local v = redis.call('HGET', KEYS[5], ARGV[1])
if v then
    redis.call('HINCRBY', KEYS[5], '_total', -tonumber(v))
    redis.call('HDEL', KEYS[5], ARGV[1])
end
redis.call('ZREM', KEYS[4], ARGV[1])
return redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
"""

_USAGE: Final = _CLEAN + "return clean(KEYS[1], KEYS[2], ARGV[1])"
_OWNERS_KEPT: Final = 4096
"""Records whose owner a store object remembers for its appends (it reads the rest)."""


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
        self._put = self._redis.register_script(_PUT)
        self._append = self._redis.register_script(_APPEND)
        self._delete = self._redis.register_script(_DELETE)
        self._usage = self._redis.register_script(_USAGE)
        self._owners: dict[str, tuple[str, float | None]] = {}
        """Owner and expiry of the records this process wrote (its appends need them)."""

    def _k(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    def _cap(self) -> int:
        return -1 if self.max_bytes is None else self.max_bytes

    async def put(self, record: StoredResponse, events: Sequence[bytes] = ()) -> None:
        """Write ``record`` (and first events); raises :class:`StoreFullError` past the cap."""
        rid, owner = record.id, record.owner
        expires = "" if record.expires_at is None else str(math.ceil(record.expires_at * 1000))
        score = "+inf" if record.expires_at is None else repr(record.expires_at)
        keys = [self._k("r", rid), self._k("e", rid), self._k("o", owner), self._k("s", owner)]
        args: list[Any] = [
            repr(time.time()),
            rid,
            encode_record(record),
            self._cap(),
            score,
            expires,
            *events,
        ]
        if int(await self._put(keys=keys, args=args)) < 0:
            raise StoreFullError(f"the key's stored responses would pass {self.max_bytes} bytes")
        if len(self._owners) >= _OWNERS_KEPT:
            self._owners.clear()
        self._owners[rid] = (owner, record.expires_at)
        self.changed(rid)

    async def get(self, rid: str, owner: str) -> StoredResponse | None:
        """The record if ``owner`` has it and it has not expired."""
        found = await self.get_many([rid], owner)
        return found[0]

    async def get_many(self, rids: Sequence[str], owner: str) -> list[StoredResponse | None]:
        """The records (``None`` where missing, expired or another owner's), in one round trip."""
        if not rids:
            return []
        now = time.time()
        out: list[StoredResponse | None] = []
        for raw in await self._redis.mget([self._k("r", r) for r in rids]):
            record = None if raw is None else decode_record(raw)
            if record is not None and (
                record.owner != owner or (record.expires_at is not None and record.expires_at <= now)
            ):
                record = None
            out.append(record)
        return out

    async def delete(self, rid: str, owner: str) -> bool:
        """Delete ``owner``'s record and its events."""
        if await self.get(rid, owner) is None:
            return False
        keys = [self._k(k, rid) for k in "rec"] + [self._k("o", owner), self._k("s", owner)]
        await self._delete(keys=keys, args=[rid])
        self._owners.pop(rid, None)
        self.changed(rid)
        return True

    async def append(self, rid: str, events: Sequence[bytes]) -> bool:
        """Number and add ``events``; whether a cancel was asked."""
        known = self._owners.get(rid)
        if known is None:
            raw = await self._redis.get(self._k("r", rid))
            if raw is None:
                raise KeyError(rid)  # the record is written before its events
            record = decode_record(raw)
            known = self._owners[rid] = (record.owner, record.expires_at)
        owner, expires_at = known
        expires = "" if expires_at is None else str(math.ceil(expires_at * 1000))
        keys = [self._k(k, rid) for k in "rec"] + [self._k("o", owner), self._k("s", owner)]
        found = int(
            await self._append(keys=keys, args=[repr(time.time()), rid, self._cap(), expires, *events])
        )
        if found == -2:
            raise KeyError(rid)
        if found == -1:
            raise StoreFullError(f"the key's stored responses would pass {self.max_bytes} bytes")
        self.changed(rid)
        return found == 1

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
        keys = [self._k("o", owner), self._k("s", owner)]
        return int(await self._usage(keys=keys, args=[repr(time.time())]))

    async def aclose(self) -> None:
        """Close the connection pool."""
        self._owners.clear()
        await self._redis.aclose()


def _seq(stream_id: bytes) -> int:
    """Event ``n`` is stored under the stream id ``0-(n+1)``."""
    return int(stream_id.split(b"-", 1)[1]) - 1
