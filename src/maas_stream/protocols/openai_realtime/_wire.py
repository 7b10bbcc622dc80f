"""OpenAI Realtime wire Structs (private): the server events, typed by ``type``.

They declare only the fields the decoder reads (unknown ones are ignored, never forbidden) and are
``gc=False`` like the Live Structs (fresh per message, plain JSON values inside, no cycles;
measured in ``benchmarks/bench_realtime.py``).

A server message (or a recorded server line) is decoded by :data:`message_decoder` (:data:`frame_decoder`):
its ``type`` picks the Struct (a msgspec tag: no ``type`` string is built per message), and a
streamed delta's Struct holds only what a delta needs (its other fields are not read, so not
checked either). A message of any other type fails them and is read untagged (``ServerEvent``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, Union

import msgspec

from .._direct import ARGS, AUDIO, TEXT, TRANSCRIPT
from .._session import Frame

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["DELTAS", "QUIET", "ServerEvent", "frame_decoder", "message_decoder", "server_decoder"]

DELTAS: Final[dict[str, int]] = {
    **dict.fromkeys(("response.output_text.delta", "response.text.delta"), TEXT),
    **dict.fromkeys(("response.output_audio.delta", "response.audio.delta"), AUDIO),
    **dict.fromkeys(
        ("response.output_audio_transcript.delta", "response.audio_transcript.delta"), TRANSCRIPT
    ),
    "response.function_call_arguments.delta": ARGS,
}
"""The streamed deltas (GA and beta names), by the buffer they fold to (``fold_delta``)."""
QUIET: Final = frozenset(
    {
        "response.output_text.done",
        "response.text.done",
        "response.output_audio.done",
        "response.audio.done",
        "response.output_audio_transcript.done",
        "response.audio_transcript.done",
    }
)
"""The ``.done`` events that repeat what the deltas said (no events)."""
_NAMED: Final = (
    *QUIET,
    "response.function_call_arguments.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_item.added",
    "response.output_item.done",
    "response.created",
    "response.done",
    "conversation.item.input_audio_transcription.delta",
    "conversation.item.input_audio_transcription.completed",
    "session.created",
    "session.updated",
    "error",
    # The common session events, kept whole: typed too, so that they take the same path.
    "conversation.created",
    "conversation.item.created",
    "conversation.item.added",
    "conversation.item.done",
    "conversation.item.retrieved",
    "conversation.item.truncated",
    "conversation.item.deleted",
    "conversation.item.input_audio_transcription.failed",
    "conversation.item.input_audio_transcription.segment",
    "input_audio_buffer.committed",
    "input_audio_buffer.cleared",
    "input_audio_buffer.speech_started",
    "input_audio_buffer.speech_stopped",
    "input_audio_buffer.timeout_triggered",
    "output_audio_buffer.started",
    "output_audio_buffer.stopped",
    "output_audio_buffer.cleared",
    "rate_limits.updated",
    "transcription_session.created",
    "transcription_session.updated",
)
"""Every other type read typed: the decoder's handlers' (``_decode._HANDLERS``) and the common session events."""


class _Fields(msgspec.Struct, gc=False):
    """The fields the decoder reads of any server event but its type (GA and beta names share them)."""

    item_id: str | None = None
    content_index: int = 0
    delta: str | None = None
    item: dict[str, Any] | None = None
    part: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    session: dict[str, Any] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    transcript: str | None = None
    error: Any = None


class ServerEvent(_Fields, gc=False):
    """Any Realtime server event, its type read as a string."""

    type: str = ""


class _Known(_Fields, tag_field="type", gc=False):
    """A server event of a type the decoder names: ``type`` is its tag, one string per class."""

    type: ClassVar[str] = ""
    into: ClassVar[int | None] = None
    """The buffer a streamed delta folds to (``_direct``'s kinds), ``None`` for any other event."""


class _Delta(msgspec.Struct, tag_field="type", gc=False):
    """A streamed delta (text, audio, transcript, call arguments): only what it needs."""

    type: ClassVar[str] = ""
    into: ClassVar[int | None] = None
    item_id: str | None = None
    content_index: int = 0
    delta: str | None = None


server_decoder = msgspec.json.Decoder(ServerEvent)


def _typed(
    deltas: dict[str, int], others: Iterable[str]
) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]:
    """Decoders of a server message and of a recorded server line (``Frame``), typed by ``type``.

    ``deltas``: the streamed deltas' types, by the buffer they fold to; ``others``: every other
    type read typed. Each type is one Struct whose ``type`` and ``into`` are class attributes; a
    message of any other type fails both decoders (``server_decoder`` reads it).
    """
    kinds = [
        msgspec.defstruct(
            f"Delta{i}", [], bases=(_Delta,), tag=name, namespace={"type": name, "into": into}, gc=False
        )
        for i, (name, into) in enumerate(deltas.items())
    ]
    kinds += [
        msgspec.defstruct(f"Event{i}", [], bases=(_Known,), tag=name, namespace={"type": name}, gc=False)
        for i, name in enumerate(others)
    ]
    typed = Union[tuple(kinds)]  # type: ignore[valid-type]  # noqa: UP007
    return msgspec.json.Decoder(typed), msgspec.json.Decoder(Frame[typed])  # type: ignore[valid-type]


message_decoder, frame_decoder = _typed(DELTAS, _NAMED)
"""A server message, and a recorded server line in one pass (envelope included), typed by ``type``."""
