"""``aconnect``: open a provider stream with an httpx / httpx2 client, checked, like httpx-sse's ``aconnect_sse``.

It must not contain protocol logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import TYPE_CHECKING, Any

import anyio

from .._registry import get_protocol
from ._checks import check_response, transport_error
from ._exceptions import StreamTimeoutError, for_transport
from ._source import _loop_clock
from ._stream import aaggregate, aconvert, astream

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from .._drops import Dropped
    from .._model import Response
    from ..events import Event

__all__ = ["EventSource", "aconnect", "deadline"]


def deadline(seconds: float | None) -> asyncio.Timeout | _ScopeDeadline:
    """A time limit on the awaits of an ``async with`` block (``None``: none).

    When it runs out the block is cancelled and ``TimeoutError`` raised from it; ``expired()``
    tells that apart from a ``TimeoutError`` of the block's own. On asyncio (uvloop too) it is
    the standard library's ``asyncio.timeout``: one loop timer, where anyio's cancel scope
    looks the async backend up several times per use (sniffio, the current task). Elsewhere
    (trio) anyio's cancel scope.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _ScopeDeadline(seconds)
    return asyncio.timeout_at(None if seconds is None else loop.time() + seconds)


class _ScopeDeadline:
    """:func:`deadline` off asyncio: anyio's cancel scope, as ``asyncio.timeout`` behaves."""

    __slots__ = ("_scope",)

    def __init__(self, seconds: float | None) -> None:
        self._scope = anyio.CancelScope(
            deadline=math.inf if seconds is None else anyio.current_time() + seconds
        )

    async def __aenter__(self) -> _ScopeDeadline:
        self._scope.__enter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._scope.__exit__(*exc) and self._scope.cancelled_caught:
            raise TimeoutError from None

    def expired(self) -> bool:
        """Whether the limit ran out (and cancelled the block)."""
        return self._scope.cancelled_caught


class EventSource:
    """A checked, open provider stream (2xx, ``text/event-stream``), read once through one of its methods.

    Attributes:
        response: The transport's response (status, headers).
        protocol: The source protocol, or ``None`` to detect it.
        idle_timeout: Seconds allowed between two reads' data.
        total_timeout: Seconds left of the exchange's total timeout when the stream was handed over.
    """

    def __init__(
        self,
        response: Any,
        *,
        protocol: str | None,
        idle_timeout: float | None,
        total_timeout: float | None = None,
    ) -> None:
        self.response = response
        self.protocol = protocol
        self.idle_timeout = idle_timeout
        self.total_timeout = total_timeout

    def astream(self) -> AsyncGenerator[Event, None]:
        """Canonical events as they arrive (see :func:`maas_stream.astream`)."""
        return astream(
            self.response,
            protocol=self.protocol,
            idle_timeout=self.idle_timeout,
            total_timeout=self.total_timeout,
        )

    async def aaggregate(self) -> Response:
        """The final response (see :func:`maas_stream.aaggregate`)."""
        return await aaggregate(
            self.response,
            protocol=self.protocol,
            idle_timeout=self.idle_timeout,
            total_timeout=self.total_timeout,
        )

    def aconvert(
        self, to: str, *, lossy: list[Dropped] | None = None, **options: Any
    ) -> AsyncGenerator[bytes, None]:
        """The stream re-encoded as ``to`` (see :func:`maas_stream.aconvert`)."""
        return aconvert(
            self.response,
            to=to,
            protocol=self.protocol,
            idle_timeout=self.idle_timeout,
            total_timeout=self.total_timeout,
            lossy=lossy,
            **options,
        )


def aconnect(
    client: Any,
    method: str,
    url: str,
    *,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    first_byte_timeout: float | None = None,
    total_timeout: float | None = None,
    **kwargs: Any,
) -> contextlib.AbstractAsyncContextManager[EventSource]:
    """Open a streaming request and check the answer before handing it over.

    Usage::

        async with httpx.AsyncClient() as client:
            async with ms.io.aconnect(client, "POST", url, protocol="openai-chat", json=body,
                                      headers=auth) as source:
                async for event in source.astream():
                    ...

    Args:
        client: An ``httpx.AsyncClient`` or ``httpx2.AsyncClient``.
        method: The HTTP method.
        url: The URL.
        protocol: The source protocol; detected when ``None``. For SSE protocols an
            ``Accept: text/event-stream`` header is sent unless one is given.
        idle_timeout: Seconds allowed between two reads' data.
        first_byte_timeout: Seconds allowed from sending the request to the answer's status
            line and headers (connecting included).
        total_timeout: Seconds allowed for the whole exchange, from sending the request to the
            stream's last byte.
        **kwargs: Passed to ``client.stream`` (``json=``, ``headers=``, ``params=``...).

    Raises:
        ProviderHTTPError: A non-2xx answer; carries the status and the provider's body
            (parsed JSON when it is JSON).
        UnexpectedContentTypeError: A 2xx answer that is not ``text/event-stream``; carries the body.
        StreamTimeoutError: A timeout before the stream was handed over (``phase`` says which:
            ``connect``, ``pool``, ``first_byte``, ``total``).
        StreamTransportError: The connection could not be made or broke before the stream.
    """
    return _Connect(client, method, url, protocol, idle_timeout, first_byte_timeout, total_timeout, kwargs)


class _Connect(contextlib.AbstractAsyncContextManager[EventSource]):
    """The exchange of :func:`aconnect`, as a slotted context manager.

    Not a generator-based one, whose generator, frame and exit stack every idle stream would
    hold. The request's arguments (its body) are let go once it is sent.
    """

    __slots__ = ("_args", "_client", "_exchange", "_protocol", "_timeouts")

    def __init__(
        self,
        client: Any,
        method: str,
        url: str,
        protocol: str | None,
        idle_timeout: float | None,
        first_byte_timeout: float | None,
        total_timeout: float | None,
        kwargs: dict[str, Any],
    ) -> None:
        self._client = client
        self._args: tuple[str, str, dict[str, Any]] | None = (method, url, kwargs)
        self._protocol = protocol
        self._timeouts = (idle_timeout, first_byte_timeout, total_timeout)
        self._exchange: contextlib.AbstractAsyncContextManager[Any] | None = None

    async def __aenter__(self) -> EventSource:
        assert self._args is not None, "an aconnect exchange is entered once"
        (method, url, kwargs), self._args = self._args, None
        protocol, client = self._protocol, self._client
        idle_timeout, first_byte_timeout, total_timeout = self._timeouts
        headers = dict(kwargs.pop("headers", None) or {})
        if (protocol is None or get_protocol(protocol).framing == "sse") and not any(
            k.lower() == "accept" for k in headers
        ):
            headers["Accept"] = "text/event-stream"
        limits = [
            (t, phase) for t, phase in ((first_byte_timeout, "first_byte"), (total_timeout, "total")) if t
        ]
        timeout, phase = min(limits) if limits else (None, "")
        clock = _loop_clock()
        started = clock()
        exchange = client.stream(method, url, headers=headers, **kwargs)
        del kwargs  # (the body: sent, not held while the stream lasts)
        entered = False
        timer = deadline(timeout)
        try:
            try:
                async with timer:
                    try:
                        response = await exchange.__aenter__()
                        entered = True
                        await check_response(response, require_sse=True)
                    except Exception as exc:
                        mapped = transport_error(exc, where="before the provider's answer")
                        if mapped is None:
                            raise
                        raise mapped from exc
            except TimeoutError:
                if not timer.expired():
                    raise
                assert timeout is not None
                cls = for_transport(StreamTimeoutError, client)
                raise cls(
                    f"no answer from the provider within {timeout:g}s ({phase.replace('_', ' ')} timeout)",
                    phase=phase,
                    timeout=timeout,
                ) from None
        except BaseException as exc:
            if entered:
                await exchange.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._exchange = exchange
        left = None if total_timeout is None else max(total_timeout - (clock() - started), 0.0)
        return EventSource(response, protocol=protocol, idle_timeout=idle_timeout, total_timeout=left)

    async def __aexit__(self, *exc: Any) -> bool | None:
        exchange, self._exchange = self._exchange, None
        if exchange is None:
            return None
        return await exchange.__aexit__(*exc)
