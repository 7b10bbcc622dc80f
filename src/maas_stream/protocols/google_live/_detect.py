"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect"]

_KEYS = frozenset(
    {
        "setup",
        "clientContent",
        "client_content",
        "realtimeInput",
        "realtime_input",
        "toolResponse",
        "tool_response",
        "setupComplete",
        "serverContent",
        "toolCall",
        "toolCallCancellation",
        "goAway",
        "sessionResumptionUpdate",
        "usageMetadata",
    }
)


def detect(direction: str, msg: Any) -> bool:
    """Whether a first websocket frame (direction and parsed message) is a Live message."""
    return isinstance(msg, dict) and "type" not in msg and bool(msg) and next(iter(msg)) in _KEYS
