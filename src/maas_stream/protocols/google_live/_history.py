"""Google Live history codec and validation.

Client messages (``setup``, ``clientContent`` turns, ``toolResponse``) ↔ canonical messages.

A "body" is one client message or a list of them (a session's client side). ``clientContent``
turns are Gemini ``Content`` objects: ``user`` → user, ``model`` → assistant; parts map as in
generateContent (``text``, ``thought`` text → reasoning with its ``thoughtSignature``,
``inlineData`` → image or audio, ``functionCall`` → tool call, ``functionResponse`` → tool
result, ``executableCode`` / ``codeExecutionResult`` → code). ``setup.systemInstruction``
becomes a system message; every message read is marked ``provider="google-live"``.
:func:`from_canonical` returns ``{"setup": {"systemInstruction"}?, "clientContent": {"turns",
"turnComplete": true}}``; thought signatures go back only to Live (``_replay``), and what has no
Live form is dropped and reported in a :class:`~maas_stream.DropLog`.

Calls, results, code and media map through ``_parts``, the same functions the stream decoder and
encoder use. It must not hold state or do IO.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..._drops import DropLog
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
from .._names import GOOGLE_LIVE as PROTOCOL
from .._replay import replayable
from .._session import drop_kind, part_name, tool_parts
from ._events import CLIENT_KEYS
from ._parts import call_part, code_part, function_call, function_response, result_part, whole_parts

__all__ = ["from_canonical", "to_canonical", "validate"]


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
                out.append(Message(role="system", content=_parts(system.get("parts")), provider=PROTOCOL))
        elif name == "clientContent" and isinstance(value, dict):
            turns = value.get("turns")
            out.extend(_content(turn) for turn in (turns if isinstance(turns, list) else []))
        elif name == "toolResponse" and isinstance(value, dict):
            responses = value.get("functionResponses") or value.get("function_responses") or []
            results: list[Part] = [_result(r) for r in responses] if isinstance(responses, list) else []
            out.append(Message(role="tool", content=results, provider=PROTOCOL))
        elif name == "realtimeInput":
            continue
        else:
            raise ValidationError(PROTOCOL, [f"message {i}: {key!r} is not a Live client message"])
    return out


def _content(turn: Any) -> Message:
    if not isinstance(turn, dict):
        return Message(role="user", content=[UnknownPart(provider_type="turn", raw=turn)], provider=PROTOCOL)
    role: Role = "assistant" if turn.get("role") == "model" else "user"
    parts = _parts(turn.get("parts"))
    if role == "user" and parts and all(isinstance(p, ToolResultPart) for p in parts):
        return Message(role="tool", content=parts, provider=PROTOCOL)
    return Message(role=role, content=parts, provider=PROTOCOL)


def _parts(raw: Any) -> list[Part]:
    out: list[Part] = []
    for part in raw if isinstance(raw, list) else []:
        if not isinstance(part, dict):
            continue
        signature = part.get("thoughtSignature")
        sig = signature if isinstance(signature, str) else None
        value: Part | None = None
        if isinstance(part.get("text"), str):
            text = part["text"]
            thought = bool(part.get("thought"))
            value = ReasoningPart(text=text, signature=sig) if thought else TextPart(text=text, signature=sig)
        elif isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            mime, content = data.get("mimeType"), data.get("data")
            if isinstance(mime, str | None) and isinstance(content, str | None):
                is_audio = isinstance(mime, str) and mime.startswith("audio/")
                value = (
                    AudioPart(data=content, format=mime)
                    if is_audio
                    else ImagePart(data=content, media_type=mime)
                )
        elif "functionCall" in part:
            call = call_part(part["functionCall"])
            value = None if call is None else msgspec.structs.replace(call, signature=sig)
        elif "functionResponse" in part:
            value = result_part(part["functionResponse"])
        elif "executableCode" in part or "codeExecutionResult" in part:
            value = code_part(part.get("executableCode"), part.get("codeExecutionResult"))
        out.append(value if value is not None else UnknownPart(provider_type="part", raw=part))
    return out


def _result(raw: Any) -> Part:
    result = result_part(raw)
    return result if result is not None else UnknownPart(provider_type="functionResponse", raw=raw)


def from_canonical(messages: list[Message], *, drops: DropLog | None = None) -> dict[str, Any]:
    """Convert canonical messages to Live client content (and a setup system instruction).

    Args:
        messages: The conversation.
        drops: Receives a record for each kind of thing Live cannot carry (dropped).
    """
    log = drops if drops is not None else DropLog(PROTOCOL)
    turns: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        content = message.content
        parts_in: list[Part] = [TextPart(text=content)] if isinstance(content, str) else list(content)
        replay = replayable(message.provider, PROTOCOL)
        parts: list[dict[str, Any]] = []
        for part in parts_in:
            parts += _wire_parts(part, replay, log, f"messages[{i}]")
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


def _wire_parts(part: Part, replay: bool, drops: DropLog, where: str) -> list[dict[str, Any]]:
    """One canonical part as Live parts (none when it has no Live form: dropped, reported)."""
    out: dict[str, Any] | None = None
    if isinstance(part, TextPart):
        out = {"text": part.text}
    elif isinstance(part, ReasoningPart):
        if part.encrypted_content or part.data or part.redacted:
            drops.add(
                "encrypted_reasoning",
                "encrypted or redacted reasoning (no Live form)",
                where=where,
            )
        text = part.text or "\n".join(part.summary or [])
        if text:
            out = {"text": text, "thought": True}
    elif isinstance(part, ToolCallPart) and part.kind in ("function", "custom"):
        call = function_call(part, part.arguments, drops, where)
        if call is None:
            return []  # reported
        out = {"functionCall": call}
    elif isinstance(part, ToolResultPart):
        return [{"functionResponse": function_response(part)}]
    elif (whole := whole_parts(part)) is not None:
        return whole
    if out is None:
        if not isinstance(part, ReasoningPart):
            drops.add(drop_kind(part), f"{part_name(part)} (no Live client-content form)", where=where)
        return []
    signature = getattr(part, "signature", None)
    if isinstance(signature, str):
        if replay:
            out["thoughtSignature"] = signature
        else:
            drops.add(
                "signature",
                f"thought signatures of another protocol (not replayable to {PROTOCOL})",
                where=where,
            )
    return [out]


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
    calls = False  # a history holding no call may answer calls made before it
    for i, part, answered in tool_parts(messages):
        calls = calls or isinstance(part, ToolCallPart)
        if isinstance(part, ToolResultPart) and calls and not answered:
            faults.append(
                f"messages[{i}]: functionResponse id {part.tool_call_id} answers no earlier functionCall"
            )
    return faults
