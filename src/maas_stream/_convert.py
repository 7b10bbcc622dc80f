"""Sans-IO pipelines: decode → aggregate → final response, or → re-encode as another protocol.

:class:`StreamAggregator` and :class:`StreamConverter` take bytes in chunks of any size and
detect the source protocol when it is not given (``_registry.Detector``: each byte scanned once).
The one-shot functions :func:`aggregate` and :func:`convert` wrap them for whole inputs. History
conversion (:func:`to_canonical`, :func:`from_canonical`, :func:`convert_history`,
:func:`validate`) and the non-streaming bodies (:func:`encode_response`, :func:`decode_response`)
dispatch to the protocol specs; drops come back as :class:`~maas_stream.Dropped` records.

Also here, once for every protocol: the fail-closed rule for unknown types that carry
continuation state, and the finish rule for bodies read without a stream
(:func:`normalize_finish`).

It must not do IO.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._accumulate import client_call_in, turn_finish
from ._aggregate import Aggregator, AggregatorState
from ._drops import DropLog, Dropped
from ._exceptions import (
    ConversionError,
    LocalProtocolError,
    ProtocolDetectionError,
    ProtocolError,
    RemoteProtocolError,
    ValidationError,
)
from ._model import ASSISTANT_ROLES, Message, Response, Session, StreamError, ToolCallPart, UnknownPart
from ._registry import Detector, detect_protocol, get_protocol
from .events import (
    ArgumentsDelta,
    Cancelled,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    StreamErrorEvent,
    StreamWarning,
    UnknownEvent,
)
from .protocols._json import UNREADABLE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._interfaces import StreamDecoder, StreamEncoder
    from .events import Event

__all__ = [
    "StreamAggregator",
    "StreamConverter",
    "aggregate",
    "aggregate_session",
    "continuation_key",
    "convert",
    "convert_session",
    "convert_history",
    "decode_response",
    "encode_response",
    "from_canonical",
    "is_cut",
    "to_canonical",
    "validate",
]

_DETECT_LIMIT = 1024 * 1024

_UNRECOGNISED: Final = frozenset({UnknownEvent, StreamWarning})
_HELD: Final = frozenset({PartStart, ArgumentsDelta, SignatureDelta, PartDone})
"""Events of a tool call a session converter holds until the call ends."""
"""Events that say nothing was understood (an unknown frame; a warning about one)."""

log = logging.getLogger("maas_stream")


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
        self._detector = Detector()
        self._recognised = False
        self._decoder: StreamDecoder | None = None
        self._agg: Aggregator | None = None
        self._ended = False
        self._failed: Response | None = None
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
            detector = self._detector
            name = detector.feed(data)
            if name is None:
                if detector.size <= _DETECT_LIMIT:
                    return []
                name = detector.finish()
            self._detector = Detector()
            self._start(name)
            data = detector.head
        return self._apply(data)

    def _apply(self, data: bytes) -> list[Event]:
        decoder = self._decoder
        assert decoder is not None
        try:
            events = decoder.feed(data)
        except ProtocolError as exc:
            self._salvage(exc)
            raise
        return self._aggregate(events)

    def feed_message(self, msg: bytes | str, *, direction: str = "server") -> list[Event]:
        """Feed one whole websocket message (a JSON-lines protocol's frame, not wrapped).

        The websocket twin of :meth:`feed`: a live connection delivers messages, not bytes.

        Raises:
            LocalProtocolError: The protocol is not a websocket (JSON-lines) protocol.
            RemoteProtocolError: The message breaks the protocol (``exc.partial`` is set).
            ProtocolDetectionError: No protocol was given and the first message matches none.
        """
        if self._decoder is None:
            raw = msg.encode() if isinstance(msg, str) else msg
            line = b'{"dir":"' + direction.encode() + b'","msg":' + raw + b"}\n"
            name = detect_protocol(line, final=True)
            assert name is not None
            self._start(name)
        decoder = self._decoder
        assert decoder is not None
        if get_protocol(decoder.protocol).framing != "jsonl":
            raise LocalProtocolError(
                f"{decoder.protocol} is not a websocket protocol; a websocket source needs a JSON-lines protocol",
                protocol=decoder.protocol,
            )
        try:
            events = decoder.feed_message(msg, direction=direction)  # type: ignore[attr-defined]
        except ProtocolError as exc:
            self._salvage(exc)
            raise
        return self._aggregate(events)

    @property
    def recognised(self) -> bool:
        """Whether anything of the protocol arrived (a frame other than unknown ones).

        ``False`` after :meth:`finish` means nothing in the input was a stream of
        :attr:`protocol`: an empty input, plain text, or another protocol's frames.
        """
        return self._recognised

    def _aggregate(self, events: list[Event]) -> list[Event]:
        if not self._recognised and events:
            self._recognised = any(type(e) not in _UNRECOGNISED for e in events)
        agg = self._agg
        assert agg is not None
        try:
            if not self._emit:
                agg.consume(events)
                return []
            if len(events) == 1:
                return agg.feed(events[0])
            out: list[Event] = []
            for event in events:
                out += agg.feed(event)
            return out
        except ProtocolError as exc:
            exc.partial = agg.snapshot()
            raise

    def _salvage(self, exc: ProtocolError) -> None:
        """Apply what decoded before a bad frame, then attach the partial response."""
        agg = self._agg
        assert agg is not None
        try:
            agg.feed_all(exc.events)
        except ProtocolError:
            pass  # the partial result is still the best we have
        exc.partial = agg.snapshot()

    def snapshot(self) -> Response:
        """The response as it stands (state is not changed)."""
        if self._agg is None:
            return Response(protocol=self.protocol or "unknown", status="in_progress")
        return self._agg.snapshot()

    def session(self) -> Session:
        """The session as it stands (after :meth:`finish`, the final one): see :func:`aggregate_session`."""
        if self._agg is None:
            return Session(protocol=self.protocol or "unknown", status="in_progress")
        return self._agg.session()

    def finish_events(self) -> list[Event]:
        """End the input; return the last canonical events (closing what is still open).

        Raises:
            ProtocolDetectionError: Nothing arrived from which to tell the protocol.
        """
        self._ended = True
        if self._decoder is None:
            detector = self._detector
            name = detector.finish()
            self._start(name)
            self._apply(detector.head)
        decoder = self._decoder
        agg = self._agg
        assert decoder is not None
        assert agg is not None
        try:
            last = decoder.finish()
            if not self._recognised and last:
                self._recognised = any(type(e) not in _UNRECOGNISED for e in last)
            out = agg.feed_all(last)
        except ProtocolError as exc:
            self._salvage(exc)
            raise
        return out + agg.finish_events()

    def finish(self) -> Response:
        """End the input and return the final response.

        Raises:
            ProtocolDetectionError: Nothing arrived from which to tell the protocol.
        """
        if self._failed is not None:
            return self._failed
        if not self._ended:
            self.finish_events()
        assert self._agg is not None
        return self._agg.finish()

    @property
    def ended(self) -> bool:
        """Whether the provider ended its response (its final event, or an in-band error).

        ``False`` at the end of the input means the stream was cut: the connection closed
        early, or the provider never sent its final event.
        """
        return self._agg is not None and self._agg.done

    def fail(self, error: StreamError) -> list[Event]:
        """End the input with an error from outside the stream; return the closing events.

        For a failure the provider could not report itself (a broken connection, a stall, bytes
        that break the protocol, a cut stream): the error is applied as if the provider had
        sent it in-band, open parts close ``incomplete``, and :meth:`finish` then returns the
        ``failed`` response carrying ``error``. The decoder is not finished (it may be broken).
        """
        self._ended = True
        agg = self._agg
        event = StreamErrorEvent(error=error)
        if agg is None or agg.state is AggregatorState.ERROR or self._failed is not None:
            # Nothing decoded (or the machine broke): the error is all there is to tell.
            base = self.snapshot()
            self._failed = msgspec.structs.replace(base, status="failed", error=error)
            return [event] if self._emit else []
        out = agg.feed(event) + agg.finish_events()
        self._failed = agg.finish()
        return out


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

    def __init__(
        self, to: str, *, protocol: str | None = None, fail_closed: bool = True, **options: Any
    ) -> None:
        self._source = StreamAggregator(protocol, emit=True)
        self._options = options
        self._encoder: StreamEncoder = get_protocol(to).encoder(**options)
        self._logged = 0
        self._split: _Splitter | None = None
        self._checked = False
        self._cancelled: frozenset[str] = frozenset()
        """Ids of calls the whole input cancels later (``convert_session`` knows them up front)."""
        self._all_streams = False
        """Whether the caller takes every stream (``convert_session``): no response is lost."""
        self.target = to
        self.fail_closed = fail_closed
        self.response: Response | None = None
        """The source's final response, set by :meth:`finish`."""
        self.session: Session | None = None
        """The source's final session (its responses apart), set by :meth:`finish`."""
        self._streams: list[list[bytes]] = []
        """The output chunks of each target stream (joined when :attr:`streams` is read)."""

    @property
    def streams(self) -> list[bytes]:
        """The target streams written so far: one per response of a session, else one.

        Converting a session to a one-response protocol gives the stream of each response, in
        order. :meth:`feed` and :meth:`finish` return the first (one stream holds one response;
        each later one is a ``message`` drop of that single stream). Complete after
        :meth:`finish`.
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
        if not self._checked and source is not None:
            self._checked = True
            if get_protocol(source).framing == "jsonl" and get_protocol(self.target).framing != "jsonl":
                self._split = _Splitter(self)
        if self.fail_closed and self.target != source:
            for event in events:
                self._check_unknown(event)
        if self._split is not None:
            # Session and client frames belong to no response: the session keeps them
            # (:func:`aggregate_session`). They are no loss of a response's stream, so they
            # are neither sent nor listed.
            events = [
                e for e in events if not (type(e) is UnknownEvent and e.passthrough and e.message is None)
            ]
            out = self._split.encode(events)
        else:
            encode = self._encoder.encode
            out = b"".join([encode(e) for e in events])
            if out:
                out = self._output(out)
        self._log_lossy()
        return out

    def _output(self, out: bytes) -> bytes:
        """Keep target bytes in :attr:`streams`; return what the single output stream gets.

        One target stream holds one response: a session's later responses are only in
        :attr:`streams` (and listed as a ``message`` drop of the single stream).
        """
        streams = self._streams
        if not streams:
            streams.append([])
        streams[-1].append(out)
        return out if len(streams) == 1 else b""

    def _log_lossy(self) -> None:
        # Each distinct drop is logged once, when it first happens (later ones only count).
        split = self._split
        if len(self._encoder.drops) + (len(split.drops) if split is not None else 0) <= self._logged:
            return  # the common case, per frame: nothing new (records are not built)
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
        return out + self._encoder.finish()

    @property
    def ended(self) -> bool:
        """Whether the source's provider ended its response (see :attr:`StreamAggregator.ended`)."""
        return self._source.ended

    def fail(self, error: StreamError) -> bytes:
        """End the source with an error from outside it; return the target's in-band error frame.

        The one rule for every target: a source that broke (connection lost, stall, invalid
        bytes, cut before its final event) ends the target stream with the target protocol's
        own error (a Chat error chunk, an Anthropic ``error`` event, a Responses ``error`` +
        ``response.failed``, a Gemini error object), which its SDK raises, never with a clean
        end. :attr:`response` is then the ``failed`` response carrying ``error``.
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


class _Splitter:
    """A session converted to a one-response protocol: each model response its own stream.

    Each response of the session goes to a fresh target encoder, with its messages renumbered
    from 0, and its stream ends when the response does. What is not a model response is no part
    of any stream and is not a loss: the decoder's own responses holding session messages, the
    user's input transcripts and the client's tool results (their messages), and errors that did
    not end the session; :func:`aggregate_session` keeps them all. A cancellation that arrives
    after its response's stream was sent cannot be carried: it is a ``message`` drop.
    """

    def __init__(self, conv: StreamConverter) -> None:
        self._conv = conv
        self._used = False
        """Whether the converter's encoder already wrote a response (the next needs a new one)."""
        self._open = False
        """Whether a response (span) is open: a ``ResponseStart`` came and its end did not."""
        self._real = False
        """Whether the open span is a model response (its events go to the encoder)."""
        self._pending: list[Event] = []
        """Events of the open span while it is not known to be a model response."""
        self._local: dict[int, int] = {}
        """The open response's messages: canonical position → position in its own stream."""
        self._inputs: set[int] = set()
        """Canonical positions of messages that are not the model's (no response holds them)."""
        self._sent: set[int] = set()
        """Canonical positions of messages whose response's stream was already ended."""
        self._calls: dict[tuple[Any, Any], list[Event]] = {}
        """The events of each open tool call, held until it ends (canonical keys)."""
        self._cancelled: set[tuple[Any, Any]] = set()
        """Held calls a ``Cancelled`` named."""
        self._fed: set[tuple[Any, Any]] = set()
        """Calls that were sent whole."""
        self._dropped: set[tuple[Any, Any]] = set()
        """Calls that were not sent (a later cancellation of one is no further loss)."""
        self._calls_sent = False
        """Whether the open response's stream holds a call (else it cannot finish ``tool_calls``)."""
        self.drops = DropLog(conv.target)
        """The drops of finished encoders, and of calls and cancellations no stream can carry."""

    def encode(self, events: list[Event]) -> bytes:
        return b"".join([self._event(event) for event in events])

    def _event(self, event: Event) -> bytes:
        message = getattr(event, "message", None)
        if isinstance(event, MessageStart):
            if event.role not in ASSISTANT_ROLES:
                self._inputs.add(event.message)  # type: ignore[arg-type]
                return b""
            self._local[event.message] = len(self._local)  # type: ignore[index]
            return self._become_real() + self._feed(event)
        if message is not None and message in self._inputs:
            return b""
        if isinstance(event, ResponseStart):
            if not self._open:
                self._open, self._real, self._pending, self._local = True, False, [], {}
            if event.provider_raw is not None:
                return self._become_real() + self._feed(event)
            return self._feed(event)
        if isinstance(event, ResponseDone):
            out = b""
            if event.status is not None or event.finish_reason is not None:
                out = self._become_real()
            if self._real:
                out += self._feed(event)
            return out + self._end()
        if isinstance(event, StreamErrorEvent):
            if event.recoverable:
                return b""  # a session event: no response failed
            return self._become_real() + self._feed(event)
        return self._other(event, message)

    def _other(self, event: Event, message: Any) -> bytes:
        if type(event) in _HELD or (isinstance(event, Cancelled) and self._calls):
            held = self._hold(event)
            if held is not None:
                return held
        if isinstance(event, Cancelled) and any(
            key[0] == message and event.part in (None, key[1]) for key in self._fed
        ):
            # response.done cut a call whose own events had completed it, and it went out.
            self._late()
        if message is not None and message in self._sent:
            if isinstance(event, Cancelled) and (message, event.part) not in self._dropped:
                self._late()
            return b""  # what a late cancellation closes was closed in that stream already
        return self._feed(event)

    def _late(self) -> None:
        self.drops.add(
            "message",
            f"a cancellation of a call already sent ({self._conv.target} cannot take a call back)",
        )

    def _hold(self, event: Event) -> bytes | None:
        """A tool call goes out whole once it completed; one cut or cancelled never does.

        ``response.done`` (Realtime) is the authority on a call's status, and it may come after
        the call's arguments streamed: a one-response target cannot take a call back, so a
        call's events wait for its end. Returns ``None`` when the event is not a held call's.
        """
        calls = self._calls
        if isinstance(event, PartStart):
            if not isinstance(event.value, ToolCallPart):
                return None
            calls[(event.message, event.part)] = [event]
            return b""
        if isinstance(event, Cancelled):
            for key in calls:
                if key[0] == event.message and event.part in (None, key[1]):
                    self._cancelled.add(key)
            return None
        key = (getattr(event, "message", None), getattr(event, "part", None))
        held = calls.get(key)
        if held is None:
            return None
        if not isinstance(event, PartDone):
            held.append(event)
            return b""
        del calls[key]
        value = event.value
        cut = isinstance(value, ToolCallPart) and (
            value.status == "incomplete" or value.id in self._conv._cancelled
        )
        if key in self._cancelled or cut:
            self._cancelled.discard(key)
            self._dropped.add(key)
            name = value.name if isinstance(value, ToolCallPart) else ""
            self.drops.add(
                "message",
                "a tool call the provider cut or cancelled before it completed (not sent as a call to run)",
                where=f"{name}:{value.id}" if isinstance(value, ToolCallPart) else None,
            )
            return b""
        self._calls_sent = True
        self._fed.add(key)
        return b"".join([self._feed(e) for e in (*held, event)])

    def _feed(self, event: Event) -> bytes:
        """Hand an event to the open response's encoder (or hold it until the span is one)."""
        if not self._open:
            self._open, self._real, self._pending, self._local = True, False, [], {}
        if not self._real:
            self._pending.append(event)
            return b""
        message = getattr(event, "message", None)
        if message is not None and message in self._local:
            event = msgspec.structs.replace(event, message=self._local[message])
        if (
            isinstance(event, ResponseDone | MessageDone)
            and event.finish_reason == "tool_calls"
            and not self._calls_sent
        ):
            # Its calls were cut or cancelled and not sent: the stream has no call to run.
            event = msgspec.structs.replace(event, finish_reason="stop")
        out = self._conv._encoder.encode(event)
        return self._conv._output(out) if out else b""

    def _become_real(self) -> bytes:
        if self._real:
            return b""
        conv = self._conv
        if self._used:
            self.drops.extend(conv._encoder.drops.records)
            conv._encoder = get_protocol(conv.target).encoder(**conv._options)
            if not conv._all_streams:
                self.drops.add(
                    "message",
                    "a further response of the session (one stream holds one response; each is in"
                    " StreamConverter.streams and ms.convert_session)",
                )
        self._used = self._real = self._open = True
        conv._streams.append([])
        held, self._pending = self._pending, []
        return b"".join([self._feed(e) for e in held])

    def _end(self) -> bytes:
        """The open span ended: a model response's stream ends with it."""
        out = b""
        if self._real:
            out = self._conv._encoder.finish()
            out = self._conv._output(out) if out else b""
            self._sent.update(self._local)
        self._open = self._real = self._calls_sent = False
        self._pending, self._local = [], {}
        return out

    def finish(self) -> bytes:
        """The input ended: a response still open ends cut (its encoder says so)."""
        if self._real:
            return self._end()
        return b""


_ACCEPTED = "bytes, or an iterable of bytes chunks (e.g. ms.io.replay(path), response.iter_bytes())"


def _is_http(data: object) -> bool:
    # An httpx / httpx2 response, an SDK's raw streaming response or its Stream (``.response``).
    inner = getattr(data, "response", None)
    return any(hasattr(x, "iter_bytes") or hasattr(x, "aiter_bytes") for x in (data, inner)) or hasattr(
        data, "http_response"
    )


def _refuse(data: object) -> TypeError:
    what = type(data).__name__
    if isinstance(data, str):
        hint = "; to read a recording, pass open(path, 'rb').read() or ms.io.replay(path)"
    elif _is_http(data):
        hint = "; for a live HTTP or SDK streaming response use ms.stream(...) or await ms.aaggregate(...)"
    elif hasattr(data, "__aiter__"):
        hint = "; for an async iterable use await ms.aaggregate(...)"
    else:
        hint = ""
    return TypeError(f"cannot aggregate a {what} object: expected {_ACCEPTED}{hint}")


def _checked(chunks: Iterable[object]) -> Iterator[bytes]:
    for chunk in chunks:
        if type(chunk) is bytes:
            yield chunk
        elif isinstance(chunk, bytearray | memoryview):
            yield bytes(chunk)
        else:
            hint = (
                "read iter_bytes(), not iter_text()"
                if isinstance(chunk, str)
                else "an SDK's parsed chunks cannot be re-read: pass its raw streaming response"
            )
            raise TypeError(
                f"cannot aggregate an iterable that yielded a {type(chunk).__name__} object: "
                f"expected {_ACCEPTED} ({hint})"
            )


def _chunks(data: bytes | Iterable[bytes]) -> Iterable[bytes]:
    if isinstance(data, bytes | bytearray | memoryview):
        return (bytes(data),)
    if isinstance(data, str) or not isinstance(data, Iterable) or _is_http(data):
        raise _refuse(data)
    return _checked(data)


def aggregate(data: bytes | Iterable[bytes], *, protocol: str | None = None) -> Response:
    """Aggregate a whole stream into its final :class:`~maas_stream.Response`.

    Args:
        data: The stream's bytes, whole or as an iterable of chunks.
        protocol: The source protocol; detected from the first frames when ``None``.

    Raises:
        RemoteProtocolError: The bytes break the protocol (``exc.frame`` names the frame and
            ``exc.partial`` holds what was aggregated before it).
        ProtocolDetectionError: ``protocol`` was not given and could not be detected.
        TypeError: ``data`` is not bytes nor an iterable of bytes (a path string, an HTTP or
            SDK response, an SDK's parsed chunks); the message says what to pass instead.
    """
    agg = StreamAggregator(protocol)
    for chunk in _chunks(data):
        agg.feed(chunk)
    return agg.finish()


def aggregate_session(data: bytes | Iterable[bytes], *, protocol: str | None = None) -> Session:
    """Aggregate a whole session into a :class:`~maas_stream.Session`: each response apart.

    For a session protocol (Google Live, OpenAI Realtime) each model response is its own
    :class:`~maas_stream.Response` (its own status, finish reason, usage and error), and the
    session's setup and config frames, errors that did not end it, input transcripts,
    cancellations and the client's messages are :class:`~maas_stream.SessionEvent` records in
    order. Any other protocol gives a session of its one response. :func:`aggregate` folds the
    same input into one response (see ``docs/sessions.md``).

    Raises:
        RemoteProtocolError: The bytes break the protocol (``exc.partial`` holds what was
            aggregated before the bad frame, as one response).
        ProtocolDetectionError: ``protocol`` was not given and could not be detected.
    """
    agg = StreamAggregator(protocol)
    for chunk in _chunks(data):
        agg.feed(chunk)
    agg.finish()
    return agg.session()


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
    chunks = [bytes(c) for c in _chunks(data)]
    conv = StreamConverter(to, protocol=protocol, **options)
    # The whole input is here: a call the session cancels later (Live toolCallCancellation)
    # is known before its response is written, so it is not sent as a call to run.
    session = aggregate_session(chunks, protocol=protocol)
    conv._all_streams = True
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
    out = [conv.feed(chunk) for chunk in _chunks(data)]
    out.append(conv.finish())
    return b"".join(out)


def to_canonical(body: Any, protocol: str) -> list[Message]:
    """Convert a request body (or history) of ``protocol`` to canonical messages.

    Raises:
        ValidationError: The body cannot be read as a ``protocol`` request, including a value
            nested past the interpreter's limit or a string that is not valid Unicode.
    """
    spec = get_protocol(protocol)
    try:
        return spec.to_canonical(body)
    except UNREADABLE as exc:
        raise ValidationError(protocol, [_unreadable(exc)]) from exc


def from_canonical(
    messages: list[Message],
    protocol: str,
    *,
    lossy: list[Dropped] | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Convert canonical messages to a request body of ``protocol``.

    Args:
        messages: The conversation.
        protocol: The target protocol.
        lossy: If given, receives a :class:`~maas_stream.Dropped` record for each kind of
            thing the target cannot carry.
        source: The protocol the messages came from, for the records.
    """
    drops = DropLog(protocol, source)
    out = get_protocol(protocol).from_canonical(messages, drops=drops)
    if lossy is not None:
        lossy.extend(drops.records)
    return out


def convert_history(
    body: Any, *, to: str, protocol: str, lossy: list[Dropped] | None = None
) -> dict[str, Any]:
    """Convert a request body from ``protocol`` to ``to`` through the canonical model.

    What ``to`` cannot carry is dropped, appended to ``lossy`` as records when given, and
    logged once per record as a warning on the ``maas_stream`` logger.
    """
    found: list[Dropped] = []
    out = from_canonical(to_canonical(body, protocol), to, lossy=found, source=protocol)
    for rec in found:
        log.warning("%s -> %s history: dropped %s", protocol, to, rec)
    if lossy is not None:
        lossy.extend(found)
    return out


def is_cut(response: Response) -> bool:
    """Whether ``response`` failed or was cut: the provider never ended it (no final event).

    ``failed`` (an error), ``in_progress`` (a snapshot) and ``incomplete`` without a finish
    reason (the stream stopped before the provider said why) are; an ``incomplete`` response
    the provider ended itself (``length``, ``content_filter``) is an honest answer, not a cut.
    """
    status = response.status
    return status in ("failed", "in_progress") or (status == "incomplete" and response.finish_reason is None)


def encode_response(
    response: Response, protocol: str, *, lossy: list[Dropped] | None = None, strict: bool = False
) -> dict[str, Any]:
    """Encode a canonical response as ``protocol``'s non-streaming response body.

    A body reads as an answer (a Chat ``finish_reason``, an Anthropic ``stop_reason``), and a
    target may have no way to say "this was cut". A server answering a client with the body
    passes ``strict=True``: a response that failed or was cut (:func:`is_cut`) is then refused,
    and the server answers with an error instead (the bridge sends 502). Without it the body
    is written as far as the target can say (for recordings, tests, inspection).

    Args:
        response: The canonical response (e.g. from :func:`aggregate`).
        protocol: The target protocol.
        lossy: If given, receives a :class:`~maas_stream.Dropped` record for each kind of
            thing the target cannot carry (dropped).
        strict: Refuse a failed or cut response instead of writing it.

    Raises:
        LocalProtocolError: No such protocol, or it has no non-streaming body (websocket ones);
            or ``strict`` is set and ``response`` failed or was cut.
    """
    spec = get_protocol(protocol)
    if spec.encode_response is None:
        raise LocalProtocolError(f"{protocol} has no non-streaming response body")
    if strict and is_cut(response):
        error = response.error
        why = (error.message or error.type) if error is not None else "no final event from the provider"
        raise LocalProtocolError(
            f"the response is {response.status} ({why}); a body would read as an answer",
            protocol=protocol,
        )
    drops = DropLog(protocol, response.protocol)
    out = spec.encode_response(response, drops=drops)
    if lossy is not None:
        lossy.extend(drops.records)
    return out


def decode_response(body: Any, protocol: str) -> Response:
    """Read ``protocol``'s non-streaming response body into a canonical response.

    The protocol's own mapping reads the body; the rules that hold for every protocol are then
    applied here, once, as the aggregator applies them to a stream: a turn that holds a client
    (function or custom) call and says "stop" finishes ``tool_calls``. So a body and the stream
    of the same answer read the same.

    Args:
        body: The JSON body (parsed, or its text/bytes where the protocol accepts that).
        protocol: The body's protocol.

    Raises:
        LocalProtocolError: No such protocol, or it has no non-streaming body.
        RemoteProtocolError: The body is not a valid ``protocol`` response.
    """
    spec = get_protocol(protocol)
    if spec.decode_response is None:
        raise LocalProtocolError(f"{protocol} has no non-streaming response body")
    try:
        response = spec.decode_response(body)
    except UNREADABLE as exc:
        raise RemoteProtocolError(
            f"invalid {protocol} response body: {_unreadable(exc)}", protocol=protocol
        ) from exc
    if any(m.provider is None for m in response.messages):
        # The replay rule's origin: what a body says was made by its protocol.
        response = msgspec.structs.replace(
            response,
            messages=[
                m if m.provider else msgspec.structs.replace(m, provider=protocol) for m in response.messages
            ],
        )
    return normalize_finish(response)


def normalize_finish(response: Response) -> Response:
    """Apply the one finish rule (:func:`turn_finish`) to a response that was not aggregated."""
    calls = [not isinstance(m.content, str) and client_call_in(m.content) for m in response.messages]
    if not any(calls):
        return response
    messages = [
        msgspec.structs.replace(m, finish_reason=turn_finish(m.finish_reason, call))
        if m.finish_reason == "stop" and call
        else m
        for m, call in zip(response.messages, calls, strict=True)
    ]
    return msgspec.structs.replace(
        response, messages=messages, finish_reason=turn_finish(response.finish_reason, True)
    )


def validate(body: Any, protocol: str) -> list[str]:
    """Check a request body against ``protocol``'s rules; return every fault (empty when valid).

    Each fault names the offending message index and, where one is involved, the call id. A
    value nested past the interpreter's limit or a string that is not valid Unicode is a fault.
    """
    spec = get_protocol(protocol)
    try:
        return spec.validate(body)
    except UNREADABLE as exc:
        return [_unreadable(exc)]


def _unreadable(exc: BaseException) -> str:
    """The fault of an input value Python cannot process (see ``protocols/_json.py``)."""
    if isinstance(exc, RecursionError):
        return "a value is nested too deep to read"
    return "a string is not valid Unicode (a lone surrogate)"
