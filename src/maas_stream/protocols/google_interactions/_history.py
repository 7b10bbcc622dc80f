"""Google Interactions history codec and validation: request body ↔ canonical messages.

``input`` may be a string, one Content, a list of Content, a list of steps (the stateless
history form) or, in the legacy schema, a list of turns ``{role, content}``. Steps map one to
one onto canonical messages (see ``_steps``); ``system_instruction`` becomes a leading system
message. Going back, every model-generated step is rebuilt exactly: thought steps keep their
``signature`` and ``summary`` byte for byte, function calls their id, name, arguments and any
signature they carried (spec: "never drop thought or signature fields").

Every message it reads has ``provider`` set to this protocol, so its signatures and kept steps
are replayed (see ``protocols/_replay.py``); a message of another origin loses them, reported in
the :class:`~maas_stream.DropLog`. ``previous_interaction_id`` (stateful use) rides on the first
input message's ``provider_raw`` and is written back by :func:`from_canonical`. It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..._exceptions import ValidationError
from ..._model import Message, Part, ReasoningPart, Role, TextPart, ToolCallPart, ToolResultPart
from .._names import GOOGLE_INTERACTIONS as PROTOCOL
from ._content import CONTENT_TYPES, part_from_content
from ._steps import PREVIOUS_INTERACTION as _PREV
from ._steps import is_step, message_from_step, steps_from_message

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = ["from_canonical", "to_canonical", "validate"]


def _input_of(body: Any) -> tuple[Any, dict[str, Any]]:
    if isinstance(body, dict):
        if "input" not in body:
            raise ValidationError(PROTOCOL, ["the body has no 'input'"])
        return body["input"], body
    if isinstance(body, list | str):
        return body, {}
    raise ValidationError(PROTOCOL, ["expected a request body object, an input list or a string"])


def to_canonical(body: Any) -> list[Message]:
    """Convert an Interactions request body (or its ``input``) to canonical messages.

    Raises:
        ValidationError: The body is not an Interactions request shape, a step field has the
            wrong JSON type, or a value cannot be read: nested past the interpreter's limit, or
            a string with a lone surrogate (not valid Unicode).
    """
    return _to_canonical(body)


def _to_canonical(body: Any) -> list[Message]:
    data, envelope = _input_of(body)
    out: list[Message] = []
    system = envelope.get("system_instruction")
    if isinstance(system, str):
        out.append(Message(role="system", content=[TextPart(text=system)], provider=PROTOCOL))
    messages = [msgspec.structs.replace(m, provider=PROTOCOL) for m in _input_messages(data)]
    prev = envelope.get(_PREV)
    if isinstance(prev, str) and messages:
        first = messages[0]
        raw = dict(first.provider_raw) if isinstance(first.provider_raw, dict) else {}
        raw[_PREV] = prev
        messages[0] = msgspec.structs.replace(first, provider_raw=raw)
    return out + messages


def _input_messages(data: Any) -> list[Message]:
    if isinstance(data, str):
        return [Message(role="user", content=[TextPart(text=data)])]
    if isinstance(data, dict):
        return [Message(role="user", content=[part_from_content(data)])]
    if not isinstance(data, list):
        raise ValidationError(PROTOCOL, ["'input' must be a string, a Content or a list"])
    if data and all(isinstance(c, dict) and _is_content_type(c.get("type")) for c in data):
        return [Message(role="user", content=[part_from_content(c) for c in data])]
    out: list[Message] = []
    for i, item in enumerate(data):
        try:
            if isinstance(item, dict) and "role" in item and "type" not in item:
                out.append(_turn(item))
            elif is_step(item):
                out.append(message_from_step(item))
            else:
                raise ValidationError(PROTOCOL, [f"input[{i}]: neither a step nor a turn"])
        except msgspec.ValidationError as exc:
            raise ValidationError(PROTOCOL, [f"input[{i}]: {exc}"]) from exc
    return out


def _is_content_type(kind: Any) -> bool:
    return isinstance(kind, str) and kind in CONTENT_TYPES


def _turn(item: dict[str, Any]) -> Message:
    role: Role = "assistant" if item.get("role") == "model" else "user"
    content = item.get("content")
    if isinstance(content, str):
        return Message(role=role, content=[TextPart(text=content)])
    parts: list[Part] = []
    if isinstance(content, list):
        for c in content:
            if is_step(c) and c.get("type") not in ("text",):
                parts.extend(p for p in message_from_step(c).content if not isinstance(p, str))
            else:
                parts.append(part_from_content(c))
    return Message(role=role, content=parts)


def from_canonical(
    messages: list[Message],
    *,
    drops: DropLog | None = None,
    source: str | None = None,
    previous_interaction_id: str | None = None,
) -> dict[str, Any]:
    """Convert canonical messages to an Interactions request body (``input`` as steps).

    Signatures and kept steps go back only for messages this protocol made (their
    ``provider``, else ``source``, else the log's source); others lose them, reported.

    Args:
        messages: The conversation.
        drops: If given, records everything Interactions cannot carry (dropped).
        source: The protocol the messages came from, for messages without a ``provider``
            (defaults to ``drops.source``).
        previous_interaction_id: Continue a stored interaction (stateful use); defaults to the
            one kept from :func:`to_canonical`.
    """
    if source is None and drops is not None:
        source = drops.source
    steps: list[dict[str, Any]] = []
    system: list[str] = []
    prev = previous_interaction_id
    for i, message in enumerate(messages):
        if prev is None and isinstance(message.provider_raw, dict):
            found = message.provider_raw.get(_PREV)
            prev = found if isinstance(found, str) else None
        if message.role in ("system", "developer"):
            content = message.content
            texts = (
                [content]
                if isinstance(content, str)
                else [p.text for p in content if isinstance(p, TextPart)]
            )
            system.extend(texts)
            continue
        origin = message.provider or source
        steps.extend(steps_from_message(message, origin=origin, drops=drops, where=f"messages[{i}]"))
    body: dict[str, Any] = {}
    if prev is not None:
        body[_PREV] = prev
    if system:
        body["system_instruction"] = "\n\n".join(system)
    body["input"] = steps
    return body


def validate(body: Any) -> list[str]:
    """Check an Interactions request body; return every fault (empty when valid).

    Checks: the input shape; every function result answers a function call made earlier in the
    history (unless the body continues a stored interaction); call ids are unique and present;
    ``store: false`` is not combined with ``previous_interaction_id`` or ``background``; thought
    steps carry a string signature when they carry one at all.
    """
    try:
        messages = to_canonical(body)
    except ValidationError as exc:
        return list(exc.faults)
    faults: list[str] = []
    envelope = body if isinstance(body, dict) else {}
    stateful = isinstance(envelope.get(_PREV), str)
    if envelope.get("store") is False and (stateful or envelope.get("background")):
        faults.append("store: false cannot be combined with previous_interaction_id or background")
    calls: set[str] = set()
    for i, message in enumerate(messages):
        if isinstance(message.content, str):
            continue
        for part in message.content:
            if isinstance(part, ToolCallPart) and part.kind == "function":
                if not part.id:
                    faults.append(f"messages[{i}]: function_call {part.name!r} has no id")
                elif part.id in calls:
                    faults.append(f"messages[{i}]: function_call id {part.id} is used twice")
                calls.add(part.id)
            elif isinstance(part, ToolResultPart):
                if not stateful and part.tool_call_id not in calls:
                    faults.append(
                        f"messages[{i}]: function_result call_id {part.tool_call_id} answers no earlier function_call"
                    )
            elif isinstance(part, ReasoningPart) and part.signature is not None and not part.signature:
                faults.append(f"messages[{i}]: thought step has an empty signature")
    return faults
