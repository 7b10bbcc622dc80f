"""Google Live history codec and validation.

Client messages (``setup``, ``clientContent`` turns, ``toolResponse``) ↔ canonical messages.

A "body" is one client message or a list of them (a session's client side). ``clientContent``
turns are Gemini ``Content`` objects: ``user`` → user, ``model`` → assistant; parts map as in
generateContent (``text``, ``thought`` text → reasoning with its ``thoughtSignature``,
``inlineData`` → image or audio, ``functionCall`` → tool call, ``functionResponse`` → tool
result). ``setup.systemInstruction`` becomes a system message. :func:`from_canonical` returns
``{"setup": {"systemInstruction"}?, "clientContent": {"turns", "turnComplete": true}}``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..._exceptions import ValidationError
from ..._model import (
    AudioPart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)
from ._decode import CLIENT_KEYS

__all__ = ["from_canonical", "to_canonical", "validate"]

from .._names import GOOGLE_LIVE as PROTOCOL

_json = msgspec.json.Encoder()


def _messages_of(body: Any) -> list[dict[str, Any]]:
    items = body if isinstance(body, list) else [body]
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and "msg" in item and "dir" in item:
            item = item["msg"]
        if not isinstance(item, dict):
            raise ValidationError(PROTOCOL, [f"message {i}: not a JSON object"])
        out.append(item)
    return out


def to_canonical(body: Any) -> list[Message]:
    """Convert Live client messages (one or a list) to canonical messages.

    Raises:
        ValidationError: A message is not a Live client message.
    """
    out: list[Message] = []
    for i, msg in enumerate(_messages_of(body)):
        if "turns" in msg:
            msg = {"clientContent": msg}
        key = next(iter(msg), "")
        name = CLIENT_KEYS.get(key)
        value = msg.get(key)
        if name == "setup" and isinstance(value, dict):
            system = value.get("systemInstruction") or value.get("system_instruction")
            if isinstance(system, dict):
                out.append(Message(role="system", content=_parts(system.get("parts"))))
        elif name == "clientContent" and isinstance(value, dict):
            turns = value.get("turns")
            out.extend(_content(turn) for turn in (turns if isinstance(turns, list) else []))
        elif name == "toolResponse" and isinstance(value, dict):
            responses = value.get("functionResponses") or value.get("function_responses") or []
            out.append(Message(role="tool", content=[_result(r) for r in responses if isinstance(r, dict)]))
        elif name == "realtimeInput":
            continue
        else:
            raise ValidationError(PROTOCOL, [f"message {i}: {key!r} is not a Live client message"])
    return out


def _content(turn: Any) -> Message:
    if not isinstance(turn, dict):
        return Message(role="user", content=[UnknownPart(provider_type="turn", raw=turn)])
    role: Role = "assistant" if turn.get("role") == "model" else "user"
    parts = _parts(turn.get("parts"))
    if role == "user" and parts and all(isinstance(p, ToolResultPart) for p in parts):
        return Message(role="tool", content=parts)
    return Message(role=role, content=parts)


def _parts(raw: Any) -> list[Part]:
    out: list[Part] = []
    for part in raw if isinstance(raw, list) else []:
        if not isinstance(part, dict):
            continue
        signature = part.get("thoughtSignature")
        sig = signature if isinstance(signature, str) else None
        if isinstance(part.get("text"), str):
            if part.get("thought"):
                out.append(ReasoningPart(text=part["text"], signature=sig))
            else:
                out.append(TextPart(text=part["text"], signature=sig))
        elif isinstance(part.get("inlineData"), dict):
            blob = part["inlineData"]
            mime = blob.get("mimeType")
            if isinstance(mime, str) and mime.startswith("audio/"):
                out.append(AudioPart(data=blob.get("data"), format=mime))
            else:
                out.append(ImagePart(data=blob.get("data"), media_type=mime))
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            out.append(
                ToolCallPart(
                    id=str(call.get("id") or ""),
                    name=str(call.get("name") or ""),
                    arguments=_json.encode(call.get("args") or {}).decode(),
                    signature=sig,
                )
            )
        elif isinstance(part.get("functionResponse"), dict):
            out.append(_result(part["functionResponse"]))
        else:
            out.append(UnknownPart(provider_type="part", raw=part))
    return out


def _result(raw: dict[str, Any]) -> ToolResultPart:
    name = raw.get("name")
    return ToolResultPart(
        tool_call_id=str(raw.get("id") or ""),
        content=_json.encode(raw.get("response")).decode(),
        name=name if isinstance(name, str) else None,
    )


def from_canonical(messages: list[Message], *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Convert canonical messages to Live client content (and a setup system instruction)."""
    from ._encode import _function_response

    turns: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        content = message.content
        parts_in: list[Part] = [TextPart(text=content)] if isinstance(content, str) else list(content)
        parts: list[dict[str, Any]] = []
        for part in parts_in:
            wire = _wire_part(part, i, lossy)
            if wire is not None:
                parts.append(wire)
            elif isinstance(part, ToolResultPart):
                parts.append({"functionResponse": _function_response(part)})
        if message.role in ("system", "developer"):
            system.extend(parts)
        elif parts:
            turns.append(
                {"role": "model" if message.role in ("assistant", "model") else "user", "parts": parts}
            )
    body: dict[str, Any] = {}
    if system:
        body["setup"] = {"systemInstruction": {"parts": system}}
    body["clientContent"] = {"turns": turns, "turnComplete": True}
    return body


def _wire_part(part: Part, index: int, lossy: list[str] | None) -> dict[str, Any] | None:
    out: dict[str, Any]
    if isinstance(part, TextPart):
        out = {"text": part.text}
    elif isinstance(part, ReasoningPart):
        out = {"text": part.text or "\n".join(part.summary or []), "thought": True}
    elif isinstance(part, AudioPart) and part.data:
        out = {"inlineData": {"mimeType": part.format or "audio/pcm;rate=24000", "data": part.data}}
    elif isinstance(part, ImagePart) and part.data:
        out = {"inlineData": {"mimeType": part.media_type or "image/png", "data": part.data}}
    elif isinstance(part, ToolCallPart) and part.kind == "function":
        args = msgspec.json.decode(part.arguments) if part.arguments else {}
        out = {"functionCall": {"id": part.id, "name": part.name, "args": args}}
    elif isinstance(part, UnknownPart) and part.provider_type == "part" and isinstance(part.raw, dict):
        return part.raw
    else:
        if not isinstance(part, ToolResultPart) and lossy is not None:
            lossy.append(f"messages[{index}]: a {part.__struct_config__.tag} part has no Live form; dropped")
        return None
    signature = getattr(part, "signature", None)
    if isinstance(signature, str):
        out["thoughtSignature"] = signature
    return out


def validate(body: Any) -> list[str]:
    """Check Live client messages; return every fault (empty when valid).

    Checks that each message is a known client message and that every function response
    answers a function call made earlier in the same history.
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
                calls.add(part.id)
            elif isinstance(part, ToolResultPart) and calls and part.tool_call_id not in calls:
                faults.append(
                    f"messages[{i}]: functionResponse id {part.tool_call_id} answers no earlier functionCall"
                )
    return faults
