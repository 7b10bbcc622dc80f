"""Which HTTP answer an upstream failure is, and whether a fallback route may try instead.

Before the first byte reaches the client a failing upstream is an HTTP error in the client's
shape: a provider's refusal keeps its status (and its ``retry-after`` and request id), 504 for a timeout (503 with ``retry-after`` when no pooled connection came free), 502 for
anything else (unreachable, reset, cut, empty, invalid bytes), never a plain-text 500 the SDKs
would retry blindly; a rate limit, timeout or server fault lets the next route of a fallback
chain try.

It must not contain protocol logic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..io import ProviderHTTPError, StreamIOError, StreamTimeoutError
from ..io._exceptions import error_summary
from ._request import Rejected

if TYPE_CHECKING:
    from .._exceptions import MaasStreamError

__all__ = ["FORWARDED_HEADERS", "UNREACHABLE", "retryable", "upstream_failure"]

FORWARDED_HEADERS = ("retry-after", "x-request-id", "request-id")
"""The headers of a provider's refusal the client gets with its status."""


def _transport_errors() -> tuple[type[BaseException], ...]:
    # Connect errors and timeouts of either HTTP client: the upstream cannot be reached.
    found: list[type[BaseException]] = [StreamIOError, OSError]
    for name in ("httpx", "httpx2"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        found.append(module.TransportError)
    return tuple(found)


UNREACHABLE = _transport_errors()
"""The errors of an upstream that cannot be reached (either HTTP client, or the library's own)."""


def upstream_failure(upstream: str, exc: MaasStreamError) -> Rejected:
    """The HTTP error for an upstream that failed before the first byte reached the client.

    A timeout is 504 (503 with ``retry-after`` when no pooled connection came free); any other
    failure (unreachable, reset, cut, empty, invalid bytes) 502: the upstream failed, not the
    client, and never as a plain-text 500 the SDKs would retry blindly. A provider's refusal
    (:class:`~maas_stream.ProviderHTTPError`) keeps its status, a summary of its body and the
    :data:`FORWARDED_HEADERS` it sent.
    """
    if isinstance(exc, ProviderHTTPError):
        passed = {k: v for k, v in exc.headers.items() if k in FORWARDED_HEADERS}
        return Rejected(exc.status, f"upstream {upstream}: {error_summary(exc.body)}", passed)
    if isinstance(exc, StreamTimeoutError):
        if exc.phase == "pool":
            return Rejected(
                503, f"upstream {upstream}: no free upstream connection ({exc})", {"retry-after": "1"}
            )
        return Rejected(504, f"upstream {upstream}: {exc}")
    return Rejected(502, f"upstream {upstream}: {exc}")


def retryable(status: int) -> bool:
    """Whether an upstream answer lets a fallback route try (rate limit, timeout, server fault)."""
    return status in (408, 429) or status >= 500
