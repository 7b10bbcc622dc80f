"""A new stream's steps go before the frames of streams already flowing (``bridge._ahead``).

Under load, the reads of many streams come in one turn of the event loop, and each wakes its
reader in the order they came. A new stream's step scheduled in that same turn (an exchange
woken by its answer's head; a request's task made by uvicorn's HTTP protocol, or woken by its
body) would run after all of them. Instead, a body woken while such a step waits yields once,
and the step runs first. Driven by hand here: the connections are the transport's own
(``_aiosock.AioConnection``) over a stand-in for the socket, uvicorn's HTTP protocols (the
bridge's subclasses, and uvicorn's own as the control) over another, and one synchronous step
delivers the reads of one turn, in the order under test.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2
import pytest

from maas_stream.bridge import _uvicorn_http
from maas_stream.bridge._ahead import AHEAD
from maas_stream.bridge._aiosock import AioConnection
from maas_stream.bridge._body import Body as _Body
from maas_stream.bridge._http1 import Answer
from maas_stream.bridge._transport import LeanTransport
from tests.bridge.test_http_direct import FakeTransport

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


@pytest.fixture(autouse=True)
def counted_from_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test counts from zero (the count is the process's; a loop abandoned elsewhere may leave it up)."""
    monkeypatch.setattr(AHEAD, "waiting", 0)


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
    """A stream already flowing: its head and first piece read, its body waiting for the next read.

    (A body's first piece is a new stream's step: its read goes first too, ``_body``.)
    """
    conn = connection()
    answer = Answer(head_only=False)
    answer.feed(HEAD + chunk(FIRST))
    return conn, _Body(pool, conn, answer, None)


FIRST = b"the first piece"
"""What a flowing stream (:func:`flowing`) read before the test's frames."""


def chunk(text: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(text), text)


async def settle() -> None:
    for _ in range(10):
        await anyio.lowlevel.checkpoint()


class Flowing:
    """Three streams already flowing on ``pool``; their readers note each piece in ``order``."""

    def __init__(self, pool: LeanTransport, order: list[str]) -> None:
        self.order = order
        self.streams = [flowing(pool) for _ in range(3)]
        self.frames = [f"s{i}:frame {i}" for i in range(3)]

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        for i, (_, body) in enumerate(self.streams):
            tg.start_soon(self._read, f"s{i}", body)

    async def _read(self, name: str, body: _Body) -> None:
        async for piece in body:
            if piece != FIRST:
                self.order.append(f"{name}:{piece.decode()}")

    def deliver(self, *, reverse: bool = False) -> None:
        """One frame per stream, from the sockets' callbacks (the reads of one turn)."""
        numbered = list(enumerate(self.streams))
        for i, (conn, _) in reversed(numbered) if reverse else numbered:
            conn.data_received(chunk(b"frame %d" % i))

    async def end(self) -> None:
        for conn, _ in self.streams:
            conn.data_received(b"0\r\n\r\n")
        await settle()


async def test_an_answer_head_goes_before_frames_woken_in_the_same_turn() -> None:
    exchanged = connection()
    pool = pool_with(exchanged)
    order: list[str] = []
    streams = Flowing(pool, order)

    async def exchange() -> None:
        request = httpx2.Request("POST", "http://127.0.0.1/v1/messages", content=b"{}")
        response = await pool.handle_async_request(request)
        order.append(f"head:{response.status_code}")
        await response.aclose()

    async with anyio.create_task_group() as tg:
        streams.start(tg)
        tg.start_soon(exchange)
        await settle()  # every reader waits for its next read; the request is written
        assert exchanged._transport.written  # type: ignore[union-attr]
        # One turn's reads: the flowing streams' frames first, then the exchange's answer.
        streams.deliver()
        exchanged.data_received(HEAD)
        assert AHEAD.waiting == 1  # counted from the socket's callback, before any reader ran
        await settle()
        assert order[0] == "head:200"
        assert sorted(order[1:]) == streams.frames
        assert AHEAD.waiting == 0
        assert not exchanged.first
        await streams.end()


async def test_without_a_first_step_waiting_the_frames_go_in_the_order_they_came() -> None:
    order: list[str] = []
    streams = Flowing(pool_with(connection()), order)
    async with anyio.create_task_group() as tg:
        streams.start(tg)
        await settle()
        streams.deliver(reverse=True)
        await settle()
        assert order == streams.frames[::-1]
        await streams.end()


@pytest.mark.parametrize("answered", [False, True], ids=["before-its-answer", "after-its-answer"])
async def test_a_cancelled_exchange_leaves_nothing_counted(answered: bool) -> None:
    exchanged = connection()
    pool = pool_with(exchanged)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            request = httpx2.Request("POST", "http://127.0.0.1/v1/messages", content=b"{}")
            tg.start_soon(pool.handle_async_request, request)
            await settle()
            assert exchanged.first  # waiting for its answer's first bytes
            if answered:
                exchanged.data_received(HEAD[:10])  # (its first bytes; the head is not whole)
                assert AHEAD.waiting == 1
            scope.cancel()
    await settle()
    assert AHEAD.waiting == 0
    assert not exchanged.first  # a later answer on it is not put ahead


def _protocols() -> list[Any]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    found = [
        pytest.param(_uvicorn_http.AheadH11Protocol, True, id="bridge-h11"),
        pytest.param(H11Protocol, False, id="uvicorn-h11"),
    ]
    if _uvicorn_http.AheadHttpToolsProtocol is not None:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        found.append(pytest.param(_uvicorn_http.AheadHttpToolsProtocol, True, id="bridge-httptools"))
        found.append(pytest.param(HttpToolsProtocol, False, id="uvicorn-httptools"))
    return found


REQUEST = b"POST /new HTTP/1.1\r\nHost: bridge\r\nContent-Length: 2\r\n\r\n"


@pytest.mark.parametrize("split", [False, True], ids=["whole", "head-then-body"])
@pytest.mark.parametrize(("protocol", "ahead"), _protocols())
async def test_a_request_s_step_goes_before_frames_woken_in_the_same_turn(
    protocol: Any, ahead: bool, split: bool
) -> None:
    # A request whose head and body come together starts in that turn; one whose body comes in
    # a read of its own (a busy client's, often) is woken by it: either step goes first.
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    order: list[str] = []
    streams = Flowing(pool_with(connection()), order)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = await receive()
        order.append(f"request:{scope['path']}:{body['body'].decode()}")
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    config = Config(app=app, log_level="warning", lifespan="off")
    config.load()
    server = protocol(
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )
    client = FakeTransport()
    server.connection_made(client)
    async with anyio.create_task_group() as tg:
        streams.start(tg)
        if split:
            server.data_received(REQUEST)
        await settle()  # every reader waits for its next read (and the request for its body)
        assert AHEAD.waiting == 0
        # One turn's reads: the flowing streams' frames first, then the request's (rest).
        streams.deliver()
        server.data_received(b"{}" if split else REQUEST + b"{}")
        assert AHEAD.waiting == (1 if ahead else 0)
        await settle()
        mine = "request:/new:{}"
        assert order == ([mine, *streams.frames] if ahead else [*streams.frames, mine])
        assert AHEAD.waiting == 0
        assert client.written[0].startswith(b"HTTP/1.1 204 ")
        await streams.end()
    server.connection_lost(None)


@pytest.mark.parametrize("impl", [None, "h11", "httptools"])
def test_http_protocol_is_uvicorn_s_class_under_the_bridge_s(impl: str | None) -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    expected: type[Any] = H11Protocol
    if impl != "h11":
        if _uvicorn_http.AheadHttpToolsProtocol is None:
            pytest.skip("httptools is not installed")
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        expected = HttpToolsProtocol
    chosen = _uvicorn_http.http_protocol(impl)
    assert issubclass(chosen, expected)
    assert chosen is not expected


def test_http_protocol_refuses_an_unknown_implementation() -> None:
    with pytest.raises(ValueError, match="expected one of httptools, h11, not 'zttp'"):
        _uvicorn_http.http_protocol("zttp")
