"""Transport-level errors of the IO adapters.

::

    MaasStreamError
     └── StreamIOError                      transport-level trouble (abstract); ``.partial``
          ├── ProviderHTTPError             non-2xx answer; also httpx2.HTTPStatusError
          ├── UnexpectedContentTypeError    2xx but not a stream; also httpx2.SSEError
          ├── IncompleteStreamError         the stream ended before the provider's final event
          └── StreamTransportError          the connection failed or broke; also httpx2.TransportError
               └── StreamTimeoutError       connect / first byte / total timeout; also
                    │                       httpx2.TimeoutException, TimeoutError
                    └── IdleTimeoutError    no bytes for too long; also httpx2.ReadTimeout

Each error also subclasses the transport library's matching error (STYLE.md, "Errors"): the
classes here derive from httpx2's (the core dependency, and the official SDKs' transport). When
the source was a plain **httpx** response (or an httpx-sse event source), :func:`for_transport`
raises a subclass that also derives from httpx's matching class (httpx-sse's ``SSEError`` for
the content-type error), built on first use, so ``except httpx2.HTTPStatusError`` works too.

It must not import httpx or httpx-sse at module import time (they are optional).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import httpx2
import msgspec

from .._exceptions import MaasStreamError

if TYPE_CHECKING:
    from .._model import Response

__all__ = [
    "IdleTimeoutError",
    "IncompleteStreamError",
    "ProviderHTTPError",
    "StreamIOError",
    "StreamTimeoutError",
    "StreamTransportError",
    "UnexpectedContentTypeError",
    "error_summary",
    "for_transport",
    "parse_body",
]


class StreamIOError(MaasStreamError):
    """Transport-level trouble while reading a provider stream (abstract: catch a subclass or this).

    Attributes:
        partial: The response aggregated before the fault (``failed``, carrying the error;
            open parts ``incomplete``), set by :func:`~maas_stream.aaggregate`,
            :func:`~maas_stream.aconvert` and :func:`~maas_stream.astream` when they raise it:
            nothing already received is lost. ``None`` when nothing was read yet.
        error_frame: The in-band error frame :func:`~maas_stream.aconvert` wrote in the target
            protocol for this fault (``b""`` elsewhere).
    """

    partial: Response | None = None
    error_frame: bytes = b""


class ProviderHTTPError(StreamIOError, httpx2.HTTPStatusError):
    """The provider answered with a non-2xx status; the error carries its body.

    Attributes:
        status: The HTTP status code.
        body: The provider's error body: parsed JSON when it is JSON, else text.
        headers: The response headers (lower-case names).
        content: The body's bytes as received (up to 1 MiB).
        response: The transport's response object (closed), when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        content: bytes = b"",
        request: Any = None,
        response: Any = None,
    ) -> None:
        # Exception.__init__ directly: the transport classes' cooperative __init__ chains do
        # not agree on their keyword arguments once httpx2's classes are mixed in.
        Exception.__init__(self, message)
        self._request = request
        self.response = response
        self.status = status
        self.body = body
        self.headers = headers or {}
        self.content = content


class UnexpectedContentTypeError(StreamIOError, httpx2.SSEError):
    """A 2xx answer that is not a stream (``application/json`` when ``stream`` was forgotten, say).

    Attributes:
        status: The HTTP status code.
        content_type: The ``content-type`` the provider sent.
        body: The body (parsed JSON when it is JSON, else text), so nothing is lost.
    """

    def __init__(
        self, message: str, *, status: int, content_type: str, body: Any, request: Any = None
    ) -> None:
        Exception.__init__(self, message)
        self._request = request
        self.status = status
        self.content_type = content_type
        self.body = body


class IncompleteStreamError(StreamIOError):
    """The stream ended (the connection closed cleanly) before the provider's final event.

    Raised by :func:`~maas_stream.aconvert` only, after its in-band error frame: a converted
    stream must tell its reader. :func:`~maas_stream.aaggregate` returns such a stream as an
    ``incomplete`` response instead (a cut stream is a result).

    Attributes:
        received: How many bytes (or messages) had arrived.
    """

    def __init__(self, message: str, *, received: int) -> None:
        super().__init__(message)
        self.received = received


class StreamTransportError(StreamIOError, httpx2.TransportError):
    """The connection to the provider failed or broke (refused, reset, a body cut mid-way).

    The transport library's own error is the ``__cause__``.

    Attributes:
        received: How many bytes (or messages) had arrived before the fault.
    """

    def __init__(self, message: str, *, received: int = 0, request: Any = None) -> None:
        Exception.__init__(self, message)
        self._request = request
        self.received = received


class StreamTimeoutError(StreamTransportError, httpx2.TimeoutException, TimeoutError):
    """A time limit ran out: connecting, waiting for the answer's headers, or the whole exchange.

    Attributes:
        phase: ``"connect"``, ``"pool"`` (waiting for a free connection), ``"first_byte"``
            (the status line and headers), ``"idle"`` (between two reads), ``"total"`` (the
            whole exchange) or ``"read"`` (the transport's own read timeout).
        timeout: The limit, in seconds (``None`` when the transport's own timeout fired).
    """

    def __init__(
        self,
        message: str,
        *,
        phase: str,
        timeout: float | None,
        received: int = 0,
        request: Any = None,
    ) -> None:
        super().__init__(message, received=received, request=request)
        self.phase = phase
        self.timeout = timeout


class IdleTimeoutError(StreamTimeoutError, httpx2.ReadTimeout):
    """No bytes (or messages) arrived within ``idle_timeout`` seconds between two reads.

    Attributes:
        timeout: The idle timeout, in seconds.
        received: How many bytes (or messages) had arrived before the stall.
    """

    timeout: float

    def __init__(self, message: str, *, timeout: float, received: int, request: Any = None) -> None:
        super().__init__(message, phase="idle", timeout=timeout, received=received, request=request)


_E = TypeVar("_E", bound=StreamIOError)

_HTTPX_BASE = {
    ProviderHTTPError: ("httpx", "HTTPStatusError"),
    UnexpectedContentTypeError: ("httpx_sse", "SSEError"),
    StreamTransportError: ("httpx", "TransportError"),
    StreamTimeoutError: ("httpx", "TimeoutException"),
    IdleTimeoutError: ("httpx", "ReadTimeout"),
}
_HTTPX_LIBRARIES = frozenset({"httpx", "httpx_sse"})
_variants: dict[type[Any], type[Any]] = {}


def _httpx_base(module: str, name: str) -> type[BaseException]:
    import importlib

    try:
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    except ImportError:  # httpx-sse is not installed: its SSEError is an httpx.TransportError
        import httpx

        return httpx.TransportError


def for_transport(cls: type[_E], obj: Any) -> type[_E]:
    """The class to raise for an error about ``obj``: ``cls``, or its httpx-compatible subclass.

    Args:
        cls: One of this module's concrete error classes.
        obj: The transport object involved (a response, a request, a client, an error), or
            anything else. Only an object of plain httpx (or httpx-sse) gets the variant, so
            httpx is imported only when the caller already uses it.
    """
    if obj is None or cls not in _HTTPX_BASE:
        return cls
    if type(obj).__module__.split(".", 1)[0] not in _HTTPX_LIBRARIES:
        return cls
    variant = _variants.get(cls)
    if variant is None:
        base = _httpx_base(*_HTTPX_BASE[cls])
        variant = type(cls.__name__, (cls, base), {"__module__": cls.__module__, "__doc__": cls.__doc__})
        _variants[cls] = variant
    return variant


def parse_body(data: bytes) -> Any:
    """An error body as JSON when it parses, else as text (undecodable bytes replaced)."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return data.decode("utf-8", "replace")


def error_summary(body: Any) -> str:
    """The provider's own error message from an error body, in one line (best effort).

    Knows OpenAI's ``{"error": {"message"}}``, Anthropic's ``{"type": "error", "error": {...}}``
    and Google's ``{"error": {"code", "message", "status"}}`` (also inside a one-item list).
    """
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            kind = err.get("type") or err.get("status") or err.get("code")
            text = err.get("message")
            if text is not None:
                return f"{kind}: {text}" if kind else str(text)
        elif isinstance(err, str):
            return err
        return msgspec.json.encode(body).decode()[:300]
    text = str(body).strip().replace("\n", " ")
    return text[:300] if text else "(empty body)"
