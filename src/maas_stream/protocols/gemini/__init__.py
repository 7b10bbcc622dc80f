"""Google Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``.

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the history codec
(:func:`to_canonical`, :func:`from_canonical`, :func:`request_extras`) and :func:`validate`.
Wire Structs are private.
"""

from __future__ import annotations

from typing import Any

from ._body import encode_response as encode_response
from ._decode import SIGNATURE_TYPE as SIGNATURE_TYPE
from ._decode import StreamDecoder as StreamDecoder
from ._encode import StreamEncoder as StreamEncoder
from ._history import PLACEHOLDER_SIGNATURE as PLACEHOLDER_SIGNATURE
from ._history import from_canonical as from_canonical
from ._history import request_extras as request_extras
from ._history import to_canonical as to_canonical
from ._history import validate as validate

__all__ = (
    "NAME",
    "PLACEHOLDER_SIGNATURE",
    "SIGNATURE_TYPE",
    "StreamDecoder",
    "StreamEncoder",
    "detect",
    "detect_body",
    "encode_response",
    "from_canonical",
    "request_extras",
    "to_canonical",
    "validate",
)

NAME = "gemini"


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like a Gemini stream."""
    if event != "message" or not isinstance(payload, dict):
        return False
    if "candidates" in payload or "promptFeedback" in payload or "prompt_feedback" in payload:
        return True
    error = payload.get("error")
    if isinstance(error, dict) and "status" in error and type(error.get("code")) is int:
        return True  # a Google RPC error body {code, message, status}
    return "usageMetadata" in payload or "modelVersion" in payload or "responseId" in payload


def detect_body(body: Any) -> int:
    """How sure is it that a request body is a Gemini ``generateContent`` one (0 no, 2 surely)."""
    return 2 if isinstance(body, dict) and isinstance(body.get("contents"), list) else 0
