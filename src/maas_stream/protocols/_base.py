"""What every protocol module provides, and the framing-level base classes they share.

A protocol package exposes a ``StreamDecoder`` (bytes → events with provider keys), a
``StreamEncoder`` (canonical events → bytes), a history codec (``to_canonical`` /
``from_canonical``), ``validate`` and detection, and declares its ``SPEC`` (``_registry.spec_of``).
The classes here hold what every protocol shares: SSE framing (JSON lines: ``_jsonl``), frame counting,
the state rules of ``feed``/``feed_message``/``finish`` (refused after an error or after
``finish``), turning input faults (msgspec's decode errors, JSON nested too deep) into
``RemoteProtocolError`` while letting any other exception through as the bug it is, flushing a
decoder's ``warnings`` as ``StreamWarning`` events after every frame, and the encoders' event
routing and drop records.

Item state belongs to the aggregator: a decoder keeps what its framing needs (sequence numbers,
the position of a part in a keyless wire, a name the wire states only once); where one holds
more, its docstring says what and why.

It must not do IO, and must not apply the aggregator's rules (finish reasons, cancellation,
remainders of final values).

The direct fold (:class:`DirectFold`, docs/architecture.md): a ``direct`` decoder appends common
text, arguments, summary and audio deltas to part buffers the target hands out (the part exists, deltas go
straight in), and may close a part and open the next without events (:meth:`DirectFold.fold_part`:
a run of text ends, a whole call arrives; :meth:`DirectFold.fold_message`: a line opens a turn's
response, message and part; :meth:`DirectFold.fold_end`: a line ends a turn, its calls and usage
with it, or is a whole message); any other frame goes as events, in order, and makes it
forget every buffer it was handed. Both framings fold through it: SSE (:meth:`SSEStreamDecoder.feed_into`, each protocol's
``fold_frames``) and JSON lines (``_jsonl``, each session protocol's ``fold_lines``); a protocol
decides only which of its frames are common.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeAlias, cast

import msgspec

from .._accumulate import FRAGMENTS, compact, whole_groups
from .._exceptions import LocalProtocolError, RemoteProtocolError
from .._interfaces import Framing as Framing
from .._interfaces import StreamDecoder as StreamDecoder
from .._interfaces import StreamEncoder as StreamEncoder
from .._model import Message, Part
from ..events import (
    AnnotationAdded,
    ArgumentsDelta,
    AudioDelta,
    Cancelled,
    LogprobsDelta,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    RefusalDelta,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    StreamErrorEvent,
    StreamWarning,
    SummaryDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from ..sse import DEFAULT_MAX_EVENT_SIZE, Decoder, ServerSentEvent

if TYPE_CHECKING:
    from .._drops import DropLog, Dropped
    from .._model import Role, Usage
    from ..events import Event, Key

__all__ = [
    "ARGS",
    "AUDIO",
    "SUMMARY",
    "TEXT",
    "TRANSCRIPT",
    "DirectFold",
    "EventEncoder",
    "FoldTarget",
    "Framing",
    "PartBuffers",
    "SSEStreamDecoder",
    "StreamDecoder",
    "StreamEncoder",
    "flush_warnings",
]


HANDLER_NAMES: Final[dict[type[Any], str]] = {
    ResponseStart: "_on_response_start",
    MessageStart: "_on_message_start",
    PartStart: "_on_part_start",
    TextDelta: "_on_text",
    RefusalDelta: "_on_refusal",
    ReasoningDelta: "_on_reasoning",
    SummaryDelta: "_on_summary",
    SignatureDelta: "_on_signature",
    ArgumentsDelta: "_on_arguments",
    AudioDelta: "_on_audio",
    AnnotationAdded: "_on_annotation",
    LogprobsDelta: "_on_logprobs",
    PartDone: "_on_part_done",
    MessageDone: "_on_message_done",
    UsageUpdate: "_on_usage",
    ResponseDone: "_on_response_done",
    StreamErrorEvent: "_on_error",
    UnknownEvent: "_on_unknown",
    StreamWarning: "_on_warning",
    Cancelled: "_on_cancelled",
}
"""The method of an :class:`EventEncoder` subclass that handles each event type."""


_DECODE_FAULTS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
"""How msgspec says a frame is not valid input: malformed, mistyped, or nested too deep (msgspec
raises ``RecursionError`` for JSON nested past its limit). Each becomes a ``RemoteProtocolError``."""

_INPUT_FAULTS: Final = (RemoteProtocolError, *_DECODE_FAULTS)
"""Input faults a frame handler may raise; anything else is a bug and propagates as itself."""


class EventEncoder:
    """Base of the stream encoders: routes each canonical event to the subclass's ``_on_*`` method.

    The routing table is built once per class (not per stream, which keeps an idle encoder
    small); ``_ROUTES`` lets a subclass send some event types to another method.
    """

    __slots__ = ()  # (a subclass that declares its own holds no instance dict)

    _ROUTES: ClassVar[dict[type[Any], str]] = {}
    _TABLE: ClassVar[dict[type[Any], Callable[[Any, Any], bytes]]] = {}

    drops: DropLog
    """What the target could not carry and dropped, as records (every encoder sets it)."""

    @property
    def lossy(self) -> list[Dropped]:
        """The drop records so far (:attr:`drops`)."""
        return self.drops.records

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = {**HANDLER_NAMES, **cls._ROUTES}
        cls._TABLE = {kind: getattr(cls, name) for kind, name in names.items()}

    def _route(self, event: Event) -> bytes:
        return self._TABLE[type(event)](self, event)

    def _on_warning(self, ev: StreamWarning) -> bytes:
        """Warnings are the reader's business; no wire protocol carries them."""
        return b""

    def _on_cancelled(self, ev: Cancelled) -> bytes:
        """Nothing by default: the aggregator closes what a cancellation ends.

        ``PartDone``/``MessageDone`` with an ``incomplete`` status follow; an encoder that can
        say "cancelled" overrides this.
        """
        return b""


class PartBuffers(Protocol):
    """What a direct fold appends to: a part's text and arguments fragments (``add_fragment``), its audio.

    ``summary`` holds a reasoning part's summary entries by index once its first summary delta
    went the normal way (``None`` before: the aggregator builds it from the part's base).
    """

    text: list[str]
    args: list[str]
    summary: dict[int, list[str]] | None
    audio_data: list[str] | None
    audio_transcript: list[str] | None


class FoldTarget(Protocol):
    """Where a decoder's ``feed_into`` folds a stream: the aggregator's side of the direct fold."""

    def consume(self, events: list[Event]) -> None:
        """Apply a frame's events the normal way (in order, nothing handed on)."""
        ...

    def part_buffers(self, message: Key, part: Key) -> PartBuffers | None:
        """The part's buffers if it exists and deltas go straight in (kept until :meth:`consume`)."""
        ...

    def open_part(
        self, message: Key, close: Key | None, part: Key, value: Part, done: bool = False
    ) -> PartBuffers | None:
        """Close ``close``, open ``part`` as ``value`` (and close it when ``done``) without events.

        What ``PartDone``/``PartStart``/``PartDone`` would leave; the new part's buffers, or
        ``None`` (nothing done) when deltas do not go straight in or the part cannot open so.
        """
        ...

    def open_message(
        self, start: ResponseStart | None, message: Key, role: Role, part: Key, value: Part
    ) -> PartBuffers | None:
        """Open ``message`` (after the response ``start``, if given) with part ``part`` as ``value``, without events.

        What ``start``, ``MessageStart``, ``PartStart`` would leave; the new part's buffers, or
        ``None`` (nothing done) when deltas would not go straight in or the message exists.
        """
        ...

    def end_message(
        self,
        start: ResponseStart | None,
        message: Key,
        role: Role | None,
        parts: Sequence[tuple[Key, Part]],
        usage: Usage | None,
        done: ResponseDone | None,
    ) -> bool:
        """End ``message`` (new when ``role`` is given, after the response ``start``) with whole ``parts``, without events.

        What ``start``, ``MessageStart``, each part's ``PartStart``/``PartDone``, ``UsageUpdate``,
        ``MessageDone`` and ``done`` would leave; ``False`` (nothing done) when those events
        would not apply so.
        """
        ...


_IDLE: Final[dict[Any, Any]] = {}
"""A decoder's buffers while idle: empty, never written (a fold in progress has its own)."""

TEXT: Final = 0
""":meth:`DirectFold.fold_delta` appends to the part's text (also a reasoning part's thinking)."""
ARGS: Final = 1
"""... to the part's arguments."""
AUDIO: Final = 2
"""... to the audio part's base64 data chunks (kept apart, as ``AudioDelta.data`` is)."""
TRANSCRIPT: Final = 3
"""... to the audio part's transcript."""
SUMMARY: Final = 4
"""... to the reasoning part's summary entry ``index`` (a non-empty ``SummaryDelta``'s text)."""


class DirectFold:
    """The decoders' half of the direct fold (module docstring), one home for both framings.

    A framing's ``feed_into`` sets :attr:`_target` and fresh :attr:`_buffers` for one chunk and
    restores both after it (:meth:`_fold_begin`, :meth:`_fold_end`); its protocol hands each common delta to :meth:`fold_delta` and every
    other frame to the framing's ``normal``, which calls :meth:`_forget` before the frame's
    events reach the target.
    """

    direct: ClassVar[bool] = False
    """Whether the protocol folds common frames directly (``feed_into`` is worth it)."""

    __slots__ = ("_buffers", "_hot", "_hot_message", "_hot_part", "_target")

    def __init__(self) -> None:
        self._target: FoldTarget | None = None
        self._buffers: dict[tuple[Key, Key], PartBuffers] = _IDLE
        """Buffers :meth:`fold_delta` got from the target since the last normal frame of this ``feed_into``."""
        self._hot: PartBuffers | None = None
        """The buffers :meth:`fold_delta` used last (one of :attr:`_buffers`), for the keys below:
        a run of deltas to one part skips the dictionary."""
        self._hot_message: Key = 0
        self._hot_part: Key = 0

    def _fold_begin(self, target: FoldTarget) -> None:
        """A chunk's fold starts: deltas may go into ``target``'s parts."""
        self._target, self._buffers, self._hot = target, {}, None

    def _fold_end(self) -> None:
        """A chunk's fold ended (or failed): while idle, no cycle and no part kept alive."""
        self._target, self._buffers, self._hot = None, _IDLE, None

    def _forget(self, events: list[Event]) -> None:
        """Hand a normal frame's events to the target, forgetting every buffer it handed out."""
        self._buffers.clear()
        self._hot = None
        if events:
            target = self._target
            assert target is not None
            target.consume(events)

    def fold_part(
        self, message: Key, close: Key | None, part: Key, value: Part, done: bool = False
    ) -> PartBuffers | None:
        """Close part ``close`` and open ``part`` in the target without events (``FoldTarget.open_part``).

        The new part's buffers become the ones :meth:`fold_delta` uses next; ``None``: nothing was
        done, go the normal way.
        """
        target = self._target
        return self._opened(
            message, part, target.open_part(message, close, part, value, done) if target else None
        )

    def fold_message(
        self, start: ResponseStart | None, message: Key, role: Role, part: Key, value: Part
    ) -> PartBuffers | None:
        """Open a message (and a response, ``start``) with its first part in the target without events.

        ``FoldTarget.open_message``, for a line that starts a turn with a delta: the new part's
        buffers become the ones :meth:`fold_delta` uses next; ``None``: nothing was done, go the
        normal way.
        """
        target = self._target
        return self._opened(
            message, part, target.open_message(start, message, role, part, value) if target else None
        )

    def fold_end(
        self,
        start: ResponseStart | None,
        message: Key,
        role: Role | None,
        parts: Sequence[tuple[Key, Part]],
        usage: Usage | None = None,
        done: ResponseDone | None = None,
    ) -> bool:
        """End a message (and its response, ``done``) with whole parts in the target without events.

        ``FoldTarget.end_message``, for a line that ends a turn (its calls, usage, its end) or is
        a whole message (a client's tool results). The buffers handed out are forgotten, as after
        a normal frame; ``False``: nothing was done, go the normal way.
        """
        target = self._target
        if target is None or not target.end_message(start, message, role, parts, usage, done):
            return False
        self._buffers.clear()
        self._hot = None
        return True

    def _opened(self, message: Key, part: Key, found: PartBuffers | None) -> PartBuffers | None:
        """A part the target opened (``found``, unless ``None``) is the one :meth:`fold_delta` uses next."""
        if found is not None:
            self._buffers[message, part] = found
            self._hot, self._hot_message, self._hot_part = found, message, part
        return found

    def text_buffer(self, message: Key, part: Key) -> PartBuffers | None:
        """The buffers of a part deltas may go into: the last call's, ``self._buffers`` or the target's.

        Kept until the next normal frame; ``None``: go the normal way.
        """
        found = self._hot
        if found is None or part != self._hot_part or message != self._hot_message:
            found = self._buffers.get((message, part))
            if found is None:
                target = self._target
                found = target.part_buffers(message, part) if target is not None else None
                if found is None:
                    return None
                self._buffers[message, part] = found
            self._hot, self._hot_message, self._hot_part = found, message, part
        return found

    def fold_delta(self, message: Key, part: Key, text: str, kind: int = TEXT, index: int = 0) -> bool:
        """Append a common delta to a buffer of its part; ``False``: go the normal way.

        ``kind`` names the buffer: :data:`TEXT`, :data:`ARGS`, :data:`AUDIO`, :data:`TRANSCRIPT`
        or :data:`SUMMARY` (entry ``index``; ``text`` not empty, and only once the part has a
        summary, else ``False``). The buffers come from the last call's, ``self._buffers`` or the
        target (kept until the next normal frame); text, arguments, transcripts and summaries are
        joined as they come (``add_fragment``'s rule, inlined: this runs once per event), audio
        chunks are kept apart (base64 joins as bytes, not text), as the aggregator does with each
        delta event.
        """
        found = self._hot
        if found is None or part != self._hot_part or message != self._hot_message:
            found = self.text_buffer(message, part)
            if found is None:
                return False
        if kind == TEXT:
            buf = found.text
        elif kind == ARGS:
            buf = found.args
        elif kind == AUDIO:
            if found.audio_data is None:
                found.audio_data = [text]
            else:
                found.audio_data.append(text)
            return True
        elif kind == TRANSCRIPT:
            held = found.audio_transcript
            if held is None:
                found.audio_transcript = [text]
                return True
            buf = held
        else:
            summary = found.summary
            if summary is None or not text:
                return False
            entry = summary.get(index)
            if entry is None:
                summary[index] = [text]
                return True
            buf = entry
        buf.append(text)
        if len(buf) >= FRAGMENTS:
            compact(buf)
        return True

    def fold_deltas(self, message: Key, part: Key, pieces: list[str], kind: int = TEXT) -> bool:
        """Append a run of common deltas (in order, none empty) to one buffer of a part; ``False``: go the normal way.

        What :meth:`fold_delta` of each piece would do, in one call (not for :data:`SUMMARY`):
        texts, arguments and transcripts join into one piece; audio chunks too when all but the
        last are whole base64 groups (``whole_groups``: joined as text they are the bytes they
        encode, and the build joins what follows them alike), else they are kept apart.
        """
        if kind != AUDIO or whole_groups(pieces[:-1]):
            return self.fold_delta(message, part, pieces[0] if len(pieces) == 1 else "".join(pieces), kind)
        if not self.fold_delta(message, part, pieces[0], AUDIO):
            return False
        hot = self._hot  # the part fold_delta just appended the first chunk to
        assert hot is not None
        assert hot.audio_data is not None
        hot.audio_data += pieces[1:]
        return True


_NO_WARNINGS: Final = cast("list[str]", ())
"""No findings: shared by the decoders that have none (an empty list is 56 bytes a stream). A
tuple, so an ``append`` to it fails at once; :meth:`SSEStreamDecoder.warn` makes the list."""


class _State(enum.Enum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class SSEStreamDecoder(DirectFold):
    """Base for protocols carried over SSE: framing, frame numbers and error wrapping.

    Subclasses implement :meth:`on_frame` (or :meth:`on_event`), which turns one SSE event into
    stream events, and may override :meth:`on_finish`. A ``direct`` one overrides
    :meth:`fold_frames` (:class:`DirectFold`).
    """

    protocol: ClassVar[str] = ""

    __slots__ = ("_frames", "_sse", "_state", "warnings")

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        super().__init__()
        self._sse = Decoder(max_event_size=max_event_size)
        self._frames = 0
        self._state = _State.OPEN
        self.warnings: list[str] = _NO_WARNINGS
        """Findings that did not stop decoding (a sequence gap, say); they end up in
        ``Response.warnings``. Add one with :meth:`warn`."""

    @property
    def frames(self) -> int:
        """How many SSE events were decoded so far."""
        return self._frames

    @property
    def truncated(self) -> bool:
        """True after :meth:`finish` when the bytes ended inside an event, which was dropped."""
        return self._sse.truncated

    def feed(self, data: bytes) -> list[Event]:
        """Decode a chunk of bytes; return the events it completed.

        Raises:
            RemoteProtocolError: A frame is not valid for this protocol (the error names the
                frame number); the decoder is unusable afterwards.
            LocalProtocolError: Called after :meth:`finish` or an error.
        """
        payloads, names = self._payloads(data)
        out: list[Event] = []
        on_frame = self.on_frame
        first = self._frames + 1
        for number, payload in enumerate(payloads, first):
            self._frames = number
            event = names[number - first]
            try:
                out += on_frame(event, payload)
            except _INPUT_FAULTS as exc:
                raise self._wrap(exc, event, payload, out) from exc
            if self.warnings:
                out += flush_warnings(self.warnings)
        return out

    def _payloads(self, data: bytes) -> tuple[list[bytes], Sequence[str]]:
        """Check the state, then split a chunk into its frames' data and event types.

        ``Decoder.feed_payloads`` when the chunk has the common shape (no per-frame tuples),
        else ``feed_raw``.
        """
        self._check_open()
        sse = self._sse
        fast = sse.feed_payloads(data)
        if fast is not None:
            return fast
        try:
            frames = sse.feed_raw(data)
        except RemoteProtocolError as exc:
            self._failed(exc)
            raise
        return [frame[1] for frame in frames], [frame[0] for frame in frames]

    def _check_open(self) -> None:
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"decoder fed in state {self._state.value}", protocol=self.protocol, state=self._state.value
            )

    def _failed(self, exc: RemoteProtocolError) -> None:
        self._state = _State.ERROR
        exc.protocol = self.protocol

    def feed_into(self, data: bytes, target: FoldTarget) -> None:
        """Decode a chunk and fold it into ``target`` (the direct fold, module docstring).

        The result is ``target.consume(self.feed(data))``'s. A bad frame raises as in :meth:`feed`
        but with no ``exc.events`` (what came before is folded); the target's errors propagate.

        Raises:
            RemoteProtocolError: A frame is not valid for this protocol.
            LocalProtocolError: Called after :meth:`finish` or an error.
        """
        payloads, names = self._payloads(data)
        if not payloads:
            return
        self._fold_begin(target)
        end = self._frames + len(payloads)
        try:
            self.fold_frames(payloads, names)
        finally:
            self._fold_end()
        self._frames = end

    def fold_frames(self, payloads: list[bytes], names: Sequence[str]) -> None:
        """Fold one chunk's frames (their data, and their event types by position) in order.

        By default each goes :meth:`normal`. A ``direct`` protocol hands each common frame's
        delta to :meth:`fold_delta` and hands any other frame, numbered
        ``enumerate(payloads, self.frames + 1)``, to :meth:`normal` with its event type
        (``names[number - self.frames - 1]``, read only then); all or nothing per frame.
        """
        first = self._frames + 1
        for number, payload in enumerate(payloads, first):
            self.normal(number, names[number - first], payload)

    def normal(self, number: int, event: str, payload: bytes) -> None:
        """Fold frame ``number`` as events, in order; forget the buffers handed out (see above)."""
        self._frames = number
        try:
            events = self.on_frame(event, payload)
        except _INPUT_FAULTS as exc:
            raise self._wrap(exc, event, payload, []) from exc
        if self.warnings:
            events += flush_warnings(self.warnings)
        self._forget(events)

    def warn(self, text: str) -> None:
        """Note a finding that does not stop decoding (flushed as a ``StreamWarning`` after the frame)."""
        if self.warnings:
            self.warnings.append(text)
        else:
            self.warnings = [text]

    def feed_event(self, sse_event: ServerSentEvent) -> list[Event]:
        """Decode one already-framed SSE event (from httpx-sse, say).

        Raises:
            RemoteProtocolError: The event is not valid for this protocol.
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"decoder fed in state {self._state.value}", protocol=self.protocol, state=self._state.value
            )
        self._frames += 1
        try:
            out = self.on_frame(sse_event.event, sse_event.data)
        except _INPUT_FAULTS as exc:
            raise self._wrap(exc, sse_event.event, sse_event.data, []) from exc
        if self.warnings:
            out += flush_warnings(self.warnings)
        return out

    def _wrap(
        self, exc: Exception, event: str, payload: bytes | str, before: list[Event]
    ) -> RemoteProtocolError:
        self._state = _State.ERROR
        raw = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
        if isinstance(exc, RemoteProtocolError):
            err = exc
            err.protocol = err.protocol or self.protocol
            err.frame = err.frame or self._frames
            if err.raw is None:
                err.raw = raw
        else:
            err = RemoteProtocolError(
                f"invalid {self.protocol} frame: {exc}",
                protocol=self.protocol,
                frame=self._frames,
                event_type=None if event == "message" else event,
                raw=raw,
            )
        err.events = before  # what the frames before the bad one decoded to: not lost
        return err

    def finish(self) -> list[Event]:
        """Signal end of input; return any last events.

        Raises:
            LocalProtocolError: Called twice or after an error.
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"decoder finished in state {self._state.value}",
                protocol=self.protocol,
                state=self._state.value,
            )
        self._sse.finish()
        self._state = _State.CLOSED
        try:
            out = self.on_finish()
        except _INPUT_FAULTS as exc:
            # Lazily decoded pieces (kept raw until the end) can fail only now.
            raise self._wrap(exc, "message", b"", []) from exc
        if self._sse.truncated:
            self.warn("the stream ended inside a frame; that partial frame was dropped")
        return out + flush_warnings(self.warnings)

    def on_frame(self, event: str, data: bytes | str) -> list[Event]:
        """Turn one SSE event (its type and data) into stream events.

        ``data`` is UTF-8 bytes on the fast path and ``str`` when the event came framed
        already; ``msgspec.json.decode`` takes both. Subclasses implement this, or the simpler
        :meth:`on_event`.
        """
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        return self.on_event(ServerSentEvent(event, text))

    def on_event(self, sse_event: ServerSentEvent) -> list[Event]:
        """Turn one SSE event into stream events (implement this or :meth:`on_frame`)."""
        raise NotImplementedError

    def on_finish(self) -> list[Event]:
        """Events to emit at end of input (none by default)."""
        return []


def flush_warnings(warnings: list[str]) -> list[Event]:
    """Turn a decoder's pending findings into :class:`~maas_stream.events.StreamWarning` events.

    Decoders append findings to their ``warnings`` list; the base classes flush it after every
    frame, so each finding reaches the aggregator (and snapshots) when it happens.
    """
    if not warnings:
        return []
    out: list[Event] = [StreamWarning(text=text) for text in warnings]
    warnings.clear()
    return out


HistoryDecoder: TypeAlias = Callable[[Any], list[Message]]
