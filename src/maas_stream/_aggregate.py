"""The aggregator: the keyed state machine from provider keys to canonical messages and parts.

Decoders emit events that still carry the provider's keys. The aggregator owns all item state:
it maps each ``(message key, part key)`` to one canonical part, applies the merge rules of
DESIGN.md, keeps usage, errors and unknown types, and builds :class:`~maas_stream.Response`
snapshots and the final result. With ``emit=True`` it also hands every event on with canonical
keys (message and part positions), which is what the re-encoding sinks consume.

Rules enforced here (and only here):

* Only deltas of the same call or block merge. A start with a new call id (or, without an id,
  a new name) at a part key that is still open closes that part and starts a new one.
* A tool call with no argument deltas keeps the arguments its start carried (``{}`` for
  Anthropic); a provider's own final value (``PartDone.value``) wins over the deltas, and a
  disagreement is reported in ``Response.warnings``. An empty delta is a no-op.
* Thinking is never merged across parts; signatures are set, never appended.
* Usage is assigned field by field, never added; unknown usage stays ``None``.
* A stream that ends while a part is open (no ``ResponseDone``) leaves that part and the
  response ``incomplete``; a finish reason of ``length`` leaves open tool calls ``incomplete``;
  an in-band error makes the response ``failed`` and keeps everything received before it.
* A ``ResponseStart`` after ``ResponseDone`` opens the next response of a session (Live and
  Realtime connections carry several); the final status is the last response's.
* Unknown types are kept (unknown parts, or ``Response.unknown_events``) and counted by type,
  and by (protocol, model, type) in :attr:`Aggregator.unknown_counts`.

It must not know any wire format.
"""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec

from ._exceptions import LocalProtocolError, RemoteProtocolError
from ._model import (
    AudioPart,
    CitationPart,
    FinishReason,
    Message,
    MessageStatus,
    Part,
    ReasoningPart,
    RefusalPart,
    Response,
    ResponseStatus,
    StreamError,
    TextPart,
    ToolCallPart,
    UnknownPart,
    Usage,
)
from .events import (
    AnnotationAdded,
    ArgumentsDelta,
    AudioDelta,
    Cancelled,
    Event,
    Key,
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

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["Aggregator"]

log = logging.getLogger("maas_stream")

_INCOMPLETE_FINISH: Final = frozenset({"length", "content_filter"})


class AggregatorState(enum.Enum):
    """States of the aggregator as a whole."""

    STREAMING = "STREAMING"
    """Events are arriving."""
    DONE = "DONE"
    """The provider ended the response (``ResponseDone``); only usage, errors and unknown
    frames may still follow."""
    FINISHED = "FINISHED"
    """:meth:`Aggregator.finish` was called; the result is fixed."""
    ERROR = "ERROR"
    """A misuse or an invalid event; every later call raises."""


class _PartState:
    """Mutable accumulator of one part. Private: snapshots are built from it, never shared."""

    __slots__ = (
        "annotations",
        "args",
        "audio_data",
        "audio_transcript",
        "base",
        "closed",
        "final",
        "index",
        "logprobs",
        "overrides",
        "status",
        "summary",
        "text",
    )

    def __init__(self, index: int, base: Part) -> None:
        self.index = index
        self.base = base
        self.text: list[str] = []
        self.args: list[str] = []
        self.summary: list[list[str]] | None = None
        self.annotations: list[CitationPart] | None = None
        self.logprobs: list[Any] | None = None
        self.audio_data: list[str] = []
        self.audio_transcript: list[str] = []
        self.overrides: dict[str, Any] | None = None
        self.final: Part | None = None
        self.closed = False
        self.status: str | None = None

    def set(self, name: str, value: Any) -> None:
        if self.overrides is None:
            self.overrides = {name: value}
        else:
            self.overrides[name] = value

    def build(self) -> Part:
        """Build the part as it stands. Reads state, never changes it."""
        if self.final is not None:
            return self.final
        base = self.base
        fields: dict[str, Any] = dict(self.overrides) if self.overrides else {}
        builder = _BUILDERS.get(type(base))
        if builder is not None:
            builder(self, base, fields)
        if not fields:
            return base
        return msgspec.structs.replace(base, **fields)


def _build_text(acc: _PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.text:
        fields["text"] = base.text + "".join(acc.text)
    if acc.annotations is not None:
        fields["annotations"] = [*(base.annotations or ()), *acc.annotations]
    if acc.logprobs is not None:
        fields["logprobs"] = [*(base.logprobs or ()), *acc.logprobs]


def _build_refusal(acc: _PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.text:
        fields["text"] = base.text + "".join(acc.text)
    if acc.logprobs is not None:
        fields["logprobs"] = [*(base.logprobs or ()), *acc.logprobs]


def _build_call(acc: _PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.args:
        fields["arguments"] = "".join(acc.args)
    elif not acc.closed and base.arguments:
        # A start value (Anthropic's "{}") stands only if no delta follows: until the call
        # closes, the arguments so far are none, so every snapshot stays a prefix.
        fields["arguments"] = ""
    if acc.status is not None:
        fields["status"] = acc.status


def _build_reasoning(acc: _PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.text:
        fields["text"] = (base.text or "") + "".join(acc.text)
    if acc.summary is not None:
        fields["summary"] = ["".join(s) for s in acc.summary]


def _build_audio(acc: _PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.audio_data:
        fields["data"] = (base.data or "") + "".join(acc.audio_data)
    if acc.audio_transcript:
        fields["transcript"] = (base.transcript or "") + "".join(acc.audio_transcript)


_BUILDERS: Final[dict[type[Any], Callable[[_PartState, Any, dict[str, Any]], None]]] = {
    TextPart: _build_text,
    RefusalPart: _build_refusal,
    ToolCallPart: _build_call,
    ReasoningPart: _build_reasoning,
    AudioPart: _build_audio,
}


class _MessageState:
    __slots__ = (
        "closed",
        "finish_reason",
        "index",
        "key",
        "parts",
        "parts_by_key",
        "provider_finish_reason",
        "start",
        "status",
        "value",
    )

    def __init__(self, index: int, key: Key, start: MessageStart) -> None:
        self.index = index
        self.key = key
        self.start = start
        self.parts: list[_PartState] = []
        self.parts_by_key: dict[Key, _PartState] = {}
        self.closed = False
        self.status: MessageStatus | None = None
        self.finish_reason: FinishReason | None = None
        self.provider_finish_reason: str | None = None
        self.value: Message | None = None

    def build(self, in_progress: bool) -> Message:
        if self.value is not None and not self.parts:
            return self.value
        start = self.start
        status = self.status
        if status is None and in_progress and not self.closed:
            status = "in_progress"
        base = self.value
        if base is not None:
            return msgspec.structs.replace(
                base, content=[p.build() for p in self.parts], status=status or base.status
            )
        return Message(
            role=start.role,
            content=[p.build() for p in self.parts],
            id=start.id,
            type=start.type,
            status=status,
            phase=cast("Any", start.phase),
            choice_index=start.choice_index,
            finish_reason=self.finish_reason,
            provider_raw=start.provider_raw,
        )


class Aggregator:
    """Fold a stream of events into one :class:`~maas_stream.Response`.

    Usage::

        agg = Aggregator("openai-chat")
        for event in decoder.feed(chunk):
            agg.feed(event)
        response = agg.finish()

    Args:
        protocol: The source protocol's name; stored on the response.
        emit: When true, :meth:`feed` returns the event (and any implied starts and ends) with
            canonical keys, for an encoder. When false it returns an empty list, which is
            cheaper: use it when only the final response is wanted.
    """

    def __init__(self, protocol: str, *, emit: bool = False) -> None:
        self.protocol = protocol
        self.emit = emit
        self._state = AggregatorState.STREAMING
        self._messages: list[_MessageState] = []
        self._first_open = 0
        """No message before this index is open (messages never reopen)."""
        self._by_key: dict[Key, _MessageState] = {}
        self._start: ResponseStart | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._usage: Usage | None = None
        self._error: StreamError | None = None
        self._done: ResponseDone | None = None
        self._unknown: dict[str, int] = {}
        self._unknown_events: list[UnknownPart] = []
        self._warnings: list[str] = []
        self._synth = 0
        self._calls: dict[str, tuple[_MessageState, _PartState]] = {}
        """Tool calls by id, for a cancellation that names only the call."""
        self.unknown_counts: dict[tuple[str, str | None, str], int] = {}
        """Unknown types seen, counted by (protocol, model, type)."""

    # ------------------------------------------------------------------ public API

    @property
    def state(self) -> AggregatorState:
        """The aggregator's current state."""
        return self._state

    @property
    def done(self) -> bool:
        """True once the provider ended the response (or reported an error)."""
        return self._done is not None or self._error is not None

    def feed(self, event: Event) -> list[Event]:
        """Apply one event; return it (and any implied events) with canonical keys if ``emit``.

        Raises:
            RemoteProtocolError: The event cannot follow what came before (a delta after the
                provider ended the response).
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        if self._state is not AggregatorState.STREAMING:
            self._check_late(event)
        out: list[Event] = []
        _HANDLERS[type(event)](self, event, out)
        return out

    def consume(self, events: list[Event]) -> None:
        """Apply events without handing anything on: the fast path when only the result counts.

        Raises:
            RemoteProtocolError: An event cannot follow what came before.
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        out = _DISCARD
        for event in events:
            if self._state is not AggregatorState.STREAMING:
                self._check_late(event)
            _HANDLERS[type(event)](self, event, out)
        out.clear()

    def feed_all(self, events: Iterable[Event]) -> list[Event]:
        """Apply several events; return the concatenated output of :meth:`feed`."""
        out: list[Event] = []
        for event in events:
            out += self.feed(event)
        return out

    def snapshot(self) -> Response:
        """The response as it stands, without changing any state.

        Every text, argument and reasoning field of a snapshot is a prefix of the same field in
        the final result.
        """
        return self._build(final=False)

    def finish(self) -> Response:
        """End the stream and return the final response.

        Parts still open are closed: ``completed`` when the provider ended the response,
        ``incomplete`` when the stream was cut (or failed).

        Raises:
            LocalProtocolError: Called twice or after an error.
        """
        if self._state in (AggregatorState.FINISHED, AggregatorState.ERROR):
            raise LocalProtocolError(
                f"aggregator finished in state {self._state.value}",
                protocol=self.protocol,
                state=self._state.value,
            )
        cut = self._done is None or self._error is not None
        for msg in self._messages:
            if not msg.closed:
                self._close_message(msg, "incomplete" if cut else None, [])
        self._state = AggregatorState.FINISHED
        return self._build(final=True)

    def finish_events(self) -> list[Event]:
        """Close what is still open and return the closing events with canonical keys.

        For a re-encoding sink: call it at end of stream, before :meth:`finish`. Returns
        nothing when ``emit`` is false.
        """
        out: list[Event] = []
        if self._state is not AggregatorState.STREAMING and self._state is not AggregatorState.DONE:
            return out
        cut = self._done is None or self._error is not None
        for msg in self._messages:
            if not msg.closed:
                self._close_message(msg, "incomplete" if cut else None, out)
        return out

    def warn(self, text: str) -> None:
        """Record a warning on the result (used by decoders for sequence gaps and the like)."""
        log.warning("%s: %s", self.protocol, text)
        self._warnings.append(text)

    # ------------------------------------------------------------------ building

    def _build(self, final: bool) -> Response:
        status: ResponseStatus
        done = self._done
        finish_reason = done.finish_reason if done else None
        provider_finish = done.provider_finish_reason if done else None
        if finish_reason is None:
            for msg in self._messages:
                if msg.finish_reason is not None:
                    finish_reason = msg.finish_reason
                    provider_finish = msg.provider_finish_reason
                    break
        if finish_reason == "stop" and any(_has_client_call(m) for m in self._messages):
            finish_reason = "tool_calls"  # one rule for every protocol: client calls end a turn
        if self._error is not None:
            status = "failed"
            finish_reason = finish_reason or "error"
        elif done is not None:
            if done.status is not None:
                status = done.status
            elif finish_reason in _INCOMPLETE_FINISH:
                status = "incomplete"
            else:
                status = "completed"
        else:
            status = "incomplete" if final else "in_progress"
        start = self._start
        return Response(
            protocol=self.protocol,
            status=status,
            messages=[m.build(not final) for m in self._messages],
            id=self._id,
            model=self._model,
            finish_reason=finish_reason,
            provider_finish_reason=provider_finish,
            usage=self._usage,
            error=self._error,
            unknown=dict(self._unknown),
            unknown_events=list(self._unknown_events) or None,
            warnings=list(self._warnings) or None,
            provider_raw=start.provider_raw if start is not None else None,
        )

    # ------------------------------------------------------------------ state helpers

    def _check_late(self, event: Event) -> None:
        if self._state is AggregatorState.DONE:
            if isinstance(
                event,
                UsageUpdate
                | StreamErrorEvent
                | UnknownEvent
                | ResponseDone
                | ResponseStart
                | StreamWarning
                | Cancelled,
            ):
                return
            if isinstance(event, MessageDone):
                return
            self._state = AggregatorState.ERROR
            raise RemoteProtocolError(
                f"{type(event).__name__} after the provider ended the response",
                protocol=self.protocol,
                state="DONE",
            )
        raise LocalProtocolError(
            f"aggregator fed in state {self._state.value}", protocol=self.protocol, state=self._state.value
        )

    def _message(self, key: Key, out: list[Event]) -> _MessageState:
        msg = self._by_key.get(key)
        if msg is None:
            msg = self._new_message(key, MessageStart(message=key), out)
        return msg

    def _new_message(self, key: Key, start: MessageStart, out: list[Event]) -> _MessageState:
        msg = _MessageState(len(self._messages), key, start)
        self._messages.append(msg)
        self._by_key[key] = msg
        if self.emit:
            out.append(msgspec.structs.replace(start, message=msg.index))
        return msg

    def _part(self, message: Key, key: Key, make: Callable[[], Part], out: list[Event]) -> _PartState:
        msg = self._by_key.get(message)
        if msg is None:
            msg = self._message(message, out)
        part = msg.parts_by_key.get(key)
        if part is None:
            part = self._new_part(msg, key, make(), out)
        return part

    def _new_part(self, msg: _MessageState, key: Key, value: Part, out: list[Event]) -> _PartState:
        part = _PartState(len(msg.parts), value)
        msg.parts.append(part)
        msg.parts_by_key[key] = part
        if isinstance(value, ToolCallPart) and value.id:
            self._calls[value.id] = (msg, part)
        if self.emit:
            # Content always travels as deltas: a start carries none (a whole part's text
            # follows at once as one delta; a call's arguments by the end of the part), so
            # no encoder reads content from a start or a done value.
            content = _CONTENT.get(type(value))
            text = getattr(value, content) if content is not None else None
            if text and content is not None:
                out.append(
                    PartStart(
                        message=msg.index,
                        part=part.index,
                        value=msgspec.structs.replace(value, **{content: ""}),
                    )
                )
                if not isinstance(value, ToolCallPart):
                    out.append(_DELTAS[type(value)](msg.index, part.index, text))
            else:
                out.append(PartStart(message=msg.index, part=part.index, value=value))
        return part

    def _close_part(self, msg: _MessageState, part: _PartState, status: str | None, out: list[Event]) -> None:
        if part.closed:
            return
        part.closed = True
        if isinstance(part.base, ToolCallPart) and part.status is None:
            part.status = status or "completed"
        if self.emit:
            value = part.build()
            rest = _remainder(part, value)
            if rest:
                # A value the provider completed only in its .done event (or a start value no
                # delta replaced): the rest goes out as a delta, the same for every encoder.
                out.append(_DELTAS[type(value)](msg.index, part.index, rest))
            out.append(PartDone(message=msg.index, part=part.index, value=value))

    def _close_message(self, msg: _MessageState, status: MessageStatus | None, out: list[Event]) -> None:
        if msg.finish_reason == "stop" and _has_client_call(msg):
            msg.finish_reason = "tool_calls"
        part_status = status
        if part_status is None and msg.finish_reason == "length":
            part_status = "incomplete"
        for part in msg.parts:
            if not part.closed:
                self._close_part(msg, part, part_status, out)
        msg.closed = True
        if status is not None and msg.status is None:
            msg.status = status
        elif msg.status is None:
            msg.status = "incomplete" if msg.finish_reason in _INCOMPLETE_FINISH else "completed"
        if self.emit:
            out.append(
                MessageDone(
                    message=msg.index,
                    status=msg.status,
                    finish_reason=msg.finish_reason,
                    provider_finish_reason=msg.provider_finish_reason,
                    value=msg.build(False),
                )
            )

    def _synth_id(self) -> str:
        self._synth += 1
        return f"call_maas_{self._synth}"

    # ------------------------------------------------------------------ handlers: deltas

    def _on_text(self, ev: TextDelta, out: list[Event]) -> None:
        if not ev.text:
            return
        msg = self._by_key.get(ev.message)
        part = msg.parts_by_key.get(ev.part) if msg is not None else None
        if part is None:
            part = self._part(ev.message, ev.part, _empty_text, out)
        part.text.append(ev.text)
        if self.emit:
            out.append(TextDelta(message=self._by_key[ev.message].index, part=part.index, text=ev.text))

    def _on_args(self, ev: ArgumentsDelta, out: list[Event]) -> None:
        if not ev.delta:
            return
        msg = self._by_key.get(ev.message)
        part = msg.parts_by_key.get(ev.part) if msg is not None else None
        if part is None:
            part = self._part(ev.message, ev.part, self._empty_call, out)
        part.args.append(ev.delta)
        if self.emit:
            out.append(
                ArgumentsDelta(message=self._by_key[ev.message].index, part=part.index, delta=ev.delta)
            )

    def _on_reasoning(self, ev: ReasoningDelta, out: list[Event]) -> None:
        if not ev.text:
            return
        part = self._part(ev.message, ev.part, ReasoningPart, out)
        part.text.append(ev.text)
        if self.emit:
            out.append(ReasoningDelta(message=self._by_key[ev.message].index, part=part.index, text=ev.text))

    def _on_refusal(self, ev: RefusalDelta, out: list[Event]) -> None:
        if not ev.text:
            return
        part = self._part(ev.message, ev.part, _empty_refusal, out)
        part.text.append(ev.text)
        if self.emit:
            out.append(RefusalDelta(message=self._by_key[ev.message].index, part=part.index, text=ev.text))

    def _on_summary(self, ev: SummaryDelta, out: list[Event]) -> None:
        part = self._part(ev.message, ev.part, ReasoningPart, out)
        summary = part.summary
        if summary is None:
            base = part.base
            existing = base.summary if isinstance(base, ReasoningPart) and base.summary else []
            summary = part.summary = [[s] for s in existing]
        while len(summary) <= ev.index:
            summary.append([])
        if ev.text:
            summary[ev.index].append(ev.text)
        if self.emit:
            out.append(
                SummaryDelta(
                    message=self._by_key[ev.message].index, part=part.index, index=ev.index, text=ev.text
                )
            )

    def _on_signature(self, ev: SignatureDelta, out: list[Event]) -> None:
        part = self._part(ev.message, ev.part, ReasoningPart, out)
        if "signature" not in type(part.base).__struct_fields__:
            self.warn(f"a signature for a {part.base.__struct_config__.tag} part, which has none; dropped")
            return
        part.set("signature", ev.signature)
        if self.emit:
            out.append(
                SignatureDelta(
                    message=self._by_key[ev.message].index, part=part.index, signature=ev.signature
                )
            )

    def _on_audio(self, ev: AudioDelta, out: list[Event]) -> None:
        part = self._part(ev.message, ev.part, AudioPart, out)
        if ev.data:
            part.audio_data.append(ev.data)
        if ev.transcript:
            part.audio_transcript.append(ev.transcript)
        if ev.id is not None:
            part.set("id", ev.id)
        if ev.expires_at is not None:
            part.set("expires_at", ev.expires_at)
        if self.emit:
            out.append(msgspec.structs.replace(ev, message=self._by_key[ev.message].index, part=part.index))

    def _on_annotation(self, ev: AnnotationAdded, out: list[Event]) -> None:
        part = self._part(ev.message, ev.part, _empty_text, out)
        if part.annotations is None:
            part.annotations = []
        part.annotations.append(ev.citation)
        if self.emit:
            out.append(
                AnnotationAdded(message=self._by_key[ev.message].index, part=part.index, citation=ev.citation)
            )

    def _on_logprobs(self, ev: LogprobsDelta, out: list[Event]) -> None:
        if not ev.logprobs:
            return
        part = self._part(ev.message, ev.part, _empty_text, out)
        if part.logprobs is None:
            part.logprobs = []
        part.logprobs.extend(ev.logprobs)
        if self.emit:
            out.append(
                LogprobsDelta(message=self._by_key[ev.message].index, part=part.index, logprobs=ev.logprobs)
            )

    # ------------------------------------------------------------------ handlers: structure

    def _on_part_start(self, ev: PartStart, out: list[Event]) -> None:
        msg = self._by_key.get(ev.message)
        if msg is None:
            msg = self._message(ev.message, out)
        value = ev.value
        part = msg.parts_by_key.get(ev.part)
        if part is not None and not part.closed and isinstance(value, ToolCallPart):
            base = part.base
            if isinstance(base, ToolCallPart) and _same_call(base, value):
                # A provider repeating the id (and name) on a later fragment: same call.
                fill: dict[str, Any] = {}
                if not base.name and value.name:
                    fill["name"] = value.name
                if not base.id and value.id:
                    fill["id"] = value.id
                if fill:
                    part.base = msgspec.structs.replace(base, **fill)
                return
        if part is not None and not part.closed:
            self._close_part(msg, part, None, out)
        if isinstance(value, ToolCallPart) and not value.id:
            value = msgspec.structs.replace(value, id=self._synth_id())
        self._new_part(msg, ev.part, value, out)

    def _on_part_done(self, ev: PartDone, out: list[Event]) -> None:
        msg = self._by_key.get(ev.message)
        part = msg.parts_by_key.get(ev.part) if msg is not None else None
        if msg is None or part is None:
            if ev.value is None:
                return  # closing something that never opened: nothing to keep
            msg = msg or self._message(ev.message, out)
            part = self._new_part(msg, ev.part, ev.value, out)
        value = ev.value
        if value is not None:
            current = part.build()
            if isinstance(value, ToolCallPart) and isinstance(current, ToolCallPart):
                if part.args and current.arguments != value.arguments:
                    self.warn(
                        f"tool call {value.id or current.id}: final arguments differ from the streamed "
                        f"deltas; the final value wins"
                    )
                if value.status is None:
                    value = msgspec.structs.replace(value, status="completed")
                if not value.id and current.id:
                    value = msgspec.structs.replace(value, id=current.id)
            elif part.text and isinstance(value, TextPart | RefusalPart | ReasoningPart):
                if getattr(current, "text", None) != value.text and value.text is not None:
                    self.warn(
                        f"message {msg.index} part {part.index}: final {value.__struct_config__.tag} text "
                        f"differs from the streamed deltas; the final value wins"
                    )
            part.final = value
        self._close_part(msg, part, None, out)

    def _on_message_start(self, ev: MessageStart, out: list[Event]) -> None:
        msg = self._by_key.get(ev.message)
        if msg is not None and not msg.closed:
            # Repeated role announcements (Chat compat servers send role on every chunk).
            return
        self._new_message(ev.message, ev, out)

    def _on_message_done(self, ev: MessageDone, out: list[Event]) -> None:
        msg = self._by_key.get(ev.message)
        if msg is None:
            if ev.value is None and ev.finish_reason is None:
                return
            msg = self._message(ev.message, out)
        if ev.finish_reason is not None:
            msg.finish_reason = ev.finish_reason
            msg.provider_finish_reason = ev.provider_finish_reason
        if ev.value is not None:
            msg.value = ev.value
        if msg.closed:
            return
        self._close_message(msg, ev.status, out)

    def _on_usage(self, ev: UsageUpdate, out: list[Event]) -> None:
        new = ev.usage
        old = self._usage
        if old is None:
            self._usage = new
        else:
            fields = {f: getattr(new, f) for f in new.__struct_fields__ if getattr(new, f) is not None}
            if isinstance(old.raw, dict) and isinstance(new.raw, dict):
                fields["raw"] = {**old.raw, **new.raw}
            self._usage = msgspec.structs.replace(old, **fields)
        if self.emit:
            out.append(UsageUpdate(usage=self._usage))

    def _on_response_start(self, ev: ResponseStart, out: list[Event]) -> None:
        if self._start is None or ev.provider_raw is not None:
            self._start = ev
        if self._state is AggregatorState.DONE:
            # A session protocol (Live, Realtime) carries several responses on one connection:
            # a start after the provider ended a response opens the next one.
            self._state = AggregatorState.STREAMING
            self._done = None
        if ev.id:
            self._id = ev.id
        if ev.model:
            self._model = ev.model
        if self.emit:
            out.append(ev)

    def _on_response_done(self, ev: ResponseDone, out: list[Event]) -> None:
        if ev.finish_reason == "stop" and any(
            _has_client_call(m) for m in self._messages[self._first_open :]
        ):
            ev = msgspec.structs.replace(ev, finish_reason="tool_calls")
        if self._done is None:
            self._done = ev
        if self._state is AggregatorState.STREAMING:
            self._state = AggregatorState.DONE
        # Messages close for good, so the closed ones before the first open one are skipped
        # for ever: a long session of many responses stays linear, not quadratic.
        messages = self._messages
        first = self._first_open
        while first < len(messages) and messages[first].closed:
            first += 1
        self._first_open = first
        for msg in messages[first:]:
            if not msg.closed:
                self._close_message(msg, None, out)
        if self.emit:
            out.append(ev)

    def _on_error(self, ev: StreamErrorEvent, out: list[Event]) -> None:
        if self._error is None:
            self._error = ev.error
        if self.emit:
            out.append(ev)

    def _on_unknown(self, ev: UnknownEvent, out: list[Event]) -> None:
        ptype = ev.provider_type
        self._unknown[ptype] = self._unknown.get(ptype, 0) + 1
        ckey = (self.protocol, self._model, ptype)
        self.unknown_counts[ckey] = self.unknown_counts.get(ckey, 0) + 1
        log.info("unknown %s type %r (model %s)", self.protocol, ptype, self._model)
        value = UnknownPart(provider_type=ptype, raw=ev.raw)
        if ev.message is None:
            self._unknown_events.append(value)
            if self.emit:
                out.append(ev)
            return
        msg = self._by_key.get(ev.message) or self._message(ev.message, out)
        key = ev.part if ev.part is not None else ("unknown", len(msg.parts))
        part = msg.parts_by_key.get(key)
        if part is not None and not part.closed:
            self._close_part(msg, part, None, out)
        part = self._new_part(msg, key, value, out)
        self._close_part(msg, part, None, out)

    def _on_warning(self, ev: StreamWarning, out: list[Event]) -> None:
        log.warning("%s: %s", self.protocol, ev.text)
        self._warnings.append(ev.text)
        if self.emit:
            out.append(ev)

    def _on_cancelled(self, ev: Cancelled, out: list[Event]) -> None:
        targets: list[tuple[_MessageState, _PartState | None]] = []
        if ev.call_id is not None:
            found = self._calls.get(ev.call_id)
            if found is None:
                self.warn(f"cancellation of call {ev.call_id!r}, which never arrived")
                return
            targets.append(found)
        elif ev.message is not None:
            msg = self._by_key.get(ev.message)
            if msg is None:
                return  # nothing of it arrived: nothing to mark
            part = msg.parts_by_key.get(ev.part) if ev.part is not None else None
            if ev.part is not None and part is None:
                return
            targets.append((msg, part))
        for msg, part in targets:
            if self.emit:
                out.append(
                    Cancelled(
                        message=msg.index, part=part.index if part is not None else None, reason=ev.reason
                    )
                )
            for each in msg.parts if part is None else [part]:
                self._cancel_part(msg, each, out)
            if part is None or msg.closed:
                msg.status = "incomplete"
            if part is None and not msg.closed:
                self._close_message(msg, "incomplete", out)

    def _cancel_part(self, msg: _MessageState, part: _PartState, out: list[Event]) -> None:
        if not isinstance(part.base, ToolCallPart):
            self._close_part(msg, part, "incomplete", out)
            return
        part.status = "incomplete"
        final = part.final
        if isinstance(final, ToolCallPart) and final.status != "incomplete":
            part.final = msgspec.structs.replace(final, status="incomplete")
        if not part.closed:
            self._close_part(msg, part, "incomplete", out)

    def _empty_call(self) -> ToolCallPart:
        return ToolCallPart(id=self._synth_id(), name="", arguments="")


_DISCARD: list[Event] = []
"""Where events go when nobody listens (``emit`` is false, nothing is appended)."""

_HANDLERS: Final[dict[type[Any], Callable[[Aggregator, Any, list[Event]], None]]] = {
    TextDelta: Aggregator._on_text,
    ArgumentsDelta: Aggregator._on_args,
    ReasoningDelta: Aggregator._on_reasoning,
    RefusalDelta: Aggregator._on_refusal,
    SummaryDelta: Aggregator._on_summary,
    SignatureDelta: Aggregator._on_signature,
    AudioDelta: Aggregator._on_audio,
    AnnotationAdded: Aggregator._on_annotation,
    LogprobsDelta: Aggregator._on_logprobs,
    PartStart: Aggregator._on_part_start,
    PartDone: Aggregator._on_part_done,
    MessageStart: Aggregator._on_message_start,
    MessageDone: Aggregator._on_message_done,
    UsageUpdate: Aggregator._on_usage,
    ResponseStart: Aggregator._on_response_start,
    ResponseDone: Aggregator._on_response_done,
    StreamErrorEvent: Aggregator._on_error,
    UnknownEvent: Aggregator._on_unknown,
    StreamWarning: Aggregator._on_warning,
    Cancelled: Aggregator._on_cancelled,
}


_CONTENT: Final[dict[type[Any], str]] = {
    TextPart: "text",
    RefusalPart: "text",
    ReasoningPart: "text",
    ToolCallPart: "arguments",
}
"""The streamed content field of each part type that streams."""

_DELTAS: Final[dict[type[Any], Callable[[int, int, str], Event]]] = {
    TextPart: lambda m, p, text: TextDelta(message=m, part=p, text=text),
    RefusalPart: lambda m, p, text: RefusalDelta(message=m, part=p, text=text),
    ReasoningPart: lambda m, p, text: ReasoningDelta(message=m, part=p, text=text),
    ToolCallPart: lambda m, p, text: ArgumentsDelta(message=m, part=p, delta=text),
}
"""The delta event that appends to each streamed content field."""


def _remainder(part: _PartState, value: Part) -> str:
    """What of a part's final content was never sent as a delta (emitted starts carry none)."""
    content = _CONTENT.get(type(value))
    if content is None:
        return ""
    final = getattr(value, content) or ""
    if isinstance(value, ToolCallPart):
        sent = "".join(part.args)
    else:
        sent = (getattr(part.base, content) or "") + "".join(part.text)
    if len(final) > len(sent) and final.startswith(sent):
        return final[len(sent) :]
    return ""


def _has_client_call(msg: _MessageState) -> bool:
    """Whether a message holds a call the client must run (function or custom, not cancelled)."""
    for part in msg.parts:
        base = part.base
        if (
            isinstance(base, ToolCallPart)
            and base.kind in ("function", "custom")
            and part.status != "incomplete"
        ):
            return True
    return False


def _empty_text() -> TextPart:
    return TextPart(text="")


def _empty_refusal() -> RefusalPart:
    return RefusalPart(text="")


def _same_call(a: ToolCallPart, b: ToolCallPart) -> bool:
    if b.id:
        return not a.id or a.id == b.id
    return not b.name or not a.name or a.name == b.name
