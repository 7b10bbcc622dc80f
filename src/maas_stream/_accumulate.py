"""Accumulators: the mutable state of one part and one message while a stream is folded.

The aggregator (``_aggregate``) owns these; snapshots and the final result are built from them
and never share them. Also here: the small rules about parts that the fold, the emitter and the
finish-reason rule all use (which content field streams, what a call is, which calls the client
runs).

It must not know any wire format.
"""

from __future__ import annotations

import base64
import binascii
import enum
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import msgspec

from ._holders import NO_ITEMS
from ._model import (
    AudioPart,
    CitationPart,
    FinishReason,
    Message,
    MessageStatus,
    Part,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ._model import SessionEvent, StreamError, UnknownPart, Usage
    from .events import Key, MessageStart, ResponseDone, ResponseStart

V = TypeVar("V")

__all__ = [
    "CONTENT",
    "FRAGMENTS",
    "add_fragment",
    "add_text",
    "compact",
    "INCOMPLETE_FINISH",
    "AggregatorState",
    "MessageState",
    "PartState",
    "RareState",
    "SpanState",
    "empty_refusal",
    "empty_text",
    "client_call_in",
    "has_client_call",
    "is_client_call",
    "join_base64",
    "remainder",
    "same_call",
    "settle",
    "text_so_far",
    "turn_finish",
    "whole_groups",
]

INCOMPLETE_FINISH: Final = frozenset({"length", "content_filter"})


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


class PartState:
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
        "key",
        "logprobs",
        "message",
        "overrides",
        "status",
        "summary",
        "text",
    )

    def __init__(self, message: int, index: int, base: Part, key: Key) -> None:
        self.message = message
        """The position of the part's message in the response."""
        self.index = index
        self.key = key
        """Its key in the stream (``MessageState.part`` finds it by it)."""
        self.base = base
        self.text: list[str] | None = None
        """Its text fragments (made with the first one: a call, audio, most parts of a turn, have none)."""
        self.args: list[str] | None = None
        """A call's arguments fragments (made with the first one: most parts are no call)."""
        self.summary: dict[int, list[str]] | None = None
        """Summary entries by the provider's index (built in index order)."""
        self.annotations: list[CitationPart] | None = None
        self.logprobs: list[Any] | None = None
        self.audio_data: list[str] | None = None
        self.audio_transcript: list[str] | None = None
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
        final = self.final
        if final is not None:
            return final
        base = self.base
        overrides = self.overrides
        builder = _BUILDERS.get(type(base))
        if builder is None:
            return msgspec.structs.replace(base, **overrides) if overrides else base
        fields: dict[str, Any] = dict(overrides) if overrides else {}
        builder(self, base, fields)
        if not fields:
            return base
        return msgspec.structs.replace(base, **fields)


def _build_text(acc: PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.text:
        fields["text"] = base.text + "".join(acc.text)
    if acc.annotations is not None:
        fields["annotations"] = [*(base.annotations or ()), *acc.annotations]
    if acc.logprobs is not None:
        fields["logprobs"] = [*(base.logprobs or ()), *acc.logprobs]


def _build_refusal(acc: PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.text:
        fields["text"] = base.text + "".join(acc.text)
    if acc.logprobs is not None:
        fields["logprobs"] = [*(base.logprobs or ()), *acc.logprobs]


def _build_call(acc: PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.args:
        fields["arguments"] = "".join(acc.args)
    elif not acc.closed and base.arguments:
        # A start value (Anthropic's "{}") stands only if no delta follows: until the call
        # closes, the arguments so far are none, so every snapshot stays a prefix.
        fields["arguments"] = ""
    if acc.status is not None:
        fields["status"] = acc.status


def _build_reasoning(acc: PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.text:
        fields["text"] = (base.text or "") + "".join(acc.text)
    if acc.summary is not None:
        fields["summary"] = ["".join(acc.summary[i]) for i in sorted(acc.summary)]


def _build_audio(acc: PartState, base: Any, fields: dict[str, Any]) -> None:
    if acc.audio_data:
        fields["data"] = join_base64([base.data, *acc.audio_data] if base.data else acc.audio_data)
    if acc.audio_transcript:
        fields["transcript"] = (base.transcript or "") + "".join(acc.audio_transcript)


FRAGMENTS: Final = 64
"""Pieces a text buffer holds before its newest half is joined (see :func:`add_fragment`)."""


def add_fragment(buf: list[str], text: str) -> None:
    """Append a delta's text to a part's buffer, joining fragments as they come.

    One ``str`` per delta costs ~50 bytes of object overhead each (500 deltas: ~30 KiB for a few
    KiB of text). Past :data:`FRAGMENTS` pieces the newest half is joined into one, then the
    last two pieces are merged while the older is not longer than the newer: pieces shrink
    geometrically from the oldest, so a buffer holds O(log n) large pieces plus fewer than
    :data:`FRAGMENTS` small ones, and each character is copied O(log n) times in all. The
    joined buffer (``"".join(buf)``) is unchanged by this.
    """
    buf.append(text)
    if len(buf) >= FRAGMENTS:
        compact(buf)


def add_text(part: PartState, text: str) -> None:
    """Append a delta's text to a part's text (:func:`add_fragment`; the first makes the list)."""
    buf = part.text
    if buf is None:
        part.text = [text]
    else:
        add_fragment(buf, text)


def compact(buf: list[str]) -> None:
    """Join the newest half of a full buffer (:func:`add_fragment`'s second step).

    A hot loop may inline :func:`add_fragment` as ``buf.append(text)`` then, when
    ``len(buf) >= FRAGMENTS``, ``compact(buf)``.
    """
    half = FRAGMENTS // 2
    merged = "".join(buf[-half:])
    del buf[-half:]
    while buf and len(buf[-1]) <= len(merged):
        merged = buf.pop() + merged
    buf.append(merged)


def settle(buf: list[str]) -> None:
    """Join a closed part's text pieces into one (in place: whoever holds ``buf`` keeps it).

    A part that closes takes no more deltas, so its pieces are only ever joined: done at once,
    a stream of many short parts (Gemini's runs of 10-30 deltas) holds one ``str`` per part
    rather than one per delta until the end. Plain text only (base64 audio joins by its own
    rule, :func:`join_base64`); ``"".join(buf)`` is unchanged by this.
    """
    if len(buf) > 1:
        buf[:] = ["".join(buf)]


_REST_OF_4: Final = (4).__rmod__
"""``n % 4`` of a length ``n`` (mapped over lengths: no Python code per length)."""


def whole_groups(chunks: list[str], within: str | None = None) -> bool:
    """Whether base64 chunks are whole 4-character groups without padding (:func:`join_base64`'s rule).

    Joined as text, such chunks are joined as the bytes they encode, and what follows them joins
    as bytes alike: a run of audio deltas whose all but last are such groups may be kept as one
    chunk (``"".join``) with the same result. ``within``: a text that holds them all (their join
    and more, when the caller has it: no second join).
    """
    if any(map(_REST_OF_4, set(map(len, chunks)))):
        return False
    # Audio deltas come in runs of one length: the set is one length, and no "=" is a quick no.
    text = "".join(chunks) if within is None else within
    return "=" not in text or not any(c.endswith("=") for c in chunks)


def join_base64(chunks: list[str]) -> str:
    """Concatenate base64 chunks as the bytes they encode, not as text.

    Each audio delta is base64 on its own, padded when its bytes are not a multiple of 3:
    ``"AQI=" + "AwQ="`` as text puts padding mid-string (a decoder then silently returns a
    fraction of the audio); as bytes it is ``"AQIDBA=="``. Chunks that are whole 4-character
    groups without padding (the common case) join as text, which is the same thing. A chunk
    that is not valid base64 is kept as sent (joined as text): nothing received is lost.
    """
    joined = "".join(chunks)
    if whole_groups(chunks[:-1], joined):
        return joined
    try:
        raw = b"".join(base64.b64decode(c, validate=True) for c in chunks)
    except (binascii.Error, ValueError):
        return joined
    return base64.b64encode(raw).decode("ascii")


_BUILDERS: Final[dict[type[Any], Callable[[PartState, Any, dict[str, Any]], None]]] = {
    TextPart: _build_text,
    RefusalPart: _build_refusal,
    ToolCallPart: _build_call,
    ReasoningPart: _build_reasoning,
    AudioPart: _build_audio,
}


class MessageState:
    __slots__ = (
        "by_key",
        "closed",
        "finish_reason",
        "index",
        "key",
        "parts",
        "provider_finish_reason",
        "start",
        "status",
        "value",
    )

    def __init__(self, index: int, key: Key, start: MessageStart) -> None:
        self.index = index
        self.key = key
        self.start = start
        self.parts: list[PartState] = NO_ITEMS
        """Its parts in order (``add_keyed``)."""
        self.by_key: dict[Key, PartState] | None = None
        """Its parts by key, made with the second part (the first is found by its own key)."""
        self.closed = False
        self.status: MessageStatus | None = None
        self.finish_reason: FinishReason | None = None
        self.provider_finish_reason: str | None = None
        self.value: Message | None = None

    def build(self, in_progress: bool, provider: str | None = None) -> Message:
        """Build the message as it stands. Reads state, never changes it.

        Args:
            in_progress: The stream is still open (an open message says ``in_progress``).
            provider: The protocol that decoded it, for the replay rule (``Message.provider``).
        """
        if self.value is not None and not self.parts:
            value = self.value
            if value.provider is None and provider is not None:
                value = msgspec.structs.replace(value, provider=provider)
            return value
        start = self.start
        status = self.status
        if status is None and in_progress and not self.closed:
            status = "in_progress"
        base = self.value
        if base is not None:
            return msgspec.structs.replace(
                base,
                content=[p.build() for p in self.parts],
                status=status or base.status,
                finish_reason=self.finish_reason or base.finish_reason,
                provider=base.provider or provider,
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
            provider=provider,
            provider_raw=start.provider_raw,
        )


class SpanState:
    """What one response of a session holds: from a ``ResponseStart`` to the next one after its end.

    A session protocol's decoder opens a response for each model response, and one of its own to
    hold session messages outside any (a transcript, tool results); the session builder tells
    them apart by what they hold.
    """

    __slots__ = (
        "done",
        "error",
        "id",
        "messages",
        "real",
        "start",
        "unknown",
        "unknown_events",
        "usage",
        "warnings",
    )

    def __init__(self, messages: list[MessageState] | None) -> None:
        self.start: ResponseStart | None = None
        self.id: str | None = None
        self.done: ResponseDone | None = None
        self.messages: list[MessageState] | None = messages
        """Its messages; ``None`` for the first response of a stream while the aggregator's list
        holds no other's (most streams have one response: one list, not two)."""
        self.usage: Usage | None = None
        self.error: StreamError | None = None
        self.unknown: dict[str, int] | None = None
        """Unknown types by count (made on first use, as are the next two)."""
        self.unknown_events: list[UnknownPart] | None = None
        self.warnings: list[str] | None = None
        self.real = False
        """Whether it is a model response: it holds a model message, the provider's own start
        (with its fields) opened it, or the provider ended it with a status or finish reason."""


class RareState:
    """What most streams never need, made on first use so an idle aggregator stays small.

    Unknown types (counted by type and by ``(protocol, model, type)``, and kept), warnings,
    tool calls by id (for a cancellation that names only the call), and a session's entries.
    """

    __slots__ = (
        "after",
        "calls",
        "entries",
        "keep_passthrough",
        "unknown",
        "unknown_counts",
        "unknown_events",
        "warnings",
    )

    def __init__(self) -> None:
        self.keep_passthrough = True
        """Keep each pass-through session message (see :meth:`~maas_stream._fold.Fold.forget_passthrough`)."""
        self.unknown: dict[str, int] = {}
        self.unknown_events: list[UnknownPart] = []
        self.warnings: list[str] = []
        self.calls: dict[str, tuple[MessageState, PartState]] = {}
        """Tool calls by id, for a cancellation that names only the call."""
        self.unknown_counts: dict[tuple[str, str | None, str], int] = {}
        """Unknown types seen, counted by (protocol, model, type)."""
        self.entries: list[MessageState | SessionEvent] = []
        """Session events and the messages that are not the model's, in arrival order."""
        self.after: dict[int, int] = {}
        """How many responses had started when each message of :attr:`entries` arrived."""


CONTENT: Final[dict[type[Any], str]] = {
    TextPart: "text",
    RefusalPart: "text",
    ReasoningPart: "text",
    ToolCallPart: "arguments",
}
"""The streamed content field of each part type that streams."""


def text_so_far(part: PartState) -> str:
    """A text, refusal or reasoning part's text as emitted so far: its start's, then its deltas'.

    (An emitting aggregator sends a start's text as the first delta: a converter's encoder
    reads what it wrote here, :class:`~maas_stream.protocols.openai_responses._text_writer.SharedTextWriter`.)
    """
    return (getattr(part.base, "text", None) or "") + ("".join(part.text) if part.text else "")


def remainder(part: PartState, value: Part) -> str:
    """What of a part's final content was never sent as a delta (emitted starts carry none)."""
    content = CONTENT.get(type(value))
    if content is None:
        return ""
    final = getattr(value, content) or ""
    if isinstance(value, ToolCallPart):
        sent = "".join(part.args) if part.args else ""
    else:
        sent = text_so_far(part)
    if len(final) > len(sent) and final.startswith(sent):
        return final[len(sent) :]
    return ""


def is_client_call(part: Part, status: str | None) -> bool:
    """Whether a part is a call the client must run: a function or custom call, not cut."""
    return isinstance(part, ToolCallPart) and part.kind in ("function", "custom") and status != "incomplete"


def turn_finish(reason: FinishReason | None, has_client_call: bool) -> FinishReason | None:
    """The one finish rule of every protocol: a client call plus "stop" finishes ``tool_calls``.

    Gemini says STOP for a turn that ends at its calls; Responses and Realtime only "completed".
    """
    return "tool_calls" if reason == "stop" and has_client_call else reason


def has_client_call(msg: MessageState) -> bool:
    """Whether an aggregated message holds a client call (:func:`is_client_call`)."""
    return any(is_client_call(part.base, part.status) for part in msg.parts)


def client_call_in(parts: Iterable[Part]) -> bool:
    """Whether built parts hold a client call (:func:`is_client_call`), e.g. a body read whole."""
    return any(is_client_call(p, getattr(p, "status", None)) for p in parts)


def empty_text() -> TextPart:
    """A new, empty text part (what a text delta opens)."""
    return TextPart(text="")


def empty_refusal() -> RefusalPart:
    """A new, empty refusal part."""
    return RefusalPart(text="")


def same_call(a: ToolCallPart, b: ToolCallPart) -> bool:
    """Whether a start ``b`` at an open call's key continues call ``a`` (same id, or same name)."""
    if b.id:
        return not a.id or a.id == b.id
    return not b.name or not a.name or a.name == b.name
