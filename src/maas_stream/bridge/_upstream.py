"""Where the bridge's streams come from: a real provider over HTTP, or a recording replayed.

An upstream opens one stream per client request (:meth:`Upstream.open`, an async context
manager giving an httpx response or an async iterable of bytes for :func:`maas_stream.aconvert`)
and raises :class:`~maas_stream.ProviderHTTPError` before any byte when the provider refused.

The provider's default URL and its credential headers come from the protocol's spec
(``spec.url``, ``spec.auth``). Time limits are one small value, :class:`Timeouts`; the HTTP
client is httpx2's (what the official SDKs ship) when it is installed, else httpx's, pooled; an
httpx2 client the bridge creates runs on its lean HTTP/1.1 transport (``_transport``).
It must not contain protocol logic.
"""

from __future__ import annotations

import contextlib
import os
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import quote

import anyio
import msgspec

from .._exceptions import LocalProtocolError
from .._registry import detect_protocol, get_protocol
from ..io import ProviderHTTPError, Recording, StreamIOError, StreamTimeoutError, aconnect, areplay
from ..io._checks import transport_error
from ..io._exceptions import error_summary, parse_body
from ._http1 import AVAILABLE as LEAN_AVAILABLE
from ._transport import LeanPoster, LeanTransport

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    import httpx

__all__ = [
    "HTTPUpstream",
    "RecordingUpstream",
    "Timeouts",
    "Upstream",
    "auth_headers",
]

KEEPALIVE_EXPIRY = 4.0
"""Seconds an idle pooled upstream connection is kept for reuse."""

DEFAULT_MAX_CONNECTIONS = 1000
"""Upstream connections pooled per :class:`HTTPUpstream` (httpx's own default, 100, queued the
121st long stream for 30 s and then failed it)."""


@dataclass(frozen=True)
class Timeouts:
    """Time limits of one upstream exchange, in seconds (``None``: no limit).

    A connect or first-byte timeout is answered 504 before any byte reaches the client; an
    idle or total timeout after the first byte ends the client's stream with its protocol's
    in-band error.
    """

    connect: float | None = 10.0
    """Opening the TCP/TLS connection (and waiting for a free pooled one, and sending the body)."""
    first_byte: float | None = 120.0
    """From sending the request to the answer's status line and headers (connecting included)."""
    idle: float | None = 300.0
    """Between two reads of the stream (reasoning models can think for minutes in silence)."""
    total: float | None = 1800.0
    """The whole exchange, from sending the request to the stream's last byte."""

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "idle", "total"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(
                    f"timeout {name} must be a positive number of seconds or None, not {value!r}"
                )


def new_client(timeouts: Timeouts, max_connections: int) -> Any:
    """A pooled async HTTP client: httpx2's when installed (what the SDKs ship), else httpx's.

    The read timeout is left to the stream readers (idle, total), which report which limit ran out.
    An httpx2 client runs on the bridge's lean HTTP/1.1 transport (:mod:`._transport`: the same
    client API, httptools' parser, a fraction of the cost per chunk read) unless the environment
    names a proxy, which httpx2's own transport honours, or httptools is not installed.
    """
    lib: Any
    try:
        import httpx2

        lib = httpx2
    except ImportError:  # pragma: no cover - httpx2 comes with the SDKs and the test extra
        import httpx

        lib = httpx
    connect = timeouts.connect
    limits = lib.Limits(
        max_connections=max_connections,
        # Every connection of a burst is kept for the next (at most ``max_connections``, each
        # for ``KEEPALIVE_EXPIRY``): with 100 kept, 200 concurrent streams connected 100 anew
        # per burst, and each of those streams waited for a TCP connect before its first byte.
        max_keepalive_connections=max_connections,
        # Shorter than the 5 s many servers keep an idle connection (uvicorn's default): a
        # request sent on a connection the server is closing fails before any byte (a 502).
        keepalive_expiry=KEEPALIVE_EXPIRY,
    )
    timeout = lib.Timeout(connect, read=None, write=connect, pool=connect)
    if lib.__name__ != "httpx2" or _env_proxies() or not LEAN_AVAILABLE:
        return lib.AsyncClient(timeout=timeout, limits=limits)
    transport = LeanTransport(
        max_connections=max_connections,
        max_keepalive=limits.max_keepalive_connections,
        keepalive_expiry=KEEPALIVE_EXPIRY,
    )
    return lib.AsyncClient(timeout=timeout, transport=transport)


def _env_proxies() -> bool:
    """Whether the environment names an HTTP proxy (httpx2's ``trust_env`` would use it)."""
    found = urllib.request.getproxies()
    return any(found.get(scheme) for scheme in ("http", "https", "all"))


def auth_headers(protocol: str, api_key: str | None) -> dict[str, str]:
    """The headers that authenticate a request to ``protocol``'s provider (its spec's ``auth``).

    Raises:
        LocalProtocolError: ``protocol`` is unknown.
    """
    auth = get_protocol(protocol).auth
    return auth.headers(api_key) if auth is not None else {}


@runtime_checkable
class Upstream(Protocol):
    """A source of provider streams for the bridge."""

    @property
    def protocol(self) -> str:
        """The protocol the upstream speaks."""
        ...

    def open(self, body: dict[str, Any], *, model: str | None) -> contextlib.AbstractAsyncContextManager[Any]:
        """Send ``body`` (already in :attr:`protocol`'s terms); give the stream to read.

        Raises:
            ProviderHTTPError: The provider answered non-2xx (before any stream byte).
        """
        ...

    async def aclose(self) -> None:
        """Release what the upstream holds (an HTTP client it created)."""
        ...


class RecordingUpstream:
    """Replay one recording for every request, whatever was asked, with its recorded chunking.

    Args:
        path: The ``.sse`` / ``.jsonl`` recording (its ``.meta.json`` is used when present).
        speed: ``None`` / ``0``: no waiting; ``1.0``: the recorded timing; ``2.0``: twice as fast.
        protocol: The recording's protocol; read from its meta file or detected from its first frames.
        timeouts: Idle and total limits on reading the replay (tests of a slow upstream).

    Raises:
        OSError: The recording cannot be read.
        ProtocolDetectionError: Its protocol cannot be told.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        speed: float | None = None,
        protocol: str | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.recording = Recording.load(path)
        meta = self.recording.meta
        name = protocol or (meta.protocol if meta is not None else None)
        if name is None:
            name = detect_protocol(self.recording.data, final=True)
            assert name is not None
        get_protocol(name)  # fail now on an unknown name
        self._protocol = name
        self.speed = speed
        self.timeouts = timeouts
        """Limits applied to reading the replay (``None``: none)."""
        self.requests: list[dict[str, Any]] = []
        """Every (converted) request body received, for inspection."""

    @property
    def protocol(self) -> str:
        """The recording's protocol."""
        return self._protocol

    @contextlib.asynccontextmanager
    async def open(self, body: dict[str, Any], *, model: str | None) -> AsyncIterator[Any]:
        """Replay the recording (the request is only kept in :attr:`requests`).

        Raises:
            ProviderHTTPError: The recording holds a non-2xx answer.
        """
        self.requests.append(body)
        rec = self.recording
        if not 200 <= rec.status < 300:
            parsed = parse_body(rec.data)
            raise ProviderHTTPError(
                f"recording answered {rec.status}: {error_summary(parsed)}",
                status=rec.status,
                body=parsed,
                headers=rec.response_headers(),
                content=rec.data,
            )
        yield areplay(rec, speed=self.speed)

    async def aclose(self) -> None:
        """Nothing to release."""


_URLS = 256
"""Request URLs an :class:`HTTPUpstream` keeps made (one per URL template and model; bounded)."""


class HTTPUpstream:
    """A real provider endpoint, called with an ``httpx.AsyncClient``.

    Args:
        protocol: The provider's protocol.
        url: The streaming endpoint (``{model}`` is replaced by the request's model); the
            provider's public endpoint when ``None``.
        api_key: The API key; read from the protocol's environment variable when ``None``.
        model: Send this model instead of the one the client named.
        headers: More request headers.
        client: The HTTP client, httpx2 or httpx (used as is: its own pool and timeouts); a
            pooled one is created (and closed by :meth:`aclose`) when ``None``.
        timeouts: The time limits (:class:`Timeouts`; its defaults when ``None``).
        max_connections: The size of the created client's connection pool.

    Raises:
        LocalProtocolError: ``protocol`` is unknown, or has no request envelope codec (websocket
            and stateful protocols cannot be called over HTTP by the bridge).
        ValueError: No ``url`` was given and the protocol has no default endpoint, or
            ``max_connections`` is not positive.
    """

    def __init__(
        self,
        protocol: str,
        url: str | None = None,
        *,
        api_key: str | None = None,
        model: str | None = None,
        headers: dict[str, str] | None = None,
        client: httpx.AsyncClient | Any | None = None,
        timeouts: Timeouts | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        spec = get_protocol(protocol)
        if spec.envelope is None:
            raise LocalProtocolError(
                f"{protocol} cannot be an HTTP upstream: it has no request envelope codec"
            )
        if url is None:
            if spec.url is None:
                raise ValueError(f"give the upstream URL of a {protocol} provider")
            url = spec.url
        if api_key is None and spec.auth is not None:
            api_key = os.environ.get(spec.auth.env)
        self._protocol = protocol
        self.url = url
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.model = model
        self.timeouts = timeouts or Timeouts()
        self.max_connections = max_connections
        self._headers = {
            "content-type": "application/json",
            **auth_headers(protocol, api_key),
            **(headers or {}),
        }
        self._client = client
        self._owns_client = client is None
        self._poster: Any = None
        self._urls: dict[tuple[str, str], str] = {}

    @property
    def protocol(self) -> str:
        """The provider's protocol."""
        return self._protocol

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = new_client(self.timeouts, self.max_connections)
        return self._client

    def _get_poster(self) -> Any:
        """What streams are opened with: the client, or its lean poster.

        The poster (the request head built once per URL) when the client is the bridge's own
        on its lean transport.
        """
        if self._poster is None:
            client = self._get_client()
            transport = getattr(client, "_transport", None)  # (httpx2's: the one new_client gave it)
            lean = self._owns_client and isinstance(transport, LeanTransport)
            self._poster = LeanPoster(client, transport) if lean and transport is not None else client
        return self._poster

    def open(self, body: dict[str, Any], *, model: str | None) -> contextlib.AbstractAsyncContextManager[Any]:
        """POST ``body`` and give the checked streaming response.

        Raises:
            ProviderHTTPError: The provider answered non-2xx (it carries the provider's body).
            UnexpectedContentTypeError: A 2xx answer that is not a stream.
            StreamTimeoutError: Connecting, a free pooled connection or the answer's headers
                took too long (``phase``: ``connect``, ``pool``, ``first_byte``, ``total``).
            StreamTransportError: The connection could not be made.
        """
        if self.model is not None and "model" in body:
            body = {**body, "model": self.model}
        key = (self.url, self.model or model or "")
        url = self._urls.get(key)
        if url is None:
            if len(self._urls) >= _URLS:
                self._urls.clear()
            # Quoted whole (a '/' too): a model name never reaches another path of the provider.
            url = self._urls[key] = key[0].replace("{model}", quote(key[1], safe=":@+"))
        content = msgspec.json.encode(body)  # (the content-type is in the headers)
        return _Response(
            aconnect(
                self._poster or self._get_poster(),
                "POST",
                url,
                protocol=self._protocol,
                idle_timeout=self.timeouts.idle,
                first_byte_timeout=self.timeouts.first_byte,
                total_timeout=self.timeouts.total,
                content=content,
                headers=self._headers,
            )
        )

    async def count_tokens(self, body: dict[str, Any], *, model: str | None) -> int | None:
        """The provider's count of ``body``'s input tokens, from its count endpoint.

        ``None`` when the protocol has no count endpoint (the caller estimates).

        Raises:
            ProviderHTTPError: The provider refused the count (it carries the provider's body).
            StreamTimeoutError: The count took longer than the first-byte timeout.
            StreamTransportError: The connection could not be made.
        """
        counting = get_protocol(self._protocol).count_tokens
        if counting is None:
            return None
        if self.model is not None and "model" in body:
            body = {**body, "model": self.model}
        name = quote(self.model or model or "", safe=":@+")
        count_body = msgspec.json.decode(
            msgspec.json.encode(counting.request(body)).replace(b"{model}", name.encode())
        )
        url = counting.url(self.url).replace("{model}", name)
        limit = self.timeouts.first_byte
        try:
            with anyio.fail_after(limit):
                response = await self._get_client().post(url, json=count_body, headers=self._headers)
        except TimeoutError as exc:
            if isinstance(exc, StreamIOError):
                raise
            raise StreamTimeoutError(
                f"the count took longer than {limit:g}s", phase="first_byte", timeout=limit
            ) from None
        except Exception as exc:
            found = transport_error(exc, where="counting tokens")
            if found is None:
                raise
            raise found from exc
        parsed = parse_body(response.content)
        if not 200 <= response.status_code < 300:
            raise ProviderHTTPError(
                f"count answered {response.status_code}: {error_summary(parsed)}",
                status=response.status_code,
                body=parsed,
                headers=dict(response.headers),
                content=response.content,
            )
        return counting.read(parsed)

    async def aclose(self) -> None:
        """Close the HTTP client if this upstream created it."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = self._poster = None


class _Response(contextlib.AbstractAsyncContextManager[Any]):
    """The response of an :func:`~maas_stream.io.aconnect` exchange, as a context manager.

    A slotted object around the exchange's own context manager: a generator-based one would
    add its generator, its frame and the loop's record of it to every idle stream.
    """

    __slots__ = ("_exchange",)

    def __init__(self, exchange: contextlib.AbstractAsyncContextManager[Any]) -> None:
        self._exchange = exchange

    async def __aenter__(self) -> Any:
        source = await self._exchange.__aenter__()
        return source.response

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._exchange.__aexit__(*exc)
