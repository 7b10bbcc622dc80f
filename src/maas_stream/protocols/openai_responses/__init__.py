"""OpenAI Responses API (``POST /v1/responses`` with ``stream: true``, and resumed streams).

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the history codec
(:func:`to_canonical`, :func:`from_canonical`) and :func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

from typing import Any

from ._decode import StreamDecoder as StreamDecoder
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

__all__ = (
    "StreamDecoder",
    "StreamEncoder",
    "detect",
    "from_canonical",
    "to_canonical",
    "validate",
)

NAME = "openai-responses"


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like a Responses stream."""
    if not isinstance(payload, dict):
        return False
    kind = payload.get("type")
    if not isinstance(kind, str):
        return False
    if kind.startswith("response."):
        return True
    return kind == "error" and "sequence_number" in payload
