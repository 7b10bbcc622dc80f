"""Recording a websocket session (JSON-lines protocols) to ``<case>.jsonl`` + ``<case>.meta.json``.

The ``.jsonl`` file holds one line per message, in the order they crossed the connection,
exactly the corpus / ``recordings/`` format::

    {"dir":"client","msg":{"setup":{...}}}
    {"dir":"server","msg":{"setupComplete":{}}}

:class:`WebSocketRecording` wraps a ``websockets`` client connection: messages received (through
``recv``, ``async for`` or :meth:`WebSocketRecording.lines`) are recorded as ``server`` lines, messages
sent through its :meth:`~WebSocketRecording.send` as ``client`` lines. :meth:`~WebSocketRecording.lines`
yields the recorded lines themselves (both directions, as written), so feeding it to
``ms.aaggregate`` / ``astream`` / ``aconvert`` gives exactly what aggregating the file gives.

The meta file holds the connect URL and handshake headers (secrets redacted), each line's size
(``chunks``) and time offset (``times``), so ``areplay`` yields the lines with their timing.

Secrets: credential headers and query parameters of the handshake, and credential fields of
client messages (``api_key``, ``apiKey``, ``client_secret``...) are replaced by ``[REDACTED]``;
every redacted value, and every value passed in ``secrets``, is scrubbed from every line (also
server lines) before anything is written or handed on.

It must not contain protocol logic.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ._record import Recorder
from ._redact import redact_body as _redact_body
from ._redact import scrub as _scrub
from ._source import AsyncReader

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
    from types import TracebackType

    from ._record import RecordingMeta

__all__ = ["WebSocketRecording", "arecord_websocket", "handshake_info"]


def handshake_info(ws: Any) -> tuple[str | None, list[tuple[str, str]]]:
    """The connect URL and request headers of a ``websockets`` client connection, when it has them.

    ``websockets`` keeps the handshake request (path with query, ``Host`` header); the scheme is
    ``wss`` when the transport carries TLS.
    """
    request = getattr(ws, "request", None)
    if request is None or not hasattr(request, "path"):
        return None, []
    headers = request.headers
    items = list(headers.raw_items()) if hasattr(headers, "raw_items") else list(dict(headers).items())
    host = next((v for k, v in items if k.lower() == "host"), None)
    if host is None:
        return None, items
    transport = getattr(ws, "transport", None)
    secure = transport is not None and transport.get_extra_info("sslcontext") is not None
    return f"{'wss' if secure else 'ws'}://{host}{request.path}", items


def _as_text(msg: bytes | str) -> bytes:
    return msg.encode() if isinstance(msg, str) else bytes(msg)


class WebSocketRecording:
    """A websocket connection that records every message it carries (see the module docstring).

    Use it in place of the connection: ``await rec.send(...)``, ``await rec.recv()``,
    ``async for msg in rec`` (server messages, unchanged), or ``ms.aaggregate(rec.lines(), ...)``
    to decode the session as it is recorded. The files are written by :meth:`save`, called by
    :meth:`aclose` and when the ``async with`` block ends.

    Args:
        ws: A ``websockets`` client connection (anything with async ``send`` / ``recv`` and
            async iteration).
        path: The ``.jsonl`` file to write; the meta file goes beside it.
        protocol: Stored in the meta file.
        url: The connect URL (redacted); taken from the connection's handshake when ``None``.
        headers: The handshake request headers (redacted); taken from the connection when ``None``.
        secrets: More values to scrub from everything written.
        idle_timeout: Seconds allowed between two server messages in :meth:`lines`.
        clock: Seconds, monotonic (for tests).
    """

    def __init__(
        self,
        ws: Any,
        path: str | Path,
        *,
        protocol: str | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        secrets: tuple[str, ...] = (),
        idle_timeout: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.ws = ws
        self.path = Path(path)
        self._rec = Recorder(path, protocol=protocol, clock=clock)
        self._secrets = self._rec._secrets
        seen_url, seen_headers = handshake_info(ws)
        url = url if url is not None else seen_url
        if url is not None or headers is not None or seen_headers:
            self._rec.set_request("GET", url or "", headers if headers is not None else dict(seen_headers))
        for secret in secrets:
            self._rec.add_secret(secret)
        # The handshake's answer headers; no status (a websocket recording is not an HTTP answer).
        response = getattr(ws, "response", None)
        self._rec.start(None, dict(getattr(response, "headers", None) or {}))
        self._lines: list[bytes] = []
        self._pos = 0
        """How many lines :meth:`lines` handed on."""
        self._reader: AsyncReader | None = None
        self._idle_timeout = idle_timeout
        self._complete = False
        self._scrubbed = False

    # ------------------------------------------------------------------ recording

    def _add(self, direction: str, msg: bytes) -> bytes:
        wire = b'{"dir":"%s","msg":%s}\n' % (direction.encode(), msg)
        line = _scrub(wire, self._secrets)
        if line != wire and direction == "server":
            self._scrubbed = True
        self._lines.append(line)
        self._rec.feed(line)
        return line

    def _record_server(self, msg: bytes | str) -> None:
        raw = _as_text(msg)
        if b"\n" in raw or b"\r" in raw:  # keep one message per line
            raw = self._reencode(raw)
        else:
            try:
                msgspec.json.decode(raw)
            except msgspec.DecodeError:
                raw = msgspec.json.encode(raw.decode("utf-8", "replace"))
        self._add("server", raw)

    @staticmethod
    def _reencode(raw: bytes) -> bytes:
        try:
            return msgspec.json.encode(msgspec.json.decode(raw))
        except msgspec.DecodeError:
            return msgspec.json.encode(raw.decode("utf-8", "replace"))

    def _record_client(self, msg: bytes | str) -> None:
        raw = _as_text(msg)
        try:
            obj = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            self._add("client", msgspec.json.encode(raw.decode("utf-8", "replace")))
            return
        before = len(self._secrets)
        clean = _redact_body(obj, self._secrets)
        if len(self._secrets) != before or b"\n" in raw or b"\r" in raw:
            raw = msgspec.json.encode(clean)
        self._add("client", raw)

    # ------------------------------------------------------------------ the connection's face

    async def send(self, message: bytes | str) -> None:
        """Send a client message and record it (credential fields redacted in the record only).

        Raises:
            Exception: Whatever the connection's ``send`` raises (the message is not recorded).
        """
        await self.ws.send(message)
        self._record_client(message)

    async def recv(self) -> bytes | str:
        """Receive the next server message (recorded).

        Raises:
            Exception: Whatever the connection's ``recv`` raises (``ConnectionClosed``...).
        """
        msg: bytes | str = await self.ws.recv()
        self._record_server(msg)
        return msg

    def __aiter__(self) -> AsyncIterator[bytes | str]:
        return self._server_messages()

    async def _server_messages(self) -> AsyncGenerator[bytes | str, None]:
        async for msg in self.ws:
            self._record_server(msg)
            yield msg
        self._complete = True

    async def lines(self) -> AsyncGenerator[bytes, None]:
        """The recorded lines as bytes, both directions, in order, as they are written.

        Client lines sent since the last server message come first. Ends when the server
        closes the connection normally; feed it to ``ms.aaggregate`` / ``astream`` / ``aconvert``
        (a JSON-lines protocol) to use the session live while it is recorded.

        Raises:
            IdleTimeoutError: No server message for ``idle_timeout`` seconds.
            Exception: Whatever the connection raises on an abnormal close.
        """
        if self._reader is None:
            self._reader = AsyncReader(self.ws, idle_timeout=self._idle_timeout, close=False)
        while True:
            while self._pos < len(self._lines):
                self._pos += 1
                yield self._lines[self._pos - 1]
            msg = await self._reader.read()
            if msg is None:
                self._complete = True
                return
            self._record_server(msg)

    # ------------------------------------------------------------------ files

    @property
    def recorded(self) -> list[bytes]:
        """The lines recorded so far (secrets scrubbed)."""
        return list(self._lines)

    def save(self, *, complete: bool | None = None) -> RecordingMeta:
        """Write ``<case>.jsonl`` and ``<case>.meta.json`` (again if called again); return the meta.

        Args:
            complete: Whether the session ended normally; by default, whether the server closed
                the connection normally while it was read.
        """
        done = self._complete if complete is None else complete
        # A secret learned late (a client message's credential field) is scrubbed from earlier
        # lines too; each line is scrubbed on its own, so the sizes stay right.
        lines = [_scrub(line, self._secrets) for line in self._lines]
        meta = msgspec.structs.replace(
            self._rec.meta(complete=done, scrubbed=self._scrubbed or lines != self._lines),
            chunks=[len(line) for line in lines],
            transport="websocket",
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"".join(lines))
        text = msgspec.json.format(msgspec.json.encode(meta), indent=2) + b"\n"
        self.path.with_name(self.path.stem + ".meta.json").write_bytes(_scrub(text, self._secrets))
        return meta

    async def aclose(self) -> None:
        """Close the connection (if it has ``close``) and write the files."""
        try:
            close = getattr(self.ws, "close", None)
            if close is not None:
                result = close()
                if hasattr(result, "__await__"):
                    await result
        finally:
            self.save()

    async def __aenter__(self) -> WebSocketRecording:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.save()


def arecord_websocket(
    ws: Any,
    path: str | Path,
    *,
    protocol: str | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
    idle_timeout: float | None = None,
) -> WebSocketRecording:
    """Record a websocket session: wrap ``ws`` in a :class:`WebSocketRecording`.

    Usage::

        async with connect(url, additional_headers=auth) as ws:
            async with ms.io.arecord_websocket(ws, "recordings/google-live/case.jsonl",
                                               protocol="google-live") as rec:
                await rec.send(json.dumps({"setup": {...}}))
                await rec.send(json.dumps({"clientContent": {...}}))
                response = await ms.aaggregate(rec.lines(), protocol="google-live")

    Args:
        ws: A ``websockets`` client connection.
        path: The ``.jsonl`` file to write.
        protocol: Stored in the meta file.
        url: The connect URL; read from the connection's handshake when ``None``.
        headers: The handshake headers; read from the connection when ``None``.
        secrets: More values to scrub (an API key sent some other way).
        idle_timeout: Seconds allowed between two server messages in ``lines()``.
    """
    return WebSocketRecording(
        ws, path, protocol=protocol, url=url, headers=headers, secrets=secrets, idle_timeout=idle_timeout
    )
