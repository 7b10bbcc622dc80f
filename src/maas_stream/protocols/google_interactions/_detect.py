"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect", "detect_body"]

_EVENTS = frozenset(
    {
        "interaction.created",
        "interaction.start",
        "interaction.status_update",
        "step.start",
        "content.start",
        "interaction.completed",
        "interaction.complete",
    }
)


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like an Interactions stream."""
    if isinstance(payload, dict) and isinstance(payload.get("event_type"), str):
        return payload["event_type"] in _EVENTS or str(payload["event_type"]).startswith("step.")
    return event in _EVENTS


_INTERACTION_STEPS = frozenset(
    {"user_input", "thought", "function_result", "function_response", "model_output"}
)


def detect_body(body: Any) -> int:
    """How sure is it that a request body is an Interactions one (0 no, 2 surely)."""
    if not isinstance(body, dict) or "contents" in body:
        return 0
    if "previous_interaction_id" in body or "agent" in body:
        return 2
    items = body.get("input")
    if isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") in _INTERACTION_STEPS for i in items
    ):
        return 2
    return 0
