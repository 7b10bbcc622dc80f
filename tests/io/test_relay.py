"""aconvert_into (the bridge's relay) and the O(1) timeouts: writes per read, first frame, semantics."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

import maas_stream as ms
from maas_stream.io._stream import _SLICE, aconvert_into

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

pytestmark = pytest.mark.anyio

N = 100


def chunk(i: int) -> bytes:
    body = '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":null}]}'
    return b"data: " + (body % i).encode() + b"\n\n"


END = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)
FRAMES = [chunk(i) for i in range(N)] + [END]


class Source:
    """Frames one per read, never waiting (a burst); counts the reads."""

    def __init__(self, frames: list[bytes], stall_after: int | None = None) -> None:
        self.frames, self.stall_after, self.reads = frames, stall_after, 0

    async def gen(self) -> AsyncIterator[bytes]:
        for i, frame in enumerate(self.frames):
            if self.stall_after is not None and i == self.stall_after:
                await anyio.sleep_forever()
            self.reads += 1
            yield frame


async def test_each_read_is_written_before_the_next_with_the_same_bytes() -> None:
    src = Source(FRAMES)
    writes: list[tuple[int, bytes]] = []

    async def write(data: bytes) -> None:
        writes.append((src.reads, data))

    await aconvert_into(src.gen(), write, to="anthropic", protocol="openai-chat")
    assert b"".join(d for _, d in writes) == ms.convert(
        b"".join(FRAMES), to="anthropic", protocol="openai-chat"
    )
    assert writes[0][0] == 1  # the first frame went out before the second read
    reads = [r for r, _ in writes]
    assert reads == sorted(set(reads))  # one write per read at most, in order: nothing is held back


async def test_a_burst_read_at_once_goes_out_in_one_write() -> None:
    burst = b"".join(FRAMES[:20])
    assert len(burst) < _SLICE
    writes: list[bytes] = []

    async def write(data: bytes) -> None:
        writes.append(data)

    await aconvert_into(Source([burst, END]).gen(), write, to="anthropic", protocol="openai-chat")
    assert len(writes) == 2  # the burst, then the end: not one write per frame
    assert b"".join(writes) == ms.convert(burst + END, to="anthropic", protocol="openai-chat")


async def test_a_stall_is_an_idle_timeout_after_what_came_before_was_written() -> None:
    src = Source(FRAMES, stall_after=3)
    written = bytearray()

    async def write(data: bytes) -> None:
        written.extend(data)

    with anyio.fail_after(5), pytest.raises(ms.IdleTimeoutError) as info:
        await aconvert_into(src.gen(), write, to="anthropic", protocol="openai-chat", idle_timeout=0.2)
    assert b"w2 " in written  # everything converted before the stall was written
    assert b"event: error" in info.value.error_frame  # the in-band error is left to the caller
    assert b"event: error" not in written
    assert info.value.partial is not None
    assert info.value.partial.status == "failed"


async def test_a_slow_writer_is_not_an_idle_upstream() -> None:
    # Only the time spent waiting for the source counts toward the idle limit.
    src = Source([*FRAMES[:3], END])
    writes = 0

    async def write(data: bytes) -> None:
        nonlocal writes
        writes += 1
        await anyio.sleep(0.3)

    with anyio.fail_after(10):
        await aconvert_into(src.gen(), write, to="anthropic", protocol="openai-chat", idle_timeout=0.2)
    assert writes >= 1


async def test_a_total_timeout_fires_while_waiting_for_the_source() -> None:
    src = Source(FRAMES, stall_after=2)
    with anyio.fail_after(5), pytest.raises(ms.StreamTimeoutError) as info:
        await ms.aaggregate(src.gen(), protocol="openai-chat", idle_timeout=30, total_timeout=0.3)
    assert info.value.phase == "total"
    assert info.value.partial is not None
    assert b"w0 w1 " in msgspec.json.encode(info.value.partial)  # what came before is kept


async def test_a_failed_write_stops_the_relay_with_its_error() -> None:
    src = Source(FRAMES)

    async def write(data: bytes) -> None:
        raise OSError("client gone")

    with anyio.fail_after(5), pytest.raises(OSError, match="client gone"):
        await aconvert_into(src.gen(), write, to="anthropic", protocol="openai-chat")
    assert src.reads < len(FRAMES)


@pytest.mark.parametrize(
    "cut", [1, 7, _SLICE, _SLICE + 1, 10**9], ids=["1", "7", "slice", "slice+1", "whole"]
)
async def test_reads_of_any_size_give_the_same_bytes_as_the_sync_conversion(cut: int) -> None:
    """A read larger than a slice is converted in slices: the output is unchanged, the end is seen."""
    data = b"".join([chunk(i) for i in range(1000)] + [END])
    assert len(data) > 4 * _SLICE
    written: list[bytes] = []

    async def write(out: bytes) -> None:
        written.append(out)

    await aconvert_into(
        Source([data[i : i + cut] for i in range(0, len(data), cut)]).gen(),
        write,
        to="anthropic",
        protocol="openai-chat",
    )
    assert b"".join(written) == ms.convert(data, to="anthropic", protocol="openai-chat")


async def test_a_stream_with_one_huge_read_does_not_hold_the_others_back() -> None:
    """Two streams: one reads its whole burst at once, the other a short answer. The short one is
    written whole before the huge one's last write (slices of one read yield to other streams)."""
    huge = b"".join([chunk(i) for i in range(2000)] + [END])
    order: list[str] = []

    def writer(name: str) -> Callable[[bytes], Awaitable[None]]:
        async def write(out: bytes) -> None:
            order.append(name)

        return write

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            partial(
                aconvert_into, Source([huge]).gen(), writer("huge"), to="anthropic", protocol="openai-chat"
            )
        )
        tg.start_soon(
            partial(
                aconvert_into,
                Source([*FRAMES[:3], END]).gen(),
                writer("short"),
                to="anthropic",
                protocol="openai-chat",
            )
        )
    last_short = max(i for i, name in enumerate(order) if name == "short")
    last_huge = max(i for i, name in enumerate(order) if name == "huge")
    assert last_short < last_huge


async def test_aaggregate_keeps_every_byte_before_a_failure_in_the_partial_response() -> None:
    """aaggregate feeds bytes in batches: what was read but not yet fed still reaches ``partial``."""
    data = b"".join(FRAMES[:40])

    async def source() -> AsyncIterator[bytes]:
        for i in range(0, len(data), 50):
            yield data[i : i + 50]
        raise OSError("connection reset")

    with pytest.raises(ms.StreamTransportError) as info:
        await ms.aaggregate(source(), protocol="openai-chat")
    partial = info.value.partial
    assert partial is not None
    assert partial.status == "failed"
    text = "".join(f"w{i} " for i in range(40))
    assert partial.messages[0].content[0].text == text  # type: ignore[union-attr]
    whole = await ms.aaggregate(
        Source([data[i : i + 7] for i in range(0, len(data), 7)]).gen(), protocol="openai-chat"
    )
    assert whole.messages[0].content[0].text == text  # type: ignore[union-attr]


async def test_aconvert_a_generator_ends_a_stall_with_the_idle_timeout_and_its_frame() -> None:
    src = Source(FRAMES, stall_after=3)
    out: list[bytes] = []

    async def read_all() -> None:
        async for piece in ms.aconvert(src.gen(), to="anthropic", protocol="openai-chat", idle_timeout=0.2):
            out.append(piece)

    with anyio.fail_after(5), pytest.raises(ms.IdleTimeoutError) as info:
        await read_all()
    assert b"w2 " in b"".join(out)
    assert out[-1] == info.value.error_frame  # the in-band error went out last
    assert b"event: error" in out[-1]


async def test_astream_a_generator_ends_at_the_total_timeout() -> None:
    src = Source(FRAMES, stall_after=2)
    events = []

    async def read_all() -> None:
        async for event in ms.astream(src.gen(), protocol="openai-chat", idle_timeout=30, total_timeout=0.3):
            events.append(event)

    with anyio.fail_after(5), pytest.raises(ms.StreamTimeoutError) as info:
        await read_all()
    assert info.value.phase == "total"
    assert events  # what came before was yielded


async def test_a_cancellation_from_outside_stays_a_cancellation_under_timeouts() -> None:
    src = Source(FRAMES, stall_after=2)
    written = bytearray()

    async def write(data: bytes) -> None:
        written.extend(data)

    with anyio.fail_after(5):
        with anyio.move_on_after(0.2) as scope:
            await aconvert_into(src.gen(), write, to="anthropic", protocol="openai-chat", idle_timeout=30)
    assert scope.cancelled_caught  # no timeout error: the caller's own cancellation
    assert b"w1 " in written


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_timed_reads_arm_the_loop_timer_once_per_idle_period_not_per_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """O(1) timeouts: a flowing stream read through an async generator does not schedule a timer
    (or a cancel scope's) per read."""
    from maas_stream.io import _source, _timers

    arms = 0
    at = _timers.at

    def counting(*args: Any) -> Any:
        nonlocal arms
        arms += 1
        return at(*args)

    monkeypatch.setattr(_source, "at", counting)  # (the reader's timer: on the loop's timer heap)
    frames = [chunk(i) for i in range(1000)] + [END]
    out = [
        piece
        async for piece in ms.aconvert(
            Source(frames).gen(), to="anthropic", protocol="openai-chat", idle_timeout=60, total_timeout=600
        )
    ]
    assert b"w999 " in b"".join(out)
    response = await ms.aaggregate(Source(frames).gen(), protocol="openai-chat", idle_timeout=60)
    assert response.status == "completed"
    assert arms <= 4


async def test_aaggregate_under_timeouts_leaves_a_cancellation_from_outside_alone() -> None:
    src = Source(FRAMES, stall_after=5)
    with anyio.fail_after(5):
        with anyio.move_on_after(0.2) as scope:
            await ms.aaggregate(src.gen(), protocol="openai-chat", idle_timeout=30, total_timeout=60)
    assert scope.cancelled_caught  # no timeout error: the caller's own cancellation
    assert src.reads == 5


async def test_aaggregate_an_idle_stall_after_a_burst_keeps_the_burst() -> None:
    src = Source(FRAMES, stall_after=40)
    with anyio.fail_after(5), pytest.raises(ms.IdleTimeoutError) as info:
        await ms.aaggregate(src.gen(), protocol="openai-chat", idle_timeout=0.2)
    partial = info.value.partial
    assert partial is not None
    assert partial.messages[0].content[0].text == "".join(f"w{i} " for i in range(40))  # type: ignore[union-attr]
    assert info.value.received == sum(len(f) for f in FRAMES[:40])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_read_refused_at_the_total_deadline_leaves_the_task_alone() -> None:
    """The total deadline passed before a read began: that read raises, and the reader's timer
    does not cancel the task later (nothing is being read)."""
    import time

    from maas_stream.io._source import AsyncReader

    async def source() -> AsyncIterator[bytes]:
        yield FRAMES[0]
        time.sleep(0.15)  # noqa: ASYNC251 - the loop is held: the deadline passes, no read waits
        yield FRAMES[1]

    reader = AsyncReader(source(), idle_timeout=0.05, total_timeout=0.1)
    assert await reader.read() == FRAMES[0]

    async def two_reads() -> None:
        await reader.read()
        await reader.read()

    with pytest.raises(ms.StreamTimeoutError) as info:
        await two_reads()
    assert info.value.phase == "total"
    with anyio.fail_after(5):
        await anyio.sleep(0.2)  # past the idle limit: a stale stamp would cancel this sleep
    await reader.aclose()
