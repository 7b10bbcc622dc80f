"""A realtime session's edges on the wire: the handshake's credential, the model field, the ends.

What the relay (``_realtime``) reads and writes on the two websockets besides the translated
messages: the bridge key a browser sends as a subprotocol, moved into the protocol's credential
header (:func:`presented`); the model named in a first message, read and renamed for the route
(:func:`field_at`, :func:`with_field`); how a session ends (:class:`End`): an upstream close
read from ``websockets`` (:func:`upstream_end`), a refusal once the websocket is open as a close
code (:func:`close_code`), a failure as the client protocol's in-band error event(s)
(:func:`error_messages`), the upstream closed quietly (:func:`close_upstream`).

It must not contain protocol logic (paths, credentials, model fields and error events come from
the protocols' specs and encoders), nor relay, route or count anything (``_realtime`` does).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._registry import get_protocol
from ..events import StreamErrorEvent
from ._ws import clip_reason

if TYPE_CHECKING:
    from collections.abc import Mapping

    from websockets.exceptions import ConnectionClosed, InvalidStatus

    from .._model import StreamError
    from .._registry import ProtocolSpec
    from ._asgi import Scope

__all__ = [
    "ERROR_CLOSE",
    "End",
    "close_code",
    "close_upstream",
    "closed_error",
    "error_messages",
    "field_at",
    "is_connect_error",
    "presented",
    "refused_error",
    "upstream_end",
    "with_field",
]

log = logging.getLogger("maas_stream")


@dataclass
class End:
    """How a session ended (the first end seen wins)."""

    by: str
    """``client``, ``upstream``, ``idle``, ``too_big``, ``translator``."""
    code: int | None = None
    reason: str = ""
    failed: bool = False
    """The end is a failure the client must be told of (an error event, an error close code)."""


ERROR_CLOSE: Final = {401: 1008, 403: 1008, 404: 1008, 413: 1009, 429: 1013, 503: 1013}
"""HTTP statuses of a refusal once the websocket is open, as close codes (others: 4xx 1008, 5xx 1011)."""


def close_code(status: int) -> int:
    """The close code of a refusal with HTTP ``status`` once the websocket is open."""
    return ERROR_CLOSE.get(status, 1008 if status < 500 else 1011)


def presented(spec: ProtocolSpec, headers: Mapping[str, str], scope: Scope) -> dict[str, str]:
    """The handshake headers, with a key sent as a subprotocol moved into the credential header."""
    session, auth = spec.session, spec.auth
    out = dict(headers)
    if session is None or session.key_subprotocol is None or auth is None or auth.header in out:
        return out
    for offered in scope.get("subprotocols") or ():
        if offered.startswith(session.key_subprotocol):
            out[auth.header] = auth.format.format(offered[len(session.key_subprotocol) :])
    return out


def field_at(message: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in a decoded message (``None`` where the path does not lead)."""
    for name in path:
        if not isinstance(message, dict):
            return None
        message = message.get(name)
    return message


def with_field(message: str | bytes, path: tuple[str, ...], value: str) -> str | bytes:
    """``message`` (JSON) with ``value`` at ``path`` (only where the path already leads)."""
    try:
        obj = msgspec.json.decode(message)
    except msgspec.DecodeError:
        return message
    node = obj
    for name in path[:-1]:
        node = node.get(name) if isinstance(node, dict) else None
    if not isinstance(node, dict) or path[-1] not in node:
        return message
    node[path[-1]] = value
    out = msgspec.json.encode(obj)
    return out.decode() if isinstance(message, str) else out


def error_messages(protocol: str, error: StreamError) -> list[str]:
    """The client protocol's in-band error event(s) for ``error`` (none when it has no such event)."""
    encoder = get_protocol(protocol).encoder()
    out: list[str] = []
    for line in encoder.encode(StreamErrorEvent(error=error)).splitlines():
        frame = msgspec.json.decode(line)
        if isinstance(frame, dict) and frame.get("dir") == "server" and "msg" in frame:
            out.append(msgspec.json.encode(frame["msg"]).decode())
    return out


# ``websockets``' errors the relay catches, imported in these short frames: an import in a frame
# that lives as long as the session (a relay side, the upstream's connect) costs each open
# session ~0.3 KiB more (tracemalloc, 300 idle sessions).


def closed_error() -> type[ConnectionClosed]:
    """``websockets``' ``ConnectionClosed`` (the upstream's end, :func:`upstream_end`)."""
    from websockets.exceptions import ConnectionClosed

    return ConnectionClosed


def refused_error() -> type[InvalidStatus]:
    """``websockets``' ``InvalidStatus`` (the upstream refused the handshake)."""
    from websockets.exceptions import InvalidStatus

    return InvalidStatus


def upstream_end(exc: Any) -> End:
    """How the upstream ended, from ``websockets``' ``ConnectionClosed``."""
    rcvd = exc.rcvd
    if rcvd is None:  # no close frame: the connection dropped (a cut)
        return End("upstream", 1006, "the upstream connection was lost", failed=True)
    code, reason = rcvd.code, rcvd.reason
    failed = code not in (1000, 1001)
    if failed and not reason:
        reason = f"the upstream closed the session with code {code}"
    return End("upstream", code, reason, failed=failed)


async def close_upstream(conn: Any, code: int, reason: str) -> None:
    """Close the upstream connection (none for an HTTP upstream); a broken one is only logged."""
    if conn is None:  # an HTTP upstream: nothing open between turns
        return
    try:
        await conn.close(code, clip_reason(reason))
    except Exception as exc:  # closing a connection already broken: nothing left to tell
        log.debug("bridge: closing the upstream session: %s", type(exc).__name__)


def is_connect_error(exc: Exception) -> bool:
    """Whether ``exc`` is a failure to reach the upstream (no connection, a bad handshake or URL)."""
    from websockets.exceptions import InvalidHandshake, InvalidURI

    return isinstance(exc, OSError | InvalidHandshake | InvalidURI | EOFError)
