"""The direct write of a streamed answer's body pieces to uvicorn's connection (``_http_direct``).

uvicorn's ``httptools`` and ``h11`` protocols are driven by hand (a fake transport, the request
fed in one read), serving the bridge over an upstream whose frames come one read at a time, so
which pieces were written directly is exact. Each stream is served twice, directly and through
ASGI only, and the bytes on the wire must be the same. The uvicorn behaviour the direct path
relies on is pinned here too: if uvicorn renames its cycle's flags, changes its chunk framing or
h11 its writer, these tests say so.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import h11
import httpx2
import openai
import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from maas_stream.bridge import _answer, _app, _http_direct, create_app
from maas_stream.bridge._uvicorn_http import http_protocol
from tests.bridge.realtime_fakes import serving
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

pytestmark = pytest.mark.anyio

PROTOCOLS: dict[str, Any] = {impl: http_protocol(impl) for impl in ("httptools", "h11")}
"""uvicorn's protocols as ``serve`` serves with them (the bridge's subclasses, ``_uvicorn_http``)."""

FRAMES = [
    f + b"\n\n"
    for f in (RECORDINGS / "anthropic/thinking_parallel_tools.sse").read_bytes().split(b"\n\n")
    if f.strip()
]
BODY = b'{"model": "m", "stream": true, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}'


def post(path: str = "/v1/messages", version: bytes = b"1.1") -> bytes:
    return (
        b"POST %s HTTP/%s\r\nHost: bridge\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (path.encode(), version, len(BODY), BODY)
    )


class FakeTransport:
    """What uvicorn's HTTP protocols ask of their transport; keeps what is written."""

    def __init__(self) -> None:
        self.closing = False
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        assert not self.closing
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)


class PacedUpstream:
    """:data:`FRAMES` a few milliseconds apart (one read each over a real socket)."""

    protocol = "anthropic"
    timeouts = None

    @contextlib.asynccontextmanager
    async def open(self, body: dict[str, Any], *, model: str | None) -> AsyncIterator[Any]:
        yield self._frames()

    async def _frames(self) -> AsyncIterator[bytes]:
        for frame in FRAMES:
            await anyio.sleep(0.003)
            yield frame

    async def aclose(self) -> None:
        pass


class FrameUpstream:
    """An Anthropic upstream answering with :data:`FRAMES`, one read each; ``gate(i)`` awaited before frame ``i``."""

    protocol = "anthropic"
    timeouts = None

    def __init__(self, gate: Callable[[int], Awaitable[None]] | None = None) -> None:
        self.gate = gate

    @contextlib.asynccontextmanager
    async def open(self, body: dict[str, Any], *, model: str | None) -> AsyncIterator[Any]:
        yield self._frames()

    async def _frames(self) -> AsyncIterator[bytes]:
        for i, frame in enumerate(FRAMES):
            await anyio.lowlevel.checkpoint()  # one read per frame
            if self.gate is not None:
                await self.gate(i)  # (and the frame read at once after it)
            yield frame

    async def aclose(self) -> None:
        pass


class Served:
    """One request served by a uvicorn protocol over a fake transport."""

    def __init__(self, name: str, app: Any) -> None:
        self.state = ServerState()
        config = Config(app=app, log_level="warning", lifespan="off")
        self.proto = PROTOCOLS[name](
            config=config, server_state=self.state, app_state={}, _loop=asyncio.get_running_loop()
        )
        self.transport = FakeTransport()
        self.proto.connection_made(self.transport)

    async def run(self, request: bytes) -> bytes:
        self.proto.data_received(request)
        tasks = set(self.state.tasks)
        assert len(tasks) == 1
        with anyio.fail_after(10):
            await asyncio.gather(*tasks)
        return b"".join(self.transport.written)


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each piece offered to the direct path: written (``True``) or left to ASGI."""
    offered: list[bool] = []

    def counted(cycle: Any, data: bytes) -> bool:
        done = _http_direct.write_chunk(cycle, data)
        offered.append(done)
        return done

    monkeypatch.setattr(_answer, "write_chunk", counted)
    return offered


@pytest.fixture
def exchanges(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each request's record, as logged."""
    seen: list[Any] = []
    monkeypatch.setattr(_app, "log_exchange", seen.append)
    return seen


def no_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_answer, "chunked_cycle", lambda send: None)
    monkeypatch.setattr(_answer, "server_cycle", lambda send: None)


def parsed(wire: bytes) -> tuple[h11.Response, bytes]:
    """The response read by h11 as a client: it must be well framed and complete."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="POST", target="/", headers=[("host", "bridge"), ("content-length", "0")]))
    client.send(h11.EndOfMessage())
    client.receive_data(wire)
    response, body = None, b""
    while True:
        event = client.next_event()
        if isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            break
        else:
            raise AssertionError(f"incomplete response: {event!r}")
    assert response is not None
    return response, body


def chunk_count(wire: bytes) -> int:
    """The body's chunks (the last, empty one not counted)."""
    head, _, body = wire.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    count = 0
    while True:
        size, _, body = body.partition(b"\r\n")
        if int(size, 16) == 0:
            return count
        body = body[int(size, 16) + 2 :]
        count += 1


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_pieces_after_the_first_are_written_directly_with_uvicorns_bytes(
    name: str, direct: list[bool], exchanges: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = await Served(name, create_app(upstream=FrameUpstream())).run(post())
    response, body = parsed(wire)
    assert response.status_code == 200
    assert b"event: message_stop" in body
    # Every piece but the first (an ASGI message: the record's first byte) went directly.
    assert direct.count(True) == len(direct) == chunk_count(wire) - 1 >= 10
    (exchange,) = exchanges
    assert exchange.status == 200
    assert exchange.first_byte is not None
    assert not exchange.left
    # The same stream through ASGI only: the same bytes.
    direct.clear()
    no_direct(monkeypatch)
    assert await Served(name, create_app(upstream=FrameUpstream())).run(post()) == wire
    assert direct == []


async def test_an_http10_client_under_h11_is_answered_through_asgi(direct: list[bool]) -> None:
    # h11 frames an HTTP/1.0 answer by closing the connection, not in chunks: not direct.
    wire = await Served("h11", create_app(upstream=FrameUpstream())).run(post(version=b"1.0"))
    assert wire.startswith(b"HTTP/1.1 200 ")
    assert b"transfer-encoding" not in wire.lower()
    assert b"event: message_stop" in wire
    assert direct == []


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_a_paused_transport_takes_the_asgi_path_and_waits_for_the_drain(
    name: str, direct: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    stalled: list[int] = []
    resumer: list[asyncio.Task[None]] = []

    async def resume(before: int) -> None:
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
        stalled.append(len(served.transport.written) - before)  # the paused piece is not written
        served.proto.resume_writing()

    async def gate(i: int) -> None:
        if i == 5:
            served.proto.pause_writing()
            resumer.append(asyncio.ensure_future(resume(len(served.transport.written))))

    served = Served(name, create_app(upstream=FrameUpstream(gate)))
    wire = await served.run(post())
    await resumer[0]
    assert stalled == [0]
    assert parsed(wire)[0].status_code == 200
    assert direct.count(False) == 1  # the paused piece, through ASGI
    assert direct.count(True) == chunk_count(wire) - 2
    no_direct(monkeypatch)
    assert await Served(name, create_app(upstream=FrameUpstream())).run(post()) == wire


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_a_client_gone_mid_stream_ends_the_stream_and_nothing_more_is_written(
    name: str, direct: list[bool], exchanges: list[Any]
) -> None:
    cut: list[int] = []

    async def gate(i: int) -> None:
        if i == 5:
            served.proto.connection_lost(None)
            cut.append(len(served.transport.written))

    app = create_app(upstream=FrameUpstream(gate))
    served = Served(name, app)
    await served.run(post())
    assert len(served.transport.written) == cut[0]
    assert direct[-1] is False  # the piece after the hang-up was offered, and left to uvicorn (dropped)
    assert direct.count(True) >= 2
    assert app.stats.client_gone == 1
    (exchange,) = exchanges
    assert exchange.left


@pytest.mark.parametrize("name", PROTOCOLS)
@pytest.mark.parametrize(
    ("method", "headers", "direct"),
    [
        ("GET", [], True),
        ("HEAD", [], False),
        ("GET", [(b"content-length", b"5")], False),
    ],
)
async def test_only_a_started_chunked_response_behind_uvicorns_own_send_is_direct(
    name: str, method: str, headers: list[tuple[bytes, bytes]], direct: bool
) -> None:
    found: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        found.append(_http_direct.chunked_cycle(send))  # not started
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        found.append(_http_direct.chunked_cycle(send))

        async def wrapped(message: Any) -> None:
            await send(message)

        found.append(_http_direct.chunked_cycle(wrapped))
        found.append(send.__self__)
        await send({"type": "http.response.body", "body": b"hello", "more_body": False})

    request = b"%s / HTTP/1.1\r\nHost: x\r\n\r\n" % method.encode()
    wire = await Served(name, app).run(request)
    assert wire.startswith(b"HTTP/1.1 200 ")
    assert found[0] is None
    assert found[2] is None
    assert (found[1] is not None) is direct
    if direct:
        assert found[1] is found[3]


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_uvicorn_frames_a_piece_as_the_direct_path_does(name: str) -> None:
    # Pinned: uvicorn's own framing of a body piece, and its cycle's flags read by the direct path.
    pieces: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        cycle = send.__self__
        await send({"type": "http.response.start", "status": 200, "headers": []})
        assert (cycle.response_started, cycle.response_complete, cycle.disconnected) == (True, False, False)
        assert cycle.flow.write_paused is False
        before = len(cycle.transport.written)
        await send({"type": "http.response.body", "body": b"x" * 300, "more_body": True})
        pieces.append(b"".join(cycle.transport.written[before:]))
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        assert cycle.response_complete

    await Served(name, app).run(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert pieces == [b"12c\r\n" + b"x" * 300 + b"\r\n"]


async def test_a_cycle_missing_what_the_direct_path_reads_is_served_through_asgi() -> None:
    found: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        cycle = send.__self__
        await send({"type": "http.response.start", "status": 200, "headers": []})
        found.append(_http_direct.chunked_cycle(send))
        conn, cycle.conn = cycle.conn, object()  # an h11 whose writer is named otherwise
        found.append(_http_direct.chunked_cycle(send))
        cycle.conn = conn
        flow, cycle.flow = cycle.flow, object()  # a uvicorn whose flow control is named otherwise
        found.append(_http_direct.chunked_cycle(send))
        cycle.flow = flow
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    await Served("h11", app).run(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert found[0] is not None
    assert found[1:] == [None, None]


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_a_real_uvicorn_server_takes_the_direct_path_for_an_official_sdk(
    name: str, direct: list[bool]
) -> None:
    async def text(app: Any) -> str:
        parts: list[str] = []
        with anyio.fail_after(10):
            async with serving(app, http=name) as port:
                client = openai.AsyncOpenAI(
                    api_key="k",
                    base_url=f"http://127.0.0.1:{port}/v1",
                    http_client=httpx2.AsyncClient(trust_env=False),
                    max_retries=0,
                )
                stream = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                )
                async for chunk in stream:
                    parts += [c.delta.content or "" for c in chunk.choices]
                await client.close()
        return "".join(parts)

    got = await text(create_app(upstream=PacedUpstream()))
    assert direct.count(True) >= 3
    assert False not in direct
    assert got
    assert await text(create_app(upstream=FrameUpstream())) == got  # (unpaced: the same answer)


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_the_start_and_the_first_piece_are_one_write(
    name: str, exchanges: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    served = Served(name, create_app(upstream=FrameUpstream()))
    wire = await served.run(post())
    head, _, first = served.transport.written[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"x-maas-stream-upstream: anthropic" in head
    assert first.startswith(b"%x\r\n" % (len(first) - 2 - first.index(b"\r\n") - 2))  # one whole chunk
    assert b"event: message_start" in first
    # One write per chunk after it, and the end (h11 writes an empty piece too: nothing sent).
    assert len([w for w in served.transport.written if w]) == chunk_count(wire) + 1
    (exchange,) = exchanges
    assert (exchange.status, exchange.streamed) == (200, True)
    assert exchange.first_byte is not None
    # Through ASGI only: the start written alone, the same bytes.
    no_direct(monkeypatch)
    plain = Served(name, create_app(upstream=FrameUpstream()))
    assert await plain.run(post()) == wire
    assert plain.transport.written[0] == head + b"\r\n\r\n"
    assert len([w for w in plain.transport.written if w]) == chunk_count(wire) + 2


@pytest.mark.parametrize("name", PROTOCOLS)
async def test_a_transport_paused_before_the_start_writes_it_alone_after_the_drain(
    name: str, exchanges: list[Any]
) -> None:
    async def resume() -> None:
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
        assert served.transport.written == []  # uvicorn waits for the drain before the start
        served.proto.resume_writing()

    resumer: list[asyncio.Task[None]] = []

    async def gate(i: int) -> None:
        if i == 0:
            served.proto.pause_writing()
            resumer.append(asyncio.ensure_future(resume()))

    served = Served(name, create_app(upstream=FrameUpstream(gate)))
    wire = await served.run(post())
    await resumer[0]
    assert served.transport.written[0].endswith(b"\r\n\r\n")
    assert served.transport.written[0].startswith(b"HTTP/1.1 200 ")
    assert parsed(wire)[0].status_code == 200
    assert exchanges[0].first_byte is not None


@pytest.mark.parametrize("name", PROTOCOLS)
@pytest.mark.parametrize(("headers", "joined"), [([], True), ([(b"content-length", b"5")], False)])
async def test_only_a_chunked_start_takes_its_first_piece_along(
    name: str, headers: list[tuple[bytes, bytes]], joined: bool
) -> None:
    results: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        cycle = _http_direct.server_cycle(send)
        assert cycle is send.__self__
        assert _http_direct.server_cycle(lambda message: send(message)) is None

        async def start() -> None:
            await send({"type": "http.response.start", "status": 200, "headers": headers})

        results.append(await _http_direct.start_with_piece(cycle, start, b"hello"))
        if not results[0]:
            await send({"type": "http.response.body", "body": b"hello", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    served = Served(name, app)
    wire = await served.run(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert results == [joined]
    assert parsed(wire)[1] == b"hello"
    assert served.transport.written[0].endswith(b"5\r\nhello\r\n" if joined else b"\r\n\r\n")
    assert served.proto.cycle.transport is served.transport  # the stand-in gone
