"""Anthropic Messages request bodies ↔ canonical messages, and Anthropic's placement rules.

It owns the top-level ``system`` (string or text blocks), mid-conversation ``role: "system"``
messages, the user/assistant block types of PROTOCOLS.md §3.8 and the rules of §3.9. It does no
IO and holds no state.

Canonical mapping:

* ``system`` (top level) → a leading ``system`` message; a mid-conversation system message → a
  ``system`` message with ``type="mid_conversation_system"``. Going back, every other
  ``system``/``developer`` message (Chat, Responses) joins the top-level ``system``.
* A canonical ``tool`` message (a Chat ``role: "tool"`` result) → ``tool_result`` blocks in a
  user message: consecutive tool messages merge into ONE user message, results first, and a user
  message right after them is merged in after the results.
* ``thinking``/``redacted_thinking`` are replayed unchanged; reasoning that Anthropic cannot
  take back (no signature, or another provider's encrypted payload) is dropped and reported.
* ``cache_control`` of any block is kept in ``Message.provider_raw`` and put back.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._exceptions import ValidationError
from ..._model import (
    AudioPart,
    CitationPart,
    CodePart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)
from ._blocks import SERVER_RESULT_TYPES, block_to_part

__all__ = ["MID_CONVERSATION_SYSTEM", "from_canonical", "to_canonical", "validate"]

from .._names import ANTHROPIC as PROTOCOL

MID_CONVERSATION_SYSTEM: Final = "mid_conversation_system"
"""``Message.type`` of a system message that sits inside ``messages`` (not the top-level ``system``)."""

_ROLES: Final = frozenset({"user", "assistant", "system"})


# ---------------------------------------------------------------------- Anthropic → canonical


def _split(body: Any) -> tuple[Any, list[Any]]:
    if isinstance(body, dict):
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValidationError(PROTOCOL, ["the body has no 'messages' list"])
        return body.get("system"), messages
    if isinstance(body, list):
        return None, body
    raise ValidationError(PROTOCOL, ["expected a request body object or a list of messages"])


def _content(raw: Any) -> tuple[list[Part] | str, dict[str, Any] | None]:
    """Blocks → parts, and the ``cache_control`` of blocks by position (or ``None``)."""
    if isinstance(raw, str):
        return raw, None
    if not isinstance(raw, list):
        return [], None
    parts: list[Part] = []
    cache: dict[str, Any] = {}
    for i, block in enumerate(raw):
        parts.append(block_to_part(block))
        if isinstance(block, dict) and "cache_control" in block:
            cache[str(i)] = block["cache_control"]
    return parts, ({"cache_control": cache} if cache else None)


def to_canonical(body: Any) -> list[Message]:
    """Convert an Anthropic request body (or its ``messages`` list) to canonical messages.

    Raises:
        ValidationError: The body is not an Anthropic request shape at all.
    """
    system, messages = _split(body)
    out: list[Message] = []
    if system is not None:
        content, raw = _content(system)
        out.append(Message(role="system", content=content, provider=PROTOCOL, provider_raw=raw))
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in _ROLES:
            raise ValidationError(PROTOCOL, [f"messages[{i}]: not a message with a known role"])
        content, raw = _content(msg.get("content"))
        role = msg["role"]
        kind = MID_CONVERSATION_SYSTEM if role == "system" else None
        out.append(Message(role=role, content=content, type=kind, provider=PROTOCOL, provider_raw=raw))
    return out


# ---------------------------------------------------------------------- canonical → Anthropic


def from_canonical(messages: list[Message], *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Convert canonical messages to an Anthropic request body ``{"system"?, "messages": [...]}``.

    Args:
        messages: The conversation.
        lossy: If given, a line is appended for everything Anthropic cannot carry (audio,
            code parts, reasoning it cannot replay, ...), which is dropped, never turned into text.
    """
    sink: list[str] = lossy if lossy is not None else []
    system: list[dict[str, Any]] = []
    plain_system = True
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        if msg.role in ("system", "developer") and msg.type != MID_CONVERSATION_SYSTEM:
            blocks = _blocks(i, msg, sink, text_only=True)
            plain_system = plain_system and not any(len(b) > 2 for b in blocks)
            system.extend(blocks)
            continue
        if msg.role in ("system", "developer"):
            out.append({"role": "system", "content": _plain(msg, _blocks(i, msg, sink, text_only=True))})
            continue
        if msg.role == "function":
            sink.append(f"messages[{i}]: legacy function result (no call id to answer)")
            continue
        role = "assistant" if msg.role in ("assistant", "model") else "user"
        blocks = _blocks(i, msg, sink, text_only=False)
        if msg.role == "tool" and isinstance(msg.content, str):
            blocks = [{"type": "tool_result", "tool_use_id": msg.tool_call_id or "", "content": msg.content}]
        _append(out, role, msg, blocks)
    body: dict[str, Any] = {}
    if system:
        if plain_system and all(b.get("type") == "text" for b in system):
            body["system"] = "\n\n".join(b["text"] for b in system) if len(system) > 1 else system[0]["text"]
        else:
            body["system"] = system
    body["messages"] = out
    return body


def _plain(msg: Message, blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if isinstance(msg.content, str) and msg.provider_raw is None:
        return msg.content
    return blocks


def _append(out: list[dict[str, Any]], role: str, msg: Message, blocks: list[dict[str, Any]]) -> None:
    """Add a turn; consecutive turns of one role merge (tool results stay first: they come first)."""
    prev = out[-1] if out else None
    if prev is not None and prev["role"] == role:
        if isinstance(prev["content"], str):
            prev["content"] = [{"type": "text", "text": prev["content"]}]
        prev["content"].extend(blocks)
        return
    if isinstance(msg.content, str) and msg.role != "tool" and msg.provider_raw is None:
        out.append({"role": role, "content": msg.content})
        return
    out.append({"role": role, "content": list(blocks)})


def _blocks(i: int, msg: Message, lossy: list[str], *, text_only: bool) -> list[dict[str, Any]]:
    content = msg.content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    cache: dict[str, Any] = {}
    if msg.provider == PROTOCOL and isinstance(msg.provider_raw, dict):
        found = msg.provider_raw.get("cache_control")
        cache = found if isinstance(found, dict) else {}
    foreign = msg.provider is not None and msg.provider != PROTOCOL
    out: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if text_only and not isinstance(part, TextPart):
            lossy.append(f"messages[{i}]: {part.__struct_config__.tag} part in a system message (text only)")
            continue
        block = _block(i, part, lossy, foreign=foreign, assistant=msg.role in ("assistant", "model"))
        if block is None:
            continue
        if str(j) in cache:
            block = {**block, "cache_control": cache[str(j)]}
        out.append(block)
    return out


def _block(i: int, part: Part, lossy: list[str], *, foreign: bool, assistant: bool) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        block: dict[str, Any] = {"type": "text", "text": part.text}
        citations = [
            c.raw for c in part.annotations or () if isinstance(c.raw, dict) and "cited_text" in c.raw
        ]
        if citations:
            block["citations"] = citations
        return block
    if isinstance(part, RefusalPart):
        lossy.append(f"messages[{i}]: refusal replayed as text (Anthropic has no refusal block)")
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCallPart):
        return _call_block(i, part, lossy)
    if isinstance(part, ToolResultPart):
        return _result_block(i, part, lossy, assistant=assistant)
    if isinstance(part, ReasoningPart):
        return _reasoning_block(i, part, lossy, foreign=foreign)
    if isinstance(part, ImagePart | FilePart):
        return _source_block(i, part, lossy)
    if isinstance(part, UnknownPart) and isinstance(part.raw, dict) and "type" in part.raw:
        raw: dict[str, Any] = part.raw
        return raw
    assert isinstance(part, AudioPart | CodePart | CitationPart | UnknownPart)
    lossy.append(f"messages[{i}]: {part.__struct_config__.tag} part (no Anthropic block for it)")
    return None


def _call_block(i: int, part: ToolCallPart, lossy: list[str]) -> dict[str, Any] | None:
    if part.kind == "custom":
        lossy.append(f"messages[{i}]: custom tool call {part.id} (Anthropic tool input is a JSON object)")
        return None
    try:
        args = msgspec.json.decode(part.arguments) if part.arguments.strip() else {}
    except msgspec.DecodeError:
        args = None
    if not isinstance(args, dict):
        lossy.append(f"messages[{i}]: tool call {part.id} arguments are not a JSON object; sent as {{}}")
        args = {}
    kind = {"function": "tool_use", "server": "server_tool_use", "mcp": "mcp_tool_use"}[part.kind]
    block: dict[str, Any] = {"type": kind, "id": part.id, "name": part.name, "input": args}
    if part.kind == "mcp":
        block["server_name"] = part.server_name or ""
    return block


def _result_block(
    i: int, part: ToolResultPart, lossy: list[str], *, assistant: bool
) -> dict[str, Any] | None:
    content = part.content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], UnknownPart):
        raw = content[0].raw
        if isinstance(raw, dict) and raw.get("type") in SERVER_RESULT_TYPES:
            return raw  # a server tool's result block, replayed as it came
    kind = "mcp_tool_result" if assistant else "tool_result"
    block: dict[str, Any] = {"type": kind, "tool_use_id": part.tool_call_id}
    if isinstance(content, str):
        block["content"] = content
    else:
        inner = [_block(i, p, lossy, foreign=False, assistant=False) for p in content]
        block["content"] = [b for b in inner if b is not None]
    if part.is_error is not None:
        block["is_error"] = part.is_error
    return block


def _reasoning_block(
    i: int, part: ReasoningPart, lossy: list[str], *, foreign: bool
) -> dict[str, Any] | None:
    if foreign:
        lossy.append(f"messages[{i}]: reasoning from another provider (Anthropic cannot replay it)")
        return None
    if part.redacted and part.data is not None:
        return {"type": "redacted_thinking", "data": part.data}
    if part.signature is not None and part.encrypted_content is None:
        return {"type": "thinking", "thinking": part.text or "", "signature": part.signature}
    lossy.append(f"messages[{i}]: reasoning without an Anthropic signature (cannot be replayed)")
    return None


def _source_block(i: int, part: ImagePart | FilePart, lossy: list[str]) -> dict[str, Any] | None:
    kind = "image" if isinstance(part, ImagePart) else "document"
    source: dict[str, Any]
    if part.data is not None:
        default = "image/png" if kind == "image" else "application/pdf"
        source = {"type": "base64", "media_type": part.media_type or default, "data": part.data}
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    elif part.file_id is not None:
        source = {"type": "file", "file_id": part.file_id}
    else:
        lossy.append(f"messages[{i}]: {kind} without data, URL or file id")
        return None
    block: dict[str, Any] = {"type": kind, "source": source}
    if isinstance(part, FilePart) and part.filename is not None:
        block["title"] = part.filename
    return block


# ---------------------------------------------------------------------- validation

_ASSISTANT_ONLY: Final = frozenset(
    {"tool_use", "server_tool_use", "mcp_tool_use", "thinking", "redacted_thinking", "mcp_tool_result"}
    | SERVER_RESULT_TYPES
)
_SERVER_CALLS: Final = frozenset({"server_tool_use", "mcp_tool_use"})


def validate(body: Any) -> list[str]:
    """Check an Anthropic request body against the protocol's rules; return every fault found.

    Rules (PROTOCOLS.md §3.9): known roles; user and assistant turns alternate (mid-conversation
    system messages aside); every ``tool_use`` is answered by a ``tool_result`` with its id in the
    very next message, which is a user message holding the results first (no other block before
    them) and all parallel results together; a ``tool_result`` answers a ``tool_use`` of the
    assistant message just before; a mid-conversation system message is not first, follows a
    user turn or an assistant turn ending in a server tool use, is last or followed by an
    assistant turn, is never next to another one, never sits between a ``tool_use`` and its
    result, and holds text only; the top-level ``system`` is a string or text blocks.
    """
    try:
        system, messages = _split(body)
    except ValidationError as exc:
        return exc.faults
    faults: list[str] = []
    if system is not None and not _text_only(system):
        faults.append("system: must be a string or a list of text blocks")
    pending: dict[str, int] = {}
    last_role: str | None = None
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in _ROLES:
            faults.append(f"messages[{i}]: not a message with a known role")
            continue
        role: str = msg["role"]
        blocks = _blocks_of(msg.get("content"))
        if blocks is None:
            faults.append(f"messages[{i}]: content must be a string or a list of blocks")
            blocks = []
        if role == "system":
            _check_system(i, messages, msg, pending, faults)
            last_role = role
            continue
        if role == last_role:
            faults.append(f"messages[{i}]: two {role} messages in a row (roles must alternate)")
        _check_blocks(i, role, blocks, faults)
        if role == "user":
            _check_results(i, blocks, pending, faults)
        else:
            _report_missing(pending, faults)
            pending = {}
        if role == "assistant":
            pending = {
                b["id"]: i for b in blocks if b.get("type") == "tool_use" and isinstance(b.get("id"), str)
            }
        last_role = role
    _report_missing(pending, faults)
    return faults


def _blocks_of(content: Any) -> list[dict[str, Any]] | None:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": None} for b in content]
    return None


def _text_only(content: Any) -> bool:
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content)


def _report_missing(pending: dict[str, int], faults: list[str]) -> None:
    for call_id, at in pending.items():
        faults.append(
            f"messages[{at}]: tool_use {call_id!r} has no tool_result in the next message "
            "(each tool_use must be answered in the immediately following user message)"
        )


def _check_blocks(i: int, role: str, blocks: list[dict[str, Any]], faults: list[str]) -> None:
    for j, block in enumerate(blocks):
        kind = block.get("type")
        if not isinstance(kind, str):
            faults.append(f"messages[{i}].content[{j}]: not a content block")
        elif role == "user" and kind in _ASSISTANT_ONLY:
            faults.append(f"messages[{i}].content[{j}]: {kind} block in a user message")
        elif role == "assistant" and kind == "tool_result":
            faults.append(f"messages[{i}].content[{j}]: tool_result block in an assistant message")


def _check_results(i: int, blocks: list[dict[str, Any]], pending: dict[str, int], faults: list[str]) -> None:
    seen_other: str | None = None
    for j, block in enumerate(blocks):
        kind = block.get("type")
        if kind != "tool_result":
            if seen_other is None:
                seen_other = str(kind)
            continue
        call_id = block.get("tool_use_id")
        if seen_other is not None:
            faults.append(
                f"messages[{i}].content[{j}]: tool_result {call_id!r} comes after a {seen_other} block "
                "(tool_result blocks must come first)"
            )
        if not isinstance(call_id, str) or not call_id:
            faults.append(f"messages[{i}].content[{j}]: tool_result without a tool_use_id")
        elif call_id in pending:
            del pending[call_id]
        else:
            faults.append(
                f"messages[{i}].content[{j}]: tool_result {call_id!r} answers no tool_use of the "
                "assistant message just before (or answers it twice)"
            )
    _report_missing(pending, faults)
    pending.clear()


def _check_system(
    i: int, messages: list[Any], msg: dict[str, Any], pending: dict[str, int], faults: list[str]
) -> None:
    if not _text_only(msg.get("content")):
        faults.append(f"messages[{i}]: a system message holds text only")
    if i == 0:
        faults.append(f"messages[{i}]: a system message cannot be the first message (use top-level system)")
        return
    prev = messages[i - 1] if isinstance(messages[i - 1], dict) else {}
    prev_role = prev.get("role")
    if prev_role == "system":
        faults.append(f"messages[{i}]: two system messages next to each other")
    elif pending:
        ids = ", ".join(repr(k) for k in pending)
        faults.append(f"messages[{i}]: system message between tool_use {ids} and its tool_result")
    elif prev_role == "assistant":
        blocks = _blocks_of(prev.get("content")) or []
        if not blocks or blocks[-1].get("type") not in _SERVER_CALLS:
            faults.append(
                f"messages[{i}]: a system message must follow a user message or an assistant "
                "message ending in a server tool use"
            )
    if i + 1 < len(messages):
        nxt = messages[i + 1]
        if isinstance(nxt, dict) and nxt.get("role") not in ("assistant", "system"):
            faults.append(
                f"messages[{i}]: a system message must be last or be followed by an assistant message"
            )
