"""The bridge's own websocket server protocol (``_ws_lean``): uvicorn's ASGI behaviour, lean.

Driven two ways: by hand (a fake transport, frames fed one read at a time: what is queued, when
reading pauses, what is written, what the connection still holds) and through a real uvicorn
(``httptools`` and ``h11``, which build the protocol, hand it the transport and the handshake
re-serialized, and shut it down) with the ``websockets`` client. Those pin what the module relies
on in uvicorn and ``websockets``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import struct
import sys
import weakref
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import pytest
from uvicorn.config import Config
from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.server import ServerState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Close, Frame, Opcode
from websockets.protocol import Protocol

from maas_stream.bridge import _ws_lean
from maas_stream.bridge._uvicorn_http import http_protocol
from maas_stream.bridge._ws import ClientSocket
from maas_stream.bridge._ws_lean import LARGE_MESSAGE, QUEUE_DEPTH, LeanWebSocketProtocol

from .realtime_fakes import serving

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

Scope = dict[str, Any]

REQUEST = (
    b"GET /ws/%C3%A9?a=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: one, two\r\nX-Name: caf\xe9\r\n\r\n"
)


def masked(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    """One client frame (masked, as a client sends it)."""
    return Frame(opcode, data, fin=fin).serialize(mask=True, extensions=[])


def text(data: str) -> bytes:
    return masked(Opcode.TEXT, data.encode())


class Wire:
    """A fake transport: what was written (and when the writing side closed), pauses and resumes."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.paused = False
        self.changes: list[str] = []
        self.closing = False

    def pause_reading(self) -> None:
        assert not self.paused
        self.paused = True
        self.changes.append("pause")

    def resume_reading(self) -> None:
        assert self.paused
        self.paused = False
        self.changes.append("resume")

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        assert not self.closing, "written after close"
        self.out += data

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("10.0.0.7", 50000)}.get(name, default)

    def get_protocol(self) -> Any:
        return None  # (uvicorn's HTTP protocol, handing the connection over, in a real server)

    def frames(self) -> list[Frame]:
        """The server's frames written after its 101 answer."""
        head, _, rest = bytes(self.out).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        reader = Protocol(side=__import__("websockets.protocol").protocol.CLIENT)
        reader.receive_data(rest)
        return [e for e in reader.events_received() if isinstance(e, Frame)]


def make(app: Any, **config: Any) -> tuple[LeanWebSocketProtocol, Wire, ServerState]:
    state = ServerState()
    proto = LeanWebSocketProtocol(
        config=Config(app=app, log_level="warning", **config),
        server_state=state,
        app_state={"shared": 1},
        _loop=asyncio.get_running_loop(),
    )
    wire = Wire()
    proto.connection_made(wire)  # type: ignore[arg-type]
    return proto, wire, state


async def settle() -> None:
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


class Held:
    """An app that accepts (``subprotocol``) and then waits for ``done``, reading nothing."""

    def __init__(self, subprotocol: str | None = None) -> None:
        self.done = anyio.Event()
        self.scope: Scope = {}
        self.subprotocol = subprotocol
        self.receive: Any = None
        self.send: Any = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        assert await receive() == {"type": "websocket.connect"}
        await send({"type": "websocket.accept", "subprotocol": self.subprotocol, "headers": [(b"x-a", b"b")]})
        await self.done.wait()


async def opened(**config: Any) -> tuple[LeanWebSocketProtocol, Wire, Held]:
    app = Held("two")
    proto, wire, _ = make(app, **config)
    proto.data_received(REQUEST)
    await settle()
    assert proto.handshake_complete
    return proto, wire, app


# By hand: the handshake


async def test_the_scope_and_the_accept_are_uvicorns() -> None:
    _proto, wire, app = await opened(root_path="/api")
    scope = app.scope
    assert {k: v for k, v in scope.items() if k not in ("headers", "asgi")} == {
        "type": "websocket",
        "http_version": "1.1",
        "scheme": "ws",
        "server": ("127.0.0.1", 8000),
        "client": ("10.0.0.7", 50000),
        "root_path": "/api",
        "path": "/api/ws/é",
        "raw_path": b"/api/ws/%C3%A9",
        "query_string": b"a=1",
        "subprotocols": ["one", "two"],
        "state": {"shared": 1},
        "extensions": {"websocket.http.response": {}},
    }
    assert scope["asgi"]["spec_version"] == "2.4"
    assert (b"x-name", b"caf\xe9") in [(k.lower(), v) for k, v in scope["headers"]]
    assert all(type(k) is bytes and type(v) is bytes for k, v in scope["headers"])
    head = bytes(wire.out).split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 101")
    assert b"\r\nsec-websocket-protocol: two" in head
    assert b"\r\nx-a: b" in head
    app.done.set()


async def test_an_open_connection_holds_nothing_of_its_handshake() -> None:
    proto, _, app = await opened()
    assert not hasattr(proto, "__dict__")
    assert not hasattr(proto, "request")
    assert not hasattr(proto, "response")
    assert (proto._scope, proto._response, proto._app_state, proto._held) == (None, None, None, False)
    assert proto._proto.parser.gi_code is Protocol.parse.__code__  # type: ignore[attr-defined]  # the frames' parser, restarted
    assert proto._timer is not None  # the keepalive: the shared heap's timer, no loop handle
    proto.data_received(text("one"))
    assert await proto.receive() == {"type": "websocket.receive", "text": "one"}
    app.done.set()


async def test_a_frame_half_read_at_the_accept_keeps_the_parser_until_it_is_read() -> None:
    gate = anyio.Event()
    got: list[Any] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        got.append(await receive())
        await gate.wait()
        await send({"type": "websocket.accept"})
        got.append(await receive())

    proto, _, _ = make(app)
    data = text("x" * 300)
    proto.data_received(REQUEST + data[:2])
    gate.set()
    await settle()
    assert proto.handshake_complete
    assert proto._held
    proto.data_received(data[2:])
    assert not proto._held
    assert proto._proto.parser.gi_code is Protocol.parse.__code__
    await settle()
    assert got == [{"type": "websocket.connect"}, {"type": "websocket.receive", "text": "x" * 300}]


async def test_an_invalid_request_gets_websockets_answer_and_no_app() -> None:
    calls: list[Scope] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        calls.append(scope)

    proto, wire, state = make(app)
    proto.data_received(REQUEST.replace(b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Version: 8"))
    assert bytes(wire.out).startswith(b"HTTP/1.1 400")
    assert wire.closing
    proto.data_received(b"garbage")  # nothing more is answered
    await settle()
    assert (calls, state.tasks) == ([], set())


# By hand: messages and backpressure


async def test_a_client_that_waits_for_its_answers_is_never_paused() -> None:
    proto, wire, app = await opened()
    for n in range(3 * QUEUE_DEPTH):
        proto.data_received(text(f"m{n}"))
        assert await proto.receive() == {"type": "websocket.receive", "text": f"m{n}"}
    assert wire.changes == []
    app.done.set()


async def test_a_readers_cancellation_is_not_another_readers() -> None:
    # Two ASGI receive() calls wait at once; cancelling one leaves the other waiting for the message.
    proto, _, app = await opened()
    first = asyncio.ensure_future(proto.receive())
    second = asyncio.ensure_future(proto.receive())
    await settle()
    first.cancel()
    await settle()
    assert first.cancelled()
    assert not second.done()
    proto.data_received(text("after"))
    assert await second == {"type": "websocket.receive", "text": "after"}
    app.done.set()


async def test_a_flooding_client_is_paused_at_the_depth_and_resumed_when_all_are_read() -> None:
    proto, wire, app = await opened()
    for _ in range(2):
        sent = 0
        while not wire.paused and sent < 10 * QUEUE_DEPTH:
            proto.data_received(text(f"m{sent}"))
            sent += 1
        assert sent == QUEUE_DEPTH
        for n in range(QUEUE_DEPTH):
            assert wire.paused  # not resumed before all are read
            assert (await proto.receive())["text"] == f"m{n}"
        assert not wire.paused
    assert wire.changes == ["pause", "resume"] * 2
    app.done.set()


@pytest.mark.parametrize("pieces", [1, 3], ids=["one frame", "fragmented"])
async def test_a_large_message_pauses_reading_at_once(pieces: int) -> None:
    proto, wire, app = await opened()
    body = b"x" * LARGE_MESSAGE
    step = -(-len(body) // pieces)
    parts = [body[i : i + step] for i in range(0, len(body), step)]
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        proto.data_received(masked(Opcode.BINARY if n == 0 else Opcode.CONT, part, fin=last))
        assert wire.paused is last
    assert await proto.receive() == {"type": "websocket.receive", "bytes": body}
    assert wire.changes == ["pause", "resume"]
    proto.data_received(masked(Opcode.BINARY, body[1:]))
    assert not wire.paused
    app.done.set()


async def test_closing_while_paused_resumes_reading_for_the_close_reply() -> None:
    proto, wire, app = await opened()
    proto.data_received(b"".join(text(f"m{n}") for n in range(QUEUE_DEPTH + 3)))
    assert wire.changes == ["pause"]  # once, whatever one read brought
    await proto.send({"type": "websocket.close", "code": 4001, "reason": "done"})
    assert wire.changes == ["pause", "resume"]
    proto.data_received(text("late"))  # dropped: the app is past its close
    assert len(proto._messages) == QUEUE_DEPTH + 4  # (the messages, and the app's own disconnect)
    assert wire.frames()[-1].data == Close(4001, "done").serialize()
    proto.data_received(masked(Opcode.CLOSE, Close(4001, "done").serialize()))  # the reply
    assert wire.closing
    assert proto._timer is None
    app.done.set()


async def test_invalid_utf8_text_fails_the_connection_with_1007() -> None:
    proto, wire, app = await opened()
    proto.data_received(masked(Opcode.TEXT, b"\xff\xfe"))
    assert Close.parse(wire.frames()[-1].data).code == 1007
    assert wire.closing
    assert proto.take() == {"type": "websocket.disconnect", "code": 1007, "reason": ""}
    app.done.set()


async def test_a_too_big_message_fails_the_connection_with_1009() -> None:
    proto, wire, app = await opened(ws_max_size=100)
    proto.data_received(text("fine") + text("x" * 101))  # one read: the message before is kept
    assert Close.parse(wire.frames()[-1].data).code == 1009
    assert proto.take() == {"type": "websocket.receive", "text": "fine"}
    assert proto.take()["code"] == 1009
    app.done.set()


async def test_a_ping_is_answered_and_the_clients_close_echoed() -> None:
    proto, wire, app = await opened()
    proto.data_received(masked(Opcode.PING, b"hi"))
    assert (wire.frames()[-1].opcode, wire.frames()[-1].data) == (Opcode.PONG, b"hi")
    proto.data_received(masked(Opcode.CLOSE, Close(4000, "bye").serialize()))
    assert Close.parse(wire.frames()[-1].data) == Close(4000, "bye")
    assert wire.closing
    assert await proto.receive() == {"type": "websocket.disconnect", "code": 4000, "reason": "bye"}
    app.done.set()


async def test_a_send_once_the_client_is_gone_raises_client_disconnected() -> None:
    proto, wire, app = await opened()
    proto.connection_lost(None)
    assert await proto.receive() == {"type": "websocket.disconnect", "code": 1005}
    with pytest.raises(ClientDisconnected):
        await app.send({"type": "websocket.send", "text": "late"})
    assert wire.closing
    app.done.set()


async def test_a_send_waits_while_the_write_buffer_is_full() -> None:
    proto, wire, app = await opened()
    proto.pause_writing()
    sent = asyncio.ensure_future(app.send({"type": "websocket.send", "text": "a"}))
    gone = asyncio.ensure_future(app.send({"type": "websocket.send", "text": "b"}))
    await settle()
    assert not sent.done()
    gone.cancel()  # a sender cancelled while waiting: the other still waits, then sends
    await settle()
    assert not sent.done()
    proto.resume_writing()
    await sent
    assert [f.data for f in wire.frames()] == [b"a"]
    app.done.set()


# By hand: the keepalive and the ends


async def test_the_keepalive_pings_and_fails_with_1011_when_the_pong_is_missing() -> None:
    proto, wire, app = await opened()
    proto.keepalive()  # (as its timer would)
    ping = wire.frames()[-1]
    assert ping.opcode is Opcode.PING
    assert len(ping.data) == 4
    proto.data_received(masked(Opcode.PONG, bytes(ping.data)))
    assert proto._ping is None
    assert proto._timer is not None
    proto.keepalive()
    assert wire.frames()[-1].opcode is Opcode.PING
    proto.data_received(masked(Opcode.PONG, b"stale"))  # not this ping's: ignored
    proto.keepalive()
    assert Close.parse(wire.frames()[-1].data) == Close(1011, "keepalive ping timeout")
    assert wire.closing
    assert proto.close_sent
    app.done.set()


async def test_shutdown_closes_an_open_connection_with_1012() -> None:
    proto, wire, app = await opened()
    proto.shutdown()
    assert Close.parse(wire.frames()[-1].data).code == 1012
    assert wire.closing
    assert proto._timer is None
    assert await proto.receive() == {"type": "websocket.disconnect", "code": 1012}
    app.done.set()


async def test_shutdown_answers_500_before_the_app_answered() -> None:
    gate = anyio.Event()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await gate.wait()

    proto, wire, state = make(app)
    proto.data_received(REQUEST)
    proto.shutdown()
    assert bytes(wire.out).startswith(b"HTTP/1.1 500")
    assert wire.closing
    gate.set()
    await settle()
    assert state.tasks == set()


@pytest.mark.parametrize("when", ["before", "after"])
async def test_an_app_that_raises_is_logged_and_answered(when: str, logged: Logged) -> None:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        if when == "after":
            await send({"type": "websocket.accept"})
        raise ValueError("boom")

    proto, wire, state = make(app)
    proto.data_received(REQUEST)
    await settle()
    assert "Exception in ASGI application" in logged.text
    if when == "before":
        assert bytes(wire.out).startswith(b"HTTP/1.1 500")
    else:  # uvicorn drops the connection (the client sees 1006): here the client is told
        assert Close.parse(wire.frames()[-1].data).code == 1011
    assert wire.closing
    assert state.tasks == set()
    assert proto in state.connections  # type: ignore[comparison-overlap]  # until the transport reports the connection lost
    proto.connection_lost(None)
    assert state.connections == set()


async def test_an_app_that_returns_without_answering_gets_500(logged: Logged) -> None:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        return None

    proto, wire, _ = make(app)
    proto.data_received(REQUEST)
    await settle()
    assert "returned without completing handshake" in logged.text
    assert bytes(wire.out).startswith(b"HTTP/1.1 500")
    assert wire.closing


# Through a real uvicorn (httptools and h11), with the websockets client

HTTP = [pytest.param("httptools", id="httptools"), pytest.param("h11", id="h11")]


@contextlib.asynccontextmanager
async def server(app: Any, http: str, **options: Any) -> AsyncIterator[str]:
    async def lifespan_too(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})

    # (the HTTP/1.1 protocol serve runs: the bridge's subclass of uvicorn's, which hands over)
    async with serving(lifespan_too, ws=LeanWebSocketProtocol, http=http_protocol(http), **options) as port:
        yield f"ws://127.0.0.1:{port}/ws?q=1"


class Logged(logging.Handler):
    """The lines logged on ``uvicorn.error`` (at INFO and up) while it is installed."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Logged:
    """The protocol's log lines (uvicorn's ``Config`` reconfigures ``uvicorn.error``: a logger of the test's own)."""
    assert _ws_lean._LOG is logging.getLogger("uvicorn.error")
    logger = logging.getLogger("tests.ws_lean")
    handler = Logged()
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    monkeypatch.setattr(_ws_lean, "_LOG", logger)
    return handler


async def echo(scope: Scope, receive: Any, send: Any) -> None:
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept", "subprotocol": "two" if "two" in scope["subprotocols"] else None})
    while (message := await receive())["type"] == "websocket.receive":
        await send({"type": "websocket.send", **{k: v for k, v in message.items() if k != "type"}})


@pytest.mark.parametrize("http", HTTP)
async def test_echo_text_bytes_and_fragments(http: str, logged: Logged) -> None:
    async with server(echo, http) as url, connect(url, subprotocols=["one", "two"]) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "two"
        await ws.send("héllo")
        assert await ws.recv() == "héllo"
        await ws.send(b"\x00\x01")
        assert await ws.recv() == b"\x00\x01"
        await ws.send(["fr", "ag", "ments"])
        assert await ws.recv() == "fragments"
    assert "127.0.0.1:" in logged.text
    assert '"WebSocket /ws?q=1" [accepted]' in logged.text


@pytest.mark.parametrize("http", HTTP)
async def test_permessage_deflate_only_when_asked(http: str) -> None:
    for asked in (False, True):
        async with server(echo, http, ws_per_message_deflate=asked) as url, connect(url) as ws:
            assert bool(ws.protocol.extensions) is asked
            await ws.send("z" * 1000)
            assert await ws.recv() == "z" * 1000


class Recording:
    """An app that accepts, then records what it receives up to the disconnect (then ``done``)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.done = anyio.Event()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        while not self.seen or self.seen[-1]["type"] != "websocket.disconnect":
            self.seen.append(await receive())
        self.done.set()


async def closed_with(ws: Any) -> int:
    """The code of the close frame the client received (it must have received one)."""
    with pytest.raises(ConnectionClosed) as caught:
        await ws.recv()
    assert caught.value.rcvd is not None
    return caught.value.rcvd.code


@pytest.mark.parametrize("http", HTTP)
async def test_a_too_big_message_is_closed_with_1009(http: str) -> None:
    app = Recording()
    async with server(app, http, ws_max_size=1000) as url, connect(url) as ws:
        await ws.send("x" * 1001)
        assert await closed_with(ws) == 1009
        with anyio.fail_after(5):
            await app.done.wait()
    [event] = app.seen  # (websockets' reason: "frame exceeds limit of 1000 bytes")
    assert (event["type"], event["code"], "1000" in event["reason"]) == ("websocket.disconnect", 1009, True)


@pytest.mark.parametrize("http", HTTP)
async def test_refusals_an_http_answer_and_a_close_before_accepting(http: str, logged: Logged) -> None:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        await receive()
        if scope["query_string"] == b"http":
            socket = ClientSocket(scope, receive, send, max_message=100)
            await socket.refuse(401, {"error": "no key"}, {"www-authenticate": "Bearer"})
        else:
            await send({"type": "websocket.close"})
        assert await receive() == {"type": "websocket.disconnect", "code": 1006}

    async with server(app, http) as url:
        base = url.split("?")[0]
        with pytest.raises(InvalidStatus) as http_answer:
            await connect(base + "?http")
        with pytest.raises(InvalidStatus) as closed:
            await connect(base)
    response = http_answer.value.response
    assert (response.status_code, response.body) == (401, b'{"error":"no key"}')
    assert response.headers["www-authenticate"] == "Bearer"
    assert closed.value.response.status_code == 403
    assert '"WebSocket /ws?http" 401' in logged.text
    assert '"WebSocket /ws" 403' in logged.text


@pytest.mark.parametrize("http", HTTP)
async def test_an_app_failing_before_accepting_answers_500(http: str) -> None:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async with server(app, http) as url:
        with pytest.raises(InvalidStatus) as caught:
            await connect(url)
    assert caught.value.response.status_code == 500


@pytest.mark.parametrize("http", HTTP)
async def test_the_clients_close_reaches_the_app(http: str) -> None:
    app = Recording()
    async with server(app, http) as url:
        async with connect(url) as ws:
            await ws.close(4000, "bye")
        with anyio.fail_after(5):
            await app.done.wait()
    assert app.seen == [{"type": "websocket.disconnect", "code": 4000, "reason": "bye"}]


@pytest.mark.parametrize("http", HTTP)
async def test_server_shutdown_closes_sessions_with_1012(http: str) -> None:
    app = Recording()
    async with contextlib.AsyncExitStack() as stack:
        url = await stack.enter_async_context(server(app, http))
        ws = await connect(url)
        await ws.send("hi")
        await stack.aclose()  # the server stops: uvicorn calls shutdown() on the connection
    assert await closed_with(ws) == 1012
    assert app.seen == [
        {"type": "websocket.receive", "text": "hi"},
        {"type": "websocket.disconnect", "code": 1012},
    ]


@pytest.mark.parametrize("http", HTTP)
async def test_the_keepalive_closes_with_1011_when_pongs_stop(http: str) -> None:
    async with server(Recording(), http, ws_ping_interval=0.05, ws_ping_timeout=0.05) as url:
        port = int(url.split(":")[2].split("/")[0])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(REQUEST.replace(b"/ws/%C3%A9?a=1", b"/ws"))
            data, opcodes = b"", []
            with anyio.fail_after(10):
                while b"\r\n\r\n" not in data:
                    data += await stream.receive()
                head, _, data = data.partition(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 101")
                while 0x88 not in opcodes:  # server frames: unmasked, short here
                    while len(data) < 2 or len(data) < 2 + data[1]:
                        data += await stream.receive()
                    opcodes.append(data[0])
                    payload, data = data[2 : 2 + data[1]], data[2 + data[1] :]
    assert opcodes == [0x89, 0x88]  # one ping, never answered, then the close
    assert struct.unpack("!H", payload[:2])[0] == 1011


def test_importing_without_websockets_raises_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "maas_stream.bridge._ws_lean")
    monkeypatch.setitem(sys.modules, "websockets.server", None)
    with pytest.raises(ImportError):
        import maas_stream.bridge._ws_lean  # noqa: F401


@pytest.mark.parametrize("http", HTTP)
@pytest.mark.parametrize("hand_over", [True, False], ids=["let-go", "kept"])
async def test_the_http_protocol_that_hands_over_is_freed_at_once(
    http: str, hand_over: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # uvicorn's httptools protocol and its parser hold each other: without _hand_over the pair
    # waits for a full collection after the upgrade (h11's protocol is freed either way).
    previous: list[weakref.ref[Any]] = []
    release = _ws_lean._hand_over

    def spy(http_protocol: object) -> None:
        previous.append(weakref.ref(http_protocol))
        if hand_over:
            release(http_protocol)

    monkeypatch.setattr(_ws_lean, "_hand_over", spy)
    gc.disable()
    try:
        async with server(echo, http) as url, connect(url) as ws:
            await ws.send("one")
            assert await ws.recv() == "one"
            (ref,) = previous
            assert (ref() is None) is (hand_over or http == "h11")
    finally:
        gc.enable()
