"""The async (and sync) entry points: astream, aaggregate, aconvert, stream, iter_convert.

Each reads one chunk (or websocket message), feeds it to the sans-IO pipeline
(:class:`~maas_stream.StreamAggregator` / :class:`~maas_stream.StreamConverter`: bytes, or whole
websocket messages through their ``feed_message``) and hands on what
came out before reading the next: pull-based, nothing buffered beyond the pipeline's own state.
The source is closed when the loop ends, when the consumer breaks out (``aclose()``, or the
generator is collected), on an error and on cancellation.

It must not contain protocol logic.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from .._convert import StreamConverter
from .._exceptions import ConversionError, RemoteProtocolError
from .._model import StreamError
from .._stream_aggregator import StreamAggregator
from ._exceptions import (
    IncompleteStreamError,
    ProviderHTTPError,
    StreamIOError,
    StreamTimeoutError,
    UnexpectedContentTypeError,
)
from ._kinds import SyncReader
from ._relay import RelayReader
from ._source import AsyncReader

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable, Generator

    from .._drops import Dropped
    from .._model import Response
    from ..events import Event

__all__ = ["aaggregate", "aconvert", "aconvert_into", "astream", "iter_convert", "stream"]

_BURST = 32
"""Reads converted and written without waiting for the source before the relay yields (fairness)."""
_BATCH = 16 * 1024
"""Bytes :func:`aaggregate` reads before feeding them to the pipeline at once (no one reads its
events as they come, so only the final response's content counts, not when each chunk is fed)."""
_SLICE = 4096
"""Bytes of one read converted before the reading side yields to the other streams (fairness: a
read holding a whole burst of frames is converted a slice at a time, cut after a line end)."""


def _check(kind: str, item: bytes | str) -> bytes | str:
    if kind != "messages" and isinstance(item, str):
        raise TypeError(
            "a byte stream yielded str; pass bytes (e.g. response.aiter_bytes(), not aiter_text())"
        )
    return item


def _feed(pipe: StreamAggregator, kind: str, item: bytes | str) -> list[Event]:
    # A websocket delivers whole messages; everything else delivers bytes to frame.
    if kind == "messages":
        return pipe.feed_message(item)
    return pipe.feed(_check(kind, item))  # type: ignore[arg-type]


def _convert(conv: StreamConverter, kind: str, item: bytes | str) -> bytes:
    if kind == "messages":
        return conv.feed_message(item)
    return conv.feed(_check(kind, item))  # type: ignore[arg-type]


def stream_error(exc: StreamIOError | RemoteProtocolError | ConversionError) -> StreamError:
    """The canonical error that stands for a source failure in the output (an in-band error).

    A timeout is a ``timeout_error`` (code ``504``); a broken connection, a cut stream, invalid
    bytes or a conversion that must fail closed an ``api_error`` (code ``502``): the upstream
    failed, not the client.
    """
    if isinstance(exc, StreamTimeoutError):
        return StreamError(type="timeout_error", message=f"upstream timeout: {exc}", code="504")
    if isinstance(exc, RemoteProtocolError):
        what = f"the upstream sent an invalid stream: {exc}"
    elif isinstance(exc, ConversionError):
        what = f"the upstream stream cannot be converted: {exc}"
    else:
        what = f"the upstream stream failed: {exc}"
    return StreamError(type="api_error", message=what, code="502")


def _cut_error(conv: StreamConverter, received: int) -> IncompleteStreamError:
    what = f"after {received} bytes" if received else "before any byte"
    return IncompleteStreamError(
        f"the {conv.protocol or 'upstream'} stream ended {what}, without the provider's final event (cut)",
        received=received,
    )


def _finish(conv: StreamConverter, received: int) -> bytes:
    """The conversion's last output once the source has ended.

    Raises:
        IncompleteStreamError: The source ended before its provider's final event; it carries
            the target's in-band error (``error_frame``) and the ``failed`` response.
    """
    cut = _cut_error(conv, received)
    error = stream_error(cut)
    out = conv.finish(cut=error)
    if conv.response is not None and conv.response.error is error:
        cut.error_frame, cut.partial = out, conv.response
        raise cut
    return out


def _failed(conv: StreamConverter, exc: StreamIOError | RemoteProtocolError | ConversionError) -> None:
    """Give a source failure the target's in-band error frame (and, for IO, the partial response)."""
    if not exc.error_frame:  # a cut comes with its frame already
        exc.error_frame = conv.fail(stream_error(exc))
        if isinstance(exc, StreamIOError):
            exc.partial = conv.response


async def astream(
    source: Any,
    *,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    total_timeout: float | None = None,
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
        total_timeout: Seconds allowed for the whole stream; ``None`` waits forever.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        UnexpectedContentTypeError: The response is a whole JSON document, not a stream.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        StreamTimeoutError: The stream took longer than ``total_timeout``.
        StreamTransportError: The connection broke; ``exc.partial`` holds what came before.
        RemoteProtocolError: The bytes break the protocol (``exc.partial`` holds what came before).
    """
    reader = AsyncReader(source, idle_timeout=idle_timeout, total_timeout=total_timeout)
    pipe = StreamAggregator(protocol, emit=True)
    try:
        while (item := await reader.read()) is not None:
            for event in _feed(pipe, reader.kind, item):
                yield event
        for event in pipe.finish_events():
            yield event
    except StreamIOError as exc:
        pipe.fail(stream_error(exc))
        exc.partial = pipe.finish()
        raise
    finally:
        await reader.aclose()


async def aaggregate(
    source: Any,
    *,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    total_timeout: float | None = None,
) -> Response:
    """Read a whole stream and return its final :class:`~maas_stream.Response`.

    Takes the same sources and raises the same errors as :func:`astream`. A stream that ends
    cleanly but early (no final event) is a result: an ``incomplete`` response.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        StreamTimeoutError: The stream took longer than ``total_timeout``.
        StreamTransportError: The connection broke; ``exc.partial`` is the ``failed`` response
            built from everything received before.
        RemoteProtocolError: The bytes break the protocol.
    """
    reader = AsyncReader(source, idle_timeout=idle_timeout, total_timeout=total_timeout)
    pipe = StreamAggregator(protocol)

    async def read_messages() -> None:
        while (item := await reader.read()) is not None:
            pipe.feed_message(item)

    try:
        if reader.kind == "messages":
            await reader.watch(read_messages)
        else:
            # Bytes are fed in batches of _BATCH (the decoders do not care where the bytes are
            # cut): the pipeline's cost per call is paid per batch, not per chunk; everything
            # read before a failure is fed before it is raised.
            await reader.watch(lambda: reader.drain(pipe.feed, _BATCH))
        pipe.finish_events()
        return pipe.finish()
    except StreamIOError as exc:
        pipe.fail(stream_error(exc))
        exc.partial = pipe.finish()
        raise
    finally:
        await reader.aclose()


async def aconvert(
    source: Any,
    *,
    to: str,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    total_timeout: float | None = None,
    lossy: list[Dropped] | None = None,
    yield_error: bool = True,
    final: list[Response] | None = None,
    **options: Any,
) -> AsyncGenerator[bytes, None]:
    """Yield the stream re-encoded as protocol ``to``, each output as soon as its input arrived.

    Failure is always visible: when the source fails (the connection breaks, it stalls past a
    timeout, its bytes break the protocol, or it ends before the provider's final event), the
    output ends with ``to``'s own in-band error (a Chat error chunk, an Anthropic ``error``
    event, a Responses ``error`` + ``response.failed``, a Gemini error object: each SDK raises
    on it), yielded as the last frame, and then the error is raised with ``exc.error_frame``
    (that last frame) and, for an IO error, ``exc.partial`` (the ``failed`` response). A caller
    that forwards every frame has forwarded the error before it sees the exception.

    Args:
        source: As for :func:`astream`.
        to: The target protocol.
        protocol: The source protocol; detected when ``None``.
        idle_timeout: Seconds allowed between two reads' data.
        total_timeout: Seconds allowed for the whole stream.
        lossy: If given, receives a line for each thing the target could not carry.
        yield_error: Yield the in-band error frame before raising (the default). When false it
            is only put on the exception (``exc.error_frame``), for a caller that may still
            answer with an HTTP error status instead.
        final: If given, receives the source's final :class:`~maas_stream.Response` (its usage,
            its unknown types) when the stream has ended.
        **options: Passed to the target's ``StreamEncoder``.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        StreamTimeoutError: The stream took longer than ``total_timeout``.
        StreamTransportError: The connection broke.
        IncompleteStreamError: The source ended before its provider's final event (SSE protocols).
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    conv = StreamConverter(to, protocol=protocol, **options)
    reader = AsyncReader(source, idle_timeout=idle_timeout, total_timeout=total_timeout)
    try:
        try:
            while (item := await reader.read()) is not None:
                out = _convert(conv, reader.kind, item)
                if out:
                    yield out
            out = _finish(conv, reader.received)
            if out:
                yield out
        except (ProviderHTTPError, UnexpectedContentTypeError):
            raise  # refused before any stream: the caller answers with a status
        except (StreamIOError, RemoteProtocolError, ConversionError) as exc:
            _failed(conv, exc)
            if yield_error and exc.error_frame:
                yield exc.error_frame
            raise
    finally:
        if lossy is not None:
            lossy.extend(conv.lossy)
        if final is not None and conv.response is not None:
            final.append(conv.response)
        await reader.aclose()


async def aconvert_into(
    source: Any,
    write: Callable[[bytes], Awaitable[None]],
    *,
    to: str,
    protocol: str | None = None,
    idle_timeout: float | None = None,
    total_timeout: float | None = None,
    lossy: list[Dropped] | None = None,
    final: list[Response] | None = None,
    write_now: Callable[[bytes], bool] | None = None,
    **options: Any,
) -> None:
    """Convert like :func:`aconvert`, handing the output to ``write`` instead of yielding it.

    For a server relaying a stream (the bridge): the output of each read is written at once,
    inline (no writer task: an idle stream holds nothing but its reader and converter), so a
    burst the transport hands over in one read is one ``write``, and a slow client makes the
    relay wait before it reads on (backpressure, nothing buffered). A read larger than
    ``_SLICE`` bytes is converted and written a slice at a time, and after ``_BURST`` reads
    that did not wait the relay yields, so that other streams are served too. The idle and
    total timeouts cost O(1) per stream (see :class:`~._source.AsyncReader`); only the time
    spent waiting for the source counts, not the time spent writing.

    On a failure nothing more is written: everything converted before it has been written, and
    the error is raised with ``exc.error_frame`` (the target's in-band error, for the caller to
    write or to answer with an HTTP status instead) and, for an IO error, ``exc.partial``.

    Args:
        source: As for :func:`astream`.
        write: Awaited with each piece of output, in order.
        to: The target protocol.
        protocol: The source protocol; detected when ``None``.
        idle_timeout: Seconds allowed between two reads' data.
        total_timeout: Seconds allowed for the whole stream.
        lossy: If given, receives a line for each thing the target could not carry.
        final: If given, receives the source's final :class:`~maas_stream.Response`.
        write_now: Optional: writes a piece at once and returns ``True``, or returns ``False``
            having written nothing (``write`` is then awaited with it). With it, a source that
            hands its chunks over as they arrive (the bridge's upstream transport) has them
            converted and written in a callback of its own, without waking the task, after the
            first output (written through ``write``, ``_relay``).
        **options: Passed to the target's ``StreamEncoder``.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        IdleTimeoutError: The provider stalled longer than ``idle_timeout``.
        StreamTimeoutError: The stream took longer than ``total_timeout``.
        StreamTransportError: The connection broke.
        IncompleteStreamError: The source ended before its provider's final event (SSE protocols).
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
        Exception: What ``write`` or ``write_now`` raised.
    """
    conv = StreamConverter(to, protocol=protocol, **options)
    del options  # (not held while the stream lasts)
    reader = RelayReader(source, idle_timeout=idle_timeout, total_timeout=total_timeout)
    # The relay is inline (no closure, no coroutine of its own: less per idle stream). Each
    # read is timed by the reader itself: by the loop's timer on asyncio (a byte stream is
    # read in one loop over its iterator: RelayReader.relay), by one cancel scope per read
    # elsewhere (no watchdog task).
    kind, checkpoint = reader.kind, anyio.lowlevel.checkpoint
    turn = 0
    try:
        try:
            if reader.relays():
                await reader.relay(
                    conv.feed,
                    write,
                    partial(_sliced, conv, write),
                    size=_SLICE,
                    burst=_BURST,
                    write_now=write_now,
                )
            else:
                while (item := await reader.read()) is not None:
                    if len(item) > _SLICE and kind == "bytes":
                        await _sliced(conv, write, item)  # type: ignore[arg-type]
                        continue
                    out = _convert(conv, kind, item)
                    if out:
                        await write(out)
                    item = out = b""  # neither is held while the next read waits
                    turn += 1
                    if turn >= _BURST:
                        # A source and a client that never make the relay wait would hold the loop.
                        turn = 0
                        await checkpoint()
            out = _finish(conv, reader.received)
            if out:
                await write(out)
        except (ProviderHTTPError, UnexpectedContentTypeError):
            raise  # refused before any stream: the caller answers with a status
        except (StreamIOError, RemoteProtocolError, ConversionError) as exc:
            _failed(conv, exc)
            raise
    finally:
        if lossy is not None:
            lossy.extend(conv.lossy)
        if final is not None and conv.response is not None:
            final.append(conv.response)
        await reader.aclose()


def stream(source: Any, *, protocol: str | None = None) -> Generator[Event, None, None]:
    """The synchronous twin of :func:`astream` (an httpx / httpx2 response, ``Iterable[bytes]``...).

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        RemoteProtocolError: The bytes break the protocol.
    """
    reader = SyncReader(source)
    try:
        pipe = StreamAggregator(protocol, emit=True)
        while (item := reader.read()) is not None:
            yield from _feed(pipe, reader.kind, item)
        yield from pipe.finish_events()
    finally:
        reader.close()


def iter_convert(
    source: Any, *, to: str, protocol: str | None = None, lossy: list[Dropped] | None = None, **options: Any
) -> Generator[bytes, None, None]:
    """The synchronous twin of :func:`aconvert`.

    Raises:
        ProviderHTTPError: The response's status is not 2xx; carries the provider's body.
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    conv = StreamConverter(to, protocol=protocol, **options)
    reader = SyncReader(source)
    try:
        while (item := reader.read()) is not None:
            out = _convert(conv, reader.kind, item)
            if out:
                yield out
        out = conv.finish()
        if out:
            yield out
    finally:
        if lossy is not None:
            lossy.extend(conv.lossy)
        reader.close()


async def _sliced(conv: StreamConverter, write: Callable[[bytes], Awaitable[None]], item: bytes) -> None:
    """Convert and write one read holding many frames (a burst) a slice at a time.

    It yields between slices: no stream holds the loop for a whole burst while others wait. (A
    module function, not a closure of :func:`aconvert_into`: nothing per idle stream.)
    """
    start, end = 0, len(item)
    while start < end:
        cut = item.find(b"\n", start + _SLICE) + 1 or end
        out = conv.feed(item[start:cut] if start or cut < end else item)
        start = cut
        if out:
            await write(out)
        if start < end:
            await anyio.lowlevel.checkpoint()
