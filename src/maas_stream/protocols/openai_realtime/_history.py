"""OpenAI Realtime history codec: conversation items ↔ canonical messages, and validation.

A "body" is ``{"items": [ConversationItem]}``, a list of items, or a list of client events
(``conversation.item.create`` events are read, others skipped). Items: ``message`` (role
``system`` / ``user`` / ``assistant``; ``input_text`` / ``text`` / ``output_text`` → text,
``input_audio`` / ``output_audio`` → audio), ``function_call`` → an assistant tool call,
``function_call_output`` → a tool message with one result. :func:`from_canonical` returns
``{"items": [...]}`` ready to send one by one as ``conversation.item.create``.
"""

from __future__ import annotations

from typing import Any

from ..._exceptions import ValidationError
from ..._model import AudioPart, Message, Part, Role, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from ._decode import part_from_content

__all__ = ["from_canonical", "to_canonical", "validate"]

from .._names import OPENAI_REALTIME as PROTOCOL


def _items_of(body: Any) -> list[Any]:
    items = body.get("items") if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise ValidationError(
            PROTOCOL, ["expected {'items': [...]}, a list of items or a list of client events"]
        )
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "conversation.item.create":
            out.append(item.get("item"))
        elif isinstance(item, dict) and "item" not in item:
            out.append(item)
    return out


def to_canonical(body: Any) -> list[Message]:
    """Convert Realtime conversation items (or client events) to canonical messages.

    Raises:
        ValidationError: The body has no item list.
    """
    out: list[Message] = []
    for item in _items_of(body):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            role: Role = item["role"] if item.get("role") in ("system", "user", "assistant") else "user"
            parts: list[Part] = []
            for c in item.get("content") or []:
                part = part_from_content(c)
                parts.append(part if part is not None else UnknownPart(provider_type="content", raw=c))
            out.append(Message(role=role, content=parts, id=item.get("id")))
        elif kind == "function_call":
            call = ToolCallPart(
                id=str(item.get("call_id") or ""),
                name=str(item.get("name") or ""),
                arguments=str(item.get("arguments") or ""),
                item_id=item.get("id"),
            )
            out.append(Message(role="assistant", type=kind, content=[call]))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id") or "")
            output = item.get("output")
            result = ToolResultPart(
                tool_call_id=call_id, content=output if isinstance(output, str) else str(output)
            )
            out.append(Message(role="tool", type=kind, content=[result], tool_call_id=call_id))
        else:
            out.append(
                Message(role="user", type=str(kind), content=[UnknownPart(provider_type=str(kind), raw=item)])
            )
    return out


def from_canonical(messages: list[Message], *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Convert canonical messages to Realtime conversation items."""
    items: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.role if message.role in ("system", "user", "assistant") else "user"
        if message.role == "developer":
            role = "system"
        content_in: list[Part] = (
            [TextPart(text=message.content)] if isinstance(message.content, str) else list(message.content)
        )
        content: list[dict[str, Any]] = []
        for part in content_in:
            if isinstance(part, TextPart):
                content.append(
                    {"type": "output_text" if role == "assistant" else "input_text", "text": part.text}
                )
            elif isinstance(part, AudioPart):
                wire: dict[str, Any] = {"type": "output_audio" if role == "assistant" else "input_audio"}
                if part.data is not None:
                    wire["audio"] = part.data
                if part.transcript is not None:
                    wire["transcript"] = part.transcript
                content.append(wire)
            elif isinstance(part, ToolCallPart) and part.kind in ("function", "custom"):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": part.id,
                        "name": part.name,
                        "arguments": part.arguments,
                    }
                )
            elif isinstance(part, ToolResultPart):
                out = part.content
                text = (
                    out if isinstance(out, str) else "".join(p.text for p in out if isinstance(p, TextPart))
                )
                items.append({"type": "function_call_output", "call_id": part.tool_call_id, "output": text})
            elif lossy is not None:
                lossy.append(
                    f"messages[{i}]: a {part.__struct_config__.tag} part has no Realtime item form; dropped"
                )
        if content:
            items.append({"type": "message", "role": role, "content": content})
    return {"items": items}


def validate(body: Any) -> list[str]:
    """Check Realtime conversation items; return every fault (empty when valid).

    Checks that every ``function_call_output`` answers an earlier ``function_call`` and that
    call ids are present.
    """
    try:
        messages = to_canonical(body)
    except ValidationError as exc:
        return list(exc.faults)
    faults: list[str] = []
    calls: set[str] = set()
    for i, message in enumerate(messages):
        for part in message.content if isinstance(message.content, list) else []:
            if isinstance(part, ToolCallPart):
                if not part.id:
                    faults.append(f"messages[{i}]: function_call {part.name!r} has no call_id")
                calls.add(part.id)
            elif isinstance(part, ToolResultPart) and part.tool_call_id not in calls:
                faults.append(
                    f"messages[{i}]: function_call_output {part.tool_call_id} answers no earlier function_call"
                )
    return faults
