"""The answer to one converted request: the upstream stream opened, then streamed or aggregated.

A streaming request is answered with the upstream's stream converted into the client's protocol
(:func:`maas_stream.io._stream.aconvert_into`: one write per read of frames, the first
frame out before the second read); a non-streaming one with the client protocol's JSON body,
built from the aggregate of the upstream stream (the upstream is always asked to stream). A
fault before the first byte is raised as :class:`~._request.Rejected` (the upstream's status
passed on, ``_failures`` for the rest); a fault after it ends the stream with the client
protocol's in-band error frame. The client's hang-up cancels the upstream exchange.

It also holds the request being served (:data:`CURRENT`: its upstream, its record, its route),
set by ``_app`` per route tried.

It must not contain protocol logic (it dispatches on the protocols' specs), decide routes or
fallbacks, or check what a request may do (``_app`` and ``_guard`` do, before it is called);
its streaming path must not add a call per frame.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._bodies import encode_response, is_cut
from .._exceptions import MaasStreamError
from .._registry import get_protocol
from ..io import StreamIOError, aaggregate
from ..io._source import _loop_clock
from ..io._stream import aconvert_into
from ._asgi import HangUp, send_json, watch_disconnect
from ._failures import upstream_failure
from ._http_direct import chunked_cycle, server_cycle, start_with_piece, write_chunk
from ._request import Rejected
from ._stateful import encoder_options, identified

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .._drops import Dropped
    from ._app import BridgeApp
    from ._asgi import Receive, Send
    from ._metrics import Exchange
    from ._routes import Route
    from ._upstream import Upstream

__all__ = [
    "CURRENT",
    "Reading",
    "answer",
    "answer_headers",
    "responses",
    "run_exchange",
]

log = logging.getLogger("maas_stream")


CURRENT: contextvars.ContextVar[tuple[Upstream, Exchange, Route | None]] = contextvars.ContextVar(
    "maas_stream_request"
)
"""The upstream chosen for the request being served, and its record (per request task)."""


async def run_exchange(
    app: BridgeApp, client: str, request: Any, receive: Receive | None, send: Send
) -> None:
    """Open the current upstream's stream for ``request`` and answer ``client`` from it.

    A streaming request is answered inline (one coroutine from the upstream's stream to the
    client: less per idle stream), a non-streaming one by :func:`answer`. With ``receive``, the
    client's hang-up cancels it all, watched from the start (connecting, waiting for the
    upstream's headers, streaming, aggregating): nothing is held for a client gone.
    """
    hangup = None if receive is None else HangUp.start(receive)
    if hangup is None and receive is not None:  # trio: the watcher runs in a task group
        await _run_in_group(app, client, request, receive, send)
        return
    upstream = app.upstream
    timeouts = getattr(upstream, "timeouts", None)
    now = _loop_clock()
    started = now()
    try:
        body, request.body = request.body, _SENT  # sent once: not held while the stream lasts
        async with upstream.open(body, model=request.envelope.model) as source:
            del body
            total = getattr(timeouts, "total", None)
            left = None if total is None else max(total - (now() - started), 0.0)
            del started, now  # (not held while the stream lasts)
            idle = getattr(timeouts, "idle", None)
            dropped = len(request.dropped)
            if not request.envelope.stream:
                await answer(app, client, source, Reading(idle, left, dropped), send)
                return
            # The streamed answer: the upstream stream converted into the client's protocol.
            spec = get_protocol(client)
            lossy: list[Dropped] = []
            write = _Writer(send, spec.media_type, answer_headers(app, dropped))
            failure: MaasStreamError | None = None
            try:
                await aconvert_into(
                    source,
                    write,
                    to=client,
                    protocol=upstream.protocol,
                    idle_timeout=idle,
                    total_timeout=left,
                    lossy=lossy,
                    final=responses(),
                    write_now=write.now,
                    **_options(spec, request.envelope),  # (not held by this frame)
                )
            except MaasStreamError as exc:
                failure = exc  # before the first byte a failure is an HTTP status instead
            finally:
                # aconvert_into logged each record when it happened; here they are only counted.
                for rec in lossy:
                    app.stats.dropped[rec.kind] += rec.count
            if failure is not None and not write.started:
                raise upstream_failure(upstream.protocol, failure)
            if not write.started:
                await write.start()
            tail: bytes = getattr(failure, "error_frame", b"")  # the client protocol's in-band error
            await send({"type": "http.response.body", "body": tail, "more_body": False})
            if failure is None:
                app.stats.streams += 1
            else:
                app.stats.stream_errors += 1
                log.error("bridge: the upstream %s stream failed mid-way: %s", upstream.protocol, failure)
    except asyncio.CancelledError:
        if hangup is None or not hangup.fired:
            raise
        hangup.task.uncancel()  # the cancellation was the hang-up's: taken back here
        _client_gone(app)
    except StreamIOError as exc:  # a provider's refusal (ProviderHTTPError) included
        raise upstream_failure(upstream.protocol, exc) from None
    finally:
        if hangup is not None:
            hangup.close()


_SENT: dict[str, Any] = {}
"""What a request's body is once sent (one shared empty dict, never written: nothing per stream)."""


def _client_gone(app: BridgeApp) -> None:
    current = CURRENT.get(None)
    if current is not None:
        current[1].left = True  # (the hang-up was seen here, not by the request's receive)
    app.stats.client_gone += 1
    log.info("bridge: the client went away; the upstream %s exchange was cancelled", app.upstream.protocol)


async def _run_in_group(app: BridgeApp, client: str, request: Any, receive: Receive, send: Send) -> None:
    """:func:`run_exchange` with the hang-up watched from a task group (trio)."""
    done = False
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
        try:
            await run_exchange(app, client, request, None, send)
            done = True
        except Exception as exc:
            failure = exc  # raised below, outside the task group (which would wrap it)
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if not done:
        _client_gone(app)


def _options(spec: Any, envelope: Any) -> dict[str, Any]:
    """The client protocol's encoder options for a request, and a stored response's id."""
    options: dict[str, Any] = spec.encoder_options(envelope) if spec.encoder_options else {}
    options.update(encoder_options())
    return options


def answer_headers(app: BridgeApp, dropped: int) -> dict[str, str]:
    """The bridge's own headers on an answer: the upstream, the number of request fields dropped."""
    headers = {"x-maas-stream-upstream": app.upstream.protocol}
    if dropped:
        headers["x-maas-stream-request-dropped"] = str(dropped)
    return headers


async def answer(app: BridgeApp, client: str, source: Any, reading: Reading, send: Send) -> None:
    """Serve a non-streaming request: aggregate the upstream stream, answer with one body."""
    upstream = app.upstream.protocol
    try:
        response = await aaggregate(
            source, protocol=upstream, idle_timeout=reading.idle, total_timeout=reading.total
        )
    except MaasStreamError as exc:
        raise upstream_failure(upstream, exc) from None
    responses().append(response)
    if is_cut(response):
        # A failed, cut or empty upstream is never a 200 body: the client would read it as an answer.
        error = response.error
        what = (error.message or error.type) if error is not None else None
        what = what or "the stream ended before the provider's final event (cut or empty)"
        raise Rejected(502, f"upstream {upstream}: {what}")
    lossy: list[Dropped] = []
    body = encode_response(identified(response), client, lossy=lossy, strict=True)
    for rec in lossy:
        log.warning("bridge %s -> %s: dropped %s", upstream, client, rec)
        app.stats.dropped[rec.kind] += rec.count
    await send_json(send, 200, body, answer_headers(app, reading.dropped))
    app.stats.streams += 1


class _Writer:
    """The ``write`` of a streamed answer: the response start before the first piece.

    One socket write per piece: ``aconvert_into`` writes the output of one read at once, and
    the transport hands a burst over in one read, so a busy stream costs a write per burst, not
    per frame. The start is an ASGI message (the record's status); behind uvicorn's own ``send``
    it goes out with the first piece in one write (the record told of the first byte), and the
    pieces after them are written to its connection directly while it would write them at once
    (:mod:`._http_direct`: no message dict, no coroutine per piece: the writer's own ``await``
    takes a done object; :meth:`now` for a piece converted in the upstream's hand-over); the
    rest, and the end, are messages. (A slotted object: cheaper per idle stream than a closure; the start's
    headers are built when it is sent, and not held after.)
    """

    __slots__ = ("_cycle", "_media_type", "_own", "_send", "started")

    def __init__(self, send: Send, media_type: str, own: dict[str, str]) -> None:
        self._send = send
        self._media_type = media_type
        self._own: dict[str, str] | None = own  # the bridge's own headers
        self._cycle: Any = None  # uvicorn's, once known to take pieces directly
        self.started = False

    async def start(self) -> None:
        """Send the response start (once)."""
        own, self._own = self._own, None
        headers = [
            (b"content-type", self._media_type.encode()),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *((k.encode(), v.encode()) for k, v in (own or {}).items()),
        ]
        self.started = True
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})

    def __call__(self, data: bytes) -> Awaitable[None]:
        """Write ``data``: directly (:meth:`now`: :data:`_WRITTEN`, no coroutine made), else as a message."""
        return _WRITTEN if self.now(data) else self._message(data)

    def now(self, data: bytes) -> bool:
        """Write ``data`` directly if uvicorn would write it at once; ``False``: nothing written.

        (``aconvert_into``'s ``write_now``: a piece converted in the upstream's hand-over, ``_body``.)
        """
        cycle = self._cycle
        return cycle is not None and write_chunk(cycle, data)

    async def _message(self, data: bytes) -> None:
        send = self._send
        if self.started:
            await send({"type": "http.response.body", "body": data, "more_body": True})
            return
        observed: Any = send  # the record (``_app._Observed``) when it has ``unwrapped``
        server: Any = getattr(observed, "unwrapped", None)
        cycle = None if server is None else server_cycle(server())
        if cycle is not None and await start_with_piece(cycle, self.start, data):
            observed.wrote()  # (the first byte, past the record)
        else:
            if not self.started:
                await self.start()
            await send({"type": "http.response.body", "body": data, "more_body": True})
        self._cycle = None if cycle is None else chunked_cycle(server())


class _Done(tuple[()]):
    """Awaited, done at once: an empty tuple whose iterator is its ``__await__`` (all in C)."""

    __slots__ = ()
    __await__ = tuple.__iter__


_WRITTEN: Awaitable[None] = cast("Awaitable[None]", _Done())
"""What a piece written directly returns to its ``await`` (one object, shared)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """How one upstream stream is read: its idle limit, the time left of its total, the drops."""

    idle: float | None
    total: float | None
    dropped: int


def responses() -> list[Any]:
    """Where the current request's final upstream response goes (for usage and unknown types)."""
    current = CURRENT.get(None)
    return current[1].responses if current is not None else []
