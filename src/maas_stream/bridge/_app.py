"""The bridge as a pure ASGI application: a client SDK's endpoint in front of any upstream.

Per request: the path names the client's protocol (the registry's ``match_endpoint`` over
every protocol spec's endpoints); ``_request`` converts the body for the upstream; the
upstream's stream comes back through :func:`maas_stream.aconvert` into the client's protocol,
each output frame sent as soon as it is produced. A non-streaming request still streams from
the upstream; the aggregate is answered with :func:`maas_stream.encode_response` as one JSON
body. Each drop is counted by kind and logged once.

Failure is always visible to the client, in its own protocol: a fault before the first byte
is an HTTP error in the CLIENT protocol's error shape (upstream status passed on; 502 for a
broken, cut or empty upstream; 504 for a timeout; 503 when over the stream limit; 500 for a
bug, logged without the exception's text); a fault after it ends the stream with the client
protocol's in-band error frame (written by ``aconvert`` through the protocol's encoder). A
client that hangs up cancels the upstream, streaming or not.

Before that, every request passes the guard (``_guard``: Host, Origin, bridge key in the client's
own credential header, JSON content type, a safe model name), and the model picks a route
(``_routes``); a route that fails before the first byte (429, 5xx, unreachable) is replaced by its
fallbacks in order. The bridge's own endpoints are ``GET /health``, ``GET /metrics`` and each
protocol's model listing (``GET /v1/models``...), and ``OPTIONS`` answers CORS preflights. Each
request ends with one log line and its metrics (``_metrics``).

Nothing a request depends on lives in the process between requests (the counters and metrics
are only reported), so any number of worker processes can serve behind a load balancer.

This module owns the request's way through the bridge: guard, route (with its fallbacks), the
request converted for the upstream, the stored-conversation dispatch, the stream limit, the
record. The answer itself (the upstream stream opened, then streamed or aggregated) is
``_answer``'s; the bridge's own ``GET`` endpoints and token counts are ``_own``'s.

It must not contain protocol logic (it dispatches on the protocols' specs) and depends on no
web framework.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._registry import get_protocol, match_endpoint
from ..io._redact import redact_headers, redact_url
from ._answer import CURRENT, run_exchange
from ._asgi import (
    Limits,
    decode_body,
    model_of,
    read_body,
    request_headers,
    send_empty,
    send_json,
)
from ._failures import UNREACHABLE, retryable
from ._guard import Guard, check_model
from ._metrics import BridgeStats, DropCounter, Exchange, Metrics, log_exchange, scrub
from ._own import count_tokens, own_endpoint
from ._realtime import serve_session
from ._request import Rejected, envelope_codec, error_body, upstream_request
from ._routes import Route, Router, load_routes, single_route
from ._session_limits import SessionLimits
from ._stateful import Resource, Stateful, Turn
from ._store import Store, open_store, owner_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence

    from .._model import Response
    from .._registry import EndpointMatch
    from ._upstream import Upstream

    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

__all__ = [
    "BridgeApp",
    "BridgeStats",
    "Limits",
    "create_app",
]

log = logging.getLogger("maas_stream")


class BridgeApp:
    """The ASGI bridge application (see :func:`create_app`).

    Attributes:
        router: The routes (model → upstream, fallbacks).
        guard: What a request must show (bridge keys, hosts, origins, content type).
        metrics: The Prometheus metrics.
        limits: What one process accepts.
        drop_params: Drop (and report) request fields that change what the model does and
            cannot be carried to the upstream, instead of refusing the request.
        stats: What the bridge did so far.
        stateful: The stored Responses and Interactions (``store``, ``previous_response_id``,
            ``previous_interaction_id``, retrieval, background); ``None`` without a store.
    """

    def __init__(
        self,
        router: Router,
        *,
        guard: Guard | None = None,
        metrics: Metrics | None = None,
        limits: Limits | None = None,
        drop_params: bool = False,
        stateful: Stateful | None = None,
    ) -> None:
        self.router = router
        self.stateful = stateful
        self.guard = guard or Guard()
        self.metrics = metrics or Metrics()
        self.limits = limits or Limits()
        self.drop_params = drop_params
        self.stats = BridgeStats()
        self.session_limits = SessionLimits()
        """What one realtime (websocket) session may do."""
        self.freeze_gc = False
        """Freeze the objects alive at lifespan startup (``gc.freeze``: the modules, the config),
        so that the collector's passes no longer walk them (``maas-stream serve`` sets it)."""
        self._active = 0
        drops = self.stats.dropped
        assert isinstance(drops, DropCounter)
        drops.listener = self._dropped
        self._secrets = tuple(self.guard.secrets()) + tuple(_upstream_secrets(router))

    @property
    def upstream(self) -> Upstream:
        """The upstream serving the current request (outside a request: the first route's)."""
        current = CURRENT.get(None)
        return current[0] if current is not None else self.router.routes[0].upstream

    def _dropped(self, kind: str, count: int) -> None:
        self.metrics.dropped(kind, count)
        current = CURRENT.get(None)
        if current is not None:
            current[1].drops += count

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection (``http`` requests and the ``lifespan`` protocol).

        An ``http`` request passes the guard, is answered by the bridge's own endpoints or a
        stored record's, or is served from its route, or from the route's fallbacks while
        nothing was sent. (One coroutine from here to the upstream exchange: less per stream.)
        """
        if scope["type"] != "http":
            await self._not_http(scope, receive, send)
            return
        peer = scope.get("client")
        exchange = Exchange(scope["method"], scope["path"], f"{peer[0]}:{peer[1]}" if peer else None)
        headers = request_headers(scope)
        observed = _Observed(exchange, self.guard.cors_headers(headers), receive, send)
        # The hang-up of a stream is watched on the server's own receive (one frame less); the
        # rest reads through ``observed.receive`` (its bound method made where used, not held).
        # ``observed`` is the ``send`` itself (no bound method held for the stream's life).
        send = observed
        if self.metrics.enabled:
            self.metrics.in_flight.inc()
        spec = None
        try:
            self.guard.check_host(headers)
            self.guard.check_origin(headers)
            if scope["method"] == "OPTIONS":
                await send_empty(send, 204, self.guard.preflight(headers))
                return
            match = match_endpoint(scope["path"])
            found = self.stateful.resource(scope["path"]) if self.stateful is not None else None
            if match is None and found is not None:
                # No exchange.client: a replayed stream has no upstream answer, and is no cut.
                spec = found.spec  # (for the error shape)
                await self._stored(scope, headers, found, observed.receive, send)
                return
            if match is None:
                if scope["method"] in ("GET", "HEAD"):
                    await own_endpoint(self, scope, headers, send)
                    return
                raise Rejected(404, f"no bridge endpoint at {scope['path']}")
            spec = match.spec
            exchange.client = spec.name
            if scope["method"] != "POST":
                raise Rejected(405, f"{scope['path']} takes POST, not {scope['method']}", {"allow": "POST"})
            self.stats.requests += 1
            self.guard.authenticate(spec, headers, scope.get("query_string", b""))
            self.guard.check_content_type(headers)
            codec = envelope_codec(spec, "client")
            body = await read_body(scope, observed.receive, self.limits)
            # Decoded once for the model and the first route's conversion (not held after it).
            decoded = [] if match.model else [decode_body(body)]
            exchange.model = model = match.model or model_of(codec.model_field, decoded[0])
            check_model(model)
            # The store owner (a digest of the bridge key) of a stored protocol's request, told
            # before the headers are let go.
            stateful = self.stateful
            owner = (
                self._owner(spec, scope, headers)
                if stateful is not None and spec.name in stateful.apis and not match.endpoint.count
                else None
            )
            del headers  # (not held while the stream lasts)
            # The route, then its fallbacks while nothing was sent.
            chain = self.router.chain(self.router.select(model))
            for i in range(len(chain)):  # (no enumerate object and pairs held per stream)
                route = chain[i]
                exchange.route, exchange.upstream = route.name, route.upstream.protocol
                token = CURRENT.set((route.upstream, exchange, route))
                try:
                    prepared = await self._prepare(scope, match, body, decoded, route, send, owner)
                    if prepared is None:  # answered (a token count)
                        return
                    try:  # (inline, not a method of its own: one frame less per stream)
                        if prepared[1] is None:
                            await run_exchange(self, spec.name, prepared[0], receive, send)
                        else:
                            await self._stateful_exchange(
                                prepared[1], spec.name, prepared[0], observed.receive, send
                            )
                    finally:
                        self._active -= 1
                    return
                except _FALLBACK as exc:
                    why = _fallback_reason(exc, exchange, route, last=i + 1 == len(chain))
                finally:
                    CURRENT.reset(token)
                nxt = chain[i + 1].name
                log.warning(
                    "bridge: route %r failed before the first byte (%s); trying %r",
                    route.name,
                    scrub(why, self._secrets),
                    nxt,
                )
                exchange.fallbacks += (route.name,)
                self.metrics.fell_back(route.name, nxt)
        except Rejected as exc:
            await self._refused(spec, exc, exchange, send)
        except Exception as exc:
            await self._internal_error(scope, spec, exc, exchange, send)
        finally:
            if self.metrics.enabled:
                self.metrics.in_flight.dec()
            self.metrics.observe(exchange)
            log_exchange(exchange)

    async def _refused(self, spec: Any, exc: Rejected, exchange: Exchange, send: Send) -> None:
        """A refused request: its status in the client's error shape (unless the answer began)."""
        if spec is not None:
            self.stats.rejected += 1
        exchange.reason = reason = scrub(exc.message, self._secrets)
        if exchange.started:  # the answer has begun: nothing else can be said
            log.error("bridge: %s after the answer started", reason)
            return
        await send_json(send, exc.status, error_body(spec, exc.status, reason), exc.headers)

    async def _internal_error(
        self, scope: Scope, spec: Any, exc: Exception, exchange: Exchange, send: Send
    ) -> None:
        """A bug: 500 in the client's error shape; logged with the frames, never the message."""
        self.stats.internal_errors += 1
        exchange.reason = f"internal error ({type(exc).__name__})"
        # The exception's text may hold a request's or the upstream's secrets: log only where
        # it happened (file, line, function, code) and its type.
        frames = "".join(traceback.TracebackException.from_exception(exc).stack.format())
        log.error(
            "bridge: internal error %s on %s %s\n%s",
            type(exc).__name__,
            scope["method"],
            scope["path"],
            frames,
        )
        if not exchange.started:
            msg = f"internal error in the bridge ({type(exc).__name__}); see its log"
            await send_json(send, 500, error_body(spec, 500, msg))

    def _not_http(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The coroutine serving a realtime session or the lifespan protocol (no frame of its own held)."""
        if scope["type"] == "websocket":  # a realtime session
            return serve_session(self, scope, receive, send)
        if scope["type"] == "lifespan":
            return self._lifespan(receive, send)
        return _ignored()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # Background responses run in the lifespan's task group (they outlive their request).
        async with self.stateful.running() if self.stateful is not None else contextlib.nullcontext():
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    if self.freeze_gc:  # after the imports and the config: old objects, never garbage
                        gc.collect()
                        gc.freeze()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.router.aclose()
                    if self.stateful is not None:
                        await self.stateful.store.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    def _owner(self, spec: Any, scope: Scope, headers: Mapping[str, str]) -> str:
        """The store owner of a request: a digest of the bridge key it shows."""
        return owner_of(Guard._presented(spec, headers, scope.get("query_string", b"")))

    async def _stored(
        self, scope: Scope, headers: Mapping[str, str], found: Resource, receive: Receive, send: Send
    ) -> None:
        """A stored record's own endpoints (retrieve, resume, delete, input items, cancel)."""
        assert self.stateful is not None
        spec = found.spec
        self.guard.authenticate(spec, headers, scope.get("query_string", b""))
        owner = self._owner(spec, scope, headers)
        query = scope.get("query_string", b"")
        await self.stateful.serve(scope["method"], found, query, owner, receive, send)

    async def _prepare(
        self,
        scope: Scope,
        match: EndpointMatch,
        raw: bytes,
        decoded: list[Any],
        route: Route,
        send: Send,
        owner: str | None,
    ) -> tuple[Any, Turn | None] | None:
        """The request converted for ``route``'s upstream, and its stored turn (``None``: answered).

        ``decoded`` holds ``raw`` decoded, if it was already: taken from it (by the first
        route's conversion only: a fallback's reads the raw bytes again, as the first one may
        have changed what it was given; and it is not held while the stream lasts).

        ``owner`` is the request's store owner (``None``: nothing of it is stored: no store, a
        protocol the store does not keep, or a token count).

        A request returned counts in the streams in flight (:attr:`Limits.max_streams`).

        Raises:
            Rejected: The request cannot be served on this route (400...).
        """
        query = match.endpoint.query
        if query is not None and query.encode() not in scope.get("query_string", b"").split(b"&"):
            raise Rejected(400, f"{scope['path']} is served only with ?{query}")
        body = decoded.pop() if decoded else decode_body(raw) if raw else None
        client, upstream = match.spec.name, route.upstream.protocol
        drop = self.drop_params if route.drop_params is None else route.drop_params
        caps = {"*": route.caps} if route.caps is not None else None
        if match.endpoint.count:  # counting never refuses: what cannot cross does not count
            drop = True
        stateful, turn = self.stateful, None
        if stateful is not None and owner is not None:
            turn = await stateful.begin(match.spec, body, owner, upstream)
            body = body if turn is None else turn.body
        request = upstream_request(match, body, get_protocol(upstream), drop_params=drop, caps=caps)
        del body  # the client's decoded body is not held for the stream's length (the raw bytes are)
        if stateful is not None and turn is not None:
            turn.convert(request)
            if turn.store:
                await stateful.check_room(turn.owner, len(raw))
        if match.endpoint.count:
            await count_tokens(self, match, request, send)
            return None
        for rec in request.unlogged:
            log.warning("bridge %s -> %s: not forwarded: %s", client, upstream, rec)
        for rec in request.dropped:
            self.stats.dropped[rec.kind] += rec.count
        limit = self.limits.max_streams
        if limit is not None and self._active >= limit:
            self.stats.overloaded += 1
            retry = {"retry-after": str(self.limits.retry_after)}
            raise Rejected(503, f"the bridge is serving {limit} streams already; retry later", retry)
        self._active += 1  # (the caller takes it back when the exchange ends)
        return request, turn

    async def _stateful_exchange(
        self, turn: Turn, client: str, request: Any, receive: Receive, send: Send
    ) -> None:
        """A Responses turn with the store: teed into it, or run in the background."""
        stateful = self.stateful
        assert stateful is not None
        current = CURRENT.get()
        if turn.background:

            async def run(write: Send) -> Response | None:
                token = CURRENT.set(current)
                request.envelope.stream = True  # the events are what is stored
                try:
                    with stateful.current(turn):
                        await run_exchange(self, client, request, None, write)
                finally:
                    CURRENT.reset(token)
                return current[1].responses[-1] if current[1].responses else None

            await stateful.launch(turn, run, receive, send)
            return
        before = len(current[1].responses)
        with stateful.current(turn):
            await run_exchange(self, client, request, receive, stateful.tee(turn, send))
        found = current[1].responses[before:]
        await stateful.save(turn, found[-1] if found else None)


_FALLBACK: tuple[type[BaseException], ...] = (Rejected, *UNREACHABLE)
"""What a route may fail with before the first byte and be replaced by a fallback."""


def _fallback_reason(exc: BaseException, exchange: Exchange, route: Route, *, last: bool) -> str:
    """Why ``route`` failed, when a fallback may serve the request instead; else ``exc`` is raised.

    Raises:
        Rejected: The answer has begun, this was the last route, or the failure is not retryable.
    """
    if isinstance(exc, Rejected):
        if exchange.started or last or not retryable(exc.status):
            raise exc
        return f"{exc.status}: {exc.message}"
    if exchange.started:
        raise exc
    why = f"unreachable: {exc or type(exc).__name__}"
    if last:
        raise Rejected(502, f"upstream {route.upstream.protocol} {why}") from None
    return why


def _upstream_secrets(router: Router) -> list[str]:
    """The API keys the upstreams send, so that no log line or error body shows them."""
    out: list[str] = []
    for upstream in router.upstreams():
        # The credential headers an HTTPUpstream sends (duck-typed: any upstream may have them).
        headers = getattr(upstream, "_headers", None) or {}
        found: set[str] = set()
        redact_headers(headers, secrets=found)
        url = getattr(upstream, "url", None)
        if isinstance(url, str):
            redact_url(url, secrets=found)  # a ?key= in the URL template
        out += [v for v in found if len(v) >= 8]
    return sorted(out, key=len, reverse=True)  # "Bearer sk-..." before "sk-..."


def create_app(
    *,
    upstream: Upstream | None = None,
    routes: Router | Sequence[Route] | str | Path | None = None,
    guard: Guard | None = None,
    limits: Limits | None = None,
    drop_params: bool = False,
    store: Store | str | None = None,
    native_state: bool = True,
) -> BridgeApp:
    """Build the bridge: a pure ASGI app serving the providers' endpoints from upstreams.

    Endpoints: those of every registered protocol spec that has a request envelope codec (the
    client's protocol is chosen by the path):

    * ``POST /v1/chat/completions`` — OpenAI Chat Completions
    * ``POST /v1/responses`` — OpenAI Responses
    * ``POST /v1/messages`` — Anthropic Messages
    * ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and ``:generateContent`` — Gemini
    * ``POST /v1beta/interactions`` — Google Interactions

    the websocket session endpoints of the session protocols (``/v1/realtime?model=`` for OpenAI
    Realtime, Live's ``BidiGenerateContent`` path), with a store the stored-conversation ones
    (``GET``/``DELETE /v1/responses/{id}``, ``input_items``, ``cancel``;
    ``GET``/``DELETE /v1beta/interactions/{id}``), and ``GET /health``, ``GET /metrics`` (Prometheus), the model listings (``GET /v1/models``:
    OpenAI's shape, Anthropic's with an ``anthropic-version`` header; ``GET /v1beta/models``:
    Gemini's), and ``OPTIONS`` CORS preflights.

    A streaming request (``"stream": true``, Gemini ``:streamGenerateContent``) is answered with
    the converted stream; a non-streaming one with the client protocol's JSON response body,
    built from the aggregate of the upstream stream (the upstream is always asked to stream).

    Args:
        upstream: One upstream for every model: a :class:`~maas_stream.bridge.HTTPUpstream` or
            :class:`~maas_stream.bridge.RecordingUpstream` (or anything with their interface).
        routes: Routes instead (a :class:`~maas_stream.bridge.Router`, a list of
            :class:`~maas_stream.bridge.Route`, or the path of a TOML routes file).
        guard: Bridge keys, allowed hosts and CORS origins; by default none are checked but the
            JSON content type (``maas-stream serve`` sets loopback hosts for a loopback bind).
        limits: Body size and time, concurrent streams (:class:`Limits`; its defaults when ``None``).
        drop_params: Drop and report request fields that change what the model does and
            cannot be carried to the upstream (tool choice, output schema, ``strict``, stop
            sequences, reasoning settings...), instead of answering 400.
        store: Keep Responses and Interactions conversations (``store``,
            ``previous_response_id`` / ``previous_interaction_id``, retrieval, background
            responses) in this store: a
            :class:`~maas_stream.bridge._store.Store` or its URL (``sqlite:PATH``,
            ``redis://...``); ``None``: nothing is stored and those fields go to the upstream
            as they are.
        native_state: With a store, an upstream of the client's own protocol keeps its
            native state (``previous_response_id`` is passed on, not expanded).

    Raises:
        ValueError: Neither or both of ``upstream`` and ``routes`` were given.
        ConfigError: The routes are invalid.
    """
    if (upstream is None) == (routes is None):
        raise ValueError("give either upstream= or routes=")
    if upstream is not None:
        router = single_route(upstream)
    elif isinstance(routes, str | Path):
        router = load_routes(routes)
    elif isinstance(routes, Router):
        router = routes
    else:
        assert routes is not None
        router = Router(list(routes))
    if isinstance(store, str):
        store = open_store(store)
    stateful = Stateful(store, native_state=native_state) if store is not None else None
    return BridgeApp(router, guard=guard, limits=limits, drop_params=drop_params, stateful=stateful)


class _Observed:
    """The ``send`` and ``receive`` of one request, recording what passes in its :class:`Exchange`.

    A slotted object, itself the ``send`` (called) and with a ``receive`` method: cheaper per
    request than two closures and their cells, or a bound method held while the stream lasts.
    """

    __slots__ = ("_cors", "_exchange", "_finished", "_receive", "_send")

    def __init__(
        self, exchange: Exchange, cors: Sequence[tuple[bytes, bytes]], receive: Receive, send: Send
    ) -> None:
        self._exchange = exchange
        self._cors = cors
        self._receive = receive
        self._send = send
        self._finished = False

    async def __call__(self, message: Message) -> None:
        """The request's ``send``: the message passed on, its status and first byte recorded."""
        exchange = self._exchange
        if message["type"] == "http.response.start":
            exchange.status = message["status"]
            raw = [*message.get("headers", ()), *self._cors]
            exchange.streamed = bool(exchange.client) and (b"content-type", b"application/json") not in raw
            message = {**message, "headers": raw}
        elif message["type"] == "http.response.body":
            if message.get("body"):
                self.wrote()
            self._finished = not message.get("more_body", False)
        await self._send(message)

    def wrote(self) -> None:
        """A body piece is sent (or written past this record): the first one's time recorded."""
        exchange = self._exchange
        if exchange.first_byte is None:
            exchange.first_byte = time.perf_counter() - exchange.start

    def unwrapped(self) -> Send:
        """The server's own ``send``, for pieces written past this record (``_answer._Writer``)."""
        return self._send

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect" and not self._finished:
            self._exchange.left = True
        return message


async def _ignored() -> None:
    """An ASGI scope type the bridge does not serve (none other is defined)."""
