"""The bridge's websocket plumbing: the client's ASGI websocket, the upstream's ``websockets`` connection.

:class:`ClientSocket` is the client's side of a session over the ASGI ``websocket`` protocol
(accept, refuse with an HTTP answer before accepting, receive, send, close); :class:`WebSocketUpstream`
is a provider's websocket endpoint (its URL, the operator's key, a model rename, limits), opened
per session with the ``websockets`` library. :func:`sendable` maps a close code received on one
side to one that may be sent on the other. ``_realtime`` decides what crosses; this module only
moves messages and checks sizes.

It must not contain protocol logic: URLs and credential headers come from the protocols' specs.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import msgspec

from .._exceptions import LocalProtocolError
from .._registry import get_protocol
from ._request import Rejected
from ._upstream import Timeouts, auth_headers

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from ._asgi import Receive, Scope, Send

__all__ = [
    "CLOSE_REASON_BYTES",
    "ClientGone",
    "ClientSocket",
    "MessageTooBig",
    "WebSocketUpstream",
    "clip_reason",
    "sendable",
]

CLOSE_REASON_BYTES: Final = 123
"""The longest close reason a websocket close frame carries (RFC 6455 §5.5: 125 bytes of payload)."""

_RESERVED: Final = frozenset({1004, 1005, 1006, 1015})
"""Close codes that are reported but never sent (RFC 6455 §7.4.1)."""


def sendable(code: int | None, *, abnormal: int = 1011) -> int:
    """A close code received on one side, as one that may be sent on the other.

    ``None``, 1005 (no code) and 1004 become 1000; 1006 (the connection dropped without a close
    frame) and 1015 (TLS failure) become ``abnormal`` (1011: the server failed); codes outside
    1000-1014 and 3000-4999 become ``abnormal`` too.
    """
    if code is None or code in (1004, 1005):
        return 1000
    if code in _RESERVED or not (1000 <= code <= 1014 or 3000 <= code <= 4999):
        return abnormal
    return code


def clip_reason(reason: str) -> str:
    """``reason`` cut to what a close frame carries (UTF-8, whole characters)."""
    data = reason.encode()
    if len(data) <= CLOSE_REASON_BYTES:
        return reason
    return data[: CLOSE_REASON_BYTES - 3].decode("utf-8", "ignore") + "..."


class ClientGone(Exception):
    """The client closed the websocket (or went away): ``code`` and ``reason`` as it sent them."""

    def __init__(self, code: int | None, reason: str = "") -> None:
        super().__init__(f"client closed the session ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


class ClientSocket:
    """The client's websocket over ASGI (``scope["type"] == "websocket"``).

    Args:
        scope: The ASGI scope.
        receive: The ASGI receive callable.
        send: The ASGI send callable.
        max_message: The largest message accepted from the client, in bytes.
    """

    def __init__(self, scope: Scope, receive: Receive, send: Send, *, max_message: int) -> None:
        self.scope = scope
        self._receive = receive
        self._send = send
        self.max_message = max_message
        self.accepted = False
        self.closed = False
        self.close_code: int | None = None
        """The code the bridge closed the client with (``None`` while open)."""
        self.received = 0
        """Messages received from the client."""
        self.sent = 0
        """Messages sent to the client."""
        self.status = 0
        """The HTTP status of a refusal before accepting (0: none)."""

    async def wait_connect(self) -> bool:
        """Wait for the client's ``websocket.connect``; ``False`` when it went away first."""
        message = await self._receive()
        return bool(message["type"] == "websocket.connect")

    async def accept(self, subprotocol: str | None = None) -> None:
        """Accept the connection (with ``subprotocol`` when the client offered it)."""
        message: dict[str, Any] = {"type": "websocket.accept"}
        if subprotocol is not None:
            message["subprotocol"] = subprotocol
        await self._send(message)
        self.accepted = True

    async def refuse(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        """Refuse the handshake with an HTTP answer (JSON ``body``), before accepting.

        Without the ASGI server's ``websocket.http.response`` extension, a close before accepting
        (the server answers 403).
        """
        self.status = status
        self.closed = True
        if "websocket.http.response" not in self.scope.get("extensions", {}):
            await self._send({"type": "websocket.close", "code": 1008, "reason": ""})
            self.status = 403
            return
        data = msgspec.json.encode(body)
        raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
        await self._send({"type": "websocket.http.response.start", "status": status, "headers": raw})
        await self._send({"type": "websocket.http.response.body", "body": data, "more_body": False})

    async def receive(self) -> str | bytes:
        """The client's next message.

        Raises:
            ClientGone: The client closed the connection or went away.
            MessageTooBig: The message is larger than :attr:`max_message`.
        """
        message = await self._receive()
        kind = message["type"]
        if kind == "websocket.disconnect":
            self.closed = True
            raise ClientGone(message.get("code"), message.get("reason") or "")
        assert kind == "websocket.receive", kind  # the ASGI server's contract
        text = message.get("text")
        data: str | bytes = text if text is not None else message.get("bytes") or b""
        size = len(data.encode()) if isinstance(data, str) else len(data)
        if size > self.max_message:
            raise MessageTooBig(size, self.max_message)
        self.received += 1
        return data

    async def send(self, data: str | bytes) -> None:
        """Send one message to the client (a no-op once closed).

        Raises:
            ClientGone: The client went away.
        """
        if self.closed:
            return
        message = {"type": "websocket.send", "text" if isinstance(data, str) else "bytes": data}
        try:
            await self._send(message)
        except OSError:  # the ASGI server's "client disconnected"
            self.closed = True
            raise ClientGone(None, "the client went away") from None
        self.sent += 1

    async def close(self, code: int, reason: str = "") -> None:
        """Close the connection (once; later calls do nothing)."""
        if self.closed:
            return
        self.closed = True
        self.close_code = code
        try:
            await self._send({"type": "websocket.close", "code": code, "reason": clip_reason(reason)})
        except OSError:  # the client is gone already: nothing to tell it
            pass


class MessageTooBig(Exception):
    """A client message larger than the session's limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"a client message of {size} bytes is larger than the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class WebSocketUpstream:
    """A provider's websocket endpoint: one connection per client session.

    Args:
        protocol: The provider's session protocol (``openai-realtime``, ``google-live``).
        url: The websocket URL (``{model}`` is replaced by the session's model); the provider's
            own (the spec's ``session.url``) when ``None``.
        api_key: The API key; read from the protocol's environment variable when ``None``.
        model: Use this model instead of the one the client named.
        headers: More handshake headers.
        timeouts: ``connect`` limits opening the connection (the handshake included).

    Raises:
        LocalProtocolError: ``protocol`` is unknown or is not a session protocol.
    """

    def __init__(
        self,
        protocol: str,
        url: str | None = None,
        *,
        api_key: str | None = None,
        model: str | None = None,
        headers: dict[str, str] | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        spec = get_protocol(protocol)
        if spec.session is None:
            raise LocalProtocolError(f"{protocol} is not a session (websocket) protocol")
        if api_key is None and spec.auth is not None:
            api_key = os.environ.get(spec.auth.env)
        self._protocol = protocol
        self.url = url or spec.session.url
        self.model = model
        self.timeouts = timeouts or Timeouts()
        self._headers = {**auth_headers(protocol, api_key), **(headers or {})}

    @property
    def protocol(self) -> str:
        """The provider's protocol."""
        return self._protocol

    @contextlib.asynccontextmanager
    async def open(self, body: dict[str, Any], *, model: str | None) -> AsyncIterator[Any]:
        """Refuse an HTTP request: this upstream serves websocket sessions only.

        Raises:
            Rejected: Always (400, naming the websocket endpoints).
        """
        raise Rejected(
            400,
            f"the model's upstream speaks {self._protocol}, a websocket session protocol: "
            "connect a realtime client to the bridge's websocket endpoint instead",
        )
        yield  # pragma: no cover - an async generator needs a yield

    def connect(
        self,
        model: str | None,
        *,
        headers: Mapping[str, str] | None = None,
        subprotocols: list[str] | None = None,
        max_message: int | None = None,
    ) -> Any:
        """Open the upstream connection (``async with``; a ``websockets`` client connection).

        Args:
            model: The session's model (the route's rename wins).
            headers: More handshake headers for this session (forwarded from the client).
            subprotocols: Subprotocols to offer.
            max_message: The largest message accepted from the upstream, in bytes.
        """
        from websockets.asyncio.client import connect

        name = quote(self.model or model or "", safe=":@+")
        return connect(
            self.url.replace("{model}", name),
            additional_headers={**(headers or {}), **self._headers},
            subprotocols=subprotocols or None,  # type: ignore[arg-type]
            max_size=max_message,
            open_timeout=self.timeouts.connect,
            compression=None,
            user_agent_header=None,
        )

    async def aclose(self) -> None:
        """Nothing pooled to release (one connection per session, closed with it)."""
