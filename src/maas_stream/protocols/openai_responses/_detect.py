"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

from .._input_side import INTERACTIONS_FIELDS, RESPONSES_FIELDS, input_side

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


def detect_body(body: Any) -> int:
    """How sure is it that a request body is a Responses one (0 no, 1 maybe, 2 surely).

    Sure with a field only Responses has (``instructions``, ``max_output_tokens``,
    ``previous_response_id``...) or ``input`` items only Responses has (a ``function_call``
    with a ``call_id`` and string ``arguments``, ``function_call_output``, ``input_text``
    content, a ``developer`` message...). Never with a Google Interactions field
    (``system_instruction``, ``generation_config``, ``previous_interaction_id``...) or step
    (``function_result``, a ``function_call`` with an ``arguments`` object, a ``model`` turn).
    A plain string ``input`` or user text messages, valid in both, are only a maybe.
    """
    if not isinstance(body, dict) or "input" not in body or "contents" in body:
        return 0
    if any(name in body for name in INTERACTIONS_FIELDS) or not isinstance(body["input"], str | list):
        return 0
    side = input_side(body["input"])
    if side in ("interactions", "neither"):
        return 0
    return 2 if side == "responses" or any(name in body for name in RESPONSES_FIELDS) else 1
