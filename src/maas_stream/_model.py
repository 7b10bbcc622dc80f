"""The canonical model: roles, messages, the part union, usage, responses and stream errors.

This module owns the JSON contract of DESIGN.md ("Canonical model"). Every Struct here encodes
with ``msgspec.json.encode`` to exactly that shape: snake_case names, unset fields left out.

It must not know any wire protocol: the protocol modules map their wire shapes onto these types.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias, final

import msgspec

__all__ = [
    "ASSISTANT_ROLES",
    "AudioPart",
    "CitationPart",
    "CodePart",
    "FilePart",
    "FinishReason",
    "ImagePart",
    "Message",
    "MessageStatus",
    "Part",
    "PartStatus",
    "ReasoningPart",
    "RefusalPart",
    "Response",
    "ResponseStatus",
    "Role",
    "Session",
    "SessionEvent",
    "SessionEventKind",
    "StreamError",
    "TextPart",
    "ToolCallKind",
    "ToolCallPart",
    "ToolResultPart",
    "UnknownPart",
    "Usage",
]

Role: TypeAlias = Literal["system", "developer", "user", "assistant", "tool", "function", "model"]
ResponseStatus: TypeAlias = Literal["in_progress", "completed", "incomplete", "failed"]
MessageStatus: TypeAlias = Literal["in_progress", "completed", "incomplete"]
PartStatus: TypeAlias = Literal["in_progress", "completed", "incomplete"]
FinishReason: TypeAlias = Literal[
    "stop", "length", "tool_calls", "content_filter", "refusal", "pause", "error", "other"
]
ToolCallKind: TypeAlias = Literal["function", "custom", "server", "mcp"]
SessionEventKind: TypeAlias = Literal[
    "server", "client", "error", "input_transcript", "tool_result", "cancellation"
]

ASSISTANT_ROLES: Final = frozenset({"assistant", "model"})
"""The roles of a model's own output (``model`` is Gemini's name for ``assistant``)."""


class _Part(msgspec.Struct, tag_field="type", omit_defaults=True, frozen=True, kw_only=True):
    """Base of the part union; tagged by ``type``. Do not subclass outside this module."""


@final
class CitationPart(_Part, tag="citation", frozen=True):
    """A citation or annotation: a URL, a file or a span of a source that supports some text."""

    kind: str
    """The provider's citation type, e.g. ``url_citation``, ``char_location``, ``grounding_chunk``."""
    url: str | None = None
    title: str | None = None
    file_id: str | None = None
    start: int | None = None
    """Start offset in the cited text or in the answer text, as the provider counts it."""
    end: int | None = None
    cited_text: str | None = None
    raw: Any = None
    """The provider's citation object, unchanged, so nothing the fields above miss is lost."""


@final
class TextPart(_Part, tag="text", frozen=True):
    """Plain text input or output."""

    text: str
    annotations: list[CitationPart] | None = None
    signature: str | None = None
    """An opaque provider signature attached to this text (Gemini ``thoughtSignature``)."""
    logprobs: list[Any] | None = None
    """Token log-probabilities as the provider sent them, concatenated over the stream."""


@final
class RefusalPart(_Part, tag="refusal", frozen=True):
    """Refusal text, kept apart from normal text."""

    text: str
    logprobs: list[Any] | None = None


@final
class ImagePart(_Part, tag="image", frozen=True):
    """An image by URL, inline base64 data or file id."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    file_id: str | None = None
    detail: str | None = None


@final
class AudioPart(_Part, tag="audio", frozen=True):
    """Audio input or output; ``data`` is base64."""

    data: str | None = None
    format: str | None = None
    transcript: str | None = None
    id: str | None = None
    expires_at: int | None = None


@final
class FilePart(_Part, tag="file", frozen=True):
    """A file or document by id, URL or inline data."""

    file_id: str | None = None
    url: str | None = None
    data: str | None = None
    filename: str | None = None
    media_type: str | None = None


@final
class ToolCallPart(_Part, tag="tool_call", frozen=True):
    """The model asks for a tool to be called.

    ``kind`` tells who executes it: ``function``/``custom`` calls are for the caller to run;
    ``server`` and ``mcp`` calls were run by the provider and must never be executed again.
    """

    id: str
    """The id a tool result refers to (Chat ``tool_calls[].id``, Responses ``call_id``, ...)."""
    name: str
    arguments: str
    """The arguments as JSON text (free-form text for ``custom`` tools), byte-exact as streamed."""
    kind: ToolCallKind = "function"
    item_id: str | None = None
    """The provider's item id when it differs from the call id (Responses item ``id``)."""
    server_name: str | None = None
    signature: str | None = None
    status: PartStatus | None = None
    """``completed`` when the provider closed the call; ``incomplete`` when the stream was cut."""


@final
class ToolResultPart(_Part, tag="tool_result", frozen=True):
    """The result of a tool call, referring to it by ``tool_call_id``."""

    tool_call_id: str
    content: list[Part] | str
    name: str | None = None
    is_error: bool | None = None


@final
class ReasoningPart(_Part, tag="reasoning", frozen=True):
    """Reasoning or thinking, kept byte-exact and one part per provider block."""

    text: str | None = None
    summary: list[str] | None = None
    signature: str | None = None
    encrypted_content: str | None = None
    redacted: bool | None = None
    data: str | None = None
    """Opaque redacted-thinking data (Anthropic ``redacted_thinking.data``)."""
    id: str | None = None
    format: str | None = None
    """The provider's reasoning format tag, where it sends one (OpenRouter ``reasoning_details[].format``)."""
    origin_field: str | None = None
    """For OpenAI-compatible extensions: the delta field it arrived in (``reasoning_content``,
    ``reasoning`` or ``reasoning_details``), so a same-protocol re-encode puts it back there."""


@final
class CodePart(_Part, tag="code", frozen=True):
    """Code the model wrote for execution, and/or the outcome of running it."""

    language: str | None = None
    code: str | None = None
    outcome: str | None = None
    output: str | None = None


@final
class UnknownPart(_Part, tag="unknown", frozen=True):
    """Anything of a type this library does not know, kept whole."""

    provider_type: str
    raw: Any


Part: TypeAlias = (
    TextPart
    | RefusalPart
    | ImagePart
    | AudioPart
    | FilePart
    | ToolCallPart
    | ToolResultPart
    | ReasoningPart
    | CitationPart
    | CodePart
    | UnknownPart
)
"""The tagged union of every canonical part."""


@final
class Message(msgspec.Struct, omit_defaults=True, frozen=True, kw_only=True):
    """One canonical message (or one provider output item)."""

    role: Role
    content: list[Part] | str = msgspec.field(default_factory=list)
    id: str | None = None
    type: str | None = None
    """The provider's item or message type (Responses item type, e.g. ``function_call``)."""
    name: str | None = None
    status: MessageStatus | None = None
    phase: Literal["commentary", "final_answer"] | None = None
    tool_call_id: str | None = None
    choice_index: int | None = None
    finish_reason: FinishReason | None = None
    """Why this choice ended, when the provider reports it per choice (Chat ``n > 1``)."""
    provider: str | None = None
    """The protocol whose decoder or history codec made this message (``"anthropic"``,
    ``"gemini"``...). Continuation state on it (signatures, encrypted reasoning) is replayed
    only to that protocol: see ``protocols/_replay.py``."""
    provider_raw: Any = None
    """Fields of the provider's message with no canonical home, for a same-protocol replay."""


@final
class Usage(msgspec.Struct, omit_defaults=True, frozen=True, kw_only=True):
    """Token accounting, with ONE meaning whatever the protocol (docs/usage.md).

    Every decoder maps its provider's counts into this meaning and every encoder maps it back
    out, so a count read here is the same count whichever protocol reported it:

    * ``input_tokens`` counts ALL prompt tokens: cache reads and cache writes included (Anthropic
      reports them apart; they are added), and Gemini's tool-use prompt included.
    * ``cache_read_tokens`` and ``cache_write_tokens`` are subsets of ``input_tokens``.
    * ``output_tokens`` counts ALL generated tokens, reasoning included (Gemini reports the
      thoughts apart; they are added); ``reasoning_tokens`` is a subset of it.
    * ``total_tokens`` is ``input_tokens + output_tokens``.

    A count the provider did not report is ``None``, never 0.
    """

    input_tokens: int | None = None
    """Every prompt token, cache reads and writes and tool-use prompts included."""
    output_tokens: int | None = None
    """Every generated token, reasoning included."""
    total_tokens: int | None = None
    """``input_tokens + output_tokens`` (the provider's own total, if it differs, is in ``raw``)."""
    reasoning_tokens: int | None = None
    """The reasoning (thinking) part of ``output_tokens``."""
    cache_read_tokens: int | None = None
    """The part of ``input_tokens`` read from a prompt cache."""
    cache_write_tokens: int | None = None
    """The part of ``input_tokens`` written to a prompt cache."""
    raw: Any = None
    """The provider's usage object, as last reported (in the provider's own meaning)."""


@final
class StreamError(msgspec.Struct, omit_defaults=True, frozen=True, kw_only=True):
    """An error the provider reported inside the stream."""

    type: str
    message: str | None = None
    code: str | None = None
    raw: Any = None


@final
class Response(msgspec.Struct, omit_defaults=True, frozen=True, kw_only=True):
    """The aggregate of one stream: what ``maas-stream aggregate`` prints."""

    protocol: str
    status: ResponseStatus
    messages: list[Message] = msgspec.field(default_factory=list)
    id: str | None = None
    model: str | None = None
    finish_reason: FinishReason | None = None
    provider_finish_reason: str | None = None
    usage: Usage | None = None
    error: StreamError | None = None
    unknown: dict[str, int] = msgspec.field(default_factory=dict)
    """How many frames, items, blocks or parts of each unknown type were kept."""
    unknown_events: list[UnknownPart] | None = None
    """Whole stream-level frames of unknown type (not attached to a message), kept in order."""
    warnings: list[str] | None = None
    """Things the stream did that a careful caller should know (a ``.done`` value that disagreed
    with its deltas, a sequence gap, ...). They did not stop aggregation."""
    provider_raw: Any = None
    """Response-level provider fields with no canonical home (Chat ``created``,
    ``system_fingerprint``, ``service_tier``), kept for a same-protocol re-encode."""


@final
class SessionEvent(msgspec.Struct, omit_defaults=True, frozen=True, kw_only=True):
    """Something that happened on a session connection outside the model's responses.

    ``kind`` says what it is:

    * ``server``: a session message of the server (``session.created``/``session.updated``,
      ``setupComplete``, ``rate_limits.updated``, ``input_audio_buffer.*`` acknowledgements,
      ``goAway``, ``sessionResumptionUpdate``...), whole in ``raw``.
    * ``client``: a client message of a recording's ``{"dir": "client"}`` lines (``setup``,
      ``session.update``, ``clientContent``, ``realtimeInput``, ``response.create``...), whole in
      ``raw``. Tool results are ``tool_result`` events instead.
    * ``error``: an error the provider reported that did not end the session (``error``).
    * ``input_transcript``: what the user said, transcribed (``message``: a ``user`` message
      holding an audio part with the transcript).
    * ``tool_result``: the client's tool results (``message``: a ``tool`` message).
    * ``cancellation``: the provider cancelled a call (``call_id``) or a response's items.
    """

    kind: SessionEventKind
    type: str
    """The provider's type (``session.updated``, ``setupComplete``, ``client.setup``, ``error``,
    ``input_transcription``, ``function_call_output``, ``toolCallCancellation``...)."""
    after: int
    """How many of ``Session.responses`` had started when it happened: ``0`` before the first
    response, ``n`` during or after ``responses[n - 1]`` (and before ``responses[n]``)."""
    message: Message | None = None
    """The canonical message of an ``input_transcript`` or ``tool_result`` event."""
    error: StreamError | None = None
    """The error of an ``error`` event."""
    call_id: str | None = None
    """The call a ``cancellation`` names."""
    reason: str | None = None
    """Why, as the provider said it (a cancellation's ``turn_detected``...)."""
    raw: Any = None
    """The provider's message, unchanged (``server`` and ``client`` events)."""


@final
class Session(msgspec.Struct, omit_defaults=True, frozen=True, kw_only=True):
    """What a session protocol (Google Live, OpenAI Realtime) carried on one connection.

    Each model response (a Realtime ``response.created`` … ``response.done``, a Live model turn)
    is its own :class:`Response` with its own status, finish reason, usage and error, holding
    only the model's output. Everything else on the connection is a :class:`SessionEvent`, in
    the order it happened. :func:`maas_stream.aggregate_session` returns it.
    """

    protocol: str
    status: ResponseStatus
    """``completed`` when the input ended between responses, ``incomplete`` when it ended inside
    one (cut), ``in_progress`` in a snapshot taken inside one, ``failed`` after an error that
    ended the session."""
    responses: list[Response] = msgspec.field(default_factory=list)
    events: list[SessionEvent] = msgspec.field(default_factory=list)
    model: str | None = None
    error: StreamError | None = None
    """An error that ended the session (an error that did not is an ``error`` event)."""
    unknown: dict[str, int] = msgspec.field(default_factory=dict)
    """How many frames, items, blocks or parts of each unknown type were seen (session frames
    and client messages included, as on :class:`Response`)."""
    warnings: list[str] | None = None


PART_TYPES: Final = (
    TextPart,
    RefusalPart,
    ImagePart,
    AudioPart,
    FilePart,
    ToolCallPart,
    ToolResultPart,
    ReasoningPart,
    CitationPart,
    CodePart,
    UnknownPart,
)
