"""The direct write of a streamed answer's body pieces to uvicorn's HTTP/1.1 connection.

Through ASGI, each piece of a streamed answer is a message dict and three coroutines (the
bridge's writer, its :class:`~._app._Observed` record, uvicorn's ``RequestResponseCycle.send``:
its checks, a join of the chunk's framing, and under h11 an event object and a step of h11's
state machine) before ``transport.write``. :func:`chunked_cycle` finds uvicorn's cycle behind a
``send`` uvicorn handed over unwrapped (``send.__self__``, for its ``httptools`` and ``h11``
protocols), once the response has started with chunked transfer encoding, and
:func:`write_chunk` writes a piece to its transport at once, framed as uvicorn frames it
(``%x CRLF data CRLF``: the same bytes on the wire). It writes only while uvicorn would write
the piece at once itself: the response started, not complete, the client not gone, writing not
paused. Anything else (the start, the final piece, a paused or closed connection, a HEAD or
content-length answer, a server that is not uvicorn's, a wrapped ``send``) stays on the ASGI
path, where uvicorn's own rules apply (it drains a paused transport, drops a piece for a client
gone, whose hang-up its ``receive`` reports as before).

It wraps uvicorn's objects rather than copying their code (``tests/bridge/test_http_direct.py``
pins what it relies on: the cycles' ``send`` bound methods, their ``transport``, ``flow``,
``scope``, ``response_started``, ``response_complete``, ``disconnected``, httptools'
``chunked_encoding``, h11's chunked writer). Without uvicorn (or with a version whose cycles
differ: checked once per answer) nothing is direct. It must not contain protocol logic.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chunked_cycle", "write_chunk"]


def _chunked_httptools(cycle: Any) -> bool:
    return cycle.chunked_encoding is True


def _chunked_h11(cycle: Any) -> bool:
    return type(cycle.conn._writer) is _H11_CHUNKED


_CHUNKED: dict[Any, Any] = {}
"""uvicorn's cycle classes (those importable here), each with its test of a chunked response."""
_H11_CHUNKED: Any = None

try:
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle as _HttptoolsCycle
except ImportError:  # pragma: no cover (httptools missing: the serve extra not installed)
    pass
else:
    _CHUNKED[_HttptoolsCycle] = _chunked_httptools
try:
    from h11._writers import ChunkedWriter as _H11_CHUNKED
    from uvicorn.protocols.http.h11_impl import RequestResponseCycle as _H11Cycle
except ImportError:  # pragma: no cover (uvicorn or h11 missing)
    pass
else:
    _CHUNKED[_H11Cycle] = _chunked_h11


def chunked_cycle(send: Any) -> Any:
    """The uvicorn cycle behind ``send`` if its started response is chunked, else ``None``.

    ``send`` must be the cycle's own ``send`` (a wrapped one keeps its wrapper's rules), the
    response started (uvicorn chose its framing) and not for a HEAD request.
    """
    cycle: Any = getattr(send, "__self__", None)
    chunked = _CHUNKED.get(type(cycle))
    if chunked is None or getattr(send, "__func__", None) is not type(cycle).send:
        return None
    try:
        if not cycle.response_started or cycle.scope["method"] == "HEAD" or not chunked(cycle):
            return None
        # What :func:`write_chunk` reads (a uvicorn that renamed them is served through ASGI).
        _ = (cycle.response_complete, cycle.disconnected, cycle.flow.write_paused, cycle.transport.write)
    except (AttributeError, KeyError):
        return None
    return cycle


def write_chunk(cycle: Any, data: bytes) -> bool:
    """Write ``data`` (not empty, more to come) as one chunk, if uvicorn would write it at once.

    ``False``: nothing written, for the ASGI path (complete, the client gone, writing paused).
    """
    if cycle.response_complete or cycle.disconnected or cycle.flow.write_paused:
        return False
    cycle.transport.write(b"%x\r\n%b\r\n" % (len(data), data))
    return True
