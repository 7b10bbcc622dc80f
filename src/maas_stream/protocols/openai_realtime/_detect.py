"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect"]

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
