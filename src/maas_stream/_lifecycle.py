"""The aggregator's lifecycle handlers: starts and ends, usage, errors, unknowns, cancellations.

Parts and messages starting and ending, usage, the response's start and end, in-band errors,
unknown types, warnings and cancellations.

Rules enforced here (and only here):

* A start with a new call id (or, without an id, a new name) at a part key that is still open
  closes that part and starts a new one; the same id continues the call.
* A provider's own final value (``PartDone.value``) wins over the deltas; a disagreement is a
  warning. A cut or cancelled tool call is never ``completed``.
* Usage is assigned field by field, never added; unknown usage stays ``None``.
* A ``ResponseStart`` after ``ResponseDone`` opens the next response of a session.
* The finish reason "stop" of a turn holding a client call becomes "tool_calls", for every
  protocol, once.
* Unknown types are kept and counted by type and by (protocol, model, type).

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
    SpanState,
    is_client_call,
    same_call,
    turn_finish,
)
from ._deltas import Deltas
from ._holders import NO_ITEMS, find_keyed
from ._model import ReasoningPart, RefusalPart, SessionEvent, TextPart, ToolCallPart, UnknownPart
from .events import MessageStart

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._accumulate import RareState
    from ._model import Part, Role, Usage
    from .events import (
        Cancelled,
        Event,
        Key,
        MessageDone,
        PartDone,
        PartStart,
        ResponseDone,
        ResponseStart,
        StreamErrorEvent,
        StreamWarning,
        UnknownEvent,
        UsageUpdate,
    )

__all__ = ["Lifecycle"]

log = logging.getLogger("maas_stream")

_UNUSED: list[Event] = []
"""The handlers' output list in the direct fold (``emit`` false: nothing is appended)."""


class Lifecycle(Deltas):
    """The lifecycle handlers of the aggregator (see the module docstring)."""

    __slots__ = ()

    def _text_field(self, name: str, value: object) -> str | None:
        """A response id or model is text; a number is kept as its digits, anything else dropped."""
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.warn(f"the response {name} is a number ({value!r}); kept as text")
            return str(value)
        self.warn(f"the response {name} is not text ({type(value).__name__}); dropped")
        return None

    def _cancelling(
        self, msg: MessageState, part: PartState | None, reason: str | None, out: list[Event]
    ) -> None:
        """Hook: a message (or one of its parts) is about to be cancelled."""

    def open_message(
        self, start: ResponseStart | None, message: Key, role: Role, part: Key, value: Part
    ) -> PartState | None:
        """Open message ``message`` (after the response ``start``, if given) with part ``part`` as ``value``, handing nothing on.

        The aggregator's half of a direct turn opener (``DirectFold.fold_message``): what
        ``start``, then ``MessageStart(message, role)`` and ``PartStart(part, value)`` would leave.
        ``None`` (nothing done) unless deltas go straight in (:meth:`~Fold.part_buffers`) once
        they are applied: the message is new, a call has its id, and the response is streaming
        (or ended, when ``start`` opens the next one); else the new part.
        """
        state = self._state
        if self.emit or not (
            state is AggregatorState.STREAMING or (start is not None and state is AggregatorState.DONE)
        ):
            return None
        if find_keyed(self._messages, self._keyed, message) is not None or (
            isinstance(value, ToolCallPart) and not value.id
        ):
            return None
        out = _UNUSED
        if start is not None:
            self._on_response_start(start, out)
        msg = self._new_message(message, MessageStart(message=message, role=role), out)
        return self._new_part(msg, part, value, out)

    def end_message(
        self,
        start: ResponseStart | None,
        message: Key,
        role: Role | None,
        parts: Sequence[tuple[Key, Part]],
        usage: Usage | None,
        done: ResponseDone | None,
    ) -> bool:
        """End message ``message`` (and its response, ``done``) with whole ``parts``, handing nothing on.

        The aggregator's half of a direct turn closer (``DirectFold.fold_end``): what ``start``,
        ``MessageStart(message, role)`` (when ``role`` is given: a new message), then
        ``PartStart``/``PartDone`` of each part, ``UsageUpdate(usage)``, ``MessageDone(message)``
        and ``done`` would leave. ``False`` (nothing done) unless those events would apply
        without anything handed on or checked: the response is streaming (or ended, when
        ``start`` opens the next one), the message is new (``role``) or open, each part key is
        new, and each call has its id.
        """
        state = self._state
        if self.emit or not (
            state is AggregatorState.STREAMING or (start is not None and state is AggregatorState.DONE)
        ):
            return False
        msg = find_keyed(self._messages, self._keyed, message)
        if role is None:
            if msg is None or msg.closed:
                return False
            for key, value in parts:
                if find_keyed(msg.parts, msg.by_key, key) is not None or (
                    isinstance(value, ToolCallPart) and not value.id
                ):
                    return False
        elif msg is not None:
            return False
        else:
            for _, value in parts:
                if isinstance(value, ToolCallPart) and not value.id:
                    return False  # the event path gives it an id: let it
        if len(parts) > 1 and len({key for key, _ in parts}) < len(parts):
            return False  # a key twice
        out = _UNUSED
        if start is not None:
            self._on_response_start(start, out)
        if msg is None:
            assert role is not None
            msg = self._new_message(message, MessageStart(message=message, role=role), out)
        if parts:
            self._whole_parts(msg, parts)
        if usage is not None:
            self._use(usage)
        self._close_message(msg, None, out)
        if done is not None:
            self._on_response_done(done, out)
        return True

    def _on_part_start(self, ev: PartStart, out: list[Event]) -> None:
        msg = find_keyed(self._messages, self._keyed, ev.message)
        if msg is None:
            msg = self._message(ev.message, out)
        value = ev.value
        part = find_keyed(msg.parts, msg.by_key, ev.part)
        if part is not None and not part.closed:
            base = part.base
            if isinstance(value, ToolCallPart) and isinstance(base, ToolCallPart) and same_call(base, value):
                # A provider repeating the id (and name) on a later fragment: same call.
                fill: dict[str, Any] = {}
                if not base.name and value.name:
                    fill["name"] = value.name
                if not base.id and value.id:
                    fill["id"] = value.id
                if fill:
                    part.base = msgspec.structs.replace(base, **fill)
                return
            self._close_part(msg, part, None, out)
        if isinstance(value, ToolCallPart) and not value.id:
            value = msgspec.structs.replace(value, id=self._synth_id())
        self._new_part(msg, ev.part, value, out)

    def _on_part_done(self, ev: PartDone, out: list[Event]) -> None:
        msg = find_keyed(self._messages, self._keyed, ev.message)
        part = find_keyed(msg.parts, msg.by_key, ev.part) if msg is not None else None
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
        msg = find_keyed(self._messages, self._keyed, ev.message)
        if msg is not None and not msg.closed:
            # Repeated role announcements (Chat compat servers send role on every chunk).
            return
        self._new_message(ev.message, ev, out)

    def _on_message_done(self, ev: MessageDone, out: list[Event]) -> None:
        msg = find_keyed(self._messages, self._keyed, ev.message)
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
        self._use(ev.usage)

    def _use(self, usage: Usage) -> None:
        """A usage report, assigned over the stream's and the current response's.

        The stream's is read only by the emitter and by a result that is not a session's last
        model response (``_build``): once a second response opened and one is a model's, it
        never is again unless handed on, and is no longer kept (a long session's turns each
        save an assignment).
        """
        spans = self._spans
        span = spans[-1] if spans else self._span()
        if self.emit or len(spans) < 2 or not self._started:
            self._usage = _assigned(self._usage, usage)
        span.usage = _assigned(span.usage, usage)

    def _on_response_start(self, ev: ResponseStart, out: list[Event]) -> None:
        raw = ev.provider_raw
        if raw is not None or self._start is None:
            self._start = ev
        spans = self._spans
        done = self._state is AggregatorState.DONE
        if not spans:
            span = self._first_span()
            self._spans = [span]
        elif done:
            first = spans[0]
            if first.messages is None:
                first.messages = list(self._messages)  # (the next response's are not its own)
            span = SpanState(NO_ITEMS)
            spans.append(span)
        else:
            span = spans[-1]
        if raw is not None:
            span.start = ev
            self._mark_real(span)  # the provider's own start (with its fields)
        elif span.start is None:
            span.start = ev
        given = ev.id
        if given and isinstance(given, str):
            span.id = given
        if done:
            # A session protocol (Live, Realtime) carries several responses on one connection:
            # a start after the provider ended a response opens the next one.
            self._state = AggregatorState.STREAMING
            self._done = None
        if given:
            self._id = given if isinstance(given, str) else self._text_field("id", given)
        model = ev.model
        if model:
            self._model = model if isinstance(model, str) else self._text_field("model", model)

    def _on_response_done(self, ev: ResponseDone, out: list[Event]) -> ResponseDone:
        messages = self._messages
        current = messages[self._first_open :]  # the current response's (``_open``), sliced once
        if ev.finish_reason == "stop" and _client_call_in(current):
            ev = msgspec.structs.replace(ev, finish_reason=turn_finish(ev.finish_reason, True))
        if self._done is None:
            self._done = ev
        spans = self._spans
        span = spans[-1] if spans else self._span()
        if span.done is None:
            span.done = ev
        if (ev.status is not None or ev.finish_reason is not None) and not span.real:
            self._mark_real(span)
        if self._state is AggregatorState.STREAMING:
            self._state = AggregatorState.DONE
        for msg in current:
            if not msg.closed:
                self._close_message(msg, None, out)
        # Messages close for good, and now every one is closed: they are skipped for ever, so a
        # long session of many responses stays linear, not quadratic.
        self._first_open = len(messages)
        return ev

    def _on_error(self, ev: StreamErrorEvent, out: list[Event]) -> None:
        error = ev.error
        if ev.recoverable:
            # The session carries on (the provider's docs say so): nothing fails because of it.
            what = ": ".join(x for x in (error.code or error.type, error.message) if x)
            self.warn(f"the provider reported an error that did not end the session ({what})")
            self._session_event(SessionEvent(kind="error", type=error.type, after=0, error=error))
            return
        if self._error is None:
            self._error = error
        span = self._span()
        if span.error is None:
            span.error = error

    def count_passthrough(self, provider_type: str) -> bool:
        """Count a pass-through message by its type without its event, if they are only counted.

        What :meth:`_on_unknown` does with a pass-through :class:`UnknownEvent` (no message
        key) after :meth:`forget_passthrough`: a direct fold that knows a message's type
        counts it so, without decoding the message whole for an event. ``False`` (nothing
        done): pass-through messages are kept, hand the event.
        """
        rare = self._rare
        if rare is None or rare.keep_passthrough:
            return False
        self._count_unknown(rare, provider_type)
        return True

    def _count_unknown(self, rare: RareState, ptype: str) -> None:
        """Count a kept type by itself and by ``(protocol, model, type)``."""
        rare.unknown[ptype] = rare.unknown.get(ptype, 0) + 1
        ckey = (self.protocol, self._model, ptype)
        rare.unknown_counts[ckey] = rare.unknown_counts.get(ckey, 0) + 1

    def _on_unknown(self, ev: UnknownEvent, out: list[Event]) -> bool:
        """Keep an unknown type; return whether it was kept on the response (not as a part)."""
        ptype = ev.provider_type
        rare = self._more()
        self._count_unknown(rare, ptype)
        if ev.passthrough:
            # A session or client message the protocol knows (no canonical meaning): not logged
            # as unknown (a voice session sends dozens a second).
            if ev.message is None and not rare.keep_passthrough:
                return True  # counted only (forget_passthrough)
        else:
            log.info("unknown %s type %r (model %s)", self.protocol, ptype, self._model)
        value = UnknownPart(provider_type=ptype, raw=ev.raw)
        if ev.message is None:
            rare.unknown_events.append(value)
            if ev.passthrough:
                # A session message or a client message: a session event, not a response's.
                kind: Any = "client" if ptype.startswith("client.") else "server"
                self._session_event(SessionEvent(kind=kind, type=ptype, after=0, raw=ev.raw))
            else:
                span = self._span()
                span.unknown = span.unknown or {}
                span.unknown[ptype] = span.unknown.get(ptype, 0) + 1
                span.unknown_events = span.unknown_events or []
                span.unknown_events.append(value)
            return True
        span = self._span()
        span.unknown = span.unknown or {}
        span.unknown[ptype] = span.unknown.get(ptype, 0) + 1
        msg = find_keyed(self._messages, self._keyed, ev.message) or self._message(ev.message, out)
        key = ev.part if ev.part is not None else ("unknown", len(msg.parts))
        part = find_keyed(msg.parts, msg.by_key, key)
        if part is not None and not part.closed:
            self._close_part(msg, part, None, out)
        part = self._new_part(msg, key, value, out)
        self._close_part(msg, part, None, out)
        return False

    def _on_warning(self, ev: StreamWarning, out: list[Event]) -> None:
        self.warn(ev.text)

    def _on_cancelled(self, ev: Cancelled, out: list[Event]) -> None:
        targets: list[tuple[MessageState, PartState | None]] = []
        if ev.call_id is not None:
            found = self._rare.calls.get(ev.call_id) if self._rare is not None else None
            if found is None:
                self.warn(f"cancellation of call {ev.call_id!r}, which never arrived")
                return
            targets.append(found)
        elif ev.message is not None:
            msg = find_keyed(self._messages, self._keyed, ev.message)
            if msg is None:
                return  # nothing of it arrived: nothing to mark
            part = find_keyed(msg.parts, msg.by_key, ev.part) if ev.part is not None else None
            if ev.part is not None and part is None:
                return
            targets.append((msg, part))
        for msg, part in targets:
            calls = [
                p.base.id for p in (msg.parts if part is None else [part]) if isinstance(p.base, ToolCallPart)
            ]
            self._session_event(
                SessionEvent(
                    kind="cancellation",
                    type="cancellation",
                    after=0,
                    call_id=ev.call_id or (calls[0] if calls else None),
                    reason=ev.reason,
                )
            )
            self._cancelling(msg, part, ev.reason, out)
            for each in msg.parts if part is None else [part]:
                self._cancel_part(msg, each, out)
            msg.status = "incomplete"  # a turn with a cancelled call did not complete
            if part is None and not msg.closed:
                self._close_message(msg, "incomplete", out)

    def _cancel_part(self, msg: MessageState, part: PartState, out: list[Event]) -> None:
        if not isinstance(part.base, ToolCallPart):
            self._close_part(msg, part, "incomplete", out)
            return
        part.status = "incomplete"
        final = part.final
        if isinstance(final, ToolCallPart) and final.status != "incomplete":
            part.final = msgspec.structs.replace(final, status="incomplete")
        if not part.closed:
            self._close_part(msg, part, "incomplete", out)


def _client_call_in(messages: list[MessageState]) -> bool:
    """Whether messages hold a client call: ``has_client_call`` of each, asked only of their calls.

    (``is_client_call`` holds the rule; a part that is no call is none, and most are none: a
    turn's end runs this, once per turn.)
    """
    for msg in messages:
        for part in msg.parts:
            base = part.base
            if isinstance(base, ToolCallPart) and is_client_call(base, part.status):
                return True
    return False


def _assigned(old: Usage | None, new: Usage) -> Usage:
    """Usage ``new`` assigned over ``old`` field by field (reports are cumulative, never added)."""
    if old is None:
        return new
    fields = {f: v for f in new.__struct_fields__ if (v := getattr(new, f)) is not None}
    if isinstance(old.raw, dict) and isinstance(new.raw, dict):
        fields["raw"] = {**old.raw, **new.raw}
    return msgspec.structs.replace(old, **fields)
