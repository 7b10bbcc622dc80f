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

The direct fold, the base of the SSE decoders here, is ``_direct``'s (:class:`~._direct.DirectFold`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeAlias, cast

import msgspec

from .._exceptions import LocalProtocolError, RemoteProtocolError
from .._interfaces import Framing as Framing
from .._interfaces import StreamDecoder as StreamDecoder
from .._interfaces import StreamEncoder as StreamEncoder
from .._model import Message
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
from ._direct import DirectFold

if TYPE_CHECKING:
    from .._accumulate import PartState
    from .._drops import DropLog, Dropped
    from ..events import Event
    from ._direct import FoldTarget

__all__ = [
    "EventEncoder",
    "PartStates",
    "Framing",
    "SSEStreamDecoder",
    "StreamDecoder",
    "StreamEncoder",
    "flush_warnings",
    "model_name",
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


_MODELS: Final[dict[str, str]] = {}
"""Model names seen, each kept once (bounded: the first :data:`_MODEL_NAMES` short ones)."""
_MODEL_NAMES: Final = 64


def model_name(name: str | None) -> str | None:
    """A response's model name as a decoder keeps it (the same string).

    The first few distinct names are shared by every stream that names them: thousands of
    streams of one model hold one string, not one each (~50 bytes an idle stream).
    """
    if not name:
        return name
    found = _MODELS.get(name)
    if found is not None:
        return found
    if len(_MODELS) < _MODEL_NAMES and len(name) <= 100:
        _MODELS[name] = name
    return name


class PartStates(Protocol):
    """An aggregator's parts by the canonical keys its events carry (the emitting aggregator's)."""

    def part_state(self, message: int, part: int) -> PartState | None:
        """The part's state (``None``: no such part)."""
        ...


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

    def dropped(self) -> int:
        """How many distinct drop records there are.

        An encoder whose log is made at its first drop answers without making it (a
        converter asks after every chunk).
        """
        return len(self.drops)

    def read_text_from(self, parts: PartStates) -> None:
        """Read the text of the parts it writes from the aggregator feeding it, not keep a copy.

        A converter calls it when its aggregator folds every event before this encoder gets
        it (one response per stream): an encoder that keeps the text it wrote (for a part's
        end events) can then read it from ``parts`` instead (held as the object itself: a
        bound method would cost every stream an allocation). An encoder that keeps no text
        ignores it (the default).
        """

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
        if self._state is not _State.OPEN:
            self._check_open()  # raises
        payloads_names = self._sse.feed_payloads(data)  # (_payloads, inlined: per chunk)
        payloads, names = self._raw_payloads(data) if payloads_names is None else payloads_names
        on_frame = self.on_frame
        first = self._frames + 1
        out: list[Event]
        if len(payloads) == 1:
            # One frame (a slow network's chunk): on_frame's list, the caller's own, is the
            # output; a finding after it goes into a new one.
            self._frames = first
            event, payload = names[0], payloads[0]
            try:
                out = on_frame(event, payload)
            except _INPUT_FAULTS as exc:
                raise self._wrap(exc, event, payload, []) from exc
            return out + flush_warnings(self.warnings) if self.warnings else out
        out = []
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
        if self._state is not _State.OPEN:
            self._check_open()  # raises
        fast = self._sse.feed_payloads(data)
        return self._raw_payloads(data) if fast is None else fast

    def _raw_payloads(self, data: bytes) -> tuple[list[bytes], Sequence[str]]:
        """:meth:`_payloads` of a chunk ``Decoder.feed_payloads`` did not take (``feed_raw``)."""
        try:
            frames = self._sse.feed_raw(data)
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
        """Decode a chunk and fold it into ``target`` (the direct fold, ``_direct``).

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
        except BaseException:
            self._fold_end(True)
            raise
        self._fold_end(False)
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
        """Turn one SSE event (its type and data) into stream events: a new list, the caller's.

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
