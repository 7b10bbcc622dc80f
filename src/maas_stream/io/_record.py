"""Recording a live stream to ``recordings/<protocol>/<case>.sse`` + ``<case>.meta.json``, and replaying it.

The ``.sse`` file holds the response bytes exactly as the transport delivered them (after
content-encoding is undone), so it replays byte for byte. The ``.meta.json`` beside it holds the
request with secrets redacted, the status, the response headers, and each chunk's size and
arrival time (seconds after the response headers), so a replay can keep the original chunk
boundaries and, optionally, the timing.

Secrets never reach a file: the request is redacted as it is remembered and every redacted value
is scrubbed from what is written (the rules live in ``_redact``; ``redact_headers`` and
``redact_url`` stay importable from here).

It must not contain protocol logic.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .._exceptions import ProtocolDetectionError
from .._registry import detect_protocol
from ._exceptions import ProviderHTTPError, StreamIOError
from ._kinds import SyncReader
from ._redact import REDACTED as REDACTED
from ._redact import redact_body, scrub
from ._redact import redact_headers as redact_headers
from ._redact import redact_url as redact_url
from ._source import AsyncReader

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Generator, Mapping

__all__ = [
    "REDACTED",
    "RecordedRequest",
    "Recorder",
    "Recording",
    "RecordingMeta",
    "areplay",
    "arecord",
    "check_recorded_protocol",
    "meta_path",
    "record_request",
    "redact_headers",
    "redact_url",
    "replay",
]

_HOP_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "content-encoding", "connection", "keep-alive"}
)


class RecordedRequest(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The request that produced a recording, secrets redacted."""

    method: str
    url: str
    """With credential query parameters redacted."""
    headers: dict[str, str] = {}
    """Lower-case names; credential values redacted."""
    body: Any = None
    """The JSON body (parsed), or its text."""


class RecordingMeta(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The contents of ``<case>.meta.json``."""

    format: int = 1
    protocol: str | None = None
    request: RecordedRequest | None = None
    status: int | None = None
    headers: dict[str, str] = {}
    """Response headers (lower-case names; ``set-cookie`` redacted)."""
    chunks: list[int] = []
    """The size of each chunk as it arrived; they add up to the ``.sse`` file's size."""
    times: list[float] = []
    """Each chunk's arrival time in seconds after the response headers."""
    complete: bool = True
    """False when the recording stopped before the provider ended the stream."""
    recorded_at: str | None = None
    transport: str | None = None
    """``"websocket"`` for a websocket session (``chunks`` / ``times`` then describe its lines);
    left out for HTTP."""
    scrubbed: bool = False
    """True when a redacted secret also appeared in the response bytes and was scrubbed there
    (the ``.sse`` file then differs from the wire at those bytes)."""


def meta_path(path: str | Path) -> Path:
    """``case.sse`` → ``case.meta.json`` (same folder)."""
    p = Path(path)
    return p.with_name(p.stem + ".meta.json")


class Recorder:
    """Collect a stream's chunks with their arrival times and write the recording files.

    Usage::

        rec = Recorder("recordings/openai-chat/case.sse", protocol="openai-chat")
        rec.set_request("POST", url, headers, body)
        rec.start(status, response_headers)      # the clock starts here
        for chunk in chunks:
            rec.feed(chunk)
        rec.save()

    Args:
        path: Where the ``.sse`` (or ``.jsonl``) file goes; the meta file goes beside it.
        protocol: The protocol, stored in the meta file.
        clock: Seconds, monotonic (for tests).
    """

    def __init__(
        self, path: str | Path, *, protocol: str | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.path = Path(path)
        self.protocol = protocol
        self._clock = clock
        self._t0 = clock()
        self._chunks: list[bytes] = []
        self._times: list[float] = []
        self._secrets: set[str] = set()
        self._request: RecordedRequest | None = None
        self._status: int | None = None
        self._headers: dict[str, str] = {}

    def set_request(
        self, method: str, url: str, headers: Mapping[str, str] | Any = (), body: Any = None
    ) -> None:
        """Remember the request (redacted right away; secrets are kept only to scrub them)."""
        secrets = self._secrets
        hdrs = redact_headers(dict(headers) if not hasattr(headers, "items") else headers, secrets=secrets)
        if isinstance(body, bytes | bytearray):
            try:
                body = msgspec.json.decode(body)
            except msgspec.DecodeError:
                body = bytes(body).decode("utf-8", "replace")
        self._request = RecordedRequest(
            method=method.upper(),
            url=redact_url(str(url), secrets=secrets),
            headers=hdrs,
            body=redact_body(body, secrets),
        )

    def add_secret(self, value: str) -> None:
        """Scrub ``value`` from everything written (an API key that went out some other way)."""
        self._secrets.add(value)

    def start(self, status: int | None, headers: Mapping[str, str] | Any = ()) -> None:
        """The response headers arrived: record them and start the clock."""
        self._status = status
        self._headers = redact_headers(headers, secrets=self._secrets, request=False)
        self._t0 = self._clock()

    def feed(self, chunk: bytes) -> None:
        """Record one chunk as it arrived."""
        if chunk:
            self._chunks.append(bytes(chunk))
            self._times.append(round(self._clock() - self._t0, 6))

    def meta(self, *, complete: bool = True, scrubbed: bool = False) -> RecordingMeta:
        """The meta data so far."""
        return RecordingMeta(
            protocol=self.protocol,
            request=self._request,
            status=self._status,
            headers=self._headers,
            chunks=[len(c) for c in self._chunks],
            times=list(self._times),
            complete=complete,
            recorded_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            scrubbed=scrubbed,
        )

    def save(self, *, complete: bool = True) -> RecordingMeta:
        """Write ``<case>.sse`` and ``<case>.meta.json`` (folders are created); return the meta."""
        data = b"".join(self._chunks)
        clean = scrub(data, self._secrets)
        meta = self.meta(complete=complete, scrubbed=clean != data)
        if clean != data:
            # Sizes stay right only if the scrub kept lengths; otherwise fall back to one chunk.
            meta = msgspec.structs.replace(meta, chunks=[len(clean)], times=meta.times[-1:] or [0.0])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(clean)
        text = msgspec.json.format(msgspec.json.encode(meta), indent=2) + b"\n"
        meta_path(self.path).write_bytes(scrub(text, self._secrets))
        return meta


def _request_info(response: Any) -> tuple[str, str, Any, Any] | None:
    try:
        request = response.request
    except (RuntimeError, AttributeError):
        return None
    try:
        body = request.content
    except Exception:  # a streamed request body was not kept
        body = None
    return request.method, str(request.url), request.headers, body


async def _arecord_websocket(
    ws: Any, path: str | Path, protocol: str | None, idle_timeout: float | None, secrets: tuple[str, ...]
) -> AsyncGenerator[bytes, None]:
    from ._wsrecord import WebSocketRecording  # it builds on this module

    rec = WebSocketRecording(ws, path, protocol=protocol, secrets=secrets, idle_timeout=idle_timeout)
    try:
        async for line in rec.lines():
            yield line
    finally:
        with anyio.CancelScope(shield=True):
            await rec.aclose()


async def arecord(
    source: Any,
    path: str | Path,
    *,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    secrets: tuple[str, ...] = (),
) -> AsyncGenerator[bytes, None]:
    """Pass a stream's bytes through unchanged while recording them to ``path`` (+ meta file).

    Feed the result to :func:`~maas_stream.astream` / ``aaggregate`` / ``aconvert`` to use the
    stream live while it is recorded. The files are written when the stream ends, also when it
    is cut, the consumer stops early (``complete: false``) or the provider answered non-2xx
    (the error body is recorded, then :class:`ProviderHTTPError` is raised).

    A websocket is recorded as JSON lines (``{"dir": "server", "msg": {...}}``, the handshake
    URL and headers redacted in the meta file): the result yields those lines, the websocket is
    closed at the end. It records only what the server sends; to record the client messages
    too, wrap the connection with :func:`arecord_websocket` and send through the wrapper.

    Args:
        source: An httpx / httpx2 streaming response (its request is recorded, redacted), an
            SDK raw streaming response, a ``websockets`` client connection, or any
            ``AsyncIterable[bytes]``.
        path: The ``.sse`` (``.jsonl`` for a websocket) file to write.
        protocol: Stored in the meta file.
        idle_timeout: Seconds allowed between two reads' data.
        secrets: More values to scrub from the files (API keys sent some other way).

    Raises:
        ProviderHTTPError: The response's status is not 2xx (after recording it).
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        TypeError: ``source`` is none of the supported kinds.
    """
    reader = AsyncReader(source, idle_timeout=idle_timeout)
    if reader.kind != "bytes":  # a websocket: the recording wrapper reads it
        async for line in _arecord_websocket(reader.source, path, protocol, idle_timeout, secrets):
            yield line
        return
    rec = Recorder(path, protocol=protocol)
    for secret in secrets:
        rec.add_secret(secret)
    resp = reader.source
    info = _request_info(resp) if hasattr(resp, "status_code") else None
    if info is not None:
        rec.set_request(*info)
    rec.start(getattr(resp, "status_code", None), getattr(resp, "headers", {}))
    complete = False
    try:
        while (chunk := await reader.read()) is not None:
            assert isinstance(chunk, bytes)
            rec.feed(chunk)
            yield chunk
        complete = True
    except ProviderHTTPError as exc:
        rec.feed(exc.content)
        complete = True
        raise
    finally:
        await reader.aclose()
        rec.save(complete=complete)


class Recording:
    """A recording loaded from disk: its bytes, its meta data (if any) and its chunks.

    Attributes:
        path: The ``.sse`` / ``.jsonl`` file.
        data: Its bytes.
        meta: The meta file's contents, or ``None`` when there is no meta file.
    """

    def __init__(self, path: str | Path, data: bytes, meta: RecordingMeta | None) -> None:
        self.path = Path(path)
        self.data = data
        self.meta = meta

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        """Read ``path`` and, when present, its ``.meta.json``.

        Raises:
            OSError: The file cannot be read.
            StreamIOError: The meta file is not valid.
        """
        p = Path(path)
        data = p.read_bytes()
        mp = meta_path(p)
        meta = None
        if mp.is_file():
            try:
                meta = msgspec.json.decode(mp.read_bytes(), type=RecordingMeta)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise StreamIOError(f"{mp}: not a valid recording meta file: {exc}") from exc
        return cls(p, data, meta)

    @property
    def protocol(self) -> str | None:
        """The meta file's protocol, else the folder's name (``recordings/<protocol>/``)."""
        if self.meta is not None and self.meta.protocol:
            return self.meta.protocol
        return self.path.parent.name or None

    @property
    def status(self) -> int:
        """The recorded HTTP status (200 without a meta file)."""
        return self.meta.status if self.meta is not None and self.meta.status is not None else 200

    def response_headers(self) -> dict[str, str]:
        """The recorded response headers fit for a replay (no length / encoding headers)."""
        headers = {} if self.meta is None else dict(self.meta.headers)
        for name in _HOP_HEADERS:
            headers.pop(name, None)
        if self.meta is None or self.meta.status in (None, 200):
            headers.setdefault(
                "content-type", "application/jsonl" if self.path.suffix == ".jsonl" else "text/event-stream"
            )
        return headers

    def chunks(self) -> list[bytes]:
        """The bytes cut at the recorded chunk boundaries.

        Without usable meta data: a ``.jsonl`` recording's lines, else one chunk.
        """
        sizes = self.meta.chunks if self.meta is not None else []
        if not sizes or sum(sizes) != len(self.data):
            if self.path.suffix == ".jsonl":
                return [line for line in self.data.splitlines(keepends=True) if line.strip()]
            return [self.data] if self.data else []
        out = []
        pos = 0
        for size in sizes:
            out.append(self.data[pos : pos + size])
            pos += size
        return out

    def messages(self) -> list[tuple[str, bytes]]:
        """A ``.jsonl`` recording's messages: ``(direction, message JSON bytes as written)``, in order.

        Raises:
            StreamIOError: A line is not a ``{"dir": ..., "msg": ...}`` frame.
        """
        out = []
        for n, line in enumerate(self.data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                frame = _frame.decode(line)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise StreamIOError(f"{self.path}: line {n} is not a JSON-lines frame: {exc}") from exc
            out.append((frame.dir, bytes(frame.msg)))
        return out

    def delays(self, speed: float | None) -> list[float]:
        """Seconds to wait before each chunk to replay at ``speed`` (all 0 when ``speed`` is ``None`` or 0)."""
        n = len(self.chunks())
        times = self.meta.times if self.meta is not None else []
        if not speed or len(times) != n:
            return [0.0] * n
        out = []
        prev = 0.0
        for t in times:
            out.append(max(0.0, (t - prev) / speed))
            prev = t
        return out


class _Frame(msgspec.Struct):
    dir: str
    msg: msgspec.Raw


_frame = msgspec.json.Decoder(_Frame)


def _load(recording: str | Path | Recording) -> Recording:
    return recording if isinstance(recording, Recording) else Recording.load(recording)


async def areplay(
    recording: str | Path | Recording, *, speed: float | None = None
) -> AsyncGenerator[bytes, None]:
    """Yield a recording's bytes with its original chunk boundaries (and timing, at ``speed``).

    Args:
        recording: A path or a loaded :class:`Recording`.
        speed: ``None`` or ``0``: no waiting; ``1.0``: the original timing; ``2.0``: twice as fast.

    Raises:
        OSError: The file cannot be read.
    """
    rec = _load(recording)
    for delay, chunk in zip(rec.delays(speed), rec.chunks(), strict=True):
        if delay:
            await anyio.sleep(delay)
        yield chunk


def replay(recording: str | Path | Recording, *, speed: float | None = None) -> Generator[bytes, None, None]:
    """The synchronous twin of :func:`areplay` (waits with ``time.sleep``).

    Raises:
        OSError: The file cannot be read.
    """
    rec = _load(recording)
    for delay, chunk in zip(rec.delays(speed), rec.chunks(), strict=True):
        if delay:
            time.sleep(delay)
        yield chunk


async def arecord_request(
    client: Any,
    method: str,
    url: str,
    path: str | Path,
    *,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    on_chunk: Callable[[bytes], None] | None = None,
    **kwargs: Any,
) -> RecordingMeta:
    """Send a request with an httpx / httpx2 async client and record the whole answer to ``path``.

    Args:
        client: An ``httpx.AsyncClient`` or ``httpx2.AsyncClient``.
        method: The HTTP method.
        url: The URL.
        path: The ``.sse`` file to write (the meta file goes beside it).
        protocol: Stored in the meta file.
        idle_timeout: Seconds allowed between two reads' data.
        on_chunk: Called with each chunk of a 2xx answer as it arrives (a progress display).
        **kwargs: Passed to ``client.stream`` (``json=``, ``content=``, ``headers=``...).

    Raises:
        ProviderHTTPError: The provider answered non-2xx (the answer is recorded first).
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
    """
    async with client.stream(method, url, **kwargs) as response:
        async for chunk in arecord(response, path, protocol=protocol, idle_timeout=idle_timeout):
            if on_chunk is not None:
                on_chunk(chunk)
    meta = Recording.load(path).meta
    assert meta is not None
    return meta


def record_request(
    client: Any,
    method: str,
    url: str,
    path: str | Path,
    *,
    protocol: str | None = None,
    secrets: tuple[str, ...] = (),
    **kwargs: Any,
) -> RecordingMeta:
    """The synchronous twin of :func:`arecord_request` (an ``httpx2.Client`` or ``httpx.Client``).

    Args:
        client: A sync client.
        method: The HTTP method.
        url: The URL.
        path: The ``.sse`` file to write (the meta file goes beside it).
        protocol: Stored in the meta file.
        secrets: More values to scrub from the files.
        **kwargs: Passed to ``client.stream`` (``json=``, ``content=``, ``headers=``...).

    Raises:
        ProviderHTTPError: The provider answered non-2xx (the answer is recorded first).
    """
    with client.stream(method, url, **kwargs) as response:
        reader = SyncReader(response)
        rec = Recorder(path, protocol=protocol)
        for secret in secrets:
            rec.add_secret(secret)
        info = _request_info(response)
        if info is not None:
            rec.set_request(*info)
        rec.start(response.status_code, response.headers)
        complete = False
        try:
            while (chunk := reader.read()) is not None:
                assert isinstance(chunk, bytes)
                rec.feed(chunk)
            complete = True
        except ProviderHTTPError as exc:
            rec.feed(exc.content)
            complete = True
            raise
        finally:
            reader.close()
            rec.save(complete=complete)
    meta = Recording.load(path).meta
    assert meta is not None
    return meta


def check_recorded_protocol(path: str | Path, protocol: str) -> None:
    """Check that a recording is a stream of ``protocol`` (detected from its first frames).

    Raises:
        StreamIOError: The recording is another protocol's stream, or no stream this library
            knows (the detected protocol, or why none was, is in the message).
        OSError: The file cannot be read.
    """
    data = Path(path).read_bytes()
    try:
        found = detect_protocol(data, final=True)
    except ProtocolDetectionError as exc:
        raise StreamIOError(f"{path}: not a {protocol} stream: {exc}") from exc
    if found != protocol:
        raise StreamIOError(f"{path}: recorded as {protocol}, but the provider sent a stream of {found}")
