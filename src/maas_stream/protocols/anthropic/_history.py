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
* Blocks ↔ parts through the protocol's one mapping (``_blocks``). ``thinking`` and
  ``redacted_thinking`` are replayed unchanged to Anthropic's own messages (``Message.provider``,
  asked through ``protocols/_replay.py``); reasoning that Anthropic cannot take back (unsigned,
  or another provider's) is dropped and recorded.
* ``cache_control`` of any block is kept in ``Message.provider_raw`` and put back.
"""

from __future__ import annotations

from typing import Any, Final

from ..._drops import DropLog
from ..._exceptions import RemoteProtocolError, ValidationError
from ..._model import Message, Part, TextPart
from .._names import ANTHROPIC as PROTOCOL
from ._blocks import SERVER_RESULT_TYPES, block_to_part
from ._writer import BlockWriter, drop_kind

__all__ = ["MID_CONVERSATION_SYSTEM", "from_canonical", "to_canonical", "validate"]

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


def _content(raw: Any, where: str) -> tuple[list[Part] | str, dict[str, Any] | None]:
    """Blocks → parts, and the ``cache_control`` of blocks by position (or ``None``)."""
    if isinstance(raw, str):
        return raw, None
    if not isinstance(raw, list):
        return [], None
    parts: list[Part] = []
    cache: dict[str, Any] = {}
    for i, block in enumerate(raw):
        try:
            parts.append(block_to_part(block))
        except RemoteProtocolError as exc:
            raise ValidationError(PROTOCOL, [f"{where}.content[{i}]: {exc.message}"]) from exc
        if isinstance(block, dict) and "cache_control" in block:
            cache[str(i)] = block["cache_control"]
    return parts, ({"cache_control": cache} if cache else None)


def to_canonical(body: Any) -> list[Message]:
    """Convert an Anthropic request body (or its ``messages`` list) to canonical messages.

    Raises:
        ValidationError: The body is not an Anthropic request shape at all, or a block has a
            field of the wrong JSON type.
    """
    system, messages = _split(body)
    out: list[Message] = []
    if system is not None:
        content, raw = _content(system, "system")
        out.append(Message(role="system", content=content, provider=PROTOCOL, provider_raw=raw))
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str) or msg["role"] not in _ROLES:
            raise ValidationError(PROTOCOL, [f"messages[{i}]: not a message with a known role"])
        content, raw = _content(msg.get("content"), f"messages[{i}]")
        role = msg["role"]
        kind = MID_CONVERSATION_SYSTEM if role == "system" else None
        out.append(Message(role=role, content=content, type=kind, provider=PROTOCOL, provider_raw=raw))
    return out


# ---------------------------------------------------------------------- canonical → Anthropic


def from_canonical(messages: list[Message], *, drops: DropLog | None = None) -> dict[str, Any]:
    """Convert canonical messages to an Anthropic request body ``{"system"?, "messages": [...]}``.

    Blocks are written by the protocol's one mapping (``_writer.BlockWriter``) for the protocol
    each message came from (``Message.provider``): thinking and redacted thinking are replayed
    only to Anthropic's own messages, raw blocks and server calls only from them.

    Args:
        messages: The conversation.
        drops: If given, what Anthropic cannot carry (audio, code parts, reasoning it cannot
            replay, ...) is recorded there; it is dropped, never turned into text.
    """
    log = drops if drops is not None else DropLog(PROTOCOL)
    system: list[dict[str, Any]] = []
    plain_system = True
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if msg.role in ("system", "developer") and msg.type != MID_CONVERSATION_SYSTEM:
            blocks = _blocks(where, msg, log, text_only=True)
            plain_system = plain_system and not any(len(b) > 2 for b in blocks)
            system.extend(blocks)
            continue
        if msg.role in ("system", "developer"):
            out.append({"role": "system", "content": _plain(msg, _blocks(where, msg, log, text_only=True))})
            continue
        if msg.role == "function":
            log.add("tool_result", "legacy function result (no call id to answer)", where=where)
            continue
        role = "assistant" if msg.role in ("assistant", "model") else "user"
        if msg.role != "tool" and _as_text(out, role, msg):
            continue
        blocks = _blocks(where, msg, log, text_only=False)
        if msg.role == "tool" and isinstance(msg.content, str):
            blocks = [{"type": "tool_result", "tool_use_id": msg.tool_call_id or "", "content": msg.content}]
        _append(out, role, blocks)
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


def _as_text(out: list[dict[str, Any]], role: str, msg: Message) -> bool:
    """Add a turn of plain text as its string, unless it merges into the turn before (as blocks)."""
    if isinstance(msg.content, str) and msg.provider_raw is None and not (out and out[-1]["role"] == role):
        out.append({"role": role, "content": msg.content})
        return True
    return False


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add a turn; consecutive turns of one role merge (tool results stay first: they come first)."""
    prev = out[-1] if out else None
    if prev is not None and prev["role"] == role:
        if isinstance(prev["content"], str):
            prev["content"] = [{"type": "text", "text": prev["content"]}]
        prev["content"].extend(blocks)
        return
    out.append({"role": role, "content": list(blocks)})


def _blocks(where: str, msg: Message, log: DropLog, *, text_only: bool) -> list[dict[str, Any]]:
    content = msg.content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    cache: dict[str, Any] = {}
    if msg.provider == PROTOCOL and isinstance(msg.provider_raw, dict):
        found = msg.provider_raw.get("cache_control")
        cache = found if isinstance(found, dict) else {}
    writer = BlockWriter(msg.provider, log, request=True)
    assistant = msg.role in ("assistant", "model")
    out: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if text_only and not isinstance(part, TextPart):
            what = f"{part.__struct_config__.tag} part in a system message (Anthropic system is text only)"
            log.add(drop_kind(part), what, where=where)
            continue
        block = writer.block(part, where=where, assistant=assistant)
        if block is None:
            continue
        if str(j) in cache:
            block = {**block, "cache_control": cache[str(j)]}
        out.append(block)
    return out


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
        role = msg.get("role") if isinstance(msg, dict) else None
        if not isinstance(role, str) or role not in _ROLES:
            faults.append(f"messages[{i}]: not a message with a known role")
            continue
        content = msg.get("content")
        # A string is one text block, which no block rule is about (either role, no call, no result).
        blocks = [] if isinstance(content, str) else _blocks_of(content)
        if blocks is None:
            faults.append(f"messages[{i}]: content must be a string or a list of blocks")
            blocks = []
        if role == "system":
            _check_system(i, messages, msg, pending, faults)
            last_role = role
            continue
        if role == last_role:
            faults.append(f"messages[{i}]: two {role} messages in a row (roles must alternate)")
        if blocks:
            _check_blocks(i, role, blocks, faults)
        if role == "user":
            if blocks:
                _check_results(i, blocks, pending, faults)
        else:  # an assistant turn: the calls of the one before are answered by now
            if pending:
                _report_missing(pending, faults)
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
