"""The canonical client messages of a session protocol (OpenAI Realtime, Google Live).

A realtime client talks to the server too: it configures the session, adds user messages and
tool results, streams audio, asks for a response and cancels one. Each protocol's client codec
(``protocols/openai_realtime/_client.py``, ``protocols/google_live/_client.py``) decodes its
client messages into these Structs and encodes them back, so a bridge translates a client of
one protocol for a server of the other through one model.

* :class:`SessionConfig`: the session's settings (Realtime ``session.update``, Live ``setup``).
  A field left ``None`` was not said (an update leaves it as it is); turning a feature off is
  said explicitly (``TurnDetection(mode="manual")``, ``Transcription(enabled=False)``).
  :attr:`SessionConfig.unsupported` names the client's own fields that have no canonical form.
* :class:`AddMessages`, :class:`ToolResults`, :class:`TextInput`: conversation input.
* :class:`AudioChunk`, :class:`ActivityStart`, :class:`AudioCommit`, :class:`AudioStreamEnd`,
  :class:`AudioClear`: streamed audio and its turn boundaries.
* :class:`ResponseRequest`, :class:`CancelResponse`: responses on demand.
* :class:`ItemDelete`, :class:`ItemTruncate`, :class:`ItemRetrieve`, :class:`OutputAudioClear`:
  Realtime's conversation and playback management.
* :class:`OtherClientMessage`: anything else (Live ``video``, ``contextUpdate``...), kept whole.

It must not know any wire protocol or do IO.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, final

import msgspec

from ._model import Message, ToolResultPart

__all__ = [
    "ActivityStart",
    "AddMessages",
    "AudioChunk",
    "AudioClear",
    "AudioCommit",
    "AudioEncoding",
    "AudioFormat",
    "AudioStreamEnd",
    "CancelResponse",
    "ClientMessage",
    "ItemDelete",
    "ItemRetrieve",
    "ItemTruncate",
    "OtherClientMessage",
    "OutputAudioClear",
    "ResponseRequest",
    "SessionConfig",
    "SessionTool",
    "TextInput",
    "ToolResults",
    "Transcription",
    "TurnDetection",
]

AudioEncoding: TypeAlias = Literal["pcm16", "g711_ulaw", "g711_alaw"]
"""Raw audio sample encodings: 16-bit little-endian PCM, G.711 μ-law, G.711 A-law."""

Modality: TypeAlias = Literal["text", "audio"]


@final
class AudioFormat(msgspec.Struct, frozen=True, kw_only=True):
    """A raw mono audio format: its encoding and sample rate (G.711 is always 8 kHz)."""

    encoding: AudioEncoding = "pcm16"
    rate: int = 24000


@final
class Transcription(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Input (or output) audio transcription: on with these settings, or explicitly off."""

    enabled: bool = True
    model: str | None = None
    language: str | None = None
    prompt: str | None = None


@final
class TurnDetection(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How a user turn ends: the server's voice activity detection, or the client (``manual``).

    ``manual`` is Realtime ``turn_detection: null`` and Live
    ``automaticActivityDetection.disabled``; the client then marks turns itself (Realtime
    ``input_audio_buffer.commit`` + ``response.create``, Live ``activityStart``/``activityEnd``).
    """

    mode: Literal["server_vad", "semantic_vad", "manual"]
    prefix_padding_ms: int | None = None
    silence_duration_ms: int | None = None
    threshold: float | None = None
    """Realtime ``server_vad`` activation threshold (0..1)."""
    eagerness: str | None = None
    """Realtime ``semantic_vad`` eagerness."""
    create_response: bool | None = None
    interrupt_response: bool | None = None
    start_sensitivity: str | None = None
    """Live ``startOfSpeechSensitivity`` (``START_SENSITIVITY_HIGH``/``LOW``)."""
    end_sensitivity: str | None = None
    """Live ``endOfSpeechSensitivity`` (``END_SENSITIVITY_HIGH``/``LOW``)."""


@final
class SessionTool(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A client function the model may call: name, description, JSON-schema parameters."""

    name: str
    description: str | None = None
    parameters: Any = None


class _Base(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="kind"):
    event_id: str | None = None
    """The client's own id of the message (Realtime ``event_id``), for errors that name it."""


@final
class SessionConfig(_Base, frozen=True, tag="session"):
    """The session's settings (Realtime ``session.update``, Live ``setup``); ``None``: not said."""

    model: str | None = None
    instructions: str | None = None
    tools: list[SessionTool] | None = None
    tool_choice: str | None = None
    """``auto``, ``none``, ``required`` (a named function is in :attr:`unsupported`)."""
    modalities: list[Modality] | None = None
    """The output modalities (Realtime ``output_modalities``, Live ``responseModalities``)."""
    voice: str | None = None
    input_format: AudioFormat | None = None
    output_format: AudioFormat | None = None
    input_transcription: Transcription | None = None
    output_transcription: Transcription | None = None
    turn_detection: TurnDetection | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    unsupported: tuple[str, ...] = ()
    """The client's own field paths that were set and have no canonical form."""


@final
class AddMessages(_Base, frozen=True, tag="messages"):
    """Conversation items added (Realtime ``conversation.item.create``, Live ``clientContent``).

    ``respond``: the model should answer now (Live ``turnComplete: true``); a Realtime client
    asks with a separate ``response.create``.
    """

    messages: list[Message]
    respond: bool = False
    previous_item_id: str | None = None


@final
class ToolResults(_Base, frozen=True, tag="tool_results"):
    """The client's results for the model's calls (Realtime ``function_call_output``, Live ``toolResponse``)."""

    results: list[ToolResultPart]
    respond: bool = False
    """The model goes on now (Live continues after ``toolResponse``; a Realtime client asks
    with a separate ``response.create``)."""
    item_id: str | None = None


@final
class TextInput(_Base, frozen=True, tag="text_input"):
    """Realtime text input (Live ``realtimeInput.text``): a user turn the model answers."""

    text: str


@final
class AudioChunk(_Base, frozen=True, tag="audio"):
    """Input audio (Realtime ``input_audio_buffer.append``, Live ``realtimeInput.audio``)."""

    data: bytes
    format: AudioFormat


@final
class ActivityStart(_Base, frozen=True, tag="activity_start"):
    """The user starts speaking (Live ``activityStart``, manual turns only)."""


@final
class AudioCommit(_Base, frozen=True, tag="commit"):
    """The user's audio turn ends (Realtime ``input_audio_buffer.commit``, Live ``activityEnd``)."""


@final
class AudioStreamEnd(_Base, frozen=True, tag="audio_stream_end"):
    """The microphone closed (Live ``audioStreamEnd``, with automatic activity detection)."""


@final
class AudioClear(_Base, frozen=True, tag="audio_clear"):
    """Discard the input audio not committed yet (Realtime ``input_audio_buffer.clear``)."""


@final
class ResponseRequest(_Base, frozen=True, tag="response"):
    """Ask for a response (Realtime ``response.create``), with per-response overrides."""

    instructions: str | None = None
    tools: list[SessionTool] | None = None
    tool_choice: str | None = None
    modalities: list[Modality] | None = None
    voice: str | None = None
    output_format: AudioFormat | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    unsupported: tuple[str, ...] = ()
    """The client's own field paths set that have no canonical form (``response.input``...)."""


@final
class CancelResponse(_Base, frozen=True, tag="cancel"):
    """Cancel the response in progress (Realtime ``response.cancel``)."""

    response_id: str | None = None


@final
class ItemDelete(_Base, frozen=True, tag="item_delete"):
    """Remove an item from the conversation (Realtime ``conversation.item.delete``)."""

    item_id: str


@final
class ItemTruncate(_Base, frozen=True, tag="item_truncate"):
    """Cut an assistant item's audio where playback stopped (Realtime ``conversation.item.truncate``)."""

    item_id: str
    content_index: int
    audio_end_ms: int


@final
class ItemRetrieve(_Base, frozen=True, tag="item_retrieve"):
    """Ask for an item as the server holds it (Realtime ``conversation.item.retrieve``)."""

    item_id: str


@final
class OutputAudioClear(_Base, frozen=True, tag="output_audio_clear"):
    """Stop the server's audio output (Realtime WebRTC/SIP ``output_audio_buffer.clear``)."""


@final
class OtherClientMessage(_Base, frozen=True, tag="other"):
    """A client message with no canonical form (Live ``video``, ``contextUpdate``...), kept whole."""

    name: str
    """What it is, in the client's terms (``realtimeInput.video``)."""
    raw: Any = None


ClientMessage: TypeAlias = (
    SessionConfig
    | AddMessages
    | ToolResults
    | TextInput
    | AudioChunk
    | ActivityStart
    | AudioCommit
    | AudioStreamEnd
    | AudioClear
    | ResponseRequest
    | CancelResponse
    | ItemDelete
    | ItemTruncate
    | ItemRetrieve
    | OutputAudioClear
    | OtherClientMessage
)
"""Every canonical client message (tagged by ``kind``)."""
