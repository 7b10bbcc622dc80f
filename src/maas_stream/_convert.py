"""Sans-IO pipelines: decode → aggregate → final response, or → re-encode as another protocol.

:class:`StreamAggregator` and :class:`StreamConverter` take bytes in chunks of any size and
detect the source protocol when it is not given. The one-shot functions :func:`aggregate` and
:func:`convert` wrap them for whole inputs. History conversion (:func:`to_canonical`,
:func:`from_canonical`, :func:`convert_history`, :func:`validate`) dispatches to the protocol
modules.

It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._aggregate import Aggregator
from ._exceptions import ProtocolDetectionError, ProtocolError
from ._model import Message, Response
from ._registry import detect_protocol, get_protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._interfaces import StreamDecoder, StreamEncoder
    from .events import Event

__all__ = [
    "StreamAggregator",
    "StreamConverter",
    "aggregate",
    "convert",
    "convert_history",
    "from_canonical",
    "to_canonical",
    "validate",
]

_DETECT_LIMIT = 1024 * 1024


class StreamAggregator:
    """Bytes in, canonical events and a final :class:`~maas_stream.Response` out.

    Usage::

        agg = StreamAggregator("anthropic")
        for chunk in chunks:
            agg.feed(chunk)            # canonical events, if emit=True
            partial = agg.snapshot()   # whenever you like
        response = agg.finish()

    Args:
        protocol: The source protocol; detected from the first frames when ``None``.
        emit: Return canonical events from :meth:`feed` (for a live view or an encoder).
    """

    def __init__(self, protocol: str | None = None, *, emit: bool = False) -> None:
        self._emit = emit
        self._head: list[bytes] = []
        self._head_size = 0
        self._decoder: StreamDecoder | None = None
        self._agg: Aggregator | None = None
        self._ended = False
        self.protocol: str | None = None
        """The source protocol (``None`` until detected)."""
        if protocol is not None:
            self._start(protocol)

    def _start(self, protocol: str) -> None:
        spec = get_protocol(protocol)
        self.protocol = protocol
        self._decoder = spec.decoder()
        self._agg = Aggregator(protocol, emit=self._emit)

    @property
    def aggregator(self) -> Aggregator:
        """The underlying aggregator (for its counters).

        Raises:
            ProtocolDetectionError: The protocol is not known yet.
        """
        if self._agg is None:
            raise ProtocolDetectionError("the protocol has not been detected yet")
        return self._agg

    @property
    def frames(self) -> int:
        """How many frames were decoded so far."""
        return self._decoder.frames if self._decoder is not None else 0

    def feed(self, data: bytes) -> list[Event]:
        """Feed a chunk of bytes; return canonical events if ``emit``, else an empty list.

        Raises:
            RemoteProtocolError: The bytes break the protocol; ``exc.partial`` holds the
                response as it stood before the bad frame.
            ProtocolDetectionError: The protocol was not given and cannot be detected.
        """
        if self._decoder is None:
            self._head.append(data)
            self._head_size += len(data)
            head = b"".join(self._head)
            name = detect_protocol(head, final=self._head_size > _DETECT_LIMIT)
            if name is None:
                return []
            self._head = []
            self._start(name)
            data = head
        return self._apply(data)

    def _apply(self, data: bytes) -> list[Event]:
        decoder = self._decoder
        agg = self._agg
        assert decoder is not None
        assert agg is not None
        try:
            events = decoder.feed(data)
            if len(events) == 1:
                return agg.feed(events[0])
            out: list[Event] = []
            for event in events:
                out += agg.feed(event)
            return out
        except ProtocolError as exc:
            exc.partial = agg.snapshot()
            raise

    def snapshot(self) -> Response:
        """The response as it stands (state is not changed)."""
        if self._agg is None:
            return Response(protocol=self.protocol or "unknown", status="in_progress")
        return self._agg.snapshot()

    def finish_events(self) -> list[Event]:
        """End the input; return the last canonical events (closing what is still open).

        Raises:
            ProtocolDetectionError: Nothing arrived from which to tell the protocol.
        """
        self._ended = True
        if self._decoder is None:
            head = b"".join(self._head)
            self._head = []
            name = detect_protocol(head, final=True)
            assert name is not None
            self._start(name)
            self._apply(head)
        decoder = self._decoder
        agg = self._agg
        assert decoder is not None
        assert agg is not None
        try:
            out = agg.feed_all(decoder.finish())
        except ProtocolError as exc:
            exc.partial = agg.snapshot()
            raise
        if decoder.truncated:
            agg.warn("the stream ended inside a frame; that partial frame was dropped")
        for warning in getattr(decoder, "warnings", ()):
            agg.warn(warning)  # decoder-level findings, e.g. Responses sequence gaps
        return out + agg.finish_events()

    def finish(self) -> Response:
        """End the input and return the final response.

        Raises:
            ProtocolDetectionError: Nothing arrived from which to tell the protocol.
        """
        if not self._ended:
            self.finish_events()
        assert self._agg is not None
        return self._agg.finish()


class StreamConverter:
    """Re-encode a stream as another protocol, as it goes.

    Each :meth:`feed` returns the output bytes its input completed, before the next input is
    read (except where the target grammar forces a hold).

    Args:
        to: The target protocol.
        protocol: The source protocol; detected when ``None``.
        **options: Passed to the target's ``StreamEncoder``.
    """

    def __init__(self, to: str, *, protocol: str | None = None, **options: Any) -> None:
        self._source = StreamAggregator(protocol, emit=True)
        self._encoder: StreamEncoder = get_protocol(to).encoder(**options)
        self.target = to
        self.response: Response | None = None
        """The source's final response, set by :meth:`finish`."""

    @property
    def lossy(self) -> list[str]:
        """What the target could not carry and was dropped (never turned into text)."""
        return self._encoder.lossy

    @property
    def protocol(self) -> str | None:
        """The source protocol (``None`` until detected)."""
        return self._source.protocol

    def feed(self, data: bytes) -> bytes:
        """Feed source bytes; return the target bytes they complete."""
        events = self._source.feed(data)
        if not events:
            return b""
        encode = self._encoder.encode
        return b"".join([encode(e) for e in events])

    def finish(self) -> bytes:
        """End the source; return the last target bytes."""
        encode = self._encoder.encode
        out = b"".join([encode(e) for e in self._source.finish_events()])
        self.response = self._source.finish()
        return out + self._encoder.finish()


def _chunks(data: bytes | Iterable[bytes]) -> Iterable[bytes]:
    if isinstance(data, bytes | bytearray | memoryview):
        return (bytes(data),)
    return data


def aggregate(data: bytes | Iterable[bytes], *, protocol: str | None = None) -> Response:
    """Aggregate a whole stream into its final :class:`~maas_stream.Response`.

    Args:
        data: The stream's bytes, whole or as an iterable of chunks.
        protocol: The source protocol; detected from the first frames when ``None``.

    Raises:
        RemoteProtocolError: The bytes break the protocol (``exc.frame`` names the frame and
            ``exc.partial`` holds what was aggregated before it).
        ProtocolDetectionError: ``protocol`` was not given and could not be detected.
    """
    agg = StreamAggregator(protocol)
    for chunk in _chunks(data):
        agg.feed(chunk)
    return agg.finish()


def convert(data: bytes | Iterable[bytes], *, to: str, protocol: str | None = None, **options: Any) -> bytes:
    """Re-encode a whole stream as protocol ``to``; return the output bytes.

    Raises:
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    conv = StreamConverter(to, protocol=protocol, **options)
    out = [conv.feed(chunk) for chunk in _chunks(data)]
    out.append(conv.finish())
    return b"".join(out)


def to_canonical(body: Any, protocol: str) -> list[Message]:
    """Convert a request body (or history) of ``protocol`` to canonical messages."""
    return get_protocol(protocol).to_canonical(body)


def from_canonical(
    messages: list[Message], protocol: str, *, lossy: list[str] | None = None
) -> dict[str, Any]:
    """Convert canonical messages to a request body of ``protocol``.

    Args:
        messages: The conversation.
        protocol: The target protocol.
        lossy: If given, collects a line for each thing the target cannot carry.
    """
    return get_protocol(protocol).from_canonical(messages, lossy=lossy)


def convert_history(body: Any, *, to: str, protocol: str, lossy: list[str] | None = None) -> dict[str, Any]:
    """Convert a request body from ``protocol`` to ``to`` through the canonical model."""
    return from_canonical(to_canonical(body, protocol), to, lossy=lossy)


def validate(body: Any, protocol: str) -> list[str]:
    """Check a request body against ``protocol``'s rules; return every fault (empty when valid).

    Each fault names the offending message index and, where one is involved, the call id.
    """
    return get_protocol(protocol).validate(body)
