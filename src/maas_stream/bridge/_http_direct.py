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

:func:`start_with_piece` sends the response start through ASGI (the record's status, uvicorn's
headers and framing) with uvicorn's write of it held back, and writes it with the first piece
in one ``transport.write``: one socket write less per answer, the same bytes on the wire.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["chunked_cycle", "server_cycle", "start_with_piece", "write_chunk"]


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


def server_cycle(send: Any) -> Any:
    """The uvicorn cycle whose own ``send`` is ``send`` (started or not), else ``None``."""
    cycle: Any = getattr(send, "__self__", None)
    if type(cycle) not in _CHUNKED or getattr(send, "__func__", None) is not type(cycle).send:
        return None
    return cycle


def chunked_cycle(send: Any) -> Any:
    """The uvicorn cycle behind ``send`` if its started response is chunked, else ``None``.

    ``send`` must be the cycle's own ``send`` (a wrapped one keeps its wrapper's rules), the
    response started (uvicorn chose its framing) and not for a HEAD request.
    """
    cycle = server_cycle(send)
    return cycle if cycle is not None and _started_chunked(cycle) else None


def _started_chunked(cycle: Any) -> bool:
    try:
        if not cycle.response_started or cycle.scope["method"] == "HEAD" or not _CHUNKED[type(cycle)](cycle):
            return False
        # What :func:`write_chunk` reads (a uvicorn that renamed them is served through ASGI).
        _ = (cycle.response_complete, cycle.disconnected, cycle.flow.write_paused, cycle.transport.write)
    except (AttributeError, KeyError):
        return False
    return True


class _Held:
    """A transport stand-in keeping what uvicorn writes (a response start's bytes)."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


async def start_with_piece(cycle: Any, start: Callable[[], Awaitable[None]], data: bytes) -> bool:
    """Send the response start (``start()``, through ASGI) and ``data`` as its first chunk in one write.

    ``cycle`` is :func:`server_cycle`'s, its response not started. The start's write is held
    only while uvicorn would write it at once (not paused, the client not gone: ``start`` then
    runs to its end without waiting, and nothing else sees the stand-in), and ``data`` joins it
    only if the response is one :func:`write_chunk` would write to (else the start is written
    alone). ``False``: ``data`` not written, for the ASGI path.
    """
    try:
        transport = cycle.transport
        held = not (cycle.response_started or cycle.disconnected or cycle.flow.write_paused)
    except AttributeError:
        held = False
    if not held:
        await start()
        return False
    holder = _Held()
    cycle.transport = holder
    try:
        await start()  # (uvicorn writes the start last: nothing held when it raises)
    finally:
        cycle.transport = transport
    head = holder.data
    if not _started_chunked(cycle) or cycle.response_complete or cycle.disconnected:
        if head:
            transport.write(head)
        return False
    transport.write(b"%b%x\r\n%b\r\n" % (head, len(data), data))
    return True


def write_chunk(cycle: Any, data: bytes) -> bool:
    """Write ``data`` (not empty, more to come) as one chunk, if uvicorn would write it at once.

    ``False``: nothing written, for the ASGI path (complete, the client gone, writing paused).
    """
    if cycle.response_complete or cycle.disconnected or cycle.flow.write_paused:
        return False
    cycle.transport.write(b"%x\r\n%b\r\n" % (len(data), data))
    return True
