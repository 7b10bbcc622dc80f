"""Whose request body is it: OpenAI Responses or Google Interactions (both send ``input``)?

Both APIs post a body with ``model`` and ``input`` (a string, or a list of items / steps), so
neither detector can tell its own bodies alone. This module is the one place that knows what
tells them apart: the top-level fields only one of them has, and the ``input`` items only one
of them has. Each protocol's ``detect_body`` asks :func:`input_side` and reads the answer its
own way.

It must not know anything but these two APIs' request-body shapes, or do IO.
"""

from __future__ import annotations

from typing import Any, Final, Literal

__all__ = ["INTERACTIONS_FIELDS", "RESPONSES_FIELDS", "Side", "input_side"]

Side = Literal["responses", "interactions", "either", "neither"]
"""What an input (or one of its items) is: only a Responses one, only an Interactions one,
valid in both (a plain string, user text), or valid in neither (also: a mix of both)."""

RESPONSES_FIELDS: Final = frozenset(
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
"""Top-level fields only a Responses body has (Interactions says ``system_instruction``,
``generation_config.max_output_tokens``, ``previous_interaction_id``)."""

INTERACTIONS_FIELDS: Final = frozenset(
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
"""Top-level fields only an Interactions body has."""

_RESPONSES_ITEMS: Final = frozenset(
    {
        "message",
        "function_call_output",
        "reasoning",
        "item_reference",
        "custom_tool_call",
        "computer_call",
        "web_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "refusal",
        "summary_text",
    }
)
"""Responses input items and content parts (with every ``*_output`` item and ``input_*`` /
``output_*`` part) that no Interactions step or Content is."""

_INTERACTIONS_ITEMS: Final = frozenset(
    {"user_input", "model_output", "thought", "function_result", "function_response"}
    | {"text", "image", "audio", "document", "video"}
    | {
        "code_execution_call",
        "google_search_call",
        "google_maps_call",
        "url_context_call",
        "mcp_server_tool_call",
        "retrieval_call",
        "processing_call",
    }
)
"""Interactions steps, Content and built-in calls (with every ``*_result`` step) that no
Responses item is."""

_ROLES: Final[dict[Any, Side]] = {
    "user": "either",
    "model": "interactions",
    "assistant": "responses",
    "system": "responses",
    "developer": "responses",
}


def _joined(sides: list[Side]) -> Side:
    """The side of several items together: one only-X item decides, unless another says not X."""
    found = set(sides)
    if "neither" in found or {"responses", "interactions"} <= found:
        return "neither"
    if "responses" in found:
        return "responses"
    return "interactions" if "interactions" in found else "either"


def _item_side(item: Any) -> Side:
    if not isinstance(item, dict):
        return "neither"
    kind = item.get("type")
    if kind is None and "role" in item:  # a message / turn {role, content}
        role = _ROLES.get(item.get("role"), "neither")
        content = item.get("content")
        return _joined([role, *(_item_side(c) for c in content)]) if isinstance(content, list) else role
    if not isinstance(kind, str):
        return "neither"
    if kind == "function_call":
        # Responses: ``call_id`` + ``arguments`` as a JSON string; Interactions: ``id`` + an object.
        if "call_id" in item or isinstance(item.get("arguments"), str):
            return "responses"
        return "interactions" if isinstance(item.get("arguments"), dict) else "neither"
    if kind in _RESPONSES_ITEMS or kind.endswith("_output") or kind.startswith(("input_", "output_")):
        return "responses"
    if kind in _INTERACTIONS_ITEMS or kind.endswith("_result"):
        return "interactions"
    return "either"


def input_side(items: Any) -> Side:
    """Whose ``input`` this is: a string is ``either``; a list is judged item by item."""
    if isinstance(items, str):
        return "either"
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        return "neither"
    return _joined([_item_side(i) for i in items])
