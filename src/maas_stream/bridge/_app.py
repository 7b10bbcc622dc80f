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

It must not contain protocol logic (it dispatches on the protocols' specs) and depends on no
web framework.
"""

from __future__ import annotations

import logging
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .._convert import encode_response, is_cut
from .._exceptions import MaasStreamError
from .._registry import get_protocol, match_endpoint
from ..io import ProviderHTTPError, StreamIOError, StreamTimeoutError, aaggregate, aconvert
from ..io._exceptions import error_summary
from ._request import Rejected, envelope_codec, error_body, upstream_request

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from .._drops import Dropped
    from .._registry import EndpointMatch
    from ._upstream import Upstream

    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

__all__ = ["BridgeApp", "BridgeStats", "Limits", "create_app"]

log = logging.getLogger("maas_stream")

MAX_BODY = 32 * 1024 * 1024
"""The largest request body accepted by default (bytes)."""

_FORWARDED_HEADERS = ("retry-after", "x-request-id", "request-id")


@dataclass(frozen=True)
class Limits:
    """What one bridge process accepts (per process: several workers each have their own)."""

    max_body: int = MAX_BODY
    """The largest request body, in bytes (413 beyond, told by ``content-length`` or while reading)."""
    body_timeout: float | None = 60.0
    """Seconds allowed to receive the whole request body (408 beyond: a slow sender)."""
    max_streams: int | None = 1000
    """Upstream exchanges in flight at once, streaming or not (``None``: no limit); one more is
    answered 503 with ``retry-after`` in the client's error shape."""
    retry_after: int = 1
    """The ``retry-after`` seconds sent with a 503 over :attr:`max_streams`."""

    def __post_init__(self) -> None:
        if self.max_body < 0:
            raise ValueError(f"max_body must not be negative, not {self.max_body}")
        if self.max_streams is not None and self.max_streams < 1:
            raise ValueError(f"max_streams must be at least 1 or None, not {self.max_streams}")


@dataclass
class BridgeStats:
    """Counters of what the bridge did (read them from :attr:`BridgeApp.stats`)."""

    requests: int = 0
    """Requests routed to a protocol endpoint."""
    streams: int = 0
    """Streams that reached the client to their end (and non-streaming requests answered)."""
    rejected: int = 0
    """Requests answered with an error before any stream byte."""
    stream_errors: int = 0
    """Streams ended with an in-band error by a fault after the response had started."""
    client_gone: int = 0
    """Requests whose client hung up before the answer ended (the upstream was cancelled)."""
    overloaded: int = 0
    """Requests refused (503) because :attr:`Limits.max_streams` exchanges were in flight."""
    internal_errors: int = 0
    """Requests that hit a bug (500, logged with the traceback's frames only)."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Drops counted by kind (a bounded key set: see :data:`maas_stream.DropKind`): what the
    client protocol could not carry (stream side) or the upstream was not sent (request side)."""


class BridgeApp:
    """The ASGI bridge application (see :func:`create_app`).

    Attributes:
        upstream: Where streams come from.
        limits: What one process accepts.
        stats: What the bridge did so far.
    """

    def __init__(
        self, upstream: Upstream, limits: Limits | None = None, *, drop_params: bool = False
    ) -> None:
        self.upstream = upstream
        self.limits = limits or Limits()
        self.drop_params = drop_params
        """Drop (and report) request fields that change what the model does and cannot be
        carried to the upstream, instead of refusing the request (LiteLLM's ``drop_params``)."""
        self.stats = BridgeStats()
        self._active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection (``http`` requests and the ``lifespan`` protocol)."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":  # websockets are not bridged (yet)
            return
        match = match_endpoint(scope["path"])
        if match is None:
            await _send_json(send, 404, error_body(None, 404, f"no bridge endpoint at {scope['path']}"))
            return
        if scope["method"] != "POST":
            msg = f"{scope['path']} takes POST, not {scope['method']}"
            await _send_json(send, 405, error_body(match.spec, 405, msg), {"allow": "POST"})
            return
        self.stats.requests += 1
        tracked = _Tracked(send)
        try:
            envelope_codec(match.spec, "client")
            body = await _read_body(scope, receive, self.limits)
            await self._handle(scope, match, body, receive, tracked)
        except Rejected as exc:
            self.stats.rejected += 1
            log.info("bridge: %s %s -> %d: %s", scope["method"], scope["path"], exc.status, exc.message)
            await _send_json(send, exc.status, error_body(match.spec, exc.status, exc.message), exc.headers)
        except Exception as exc:
            await self._internal_error(scope, match.spec, exc, tracked)

    async def _internal_error(self, scope: Scope, spec: Any, exc: Exception, tracked: _Tracked) -> None:
        """A bug: 500 in the client's error shape; logged with the frames, never the message."""
        self.stats.internal_errors += 1
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
        if not tracked.started:
            msg = f"internal error in the bridge ({type(exc).__name__}); see its log"
            await _send_json(tracked.send, 500, error_body(spec, 500, msg))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.upstream.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _handle(
        self, scope: Scope, match: EndpointMatch, raw: bytes, receive: Receive, send: Send
    ) -> None:
        query = match.endpoint.query
        if query is not None and query.encode() not in scope.get("query_string", b"").split(b"&"):
            raise Rejected(400, f"{scope['path']} is served only with ?{query}")
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError as exc:
            raise Rejected(400, f"the request body is not valid JSON: {exc}") from None
        client, upstream = match.spec.name, self.upstream.protocol
        request = upstream_request(match, body, get_protocol(upstream), drop_params=self.drop_params)
        for rec in request.unlogged:
            log.warning("bridge %s -> %s: not forwarded: %s", client, upstream, rec)
        for rec in request.dropped:
            self.stats.dropped[rec.kind] += rec.count
        limit = self.limits.max_streams
        if limit is not None and self._active >= limit:
            self.stats.overloaded += 1
            retry = {"retry-after": str(self.limits.retry_after)}
            raise Rejected(503, f"the bridge is serving {limit} streams already; retry later", retry)
        self._active += 1
        try:
            await self._exchange(client, request, receive, send)
        finally:
            self._active -= 1

    async def _exchange(self, client: str, request: Any, receive: Receive, send: Send) -> None:
        """Open the upstream stream and answer from it; the client's hang-up cancels it all.

        The hang-up is watched from the start (connecting, waiting for the upstream's headers,
        streaming, aggregating for a non-streaming answer): nothing is held for a client gone.
        """
        done = False
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_disconnect, receive, tg.cancel_scope)
            try:
                await self._open(client, request, send)
                done = True
            except Exception as exc:
                failure = exc  # raised below, outside the task group (which would wrap it)
            finally:
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if not done:
            self.stats.client_gone += 1
            log.info(
                "bridge: the client went away; the upstream %s exchange was cancelled", self.upstream.protocol
            )

    async def _open(self, client: str, request: Any, send: Send) -> None:
        upstream = self.upstream.protocol
        timeouts = getattr(self.upstream, "timeouts", None)
        started = anyio.current_time()
        try:
            async with self.upstream.open(request.body, model=request.envelope.model) as source:
                total = getattr(timeouts, "total", None)
                left = None if total is None else max(total - (anyio.current_time() - started), 0.0)
                reading = _Reading(getattr(timeouts, "idle", None), left, len(request.dropped))
                if request.envelope.stream:
                    spec = get_protocol(client)
                    options = spec.encoder_options(request.envelope) if spec.encoder_options else {}
                    await self._stream(client, source, reading, send, options)
                else:
                    await self._answer(client, source, reading, send)
        except ProviderHTTPError as exc:
            headers = {k: v for k, v in exc.headers.items() if k in _FORWARDED_HEADERS}
            raise Rejected(exc.status, f"upstream {upstream}: {error_summary(exc.body)}", headers) from None
        except StreamIOError as exc:
            raise _upstream_failure(upstream, exc) from None

    def _headers(self, dropped: int) -> dict[str, str]:
        headers = {"x-maas-stream-upstream": self.upstream.protocol}
        if dropped:
            headers["x-maas-stream-request-dropped"] = str(dropped)
        return headers

    async def _stream(
        self, client: str, source: Any, reading: _Reading, send: Send, options: dict[str, Any]
    ) -> None:
        headers = [
            (b"content-type", get_protocol(client).media_type.encode()),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *((k.encode(), v.encode()) for k, v in self._headers(reading.dropped).items()),
        ]
        lossy: list[Dropped] = []
        stream = aconvert(
            source,
            to=client,
            protocol=self.upstream.protocol,
            idle_timeout=reading.idle,
            total_timeout=reading.total,
            lossy=lossy,
            **options,
            yield_error=False,  # before the first byte a failure is an HTTP status instead
        )
        started = False
        failure: MaasStreamError | None = None
        try:
            try:
                async for frame in stream:
                    if not started:
                        await send({"type": "http.response.start", "status": 200, "headers": headers})
                        started = True
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
            except MaasStreamError as exc:
                failure = exc
            finally:
                await stream.aclose()
        finally:
            # aconvert logged each record when it happened; here they are only counted.
            for rec in lossy:
                self.stats.dropped[rec.kind] += rec.count
        if failure is not None and not started:
            raise _upstream_failure(self.upstream.protocol, failure)
        if not started:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
        tail: bytes = getattr(failure, "error_frame", b"")  # the client protocol's in-band error
        await send({"type": "http.response.body", "body": tail, "more_body": False})
        if failure is None:
            self.stats.streams += 1
        else:
            self.stats.stream_errors += 1
            log.error("bridge: the upstream %s stream failed mid-way: %s", self.upstream.protocol, failure)

    async def _answer(self, client: str, source: Any, reading: _Reading, send: Send) -> None:
        """Serve a non-streaming request: aggregate the upstream stream, answer with one body."""
        upstream = self.upstream.protocol
        try:
            response = await aaggregate(
                source, protocol=upstream, idle_timeout=reading.idle, total_timeout=reading.total
            )
        except MaasStreamError as exc:
            raise _upstream_failure(upstream, exc) from None
        if is_cut(response):
            # A failed, cut or empty upstream is never a 200 body: the client would read it as an answer.
            error = response.error
            what = (error.message or error.type) if error is not None else None
            what = what or "the stream ended before the provider's final event (cut or empty)"
            raise Rejected(502, f"upstream {upstream}: {what}")
        lossy: list[Dropped] = []
        body = encode_response(response, client, lossy=lossy, strict=True)
        for rec in lossy:
            log.warning("bridge %s -> %s: dropped %s", upstream, client, rec)
            self.stats.dropped[rec.kind] += rec.count
        await _send_json(send, 200, body, self._headers(reading.dropped))
        self.stats.streams += 1


@dataclass(frozen=True)
class _Reading:
    """How one upstream stream is read: its idle limit, the time left of its total, the drops."""

    idle: float | None
    total: float | None
    dropped: int


class _Tracked:
    """An ASGI ``send`` that remembers whether the response has started."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


def _upstream_failure(upstream: str, exc: MaasStreamError) -> Rejected:
    """The HTTP error for an upstream that failed before the first byte reached the client.

    A timeout is 504 (503 with ``retry-after`` when no pooled connection came free); any other
    failure (unreachable, reset, cut, empty, invalid bytes) 502: the upstream failed, not the
    client, and never as a plain-text 500 the SDKs would retry blindly.
    """
    if isinstance(exc, StreamTimeoutError):
        if exc.phase == "pool":
            return Rejected(
                503, f"upstream {upstream}: no free upstream connection ({exc})", {"retry-after": "1"}
            )
        return Rejected(504, f"upstream {upstream}: {exc}")
    return Rejected(502, f"upstream {upstream}: {exc}")


async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _read_body(scope: Scope, receive: Receive, limits: Limits) -> bytes:
    """The whole request body, within the size and time limits.

    Raises:
        Rejected: Larger than ``limits.max_body`` (413, from ``content-length`` before reading
            when it is sent), slower than ``limits.body_timeout`` (408), or the client left (400).
    """
    limit = limits.max_body
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise Rejected(413, f"the request body is larger than {limit} bytes")
    chunks = bytearray()
    with anyio.move_on_after(limits.body_timeout) as deadline:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Rejected(400, "the client went away before sending the whole request")
            chunks += message.get("body", b"")
            if len(chunks) > limit:
                raise Rejected(413, f"the request body is larger than {limit} bytes")
            if not message.get("more_body", False):
                return bytes(chunks)
    assert deadline.cancelled_caught
    raise Rejected(408, f"the request body did not arrive within {limits.body_timeout:g}s")


async def _send_json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = msgspec.json.encode(body)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data, "more_body": False})


def create_app(*, upstream: Upstream, limits: Limits | None = None, drop_params: bool = False) -> BridgeApp:
    """Build the bridge: a pure ASGI app serving the providers' endpoints from ``upstream``.

    Endpoints: those of every registered protocol spec that has a request envelope codec (the
    client's protocol is chosen by the path):

    * ``POST /v1/chat/completions`` — OpenAI Chat Completions
    * ``POST /v1/responses`` — OpenAI Responses
    * ``POST /v1/messages`` — Anthropic Messages
    * ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and ``:generateContent`` — Gemini

    A streaming request (``"stream": true``, Gemini ``:streamGenerateContent``) is answered with
    the converted stream; a non-streaming one with the client protocol's JSON response body,
    built from the aggregate of the upstream stream (the upstream is always asked to stream).

    Args:
        upstream: A :class:`~maas_stream.bridge.HTTPUpstream` or
            :class:`~maas_stream.bridge.RecordingUpstream` (or anything with their interface;
            its optional ``timeouts`` attribute, a :class:`~maas_stream.bridge.Timeouts`,
            bounds the reading of each stream).
        limits: Body size and time, concurrent streams (:class:`Limits`; its defaults when ``None``).
        drop_params: Drop and report request fields that change what the model does and
            cannot be carried to the upstream (tool choice, output schema, ``strict``, stop
            sequences, reasoning settings...), instead of answering 400.
    """
    return BridgeApp(upstream, limits, drop_params=drop_params)
