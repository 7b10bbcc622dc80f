"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

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


_OWN_FIELDS: Final = frozenset(
    {
        "instructions",
        "previous_response_id",
        "max_output_tokens",
        "text",
        "reasoning",
        "include",
        "truncation",
        "conversation",
    }
)
"""Top-level fields only a Responses body has among the bodies with ``input`` (Google
Interactions says ``system_instruction``, ``generation_config.max_output_tokens``,
``previous_interaction_id``)."""

_FOREIGN_FIELDS: Final = frozenset(
    {
        "previous_interaction_id",
        "agent",
        "agent_config",
        "system_instruction",
        "generation_config",
        "response_modalities",
        "response_mime_type",
        "safety_settings",
        "continuation_token",
        "cached_content",
        "webhook_config",
    }
)
"""Top-level fields a Responses body never has (they are Google Interactions'): not Responses."""

_RESPONSES_ITEMS: Final = frozenset(
    {"message", "function_call_output", "reasoning", "item_reference", "custom_tool_call"}
)
_FOREIGN_ITEMS: Final = frozenset(
    {"user_input", "model_output", "thought", "function_result", "function_response"}
    | {"text", "image", "audio", "document", "video"}
)
"""Interactions steps and Content no Responses item is (with every ``*_result`` step)."""


def _verdict(verdicts: list[bool | None]) -> bool | None:
    if False in verdicts:
        return False
    return True if True in verdicts else None


def _item_is_own(item: Any) -> bool | None:
    """``True``: only Responses has it; ``False``: Responses has no such item; ``None``: either."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind is None and "role" in item:  # an easy input message {role, content}
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            return False  # Interactions' "model"
        content = item.get("content")
        inner = _verdict([_item_is_own(c) for c in content]) if isinstance(content, list) else None
        return False if inner is False else (inner or role != "user" or None)
    if not isinstance(kind, str):
        return False
    if kind == "function_call":
        # Responses: ``call_id`` + ``arguments`` as a JSON string; Interactions: ``id`` + an object.
        return "call_id" in item or isinstance(item.get("arguments"), str)
    if kind in _RESPONSES_ITEMS or kind.endswith("_output") or kind.startswith(("input_", "output_")):
        return True
    if kind in _FOREIGN_ITEMS or kind.endswith("_result"):
        return False
    return None


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
    if any(name in body for name in _FOREIGN_FIELDS):
        return 0
    items = body["input"]
    if not isinstance(items, str | list):
        return 0
    verdict = _verdict([_item_is_own(i) for i in items]) if isinstance(items, list) else None
    if verdict is False:
        return 0
    return 2 if verdict or any(name in body for name in _OWN_FIELDS) else 1
