"""Typed stream events: what decoders emit and what the aggregator hands on to encoders.

The same event types serve both sides of the aggregator:

* A protocol's ``StreamDecoder`` emits them with **provider keys** in ``message`` and ``part``
  (Chat: choice index and ``tool_calls[].index``; Anthropic: ``0`` and the block index; ...).
* The :class:`~maas_stream.Aggregator` resolves those keys to canonical parts and, when asked
  to, hands the events on with **canonical keys**: ``message`` is the message's position in
  ``Response.messages`` and ``part`` the part's position in its ``content``.

Events hold no state and never change; do not subclass them.
"""

from __future__ import annotations

from typing import Any, TypeAlias, final

import msgspec

from ._model import (
    CitationPart,
    FinishReason,
    Message,
    MessageStatus,
    Part,
    ResponseStatus,
    Role,
    StreamError,
    Usage,
)

__all__ = [
    "AnnotationAdded",
    "ArgumentsDelta",
    "AudioDelta",
    "Cancelled",
    "Event",
    "Key",
    "LogprobsDelta",
    "MessageDone",
    "MessageStart",
    "PartDone",
    "PartStart",
    "ReasoningDelta",
    "RefusalDelta",
    "ResponseDone",
    "ResponseStart",
    "SignatureDelta",
    "StreamErrorEvent",
    "StreamWarning",
    "SummaryDelta",
    "TextDelta",
    "UnknownEvent",
    "UsageUpdate",
]

Key: TypeAlias = int | str | tuple[int | str, ...]
"""A message or part key: a provider key from a decoder, or a canonical position (an ``int``)."""


class _Event(msgspec.Struct, tag_field="event", frozen=True, kw_only=True):
    """Base of the event union, tagged by ``event``."""


@final
class ResponseStart(_Event, tag="response.start", frozen=True):
    """Response-level metadata, sent once before anything else."""

    protocol: str
    id: str | None = None
    model: str | None = None
    provider_raw: Any = None
    """Response-level fields with no canonical home, for a same-protocol re-encode."""


@final
class MessageStart(_Event, tag="message.start", frozen=True):
    """A message (or output item) begins."""

    message: Key
    role: Role = "assistant"
    type: str | None = None
    id: str | None = None
    phase: str | None = None
    choice_index: int | None = None
    provider_raw: Any = None


@final
class PartStart(_Event, tag="part.start", frozen=True):
    """A part begins; ``value`` is its initial state (a tool call's id and name, say).

    A tool call's initial ``arguments`` are kept only when no argument delta follows (Anthropic
    starts every ``tool_use`` with ``{}``). At a part key that is still open, a start with the
    same call id continues that call; any other start closes it and begins a new part.
    """

    message: Key
    part: Key
    value: Part


@final
class TextDelta(_Event, tag="text.delta", frozen=True):
    """Append to a text part."""

    message: Key
    part: Key
    text: str


@final
class RefusalDelta(_Event, tag="refusal.delta", frozen=True):
    """Append to a refusal part."""

    message: Key
    part: Key
    text: str


@final
class ReasoningDelta(_Event, tag="reasoning.delta", frozen=True):
    """Append to a reasoning part's text."""

    message: Key
    part: Key
    text: str


@final
class SummaryDelta(_Event, tag="summary.delta", frozen=True):
    """Append to entry ``index`` of a reasoning part's summary list (creating it if new)."""

    message: Key
    part: Key
    index: int
    text: str


@final
class SignatureDelta(_Event, tag="signature.delta", frozen=True):
    """Set (replace, never append) the signature of a reasoning, text or tool-call part."""

    message: Key
    part: Key
    signature: str


@final
class ArgumentsDelta(_Event, tag="arguments.delta", frozen=True):
    """Append a fragment to a tool call's arguments text."""

    message: Key
    part: Key
    delta: str


@final
class AudioDelta(_Event, tag="audio.delta", frozen=True):
    """Append base64 audio data and/or transcript text to an audio part."""

    message: Key
    part: Key
    data: str | None = None
    transcript: str | None = None
    id: str | None = None
    expires_at: int | None = None


@final
class AnnotationAdded(_Event, tag="annotation.added", frozen=True):
    """A citation attached to a text part."""

    message: Key
    part: Key
    citation: CitationPart


@final
class LogprobsDelta(_Event, tag="logprobs.delta", frozen=True):
    """Token log-probabilities for the tokens just appended to a text or refusal part."""

    message: Key
    part: Key
    logprobs: list[Any]


@final
class PartDone(_Event, tag="part.done", frozen=True):
    """A part ends. ``value``, when given, is the provider's own final value and wins."""

    message: Key
    part: Key
    value: Part | None = None


@final
class MessageDone(_Event, tag="message.done", frozen=True):
    """A message ends; its open parts close. Carries the per-choice finish reason, if any."""

    message: Key
    status: MessageStatus | None = None
    finish_reason: FinishReason | None = None
    provider_finish_reason: str | None = None
    value: Message | None = None
    """The provider's own final message or item, when it sends one."""


@final
class UsageUpdate(_Event, tag="usage", frozen=True):
    """Usage so far. Fields that are set **replace** what was known (cumulative, never added)."""

    usage: Usage


@final
class ResponseDone(_Event, tag="response.done", frozen=True):
    """The provider ended the response normally (Chat ``[DONE]``, Anthropic ``message_stop``, ...)."""

    status: ResponseStatus | None = None
    finish_reason: FinishReason | None = None
    provider_finish_reason: str | None = None


@final
class StreamErrorEvent(_Event, tag="error", frozen=True):
    """The provider reported an error inside the stream."""

    error: StreamError
    recoverable: bool = False
    """The error did not end anything: the provider's docs say the session carries on (a
    Realtime ``error`` event, e.g. ``response.cancel`` with no response active). It is kept as a
    session event and a warning; no response fails because of it."""


@final
class UnknownEvent(_Event, tag="unknown", frozen=True):
    """A frame, item, block or delta of a type this library does not know, kept whole.

    With a ``message`` key it becomes an ``unknown`` part of that message; without one it is
    kept on the response. Either way it is counted by ``provider_type``.
    """

    provider_type: str
    raw: Any
    message: Key | None = None
    part: Key | None = None
    passthrough: bool = False
    """The type is known, but has no canonical meaning (a session or client frame of a websocket
    protocol): it is kept only so a same-protocol re-encode passes it through, and it never makes
    a cross-protocol conversion fail closed."""


@final
class StreamWarning(_Event, tag="warning", frozen=True):
    """A finding that did not stop decoding, reported when it happens.

    A sequence gap, a final value that disagrees with its deltas, a frame cut at the end. The
    aggregator adds it to ``Response.warnings`` at once, so snapshots and live views see it.
    """

    text: str
    """What was found, in one line."""


@final
class Cancelled(_Event, tag="cancelled", frozen=True):
    """The provider cancelled a part (a tool call) or a whole message before it finished.

    A cancelled part or message is ``incomplete``; a cancelled tool call is never reported as
    completed, so nobody runs it.
    """

    message: Key | None = None
    """The message cancelled (or holding the part); ``None`` when ``call_id`` names the call."""
    part: Key | None = None
    """The part cancelled; ``None`` cancels every part of the message and the message."""
    call_id: str | None = None
    """A tool call named by its id instead of its keys (Live's ``toolCallCancellation``)."""
    reason: str | None = None
    """Why, as the provider said it (``turn_detected``, ``client_cancelled``...)."""


Event: TypeAlias = (
    ResponseStart
    | MessageStart
    | PartStart
    | TextDelta
    | RefusalDelta
    | ReasoningDelta
    | SummaryDelta
    | SignatureDelta
    | ArgumentsDelta
    | AudioDelta
    | AnnotationAdded
    | LogprobsDelta
    | PartDone
    | MessageDone
    | UsageUpdate
    | ResponseDone
    | StreamErrorEvent
    | UnknownEvent
    | StreamWarning
    | Cancelled
)
"""The tagged union of every stream event."""
