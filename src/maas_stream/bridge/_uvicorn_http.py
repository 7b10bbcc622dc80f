"""The bridge's HTTP/1.1 server protocols for uvicorn: uvicorn's own, with a request's steps put ahead.

uvicorn's protocol makes a request's task from its socket callback once the head is read, and
wakes it from there when the body comes. Each step (the bridge's routing, checks, the request's
conversion, the upstream request written) then waited in the loop's ready queue behind the body
reads of every stream woken in the same turn: under 200 paced streams, the time from a request's
arrival to its upstream request was 1.7-3.8 ms at p90 (asyncio); and under load a client's head
and body often come in two reads (14 probes of 20, where an idle bridge reads them as one), so a
request waited so twice. :class:`AheadH11Protocol` and :class:`AheadHttpToolsProtocol` are
uvicorn's classes, each with one override: after a client's read, ``_ahead.go_first`` puts what
it woke before those reads. A client sends nothing else on an HTTP/1.1 connection (a read is a
request's head or body, or a pipelined request), and a read that wakes nothing costs one
``call_soon``. Nothing else differs (``tests/bridge/test_ahead.py`` drives both by hand;
``tests/bridge/test_serve.py`` serves through both with a real uvicorn).

Relied on in uvicorn (0.55 here; every version since 0.30 has them): both classes'
``data_received`` (the request's task made, or woken, from it) and ``loop``. Importing this
module raises :class:`ImportError` without uvicorn; without httptools
:data:`AheadHttpToolsProtocol` is ``None``. It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

from ._ahead import go_first

__all__ = ["HTTP_IMPLS", "AheadH11Protocol", "AheadHttpToolsProtocol", "http_protocol"]

HTTP_IMPLS = ("httptools", "h11")
"""uvicorn's HTTP/1.1 implementations the bridge serves with (``serve --http``)."""


class _FirstStepAhead(asyncio.Protocol):
    """The override: what a client's read wakes (a request's task made, or its body read) goes first."""

    loop: asyncio.AbstractEventLoop

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        go_first(self.loop)


class AheadH11Protocol(_FirstStepAhead, H11Protocol):
    """uvicorn's h11 protocol; what a client's read wakes goes first (see the module)."""


AheadHttpToolsProtocol: type[asyncio.Protocol] | None
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover (httptools missing: the serve extra not installed)
    AheadHttpToolsProtocol = None
else:

    class _AheadHttpTools(_FirstStepAhead, HttpToolsProtocol):
        """uvicorn's httptools protocol; what a client's read wakes goes first (see the module)."""

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
