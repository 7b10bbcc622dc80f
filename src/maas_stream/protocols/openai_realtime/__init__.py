"""OpenAI Realtime (GA and beta event names) over a websocket, recorded as ``{"dir", "msg"}`` JSON lines.

Public: :class:`StreamDecoder` (server and client events; each response's output items as
messages), :class:`StreamEncoder` (server events), the conversation-item history codec
(:func:`to_canonical`, :func:`from_canonical`) and :func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

from typing import Any

from ._decode import StreamDecoder as StreamDecoder
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

__all__ = ("NAME", "StreamDecoder", "StreamEncoder", "detect", "from_canonical", "to_canonical", "validate")

NAME = "openai-realtime"

_PREFIXES = (
    "session.",
    "response.",
    "conversation.",
    "input_audio_buffer.",
    "output_audio_buffer.",
    "rate_limits.",
)


def detect(direction: str, msg: Any) -> bool:
    """Whether a first websocket frame (direction and parsed message) is a Realtime event."""
    if not isinstance(msg, dict):
        return False
    kind = msg.get("type")
    return isinstance(kind, str) and (kind == "error" or kind.startswith(_PREFIXES))
