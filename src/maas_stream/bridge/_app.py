"""The bridge as a pure ASGI application: a client SDK's endpoint in front of any upstream.

Per request: the path names the client's protocol; the body's conversation goes through
:func:`maas_stream.convert_history` to the upstream's protocol and is checked with
:func:`maas_stream.validate`; the upstream's stream comes back through
:func:`maas_stream.aconvert` into the client's protocol, each output frame sent as soon as it is
produced. A non-streaming request still streams from the upstream; the aggregate is answered with
:func:`maas_stream.encode_response` as one JSON body. Faults before the first byte become provider-shaped JSON errors for the CLIENT's
protocol; a fault after it can only end the stream (logged and counted).

It must not contain protocol logic (``_request`` holds the envelope and error shapes) and
depends on no web framework.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .._convert import convert_history, encode_response, validate
from .._drops import DropLog, Dropped
from .._exceptions import MaasStreamError, ValidationError
from .._registry import get_protocol
from ..io import ProviderHTTPError, StreamIOError, aaggregate, aconvert
from ..io._exceptions import error_summary
from ._request import Route, build_body, error_body, match_route, read_envelope

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from ._upstream import Upstream

    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

__all__ = ["BridgeApp", "BridgeStats", "create_app"]

log = logging.getLogger("maas_stream")

MAX_BODY = 32 * 1024 * 1024
"""The largest request body accepted (bytes)."""

_FORWARDED_HEADERS = ("retry-after", "x-request-id", "request-id")


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
    """Streams cut by a fault after the response had started."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Drops counted by kind (a bounded key set: see :data:`maas_stream.DropKind`)."""
    """What a client protocol could not carry (stream side) or the upstream was not sent
    (request side), with how often."""


class _Reject(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class BridgeApp:
    """The ASGI bridge application (see :func:`create_app`).

    Attributes:
        upstream: Where streams come from.
        stats: What the bridge did so far.
    """

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.stats = BridgeStats()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection (``http`` requests and the ``lifespan`` protocol)."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":  # websockets are not bridged (yet)
            return
        route = match_route(scope["path"])
        if route is None:
            await _send_json(send, 404, error_body(None, 404, f"no bridge endpoint at {scope['path']}"))
            return
        if scope["method"] != "POST":
            msg = f"{scope['path']} takes POST, not {scope['method']}"
            await _send_json(send, 405, error_body(route.protocol, 405, msg), {"allow": "POST"})
            return
        self.stats.requests += 1
        try:
            body = await _read_body(receive)
            await self._handle(scope, route, body, receive, send)
        except _Reject as exc:
            self.stats.rejected += 1
            log.info("bridge: %s %s -> %d: %s", scope["method"], scope["path"], exc.status, exc.message)
            await _send_json(
                send, exc.status, error_body(route.protocol, exc.status, exc.message), exc.headers
            )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.upstream.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _request_body(
        self, route: Route, body: Any
    ) -> tuple[dict[str, Any], bool, str | None, list[Dropped]]:
        client, target = route.protocol, self.upstream.protocol
        if not isinstance(body, dict):
            raise _Reject(400, "the request body must be a JSON object")
        env = read_envelope(client, body, route)
        lossy: list[Dropped] = []
        try:
            conversation = convert_history(body, to=target, protocol=client, lossy=lossy)
        except ValidationError as exc:
            raise _Reject(400, f"invalid {client} request: " + "; ".join(exc.faults)) from None
        except MaasStreamError as exc:
            raise _Reject(400, f"invalid {client} request: {exc}") from None
        upstream_body = build_body(target, conversation, env)
        faults = validate(upstream_body, target)
        if faults:
            raise _Reject(400, f"the {target} upstream would reject this request: " + "; ".join(faults))
        fields = DropLog(target, client)
        for name in env.dropped:
            fields.add("request_field", f"request field {name}")
        return upstream_body, env.stream, env.model, fields.records + lossy

    async def _handle(self, scope: Scope, route: Route, raw: bytes, receive: Receive, send: Send) -> None:
        if route.protocol == "gemini" and route.stream and b"alt=sse" not in scope.get("query_string", b""):
            raise _Reject(400, "only ?alt=sse streams are served (the JSON-array stream is not)")
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError as exc:
            raise _Reject(400, f"the request body is not valid JSON: {exc}") from None
        upstream_body, streaming, model, dropped = self._request_body(route, body)
        for rec in dropped:
            log.warning("bridge %s -> %s: not forwarded: %s", route.protocol, self.upstream.protocol, rec)
            self.stats.dropped[rec.kind] += rec.count
        try:
            async with self.upstream.open(upstream_body, model=model) as source:
                if streaming:
                    await self._stream(route.protocol, source, len(dropped), receive, send)
                else:
                    await self._answer(route.protocol, source, len(dropped), send)
        except ProviderHTTPError as exc:
            headers = {k: v for k, v in exc.headers.items() if k in _FORWARDED_HEADERS}
            raise _Reject(
                exc.status, f"upstream {self.upstream.protocol}: {error_summary(exc.body)}", headers
            ) from None
        except StreamIOError as exc:
            raise _Reject(502, f"upstream {self.upstream.protocol}: {exc}") from None

    async def _stream(self, client: str, source: Any, dropped: int, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", get_protocol(client).media_type.encode()),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            (b"x-maas-stream-upstream", self.upstream.protocol.encode()),
        ]
        if dropped:
            headers.append((b"x-maas-stream-request-dropped", str(dropped).encode()))
        lossy: list[Dropped] = []
        idle = getattr(self.upstream, "idle_timeout", None)
        stream = aconvert(source, to=client, protocol=self.upstream.protocol, idle_timeout=idle, lossy=lossy)
        started = False
        failure: BaseException | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_watch_disconnect, receive, tg.cancel_scope)
                try:
                    async for frame in stream:
                        if not started:
                            await send({"type": "http.response.start", "status": 200, "headers": headers})
                            started = True
                        await send({"type": "http.response.body", "body": frame, "more_body": True})
                except (MaasStreamError, OSError) as exc:
                    failure = exc
                finally:
                    await stream.aclose()
                if failure is None or started:
                    if not started:
                        await send({"type": "http.response.start", "status": 200, "headers": headers})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        finally:
            for rec in lossy:
                log.warning("bridge %s -> %s: dropped %s", self.upstream.protocol, client, rec)
                self.stats.dropped[rec.kind] += rec.count
        if failure is None:
            self.stats.streams += 1
        elif not started:
            raise _Reject(502, f"upstream {self.upstream.protocol}: {failure}")
        else:
            self.stats.stream_errors += 1
            log.error("bridge: the upstream %s stream failed mid-way: %s", self.upstream.protocol, failure)

    async def _answer(self, client: str, source: Any, dropped: int, send: Send) -> None:
        """Serve a non-streaming request: aggregate the upstream stream, answer with one body."""
        idle = getattr(self.upstream, "idle_timeout", None)
        try:
            response = await aaggregate(source, protocol=self.upstream.protocol, idle_timeout=idle)
        except (MaasStreamError, OSError) as exc:
            raise _Reject(502, f"upstream {self.upstream.protocol}: {exc}") from None
        if response.status == "failed":
            error = response.error
            what = (error.message or error.type) if error is not None else "the stream failed"
            raise _Reject(502, f"upstream {self.upstream.protocol}: {what}")
        lossy: list[Dropped] = []
        body = encode_response(response, client, lossy=lossy)
        for rec in lossy:
            log.warning("bridge %s -> %s: dropped %s", self.upstream.protocol, client, rec)
            self.stats.dropped[rec.kind] += rec.count
        headers = {"x-maas-stream-upstream": self.upstream.protocol}
        if dropped:
            headers["x-maas-stream-request-dropped"] = str(dropped)
        await _send_json(send, 200, body, headers)
        self.stats.streams += 1


async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _read_body(receive: Receive) -> bytes:
    chunks = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Reject(400, "the client went away before sending the whole request")
        chunks += message.get("body", b"")
        if len(chunks) > MAX_BODY:
            raise _Reject(413, f"the request body is larger than {MAX_BODY} bytes")
        if not message.get("more_body", False):
            return bytes(chunks)


async def _send_json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = msgspec.json.encode(body)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data, "more_body": False})


def create_app(*, upstream: Upstream) -> BridgeApp:
    """Build the bridge: a pure ASGI app serving the providers' endpoints from ``upstream``.

    Endpoints (the client's protocol is chosen by the path):

    * ``POST /v1/chat/completions`` — OpenAI Chat Completions
    * ``POST /v1/responses`` — OpenAI Responses
    * ``POST /v1/messages`` — Anthropic Messages
    * ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and ``:generateContent`` — Gemini

    A streaming request (``"stream": true``, Gemini ``:streamGenerateContent``) is answered with
    the converted stream; a non-streaming one with the client protocol's JSON response body,
    built from the aggregate of the upstream stream (the upstream is always asked to stream).

    Args:
        upstream: A :class:`~maas_stream.bridge.HTTPUpstream` or
            :class:`~maas_stream.bridge.RecordingUpstream` (or anything with their interface).
    """
    return BridgeApp(upstream)
