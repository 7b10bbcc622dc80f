"""OpenAI Realtime history codec: conversation items ↔ canonical messages, and validation.

A "body" is ``{"items": [ConversationItem]}``, a list of items, or a list of client events
(``conversation.item.create`` events are read, others skipped). Items: ``message`` (role
``system`` / ``user`` / ``assistant``; ``input_text`` / ``text`` / ``output_text`` → text,
``input_audio`` / ``output_audio`` → audio), ``function_call`` → an assistant tool call,
``function_call_output`` → a tool message with one result. :func:`from_canonical` returns
``{"items": [...]}`` ready to send one by one as ``conversation.item.create``; what has no item
form is dropped and reported in a :class:`~maas_stream.DropLog`. Every message read is marked
``provider="openai-realtime"``.

Content parts and items map through ``_items``, the same functions the stream decoder and
encoder use. It must not hold state or do IO.
"""

from __future__ import annotations

from typing import Any

from ..._drops import DropLog
from ..._exceptions import ValidationError
from ..._model import AudioPart, Message, Part, Role, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from .._session import drop_kind, part_name, tool_parts
from ._items import call_from_item, call_item, content_wire, output_item, part_from_content, result_from_item

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
        ValidationError: The body has no item list, or a value cannot be read: nested past the
            interpreter's limit, or a string with a lone surrogate (not valid Unicode).
    """
    return _to_canonical(body)


def _to_canonical(body: Any) -> list[Message]:
    out: list[Message] = []
    for item in _items_of(body):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            role: Role = item["role"] if item.get("role") in ("system", "user", "assistant") else "user"
            parts: list[Part] = []
            content = item.get("content")
            for c in content if isinstance(content, list) else []:
                part = part_from_content(c)
                parts.append(part if part is not None else UnknownPart(provider_type="content", raw=c))
            out.append(Message(role=role, content=parts, id=_str(item.get("id")), provider=PROTOCOL))
        elif kind == "function_call" and (call := call_from_item(item)) is not None:
            out.append(Message(role="assistant", type=kind, content=[call], provider=PROTOCOL))
        elif kind == "function_call_output" and (result := result_from_item(item)) is not None:
            call_id = result.tool_call_id
            out.append(
                Message(role="tool", type=kind, content=[result], tool_call_id=call_id, provider=PROTOCOL)
            )
        else:
            name = _type_name(kind)
            unknown = UnknownPart(provider_type=name, raw=item)
            out.append(Message(role="user", type=name, content=[unknown], provider=PROTOCOL))
    return out


def _type_name(kind: Any) -> str:
    """An item's ``type`` as text: a scalar as written, a list or an object by its JSON kind.

    Never ``str()`` of a list or an object: its text could be any size or depth.
    """
    if isinstance(kind, dict | list):
        return "object" if isinstance(kind, dict) else "array"
    return str(kind)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def from_canonical(messages: list[Message], *, drops: DropLog | None = None) -> dict[str, Any]:
    """Convert canonical messages to Realtime conversation items.

    Args:
        messages: The conversation.
        drops: Receives a record for each kind of thing Realtime items cannot carry (dropped).
    """
    log = drops if drops is not None else DropLog(PROTOCOL)
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
            if isinstance(part, TextPart | AudioPart):
                content.append(content_wire(part, role))
            elif isinstance(part, ToolCallPart) and part.kind in ("function", "custom"):
                items.append(call_item(part, part.arguments))
            elif isinstance(part, ToolResultPart):
                items.append(output_item(part))
            else:
                log.add(drop_kind(part), f"{part_name(part)} (no Realtime item form)", where=f"messages[{i}]")
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
    for i, part, answered in tool_parts(messages):
        if isinstance(part, ToolCallPart) and not part.id:
            faults.append(f"messages[{i}]: function_call {part.name!r} has no call_id")
        elif isinstance(part, ToolResultPart) and not answered:
            faults.append(
                f"messages[{i}]: function_call_output {part.tool_call_id} answers no earlier function_call"
            )
    return faults
