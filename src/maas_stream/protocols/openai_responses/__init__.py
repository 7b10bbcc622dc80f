"""OpenAI Responses API (``POST /v1/responses`` with ``stream: true``, and resumed streams).

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

NAME = "openai-responses"


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
