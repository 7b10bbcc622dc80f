"""The async (and sync) entry points: astream, aaggregate, aconvert, stream, iter_convert.

Each reads one chunk (or websocket message), feeds it to the sans-IO pipeline
(:class:`~maas_stream.StreamAggregator`, or a message pipeline for websockets) and hands on what
came out before reading the next: pull-based, nothing buffered beyond the pipeline's own state.
The source is closed when the loop ends, when the consumer breaks out (``aclose()``, or the
generator is collected), on an error and on cancellation.

It must not contain protocol logic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._aggregate import Aggregator
from .._convert import StreamAggregator
from .._exceptions import LocalProtocolError, ProtocolError
from .._registry import detect_protocol, get_protocol
from ._source import AsyncReader, SyncReader

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

    from .._interfaces import StreamEncoder
    from .._model import Response
    from ..events import Event

__all__ = ["aaggregate", "aconvert", "astream", "iter_convert", "stream"]


class MessagePipeline:
    """Websocket messages in, canonical events out (the JSON-lines twin of StreamAggregator).

    Each message goes to the protocol decoder's ``feed_message`` as is: no re-framing.

    Args:
        protocol: The source protocol (a ``jsonl`` one); detected from the first message when ``None``.
        emit: Return canonical events from :meth:`feed`.

    Raises:
        LocalProtocolError: ``protocol`` is not a websocket (JSON-lines) protocol.
    """

    def __init__(self, protocol: str | None, *, emit: bool) -> None:
        self._emit = emit
        self._decoder: Any = None
        self._agg: Aggregator | None = None
        self.protocol = protocol
        if protocol is not None:
            self._start(protocol)

    def _start(self, protocol: str) -> None:
        spec = get_protocol(protocol)
        if spec.framing != "jsonl":
            raise LocalProtocolError(
                f"{protocol} is not a websocket protocol; a websocket source needs a JSON-lines protocol",
                protocol=protocol,
            )
        self.protocol = protocol
        self._decoder = spec.decoder()
        self._agg = Aggregator(protocol, emit=self._emit)

    def feed(self, msg: bytes | str) -> list[Event]:
        """Decode one server message; return canonical events if ``emit``.

        Raises:
            RemoteProtocolError: The message breaks the protocol (``exc.partial`` is set).
            ProtocolDetectionError: No protocol was given and the first message matches none.
        """
        if self._agg is None:
            raw = msg.encode() if isinstance(msg, str) else msg
            line = b'{"dir":"server","msg":' + raw + b"}\n"
            name = detect_protocol(line, final=True)
            assert name is not None
            self._start(name)
        agg = self._agg
        assert agg is not None
        try:
            return agg.feed_all(self._decoder.feed_message(msg, direction="server"))
        except ProtocolError as exc:
            exc.partial = agg.snapshot()
            raise

    def _require(self) -> Aggregator:
        if self._agg is None:  # nothing arrived: an empty websocket session
            raise LocalProtocolError("the websocket closed before its first message; nothing to decode")
        return self._agg

    def finish_events(self) -> list[Event]:
        """End the input; return the closing canonical events."""
        agg = self._require()
        return agg.feed_all(self._decoder.finish()) + agg.finish_events()

    def finish(self) -> Response:
        """The final response (after :meth:`finish_events`)."""
        return self._require().finish()


def _pipeline(kind: str, protocol: str | None, emit: bool) -> StreamAggregator | MessagePipeline:
    if kind == "messages":
        return MessagePipeline(protocol, emit=emit)
    return StreamAggregator(protocol, emit=emit)


def _feed(pipe: StreamAggregator | MessagePipeline, item: bytes | str) -> list[Event]:
    if isinstance(pipe, StreamAggregator) and isinstance(item, str):
        raise TypeError(
            "a byte stream yielded str; pass bytes (e.g. response.aiter_bytes(), not aiter_text())"
        )
    return pipe.feed(item)  # type: ignore[arg-type]


async def astream(
    source: Any, *, protocol: str | None = None, idle_timeout: float | None = None
) -> AsyncGenerator[Event, None]:
    """Yield canonical events as the provider's bytes arrive.

    Events carry canonical keys (message index, part index), as from
    ``StreamAggregator(emit=True)``. Breaking out of the loop, cancelling the consumer or an
    error closes the source; use ``contextlib.aclosing(ms.astream(...))`` to close it at once
    rather than when the generator is collected.

    Args:
        source: An httpx / httpx2 streaming response, an SDK raw streaming response, a
            websocket (JSON-lines protocols) or any ``AsyncIterable[bytes]``.
        protocol: The source protocol; detected from the first frames when ``None``.
        idle_timeout: Seconds allowed between two reads' data; ``None`` waits forever.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        UnexpectedContentTypeError: The response is a whole JSON document, not a stream.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        RemoteProtocolError: The bytes break the protocol (``exc.partial`` holds what came before).
    """
    reader = AsyncReader(source, idle_timeout=idle_timeout)
    try:
        pipe = _pipeline(reader.kind, protocol, emit=True)
        while (item := await reader.read()) is not None:
            for event in _feed(pipe, item):
                yield event
        for event in pipe.finish_events():
            yield event
    finally:
        await reader.aclose()


async def aaggregate(
    source: Any, *, protocol: str | None = None, idle_timeout: float | None = None
) -> Response:
    """Read a whole stream and return its final :class:`~maas_stream.Response`.

    Takes the same sources and raises the same errors as :func:`astream`.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        RemoteProtocolError: The bytes break the protocol.
    """
    reader = AsyncReader(source, idle_timeout=idle_timeout)
    try:
        pipe = _pipeline(reader.kind, protocol, emit=False)
        while (item := await reader.read()) is not None:
            _feed(pipe, item)
        pipe.finish_events()
        return pipe.finish()
    finally:
        await reader.aclose()


def _encode(encoder: StreamEncoder, events: list[Event]) -> bytes:
    if not events:
        return b""
    encode = encoder.encode
    return b"".join([encode(e) for e in events])


async def aconvert(
    source: Any,
    *,
    to: str,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    lossy: list[str] | None = None,
    **options: Any,
) -> AsyncGenerator[bytes, None]:
    """Yield the stream re-encoded as protocol ``to``, each output as soon as its input arrived.

    Args:
        source: As for :func:`astream`.
        to: The target protocol.
        protocol: The source protocol; detected when ``None``.
        idle_timeout: Seconds allowed between two reads' data.
        lossy: If given, receives a line for each thing the target could not carry.
        **options: Passed to the target's ``StreamEncoder``.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    encoder = get_protocol(to).encoder(**options)
    reader = AsyncReader(source, idle_timeout=idle_timeout)
    try:
        pipe = _pipeline(reader.kind, protocol, emit=True)
        while (item := await reader.read()) is not None:
            out = _encode(encoder, _feed(pipe, item))
            if out:
                yield out
        out = _encode(encoder, pipe.finish_events()) + encoder.finish()
        if out:
            yield out
    finally:
        if lossy is not None:
            lossy.extend(encoder.lossy)
        await reader.aclose()


def stream(source: Any, *, protocol: str | None = None) -> Generator[Event, None, None]:
    """The synchronous twin of :func:`astream` (an httpx / httpx2 response, ``Iterable[bytes]``...).

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        RemoteProtocolError: The bytes break the protocol.
    """
    reader = SyncReader(source)
    try:
        pipe = _pipeline(reader.kind, protocol, emit=True)
        while (item := reader.read()) is not None:
            yield from _feed(pipe, item)
        yield from pipe.finish_events()
    finally:
        reader.close()


def iter_convert(
    source: Any, *, to: str, protocol: str | None = None, lossy: list[str] | None = None, **options: Any
) -> Generator[bytes, None, None]:
    """The synchronous twin of :func:`aconvert`.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    encoder = get_protocol(to).encoder(**options)
    reader = SyncReader(source)
    try:
        pipe = _pipeline(reader.kind, protocol, emit=True)
        while (item := reader.read()) is not None:
            out = _encode(encoder, _feed(pipe, item))
            if out:
                yield out
        out = _encode(encoder, pipe.finish_events()) + encoder.finish()
        if out:
            yield out
    finally:
        if lossy is not None:
            lossy.extend(encoder.lossy)
        reader.close()
