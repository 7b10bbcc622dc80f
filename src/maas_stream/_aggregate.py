"""The aggregator: the keyed state machine from provider keys to canonical messages and parts.

Decoders emit events that still carry the provider's keys. The aggregator owns all item state:
it maps each ``(message key, part key)`` to one canonical part, applies the merge rules of
DESIGN.md, keeps usage, errors, warnings and unknown types, and builds
:class:`~maas_stream.Response` snapshots and the final result. With ``emit=True`` it also hands
every event on with canonical keys (message and part positions), which is what the re-encoding
sinks consume (``_emit``).

The machine is split by responsibility: ``_accumulate`` (per-part and per-message state),
``_fold`` (bookkeeping and content deltas), ``_lifecycle`` (starts, ends, usage, errors,
unknowns, cancellations), this module (the public object, its states and its handler table)
and ``_emit`` (canonical events for encoders). The rules are listed in those modules.

Only input faults are protocol errors here: an event that cannot follow what came before is a
``RemoteProtocolError``, a call after :meth:`Aggregator.finish` a ``LocalProtocolError``. An
internal exception is a bug and propagates as itself.

It must not know any wire format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

from ._accumulate import AggregatorState as AggregatorState
from ._exceptions import LocalProtocolError, RemoteProtocolError
from ._lifecycle import Lifecycle
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
    StreamWarning,
    SummaryDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ._model import Response, Session
    from .events import Event

__all__ = ["HANDLER_NAMES", "Aggregator", "AggregatorState"]

HANDLER_NAMES: Final[dict[type[Any], str]] = {
    TextDelta: "_on_text",
    ArgumentsDelta: "_on_args",
    ReasoningDelta: "_on_reasoning",
    RefusalDelta: "_on_refusal",
    SummaryDelta: "_on_summary",
    SignatureDelta: "_on_signature",
    AudioDelta: "_on_audio",
    AnnotationAdded: "_on_annotation",
    LogprobsDelta: "_on_logprobs",
    PartStart: "_on_part_start",
    PartDone: "_on_part_done",
    MessageStart: "_on_message_start",
    MessageDone: "_on_message_done",
    UsageUpdate: "_on_usage",
    ResponseStart: "_on_response_start",
    ResponseDone: "_on_response_done",
    StreamErrorEvent: "_on_error",
    UnknownEvent: "_on_unknown",
    StreamWarning: "_on_warning",
    Cancelled: "_on_cancelled",
}
"""The aggregator method that applies each event type (one table, built per class)."""

_LATE: Final = (
    UsageUpdate,
    StreamErrorEvent,
    UnknownEvent,
    ResponseDone,
    ResponseStart,
    StreamWarning,
    Cancelled,
    MessageDone,
)
"""What may still arrive after the provider ended a response."""

_DISCARD: list[Event] = []
"""Where events go when nobody listens (``emit`` is false, nothing is appended)."""


class Aggregator(Lifecycle):
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

    __slots__ = ()

    _handlers: ClassVar[dict[type[Any], Callable[[Any, Any, list[Event]], Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = {kind: getattr(cls, name) for kind, name in HANDLER_NAMES.items()}

    def __new__(cls, protocol: str, *, emit: bool = False) -> Aggregator:
        if emit and cls is Aggregator:
            from ._emit import EmittingAggregator

            cls = EmittingAggregator
        return super().__new__(cls)

    def __init__(self, protocol: str, *, emit: bool = False) -> None:
        super().__init__(protocol)

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
        self._handlers[type(event)](self, event, out)
        return out

    def consume(self, events: list[Event]) -> None:
        """Apply events without handing anything on: the fast path when only the result counts.

        Raises:
            RemoteProtocolError: An event cannot follow what came before.
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        self._apply(events, _DISCARD)

    def feed_all(self, events: Iterable[Event]) -> list[Event]:
        """Apply several events; return what :meth:`feed` returns for each, in one list.

        The same events as calling :meth:`feed` per event (a handler only appends to its
        output list), without a list per event: a converter's batch path.

        Raises:
            RemoteProtocolError: An event cannot follow what came before.
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        out: list[Event] = []
        self._apply(events, out)
        return out

    def _apply(self, events: Iterable[Event], out: list[Event]) -> None:
        """The one batch loop: apply events in order, appending what is handed on to ``out``.

        ``out`` is :data:`_DISCARD` when nothing is handed on (``emit`` false: no handler appends).
        """
        handlers = self._handlers
        streaming = AggregatorState.STREAMING
        for event in events:
            if self._state is not streaming:
                self._check_late(event)
            handlers[type(event)](self, event, out)

    def snapshot(self) -> Response:
        """The response as it stands, without changing any state.

        Every text, argument and reasoning field of a snapshot is a prefix of the same field in
        the final result.
        """
        return self._build(final=False)

    def session(self) -> Session:
        """The session as it stands: each response apart, and the session's own events.

        Before :meth:`finish` it is a snapshot (reading it changes nothing); after, the final
        session. For a one-response protocol it holds that one response.
        """
        return self._build_session(final=self._state is AggregatorState.FINISHED)

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

    def _check_late(self, event: Event) -> None:
        if self._state is AggregatorState.DONE:
            if isinstance(event, _LATE):
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


Aggregator._handlers = {kind: getattr(Aggregator, name) for kind, name in HANDLER_NAMES.items()}
