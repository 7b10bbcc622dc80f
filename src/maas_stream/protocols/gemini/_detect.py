"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect", "detect_body"]


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
