"""Anthropic Messages non-streaming body: a canonical Response → a ``message`` object.

It makes the decisions the stream encoder (``_encode``) makes: one assistant message (the
assistant messages of choice 0, joined, as a Responses source's items are); thinking is kept
with its signature only from an Anthropic source (other reasoning text becomes an unsigned
``thinking`` block, never text); server tool calls and their results only from an Anthropic
source; refusals become text blocks (reported); the rest is dropped and reported in ``lossy``.
It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._model import (
    Message,
    ReasoningPart,
    RefusalPart,
    Response,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)
from .._names import ANTHROPIC as PROTOCOL
from ._blocks import FINISH_REASONS
from ._encode import _STOP

__all__ = ["encode_response"]

_ASSISTANT: Final = ("assistant", "model")


def _lose(sink: list[str], what: str) -> None:
    if what not in sink:
        sink.append(what)


def encode_response(response: Response, *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Encode a canonical response as an Anthropic ``message`` object.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        lossy: If given, a line is appended for everything Anthropic cannot carry (dropped).

    Returns:
        The JSON object a non-streaming ``POST /v1/messages`` answers with.
    """
    sink: list[str] = lossy if lossy is not None else []
    same = response.protocol == PROTOCOL
    blocks: list[dict[str, Any]] = []
    for msg in response.messages:
        if msg.role not in _ASSISTANT:
            _lose(
                sink, f"{msg.role} message in the output (an Anthropic response holds one assistant message)"
            )
            continue
        if msg.choice_index not in (None, 0):
            _lose(sink, f"choice {msg.choice_index} (Anthropic answers one message; choice 0 is kept)")
            continue
        blocks.extend(_blocks(msg, same, sink))
    tools = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": response.id or "msg_maas",
        "type": "message",
        "role": "assistant",
        "model": response.model or "unknown",
        "content": blocks,
        "stop_reason": _stop_reason(response, same, tools),
        "stop_sequence": None,
        "usage": _usage(response, same),
    }


def _blocks(msg: Message, same: bool, sink: list[str]) -> list[dict[str, Any]]:
    if isinstance(msg.content, str):
        return [{"type": "text", "text": msg.content}]
    out: list[dict[str, Any]] = []
    for part in msg.content:
        block = _block(part, same, sink)
        if block is not None:
            out.append(block)
    return out


def _block(part: Any, same: bool, sink: list[str]) -> dict[str, Any] | None:
    if isinstance(part, TextPart | RefusalPart):
        if isinstance(part, RefusalPart):
            _lose(sink, "refusal: sent as a text block (Anthropic has no refusal block)")
            return {"type": "text", "text": part.text}
        block: dict[str, Any] = {"type": "text", "text": part.text}
        citations = []
        for citation in part.annotations or ():
            if same and isinstance(citation.raw, dict):
                citations.append(citation.raw)
            else:
                _lose(sink, f"citation of kind {citation.kind!r} from another protocol")
        if citations:
            block["citations"] = citations
        return block
    if isinstance(part, ReasoningPart):
        return _thinking(part, same, sink)
    if isinstance(part, ToolCallPart):
        return _call(part, same, sink)
    if isinstance(part, ToolResultPart):
        content = part.content
        first = content[0] if isinstance(content, list) and len(content) == 1 else None
        if same and isinstance(first, UnknownPart) and isinstance(first.raw, dict) and "type" in first.raw:
            raw: dict[str, Any] = first.raw
            return raw
        _lose(sink, f"tool result {part.tool_call_id} (no Anthropic output block for it)")
        return None
    if isinstance(part, UnknownPart) and same and isinstance(part.raw, dict) and "type" in part.raw:
        if part.raw["type"] == "content_block_delta":
            _lose(sink, f"unknown {part.provider_type!r} delta (a message body has no deltas)")
            return None
        unknown: dict[str, Any] = part.raw
        return unknown
    kind = part.provider_type if isinstance(part, UnknownPart) else part.__struct_config__.tag
    _lose(sink, f"{kind} part (no Anthropic output block for it)")
    return None


def _thinking(part: ReasoningPart, same: bool, sink: list[str]) -> dict[str, Any] | None:
    if same:
        if part.redacted or part.data is not None:
            return {"type": "redacted_thinking", "data": part.data or ""}
        return {"type": "thinking", "thinking": part.text or "", "signature": part.signature or ""}
    if part.signature is not None:
        _lose(sink, "reasoning signature from another protocol (not valid for Anthropic)")
    if part.data is not None or part.encrypted_content is not None:
        _lose(sink, "encrypted reasoning from another protocol (not valid for Anthropic)")
    text = part.text or "".join(part.summary or ())
    return {"type": "thinking", "thinking": text, "signature": ""} if text else None


def _call(part: ToolCallPart, same: bool, sink: list[str]) -> dict[str, Any] | None:
    kinds = {"function": "tool_use", "mcp": "mcp_tool_use"}
    if same:
        kinds["server"] = "server_tool_use"
    kind = kinds.get(part.kind)
    if kind is None:
        _lose(sink, f"{part.kind} tool call {part.name!r} ({part.id}): no Anthropic equivalent")
        return None
    if part.signature is not None:
        _lose(sink, f"tool call {part.id}: signature (foreign; Anthropic tool_use carries none)")
    try:
        args = msgspec.json.decode(part.arguments) if part.arguments.strip() else {}
    except msgspec.DecodeError:
        args = None
    if not isinstance(args, dict):
        _lose(sink, f"tool call {part.id}: arguments are not a JSON object; sent as {{}}")
        args = {}
    block: dict[str, Any] = {"type": kind, "id": part.id, "name": part.name, "input": args}
    if part.kind == "mcp" and part.server_name is not None:
        block["server_name"] = part.server_name
    return block


def _stop_reason(response: Response, same: bool, tools: bool) -> str | None:
    provider = response.provider_finish_reason
    if same and provider in FINISH_REASONS:
        return provider
    finish = response.finish_reason
    if finish is None:
        if response.status != "completed":
            return None
        return "tool_use" if tools else "end_turn"
    if finish == "stop" and tools:
        return "tool_use"
    return _STOP[finish]


def _usage(response: Response, same: bool) -> dict[str, Any]:
    usage = response.usage
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    if same and isinstance(usage.raw, dict):
        body = dict(usage.raw)
        body.setdefault("input_tokens", usage.input_tokens or 0)
        body.setdefault("output_tokens", usage.output_tokens or 0)
        return body
    body = {"input_tokens": usage.input_tokens or 0, "output_tokens": usage.output_tokens or 0}
    if usage.cache_write_tokens is not None:
        body["cache_creation_input_tokens"] = usage.cache_write_tokens
    if usage.cache_read_tokens is not None:
        body["cache_read_input_tokens"] = usage.cache_read_tokens
    return body
