"""What the bridge tells its operator: Prometheus metrics and one log line per request.

Each request is followed by an :class:`Exchange` record (client protocol, route, upstream, status,
time to first byte, duration, drops, the final response, why it was rejected). When the request
ends, :meth:`Metrics.observe` counts it and :func:`log_exchange` writes its one structured line on
the ``maas_stream.bridge.access`` logger (the fields are also on the record as ``exchange``).

Metrics (prometheus-client, the ``serve`` extra; without it ``/metrics`` answers 501):

* ``maas_stream_requests_total{client,route,status}``
* ``maas_stream_errors_total{kind}``: rejections and failures by kind (``auth``, ``upstream``...)
* ``maas_stream_time_to_first_byte_seconds{client,route}``, ``maas_stream_request_duration_seconds{client,route}``
* ``maas_stream_tokens_total{route,direction}``: from the aggregated usage (``in``, ``out``)
* ``maas_stream_drops_total{kind}``: by :data:`maas_stream.DropKind`
* ``maas_stream_unknown_types_total{provider,model,type}``: unknown provider types, by provider and model
* ``maas_stream_fallbacks_total{route,fallback}``, ``maas_stream_in_flight_requests``

Each app has its own registry. With several worker processes, set ``PROMETHEUS_MULTIPROC_DIR``
(prometheus-client's multiprocess mode) so that any worker's ``/metrics`` sums all of them.

It must not contain protocol logic, and must never log a secret: the line holds no header, no
query string and no body, and its free text (a rejection's reason) is scrubbed of the known keys.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .._model import Response

__all__ = ["BridgeStats", "DropCounter", "Exchange", "Metrics", "error_kind", "log_exchange", "scrub"]

access_log = logging.getLogger("maas_stream.bridge.access")

_REDACTED: Final = "[REDACTED]"

_KINDS: Final = {
    400: "bad_request",
    401: "auth",
    403: "forbidden",
    404: "not_found",
    405: "method",
    413: "too_large",
    415: "content_type",
    421: "host",
    429: "rate_limited",
    501: "not_served",
    502: "upstream",
    503: "unavailable",
    504: "timeout",
}


def error_kind(status: int, *, cut: bool = False, left: bool = False, failed: bool = False) -> str | None:
    """The error kind of a request's outcome, or ``None`` for a success.

    Args:
        status: The HTTP status sent.
        cut: A streamed answer ended before the upstream's stream did.
        left: The client hung up.
        failed: The upstream's stream ended in an in-band error.
    """
    if status < 400:
        if left:
            return "client_disconnect"
        if cut:
            return "stream_cut"
        return "upstream_stream_error" if failed else None
    return _KINDS.get(status, "upstream" if status >= 500 else "bad_request")


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, _REDACTED)
    return text


@dataclass(slots=True)
class Exchange:
    """One request as the operator sees it."""

    method: str
    path: str
    peer: str | None = None
    """The client's address (``host:port``), as the server saw it."""
    start: float = field(default_factory=time.perf_counter)
    client: str = ""
    """The client protocol (empty for the bridge's own endpoints)."""
    route: str = ""
    upstream: str = ""
    """The upstream protocol of the route that served (or last tried) the request."""
    model: str | None = None
    status: int = 0
    first_byte: float | None = None
    """Seconds from the request to the first body byte sent."""
    drops: int = 0
    """Drop records (request and response side), counted by their ``count``."""
    reason: str | None = None
    """Why the request was rejected (scrubbed of secrets)."""
    fallbacks: tuple[str, ...] = ()
    """Routes that failed before the first byte and were replaced by a fallback."""
    responses: list[Response] = field(default_factory=list)
    """The upstream's final (aggregated) response, once its stream ended."""
    streamed: bool = False
    """A streamed answer was started (``http.response.start`` of a stream)."""
    left: bool = False
    """The client hung up before the answer ended."""

    @property
    def started(self) -> bool:
        """Whether the response has started (nothing else can be sent but its body)."""
        return self.status != 0

    def kind(self) -> str | None:
        """The error kind of the outcome (see :func:`error_kind`), ``None`` for a success."""
        response = self.responses[-1] if self.responses else None
        return error_kind(
            self.status,
            cut=self.streamed and response is None,
            left=self.left,
            failed=response is not None and response.status == "failed",
        )

    def fields(self) -> dict[str, Any]:
        """The log line's fields."""
        response = self.responses[-1] if self.responses else None
        kind = self.kind()
        out: dict[str, Any] = {
            "method": self.method,
            "path": self.path,
            "peer": self.peer,
            "status": self.status,
            "client": self.client or None,
            "route": self.route or None,
            "upstream": self.upstream or None,
            "model": self.model,
            "drops": self.drops,
            "duration_ms": round((time.perf_counter() - self.start) * 1000, 1),
        }
        if self.first_byte is not None:
            out["ttfb_ms"] = round(self.first_byte * 1000, 1)
        if kind is not None:
            out["error"] = kind
        if self.reason is not None:
            out["reason"] = self.reason
        if self.fallbacks:
            out["fell_back_from"] = list(self.fallbacks)
        if response is not None and response.usage is not None:
            out["tokens_in"] = response.usage.input_tokens
            out["tokens_out"] = response.usage.output_tokens
        return out


def log_exchange(exchange: Exchange) -> None:
    """Write the request's one log line.

    WARNING for a 5xx or a failed stream, DEBUG for the bridge's own endpoints (health checks and
    metric scrapes are not worth a line each), INFO otherwise.
    """
    status = exchange.status
    if status >= 500 or (status < 400 and exchange.kind() is not None):
        level = logging.WARNING
    elif not exchange.client and status < 400:
        level = logging.DEBUG
    else:
        level = logging.INFO
    if access_log.isEnabledFor(level):
        fields = exchange.fields()
        line = msgspec.json.encode(fields).decode()
        access_log.log(level, "bridge request %s", line, extra={"exchange": fields})


class Metrics:
    """The bridge's Prometheus metrics (one registry per app).

    Attributes:
        enabled: prometheus-client is installed.
    """

    def __init__(self) -> None:
        try:
            import prometheus_client as prom
        except ImportError:  # the ``serve`` extra is not installed: metrics are off
            self.enabled = False
            return
        self.enabled = True
        self._prom = prom
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        reg = self.registry = prom.CollectorRegistry()
        self.requests = prom.Counter(
            "maas_stream_requests",
            "Requests by client protocol, route and status.",
            ["client", "route", "status"],
            registry=reg,
        )
        self.errors = prom.Counter(
            "maas_stream_errors", "Rejections and failures by kind.", ["kind"], registry=reg
        )
        buckets = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
        self.ttfb = prom.Histogram(
            "maas_stream_time_to_first_byte_seconds",
            "Seconds from a request to the first byte of its answer.",
            ["client", "route"],
            buckets=buckets,
            registry=reg,
        )
        self.duration = prom.Histogram(
            "maas_stream_request_duration_seconds",
            "Seconds from a request to the end of its answer.",
            ["client", "route"],
            buckets=(*buckets, 120, 300, 600),
            registry=reg,
        )
        self.tokens = prom.Counter(
            "maas_stream_tokens",
            "Tokens by route and direction (usage of the upstream).",
            ["route", "direction"],
            registry=reg,
        )
        self.drops = prom.Counter(
            "maas_stream_drops", "Dropped things by kind (DropKind).", ["kind"], registry=reg
        )
        self.unknown = prom.Counter(
            "maas_stream_unknown_types",
            "Unknown provider types kept, by provider protocol, model and type.",
            ["provider", "model", "type"],
            registry=reg,
        )
        self.fallbacks = prom.Counter(
            "maas_stream_fallbacks",
            "Routes replaced by a fallback before the first byte.",
            ["route", "fallback"],
            registry=reg,
        )
        self.in_flight = prom.Gauge(
            "maas_stream_in_flight_requests",
            "Requests being answered.",
            registry=reg,
            multiprocess_mode="livesum",
        )

    def dropped(self, kind: str, count: int) -> None:
        """Count ``count`` drops of ``kind``."""
        if self.enabled and count > 0:
            self._child(self.drops, kind).inc(count)

    def fell_back(self, route: str, fallback: str) -> None:
        """Count a route replaced by ``fallback``."""
        if self.enabled:
            self.fallbacks.labels(route, fallback).inc()

    def observe(self, exchange: Exchange) -> None:
        """Count a finished request."""
        if not self.enabled:
            return
        child = self._child
        client, route = exchange.client, exchange.route
        child(self.requests, client, route, str(exchange.status)).inc()
        kind = exchange.kind()
        if kind is not None:
            child(self.errors, kind).inc()
        if exchange.client:
            if exchange.first_byte is not None:
                child(self.ttfb, client, route).observe(exchange.first_byte)
            child(self.duration, client, route).observe(time.perf_counter() - exchange.start)
        for response in exchange.responses:
            usage = response.usage
            if usage is not None:
                if usage.input_tokens:
                    child(self.tokens, route, "in").inc(usage.input_tokens)
                if usage.output_tokens:
                    child(self.tokens, route, "out").inc(usage.output_tokens)
            if response.unknown:
                model = response.model or exchange.model or ""
                for provider_type, count in response.unknown.items():
                    self.unknown.labels(response.protocol, model, provider_type).inc(count)

    def _child(self, metric: Any, *labels: str) -> Any:
        # prometheus-client validates and looks labels up on every .labels() call; the label
        # sets of the fixed-cardinality metrics are few, so their children are kept here.
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type.

        With ``PROMETHEUS_MULTIPROC_DIR`` set, every worker process's values are summed.
        """
        prom = self._prom
        registry = self.registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST


class DropCounter(Counter[str]):
    """A :class:`~collections.Counter` that reports each increase (to metrics and the request)."""

    listener: Callable[[str, int], None] | None = None

    def __setitem__(self, key: str, value: int) -> None:
        delta = value - self.get(key, 0)
        super().__setitem__(key, value)
        if delta > 0 and self.listener is not None:
            self.listener(key, delta)


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
    dropped: Counter[str] = field(default_factory=DropCounter)
    """Drops counted by kind (a bounded key set: see :data:`maas_stream.DropKind`): what the
    client protocol could not carry (stream side) or the upstream was not sent (request side)."""
