"""The bridge's websocket server protocol for uvicorn: ``websockets``' sans-I/O ``ServerProtocol`` under one asyncio protocol of its own.

uvicorn's websockets-sansio protocol holds per connection a ~1.6 KiB ``__dict__`` (~45
attributes), the scope and its headers for the connection's life, a ``run_asgi`` coroutine
around the app, a keepalive ``TimerHandle`` (~540 bytes under uvloop) and an ``asyncio.Event``.
:class:`LeanWebSocketProtocol` keeps the sans-I/O protocol (framing, the handshake, pings
answered, the close handshake, size checks: ``websockets``' own code) and around it only what an
ASGI app needs: ``__slots__``, the unread messages and one future for their readers, one timer
(``io._timers``': the keepalive, then the close timeout), the app run as the connection's task
itself (a done callback, no wrapper coroutine), nothing of the handshake once answered (the
scope is the app's; the parser's frame is let go by ``_ws_parser.drop_handshake``).

Kept as uvicorn does it (ASGI websocket spec 2.4): the scope; ``websocket.connect``, ``accept``
(subprotocol, headers, uvicorn's default headers), ``send``, ``close`` (before accepting: 403),
the ``websocket.http.response`` extension; the ``websocket.disconnect`` codes (1005/1006 when the
connection ends, the client's close, 1012 at ``shutdown()``); the access log lines on
``uvicorn.error``; an app that raises or returns unanswered (500 before accepting);
``ClientDisconnected`` once the client is gone; invalid UTF-8 text (1007); the keepalive (a ping
every ``ws_ping_interval`` less the last round trip, 1011 when the pong misses
``ws_ping_timeout``); the close handshake's 10 s; permessage-deflate with uvicorn's settings when
``ws_per_message_deflate`` asks. Not kept: reading pauses only when the app falls behind
(:data:`QUEUE_DEPTH` unread messages, or one of :data:`LARGE_MESSAGE` bytes), not after every
message (two changes of the loop's watch on the socket each); the bridge's own session takes a
direct path (``go_direct``, ``take``, ``arrival``, ``send_data``, as ``_ws.ClientSocket``
asks: its messages queued as ``str``/``bytes``, not ASGI dicts); an app that raises once the
connection is open gets it closed with 1011 (uvicorn drops it: 1006); messages read together
with a frame that fails the connection are delivered before the disconnect (uvicorn drops them).

Relied on in uvicorn (0.55 here): its HTTP protocols make the ws protocol with
``cls(config=, server_state=, app_state=)``, then ``connection_made`` (the HTTP protocol still the
transport's: its httptools parser is let go, :func:`_hand_over`), ``set_protocol``, and
``data_received`` with the handshake re-serialized; ``Server.shutdown`` calls ``shutdown()`` on
each of ``server_state.connections`` and waits for them and ``server_state.tasks``; the
``Config.ws_*`` options. In ``websockets`` (>= 13): the sans-I/O ``ServerProtocol`` (``accept``,
``reject``, ``send_response``, ``close_sent``/``close_rcvd``). ``tests/bridge/test_ws_lean.py``
pins both (by hand, and through a real uvicorn with ``httptools`` and ``h11``). Importing this
module raises :class:`ImportError` where either is missing (``serve`` then leaves uvicorn's
``auto``). It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import random
import struct
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

from uvicorn.logging import TRACE_LOG_LEVEL as _TRACE
from uvicorn.protocols.utils import (
    ClientDisconnected,
    get_client_addr,
    get_local_addr,
    get_path_with_query_string,
    get_remote_addr,
    is_ssl,
)
from websockets.datastructures import Headers
from websockets.exceptions import InvalidState
from websockets.frames import Close, Frame, Opcode
from websockets.http11 import Request, Response
from websockets.server import ServerProtocol

from ..io._timers import later
from ._ws_parser import Data, FramedConnection, drop_handshake, unlabelled

if TYPE_CHECKING:
    from collections.abc import Sequence

    from uvicorn.config import Config
    from uvicorn.server import ServerState
    from websockets.extensions import ServerExtensionFactory

    from ..io._timers import Timer

__all__ = ["CLOSE_TIMEOUT", "LARGE_MESSAGE", "QUEUE_DEPTH", "LeanWebSocketProtocol"]

QUEUE_DEPTH: Final = 16
"""Unread client messages at which reading the socket pauses (the app is behind).

A realtime relay takes each message as it comes, so its queue stays near empty and reading never
pauses; 16 lets a burst of small messages through and, with :data:`LARGE_MESSAGE`, bounds what a
flooding client makes a session hold: under 16 x 64 KiB, plus one message up to ``ws_max_size``,
plus one read of the socket (uvicorn's own bound is that last message and read)."""
LARGE_MESSAGE: Final = 64 * 1024
"""A client message of this many bytes or more pauses reading at once (uvicorn's rule for every message)."""
CLOSE_TIMEOUT: Final = 10.0
"""Seconds the close handshake waits for the client's close frame before the transport is closed (uvicorn's)."""

OP_PING, OP_PONG = Opcode.PING, Opcode.PONG

_LOG: Final = logging.getLogger("uvicorn.error")
_PHRASES: Final = {status.value: status.phrase for status in HTTPStatus}


@functools.cache
def _deflate() -> Sequence[ServerExtensionFactory]:
    """The permessage-deflate offer uvicorn makes (its settings), made once: the factory holds settings only."""
    from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory as Factory

    return (Factory(server_max_window_bits=12, client_max_window_bits=12, compress_settings={"memLevel": 5}),)


def _where(scope: dict[str, Any]) -> tuple[str, str]:
    """The client and the path (with its query) as uvicorn's access log lines name them (its own helpers)."""
    return get_client_addr(scope), get_path_with_query_string(scope)  # type: ignore[arg-type]


def _hand_over(http: object) -> None:
    """Let go of the HTTP protocol that hands its connection over (it is still the transport's now).

    uvicorn's httptools protocol and its parser hold each other (the parser calls the protocol's
    bound methods): once the connection is the websocket's, the pair is garbage that only a full
    collection frees (~1.3 KiB a connection, tracemalloc). Its parser is not used past the
    upgrade (``handle_websocket_upgrade`` is its last step): it goes now, and the protocol with
    it. (h11's protocol is freed as it is.) uvicorn's class or a subclass (``serve`` runs the
    bridge's, ``_uvicorn_http``). Pinned by ``tests/bridge/test_ws_lean.py``.
    """
    named = (c.__name__ for c in type(http).__mro__)
    if "HttpToolsProtocol" in named and getattr(http, "parser", None) is not None:
        http.parser = None  # type: ignore[attr-defined]


class LeanWebSocketProtocol(FramedConnection):
    """One client websocket connection under uvicorn (see the module docstring)."""

    __slots__ = (
        "_app_state", "_config", "_direct", "_held", "_paused", "_ping", "_ping_at",
        "_proto", "_refusal", "_response", "_scope", "_state", "_timer", "_transport",
        "close_sent", "disconnected", "handshake_complete",
    )  # fmt: skip

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(_loop or asyncio.get_running_loop())
        if not config.loaded:
            config.load()
        self._config = config
        self._state = server_state
        self._app_state: dict[str, Any] | None = app_state  # (None once the handshake's request came)
        self._scope: dict[str, Any] | None = None  # the app's, until the handshake is answered
        self._transport: asyncio.Transport = None  # type: ignore[assignment]  # (connection_made comes first)
        deflate = _deflate() if config.ws_per_message_deflate else None
        self._proto = unlabelled(ServerProtocol(extensions=deflate, max_size=config.ws_max_size, logger=_LOG))
        self._direct = False
        self._paused = False  # reading paused: the app is behind
        self._held = True  # the parser still holds the handshake's request (_ws_parser)
        self._response: Response | None = None  # the 101 answer, until the app accepts
        self._refusal: tuple[int, list[tuple[str, str]], bytes] | None = None  # an HTTP answer begun
        self._timer: Timer | None = None  # the keepalive's; once the close is sent, the close timeout
        self._ping: bytes | None = None  # the keepalive ping waiting for its pong
        self._ping_at = 0.0  # ... sent at (loop time)
        self.handshake_complete = False
        """The app answered the handshake (accepted, refused), or the connection ended."""
        self.close_sent = False
        """No more messages go to the client (the close or an HTTP answer is sent)."""
        self.disconnected = False
        """The connection is lost."""

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._state.connections.add(self)  # type: ignore[arg-type]
        self._transport = transport  # type: ignore[assignment]  # uvloop's are not subclasses
        _hand_over(transport.get_protocol())
        self._trace("connection made")

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        complete = self.handshake_complete and self._refusal is None
        self._put({"type": "websocket.disconnect", "code": 1005 if complete else 1006})
        self._state.connections.discard(self)
        self._trace("connection lost")
        self.handshake_complete = self.disconnected = True
        self.resume_writing()  # a sender waiting for a buffer that will never drain
        if exc is None:
            self._transport.close()

    def eof_received(self) -> None:
        """The client ended its side: the transport closes itself (uvicorn's)."""

    def shutdown(self) -> None:
        """The server is stopping: 1012 to an open connection, 500 to one not answered yet."""
        self._stop_timer()
        if not self.handshake_complete:
            self._answer_500()
        elif not self.close_sent:  # (an HTTP answer begun is close_sent)
            self._put({"type": "websocket.disconnect", "code": 1012})
            self._proto.send_close(1012)
            self._flush()
        self._transport.close()

    def data_received(self, data: bytes) -> None:
        proto = self._proto
        proto.receive_data(data)
        if proto.handshake_exc is not None and self._app_state is not None:
            self._bad_request()
            return
        for event in proto.events_received():  # (those before a fault too: uvicorn drops them)
            if type(event) is Frame:
                self._frame(event)
            else:
                assert type(event) is Request
                self._connect(event)
        if proto.parser_exc is not None:
            self._failed()
        elif self._held and self.handshake_complete:
            self._held = not drop_handshake(proto)

    # The handshake

    def _connect(self, request: Request) -> None:
        """The client's handshake request: make the scope, start the app (its first event: ``websocket.connect``)."""
        proto, config, transport, state = self._proto, self._config, self._transport, self._app_state
        assert state is not None
        self._app_state = None
        response = proto.accept(request)
        if response.status_code != 101:  # websockets refused the request itself
            self._reject(response)
            return
        self._response = response
        path, _, query = request.path.partition("?")
        offered = request.headers.get_all("Sec-WebSocket-Protocol")
        root = config.root_path
        scope: dict[str, Any] = {
            "type": "websocket",
            "asgi": {"version": config.asgi_version, "spec_version": "2.4"},
            "http_version": "1.1",
            "scheme": "wss" if is_ssl(transport) else "ws",
            "server": get_local_addr(transport),
            "client": get_remote_addr(transport),
            "root_path": root,
            "path": root + unquote(path),
            "raw_path": root.encode("ascii") + path.encode("ascii"),
            "query_string": query.encode("ascii"),
            # websockets decodes header values as latin-1 (>= 17) or ASCII with surrogate escapes.
            "headers": [(k.encode("ascii"), v.encode("latin-1", "surrogateescape")) for k, v in request.headers.raw_items()],
            "subprotocols": [name.strip() for value in offered for name in value.split(",")],
            "state": state.copy(),
            "extensions": {"websocket.http.response": {}},
        }  # fmt: skip
        self._scope = scope
        self._put({"type": "websocket.connect"})
        task = self._loop.create_task(config.loaded_app(scope, self.receive, self.send))
        task.add_done_callback(self._app_done)
        self._state.tasks.add(task)

    def _bad_request(self) -> None:
        """A handshake request ``websockets`` could not parse: its answer (414, 431), else a 400."""
        self.handshake_complete = self.close_sent = True
        self._held = False
        output = b"".join(self._proto.data_to_send())
        if not output:
            text = "Failed to open a WebSocket connection: invalid request.\n"
            output = self._proto.reject(400, text).serialize()
        self._transport.write(output)
        self._transport.close()

    # Client messages

    def _control(self, frame: Frame) -> None:
        opcode = frame.opcode
        if opcode is OP_PING:
            self._flush()  # the pong websockets queued
        elif opcode is OP_PONG:
            self._pong(frame.data)
        else:  # the close: websockets answered it
            self._close_received()

    def _message(self, message: str | bytes, size: int) -> None:
        """One client message: queued for the app; reading pauses when the app is behind."""
        if self.close_sent:  # the app is past its close: dropped, reading goes on for the close reply
            return
        if self._direct:
            self._put(message)
        else:
            self._put({"type": "websocket.receive", "text" if isinstance(message, str) else "bytes": message})
        if self._paused or (size < LARGE_MESSAGE and len(self._messages) < QUEUE_DEPTH):
            return
        if not self._transport.is_closing():
            self._paused = True
            self._transport.pause_reading()

    def _invalid_text(self) -> None:
        if self.close_sent:  # (dropped unread, as any message past the app's close)
            return
        _LOG.error("Invalid UTF-8 sequence received from client.")
        self._proto.send_close(1007)
        self._failed()

    def _close_received(self) -> None:
        if self.close_sent:  # the client's answer to the app's close: the handshake is over
            if self._timer is not None:
                self._stop_timer()
                self._transport.close()
        elif not self._transport.is_closing():
            self._ended(self._proto.close_rcvd)  # (with the close's echo)

    def _failed(self) -> None:
        """The client broke the protocol (websockets failed the connection, its close is queued)."""
        self.close_sent = True
        self._stop_timer()
        self._ended(self._proto.close_sent)

    def _ended(self, close: Close | None) -> None:
        """Tell the app the connection's end (``close``'s code and reason), send what is queued, close."""
        assert close is not None
        self._put({"type": "websocket.disconnect", "code": close.code, "reason": close.reason})
        self._flush()
        self._transport.close()

    # The app's side: receive

    def _put(self, message: Any) -> None:
        self._messages.append(message)
        self._wake()

    def go_direct(self) -> None:
        """Queue client messages from now on as their ``str`` or ``bytes`` (the bridge's session takes them)."""
        self._direct = True

    def take(self) -> Any:
        """The next queued message (``None`` when there is none); reading resumes once all are taken."""
        messages = self._messages
        if not messages:
            return None
        message = messages.pop(0)
        if self._paused and not messages:
            self._paused = False
            if not self._transport.is_closing():
                self._transport.resume_reading()
        return message

    async def receive(self) -> Any:
        """ASGI ``receive``: the next event."""
        while (message := self.take()) is None:
            await self.arrived()
        return message

    # The app's side: send

    def send_data(self, data: str | bytes) -> bool:
        """Send one message as :meth:`send` would a ``websocket.send``; ``False`` when that must go through :meth:`send`.

        :meth:`send` would wait (the write buffer is full), raise (disconnected) or refuse (not
        accepted, an HTTP answer, the close sent): those cases are left to it.

        Raises:
            ClientDisconnected: The connection is closing (as :meth:`send` raises).
        """
        if self.close_sent or self.disconnected or not self.handshake_complete or self._drain is not None:
            return False
        proto = self._proto
        try:
            if isinstance(data, str):
                proto.send_text(data.encode())
            else:
                proto.send_binary(data)
        except InvalidState:
            raise ClientDisconnected from None
        self._flush()
        return True

    async def send(self, message: Any) -> None:
        """ASGI ``send`` (uvicorn's rules: see the module docstring).

        Raises:
            ClientDisconnected: The client is gone.
            RuntimeError: A message the connection's state does not allow.
        """
        drain = self._drain
        if drain is not None:  # (shielded: a sender cancelled while waiting leaves it to the others)
            await asyncio.shield(drain)
        if self.disconnected:
            raise ClientDisconnected
        kind = message["type"]
        if not self.handshake_complete:
            self._send_answer(kind, message)
        elif self._refusal is not None:
            if kind != "websocket.http.response.body":
                raise RuntimeError(f"Expected ASGI message 'websocket.http.response.body' but got '{kind}'.")
            self._refusal_body(message)
        elif not self.close_sent:
            try:
                if kind == "websocket.send":
                    if (data := message.get("bytes")) is not None:
                        self._proto.send_binary(data)
                    elif (text := message.get("text")) is not None:
                        self._proto.send_text(text.encode())
                    self._flush()
                elif kind == "websocket.close":
                    self._close(message.get("code", 1000), message.get("reason", "") or "")
                else:
                    raise RuntimeError(
                        f"Expected ASGI message 'websocket.send' or 'websocket.close', but got '{kind}'."
                    )
            except InvalidState:
                raise ClientDisconnected from None
        else:
            raise RuntimeError(f"Unexpected ASGI message '{kind}', after sending 'websocket.close'.")

    def _send_answer(self, kind: str, message: Any) -> None:
        """The app's answer to the handshake: accept, close (403) or an HTTP answer's start."""
        transport, response, scope = self._transport, self._response, self._scope
        assert response is not None
        assert scope is not None
        if kind == "websocket.accept":
            _LOG.info('%s - "WebSocket %s" [accepted]', *_where(scope))
            headers = [
                (name.decode("latin-1").lower(), value.decode("latin-1"))
                for name, value in (*self._state.default_headers, *message.get("headers", ()))
            ]
            if subprotocol := message.get("subprotocol"):
                headers.append(("Sec-WebSocket-Protocol", subprotocol))
            del response.headers["Date"]
            response.headers.update(headers)
            if not transport.is_closing():
                self.handshake_complete = True
                self._proto.send_response(response)
                self._flush()
                self._scope = self._response = None  # (the scope is the app's now)
                self._held = not drop_handshake(self._proto)
                interval = self._config.ws_ping_interval
                if interval is not None and interval > 0:
                    self._timer = later(self._loop, interval, self.keepalive)
        elif kind == "websocket.close":
            self._put({"type": "websocket.disconnect", "code": 1006})
            _LOG.info('%s - "WebSocket %s" 403', *_where(scope))
            self._reject(self._proto.reject(HTTPStatus.FORBIDDEN, ""))
        elif kind == "websocket.http.response.start":
            status = message["status"]
            if not 100 <= status < 600:
                raise RuntimeError(f"Invalid HTTP status code '{status}' in response.")
            _LOG.info('%s - "WebSocket %s" %d', *_where(scope), status)
            fields = [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", ())
            ]
            self._refusal = (status, fields, b"")
            self.handshake_complete = self.close_sent = True  # (no message goes to the client now)
        else:
            raise RuntimeError(
                "Expected ASGI message 'websocket.accept', 'websocket.close' "
                f"or 'websocket.http.response.start' but got '{kind}'."
            )

    def _refusal_body(self, message: Any) -> None:
        refusal = self._refusal
        assert refusal is not None
        status, headers, body = refusal
        body += message["body"]
        if message.get("more_body", False):
            self._refusal = (status, headers, body)
            return
        fields = Headers(headers)
        fields.setdefault("Date", email.utils.formatdate(usegmt=True))
        fields.setdefault("Connection", "close")
        fields.setdefault("Content-Length", str(len(body)))
        fields.setdefault("Content-Type", "text/plain; charset=utf-8")
        self._put({"type": "websocket.disconnect", "code": 1006})
        self._reject(Response(status, _PHRASES.get(status, ""), fields, body))

    def _reject(self, response: Response) -> None:
        """Answer the handshake with ``response`` (not 101) and close."""
        self.close_sent = self.handshake_complete = True
        self._proto.send_response(response)
        self._flush()
        self._scope = self._response = None
        self._held = False
        self._transport.close()

    def _close(self, code: int, reason: str) -> None:
        """The app's close: sent, and the client has :data:`CLOSE_TIMEOUT` seconds to answer it."""
        transport = self._transport
        if transport.is_closing():
            return
        self._put({"type": "websocket.disconnect", "code": code, "reason": reason})
        self._proto.send_close(code, reason)
        self._flush()
        self.close_sent = True
        if self._paused:  # the close's reply must be read
            self._paused = False
            transport.resume_reading()
        self._stop_timer()
        self._timer = later(self._loop, CLOSE_TIMEOUT, transport.close)

    # The app's end

    def _app_done(self, task: asyncio.Task[Any]) -> None:
        """The app's task ended: log what went wrong as uvicorn does; a 500 if it never answered, 1011 if it failed after."""
        self._state.tasks.discard(task)
        if (exc := asyncio.CancelledError() if task.cancelled() else task.exception()) is not None:
            if not isinstance(exc, ClientDisconnected):
                _LOG.error("Exception in ASGI application\n", exc_info=exc)
                self._answer_500()
        elif not self.handshake_complete:
            _LOG.error("ASGI callable returned without completing handshake.")
            self._answer_500()
        elif (result := task.result()) is not None:
            _LOG.error("ASGI callable should return None, but returned '%s'.", result)
        if not (self.close_sent and self._timer is not None):
            self._transport.close()  # (unless the close handshake is under way)

    def _answer_500(self) -> None:
        """The app failed: 500 before the handshake is answered, a 1011 close once the connection is open."""
        proto = self._proto
        if not self.handshake_complete:
            if proto.eof_sent:  # answered already (at shutdown)
                return
            proto.send_response(proto.reject(500, "Internal Server Error"))
        elif not (
            self.close_sent or self.disconnected
        ):  # (uvicorn drops the connection: the client sees 1006)
            proto.send_close(1011)
            self.close_sent = True
            self._stop_timer()
        self._flush()

    # The keepalive

    def keepalive(self) -> None:
        """The keepalive timer: fail the connection (1011) if the ping's pong is missing, else ping."""
        transport, proto, timeout = self._transport, self._proto, self._config.ws_ping_timeout
        self._timer = None
        if self.close_sent or transport.is_closing():
            return
        if self._ping is not None and timeout is not None:
            self._trace("keepalive ping timeout")
            self._ping = None
            proto.fail(1011, "keepalive ping timeout")
            self._flush()
            self.close_sent = True
            transport.close()
            return
        self._ping = ping = struct.pack("!I", random.getrandbits(32))
        self._ping_at = self._loop.time()
        proto.send_ping(ping)
        self._flush()
        interval = self._config.ws_ping_interval
        assert interval is not None
        self._timer = later(self._loop, interval if timeout is None else timeout, self.keepalive)

    def _pong(self, data: Data) -> None:
        if self._ping is None or bytes(data) != self._ping:
            return  # unsolicited, or a stale ping's
        rtt = self._loop.time() - self._ping_at
        self._ping = None
        interval, timeout = self._config.ws_ping_interval, self._config.ws_ping_timeout
        if timeout is not None and interval is not None:  # the timer waits for this pong: the next ping's now
            self._stop_timer()
            self._timer = later(self._loop, max(0.0, interval - rtt), self.keepalive)

    def _stop_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self._ping = None

    # Output

    def _flush(self) -> None:
        """Write what the sans-I/O protocol has to send (its end of stream is the transport's close, done by the caller)."""
        data = self._proto.data_to_send()
        if data:
            self._transport.write(b"".join(data))

    def _trace(self, what: str) -> None:
        """A line at uvicorn's TRACE level (as its own protocol logs it)."""
        if _LOG.level <= _TRACE:
            client = get_remote_addr(self._transport)
            _LOG.log(_TRACE, "%sWebSocket %s", f"{client[0]}:{client[1]} - " if client else "", what)
