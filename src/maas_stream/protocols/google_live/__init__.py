"""Google Live API (BidiGenerateContent over a websocket), recorded as ``{"dir", "msg"}`` JSON lines.

Public: :class:`StreamDecoder` (client and server messages; one assistant message per model
turn, kept as session events rather than flattened), :class:`StreamEncoder` (server messages),
the client-content history codec (:func:`to_canonical`, :func:`from_canonical`) and
:func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

from typing import Any

from ._decode import StreamDecoder as StreamDecoder
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

__all__ = ("NAME", "StreamDecoder", "StreamEncoder", "detect", "from_canonical", "to_canonical", "validate")

NAME = "google-live"

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
