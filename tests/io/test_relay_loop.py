"""RelayReader.relay (aconvert_into's loop over the source's iterator): taken, and equal to the read() loop."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio
import pytest

import maas_stream as ms
from maas_stream.io._relay import RelayReader
from maas_stream.io._stream import _SLICE, aconvert_into

from .test_relay import END, FRAMES, Source, chunk

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio


async def relay_out(
    chunks: list[bytes], monkeypatch: pytest.MonkeyPatch, *, relay: bool, timed: bool
) -> tuple[list[bytes], int]:
    """The writes of aconvert_into, through relay() or (``relay=False``) the read() loop; the relay's count."""
    relays = 0
    taken = RelayReader.relays

    def spy(self: RelayReader) -> bool:
        nonlocal relays
        if not relay:
            return False
        out = taken(self)
        relays += out
        return out

    monkeypatch.setattr(RelayReader, "relays", spy)
    writes: list[bytes] = []

    async def write(data: bytes) -> None:
        writes.append(data)

    async def gen() -> AsyncIterator[bytes]:
        for piece in chunks:
            yield piece

    idle, total = (30.0, 600.0) if timed else (None, None)
    await aconvert_into(
        gen(), write, to="anthropic", protocol="openai-chat", idle_timeout=idle, total_timeout=total
    )
    return writes, relays


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("cut", [1, 97, _SLICE + 1, 10**9], ids=["1", "97", "slice+1", "whole"])
@pytest.mark.parametrize("timed", [False, True], ids=["untimed", "timed"])
async def test_the_relay_loop_writes_what_the_read_loop_writes(
    monkeypatch: pytest.MonkeyPatch, cut: int, timed: bool
) -> None:
    data = b"".join(chunk(i) for i in range(2000)) + END
    chunks = [data[i : i + cut] for i in range(0, len(data), cut)]
    new, taken = await relay_out(chunks, monkeypatch, relay=True, timed=timed)
    old, _ = await relay_out(chunks, monkeypatch, relay=False, timed=timed)
    assert taken == 1
    assert new == old  # the same writes, cut the same way
    assert b"".join(new) == ms.convert(data, to="anthropic", protocol="openai-chat")


async def test_the_relay_loop_is_taken_on_asyncio_and_without_timeouts_only(anyio_backend: str) -> None:
    untimed = RelayReader(Source(FRAMES).gen())
    timed = RelayReader(Source(FRAMES).gen(), idle_timeout=30)
    assert untimed.relays()
    assert timed.relays() is (anyio_backend == "asyncio")  # trio: a cancel scope per read()
    await untimed.aclose()
    await timed.aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_source_error_is_translated_and_a_conversion_error_is_not() -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield FRAMES[0]
        raise OSError("connection reset")

    async def write(data: bytes) -> None:
        pass

    with pytest.raises(ms.StreamTransportError) as info:
        await aconvert_into(broken(), write, to="anthropic", protocol="openai-chat", idle_timeout=30)
    assert info.value.received == len(FRAMES[0])
    assert isinstance(info.value.__cause__, OSError)

    async def invalid() -> AsyncIterator[bytes]:
        yield FRAMES[0]
        yield b"data: {not json\n\n"

    with pytest.raises(ms.RemoteProtocolError):
        await aconvert_into(invalid(), write, to="anthropic", protocol="openai-chat", idle_timeout=30)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_total_deadline_passing_between_reads_ends_the_relay() -> None:
    async def source() -> AsyncIterator[bytes]:
        yield FRAMES[0]
        yield FRAMES[1]

    async def write(data: bytes) -> None:
        time.sleep(0.15)  # noqa: ASYNC251 - the loop is held: the deadline passes while writing

    with anyio.fail_after(5), pytest.raises(ms.StreamTimeoutError) as info:
        await aconvert_into(source(), write, to="anthropic", protocol="openai-chat", total_timeout=0.1)
    assert info.value.phase == "total"
    assert info.value.received == len(FRAMES[0])
