"""An exchange's first byte goes before the frames of streams already flowing (``LeanTransport.heads``).

Under load, the reads of many streams come in one turn of the event loop, and each wakes its
reader in the order they came. An exchange waiting for its answer's head, woken in that same
turn, would run after all of them. Instead, a body woken while an answer's first bytes wait for
their exchange yields once, and the exchange runs first. Driven by hand here: the connections
are the transport's own (``_aiosock.AioConnection``) over a stand-in for the socket, and one
synchronous step delivers the reads of one turn, in the order under test.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest

from maas_stream.bridge._aiosock import AioConnection
from maas_stream.bridge._http1 import Answer
from maas_stream.bridge._transport import LeanTransport, _Body

pytestmark = pytest.mark.anyio

KEY = (b"http", b"127.0.0.1", 80)
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    if request.param[1]:
        pytest.importorskip("uvloop")
    return request.param


class Socket:
    """What the connection uses of its transport; writes are kept."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def abort(self) -> None:
        pass


def connection() -> AioConnection:
    conn = AioConnection(asyncio.get_running_loop(), KEY)
    conn.connection_made(Socket())  # type: ignore[arg-type]
    conn.expires = time.monotonic() + 60
    return conn


def pool_with(conn: AioConnection) -> LeanTransport:
    """A pool whose one idle connection is ``conn`` (the next exchange takes it)."""
    pool = LeanTransport(max_connections=10, max_keepalive=10, keepalive_expiry=60)
    pool._idle[KEY] = [conn]
    pool._idle_count = 1
    return pool


def flowing(pool: LeanTransport) -> tuple[AioConnection, _Body]:
    """A stream already flowing: its head read, its body waiting for the next read."""
    conn = connection()
    answer = Answer(head_only=False)
    answer.feed(HEAD)
    return conn, _Body(pool, conn, answer, None)


def chunk(text: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(text), text)


async def settle() -> None:
    for _ in range(10):
        await anyio.lowlevel.checkpoint()


async def test_an_answer_head_goes_before_frames_woken_in_the_same_turn() -> None:
    exchanged = connection()
    pool = pool_with(exchanged)
    order: list[str] = []
    streams = [flowing(pool) for _ in range(3)]

    async def read(name: str, body: _Body) -> None:
        async for piece in body:
            order.append(f"{name}:{piece.decode()}")

    async def exchange() -> None:
        request = httpx2.Request("POST", "http://127.0.0.1/v1/messages", content=b"{}")
        response = await pool.handle_async_request(request)
        order.append(f"head:{response.status_code}")
        await response.aclose()

    async with anyio.create_task_group() as tg:
        for i, (_, body) in enumerate(streams):
            tg.start_soon(read, f"s{i}", body)
        tg.start_soon(exchange)
        await settle()  # every reader waits for its next read; the request is written
        assert exchanged._transport.written  # type: ignore[union-attr]
        # One turn's reads: the flowing streams' frames first, then the exchange's answer.
        for i, (conn, _) in enumerate(streams):
            conn.data_received(chunk(b"frame %d" % i))
        exchanged.data_received(HEAD)
        assert pool.heads == 1  # counted from the socket's callback, before any reader ran
        await settle()
        assert order[0] == "head:200"
        assert sorted(order[1:]) == ["s0:frame 0", "s1:frame 1", "s2:frame 2"]
        assert pool.heads == 0
        for conn, _ in streams:
            conn.data_received(b"0\r\n\r\n")
        await settle()


async def test_without_an_answer_waiting_the_frames_go_in_the_order_they_came() -> None:
    pool = pool_with(connection())
    order: list[str] = []
    streams = [flowing(pool) for _ in range(3)]

    async def read(name: str, body: _Body) -> None:
        async for piece in body:
            order.append(f"{name}:{piece.decode()}")

    async with anyio.create_task_group() as tg:
        for i, (_, body) in enumerate(streams):
            tg.start_soon(read, f"s{i}", body)
        await settle()
        for i, (conn, _) in reversed(list(enumerate(streams))):
            conn.data_received(chunk(b"frame %d" % i))
        await settle()
        assert order == ["s2:frame 2", "s1:frame 1", "s0:frame 0"]
        for conn, _ in streams:
            conn.data_received(b"0\r\n\r\n")
        await settle()


@pytest.mark.parametrize("answered", [False, True], ids=["before-its-answer", "after-its-answer"])
async def test_a_cancelled_exchange_leaves_no_head_counted(answered: bool) -> None:
    exchanged = connection()
    pool = pool_with(exchanged)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            request = httpx2.Request("POST", "http://127.0.0.1/v1/messages", content=b"{}")
            tg.start_soon(pool.handle_async_request, request)
            await settle()
            assert exchanged.answered is not None  # waiting for its answer's first bytes
            if answered:
                exchanged.data_received(HEAD[:10])  # (its first bytes; the head is not whole)
                assert pool.heads == 1
            scope.cancel()
    assert pool.heads == 0
    assert exchanged.answered is None
