"""Realtime sessions in the bridge: a session client's websocket relayed to a session upstream.

A client of a session protocol (OpenAI Realtime at ``/v1/realtime?model=...``, GA or beta;
google-genai Live at ``/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent``)
connects over the ASGI ``websocket`` protocol. Per session:

1. the guard checks Host, Origin and the bridge key in the client's own credential (the
   protocol's header, a ``?key=`` where the provider takes one, or the key subprotocol browsers
   send, ``openai-insecure-api-key.<key>``);
2. the model picks the route: from the URL's query (OpenAI), or from the first client message
   (Live's ``setup.model``: the connection is accepted first to read it);
3. the route's :class:`~maas_stream.bridge._ws.WebSocketUpstream` is opened with the operator's
   key (a refused or failed handshake is the client's HTTP error before accepting, or its close
   once accepted);
4. messages are relayed both ways, each through the session translator
   (``from_client``/``from_upstream``); what it drops is counted and logged. A same-protocol
   session takes the translator's fast path (``pass_client``/``pass_upstream``): each message
   goes on as it came, read on the side for the record. A websocket upstream (``websockets``:
   asyncio) is relayed by ``_pump.Pump``: the session's own task and one more, one idle timer. An HTTP
   upstream's turns (``_session_turns``) run in an anyio task group (any backend).

Ends, both ways: a client close closes the upstream with the same code; an upstream close is
passed on with its code and reason. An upstream failure (a close with an error code, a dropped
connection, a stall past the idle limit) reaches the client as its protocol's error event (the
client protocol's stream encoder writes it; Live has none, its close reason carries the error)
followed by a close with an error code: never a silent close. Limits: the message size, the idle
time (no message either way), and the number of sessions, counted with the HTTP streams
(:attr:`Limits.max_streams`). Each session ends with its metrics and one log line (scrubbed).

The translator is :class:`maas_stream._session_bridge.SessionBridge` (sans-IO): a same-protocol
session passes unchanged (decoded on the side for its :class:`~maas_stream.Session`), a
cross-protocol one is translated both ways, an HTTP upstream is asked turn by turn.

This module owns the relay (handshake, route, the two relay tasks, the end, the record); an HTTP
upstream's turns are ``_session_turns``'s, a session's limits and the translator seam
``_session_limits``'s, and the wire edges it reads and writes (the credential subprotocol, the model field, close codes,
error events, the upstream's end) are ``_session_wire``'s.

It must not contain protocol logic: paths, the model's place, credentials, default URLs and error
events come from the protocols' specs and encoders.
"""

from __future__ import annotations

import logging
import time
import traceback
from time import monotonic
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import anyio
import msgspec

from .._exceptions import LocalProtocolError
from .._model import Response, StreamError
from .._registry import get_protocol, match_session
from .._session_bridge import SessionBridge
from ._asgi import request_headers
from ._guard import check_model
from ._metrics import Exchange, access_log, scrub
from ._pump import Pump
from ._request import Rejected, error_body
from ._session_turns import Turns
from ._session_wire import (
    End,
    close_code,
    close_upstream,
    closed_error,
    error_messages,
    field_at,
    is_connect_error,
    presented,
    refused_error,
    upstream_end,
    with_field,
)
from ._upstream import RecordingUpstream
from ._ws import (
    ClientGone,
    ClientSocket,
    MessageTooBig,
    SessionRecordingUpstream,
    WebSocketUpstream,
    sendable,
)

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from .._registry import ProtocolSpec
    from ._app import BridgeApp
    from ._asgi import Receive, Scope, Send
    from ._routes import Route

__all__ = ["serve_session"]

log = logging.getLogger("maas_stream")

# ---------------------------------------------------------------------------------- a session


class _Session:
    """One client session: its checks, its route, its relay, its record."""

    __slots__ = (
        "_last", "_pump", "_secrets", "_turns", "app", "counted", "end",
        "exchange", "headers", "limits", "scope", "spec", "translator", "upstream_in", "ws",
    )  # fmt: skip

    def __init__(self, app: BridgeApp, scope: Scope, receive: Receive, send: Send) -> None:
        self.app = app
        self.limits = app.session_limits
        self.scope = scope
        self.headers = request_headers(scope)
        """The handshake's headers (let go once the relay starts: an idle session keeps no copy)."""
        peer = scope.get("client")
        self.exchange = Exchange("GET", scope["path"], f"{peer[0]}:{peer[1]}" if peer else None)
        self.ws = ClientSocket(scope, receive, send, max_message=self.limits.max_message)
        self.spec: ProtocolSpec | None = None
        self.translator: Any = None
        self.upstream_in = 0
        """Messages received from the upstream."""
        self.end: End | None = None
        self.counted = False
        self._last = monotonic()
        """When the last message crossed, either way (the idle limit's clock)."""
        self._secrets: tuple[str, ...] = app._secrets
        self._turns: Turns | None = None
        """An HTTP upstream's turns (``_session_turns``), stopped by the first end."""
        self._pump: Pump | None = None
        """A websocket upstream's relay tasks, stopped by the first end."""

    # ------------------------------------------------------------------ the handshake

    async def run(self) -> None:
        """Serve the session, then count it and write its record."""
        app = self.app
        if app.metrics.enabled:
            app.metrics.in_flight.inc()
        try:
            if not await self.ws.wait_connect():
                return
            # One after the other, not nested: an open session keeps no frame of its checks,
            # its route or its upstream's opening.
            connected = await self._serve(*await self._open())
            if connected is not None:
                connecting, conn, first = connected
                try:
                    await self._accept(conn.subprotocol)
                    await self._relay(conn, first)
                finally:
                    await connecting.__aexit__(None, None, None)
        except ClientGone as gone:  # before the relay (a Live client gone before its setup)
            self._ended(End("client", gone.code, gone.reason))
        except Rejected as exc:
            await self._refused(exc)
        except Exception as exc:
            await self._internal_error(exc)
        finally:
            if self.counted:
                app._active -= 1
            if app.metrics.enabled:
                app.metrics.in_flight.dec()
            self.record()

    async def _open(self) -> tuple[ProtocolSpec, Route, str | None, str | bytes | None]:
        """The checks and the route: what :meth:`_serve` is given."""
        app, scope = self.app, self.scope
        app.guard.check_host(self.headers)
        app.guard.check_origin(self.headers)
        spec = match_session(scope["path"])
        if spec is None or spec.session is None:
            raise Rejected(404, f"no bridge websocket endpoint at {scope['path']}")
        self.spec, self.exchange.client = spec, spec.name
        app.stats.requests += 1
        query = scope.get("query_string", b"")
        app.guard.authenticate(spec, presented(spec, self.headers, scope), query)
        limit = app.limits.max_streams
        if limit is not None and app._active >= limit:
            app.stats.overloaded += 1
            retry = {"retry-after": str(app.limits.retry_after)}
            raise Rejected(
                503, f"the bridge is serving {limit} streams and sessions already; retry later", retry
            )
        app._active += 1
        self.counted = True
        first: str | bytes | None = None
        session = spec.session
        if session.model_query is not None:
            model = dict(parse_qsl(query.decode("latin-1"))).get(session.model_query)
        else:  # the model is in the first message: accept to read it
            await self.ws.accept()
            self.exchange.status = 101
            first, model = await self._first_message(spec)
        self.exchange.model = model
        check_model(model)
        route = app.router.select(model)
        self.exchange.route, self.exchange.upstream = route.name, route.upstream.protocol
        return spec, route, model, first

    async def _first_message(self, spec: ProtocolSpec) -> tuple[str | bytes, str | None]:
        session = spec.session
        assert session is not None
        with anyio.move_on_after(self.limits.first_message_timeout):
            try:
                first = await self.ws.receive()
            except MessageTooBig as exc:
                raise Rejected(413, str(exc)) from None
            found = None
            try:
                found = field_at(msgspec.json.decode(first), session.model_field)
            except msgspec.DecodeError:
                pass
            if not isinstance(found, str):
                where = ".".join(session.model_field)
                raise Rejected(400, f"the first message must name the model in {where}")
            return first, found.removeprefix(session.model_prefix)
        raise Rejected(408, f"no first message within {self.limits.first_message_timeout:g}s")

    async def _serve(
        self, spec: ProtocolSpec, route: Route, model: str | None, first: str | bytes | None
    ) -> tuple[Any, Any, str | bytes | None] | None:
        """An HTTP upstream's session served; a websocket upstream's opened (``run`` relays it)."""
        upstream: Any = route.upstream
        if isinstance(upstream, RecordingUpstream) and get_protocol(upstream.protocol).session is not None:
            upstream = SessionRecordingUpstream(upstream.recording, protocol=upstream.protocol)
        websocket = isinstance(upstream, WebSocketUpstream | SessionRecordingUpstream)
        cls = SessionBridge
        session = spec.session
        assert session is not None
        drop = self.app.drop_params if route.drop_params is None else route.drop_params
        rename = getattr(upstream, "model", None)
        name = rename or model
        header = session.beta_header
        beta = header is not None and self.headers.get(header[0]) == header[1]
        try:
            # The record reads the responses and counts only: relayed session messages are not kept.
            self.translator = cls(
                spec.name,
                upstream.protocol,
                model=name or "",
                drop_params=drop,
                beta=beta,
                keep_passthrough=False,
            )
        except LocalProtocolError as exc:
            raise Rejected(501, str(exc)) from None
        if not websocket:
            self._turns = Turns(self, upstream, name)
            await self._turns.serve(first)
            return None
        same = spec.name == upstream.protocol
        if first is not None and rename is not None and session.model_field:
            first = with_field(first, session.model_field, session.model_prefix + rename)
        forwarded = {h: self.headers[h] for h in session.forward_headers if same and h in self.headers}
        self.headers = {}  # the handshake is read: the session's life need not keep its headers,
        self.scope["headers"] = []  # nor the server its scope's (read once: ~1 KiB per session)
        offered = [
            p
            for p in self.scope.get("subprotocols") or ()
            if session.key_subprotocol is None or not p.startswith(session.key_subprotocol)
        ]
        return (*await self._connect(upstream, name, forwarded, offered if same else []), first)

    async def _accept(self, chosen: str | None = None) -> None:
        """Accept the client (with ``chosen``, or the protocol's subprotocol, when it offered it)."""
        if self.ws.accepted:
            return
        offered = self.scope.get("subprotocols") or ()
        if chosen not in offered:
            spec = self.spec
            assert spec is not None
            assert spec.session is not None
            chosen = spec.session.subprotocol if spec.session.subprotocol in offered else None
        await self.ws.accept(chosen)
        self.exchange.status = 101

    async def _connect(
        self,
        upstream: WebSocketUpstream | SessionRecordingUpstream,
        model: str | None,
        headers: dict[str, str],
        offered: list[str],
    ) -> tuple[Any, Any]:
        """The upstream's connection opened: its context manager (to exit) and the connection."""
        invalid_status = refused_error()
        try:
            connecting = upstream.connect(
                model, headers=headers, subprotocols=offered, max_message=self.limits.max_message
            )
            conn = await connecting.__aenter__()
        except invalid_status as exc:
            status = exc.response.status_code
            body = bytes(exc.response.body or b"")[:200].decode("utf-8", "replace")
            raise Rejected(
                status if 400 <= status < 600 else 502,
                f"upstream {upstream.protocol} refused the session: HTTP {status} {body}".rstrip(),
            ) from None
        except TimeoutError:
            raise Rejected(
                504, f"upstream {upstream.protocol}: no handshake within {upstream.timeouts.connect}s"
            ) from None
        except Exception as exc:
            if not is_connect_error(exc):
                raise
            raise Rejected(
                502, f"upstream {upstream.protocol} unreachable: {exc or type(exc).__name__}"
            ) from None
        return connecting, conn

    # ------------------------------------------------------------------ the relay

    async def _deliver(self, conn: Any, out: Any) -> None:
        for message in out.to_upstream:
            if conn is None:  # an HTTP upstream takes turn requests, not messages
                log.warning("bridge session: a message for an HTTP upstream was not sent")
                continue
            await conn.send(message)
        for message in out.to_client:
            if self.exchange.first_byte is None:
                self.exchange.first_byte = time.perf_counter() - self.exchange.start
            await self.ws.send(message)
        for rec in out.dropped:
            self.app.stats.dropped[rec.kind] += rec.count
            log.warning(
                "bridge session %s -> %s: dropped %s", self.exchange.client, self.exchange.upstream, rec
            )
        if out.close is not None:
            code, reason = out.close
            self._ended(End("translator", code, reason, failed=code not in (1000, 1001)))
        request = getattr(out, "request", None)
        if request is not None and self._turns is not None:
            self._turns.put(request)

    def _ended(self, end: End) -> None:
        if self.end is None:
            self.end = end
        self._stop()

    def _stop(self) -> None:
        """Stop the relay's other side(s) once the session has ended."""
        if self._turns is not None:
            self._turns.stop()
        if self._pump is not None:
            self._pump.stop()

    async def _relay(self, conn: Any, first: str | bytes | None) -> None:
        await self._deliver(conn, self.translator.opening())
        if first is not None:
            await self._deliver(conn, self.translator.from_client(first))
        if self.end is None:
            pump = self._pump = Pump(self._idle_left)
            try:
                # The upstream's side (nearly every message of a streamed answer) in the shallow
                # task: a message wakes 3 frames, not the ~14 of the ASGI app's task.
                await pump.run(
                    self._client_to_upstream(conn), self._upstream_to_client(conn), self.limits.idle_timeout
                )
            finally:
                self._pump = None
        await self._finish(conn)

    async def _client_to_upstream(self, conn: Any) -> None:
        closed = closed_error()
        ws = self.ws
        translator, receive = self.translator, ws.receive
        take = ws.take if ws.direct else None  # (no coroutine per message, none held while idle)
        message: str | bytes | None
        # The same protocol passes through: each message goes on as it came (read on the side).
        passing = translator.same
        try:
            while self.end is None:
                if take is None:
                    message = await receive()
                elif (message := take()) is None:
                    await ws.arrival()
                    continue
                self._last = monotonic()
                if passing:
                    await conn.send(translator.pass_client(message))
                else:
                    await self._deliver(conn, translator.from_client(message))
        except ClientGone as gone:
            self._ended(End("client", gone.code, gone.reason))
        except MessageTooBig as exc:
            self._ended(End("too_big", 1009, str(exc), failed=True))
        except closed as exc:
            self._ended(upstream_end(exc))
        self._stop()

    async def _upstream_to_client(self, conn: Any) -> None:
        closed = closed_error()
        translator, recv, exchange = self.translator, conn.recv, self.exchange
        take = getattr(conn, "take", None)  # the bridge's own client's (as the client side's)
        send, send_now = self.ws.send, self.ws.send_now
        passing = translator.same
        try:
            while self.end is None:
                if take is None:
                    message = await recv()
                elif (message := take()) is None:
                    await conn.arrival()
                    continue
                self.upstream_in += 1
                self._last = monotonic()
                if passing:
                    translator.pass_upstream(message)
                    if exchange.first_byte is None:
                        exchange.first_byte = time.perf_counter() - exchange.start
                    if not send_now(message):
                        await send(message)
                else:
                    await self._deliver(conn, translator.from_upstream(message))
        except closed as exc:
            self._ended(upstream_end(exc))
        except ClientGone as gone:  # a send to a client already gone
            self._ended(End("client", gone.code, gone.reason))
        self._stop()

    def _idle_left(self) -> float:
        """Seconds before the idle limit, from the last message; ends the session when none are left."""
        idle = self.limits.idle_timeout
        assert idle is not None
        left = self._last + idle - monotonic()
        if left <= 0:
            reason = f"no message either way for {idle:g}s (the bridge's idle limit)"
            self._ended(End("idle", 1008, reason, failed=True))
        return left

    async def _finish(self, conn: Any) -> None:
        end = self.end
        assert end is not None
        secrets = self._secrets
        reason = scrub(end.reason, secrets)
        exchange = self.exchange
        told = False
        closed = getattr(self.translator, "upstream_closed", None)
        if end.by == "upstream" and closed is not None:
            # The translator tells the client in its own protocol (and closes its session's record).
            out = closed(sendable(end.code), reason)
            for message in out.to_client:
                await self.ws.send(message)
            told = bool(out.to_client)
            if out.close is not None:
                end = End("upstream", out.close[0], out.close[1] or reason, failed=end.failed)
        if end.by == "client":
            with anyio.CancelScope(shield=True):
                await close_upstream(conn, sendable(end.code, abnormal=1000), reason)
        else:
            if end.failed and told:
                exchange.reason = reason = scrub(end.reason, secrets)
            elif end.failed:
                assert self.spec is not None
                what = "upstream" if end.by == "upstream" else "bridge"
                text = f"{what}: {reason}" if reason else f"the {what} closed the session ({end.code})"
                kind = "server_error" if end.by == "upstream" else "invalid_request_error"
                await self._tell(StreamError(type=kind, message=text, code=end.by))
                exchange.reason = text
                reason = text
            await self.ws.close(sendable(end.code), reason)
            with anyio.CancelScope(shield=True):
                await close_upstream(conn, 1000, "")

    # ------------------------------------------------------------------ refusals and bugs

    async def _tell(self, error: StreamError) -> None:
        """Send ``error`` as the client protocol's error event(s), unless the client is gone."""
        assert self.spec is not None
        try:
            for message in error_messages(self.spec.name, error):
                await self.ws.send(message)
        except ClientGone:
            pass  # nobody left to tell; the close below is a no-op too

    async def _refused(self, exc: Rejected) -> None:
        self.exchange.reason = reason = scrub(exc.message, self._secrets)
        if self.ws.accepted:  # a Live client, refused once its setup named the model
            self._ended(End("refused", close_code(exc.status), reason, failed=True))
        else:
            self.app.stats.rejected += self.spec is not None
            self.exchange.status = exc.status
            await self.ws.refuse(exc.status, error_body(self.spec, exc.status, reason), exc.headers)
            self.exchange.status = self.ws.status
            return
        if self.spec is not None:
            kind = "invalid_request_error" if exc.status < 500 else "server_error"
            await self._tell(StreamError(type=kind, message=reason, code=str(exc.status)))
        await self.ws.close(close_code(exc.status), reason)

    async def _internal_error(self, exc: Exception) -> None:
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:  # a relay task's bug
            exc = exc.exceptions[0]
        self.app.stats.internal_errors += 1
        self.exchange.reason = f"internal error ({type(exc).__name__})"
        frames = "".join(traceback.TracebackException.from_exception(exc).stack.format())
        log.error(
            "bridge: internal error %s in a session on %s\n%s", type(exc).__name__, self.scope["path"], frames
        )
        msg = f"internal error in the bridge ({type(exc).__name__}); see its log"
        if not self.ws.accepted:
            await self.ws.refuse(500, error_body(self.spec, 500, msg))
            self.exchange.status = self.ws.status
            return
        if self.spec is not None:
            await self._tell(StreamError(type="server_error", message=msg))
        await self.ws.close(1011, msg)

    # ------------------------------------------------------------------ the record

    def record(self) -> None:
        exchange = self.exchange
        translator = self.translator
        if translator is not None:
            session = translator.session
            exchange.responses = list(session.responses)
            exchange.drops = 0
        end = self.end
        if end is not None and end.failed:
            error = StreamError(type=end.by, message=exchange.reason)
            exchange.responses.append(
                Response(protocol=exchange.upstream or "unknown", status="failed", error=error)
            )
        self.app.metrics.observe(exchange)
        fields = exchange.fields()
        fields.update(
            messages_in=self.ws.received,
            messages_out=self.ws.sent,
            upstream_messages=self.upstream_in,
            responses=len(exchange.responses) - (1 if end is not None and end.failed else 0),
        )
        if end is not None:
            fields.update(ended_by=end.by, close_code=self.ws.close_code or sendable(end.code))
        level = (
            logging.WARNING if (end is not None and end.failed) or exchange.status >= 500 else logging.INFO
        )
        if access_log.isEnabledFor(level):
            access_log.log(
                level, "bridge session %s", msgspec.json.encode(fields).decode(), extra={"exchange": fields}
            )
        if end is not None:  # counted last: whoever waits on the counts finds the record done
            if end.failed:
                self.app.stats.stream_errors += 1
            else:
                self.app.stats.streams += 1


def serve_session(app: BridgeApp, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
    """Serve one ASGI ``websocket`` connection: a realtime session (see the module docstring).

    The session's own coroutine (no frame of this function's held while the session lives).
    """
    return _Session(app, scope, receive, send).run()
