"""The fold: provider keys → canonical messages and parts, and what they become.

This is the bottom of the aggregator (``_aggregate``): its state, the helpers that open and
close messages and parts, and the building of the result (a :class:`~maas_stream.Response`
or a :class:`~maas_stream.Session`). The content deltas are applied in ``_deltas``; the
lifecycle handlers are in ``_lifecycle``; the public :class:`~maas_stream.Aggregator` is in
``_aggregate``; handing events on with canonical keys is the emitter's job (``_emit``), through
the four ``_opened_*`` / ``_closed_*`` hooks, which do nothing here.

It must not know any wire format, and must not build canonical events (the emitter does).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from ._accumulate import (
    AggregatorState,
    MessageState,
    PartState,
    RareState,
    SpanState,
    has_client_call,
    settle,
    turn_finish,
)
from ._holders import NO_ITEMS, add_keyed, find_keyed
from ._model import (
    ASSISTANT_ROLES,
    MessageStatus,
    Part,
    Response,
    ResponseStatus,
    Session,
    SessionEvent,
    StreamError,
    ToolCallPart,
    Usage,
)
from .events import MessageStart

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .events import (
        Event,
        Key,
        ResponseDone,
        ResponseStart,
    )

__all__ = ["Fold"]

log = logging.getLogger("maas_stream")


class Fold:
    """Aggregator state, message/part bookkeeping and the content-delta handlers.

    Slotted (as are its subclasses), so an idle aggregator holds no instance dict.
    """

    __slots__ = (
        "_done",
        "_error",
        "_first_open",
        "_id",
        "_keyed",
        "_messages",
        "_model",
        "_rare",
        "_spans",
        "_start",
        "_started",
        "_state",
        "_synth",
        "_usage",
        "protocol",
    )

    emit: bool = False
    """Whether :meth:`~maas_stream.Aggregator.feed` hands events on (the emitter sets it)."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self._state = AggregatorState.STREAMING
        self._messages: list[MessageState] = NO_ITEMS
        """Every message in order (a list from the first: ``_new_message``)."""
        self._first_open = 0
        """No message before this index is open (messages never reopen)."""
        self._keyed: dict[Key, MessageState] | None = None
        """The messages by key, made with the second (the first is found by its own key: ``find_keyed``)."""
        self._start: ResponseStart | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._usage: Usage | None = None
        self._error: StreamError | None = None
        self._done: ResponseDone | None = None
        self._rare: RareState | None = None
        """Unknown types, warnings, calls by id, session entries: made on first use."""
        self._synth = 0
        self._spans: list[SpanState] = NO_ITEMS
        """The responses of a session, in order (one for a one-response protocol)."""
        self._started = 0
        """How many spans became model responses so far."""

    @property
    def unknown_counts(self) -> dict[tuple[str, str | None, str], int]:
        """Unknown types seen, counted by (protocol, model, type)."""
        return self._more().unknown_counts

    def _more(self) -> RareState:
        """The rarely needed state (made on first use)."""
        rare = self._rare
        if rare is None:
            rare = self._rare = RareState()
        return rare

    def forget_passthrough(self) -> None:
        """Count a session's pass-through messages by type without keeping them.

        A pass-through message (an :class:`~maas_stream.events.UnknownEvent` with
        ``passthrough``: a session message no canonical event models, or a client message) is
        otherwise kept twice, as a session event and in ``unknown_events``, for the session's
        whole life. A relay that needs only the responses and the counts (the bridge's record)
        forgets them: its memory then grows with the responses, not with every message relayed.
        """
        self._more().keep_passthrough = False

    def warn(self, text: str) -> None:
        """Record a warning on the result (and log it)."""
        log.warning("%s: %s", self.protocol, text)
        self._more().warnings.append(text)
        if self._spans:
            span = self._spans[-1]
            if span.warnings is None:
                span.warnings = []
            span.warnings.append(text)

    def _span(self) -> SpanState:
        """The response being folded (the first one opens with the first event)."""
        spans = self._spans
        if not spans:
            span = self._first_span()
            self._spans = [span]
            return span
        return spans[-1]

    def _first_span(self) -> SpanState:
        """The first response: it shares :attr:`_messages` (``None``) while that holds none of another."""
        return SpanState(NO_ITEMS if self._messages else None)

    def _span_messages(self, span: SpanState) -> list[MessageState]:
        """A response's messages (the first one's may be :attr:`_messages`, shared)."""
        messages = span.messages
        return self._messages if messages is None else messages

    def _session_event(self, event: SessionEvent) -> None:
        self._more().entries.append(msgspec.structs.replace(event, after=self._started))

    def _mark_real(self, span: SpanState) -> None:
        """A span turned out to be a model response (see :attr:`SpanState.real`)."""
        if not span.real:
            span.real = True
            self._started += 1

    def part_buffers(self, message: Key, part: Key) -> PartState | None:
        """The part a decoder may fold text, arguments, summary and audio deltas into directly, or ``None``.

        The aggregator's half of the direct fold (``protocols/_direct.py``): a part is handed out
        only when it exists and a delta would go straight into its buffers (:meth:`_on_text`,
        :meth:`_on_args`, :meth:`_on_summary` once the part has a summary, :meth:`_on_audio`)
        with nothing handed on, so appending to it is what the event would do.
        """
        if self._state is not AggregatorState.STREAMING or self.emit:
            return None
        msg = find_keyed(self._messages, self._keyed, message)
        return None if msg is None else find_keyed(msg.parts, msg.by_key, part)

    def open_part(
        self, message: Key, close: Key | None, part: Key, value: Part, done: bool = False
    ) -> PartState | None:
        """Close part ``close`` (if given) and open ``part`` as ``value``, handing nothing on.

        The aggregator's other half of the direct fold: what ``PartDone(close)``, then
        ``PartStart(part, value)`` (then ``PartDone(part)`` when ``done``) would leave, for a
        decoder that switches runs or gets a whole call in one frame. ``None`` (nothing done)
        unless the message exists, ``part`` is new, a call has its id, and deltas go straight in
        (:meth:`part_buffers`); else the new part.
        """
        if self._state is not AggregatorState.STREAMING or self.emit:
            return None
        msg = find_keyed(self._messages, self._keyed, message)
        if msg is None or find_keyed(msg.parts, msg.by_key, part) is not None:
            return None
        if isinstance(value, ToolCallPart) and not value.id:
            return None  # the event path gives it an id: let it
        out: list[Event] = []
        if close is not None:
            old = find_keyed(msg.parts, msg.by_key, close)
            if old is not None:
                self._close_part(msg, old, None, out)
        new = self._new_part(msg, part, value, out)
        if done:
            self._close_part(msg, new, None, out)
        return new

    # ------------------------------------------------------------------ hooks (the emitter's)
    # Called only when ``emit`` (nothing is handed on otherwise: a call saved per part and message).

    def _opened_message(self, msg: MessageState, out: list[Event]) -> None:
        """A message was opened."""

    def _opened_part(self, msg: MessageState, part: PartState, out: list[Event]) -> None:
        """A part was opened."""

    def _closed_part(self, msg: MessageState, part: PartState, out: list[Event]) -> None:
        """A part was closed."""

    def _closed_message(self, msg: MessageState, out: list[Event]) -> None:
        """A message was closed."""

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
        if done is None and finish_reason == "stop":
            # A done response was normalized when it ended; a session's earlier turns do not count.
            finish_reason = turn_finish(finish_reason, any(has_client_call(m) for m in self._open()))
        if self._error is not None:
            status = "failed"
            finish_reason = finish_reason or "error"
        elif done is not None:
            if done.status is not None:
                status = done.status
            elif finish_reason in ("length", "content_filter"):
                status = "incomplete"
            else:
                status = "completed"
        else:
            status = "incomplete" if final else "in_progress"
        start = self._start
        error = self._error
        usage = self._usage
        rare = self._rare
        last = self._last_response(final)
        if last is not None:
            # A session folded into one response: every message in order, and the status,
            # finish reason, usage and error of its last model response (docs/sessions.md).
            status, error, usage = last.status, last.error, last.usage
            finish_reason, provider_finish = last.finish_reason, last.provider_finish_reason
        return Response(
            protocol=self.protocol,
            status=status,
            messages=[m.build(not final, self.protocol) for m in self._messages],
            id=self._id,
            model=self._model,
            finish_reason=finish_reason,
            provider_finish_reason=provider_finish,
            usage=usage,
            error=error,
            unknown=dict(rare.unknown) if rare is not None else {},
            unknown_events=list(rare.unknown_events) or None if rare is not None else None,
            warnings=list(rare.warnings) or None if rare is not None else None,
            provider_raw=start.provider_raw if start is not None else None,
        )

    def _last_response(self, final: bool) -> Response | None:
        """A session's last model response, when there are several spans (else ``None``)."""
        spans = self._spans
        if len(spans) < 2:
            return None
        for span in reversed(spans):
            if span.real:
                model = [m for m in self._span_messages(span) if m.start.role in ASSISTANT_ROLES]
                return self._span_response(span, model, final)
        return None

    def _build_session(self, final: bool) -> Session:
        """The session as it stands: one response per span that is a model response.

        A span is a model response (:attr:`SpanState.real`) when it holds a model message, the
        provider's own start opened it, or the provider ended it with a status or finish reason;
        the spans a decoder opened only to hold session messages are not. Messages that are not
        the model's become session events.
        """
        responses: list[Response] = []
        failed: StreamError | None = None
        cut = False
        for span in self._spans:
            if span.real:
                model = [m for m in self._span_messages(span) if m.start.role in ASSISTANT_ROLES]
                responses.append(self._span_response(span, model, final))
                cut = span.done is None and span.error is None
            elif span.error is not None and failed is None:
                failed = span.error
        events: list[SessionEvent] = []
        rare = self._rare
        for entry in rare.entries if rare is not None else ():
            if isinstance(entry, SessionEvent):
                events.append(entry)
                continue
            message = entry.build(not final, self.protocol)
            if entry.start.type == "input_transcription":
                kind: Any = "input_transcript"
            elif message.role == "tool":
                kind = "tool_result"
            else:
                kind = "client"
            assert rare is not None
            after = rare.after[entry.index]
            events.append(
                SessionEvent(kind=kind, type=entry.start.type or message.role, after=after, message=message)
            )
        status: ResponseStatus = "completed"
        if failed is not None:
            status = "failed"
        elif cut:
            status = "incomplete" if final else "in_progress"
        return Session(
            protocol=self.protocol,
            status=status,
            responses=responses,
            events=events,
            model=self._model,
            error=failed,
            unknown=dict(rare.unknown) if rare is not None else {},
            warnings=list(rare.warnings) or None if rare is not None else None,
        )

    def _span_response(self, span: SpanState, messages: list[MessageState], final: bool) -> Response:
        """One response of a session, with its own status, finish reason, usage and error."""
        done = span.done
        finish = done.finish_reason if done else None
        provider_finish = done.provider_finish_reason if done else None
        if finish is None:
            for msg in messages:
                if msg.finish_reason is not None:
                    finish, provider_finish = msg.finish_reason, msg.provider_finish_reason
                    break
        calls = any(has_client_call(m) for m in messages)
        if finish == "tool_calls" and not calls:
            finish = "stop"  # its calls were cancelled after the turn ended: none is left to run
        finish = turn_finish(finish, calls)
        built = [m.build(not final, self.protocol) for m in messages]
        status: ResponseStatus
        if span.error is not None:
            status = "failed"
            finish = finish or "error"
        elif done is not None:
            if done.status is not None:
                status = done.status
            elif finish in ("length", "content_filter"):
                status = "incomplete"
            else:
                status = "completed"
            if status == "completed" and any(m.status == "incomplete" for m in built):
                status = "incomplete"  # an item the provider cut or cancelled: the turn did not complete
        else:
            status = "incomplete" if final else "in_progress"
        start = span.start
        return Response(
            protocol=self.protocol,
            status=status,
            messages=built,
            id=span.id,
            model=self._model,
            finish_reason=finish,
            provider_finish_reason=provider_finish,
            usage=span.usage,
            error=span.error,
            unknown=dict(span.unknown) if span.unknown else {},
            unknown_events=list(span.unknown_events) if span.unknown_events else None,
            warnings=list(span.warnings) if span.warnings else None,
            provider_raw=start.provider_raw if start is not None else None,
        )

    # ------------------------------------------------------------------ messages and parts

    def _message(self, key: Key, out: list[Event]) -> MessageState:
        msg = find_keyed(self._messages, self._keyed, key)
        if msg is None:
            msg = self._new_message(key, MessageStart(message=key), out)
        return msg

    def _new_message(self, key: Key, start: MessageStart, out: list[Event]) -> MessageState:
        spans = self._spans
        span = spans[-1] if spans else self._span()
        messages = self._messages
        msg = MessageState(len(messages), key, start)
        self._messages, self._keyed = add_keyed(messages, self._keyed, msg)
        held = span.messages
        if held is not None:
            if held:
                held.append(msg)
            else:
                span.messages = [msg]
        if start.role in ASSISTANT_ROLES:
            if not span.real:
                self._mark_real(span)
        else:
            rare = self._more()
            rare.after[msg.index] = self._started
            rare.entries.append(msg)
        if self.emit:
            self._opened_message(msg, out)
        return msg

    def _part(self, message: Key, key: Key, make: Callable[[], Part], out: list[Event]) -> PartState:
        msg = find_keyed(self._messages, self._keyed, message)
        if msg is None:
            msg = self._message(message, out)
        part = find_keyed(msg.parts, msg.by_key, key)
        if part is None:
            part = self._new_part(msg, key, make(), out)
        return part

    def _new_part(self, msg: MessageState, key: Key, value: Part, out: list[Event]) -> PartState:
        part = PartState(msg.index, len(msg.parts), value, key)
        msg.parts, msg.by_key = add_keyed(msg.parts, msg.by_key, part)
        if isinstance(value, ToolCallPart):
            part.args = []
            if value.id:
                self._more().calls[value.id] = (msg, part)
        if self.emit:
            self._opened_part(msg, part, out)
        return part

    def _whole_parts(self, msg: MessageState, parts: Sequence[tuple[Key, Part]]) -> None:
        """New parts of ``msg`` at new keys, closed at once, handing nothing on (not for the emitter).

        What :meth:`_new_part` then :meth:`_close_part` of each leave, done in one loop (a
        direct turn's end, ``end_message``): nothing was folded into them, so nothing is
        settled, and a call has no final value, so it is ``completed``.
        """
        index = msg.index
        held, by_key = msg.parts, msg.by_key
        for key, value in parts:
            part = PartState(index, len(held), value, key)
            part.closed = True
            held, by_key = add_keyed(held, by_key, part)
            if isinstance(value, ToolCallPart):
                part.status = "completed"
                if value.id:
                    self._more().calls[value.id] = (msg, part)
        msg.parts, msg.by_key = held, by_key

    def _close_part(self, msg: MessageState, part: PartState, status: str | None, out: list[Event]) -> None:
        if part.closed:
            return
        part.closed = True
        text, args = part.text, part.args
        if text is not None and len(text) > 1:
            settle(text)
        if args is not None and len(args) > 1:
            settle(args)
        if isinstance(part.base, ToolCallPart) and part.status is None:
            final = part.final
            done_status = final.status if isinstance(final, ToolCallPart) else None
            part.status = done_status or status or "completed"  # the provider's final word wins
        if self.emit:
            self._closed_part(msg, part, out)

    def _open(self) -> list[MessageState]:
        """The messages of the current response (a session's earlier turns are closed)."""
        return self._messages[self._first_open :]

    def _close_message(self, msg: MessageState, status: MessageStatus | None, out: list[Event]) -> None:
        finish = msg.finish_reason
        if finish == "stop":
            finish = msg.finish_reason = turn_finish(finish, has_client_call(msg))
        part_status = status
        if part_status is None and finish == "length":
            part_status = "incomplete"
        for part in msg.parts:
            if not part.closed:
                self._close_part(msg, part, part_status, out)
        msg.closed = True
        if msg.status is None:
            if status is not None:
                msg.status = status
            else:
                msg.status = "incomplete" if finish in ("length", "content_filter") else "completed"
        if self.emit:
            self._closed_message(msg, out)

    def _synth_id(self) -> str:
        self._synth += 1
        return f"call_maas_{self._synth}"

    def _empty_call(self) -> ToolCallPart:
        return ToolCallPart(id=self._synth_id(), name="", arguments="")
