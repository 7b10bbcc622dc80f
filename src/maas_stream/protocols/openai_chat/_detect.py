"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect", "detect_body"]


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like a Chat stream."""
    if not isinstance(payload, dict):
        return False
    if payload.get("object") == "chat.completion.chunk":
        return True
    return "choices" in payload and isinstance(payload["choices"], list) and "candidates" not in payload


_CHAT_ONLY_ROLES = frozenset({"developer", "tool", "function"})
_CHAT_ONLY_PARTS = frozenset({"image_url", "input_audio", "file"})


def detect_body(body: Any) -> int:
    """How sure is it that a request body is a Chat one.

    2 for Chat-only shapes, 1 for any ``messages`` list of role-tagged messages, 0 otherwise.
    """
    messages = body.get("messages") if isinstance(body, dict) else body
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        return 0
    for message in messages:
        if message["role"] in _CHAT_ONLY_ROLES or "tool_calls" in message or "function_call" in message:
            return 2
        if message["role"] == "system" and isinstance(body, dict) and "system" not in body:
            return 2
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in _CHAT_ONLY_PARTS for p in content
        ):
            return 2
    return 1
