"""The bridge's HTTP/1.1 server protocols for uvicorn: uvicorn's own, with a new request's first step put ahead.

uvicorn's protocol makes a request's task from its socket callback once the head is read; the
task's first step (the bridge's routing, checks, the request's conversion, the upstream request
written) then waits in the loop's ready queue behind the body reads of every stream woken in the
same turn: under 200 paced streams, the tail of the time from a request's arrival to its upstream
request was 1.7-3.8 ms at p90 (asyncio). :class:`AheadH11Protocol` and
:class:`AheadHttpToolsProtocol` are uvicorn's classes, each with one override: when a socket read
made a new request cycle (its task made, or for a pipelined request queued), ``_ahead.go_first``
puts that step before those reads. Nothing else differs (``tests/bridge/test_uvicorn_http.py``
serves through both with a real uvicorn).

Relied on in uvicorn (0.55 here; every version since 0.30 has them): both classes'
``data_received``, ``cycle`` (replaced by a request's head, in the socket callback) and ``loop``.
Importing this module raises :class:`ImportError` without uvicorn; without httptools
:data:`AheadHttpToolsProtocol` is ``None``. It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ._ahead import go_first

__all__ = ["HTTP_IMPLS", "AheadH11Protocol", "AheadHttpToolsProtocol", "http_protocol"]

HTTP_IMPLS = ("httptools", "h11")
"""uvicorn's HTTP/1.1 implementations the bridge serves with (``serve --http``)."""


class _FirstStepAhead(asyncio.Protocol):
    """The override: a read that made a new request cycle puts its task's first step ahead."""

    cycle: Any
    loop: asyncio.AbstractEventLoop

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:
            go_first(self.loop)


class AheadH11Protocol(_FirstStepAhead, H11Protocol):
    """uvicorn's h11 protocol; a new request's first step goes first (see the module)."""


AheadHttpToolsProtocol: type[asyncio.Protocol] | None
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover (httptools missing: the serve extra not installed)
    AheadHttpToolsProtocol = None
else:

    class _AheadHttpTools(_FirstStepAhead, HttpToolsProtocol):
        """uvicorn's httptools protocol; a new request's first step goes first (see the module)."""

    AheadHttpToolsProtocol = _AheadHttpTools


def http_protocol(impl: str | None = None) -> type[asyncio.Protocol]:
    """The bridge's protocol class for uvicorn's HTTP/1.1 implementation ``impl`` (uvicorn's ``http``).

    ``None``: httptools where installed, else h11 (as uvicorn's ``auto`` picks).

    Raises:
        ValueError: ``impl`` is not one of :data:`HTTP_IMPLS`, or is httptools, not installed.
    """
    if impl not in (None, *HTTP_IMPLS):
        raise ValueError(f"--http: expected one of {', '.join(HTTP_IMPLS)}, not {impl!r}")
    if impl == "h11" or (impl is None and AheadHttpToolsProtocol is None):
        return AheadH11Protocol
    if AheadHttpToolsProtocol is None:
        raise ValueError("--http httptools: httptools is not installed (pip install 'maas-stream[serve]')")
    return AheadHttpToolsProtocol
