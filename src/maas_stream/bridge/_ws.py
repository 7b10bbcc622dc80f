"""The bridge's websocket plumbing: the client's ASGI websocket, the upstream's ``websockets`` connection.

:class:`ClientSocket` is the client's side of a session over the ASGI ``websocket`` protocol
(accept, refuse with an HTTP answer before accepting, receive, send, close); :class:`WebSocketUpstream`
is a provider's websocket endpoint (its URL, the operator's key, a model rename, limits), opened
per session with the bridge's own client (``_ws_client``: ``websockets``' sans-I/O protocol). :func:`sendable` maps a close code received on one
side to one that may be sent on the other. ``_realtime`` decides what crosses; this module only
moves messages and checks sizes. :class:`SessionRecordingUpstream` replays a recorded session
as the upstream (offline demos and tests).

It must not contain protocol logic: URLs and credential headers come from the protocols' specs.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlsplit

import anyio
import msgspec

from .._exceptions import LocalProtocolError
from .._registry import detect_protocol, get_protocol
from ._request import Rejected
from ._upstream import Timeouts, auth_headers

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Mapping
    from pathlib import Path

    from ..io import Recording
    from ._asgi import Receive, Scope, Send

__all__ = [
    "CLOSE_REASON_BYTES",
    "ClientGone",
    "ClientSocket",
    "MessageTooBig",
    "SessionRecordingUpstream",
    "WebSocketUpstream",
    "clip_reason",
    "sendable",
]

CLOSE_REASON_BYTES: Final = 123
"""The longest close reason a websocket close frame carries (RFC 6455 §5.5: 125 bytes of payload)."""

_RESERVED: Final = frozenset({1004, 1005, 1006, 1015})
_UNREAD: Final[Any] = object()
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

    __slots__ = (
        "_direct", "_receive", "_send", "accepted", "close_code", "closed", "max_message", "received",
        "scope", "sent", "status",
    )  # fmt: skip

    def __init__(self, scope: Scope, receive: Receive, send: Send, *, max_message: int) -> None:
        self.scope = scope
        self._receive = receive
        self._send = send
        self._direct: Any = _direct_protocol(receive, send)
        """The bridge's websocket protocol, when uvicorn hands over its own ``receive`` and ``send``
        (``_ws_lean``: messages are taken and sent without ASGI dicts); ``None``: plain ASGI."""
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
        if self._direct is None:
            return self._event(await self._receive())
        while (message := self.take()) is None:
            await self._direct.arrived()
        return message

    @property
    def direct(self) -> bool:
        """Whether :meth:`take` and :meth:`arrival` can be used (the protocol's direct path)."""
        return self._direct is not None

    def take(self) -> str | bytes | None:
        """The client's next message already read, or ``None``: await :meth:`arrival`, then take again.

        The direct path's :meth:`receive` without a coroutine (:attr:`direct` only).

        Raises:
            ClientGone: The client closed the connection or went away.
            MessageTooBig: The message is larger than :attr:`max_message`.
        """
        message = self._direct.take()
        if message is None:
            return None
        if isinstance(message, dict):  # (the protocol queues its disconnects as ASGI events)
            return self._event(message)
        return self._took(message)

    def arrival(self) -> Awaitable[None]:
        """Done when a client message may be taken (:attr:`direct` only)."""
        return self._direct.arrival()  # type: ignore[no-any-return]

    def _event(self, message: Any) -> str | bytes:
        """An ASGI ``websocket.receive`` event's message (a disconnect raises :class:`ClientGone`)."""
        kind = message["type"]
        if kind == "websocket.disconnect":
            self.closed = True
            raise ClientGone(message.get("code"), message.get("reason") or "")
        assert kind == "websocket.receive", kind  # the ASGI server's contract
        text: str | None = message.get("text")
        return self._took(text if text is not None else message.get("bytes") or b"")

    def _took(self, message: str | bytes) -> str | bytes:
        """``message``, counted, once its size is checked."""
        if isinstance(message, str):
            # UTF-8 takes at most 4 bytes a character: only a long text is encoded to be measured.
            if len(message) * 4 > self.max_message and (size := len(message.encode())) > self.max_message:
                raise MessageTooBig(size, self.max_message)
        elif len(message) > self.max_message:
            raise MessageTooBig(len(message), self.max_message)
        self.received += 1
        return message

    async def send(self, data: str | bytes) -> None:
        """Send one message to the client (a no-op once closed).

        Raises:
            ClientGone: The client went away.
        """
        if self.closed or self.send_now(data):
            return
        try:
            await self._send({"type": "websocket.send", "text" if isinstance(data, str) else "bytes": data})
        except OSError:  # the ASGI server's "client disconnected"
            self.closed = True
            raise ClientGone(None, "the client went away") from None
        self.sent += 1

    def send_now(self, data: str | bytes) -> bool:
        """Send one message at once where the direct path can; ``False``: :meth:`send` it (it may wait).

        Raises:
            ClientGone: The client went away.
        """
        direct = self._direct
        if direct is None or self.closed:
            return False
        try:
            if not direct.send_data(data):
                return False
        except OSError:  # uvicorn's "client disconnected"
            self.closed = True
            raise ClientGone(None, "the client went away") from None
        self.sent += 1
        return True

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


def _direct_protocol(receive: Receive, send: Send) -> Any:
    """The bridge's websocket protocol behind ``receive`` and ``send``, switched to its direct path; or ``None``.

    Only when both are that protocol's own methods (``_ws_lean``; nothing wraps them): the
    session is then the only reader of its queue.
    """
    owner = getattr(receive, "__self__", None)
    go_direct = getattr(owner, "go_direct", None)
    if go_direct is None or getattr(send, "__self__", None) is not owner:
        return None
    go_direct()
    return owner


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
        self._proxies: dict[tuple[str, str], Any] = {}
        """The proxy of each scheme and host connected to, as ``websockets`` finds it in the environment."""

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
        """Open the upstream connection (``async with``): the bridge's own client (``_ws_client``).

        ``websockets``' own ``connect()`` where that client does not go: a proxy from the
        environment, credentials in the URL.

        Args:
            model: The session's model (the route's rename wins).
            headers: More handshake headers for this session (forwarded from the client).
            subprotocols: Subprotocols to offer.
            max_message: The largest message accepted from the upstream, in bytes.

        Raises:
            InvalidURI: The URL is not a websocket URL.
        """
        from websockets.uri import parse_uri

        name = quote(self.model or model or "", safe=":@+")
        url = self.url.replace("{model}", name)
        uri = parse_uri(url)
        headers = {**(headers or {}), **self._headers}
        proxy = self._proxy(url)
        if proxy.get("proxy") is None and uri.user_info is None:
            from ._ws_client import Opening

            return _Connecting(
                Opening(
                    uri,
                    headers=headers,
                    subprotocols=subprotocols,
                    max_size=max_message,
                    open_timeout=self.timeouts.connect,
                )
            )
        from websockets.asyncio.client import connect

        opening = connect(
            url,
            additional_headers=headers,
            subprotocols=subprotocols or None,  # type: ignore[arg-type]
            max_size=max_message,
            open_timeout=self.timeouts.connect,
            compression=None,
            user_agent_header=None,
            **proxy,
        )
        return _Connecting(opening)

    def _proxy(self, url: str) -> dict[str, Any]:
        """``connect``'s proxy argument for ``url``: the environment's proxy, read once per scheme and host.

        ``websockets`` (15 and later) reads the proxy settings (``*_proxy``, ``no_proxy``) from the
        environment on every connect when told nothing: found once here and passed on (``None``
        when there is none), the upstream goes through the same proxy, or none, as it would
        unaided; settings changed after the first session to a host are not seen (as the HTTP
        upstreams' clients, which read them once). Older versions connect without a proxy.
        """
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        found = self._proxies.get(key, _UNREAD)
        if found is _UNREAD:
            try:
                from websockets.exceptions import InvalidURI
                from websockets.proxy import get_proxy
                from websockets.uri import parse_uri
            except ImportError:  # websockets < 15: no proxy support
                found = None
            else:
                try:
                    found = {"proxy": get_proxy(parse_uri(url))}
                except InvalidURI:
                    found = None  # websockets' own connect says what is wrong with the URL
            self._proxies[key] = found
        return found or {}

    async def aclose(self) -> None:
        """Nothing pooled to release (one connection per session, closed with it)."""


class _Connecting:
    """``async with``: an upstream connection, which keeps nothing of its ``connect()`` arguments once open.

    ``opening`` is awaited once (``websockets``' ``connect()`` or ``_ws_client.open_upstream``);
    the connection it gives is closed by its own ``__aexit__``. ``websockets``' own ``connect`` context keeps them (the URL, the headers, the handshake
    options: about 1.4 KiB) until it exits, at the session's end.
    """

    __slots__ = ("conn", "opening")

    def __init__(self, opening: Any) -> None:
        self.opening = opening
        """The ``websockets`` ``connect()``, until the connection is open."""
        self.conn: Any = None

    async def __aenter__(self) -> Any:
        opening, self.opening = self.opening, None
        self.conn = await opening  # opens the connection (what its __aenter__ does)
        return self.conn

    async def __aexit__(self, *exc: object) -> None:
        conn, self.conn = self.conn, None
        await conn.__aexit__(*exc)  # closes it (what its context's __aexit__ does)


class SessionRecordingUpstream:
    """Replay a session recording (``{"dir", "msg"}`` JSON lines) as the upstream of every session.

    The server messages are sent in order; where the recording has client messages, the replay
    waits for as many messages from the client (whatever they say) before going on. At the end
    of the recording the upstream closes normally (1000).

    Args:
        path: The ``.jsonl`` recording (or a loaded one: a route's
            :class:`~maas_stream.bridge.RecordingUpstream` serves sessions through this).
        protocol: Its protocol; detected from its first lines when ``None``.

    Raises:
        OSError: The recording cannot be read.
        ProtocolDetectionError: Its protocol cannot be told.
        LocalProtocolError: It is not a session protocol's recording.
    """

    model: str | None = None
    """Never renamed: the recording answers whatever model was asked."""

    def __init__(self, path: str | Path | Recording, *, protocol: str | None = None) -> None:
        from ..io import Recording

        self.recording = path if isinstance(path, Recording) else Recording.load(path)
        meta = self.recording.meta
        name = protocol or (meta.protocol if meta is not None else None)
        if name is None:
            name = detect_protocol(self.recording.data, final=True)
            assert name is not None
        if get_protocol(name).session is None:
            raise LocalProtocolError(f"{self.recording.path}: a {name} recording is not a websocket session")
        self._protocol = name
        self.timeouts = Timeouts()
        self.lines: list[tuple[str, bytes]] = []
        for line in self.recording.data.splitlines():
            if line.strip():
                frame = msgspec.json.decode(line)
                self.lines.append((str(frame.get("dir")), msgspec.json.encode(frame.get("msg"))))

    @property
    def protocol(self) -> str:
        """The recording's protocol."""
        return self._protocol

    open = WebSocketUpstream.open

    @contextlib.asynccontextmanager
    async def connect(self, model: str | None, **_: Any) -> AsyncIterator[_Replay]:
        """A replayed connection (the handshake options are ignored)."""
        yield _Replay(self.lines)

    async def aclose(self) -> None:
        """Nothing to release."""


class _Replay:
    """A connection replaying recorded lines, with the ``websockets`` connection's face."""

    subprotocol = None

    def __init__(self, lines: list[tuple[str, bytes]]) -> None:
        self._lines = lines
        self._pos = 0
        self._sent = anyio.Event()
        self._closed: tuple[int, str] | None = None
        self.received: list[str | bytes] = []
        """The client messages sent to the replay."""

    async def send(self, message: str | bytes) -> None:
        self.received.append(message)
        if self._pos < len(self._lines) and self._lines[self._pos][0] == "client":
            self._pos += 1
        self._sent.set()

    async def recv(self) -> str:
        from websockets.exceptions import ConnectionClosedOK
        from websockets.frames import Close

        while True:
            if self._closed is not None or self._pos >= len(self._lines):
                code, reason = self._closed or (1000, "")
                raise ConnectionClosedOK(Close(code, reason), Close(code, reason), True)
            direction, message = self._lines[self._pos]
            if direction != "client":
                self._pos += 1
                return message.decode()
            self._sent = anyio.Event()
            await self._sent.wait()  # the recording waits for the client here

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self._closed = (code, reason)
        self._sent.set()
