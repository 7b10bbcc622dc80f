"""OpenAI Chat Completions history codec and validation: request ``messages`` ↔ canonical.

Mapping (PROTOCOLS.md §1.10, the spec's "OpenAI Chat Completions" and "Serialization Rules"):

* ``system`` / ``developer`` / ``user`` / ``assistant`` / ``tool`` / ``function`` keep their role.
* Content parts: ``text`` → text, ``image_url`` → image, ``input_audio`` → audio, ``file`` →
  file, ``refusal`` → refusal; anything else → an unknown part, kept whole.
* ``assistant.tool_calls[]`` → ``tool_call`` parts after the content; ``assistant.refusal`` →
  a refusal part; legacy ``function_call`` → a tool call without id, marked with
  ``item_id="function_call"`` as the stream decoder marks it. Calls, the legacy call and audio
  are read and written by the same mapping as the response bodies and streams (``_map``,
  ``_message.ChoiceWriter``).
* An assistant message's reasoning, in the OpenAI-compatible fields (DeepSeek-style
  ``reasoning_content``, OpenRouter-style ``reasoning_details`` or ``reasoning``) → reasoning
  parts first, read as a response message's are (``_map.reasoning_from``). Every message read
  is marked ``provider="openai-chat"``, so the replay rule (``protocols/_replay.py``) writes
  that reasoning back to a Chat target, into the field it came from: such servers require it
  back on tool-call turns. Reasoning of any other origin is dropped and reported.
* A ``tool`` message → a ``tool`` message holding one ``tool_result`` part (and its
  ``tool_call_id`` on the message too).
* Back to Chat: every ``tool_result`` part becomes its own ``role=tool`` message, placed before
  the rest of the message it came in (an Anthropic user message with several results and
  trailing text becomes several tool messages and then a user message). Chat tool messages
  carry text only, so the images, audio and files of a tool result MOVE: the tool message
  keeps its text and a note, and the media travel in a user message right after the run of
  tool messages, introduced by a text naming the tool call id. What Chat cannot carry is
  dropped and reported as records (``messages[i]`` in ``where``), never turned into text.

It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec

from ..._drops import DropLog
from ..._exceptions import ValidationError
from ..._model import (
    AudioPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    RefusalPart,
    TextPart,
    ToolResultPart,
    UnknownPart,
)
from .._turns import join_items
from ._map import PROTOCOL, audio_from, call_from, drop_part, legacy_from, reasoning_from
from ._message import ChoiceWriter
from ._wire import AudioDelta, Delta, FunctionDelta, ToolCallDelta

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["from_canonical", "to_canonical", "validate"]

_ROLES: Final = ("system", "developer", "user", "assistant", "tool", "function")
_W = TypeVar("_W", AudioDelta, Delta, FunctionDelta, ToolCallDelta)
_REASONING: Final = ("reasoning_content", "reasoning", "reasoning_details")
_PLAIN: Final = frozenset({"role", "content", "name"})
"""The fields of an assistant message that is text only (most of a long history)."""
"""The OpenAI-compatible reasoning fields of an assistant message."""


def _messages_of(body: Any) -> list[Any]:
    if isinstance(body, dict):
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValidationError(PROTOCOL, ["the body has no 'messages' list"])
        return messages
    if isinstance(body, list):
        return body
    raise ValidationError(PROTOCOL, ["expected a request body object or a list of messages"])


def to_canonical(body: Any) -> list[Message]:
    """Convert a Chat request body (or its ``messages`` list) to canonical messages.

    Raises:
        ValidationError: The body is not a Chat request shape at all.
    """
    out: list[Message] = []
    for i, raw in enumerate(_messages_of(body)):
        if not isinstance(raw, dict) or raw.get("role") not in _ROLES:
            raise ValidationError(PROTOCOL, [f"messages[{i}]: not a message with a known role"])
        try:
            out.append(_message(raw))
        except RecursionError as exc:  # a value nested past the interpreter's limit
            raise ValidationError(PROTOCOL, [f"messages[{i}]: a value is nested too deep to read"]) from exc
        except UnicodeEncodeError as exc:  # msgspec reads str as UTF-8: a lone surrogate fails
            raise ValidationError(PROTOCOL, [f"messages[{i}]: a string is not valid Unicode"]) from exc
    return out


def _message(raw: dict[str, Any]) -> Message:
    role = raw["role"]
    name = raw.get("name") if isinstance(raw.get("name"), str) else None
    content = raw.get("content")
    if role == "tool":
        answer = raw.get("tool_call_id")
        call_id = answer if isinstance(answer, str) else ""
        result_content: list[Part] | str = content if isinstance(content, str) else _parts(content)
        result = ToolResultPart(tool_call_id=call_id, content=result_content)
        return Message(role="tool", content=[result], tool_call_id=call_id, name=name, provider=PROTOCOL)
    if role == "function":
        text = content if isinstance(content, str) else ""
        return Message(role="function", content=text, name=name, provider=PROTOCOL)
    parts: list[Part] | str
    if role == "assistant" and isinstance(content, str) and raw.keys() <= _PLAIN:
        parts = content  # (its text only: what the rest reads to, without the parts built)
    elif role == "assistant":
        parts = _reasoning(raw)
        parts += (
            []
            if content is None
            else [TextPart(text=content)]
            if isinstance(content, str)
            else _parts(content)
        )
        refusal = raw.get("refusal")
        if isinstance(refusal, str):
            parts.append(RefusalPart(text=refusal))
        audio = _wire(raw.get("audio"), AudioDelta)
        if audio is not None and isinstance(audio.id, str):
            parts.append(audio_from(audio))
        calls = raw.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            parts.append(_tool_call(call))
        legacy = _wire(raw.get("function_call"), FunctionDelta)
        if legacy is not None:
            parts.append(legacy_from(legacy))
        if isinstance(content, str) and len(parts) == 1:
            parts = content
    else:
        parts = content if isinstance(content, str) else _parts(content)
    return Message(role=role, content=parts, name=name, provider=PROTOCOL)


def _reasoning(raw: dict[str, Any]) -> list[Part]:
    """An assistant message's reasoning fields → reasoning parts (as a response message's)."""
    fields = {k: raw[k] for k in _REASONING if k in raw}
    if not fields:
        return []
    message = _wire(fields, Delta)
    if message is None:  # a malformed field: kept whole, as any part Chat does not know
        return [UnknownPart(provider_type=k, raw=v) for k, v in fields.items()]
    return list(reasoning_from(message))


def _wire(raw: Any, kind: type[_W]) -> _W | None:
    """A message field read with the wire Struct the response decoder uses (``None`` if odd)."""
    if not isinstance(raw, dict):
        return None
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError:
        return None


def _tool_call(call: Any) -> Part:
    entry = _wire(call, ToolCallDelta)
    if entry is None:
        return UnknownPart(provider_type="tool_call", raw=call)
    return call_from(entry)


def _parts(content: Any) -> list[Part]:
    if not isinstance(content, list):
        return []
    return [_part(p) for p in content]


def _part(raw: Any) -> Part:
    if not isinstance(raw, dict):
        return UnknownPart(provider_type=type(raw).__name__, raw=raw)
    kind = raw.get("type")
    if kind == "text" and isinstance(raw.get("text"), str):
        return TextPart(text=raw["text"])
    if kind == "refusal" and isinstance(raw.get("refusal"), str):
        return RefusalPart(text=raw["refusal"])
    if kind == "image_url" and isinstance(raw.get("image_url"), dict):
        image = raw["image_url"]
        url = image.get("url")
        return ImagePart(url=url if isinstance(url, str) else None, detail=image.get("detail"))
    if kind == "input_audio" and isinstance(raw.get("input_audio"), dict):
        audio = raw["input_audio"]
        return AudioPart(data=audio.get("data"), format=audio.get("format"))
    if kind == "file" and isinstance(raw.get("file"), dict):
        f = raw["file"]
        return FilePart(file_id=f.get("file_id"), data=f.get("file_data"), filename=f.get("filename"))
    return UnknownPart(provider_type=str(kind), raw=raw)


# ---------------------------------------------------------------------- canonical → Chat


def from_canonical(messages: list[Message], *, drops: DropLog | None = None) -> dict[str, Any]:
    """Convert canonical messages to a Chat request body ``{"messages": [...]}``.

    Args:
        messages: The conversation.
        drops: If given, receives a record for everything Chat cannot carry (foreign
            reasoning, server-side tool calls, unknown parts...), which is dropped, never turned
            into text. Media of a tool result are moved (see the module doc), not dropped.
    """
    log = drops if drops is not None else DropLog(PROTOCOL)
    out: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for i, msg in enumerate(join_items(messages)):
        for item in _to_chat(i, msg, log, moved):
            if item["role"] != "tool" and moved:
                out.append(_moved_media(moved))
            if _empty_assistant(item):
                if any(k in item for k in _REASONING):
                    what = "reasoning of an assistant message with nothing else (Chat needs content or calls)"
                    log.add("reasoning", what, where=f"messages[{i}]")
                continue
            out.append(item)
    if moved:
        out.append(_moved_media(moved))
    return {"messages": out}


def _moved_media(moved: list[dict[str, Any]]) -> dict[str, Any]:
    """The user message that carries the media of the tool results just before it (and empties ``moved``)."""
    item = {"role": "user", "content": list(moved)}
    moved.clear()
    return item


def _empty_assistant(item: dict[str, Any]) -> bool:
    """An assistant message left with nothing Chat can carry (e.g. only foreign reasoning)."""
    return item["role"] == "assistant" and not any(
        item.get(k) for k in ("content", "tool_calls", "refusal", "function_call", "audio")
    )


def _to_chat(i: int, msg: Message, drops: DropLog, moved: list[dict[str, Any]]) -> list[dict[str, Any]]:
    role = "assistant" if msg.role == "model" else msg.role
    content = msg.content
    where = f"messages[{i}]"
    if isinstance(content, str):
        if role == "tool":
            return [{"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": content}]
        item: dict[str, Any] = {"role": role, "content": content}
        if msg.name is not None:
            item["name"] = msg.name
        return [item]
    results = [p for p in content if isinstance(p, ToolResultPart)]
    rest = [p for p in content if not isinstance(p, ToolResultPart)]
    out = [_tool_message(r, drops, where, moved) for r in results]
    if role == "tool":
        if rest:
            drops.add(
                "field", "non-result parts of a tool message (Chat: one result per tool message)", where=where
            )
        return out
    if role == "assistant":
        out.append(_assistant(msg, rest, drops, where))
        return out
    if rest or not results:
        parts = [_chat_part(p, drops, where) for p in rest]
        kept = [p for p in parts if p is not None]
        item = {"role": role, "content": _collapse(kept)}
        if msg.name is not None:
            item["name"] = msg.name
        out.append(item)
    return out


def _collapse(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and parts[0]["type"] == "text" and isinstance(parts[0].get("text"), str):
        text: str = parts[0]["text"]
        return text
    return parts


_MEDIA: Final = (ImagePart, AudioPart, FilePart)
_MEDIA_NAMES: Final = {"image_url": "image", "input_audio": "audio", "file": "file"}


def _tool_message(
    result: ToolResultPart, drops: DropLog, where: str, moved: list[dict[str, Any]]
) -> dict[str, Any]:
    """A ``role=tool`` message: the result's text; its media go to ``moved`` (a later user message)."""
    content: str | list[dict[str, Any]]
    if isinstance(result.content, str):
        content = result.content
    else:
        texts: list[dict[str, Any]] = []
        media: list[dict[str, Any]] = []
        for part in result.content:
            if isinstance(part, TextPart):
                texts.append({"type": "text", "text": part.text})
            elif isinstance(part, _MEDIA):
                # Chat tool messages carry text only: the medium moves to a user message.
                converted = _chat_part(part, drops, where)
                if converted is not None:
                    media.append(converted)
            else:
                tag = part.__struct_config__.tag
                drops.add("tool_result", f"{tag} part in a tool result (Chat: text only)", where=where)
        if media:
            kinds = ", ".join(dict.fromkeys(_MEDIA_NAMES[m["type"]] for m in media))
            note = f"[{kinds} output of this tool call follows in the next user message]"
            texts.append({"type": "text", "text": note})
            intro = f"Output of tool call {result.tool_call_id} ({kinds}):"
            moved.append({"type": "text", "text": intro})
            moved.extend(media)
        content = texts
    if result.is_error:
        drops.add("tool_result", "is_error of a tool result (Chat has no error flag)", where=where)
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": content}


def _assistant(msg: Message, parts: Sequence[Part], drops: DropLog, where: str) -> dict[str, Any]:
    writer = ChoiceWriter(drops, source=msg.provider, request=True, where=where)
    for part in parts:
        writer.add(part)
    item = writer.message()
    if msg.name is not None:
        item["name"] = msg.name
    return item


def _chat_part(part: Part, drops: DropLog, where: str) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url
        if url is None and part.data is not None:
            url = f"data:{part.media_type or 'image/png'};base64,{part.data}"
        if url is None:
            drops.add("media", "image by file id (Chat takes a URL)", where=where)
            return None
        image: dict[str, Any] = {"url": url}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(part, AudioPart) and part.data is not None:
        return {"type": "input_audio", "input_audio": {"data": part.data, "format": part.format or "wav"}}
    if isinstance(part, FilePart):
        f: dict[str, Any] = {}
        if part.file_id is not None:
            f["file_id"] = part.file_id
        if part.data is not None:
            f["file_data"] = part.data
        if part.filename is not None:
            f["filename"] = part.filename
        return {"type": "file", "file": f}
    if isinstance(part, UnknownPart) and isinstance(part.raw, dict) and "type" in part.raw:
        raw: dict[str, Any] = part.raw
        return raw
    drop_part(drops, part, where=where)
    return None


# ---------------------------------------------------------------------- validation

_PARTS_BY_ROLE: Final = {
    "system": {"text"},
    "developer": {"text"},
    "user": {"text", "image_url", "input_audio", "file"},
    "assistant": {"text", "refusal"},
    "tool": {"text"},
}


def validate(body: Any) -> list[str]:
    """Check a Chat request body against the protocol's rules; return every fault found.

    Rules: known roles; content part types allowed for the role; an assistant message has
    content unless it has tool calls; tool call ids are unique; every ``role=tool`` message has
    one ``tool_call_id`` that answers a call of the assistant message just before the run of
    tool messages, once; every such call is answered before the next non-tool message.
    """
    try:
        messages = _messages_of(body)
    except ValidationError as exc:
        return exc.faults
    faults: list[str] = []
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    seen_ids: set[str] = set()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in _ROLES:
            faults.append(f"messages[{i}]: not a message with a known role")
            continue
        role: str = msg["role"]
        if role != "tool" and open_calls:
            for pending, at in open_calls.items():
                faults.append(f"messages[{at}]: tool call {pending!r} has no tool message answering it")
            open_calls = {}
        _check_content(i, role, msg, faults)
        calls = msg.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            faults.append(f"messages[{i}]: tool_calls must be a list")
        elif role == "assistant":
            _open_calls(i, calls or [], faults, seen_ids, open_calls)
        elif role == "tool":
            answer = msg.get("tool_call_id")
            if not isinstance(answer, str) or not answer:
                faults.append(f"messages[{i}]: tool message without a tool_call_id")
            elif answer in answered:
                faults.append(f"messages[{i}]: tool_call_id {answer!r} is answered twice")
            elif answer not in open_calls:
                faults.append(
                    f"messages[{i}]: tool_call_id {answer!r} answers no tool call of the preceding assistant message"
                )
            else:
                del open_calls[answer]
                answered.add(answer)
    for pending, at in open_calls.items():
        faults.append(f"messages[{at}]: tool call {pending!r} has no tool message answering it")
    return faults


def _open_calls(
    i: int, calls: list[Any], faults: list[str], seen_ids: set[str], open_calls: dict[str, int]
) -> None:
    """Record an assistant message's tool calls as open; report missing and repeated ids."""
    for call in calls:
        call_id: Any = call.get("id") if isinstance(call, dict) else None
        if not isinstance(call_id, str) or not call_id:
            faults.append(f"messages[{i}]: a tool call has no id")
            continue
        if call_id in seen_ids:
            faults.append(f"messages[{i}]: tool call id {call_id!r} is used twice")
        seen_ids.add(call_id)
        open_calls[call_id] = i


def _check_content(i: int, role: str, msg: dict[str, Any], faults: list[str]) -> None:
    content = msg.get("content")
    if role == "assistant":
        if (
            content is None
            and not msg.get("tool_calls")
            and not msg.get("function_call")
            and not msg.get("audio")
            and not msg.get("refusal")
        ):
            faults.append(f"messages[{i}]: assistant message with neither content nor tool calls")
    elif role == "function":
        if not isinstance(msg.get("name"), str):
            faults.append(f"messages[{i}]: function message without a name")
        return
    elif content is None:
        faults.append(f"messages[{i}]: {role} message without content")
        return
    if isinstance(content, list):
        allowed = _PARTS_BY_ROLE.get(role, set())
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if not isinstance(kind, str) or kind not in allowed:
                shown = repr(kind) if not isinstance(kind, dict | list) else f"<{type(kind).__name__}>"
                faults.append(
                    f"messages[{i}].content[{j}]: part type {shown} is not allowed in a {role} message"
                )
    elif content is not None and not isinstance(content, str):
        faults.append(f"messages[{i}]: content must be a string or a list of parts")
