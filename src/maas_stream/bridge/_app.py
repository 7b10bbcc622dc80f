"""The bridge as a pure ASGI application: a client SDK's endpoint in front of any upstream.

Per request: the path names the client's protocol (the registry's ``match_endpoint`` over
every protocol spec's endpoints); ``_request`` converts the body for the upstream; the
upstream's stream comes back through :func:`maas_stream.aconvert` into the client's protocol,
each output frame sent as soon as it is produced. A non-streaming request still streams from
the upstream; the aggregate is answered with :func:`maas_stream.encode_response` as one JSON
body. Faults before the first byte become JSON errors shaped by the CLIENT protocol's spec; a
fault after it can only end the stream (logged and counted). Each drop is counted by kind and
logged once.

It must not contain protocol logic (it dispatches on the protocols' specs) and depends on no
web framework.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .._convert import encode_response
from .._exceptions import MaasStreamError
from .._registry import get_protocol, match_endpoint
from ..io import ProviderHTTPError, StreamIOError, aaggregate, aconvert
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
    """Drops counted by kind (a bounded key set: see :data:`maas_stream.DropKind`): what the
    client protocol could not carry (stream side) or the upstream was not sent (request side)."""


class BridgeApp:
    """The ASGI bridge application (see :func:`create_app`).

    Attributes:
        upstream: Where streams come from.
        stats: What the bridge did so far.
    """

    def __init__(self, upstream: Upstream, *, drop_params: bool = False) -> None:
        self.upstream = upstream
        self.drop_params = drop_params
        """Drop (and report) request fields that change what the model does and cannot be
        carried to the upstream, instead of refusing the request (LiteLLM's ``drop_params``)."""
        self.stats = BridgeStats()

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
        try:
            envelope_codec(match.spec, "client")
            body = await _read_body(receive)
            await self._handle(scope, match, body, receive, send)
        except Rejected as exc:
            self.stats.rejected += 1
            log.info("bridge: %s %s -> %d: %s", scope["method"], scope["path"], exc.status, exc.message)
            await _send_json(send, exc.status, error_body(match.spec, exc.status, exc.message), exc.headers)

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
        dropped = len(request.dropped)
        try:
            async with self.upstream.open(request.body, model=request.envelope.model) as source:
                if request.envelope.stream:
                    options = (
                        match.spec.encoder_options(request.envelope) if match.spec.encoder_options else {}
                    )
                    await self._stream(client, source, dropped, receive, send, options)
                else:
                    await self._answer(client, source, dropped, send)
        except ProviderHTTPError as exc:
            headers = {k: v for k, v in exc.headers.items() if k in _FORWARDED_HEADERS}
            raise Rejected(exc.status, f"upstream {upstream}: {error_summary(exc.body)}", headers) from None
        except StreamIOError as exc:
            raise Rejected(502, f"upstream {upstream}: {exc}") from None

    async def _stream(
        self,
        client: str,
        source: Any,
        dropped: int,
        receive: Receive,
        send: Send,
        options: dict[str, Any] | None = None,
    ) -> None:
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
        stream = aconvert(
            source,
            to=client,
            protocol=self.upstream.protocol,
            idle_timeout=idle,
            lossy=lossy,
            **(options or {}),
        )
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
            # aconvert logged each record when it happened; here they are only counted.
            for rec in lossy:
                self.stats.dropped[rec.kind] += rec.count
        if failure is None:
            self.stats.streams += 1
        elif not started:
            raise Rejected(502, f"upstream {self.upstream.protocol}: {failure}")
        else:
            self.stats.stream_errors += 1
            log.error("bridge: the upstream %s stream failed mid-way: %s", self.upstream.protocol, failure)

    async def _answer(self, client: str, source: Any, dropped: int, send: Send) -> None:
        """Serve a non-streaming request: aggregate the upstream stream, answer with one body."""
        idle = getattr(self.upstream, "idle_timeout", None)
        try:
            response = await aaggregate(source, protocol=self.upstream.protocol, idle_timeout=idle)
        except (MaasStreamError, OSError) as exc:
            raise Rejected(502, f"upstream {self.upstream.protocol}: {exc}") from None
        if response.status == "failed":
            error = response.error
            what = (error.message or error.type) if error is not None else "the stream failed"
            raise Rejected(502, f"upstream {self.upstream.protocol}: {what}")
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
            raise Rejected(400, "the client went away before sending the whole request")
        chunks += message.get("body", b"")
        if len(chunks) > MAX_BODY:
            raise Rejected(413, f"the request body is larger than {MAX_BODY} bytes")
        if not message.get("more_body", False):
            return bytes(chunks)


async def _send_json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = msgspec.json.encode(body)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data, "more_body": False})


def create_app(*, upstream: Upstream, drop_params: bool = False) -> BridgeApp:
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
            :class:`~maas_stream.bridge.RecordingUpstream` (or anything with their interface).
        drop_params: Drop and report request fields that change what the model does and
            cannot be carried to the upstream (tool choice, output schema, ``strict``, stop
            sequences, reasoning settings...), instead of answering 400.
    """
    return BridgeApp(upstream, drop_params=drop_params)
