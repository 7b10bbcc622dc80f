"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

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


_OWN_FIELDS: Final = frozenset(
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
"""Top-level fields only an Interactions body has (Responses says ``instructions``,
``max_output_tokens``, ``previous_response_id`` at the top level instead)."""

_FOREIGN_FIELDS: Final = frozenset(
    {
        "instructions",
        "previous_response_id",
        "max_output_tokens",
        "text",
        "reasoning",
        "include",
        "truncation",
        "conversation",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
    }
)
"""Top-level fields an Interactions body never has (they are OpenAI Responses'; Interactions puts
its sampling and tool choice in ``generation_config``): a body with one is not Interactions."""

_OWN_STEPS: Final = frozenset(
    {"user_input", "model_output", "thought", "function_result", "function_response"}
)
_OWN_CALLS: Final = frozenset(
    {
        "code_execution_call",
        "google_search_call",
        "google_maps_call",
        "url_context_call",
        "mcp_server_tool_call",
        "retrieval_call",
        "processing_call",
    }
)
_CONTENT_TYPES: Final = frozenset({"text", "image", "audio", "document", "video"})
_FOREIGN_ITEMS: Final = frozenset(
    {
        "message",
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
"""Responses input items and content parts no Interactions step or Content is (with every
``*_output`` item and ``input_*`` / ``output_*`` part)."""


def _verdict(verdicts: list[bool | None]) -> bool | None:
    if False in verdicts:
        return False
    return True if True in verdicts else None


def _item_is_own(item: Any) -> bool | None:
    """``True``: only Interactions has it; ``False``: Interactions has no such item; ``None``: either."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind is None and "role" in item:  # a turn {role, content}
        role = item.get("role")
        if role not in ("user", "model"):
            return False  # system, developer, assistant: Responses roles
        content = item.get("content")
        inner = _verdict([_item_is_own(c) for c in content]) if isinstance(content, list) else None
        return False if inner is False else (inner or role == "model" or None)
    if not isinstance(kind, str):
        return False
    if kind == "function_call":
        # Interactions: ``id`` + ``arguments`` as an object; Responses: ``call_id`` + a string.
        return "call_id" not in item and isinstance(item.get("arguments"), dict)
    if kind in _OWN_STEPS or kind in _OWN_CALLS or kind in _CONTENT_TYPES or kind.endswith("_result"):
        return True
    if kind in _FOREIGN_ITEMS or kind.endswith("_output") or kind.startswith(("input_", "output_")):
        return False
    return None


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
    if any(name in body for name in _FOREIGN_FIELDS):
        return 0
    items = body.get("input")
    if isinstance(items, dict):
        items = [items]
    verdict = _verdict([_item_is_own(i) for i in items]) if isinstance(items, list) else None
    if verdict is False:
        return 0
    return 2 if verdict or any(name in body for name in _OWN_FIELDS) else 0
