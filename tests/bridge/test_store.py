"""The conversation store's contract, on SQLite and on Redis (``tests/bridge/_stores.py``).

Each test opens the SAME place through several store objects where it matters (as several
worker processes would): records are seen by their owner only, events are numbered without gap
or loss under concurrent writers, the byte cap and expiry hold, a reader in one "process" tails
what another writes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio
import msgspec
import pytest

import maas_stream as ms
from maas_stream._envelope import Envelope
from maas_stream.bridge._store import (
    StoredRequest,
    StoredResponse,
    StoreFullError,
    decode_record,
    encode_record,
    new_id,
    open_store,
    owner_of,
)
from tests.bridge._stores import KINDS, make_store, redis_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from maas_stream.bridge._store import Store

__all__ = ["make_store", "redis_url"]  # fixtures

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("make_store", KINDS, indirect=True)]

A, B = owner_of("key-a"), owner_of("key-b")


def record(owner: str = A, *, rid: str | None = None, expires_at: float | None = None) -> StoredResponse:
    return StoredResponse(
        id=rid or new_id(),
        owner=owner,
        created_at=time.time(),
        expires_at=expires_at,
        status="in_progress",
        request=StoredRequest(
            protocol="client",
            envelope=Envelope(model="m", max_tokens=7),
            input=[ms.Message(role="user", content="hi")],
        ),
    )


async def test_a_record_round_trips_for_its_owner_only(make_store: Callable[..., Store]) -> None:
    store = make_store()
    rec = record()
    rec.response = ms.Response(
        protocol="p",
        id=rec.id,
        status="completed",
        messages=[ms.Message(role="assistant", content=[ms.TextPart(text="yes")])],
    )
    await store.put(rec)
    assert await store.get(rec.id, A) == rec
    assert await store.get(rec.id, B) is None  # another key: absent, like a missing id
    assert await store.get(new_id(), A) is None
    assert not await store.delete(rec.id, B)
    assert await store.get(rec.id, A) == rec
    assert await store.delete(rec.id, A)
    assert await store.get(rec.id, A) is None
    assert await store.events(rec.id) == []


async def test_events_are_numbered_from_zero_and_read_after_n(make_store: Callable[..., Store]) -> None:
    store = make_store()
    rec = record()
    await store.put(rec)
    assert not await store.append(rec.id, [b"e0", b"e1"])
    assert not await store.append(rec.id, [b"e2"])
    assert await store.events(rec.id) == [(0, b"e0"), (1, b"e1"), (2, b"e2")]
    assert await store.events(rec.id, 1) == [(2, b"e2")]
    assert await store.events(rec.id, 2) == []
    rec.status = "completed"
    await store.put(rec)  # a new state of the record keeps its events
    assert [s for s, _ in await store.events(rec.id)] == [0, 1, 2]


async def test_cancel_is_seen_by_the_next_append(make_store: Callable[..., Store]) -> None:
    writer, other = make_store(), make_store()
    rec = record()
    await writer.put(rec)
    assert not await writer.append(rec.id, [b"a"])
    await other.request_cancel(rec.id)
    assert await writer.append(rec.id, [b"b"])


async def test_expired_records_are_gone(make_store: Callable[..., Store]) -> None:
    store = make_store()
    old = record(expires_at=time.time() - 1)
    await store.put(old)
    assert await store.get(old.id, A) is None
    assert await store.usage(A) == 0
    fresh = record(expires_at=time.time() + 3600)
    await store.put(fresh)
    assert await store.get(fresh.id, A) == fresh
    assert make_store(ttl=60).expiry(1000.0) == 1060.0


async def test_the_byte_cap_is_per_owner(make_store: Callable[..., Store]) -> None:
    size = len(encode_record(record()))
    store = make_store(max_bytes=2 * size + 10)
    first, second = record(), record()
    await store.put(first)
    await store.put(second)
    with pytest.raises(StoreFullError):
        await store.put(record())
    with pytest.raises(StoreFullError):
        await store.append(first.id, [b"x" * 64])
    assert await store.events(first.id) == []  # nothing of a refused append is kept
    await store.put(record(B))  # another key has its own room
    used = await store.usage(A)
    assert 2 * size - 10 <= used <= 2 * size + 10  # (the times in two records differ in length)
    await store.delete(second.id, A)
    await store.append(first.id, [b"x" * 8])
    assert await store.events(first.id) == [(0, b"x" * 8)]


async def test_concurrent_writers_lose_nothing(make_store: Callable[..., Store]) -> None:
    """Four store objects (four "processes"), twenty tasks, write at once; every event is there."""
    stores = [make_store() for _ in range(4)]
    shared = record()
    await stores[0].put(shared)
    own = [record() for _ in range(20)]
    for rec in own:
        await stores[0].put(rec)

    async def writer(n: int) -> None:
        store = stores[n % 4]
        for i in range(10):
            await store.append(own[n].id, [f"{n}:{i}".encode()])
            await store.append(shared.id, [f"{n}:{i}".encode()])

    async with anyio.create_task_group() as tg:
        for n in range(20):
            tg.start_soon(writer, n)
    for n, rec in enumerate(own):
        assert await stores[1].events(rec.id) == [(i, f"{n}:{i}".encode()) for i in range(10)]
    found = await stores[2].events(shared.id)
    assert [s for s, _ in found] == list(range(200))  # numbered without gap or repeat
    assert sorted(d for _, d in found) == sorted(f"{n}:{i}".encode() for n in range(20) for i in range(10))
    for n in range(20):  # each writer's own order is kept
        mine = [d for _, d in found if d.startswith(f"{n}:".encode())]
        assert mine == [f"{n}:{i}".encode() for i in range(10)]


async def test_a_reader_tails_another_writer_until_the_end(make_store: Callable[..., Store]) -> None:
    writer, reader = make_store(), make_store(poll=0.01)
    rec = record()
    await writer.put(rec)
    await writer.append(rec.id, [b"e0", b"e1"])
    got: list[tuple[int, bytes]] = []
    started = anyio.Event()

    async def read() -> None:
        async for item in reader.tail(rec.id, A, after=0):
            got.append(item)
            started.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await started.wait()
            assert got == [(1, b"e1")]
            await writer.append(rec.id, [b"e2"])
            await writer.append(rec.id, [b"e3"])
            rec.status = "completed"
            await writer.put(rec)
    assert got == [(1, b"e1"), (2, b"e2"), (3, b"e3")]


async def test_records_hold_canonical_data(make_store: Callable[..., Store]) -> None:
    rec = record()
    assert decode_record(encode_record(rec)) == rec
    raw = msgspec.json.decode(encode_record(rec))
    assert raw["request"]["envelope"]["max_tokens"] == 7
    assert raw["request"]["input"] == [{"role": "user", "content": "hi"}]
    assert "key-a" not in encode_record(rec).decode()  # the owner is a digest
    assert rec.id.startswith("resp_")
    assert len(rec.id) == 53
    assert len({new_id() for _ in range(1000)}) == 1000


async def test_store_urls(make_store: Callable[..., Store]) -> None:
    with pytest.raises(ValueError, match="unknown store"):
        open_store("postgres://x")
    with pytest.raises(ValueError, match="unknown store"):
        open_store("sqlite:")


async def test_a_put_with_events_and_the_chain(make_store: Callable[..., Store]) -> None:
    store, other = make_store(), make_store()
    first = record()
    await store.put(first, [b"a", b"b"])
    second = record()
    second.ancestors = [first.id]
    await store.put(second)
    assert await other.events(first.id) == [(0, b"a"), (1, b"b")]
    assert await other.chain(second.id, A) == [first, second]
    assert await other.chain(second.id, B) is None
    assert await other.get_many([second.id, new_id(), first.id], A) == [second, None, first]
    await store.delete(first.id, A)
    assert await other.chain(second.id, A) == [None, second]  # a gone ancestor is said, not skipped
