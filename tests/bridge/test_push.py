"""The hand-over, the connection's and the body's side (``bridge._aiosock``, ``_ahead``, ``_body``).

While the relay waits for the upstream on an asyncio loop (plain or uvloop), what each read
brings is de-chunked, converted and written in one callback per turn of the loop (after the
steps a new stream puts ahead, ``_ahead``), without waking the relay's task (the relay's side
and the bridge end to end: ``test_push_relay``).
It must change nothing but the cost: the same bytes to the client as the task's loop writes, in
the same order, the same errors raised from the same place, the same timeouts, the connection
reused as before. The upstreams here are raw loopback servers that pace their frames, so that
the reader waits between reads (what a model's tokens do); each case also runs without the
hand-over (no ``write_now``) as its own reference.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2
import pytest

from maas_stream.bridge._ahead import AHEAD, SLICE, HandOvers, go_first, hand_overs
from maas_stream.bridge._aiosock import AioConnection
from maas_stream.io._kinds import chunk_pusher, response_chunks
from tests.bridge.test_http_direct import FakeTransport
from tests.bridge.test_transport import BODY, answer, raw_server
from tests.bridge.test_transport_loops import client

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.anyio

ASYNCIO = [
    pytest.param(("asyncio", {}), id="asyncio"),
    pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
]


@pytest.fixture(params=ASYNCIO)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    if request.param[1]:
        pytest.importorskip("uvloop")
    return request.param


def paced(pieces: list[bytes], pause: float = 0.003, close: bool = False) -> Any:
    """A raw server's handler: the pieces one socket write each, ``pause`` seconds apart."""

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        for piece in pieces:
            try:
                await stream.send(piece)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return False
            await anyio.sleep(pause)
        return not close

    return handler


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


# ---------------------------------------------------------------------- the connection's sink


async def test_what_a_read_brings_goes_to_the_sink_after_the_loops_ready_steps_and_behind_one_put_ahead() -> (
    None
):
    loop = asyncio.get_running_loop()
    conn = AioConnection(loop, (b"http", b"127.0.0.1", 1))
    conn.connection_made(FakeTransport())  # type: ignore[arg-type]
    events: list[Any] = []
    wake = False

    def sink(data: bytes) -> bool:
        events.append(data)
        return wake

    waiter = conn.wait(None)
    conn.sink = sink
    conn.data_received(b"a")
    conn.data_received(b"b")  # two reads before the hand-over: one piece
    assert events == []  # not in the read's own callback
    loop.call_soon(events.append, "step")  # a new stream's step, put ahead (as _ahead's callers do)
    go_first(loop)
    for _ in range(3):
        await anyio.lowlevel.checkpoint()
    assert events == ["step", b"ab"]  # the hand-over went once more behind it
    assert (waiter.done(), conn.sink, conn.take()) == (False, sink, None)
    conn.data_received(b"c")
    await anyio.lowlevel.checkpoint()
    assert events[-1] == b"c"
    wake = True
    conn.data_received(b"d")
    await anyio.lowlevel.checkpoint()
    assert (events[-1], waiter.done(), conn.take()) == (b"d", True, None)
    assert conn.sink is None  # it asked for the reader: it leaves
    conn.data_received(b"e")  # the reader's now
    await anyio.lowlevel.checkpoint()
    assert (events[-1], conn.take()) == (b"d", b"e")
    conn.sink = sink
    conn.data_received(b"f")
    conn.sink = None  # the reader stopped waiting before the hand-over ran: it takes the data
    await anyio.lowlevel.checkpoint()
    assert (events[-1], conn.take()) == (b"d", b"f")
    assert AHEAD.waiting == 0


class ByHand:
    """What :class:`HandOvers` asks of its loop, run by hand (one callback at a time, in order),
    and connections that note their hand-overs in :attr:`handed`."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[Any, tuple[Any, ...]]] = []
        self.handed: list[object] = []
        self.turns = HandOvers(self)  # type: ignore[arg-type]

    def call_soon(self, callback: Any, *args: Any) -> None:
        self.scheduled.append((callback, args))

    def run_next(self) -> None:
        callback, args = self.scheduled.pop(0)
        callback(*args)

    def read(self, name: object) -> None:
        """A read for a sink on connection ``name``."""
        handed = self.handed

        class Conn:
            def hand_over(self) -> None:
                handed.append(name)

        self.turns.add(Conn())


async def test_a_turns_batch_goes_once_behind_a_step_put_ahead_and_later_reads_make_the_next() -> None:
    loop = ByHand()
    loop.read("a")
    loop.read("b")
    assert len(loop.scheduled) == 1  # one callback for the turn's reads
    AHEAD.waiting += 1  # a new stream's step, put ahead in the same turn
    try:
        loop.run_next()  # the turn's callback: the batch goes once more behind the step
        assert (loop.handed, len(loop.scheduled)) == ([], 1)
        loop.read("c")  # a read after it: the next batch, with a callback of its own
        assert len(loop.scheduled) == 2
        loop.run_next()  # the first batch (behind the step already): a and b only
        assert loop.handed == ["a", "b"]
        loop.run_next()  # c's batch: a step still waits ahead, so it goes behind it in turn
        assert (loop.handed, len(loop.scheduled)) == (["a", "b"], 1)
    finally:
        AHEAD.waiting -= 1
    loop.run_next()
    assert (loop.handed, loop.scheduled) == (["a", "b", "c"], [])


async def test_a_batch_larger_than_a_slice_lets_a_step_put_ahead_in_between_slices() -> None:
    loop = ByHand()
    size = 2 * SLICE + 3
    for number in range(size):
        loop.read(number)
    loop.run_next()  # the first slice; the rest in a callback of its own (the loop polls before it)
    assert (loop.handed, len(loop.scheduled)) == (list(range(SLICE)), 1)
    AHEAD.waiting += 1  # a new stream's step came with the poll
    try:
        loop.run_next()  # the second slice goes once behind it
        assert (loop.handed, len(loop.scheduled)) == (list(range(SLICE)), 1)
        loop.run_next()  # (behind the step already: runs)
        assert (loop.handed, len(loop.scheduled)) == (list(range(2 * SLICE)), 1)
    finally:
        AHEAD.waiting -= 1
    loop.run_next()
    assert (loop.handed, loop.scheduled) == (list(range(size)), [])


class Stub(FakeTransport):
    """A transport that can also be aborted."""

    aborted = False

    def abort(self) -> None:
        self.aborted = True
        self.closing = True


async def test_one_callback_hands_a_turns_reads_over_and_a_sink_that_raises_fails_its_connection() -> None:
    loop = asyncio.get_running_loop()
    conns = [AioConnection(loop, (b"http", b"127.0.0.1", n)) for n in range(3)]
    transports = [Stub() for _ in conns]
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for n, (conn, transport) in enumerate(zip(conns, transports, strict=True)):
        conn.connection_made(transport)  # type: ignore[arg-type]
        conn.sink = keeping(got[n])
    waiter = conns[2].wait(None)
    for data in (b"a", b"b"):
        for conn in conns:
            conn.data_received(data)
    queued = hand_overs(loop)._waiting
    assert queued == conns  # one entry per connection, whatever its reads
    await anyio.lowlevel.checkpoint()
    assert (got, hand_overs(loop)._waiting) == ({0: [b"ab"], 1: [b"ab"], 2: [b"ab"]}, [])

    def broken(data: bytes) -> bool:
        raise ValueError("a sink must not raise")

    conns[2].sink = broken
    conns[2].data_received(b"c")
    conns[0].data_received(b"d")
    await anyio.lowlevel.checkpoint()
    assert got[0][-1] == b"d"  # the others are handed over all the same
    assert (waiter.done(), transports[2].aborted) == (True, True)
    assert conns[2].sink is None
    with pytest.raises(ValueError, match="must not raise"):
        conns[2].take()  # what the reader, woken, raises


# ---------------------------------------------------------------------- the body's hand-over


@pytest.mark.parametrize("refuse", ["none", "odd", "all"])
async def test_pieces_handed_over_or_yielded_are_the_body_in_order_and_the_connection_is_reused(
    refuse: str,
) -> None:
    data = answer(BODY)
    cuts = [data[i : i + 700] for i in range(0, len(data), 700)]
    seen: list[tuple[str, bytes]] = []

    def sink(piece: bytes) -> bool:
        number = sum(1 for kind, _ in seen if kind != "yielded")
        if refuse == "all" or (refuse == "odd" and number % 2):
            seen.append(("refused", piece))
            return False
        seen.append(("taken", piece))
        return True

    async with raw_server(paced(cuts)) as (url, connections), client() as c:
        for attempt in range(2):
            async with c.stream("POST", url, json={}) as resp:
                pusher = chunk_pusher(resp)
                assert pusher is not None
                pusher(sink if attempt == 0 else None)
                async for piece in response_chunks(resp):
                    seen.append(("yielded", piece))
                downloaded = resp.num_bytes_downloaded
            if attempt == 0:
                first, seen = seen, []
        assert connections == [2]  # read to its end both times: the connection was kept
    # Each piece refused is the next one yielded; nothing else is yielded twice.
    for i, (kind, piece) in enumerate(first):
        if kind == "refused":
            assert first[i + 1] == ("yielded", piece)
    assert b"".join(p for kind, p in first if kind != "refused") == BODY
    assert downloaded == len(BODY)
    taken = sum(1 for kind, _ in first if kind == "taken")
    assert (taken > 3) if refuse != "all" else (taken == 0)
    assert [kind for kind, _ in seen] == ["yielded"] * len(seen)  # stopped: all yielded
    assert b"".join(p for _, p in seen) == BODY


@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
@pytest.mark.parametrize("step", [1, 13, 700])
async def test_the_body_handed_over_is_the_framed_bytes_whatever_the_framing_and_the_cut(
    framing: str, step: int
) -> None:
    body = BODY[: {1: 1500, 13: 4000}.get(step)]  # (fewer writes for the small cuts)
    data = answer(body, framing=framing)
    pieces = [data[i : i + step] for i in range(0, len(data), step)]
    seen: list[bytes] = []  # what was handed over and what was yielded, as it came
    taken: list[bytes] = []

    def sink(piece: bytes) -> bool:
        taken.append(piece)
        seen.append(piece)
        return True

    async with raw_server(paced(pieces, pause=0.0 if step == 1 else 0.001, close=True)) as (url, _):
        async with client() as c, c.stream("POST", url, json={}) as resp:
            pusher = chunk_pusher(resp)
            assert pusher is not None
            pusher(sink)
            await read_into(response_chunks(resp), seen)
            downloaded = resp.num_bytes_downloaded
    assert b"".join(seen) == body
    assert downloaded == len(body)
    assert taken  # (the reader waited often enough for something to be handed over)


async def test_the_first_piece_wakes_its_reader_ahead_and_is_never_handed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The head alone, then the body's first piece, then the rest: the head's read and the first
    # piece's wake the reader ahead of flowing streams (``_ahead.go_first``, a new stream's
    # steps); the first piece is yielded even with a sink there, the pieces after it handed over.
    data = answer(BODY)
    end = data.index(b"\r\n\r\n") + 4
    parts = [data[:end]] + [data[i : i + 700] for i in range(end, len(data), 700)]
    ahead: list[int] = []

    def counted(loop: asyncio.AbstractEventLoop) -> None:
        ahead.append(1)
        go_first(loop)

    monkeypatch.setattr("maas_stream.bridge._aiosock.go_first", counted)
    seen: list[tuple[str, bytes]] = []

    def sink(piece: bytes) -> bool:
        seen.append(("taken", piece))
        return True

    async with raw_server(paced(parts, pause=0.01)) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            pusher = chunk_pusher(resp)
            assert pusher is not None
            pusher(sink)
            assert ahead == [1]  # the head's read
            async for piece in response_chunks(resp):
                seen.append(("yielded", piece))
                if len(seen) == 1:
                    assert ahead == [1, 1]  # the first piece's read
    assert ahead == [1, 1]  # and no other
    assert seen[0][0] == "yielded"
    assert [kind for kind, _ in seen].count("taken") >= len(parts) - 3  # the rest (the end wakes the reader)
    assert b"".join(piece for _, piece in seen) == BODY


@pytest.mark.parametrize("way", ["aiter_raw", "read timeout"])
async def test_nothing_is_handed_over_through_aiter_raw_or_with_a_read_timeout(way: str) -> None:
    data = answer(BODY)
    cuts = [data[i : i + 700] for i in range(0, len(data), 700)]
    taken: list[bytes] = []
    c = client()
    if way == "read timeout":  # (the bridge's own client has none: its readers time the stream)
        c = httpx2.AsyncClient(transport=c._transport, timeout=httpx2.Timeout(2.0, read=5.0))
    async with raw_server(paced(cuts)) as (url, _), c:
        async with c.stream("POST", url, json={}) as resp:
            pusher = chunk_pusher(resp)
            assert pusher is not None
            pusher(keep(taken))
            pieces = resp.aiter_raw() if way == "aiter_raw" else response_chunks(resp)
            body = b"".join([piece async for piece in pieces])
    assert (body, taken) == (BODY, [])


async def test_a_broken_chunk_in_a_read_handed_over_is_raised_as_without_it() -> None:
    # The head with a first chunk, a second chunk (taken in the callback), a size line not in hex.
    parts = [HEAD + chunk(BODY[:1000]), chunk(BODY[1000:2000]), b"zz\r\n"]
    errors = []
    for push in (False, True):
        taken: list[bytes] = []
        pieces: list[bytes] = []
        async with raw_server(paced(parts, pause=0.02)) as (url, _), client() as c:
            async with c.stream("POST", url, json={}) as resp:
                pusher = chunk_pusher(resp)
                assert pusher is not None
                if push:
                    pusher(keep(taken))
                with pytest.raises(httpx2.RemoteProtocolError) as caught:
                    await read_into(response_chunks(resp), pieces)
                assert caught.value.request is resp.request
                errors.append((str(caught.value), b"".join(pieces + taken)))
        assert taken == ([BODY[1000:2000]] if push else [])
    assert errors[0] == errors[1]
    assert errors[0][1] == BODY[:2000]


def keep(into: list[bytes]) -> Callable[[bytes], bool]:
    """A body's sink that takes every piece into ``into`` (``True``: taken)."""

    def sink(piece: bytes) -> bool:
        into.append(piece)
        return True

    return sink


def keeping(into: list[bytes]) -> Callable[[bytes], bool]:
    """A connection's sink that keeps what arrives in ``into`` and lets its reader sleep (``False``)."""

    def sink(data: bytes) -> bool:
        into.append(data)
        return False

    return sink


async def read_into(pieces: Any, out: list[bytes]) -> None:
    async for piece in pieces:
        out.append(piece)
