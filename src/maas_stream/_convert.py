"""Sans-IO pipelines: decode → aggregate → final response, or → re-encode as another protocol.

:class:`StreamAggregator` and :class:`StreamConverter` take bytes in chunks of any size and
detect the source protocol when it is not given (``_registry.Detector``: each byte scanned once).
The one-shot functions :func:`aggregate` and :func:`convert` wrap them for whole inputs;
:func:`aggregate_session` and :func:`convert_session` give a session's responses one by one
(``_split``). Request and response bodies are ``_bodies``'s.

Also here, once for every protocol: the fail-closed rule for unknown types that carry
continuation state, and the end of a failed or cut source as the target's in-band error.

It must not do IO.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from ._drops import DropLog, Dropped
from ._emit import EmittingAggregator
from ._exceptions import (
    ConversionError,
)
from ._model import Response, Session, StreamError, UnknownPart
from ._registry import get_protocol
from ._split import Splitter
from ._stream_aggregator import StreamAggregator, aggregate_session, chunks_of
from .events import (
    PartStart,
    UnknownEvent,
)
from .protocols._base import EventEncoder

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._interfaces import StreamEncoder
    from .events import Event

__all__ = [
    "StreamConverter",
    "continuation_key",
    "convert",
    "convert_session",
]

log = logging.getLogger("maas_stream")

# Shared empty values: an idle converter holds no empty containers of its own.
_NO_OPTIONS: Final[dict[str, Any]] = {}
_NO_STREAMS: Final[list[list[bytes]]] = []  # (never added to: replaced by a list of its own)
_MAY_CARRY_UNKNOWN: Final = frozenset((UnknownEvent, PartStart))
"""The event types ``fail_closed`` looks into (``_check_unknown``; events are final Structs)."""


_CONTINUATION_KEYS: Final = frozenset(
    {
        "signature",
        "thought_signature",
        "thoughtSignature",
        "encrypted_content",
        "encrypted_index",
        "call_id",
        "tool_use_id",
        "tool_call_id",
    }
)


def continuation_key(raw: Any, depth: int = 0) -> str | None:
    """The first key in ``raw`` that the next turn needs back unchanged, if any.

    That is a signature, encrypted content or a call id, searched three levels deep.
    """
    if depth > 3:
        return None
    if isinstance(raw, dict):
        for key, value in raw.items():
            if key in _CONTINUATION_KEYS and value:
                return str(key)
        for value in raw.values():
            found = continuation_key(value, depth + 1)
            if found:
                return found
    elif isinstance(raw, list):
        for value in raw[:50]:
            found = continuation_key(value, depth + 1)
            if found:
                return found
    return None


def _drop_count(encoder: StreamEncoder) -> int:
    """How many distinct drops ``encoder`` recorded, without making a log it makes on first use."""
    return encoder.dropped() if isinstance(encoder, EventEncoder) else len(encoder.drops)


class StreamConverter:
    """Re-encode a stream as another protocol, as it goes.

    Each :meth:`feed` returns the output bytes its input completed, before the next input is
    read (except where the target grammar forces a hold).

    Unknown types pass through untouched to the same protocol. Converting to another protocol,
    an unknown type that carries continuation state (a signature, encrypted content, a call id)
    fails closed with :class:`~maas_stream.ConversionError`; other unknown types are dropped and
    listed in :attr:`lossy`.

    Args:
        to: The target protocol.
        protocol: The source protocol; detected when ``None``.
        fail_closed: Raise on unknown types with continuation state (see above). Set it to
            false to drop and report them instead.
        **options: Passed to the target's ``StreamEncoder``.
    """

    __slots__ = (
        "_cancelled",
        "_encoder",
        "_logged",
        "_options",
        "_source",
        "_split",
        "_streams",
        "fail_closed",
        "response",
        "session",
        "target",
    )  # (no per-stream ``__dict__``: thousands of idle streams)

    def __init__(
        self, to: str, *, protocol: str | None = None, fail_closed: bool = True, **options: Any
    ) -> None:
        self._source = StreamAggregator(protocol, emit=True)
        self._options: dict[str, Any] | None = options or _NO_OPTIONS
        """The target encoder's options, for a session's later responses (:class:`Splitter`);
        ``None`` once the first events showed one response per stream (no further encoder)."""
        self._encoder: StreamEncoder = get_protocol(to).encoder(**options)
        self._logged = 0
        self._split: Splitter | None = None
        self._cancelled: frozenset[str] | None = None
        """Ids of calls the whole input cancels later, when the caller takes every stream
        (``convert_session``, which knows them up front): no response is lost. ``None``: one
        stream is taken."""
        self.target = to
        self.fail_closed = fail_closed
        self.response: Response | None = None
        """The source's final response, set by :meth:`finish`."""
        self.session: Session | None = None
        """The source's final session (its responses apart), set by :meth:`finish`."""
        self._streams: list[list[bytes]] = _NO_STREAMS
        """The output chunks of each target stream (joined when :attr:`streams` is read), kept
        only when they are several or the caller takes them all (see :attr:`streams`)."""

    @property
    def streams(self) -> list[bytes]:
        """The target streams written so far of a session converted to a one-response protocol.

        Converting a session to a one-response protocol gives the stream of each response, in
        order. :meth:`feed` and :meth:`finish` return the first (one stream holds one response;
        each later one is a ``message`` drop of that single stream). Complete after
        :meth:`finish`. Any other conversion writes one stream, the bytes :meth:`feed` and
        :meth:`finish` return, and keeps no copy of it (a converter's memory does not grow
        with its output): the list is then empty (:func:`convert_session` gives that stream).
        """
        return [b"".join(chunks) for chunks in self._streams]

    @property
    def lossy(self) -> list[Dropped]:
        """What the target could not carry and was dropped (never turned into text), as records."""
        split = self._split
        if split is None or not split.drops:
            return self._encoder.drops.records
        merged = DropLog(self.target, self._source.protocol)
        merged.extend(split.drops.records)
        merged.extend(self._encoder.drops.records)
        return merged.records

    @property
    def protocol(self) -> str | None:
        """The source protocol (``None`` until detected)."""
        return self._source.protocol

    @property
    def recognised(self) -> bool:
        """Whether anything of the source protocol arrived (see :attr:`StreamAggregator.recognised`)."""
        return self._source.recognised

    @property
    def frames(self) -> int:
        """How many source frames were decoded so far."""
        return self._source.frames

    def feed_message(self, msg: bytes | str, *, direction: str = "server") -> bytes:
        """Feed one whole websocket message of the source; return the target bytes it completes.

        Raises:
            LocalProtocolError: The source is not a websocket (JSON-lines) protocol.
            RemoteProtocolError: The message breaks the source protocol.
            ConversionError: An unknown type with continuation state cannot cross protocols.
        """
        events = self._source.feed_message(msg, direction=direction)
        if not events:
            return b""
        return self._encode(events)

    def feed(self, data: bytes) -> bytes:
        """Feed source bytes; return the target bytes they complete.

        Raises:
            RemoteProtocolError: The source bytes break their protocol.
            ConversionError: An unknown type with continuation state cannot cross protocols.
        """
        events = self._source.feed(data)
        if not events:
            return b""
        return self._encode(events)

    def _encode(self, events: list[Event]) -> bytes:
        source = self._source.protocol
        if self._split is None and self._options is not None and source is not None:
            self._one_or_many(source)
        if self.fail_closed and self.target != source:
            for event in events:
                if type(event) in _MAY_CARRY_UNKNOWN:
                    self._check_unknown(event)
        if self._split is not None:
            out = self._split.encode(events)  # (it leaves out session and client frames)
        else:
            encode = self._encoder.encode
            out = encode(events[0]) if len(events) == 1 else b"".join([encode(e) for e in events])
            if out and self._cancelled is not None:
                out = self._output(out)
        if self._split is not None or _drop_count(self._encoder) > self._logged:
            self._log_lossy()  # (the common case, per chunk: nothing new dropped, no records built)
        return out

    def _one_or_many(self, source: str) -> None:
        """Decide, at the first events, how the source's responses become target streams.

        A session's responses are split into streams (:class:`Splitter`); one response is
        encoded as it comes (the options are then no longer needed).
        """
        if get_protocol(source).framing == "jsonl" and get_protocol(self.target).framing != "jsonl":
            self._split = Splitter(self)
            return
        self._options = None  # (decided: the slot doubles as the mark, one less per stream)
        agg = self._source.aggregator
        if isinstance(self._encoder, EventEncoder) and isinstance(agg, EmittingAggregator):
            # One response, folded before the encoder gets each event: the encoder reads the
            # parts' text from the aggregator rather than keeping it twice.
            self._encoder.read_text_from(agg)

    def _output(self, out: bytes) -> bytes:
        """Keep target bytes in :attr:`streams`; return what the single output stream gets.

        One target stream holds one response: a session's later responses are only in
        :attr:`streams` (and listed as a ``message`` drop of the single stream).
        """
        if self._split is None and self._cancelled is None:
            return out  # one stream, which the caller has: no copy kept
        streams = self._streams
        if streams is _NO_STREAMS:
            streams = self._streams = [[]]
        streams[-1].append(out)
        return out if len(streams) == 1 else b""

    def _next_stream(self) -> None:
        """Start the next target stream of :attr:`streams` (a session's next response)."""
        if self._streams is _NO_STREAMS:
            self._streams = []
        self._streams.append([])

    def _log_lossy(self) -> None:
        # Each distinct drop is logged once, when it first happens (later ones only count).
        split = self._split
        if _drop_count(self._encoder) + (len(split.drops) if split is not None else 0) <= self._logged:
            return  # nothing new (records are not built)
        records = self.lossy
        if len(records) <= self._logged:
            return
        for rec in records[self._logged :]:
            log.warning("%s -> %s: dropped %s", self._source.protocol, self.target, rec.what)
        self._logged = len(records)

    def _check_unknown(self, event: Event) -> None:
        if isinstance(event, UnknownEvent):
            if event.passthrough:
                return
            ptype, raw = event.provider_type, event.raw
        elif isinstance(event, PartStart) and isinstance(event.value, UnknownPart):
            ptype, raw = event.value.provider_type, event.value.raw
        else:
            return
        source = self._source.protocol
        if source is not None and ptype in get_protocol(source).replay_only:
            return  # understood state only the source can replay: dropped and reported
        key = continuation_key(raw)
        if key is not None:
            raise ConversionError(
                f"unknown {self._source.protocol} type {ptype!r} carries {key!r}, which the next turn needs "
                f"back unchanged; {self.target} cannot carry it (pass fail_closed=False to drop it)",
                protocol=self._source.protocol,
                event_type=ptype,
                raw=raw,
            )

    def finish(self, *, cut: StreamError | None = None) -> bytes:
        """End the source; return the last target bytes.

        Args:
            cut: When given, a source that ended without its provider's final event (a cut
                HTTP stream; a websocket session may end between turns, so only SSE sources
                are judged) ends the output with this error instead (see :meth:`fail`).
        """
        source = self._source
        out = self._encode(source.finish_events())
        if cut is not None and not source.ended and source.protocol is not None:
            if get_protocol(source.protocol).framing == "sse":
                return out + self.fail(cut)
        self.response = source.finish()
        last = self._encoder.finish()
        if last and self._split is None:
            last = self._output(last)  # the end of the one stream (a split one's ended with it)
        return out + last

    @property
    def ended(self) -> bool:
        """Whether the source's provider ended its response (see :attr:`StreamAggregator.ended`)."""
        return self._source.ended

    def fail(self, error: StreamError) -> bytes:
        """End the source with an error from outside it; return the target's in-band error frame.

        The one rule for every target: a source that broke (connection lost, stall, invalid
        bytes, cut before its final event) ends the target stream with the target protocol's
        own error (a Chat error chunk, an Anthropic ``error`` event, a Responses ``error`` +
        ``response.failed``, a Gemini error object, a Realtime ``error`` + a failed
        ``response.done``), which its SDK raises, never with a clean end. :attr:`response` is
        then the ``failed`` response carrying ``error``.
        """
        events = self._source.fail(error)
        encode = self._encoder.encode
        out = b"".join([encode(e) for e in events])
        self.response = self._source.finish()
        self.session = self._source.session()
        if self._split is not None:
            out += self._split.finish()
        else:
            last = self._encoder.finish()
            if last:
                out += self._output(last)
        self._log_lossy()
        return out


def convert_session(
    data: bytes | Iterable[bytes],
    *,
    to: str,
    protocol: str | None = None,
    lossy: list[Dropped] | None = None,
    **options: Any,
) -> list[bytes]:
    """Re-encode a session as protocol ``to``: one complete stream per response.

    Converting a Live or Realtime session to a one-response protocol (Chat, Responses,
    Anthropic, Gemini, Interactions), each model response of the session becomes its own
    stream, in order; what no stream can carry is listed in ``lossy`` (never dropped
    silently). A call the session cancels, even after its turn ended (Live
    ``toolCallCancellation``), is not written as a call to run: the whole input is read first
    to know them (a live :class:`StreamConverter` cannot, and lists such a late cancellation
    instead). For any other pair the list holds the one converted stream.

    Args:
        data: The source bytes, whole or in chunks.
        to: The target protocol.
        protocol: The source protocol; detected when ``None``.
        lossy: If given, receives the :class:`~maas_stream.Dropped` records of the conversion.
        **options: Passed to :class:`StreamConverter` (``fail_closed``) and the target's encoder.

    Raises:
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    chunks = [bytes(c) for c in chunks_of(data)]
    conv = StreamConverter(to, protocol=protocol, **options)
    # The whole input is here: a call the session cancels later (Live toolCallCancellation)
    # is known before its response is written, so it is not sent as a call to run.
    session = aggregate_session(chunks, protocol=protocol)
    conv._cancelled = frozenset(
        e.call_id for e in session.events if e.kind == "cancellation" and e.call_id is not None
    )
    for chunk in chunks:
        conv.feed(chunk)
    conv.finish()
    if lossy is not None:
        lossy.extend(conv.lossy)
    return list(conv.streams)


def convert(data: bytes | Iterable[bytes], *, to: str, protocol: str | None = None, **options: Any) -> bytes:
    """Re-encode a whole stream as protocol ``to``; return the output bytes.

    A Live or Realtime session of several responses converted to a one-response protocol gives
    the first response's stream (one stream holds one response) and lists each later one as a
    ``message`` drop; :func:`convert_session` gives every response its own stream.

    Raises:
        RemoteProtocolError: The source bytes break their protocol.
        ConversionError: The source carries something the target must not silently drop.
    """
    conv = StreamConverter(to, protocol=protocol, **options)
    out = [conv.feed(chunk) for chunk in chunks_of(data)]
    out.append(conv.finish())
    return b"".join(out)
