"""pytest plugin: serve recordings through an httpx / httpx2 mock transport, offline.

Its fixtures are registered through the ``maas_stream`` pytest11 entry point, the tiny module
``maas_stream_pytest`` (which imports this one only when a fixture is used, so that coverage of
the library starts before the library is imported). The ``maas_replay`` fixture hands out
transports and clients that answer every request with a recording (status, headers, bytes cut
at the recorded chunk boundaries, optionally with the recorded timing), so a test can run the
official SDK clients (openai, anthropic, google-genai: all accept an httpx2 client) or its own
code against a recorded provider::

    def test_chat(maas_replay):
        client = openai.OpenAI(
            api_key="test", max_retries=0,
            http_client=maas_replay.client("openai-chat/readme_text_then_parallel_tools"),
        )
        stream = client.chat.completions.create(model="m", messages=[], stream=True)
        ...
        assert maas_replay.requests[0].url.path == "/v1/chat/completions"

Recordings are named by path, or relative to the ``maas_recordings_dir`` fixture, with or
without the suffix. That folder is, first found: the ``maas_recordings("dir")`` marker's
(relative to the test file), the ``maas_stream_recordings`` ini option's (relative to the ini
file), ``recordings/`` beside the test file, ``<rootdir>/recordings``.

A request that does not ask for a stream (Chat / Responses / Anthropic without ``"stream":
true``, Gemini's ``:generateContent``) is answered from the same stream recording with that
protocol's non-streaming body: the recording aggregated, then :func:`~maas_stream.encode_response`.

With ``pytest --maas-record``, a recording that does not exist yet is recorded from the real
provider on first use (the request forwarded as a streaming call, with the API key from the
protocol's environment variable, e.g. ``OPENAI_API_KEY``; the files written with secrets
redacted, checked to be a stream of the protocol named), then served. Without the key, or
without ``--maas-record``, a missing recording fails the test naming what to do.

Websocket sessions (``.jsonl`` recordings of Realtime / Live) are served by a real loopback
``websockets`` server: :func:`serve_websocket_recording` (asyncio only, needs the ``ws`` extra)::

    async with serve_websocket_recording("recordings/google-live/case.jsonl") as server:
        async with websockets.connect(server.url) as ws:
            ...                       # send the client messages; the server answers as recorded
        assert server.received[0]     # what the client sent on the first connection

It must not contain protocol logic.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import anyio
import msgspec

from ._bodies import encode_response
from ._registry import ProtocolSpec, get_protocol, match_endpoint, protocol_names
from ._stream_aggregator import aggregate
from .io._exceptions import ProviderHTTPError, StreamIOError
from .io._record import Recording, check_recorded_protocol, meta_path, record_request

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Iterator

__all__ = [
    "ReplayServer",
    "WebSocketReplayServer",
    "replay_transport",
    "serve_websocket",
    "serve_websocket_recording",
    "websocket_replay_handler",
]

_stream_classes: dict[str, type[Any]] = {}


class _AsyncChunks:
    def __init__(self, chunks: list[bytes], delays: list[float]) -> None:
        self._items = list(zip(delays, chunks, strict=True))
        self._pos = 0

    def __aiter__(self) -> _AsyncChunks:
        return self

    async def __anext__(self) -> bytes:
        if self._pos >= len(self._items):
            raise StopAsyncIteration
        delay, chunk = self._items[self._pos]
        self._pos += 1
        if delay:
            await anyio.sleep(delay)
        return chunk


def _stream_class(library: str) -> type[Any]:
    cls = _stream_classes.get(library)
    if cls is not None:
        return cls
    mod = importlib.import_module(library)

    class ReplayStream(mod.SyncByteStream, mod.AsyncByteStream):  # type: ignore[misc,name-defined]
        """A recording's chunks, for sync and async clients alike, with the recorded pauses."""

        def __init__(self, chunks: list[bytes], delays: list[float]) -> None:
            self._chunks = chunks
            self._delays = delays

        def __iter__(self) -> Iterator[bytes]:
            for delay, chunk in zip(self._delays, self._chunks, strict=True):
                if delay:
                    time.sleep(delay)
                yield chunk

        def __aiter__(self) -> AsyncIterator[bytes]:
            # An iterator object, not an async generator: a client that abandons the stream
            # leaves nothing suspended for the event loop to finalize (trio warns about that).
            return _AsyncChunks(self._chunks, self._delays)

    _stream_classes[library] = ReplayStream
    return ReplayStream


def body_protocol(request: Any) -> str | None:
    """The protocol whose non-streaming body answers ``request``; ``None`` when it asks for a stream.

    The path decides where it can (Gemini's ``:generateContent``), else the JSON body's
    ``stream`` field: a JSON object without ``"stream": true`` sent to a known endpoint asks for
    a body. A request to an unknown path, or without a JSON object body, gets the stream.
    """
    found = match_endpoint(request.url.path)
    if found is None or found.spec.encode_response is None:
        return None
    if found.endpoint.stream is not None:
        return None if found.endpoint.stream else found.spec.name
    try:
        body = msgspec.json.decode(request.content)
    except msgspec.DecodeError:
        return None
    if not isinstance(body, dict) or body.get("stream"):
        return None
    return found.spec.name


def _answer(mod: Any, rec: Recording, request: Any, speed: float | None) -> Any:
    target = body_protocol(request) if rec.status == 200 else None
    if target is None:
        return mod.Response(
            rec.status,
            headers=rec.response_headers(),
            stream=_stream_class(mod.__name__)(rec.chunks(), rec.delays(speed)),
            request=request,
        )
    source = rec.protocol if rec.protocol in protocol_names() else None
    body = encode_response(aggregate(rec.data, protocol=source), target)
    headers = rec.response_headers()
    headers["content-type"] = "application/json"
    return mod.Response(200, headers=headers, content=msgspec.json.encode(body), request=request)


Source = Recording | Callable[[Any], Recording]
"""A recording, or a function that makes it from the first request (record mode)."""


def replay_transport(
    recordings: Sequence[Source],
    *,
    library: str = "httpx2",
    speed: float | None = None,
    requests: list[Any] | None = None,
) -> Any:
    """A ``MockTransport`` of ``library`` answering requests with ``recordings`` in order.

    The last recording answers every request after it (so a client's retry sees it again). A
    request that does not ask for a stream gets the recording as its protocol's non-streaming
    body (see :func:`body_protocol`).

    Args:
        recordings: What to serve (a function in the list is called with the request it is
            first due for, and its recording serves from then on).
        library: ``"httpx2"`` (the official SDKs' transport) or ``"httpx"``.
        speed: Replay the recorded timing at this speed (``None``: no waits).
        requests: If given, receives every request the transport handled.

    Raises:
        ValueError: ``recordings`` is empty.
    """
    if not recordings:
        raise ValueError("replay_transport needs at least one recording")
    mod = importlib.import_module(library)
    queue = list(recordings)
    seen = requests if requests is not None else []

    def handler(request: Any) -> Any:
        seen.append(request)
        item = queue[0]
        rec = item if isinstance(item, Recording) else item(request)
        if len(queue) > 1:
            queue.pop(0)
        else:
            queue[0] = rec
        return _answer(mod, rec, request, speed)

    return mod.MockTransport(handler)


_CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _streaming_body(request: Any, spec: ProtocolSpec, path: Path) -> bytes:
    """The request's body asking for a stream (what a recording must hold)."""
    found = match_endpoint(request.url.path)
    if found is not None and found.endpoint.stream is False:
        _fail(
            f"cannot record {path} from a non-streaming {spec.name} call ({request.url.path}): "
            "record it once with a streaming call, then both kinds of call are served from it"
        )
    content: bytes = request.content
    if found is None or found.endpoint.stream is not None or not content:
        return content
    try:
        body = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return content
    if isinstance(body, dict) and not body.get("stream"):
        body["stream"] = True
        return msgspec.json.encode(body)
    return content


def _fail(message: str) -> NoReturn:
    import pytest  # only record mode, which runs under pytest, gets here

    # ``pytest.fail`` raises a BaseException: an SDK's retry loop does not swallow it.
    pytest.fail(message, pytrace=False)


def _remove(path: Path) -> None:
    for p in (path, meta_path(path)):
        p.unlink(missing_ok=True)


class ReplayServer:
    """What the ``maas_replay`` fixture gives: transports and clients that serve recordings.

    Attributes:
        root: Where relative recording names are looked up.
        requests: Every request served so far (the library's ``Request`` objects), in order.
    """

    def __init__(self, root: Path, *, record: bool = False, record_url: str | None = None) -> None:
        self.root = root
        self.record = record
        self.record_url = record_url
        self.requests: list[Any] = []
        self._clients: list[Any] = []

    def load(self, name: str | Path | Recording) -> Recording:
        """A recording by path, or by name under :attr:`root` (``"openai-chat/case"``, suffix optional).

        Raises:
            FileNotFoundError: No such recording.
        """
        if isinstance(name, Recording):
            return name
        for candidate in (Path(name), self.root / name):
            for path in (
                candidate,
                candidate.with_name(candidate.name + ".sse"),
                candidate.with_name(candidate.name + ".jsonl"),
            ):
                if path.is_file():
                    return Recording.load(path)
        hint = (
            "it is recorded on first use when the provider's API key is set"
            if self.record
            else "run pytest with --maas-record and the provider's API key set to record it"
        )
        raise FileNotFoundError(f"no recording {str(name)!r} (looked in {self.root}; {hint})")

    def _source(self, name: str | Path | Recording) -> Source:
        try:
            return self.load(name)
        except FileNotFoundError:
            if not self.record:
                raise
        assert not isinstance(name, Recording)
        path = Path(name) if Path(name).is_absolute() else self.root / name
        if path.suffix not in (".sse", ".jsonl"):
            path = path.with_name(path.name + ".sse")
        return lambda request: self._record(request, path)

    def _record(self, request: Any, path: Path) -> Recording:
        """Record ``path`` from the real provider with ``request`` (record mode)."""
        found = match_endpoint(request.url.path)
        folder = path.parent.name
        spec = (
            found.spec if found is not None else get_protocol(folder) if folder in protocol_names() else None
        )
        if spec is None or spec.auth is None or spec.url is None:
            _fail(f"cannot record {path}: {request.url.path} is no provider endpoint this library knows")
        key = os.environ.get(spec.auth.env)
        if not key:
            _fail(
                f"recording {path} does not exist and {spec.auth.env} is not set: set it to record "
                f"{path.name} from the {spec.name} provider, or add the recording"
            )
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in _CREDENTIAL_HEADERS and k.lower() not in ("host", "content-length")
        }
        headers.update(spec.auth.headers(key))
        url = (self.record_url or _origin(spec.url)).rstrip("/") + request.url.raw_path.decode()
        content = _streaming_body(request, spec, path)
        path.parent.mkdir(parents=True, exist_ok=True)
        httpx2 = importlib.import_module("httpx2")
        try:
            with httpx2.Client(timeout=httpx2.Timeout(60, read=300), trust_env=False) as client:
                record_request(
                    client,
                    request.method,
                    url,
                    path,
                    protocol=spec.name,
                    secrets=(key,),
                    content=content,
                    headers=headers,
                )
            check_recorded_protocol(path, spec.name)
        except (StreamIOError, httpx2.HTTPError, OSError) as exc:
            _remove(path)
            where = "answered" if isinstance(exc, ProviderHTTPError) else "failed"
            _fail(f"recording {path} from {url.split('?', 1)[0]} {where}: {exc}")
        return Recording.load(path)

    def transport(
        self, *names: str | Path | Recording, library: str = "httpx2", speed: float | None = None
    ) -> Any:
        """A mock transport serving the recordings in order (see :func:`replay_transport`).

        Raises:
            FileNotFoundError: A recording does not exist (and record mode is off).
        """
        return replay_transport(
            [self._source(n) for n in names], library=library, speed=speed, requests=self.requests
        )

    def client(
        self,
        *names: str | Path | Recording,
        library: str = "httpx2",
        speed: float | None = None,
        **kwargs: Any,
    ) -> Any:
        """A sync ``Client`` of ``library`` over :meth:`transport` (closed at teardown)."""
        mod = importlib.import_module(library)
        client = mod.Client(transport=self.transport(*names, library=library, speed=speed), **kwargs)
        self._clients.append(client)
        return client

    def async_client(
        self,
        *names: str | Path | Recording,
        library: str = "httpx2",
        speed: float | None = None,
        **kwargs: Any,
    ) -> Any:
        """An ``AsyncClient`` of ``library`` over :meth:`transport`.

        The mock transport holds no connections, so the client needs no closing.
        """
        mod = importlib.import_module(library)
        return mod.AsyncClient(transport=self.transport(*names, library=library, speed=speed), **kwargs)

    def close(self) -> None:
        """Close the sync clients handed out."""
        for client in self._clients:
            client.close()
        self._clients.clear()


# ---------------------------------------------------------------- websocket sessions


def _frames(
    recording: str | Path | Recording | Sequence[tuple[str, bytes | str]],
) -> list[tuple[str, bytes | str]]:
    if isinstance(recording, str | Path):
        recording = Recording.load(recording)
    if isinstance(recording, Recording):
        return [(d, m.decode()) for d, m in recording.messages()]
    return list(recording)


def websocket_replay_handler(
    recording: str | Path | Recording | Sequence[tuple[str, bytes | str]],
    *,
    await_client: bool = True,
    pause: float = 0.0,
    speed: float | None = None,
    received: list[list[bytes | str]] | None = None,
    before_send: Callable[[int], Awaitable[None]] | None = None,
    sent: list[int] | None = None,
) -> Callable[[Any], Awaitable[None]]:
    """A ``websockets`` server handler that plays a recorded session's server side.

    Walks the recording's messages in order: a ``server`` message is sent (as text), a
    ``client`` message is waited for (when ``await_client``; whatever the client sends is
    collected, not compared), so the server answers the client the way the recording shows.
    After the last message the handler returns and the connection closes normally.

    Args:
        recording: A ``.jsonl`` path, a loaded :class:`~maas_stream.io.Recording`, or
            ``(direction, message)`` pairs.
        await_client: Wait for one client message per recorded ``client`` line; otherwise skip
            client lines (a server that just talks).
        pause: Seconds between two server messages.
        speed: Keep the recorded timing (the meta file's ``times``) at this speed; ``None``: no waits.
        received: If given, receives one list per connection of the messages the client sent.
        before_send: Awaited with the server message's number (0-based) before it is sent
            (a test holds the server back with it).
        sent: If given, receives the count of server messages sent after each send.
    """
    frames = _frames(recording)
    delays = [0.0] * len(frames)
    if speed and isinstance(recording, str | Path | Recording):
        rec = recording if isinstance(recording, Recording) else Recording.load(recording)
        found = rec.delays(speed)
        if len(found) == len(frames):
            delays = found
    sink = received if received is not None else []

    async def handler(ws: Any) -> None:
        got: list[bytes | str] = []
        sink.append(got)
        count = 0
        for (direction, msg), delay in zip(frames, delays, strict=True):
            if direction == "client":
                if await_client:
                    got.append(await ws.recv())
                continue
            if delay:
                await anyio.sleep(delay)
            if before_send is not None:
                await before_send(count)
            await ws.send(msg)
            count += 1
            if sent is not None:
                sent.append(count)
            if pause:
                await anyio.sleep(pause)

    return handler


class WebSocketReplayServer:
    """A running loopback websocket server (what :func:`serve_websocket` yields).

    Attributes:
        url: ``ws://127.0.0.1:<port>`` (any path and query are accepted).
        server: The ``websockets`` server.
        received: Per connection, the client messages a replay handler collected.
    """

    def __init__(self, url: str, server: Any, received: list[list[bytes | str]]) -> None:
        self.url = url
        self.server = server
        self.received = received


@contextlib.asynccontextmanager
async def serve_websocket(
    handler: Callable[[Any], Awaitable[None]],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    received: list[list[bytes | str]] | None = None,
) -> AsyncIterator[WebSocketReplayServer]:
    """Run a ``websockets`` server with ``handler`` for the block (asyncio only).

    Args:
        handler: Called with each server connection.
        host: Address to listen on.
        port: Port (0: a free one).
        received: Exposed as :attr:`WebSocketReplayServer.received`.
    """
    from websockets.asyncio.server import serve

    async with serve(handler, host, port) as server:
        bound = next(iter(server.sockets)).getsockname()[1]
        yield WebSocketReplayServer(f"ws://{host}:{bound}", server, received if received is not None else [])


@contextlib.asynccontextmanager
async def serve_websocket_recording(
    recording: str | Path | Recording | Sequence[tuple[str, bytes | str]],
    *,
    await_client: bool = True,
    pause: float = 0.0,
    speed: float | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> AsyncIterator[WebSocketReplayServer]:
    """Serve a recorded websocket session's server side on a loopback port, for the block.

    Every connection gets the whole session (see :func:`websocket_replay_handler`); the client
    messages of each connection end up in :attr:`WebSocketReplayServer.received`.

    Args:
        recording: A ``.jsonl`` path, a :class:`~maas_stream.io.Recording` or ``(direction, message)`` pairs.
        await_client: Wait for the client's message at each recorded ``client`` line.
        pause: Seconds between two server messages.
        speed: Keep the recorded timing at this speed (``None``: no waits).
        host: Address to listen on.
        port: Port (0: a free one).
    """
    received: list[list[bytes | str]] = []
    handler = websocket_replay_handler(
        recording, await_client=await_client, pause=pause, speed=speed, received=received
    )
    async with serve_websocket(handler, host=host, port=port, received=received) as server:
        yield server
