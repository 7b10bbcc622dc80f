"""Google Live wire Structs (private): server messages, lowerCamelCase, key-presence envelope.

An absent key decodes as ``None`` (Live never sends ``null`` for a message key).

Only the fields the decoder reads are declared; unknown fields are ignored, never forbidden.
Client messages are read as plain objects (they are rare next to server audio).

They are ``gc=False``: decoded fresh per message, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles; leaving them out of the cycle collector is measured
in ``benchmarks/bench_realtime.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._session import Frame

__all__ = [
    "Blob",
    "LivePart",
    "ServerContent",
    "ServerMessage",
    "frame_decoder",
    "server_decoder",
]


class Blob(msgspec.Struct, rename="camel", gc=False):
    """``inlineData``: base64 ``data`` and its ``mimeType``."""

    mime_type: str | None = None
    data: str | None = None


class LivePart(msgspec.Struct, rename="camel", gc=False):
    """One part of a ``modelTurn`` (the Gemini ``Part`` shape)."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    inline_data: Blob | None = None
    function_call: dict[str, Any] | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None


class Content(msgspec.Struct, rename="camel", gc=False):
    """A ``modelTurn`` Content."""

    parts: list[LivePart] = msgspec.field(default_factory=list)
    role: str | None = None


class Transcription(msgspec.Struct, rename="camel", gc=False):
    """An input or output transcription fragment."""

    text: str | None = None
    finished: bool | None = None


class ServerContent(msgspec.Struct, rename="camel", gc=False):
    """``serverContent``."""

    model_turn: Content | None = None
    turn_complete: bool = False
    interrupted: bool = False
    generation_complete: bool = False
    input_transcription: Transcription | None = None
    output_transcription: Transcription | None = None
    turn_complete_reason: str | None = None
    grounding_metadata: Any = None
    url_context_metadata: Any = None


class ToolCall(msgspec.Struct, rename="camel", gc=False):
    """``toolCall``: parallel calls arrive together."""

    function_calls: list[dict[str, Any]] = msgspec.field(default_factory=list)


class ServerMessage(msgspec.Struct, rename="camel", gc=False):
    """Every server → client message: one main key, plus ``usageMetadata`` beside it."""

    setup_complete: Any = None
    server_content: ServerContent | None = None
    tool_call: ToolCall | None = None
    tool_call_cancellation: Any = None
    usage_metadata: dict[str, Any] | None = None
    go_away: Any = None
    session_resumption_update: Any = None


server_decoder = msgspec.json.Decoder(ServerMessage)


frame_decoder = msgspec.json.Decoder(Frame[ServerMessage])
"""Reads a recorded server line, envelope included, in one pass."""
