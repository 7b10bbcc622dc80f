"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

from .._input_side import INTERACTIONS_FIELDS, RESPONSES_FIELDS, input_side

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


_NOT_INTERACTIONS: Final = RESPONSES_FIELDS | {"tool_choice", "parallel_tool_calls", "temperature", "top_p"}
"""Top-level fields an Interactions body never has: OpenAI Responses' own, and the sampling and
tool choice that Interactions puts in ``generation_config``."""


def detect_body(body: Any) -> int:
    """How sure is it that a request body is an Interactions one (0 no, 2 surely).

    Sure with a field only Interactions has (``system_instruction``, ``generation_config``,
    ``previous_interaction_id``...) or an ``input`` of Interactions steps, Content or turns (a
    ``function_call`` step with an ``id`` and an ``arguments`` object, a ``function_result``,
    a ``model`` turn, ``text`` content); never with a field only OpenAI Responses has
    (``instructions``, ``max_output_tokens``...). A plain string ``input`` or user text turns,
    valid in both, are left to Responses' "maybe".
    """
    if not isinstance(body, dict) or "contents" in body or "messages" in body:
        return 0
    if any(name in body for name in _NOT_INTERACTIONS):
        return 0
    side = input_side(body.get("input", ""))
    if side in ("responses", "neither"):
        return 0
    return 2 if side == "interactions" or any(name in body for name in INTERACTIONS_FIELDS) else 0
