"""A session converted to a one-response protocol: one output stream per model response.

:class:`StreamConverter` hands a session's events to a :class:`Splitter`, which starts a fresh
target encoder for each model response and holds a call's events until the response says how
the call ended (``response.done`` is the authority: a call cut or cancelled there is never
written as a call to run). What belongs to no response is not a loss (see the class).

It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._drops import DropLog
from ._model import ASSISTANT_ROLES, ToolCallPart
from ._registry import get_protocol
from .events import (
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
    SummaryDelta,
    TextDelta,
    UnknownEvent,
)

if TYPE_CHECKING:
    from ._convert import StreamConverter
    from .events import Event

__all__ = ["Splitter"]

_HELD: Final = frozenset({PartStart, ArgumentsDelta, SignatureDelta, PartDone})
"""Events of a tool call a session converter holds until the call ends."""

_STREAMED: Final = frozenset(
    {TextDelta, AudioDelta, ReasoningDelta, SummaryDelta, RefusalDelta, AnnotationAdded, LogprobsDelta}
)
"""The content deltas of a part that is not held: no rule of :meth:`Splitter._event` but the
message's own (an input's, or one whose stream was sent, goes nowhere) applies to them."""

_ENDS: Final = frozenset({ResponseDone, MessageDone})
"""The events that carry a finish reason (matched by type: no subclasses)."""

_HELD_DELTAS: Final = frozenset({ArgumentsDelta, SignatureDelta})
"""The deltas of a held call (see :meth:`Splitter._hold`)."""

_replace: Final = msgspec.structs.replace

_UNSET: Final = object()
_SKIP: Final = object()
"""Where a content delta of a message that goes nowhere goes (see :meth:`Splitter.encode`)."""


class Splitter:
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
        """The target bytes of a batch of events (of the first response's stream only).

        A content delta of a model response's open stream (the common case) is encoded here,
        the same way as through :meth:`_event` and :meth:`_feed`, and each run of them goes to
        the converter's output once; a delta of a held call is held here, as :meth:`_hold`
        holds it; every other event goes through :meth:`_event`.
        """
        out: list[bytes] = []
        run: list[bytes] = []
        encode = self._conv._encoder.encode
        real, local_of, inputs, sent, calls = self._real, self._local, self._inputs, self._sent, self._calls
        last: Any = _UNSET  # the message of the last content delta, and where its deltas go
        to: Any = None
        for event in events:
            kind = type(event)
            if kind in _STREAMED and real:
                message: Any = event.message  # type: ignore[union-attr]
                if message is not last:  # (most deltas are of the message the last one was)
                    last, to = message, None
                    if message is not None:
                        if message in inputs or message in sent:
                            to = _SKIP
                        else:
                            local = local_of.get(message)
                            if local is not None and local != message:
                                to = local
                if to is not None:
                    if to is _SKIP:
                        continue
                    event = _replace(event, message=to)
                data = encode(event)
                if data:
                    run.append(data)
                continue
            if kind in _HELD_DELTAS and calls:
                held = calls.get((event.message, event.part))  # type: ignore[union-attr]
                if held is not None:
                    held.append(event)
                    continue
            if run:
                out.append(self._conv._output(b"".join(run)))
                run = []
            out.append(self._event(event))
            encode = self._conv._encoder.encode  # a new response may have a new encoder
            real, local_of, last = self._real, self._local, _UNSET
        if run:
            out.append(self._conv._output(b"".join(run)))
        return b"".join(out)

    def _event(self, event: Event) -> bytes:
        if type(event) in _STREAMED:  # the common case, the same way as through _other
            message = event.message  # type: ignore[union-attr]
            if message is not None and (message in self._inputs or message in self._sent):
                return b""
            return self._feed(event)
        message = getattr(event, "message", None)
        if type(event) is UnknownEvent and event.passthrough and message is None:
            # Session and client frames belong to no response: the session keeps them
            # (:func:`aggregate_session`). They are no loss of a response's stream, so they
            # are neither sent nor listed.
            return b""
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
            value.status == "incomplete" or value.id in (self._conv._cancelled or ())
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
        out = b"".join([self._send(e) for e in (*held, event)])
        return self._conv._output(out) if out else b""

    def _feed(self, event: Event) -> bytes:
        """Hand an event to the open response's encoder (or hold it until the span is one)."""
        out = self._send(event)
        return self._conv._output(out) if out else b""

    def _send(self, event: Event) -> bytes:
        """:meth:`_feed`'s bytes, not yet handed to the converter's output."""
        if not self._open:
            self._open, self._real, self._pending, self._local = True, False, [], {}
        if not self._real:
            self._pending.append(event)
            return b""
        message = getattr(event, "message", None)
        local = self._local.get(message) if message is not None else None
        if local is not None and local != message:
            event = msgspec.structs.replace(event, message=local)
        if (
            type(event) in _ENDS
            and event.finish_reason == "tool_calls"  # type: ignore[union-attr]
            and not self._calls_sent
        ):
            # Its calls were cut or cancelled and not sent: the stream has no call to run.
            event = msgspec.structs.replace(event, finish_reason="stop")
        return self._conv._encoder.encode(event)

    def _become_real(self) -> bytes:
        if self._real:
            return b""
        conv = self._conv
        if self._used:
            self.drops.extend(conv._encoder.drops.records)
            conv._encoder = get_protocol(conv.target).encoder(**(conv._options or {}))
            if conv._cancelled is None:
                self.drops.add(
                    "message",
                    "a further response of the session (one stream holds one response; each is in"
                    " StreamConverter.streams and ms.convert_session)",
                )
        self._used = self._real = self._open = True
        conv._next_stream()
        held, self._pending = self._pending, []
        out = b"".join([self._send(e) for e in held])
        return conv._output(out) if out else b""

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
