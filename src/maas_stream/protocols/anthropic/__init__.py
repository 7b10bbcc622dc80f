"""Anthropic Messages (``POST /v1/messages`` with ``stream: true``).

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the history codec
(:func:`to_canonical`, :func:`from_canonical`) and :func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

from typing import Any

from ._body import encode_response as encode_response
from ._decode import StreamDecoder as StreamDecoder
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

__all__ = (
    "StreamDecoder",
    "StreamEncoder",
    "detect",
    "detect_body",
    "encode_response",
    "from_canonical",
    "to_canonical",
    "validate",
)

NAME = "anthropic"

_FIRST: frozenset[str] = frozenset({"message_start", "content_block_start", "content_block_delta", "ping"})


def detect(event: str, payload: Any) -> bool:
    """Whether a first SSE frame (its event name and parsed JSON) looks like an Anthropic stream."""
    if not isinstance(payload, dict):
        return False
    kind = payload.get("type")
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


def detect_body(body: Any) -> int:
    """How sure is it that a request body is an Anthropic Messages one (0 no, 2 surely).

    Anthropic-only shapes: a top-level ``system``, or content blocks only Anthropic has
    (``tool_use``, ``tool_result``, ``thinking``, an image ``source``). A body of plain user
    text is valid Chat and Anthropic alike and is left to Chat.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return 0
    if "system" in body:
        return 2
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and (block.get("type") in _ANTHROPIC_BLOCKS or "source" in block):
                    return 2
    return 0
