"""OpenAI Chat Completions (``POST /v1/chat/completions`` with ``stream: true``).

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the history codec
(:func:`to_canonical`, :func:`from_canonical`) and :func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

from typing import Any

from ._decode import StreamDecoder as StreamDecoder
from ._encode import ReasoningMode as ReasoningMode
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

__all__ = (
    "ReasoningMode",
    "StreamDecoder",
    "StreamEncoder",
    "detect",
    "from_canonical",
    "to_canonical",
    "validate",
)

NAME = "openai-chat"


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like a Chat stream."""
    if not isinstance(payload, dict):
        return False
    if payload.get("object") == "chat.completion.chunk":
        return True
    return "choices" in payload and isinstance(payload["choices"], list) and "candidates" not in payload
