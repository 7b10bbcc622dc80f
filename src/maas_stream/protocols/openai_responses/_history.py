"""OpenAI Responses history codec and validation: request ``input`` + ``instructions`` ↔ canonical.

Mapping (PROTOCOLS.md §2.7, the spec's "Serialization Rules"):

* ``instructions`` → a leading ``system`` message of type ``instructions`` (and back).
* ``input`` as a string → one user message. Message items (easy or typed) keep their role
  (``developer`` / ``system`` / ``user`` / ``assistant``), their ``phase``, id and status; parts
  ``input_text`` / ``output_text`` → text, ``refusal`` → refusal, ``input_image`` → image,
  ``input_file`` → file.
* ``function_call`` / ``custom_tool_call`` / hosted-tool items / ``reasoning`` → the same
  canonical messages the stream decoder produces (``_items``); reasoning is replayed with its
  ``encrypted_content`` unchanged.
* ``function_call_output`` (and the other ``*_output`` items) → a ``tool`` message with
  ``tool_call_id`` and one tool result, as ``openai_chat`` produces.
* ``item_reference`` → a message of type ``item_reference`` holding only the id.
* Back to Responses: an assistant message of another protocol with text and tool calls becomes a
  ``message`` item and one ``function_call`` item per call, in order; tool results become
  ``function_call_output`` (``custom_tool_call_output`` when the call was custom, the call's own
  ``*_output`` item when it was a built-in client call: ``shell_call``, ``apply_patch_call``, ...,
  known from its message's ``type``; see ``_items_write.result_item``). Reasoning is
  replayed only where :func:`~maas_stream.protocols._replay.replayable` allows it (messages this
  codec or the Responses decoder produced, ``Message.provider``); reasoning of other protocols
  (thinking text, signatures) is dropped and recorded, as is anything else Responses cannot carry.

Items are read with ``_items`` and written with ``_items_write``, the mapping the stream and body codecs use. Every
message read here has ``provider="openai-responses"``.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._drops import DropLog
from ..._exceptions import ValidationError
from ..._model import Message, Part, ReasoningPart, ToolCallPart, ToolResultPart
from .._names import OPENAI_RESPONSES as PROTOCOL
from .._replay import replayable
from ._items import CALL_TYPES, CLIENT_CALLS, OUTPUT_TYPES, item_message
from ._items_write import call_item, drop_part, input_content_json, reasoning_item, result_item

__all__ = ["from_canonical", "to_canonical", "validate"]

_ROLES: Final = ("user", "assistant", "system", "developer")


def _input_of(body: Any) -> tuple[Any, Any]:
    if isinstance(body, dict):
        if "input" not in body and "instructions" not in body:
            raise ValidationError(PROTOCOL, ["the body has neither 'input' nor 'instructions'"])
        return body.get("input"), body.get("instructions")
    if isinstance(body, list | str):
        return body, None
    raise ValidationError(PROTOCOL, ["expected a request body object, an input list or a string"])


def to_canonical(body: Any) -> list[Message]:
    """Read a Responses request's ``instructions`` and ``input`` items as canonical messages.

    Args:
        body: The request body, or its ``input`` (a list of items or a string).

    Raises:
        ValidationError: The body is not a Responses request shape at all.
    """
    items, instructions = _input_of(body)
    out: list[Message] = []
    if isinstance(instructions, str):
        out.append(Message(role="system", content=instructions, type="instructions", provider=PROTOCOL))
    elif isinstance(instructions, list):
        out.extend(_item(i, raw) for i, raw in enumerate(instructions))
    if isinstance(items, str):
        out.append(Message(role="user", content=items, provider=PROTOCOL))
    elif isinstance(items, list):
        out.extend(_item(i, raw) for i, raw in enumerate(items))
    elif items is not None:
        raise ValidationError(PROTOCOL, ["'input' must be a string or a list of items"])
    return out


def _item(i: int, raw: Any) -> Message:
    if not isinstance(raw, dict):
        raise ValidationError(PROTOCOL, [f"input[{i}]: not an item object"])
    kind = raw.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ValidationError(PROTOCOL, [f"input[{i}]: the item type must be a string"])
    if kind == "item_reference":
        return Message(
            role="assistant", type="item_reference", id=str(raw.get("id") or ""), provider=PROTOCOL
        )
    if kind in (None, "message"):
        role = raw.get("role")
        if role not in _ROLES:
            raise ValidationError(PROTOCOL, [f"input[{i}]: message with unknown role {role!r}"])
        content = raw.get("content")
        phase = raw.get("phase")
        msg = item_message({**raw, "type": "message"})
        parts: list[Part] | str = content if isinstance(content, str) else msg.content
        extras = msg.provider_raw if isinstance(msg.provider_raw, dict) else None
        return Message(
            role=role,
            content=parts,
            id=msg.id,
            type="message" if kind == "message" else None,
            status=msg.status,
            phase=phase if phase in ("commentary", "final_answer") else None,
            provider=PROTOCOL,
            provider_raw=extras,
        )
    message = item_message(raw)
    if kind in OUTPUT_TYPES and message.tool_call_id is None:
        return _with_call_id(message)
    return message


def _with_call_id(message: Message) -> Message:
    first = message.content[0] if isinstance(message.content, list) and message.content else None
    if isinstance(first, ToolResultPart):
        return msgspec.structs.replace(message, tool_call_id=first.tool_call_id)
    return message


# ---------------------------------------------------------------------- canonical → Responses


def from_canonical(messages: list[Message], *, drops: DropLog | None = None) -> dict[str, Any]:
    """Convert canonical messages to a Responses request body ``{"input": [...]}``.

    A leading ``system`` / ``developer`` message of type ``instructions`` becomes
    ``instructions``.

    Args:
        messages: The conversation.
        drops: If given, receives a record for everything Responses cannot carry (reasoning of
            other protocols, server tool calls of other protocols, unknown parts), which is
            dropped, never turned into text.
    """
    log = drops if drops is not None else DropLog(PROTOCOL)
    body: dict[str, Any] = {}
    calls: dict[str, str] = {}  # call id → the item type of the call
    items: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        if i == 0 and msg.type == "instructions" and isinstance(msg.content, str):
            body["instructions"] = msg.content
            continue
        _note_calls(msg, calls)
        items.extend(_to_items(i, msg, log, calls))
    body["input"] = items
    return body


def _note_calls(msg: Message, calls: dict[str, str]) -> None:
    """Remember the item type of each call a message makes (its result's item follows it)."""
    if not isinstance(msg.content, list):
        return
    for part in msg.content:
        if isinstance(part, ToolCallPart):
            if part.kind == "custom":
                calls[part.id] = "custom_tool_call"
            elif part.kind == "function" and msg.type in CLIENT_CALLS:
                calls[part.id] = msg.type


def _to_items(i: int, msg: Message, drops: DropLog, calls: dict[str, str]) -> list[dict[str, Any]]:
    if msg.type == "item_reference":
        return [{"type": "item_reference", "id": msg.id}]
    raw = msg.provider_raw if isinstance(msg.provider_raw, dict) else None
    if raw is not None and msg.type is not None and msg.type != "message" and msg.type == raw.get("type"):
        return [raw]  # a Responses item kept whole (hosted tools, unknown types)
    role = "assistant" if msg.role == "model" else msg.role
    content = msg.content
    if isinstance(content, str):
        if role == "tool":
            result = ToolResultPart(tool_call_id=msg.tool_call_id or "", content=content)
            return [result_item(calls.get(result.tool_call_id, "function_call"), result, content, drops)]
        if role not in _ROLES:
            drops.add("message", f"{role} message (no Responses input role for it)", where=f"messages[{i}]")
            return []
        return [{"role": role, "content": content}]
    out: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, ToolResultPart | ToolCallPart | ReasoningPart):
            if texts:
                out.append(_message_item(msg, role, texts))
                texts = []
            converted_item = _non_text_item(i, msg, part, raw, drops, calls)
            if converted_item is not None:
                out.append(converted_item)
        else:
            converted = input_content_json(
                part, assistant=role == "assistant", drops=drops, where=f"messages[{i}]"
            )
            if converted is not None:
                texts.append(converted)
    if texts:
        out.append(_message_item(msg, role, texts))
    return out


def _non_text_item(
    i: int, msg: Message, part: Part, raw: dict[str, Any] | None, drops: DropLog, calls: dict[str, str]
) -> dict[str, Any] | None:
    if isinstance(part, ToolResultPart):
        return _result_item(i, part, drops, calls)
    if isinstance(part, ToolCallPart):
        if part.kind in ("server", "mcp"):
            drop_part(drops, part, where=f"messages[{i}]", place="input")
            return None
        return call_item(part, "completed" if msg.type else None, raw)
    assert isinstance(part, ReasoningPart)
    if not replayable(msg.provider, PROTOCOL):
        drop_part(drops, part, where=f"messages[{i}]", place="input")
        return None
    return reasoning_item(part, None, raw)


def _message_item(msg: Message, role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    if role not in _ROLES:
        role = "user"
    item: dict[str, Any] = {"role": role, "content": parts}
    if role == "assistant" or msg.type == "message":
        item["type"] = "message"
    if role == "assistant":
        if msg.id is not None:
            item["id"] = msg.id
            item["status"] = msg.status or "completed"
        if msg.phase is not None:
            item["phase"] = msg.phase
    return item


def _result_item(i: int, part: ToolResultPart, drops: DropLog, calls: dict[str, str]) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    if isinstance(part.content, str):
        output = part.content
    else:
        converted = [
            input_content_json(p, assistant=False, drops=drops, where=f"messages[{i}]") for p in part.content
        ]
        output = [c for c in converted if c is not None]
    return result_item(calls.get(part.tool_call_id, "function_call"), part, output, drops)


# ---------------------------------------------------------------------- validation

_PARTS_BY_ROLE: Final = {
    "system": {"input_text"},
    "developer": {"input_text"},
    "user": {"input_text", "input_image", "input_file", "input_audio"},
    "assistant": {"output_text", "refusal", "input_text"},
}
_CALL_OUTPUTS: Final = {
    "function_call_output": "function_call",
    "custom_tool_call_output": "custom_tool_call",
    "program_output": "program",
    **{output: call for call, output in CLIENT_CALLS.items()},
}


def validate(body: Any) -> list[str]:
    """Check a Responses request body against the protocol's rules; return every fault found.

    Rules: every item is an object of a known shape; message roles are valid and their content
    part types allowed for the role; item ids are unique; call ids are unique; every
    ``function_call_output`` (and the other call outputs) answers an earlier call of the
    matching type by ``call_id``, once. Faults name the item index and the id.
    """
    try:
        items, _ = _input_of(body)
    except ValidationError as exc:
        return exc.faults
    if isinstance(items, str) or items is None:
        return []
    if not isinstance(items, list):
        return ["'input' must be a string or a list of items"]
    faults: list[str] = []
    ids: set[str] = set()
    calls: dict[str, str] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            faults.append(f"input[{i}]: not an item object")
            continue
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            faults.append(f"input[{i}]: the item type must be a string")
            continue
        item_id = item.get("id")
        if isinstance(item_id, str) and kind != "item_reference":
            if item_id in ids:
                faults.append(f"input[{i}]: item id {item_id!r} is used twice")
            ids.add(item_id)
        if kind in (None, "message"):
            _check_message(i, item, faults)
        elif isinstance(kind, str) and kind in CALL_TYPES and item.get("call_id", ...) is not None:
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                faults.append(f"input[{i}]: {kind} without a call_id")
            elif call_id in calls:
                faults.append(f"input[{i}]: call_id {call_id!r} is used twice")
            else:
                calls[call_id] = kind
        elif isinstance(kind, str) and kind in _CALL_OUTPUTS and item.get("execution") != "server":
            _check_output(i, kind, item, calls, answered, faults)
    return faults


def _check_message(i: int, item: dict[str, Any], faults: list[str]) -> None:
    role = item.get("role")
    if role not in _ROLES:
        faults.append(f"input[{i}]: message with unknown role {role!r}")
        return
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        faults.append(f"input[{i}]: message content must be a string or a list of parts")
        return
    allowed = _PARTS_BY_ROLE[role]
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or kind not in allowed:
            faults.append(f"input[{i}].content[{j}]: part type {kind!r} is not allowed in a {role} message")


def _check_output(
    i: int, kind: str, item: dict[str, Any], calls: dict[str, str], answered: set[str], faults: list[str]
) -> None:
    # A local shell call's output names the call by its ``id``.
    call_id = item.get("id" if kind == "local_shell_call_output" else "call_id")
    if not isinstance(call_id, str) or not call_id:
        faults.append(f"input[{i}]: {kind} without a call_id")
        return
    made = calls.get(call_id)
    if made is None:
        faults.append(f"input[{i}]: {kind} call_id {call_id!r} answers no earlier call")
    elif made != _CALL_OUTPUTS[kind]:
        faults.append(f"input[{i}]: {kind} call_id {call_id!r} answers a {made} item")
    elif call_id in answered:
        faults.append(f"input[{i}]: call_id {call_id!r} is answered twice")
    answered.add(call_id)
