"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect", "detect_body"]


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


_RESPONSES_ITEMS = frozenset(
    {"message", "function_call", "function_call_output", "reasoning", "item_reference", "custom_tool_call"}
)


def detect_body(body: Any) -> int:
    """How sure is it that a request body is a Responses one (0 no, 1 maybe, 2 surely).

    ``instructions`` or ``input`` items of Responses item types are sure; a plain string
    ``input`` (which Interactions also takes) is only a maybe.
    """
    if not isinstance(body, dict) or "input" not in body or "contents" in body:
        return 0
    items = body["input"]
    if isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") in _RESPONSES_ITEMS for i in items
    ):
        return 2
    if "instructions" in body or "previous_response_id" in body:
        return 2
    return 1 if isinstance(items, str | list) else 0
