"""Detection: does a first frame, or a request body, belong to this protocol?

It must not do IO.
"""

from __future__ import annotations

from typing import Any

__all__ = ["detect", "detect_body"]

_FIRST: frozenset[str] = frozenset({"message_start", "content_block_start", "content_block_delta", "ping"})


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like an Anthropic stream."""
    if not isinstance(payload, dict):
        return False
    kind = payload.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "message_start":
        return isinstance(payload.get("message"), dict)
    return kind in _FIRST and event == kind


_ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "document",
        "server_tool_use",
        "search_result",
    }
)


_ANTHROPIC_FIELDS = frozenset({"system", "stop_sequences", "thinking", "top_k", "anthropic_version"})
"""Top-level request fields only Messages has (Chat has none of them)."""


def detect_body(body: Any) -> int:
    """How sure is it that a request body is an Anthropic Messages one (0 no, 2 surely).

    Anthropic-only shapes: a top-level field only Messages has (``system``, ``stop_sequences``,
    ``thinking``, ``top_k``), a tool declared with ``input_schema``, or content blocks only Anthropic has
    (``tool_use``, ``tool_result``, ``thinking``, an image ``source``). A body of plain user
    text is valid Chat and Anthropic alike and is left to Chat.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return 0
    if any(key in body for key in _ANTHROPIC_FIELDS):
        return 2
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return 2
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and (block.get("type") in _ANTHROPIC_BLOCKS or "source" in block):
                    return 2
    return 0
