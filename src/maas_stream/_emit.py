"""The emitting aggregator: every event handed on with canonical keys, for re-encoding sinks.

``Aggregator(protocol, emit=True)`` is an :class:`EmittingAggregator`. It folds exactly as the
plain aggregator does (it is one) and, through the fold's hooks and its own handler overrides,
hands each event on with canonical keys: ``message`` is the message's position in
``Response.messages`` and ``part`` the part's position in its ``content``.

Rules enforced here (and only here), the same for every encoder:

* Content travels only as deltas. An emitted ``PartStart`` carries no text, refusal, reasoning
  text or arguments: a part that arrived whole follows at once as one delta (a call's arguments
  by the end of the part), and what a provider completed only in its final (``.done``) value
  goes out as a delta right before ``PartDone``. No encoder reads content from a start or a
  done value, so none has its own "send the rest" logic.
* A ``Cancelled`` is handed on (with canonical keys) before the ``PartDone``/``MessageDone``
  it causes; every ``ResponseDone`` carries the normalized finish reason.

It must not know any wire format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec

from ._accumulate import CONTENT, MessageState, PartState, remainder, text_so_far
from ._aggregate import HANDLER_NAMES, Aggregator
from ._model import ReasoningPart, RefusalPart, TextPart, ToolCallPart
from .events import (
    AnnotationAdded,
    ArgumentsDelta,
    AudioDelta,
    Cancelled,
    LogprobsDelta,
    MessageDone,
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
    from collections.abc import Callable

    from ._model import Part, Usage
    from .events import Event

__all__ = ["EmittingAggregator", "written_text"]

_DELTAS: Final[dict[type[Any], Callable[[int, int, str], Event]]] = {
    TextPart: lambda m, p, text: TextDelta(message=m, part=p, text=text),
    RefusalPart: lambda m, p, text: RefusalDelta(message=m, part=p, text=text),
    ReasoningPart: lambda m, p, text: ReasoningDelta(message=m, part=p, text=text),
    ToolCallPart: lambda m, p, text: ArgumentsDelta(message=m, part=p, delta=text),
}
"""The delta event that appends to each streamed content field."""


_Delta = TypeVar("_Delta", bound="Event")


def _rekeyed(
    fold: Callable[[Aggregator, _Delta, list[Event]], PartState | None],
) -> Callable[[Aggregator, _Delta, list[Event]], PartState | None]:
    """The fold's handler of a content delta, handing the delta on with canonical keys.

    A delta whose keys already are the canonical ones (most sources number their messages and
    parts as ``Response`` does) goes on as it is: events are immutable, no copy is needed.
    """
    replace = msgspec.structs.replace

    def handler(self: Aggregator, ev: _Delta, out: list[Event]) -> PartState | None:
        part = fold(self, ev, out)
        if part is not None:
            message, index = part.message, part.index
            if ev.message == message and ev.part == index:  # type: ignore[union-attr]
                out.append(ev)
            else:
                out.append(replace(ev, message=message, part=index))
        return part

    return handler


def written_text(state: PartState, count: int, done: Part | None = None) -> str:
    """The first ``count`` characters of a text part as an emitting aggregator handed them on.

    An encoder fed by this aggregator counts what it wrote of a part and reads the text here
    rather than keeping a copy (``EventEncoder.read_text_from``): the start's text and the
    deltas as folded, cut at ``count`` (the aggregator may have folded more of the same source
    chunk already) and, once the part is done (``done``: its final value), the remainder handed
    on right before its ``PartDone``, which the fold does not keep (:func:`remainder`).
    """
    text = text_so_far(state)
    if done is not None and len(text) < count:
        text += remainder(state, done)
    return text[:count]


class EmittingAggregator(Aggregator):
    """An :class:`~maas_stream.Aggregator` that hands every event on with canonical keys."""

    emit = True

    def part_state(self, message: int, part: int) -> PartState | None:
        """The state of a part by the canonical keys its events carry (``None``: no such part).

        A converter's encoder reads a part's text here (``EventEncoder.read_text_from``) rather
        than keeping a copy: the state is this stream's own and lives as long as the response.
        """
        messages = self._messages
        if 0 <= message < len(messages):
            parts = messages[message].parts
            if 0 <= part < len(parts):
                return parts[part]
        return None

    # ------------------------------------------------------------------ structure hooks

    def _opened_message(self, msg: MessageState, out: list[Event]) -> None:
        out.append(msgspec.structs.replace(msg.start, message=msg.index))

    def _opened_part(self, msg: MessageState, part: PartState, out: list[Event]) -> None:
        value = part.base
        content = CONTENT.get(type(value))
        text = getattr(value, content) if content is not None else None
        if not text or content is None:
            out.append(PartStart(message=msg.index, part=part.index, value=value))
            return
        bare = msgspec.structs.replace(value, **{content: ""})
        out.append(PartStart(message=msg.index, part=part.index, value=bare))
        if not isinstance(value, ToolCallPart):
            # A call's start arguments stand only if no delta follows (Anthropic's "{}"): they
            # go out at its end, as the remainder.
            out.append(_DELTAS[type(value)](msg.index, part.index, text))

    def _closed_part(self, msg: MessageState, part: PartState, out: list[Event]) -> None:
        value = part.build()
        rest = remainder(part, value)
        if rest:
            out.append(_DELTAS[type(value)](msg.index, part.index, rest))
        out.append(PartDone(message=msg.index, part=part.index, value=value))

    def _closed_message(self, msg: MessageState, out: list[Event]) -> None:
        out.append(
            MessageDone(
                message=msg.index,
                status=msg.status,
                finish_reason=msg.finish_reason,
                provider_finish_reason=msg.provider_finish_reason,
                value=msg.build(False, self.protocol),
            )
        )

    def _cancelling(
        self, msg: MessageState, part: PartState | None, reason: str | None, out: list[Event]
    ) -> None:
        index = part.index if part is not None else None
        out.append(Cancelled(message=msg.index, part=index, reason=reason))

    # ------------------------------------------------------------------ response level

    def _on_usage(self, ev: UsageUpdate, out: list[Event]) -> None:
        super()._on_usage(ev, out)
        usage: Usage | None = self._usage
        assert usage is not None
        out.append(UsageUpdate(usage=usage))

    def _on_response_start(self, ev: ResponseStart, out: list[Event]) -> None:
        super()._on_response_start(ev, out)
        out.append(ev)

    def _on_response_done(self, ev: ResponseDone, out: list[Event]) -> ResponseDone:
        done = super()._on_response_done(ev, out)
        out.append(done)
        return done

    def _on_error(self, ev: StreamErrorEvent, out: list[Event]) -> None:
        super()._on_error(ev, out)
        out.append(ev)

    def _on_unknown(self, ev: UnknownEvent, out: list[Event]) -> bool:
        kept_on_response = super()._on_unknown(ev, out)
        if kept_on_response:
            out.append(ev)
        return kept_on_response

    def _on_warning(self, ev: StreamWarning, out: list[Event]) -> None:
        super()._on_warning(ev, out)
        out.append(ev)


# Each content delta goes on as it came, re-keyed to the part it changed (nothing when the fold
# changed nothing: an empty delta, a signature for a part that has none). One rule, one table.
EmittingAggregator._handlers.update(
    {
        kind: _rekeyed(getattr(Aggregator, HANDLER_NAMES[kind]))
        for kind in (
            TextDelta,
            ArgumentsDelta,
            ReasoningDelta,
            RefusalDelta,
            SummaryDelta,
            SignatureDelta,
            AudioDelta,
            AnnotationAdded,
            LogprobsDelta,
        )
    }
)
