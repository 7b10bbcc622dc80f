"""OpenAI Responses non-streaming body: a canonical Response → a ``response`` object.

It makes the decisions the stream encoder (``_encode``) makes: the assistant messages of
choice 0 become output items (text and refusals in ``message`` items, client tool calls in
``function_call`` / ``custom_tool_call`` items); reasoning, hosted-tool items and unknown items
are kept only from a Responses source (whole, from their raw item); other protocols' reasoning,
server and MCP calls, media and code are dropped and reported in ``lossy``. It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

from ..._model import (
    Message,
    ReasoningPart,
    RefusalPart,
    Response,
    StreamError,
    TextPart,
    ToolCallPart,
    UnknownPart,
)
from .._names import OPENAI_RESPONSES as PROTOCOL
from ._items import REBUILT_TYPES, call_item, reasoning_item, text_json

__all__ = ["encode_response"]

_ASSISTANT: Final = ("assistant", "model")
_CODES: Final = frozenset({"server_error", "rate_limit_exceeded", "invalid_prompt"})
_INCOMPLETE: Final = {"length": "max_output_tokens", "content_filter": "content_filter"}


def _lose(sink: list[str], what: str) -> None:
    if what not in sink:
        sink.append(what)


def encode_response(response: Response, *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Encode a canonical response as an OpenAI Responses ``response`` object.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        lossy: If given, a line is appended for everything Responses cannot carry (dropped).

    Returns:
        The JSON object a non-streaming ``POST /v1/responses`` answers with.
    """
    sink: list[str] = lossy if lossy is not None else []
    same = response.protocol == PROTOCOL
    output: list[dict[str, Any]] = []
    for msg in response.messages:
        if (
            same
            and msg.type is not None
            and msg.type not in REBUILT_TYPES
            and isinstance(msg.provider_raw, dict)
        ):
            output.append(dict(msg.provider_raw))  # a hosted-tool, tool-output or unknown item, whole
            continue
        if msg.role not in _ASSISTANT:
            _lose(sink, f"{msg.role} message in the output")
            continue
        if msg.choice_index not in (None, 0):
            _lose(sink, f"choice {msg.choice_index} (a Responses response carries one choice)")
            continue
        output.extend(_items(msg, same, sink, len(output)))
    body: dict[str, Any] = {
        "id": response.id or "resp_maas",
        "object": "response",
        "created_at": 0,
        "model": response.model or "unknown",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
    }
    raw = response.provider_raw
    if same and isinstance(raw, dict):
        body.update({k: v for k, v in raw.items() if k not in ("status", "output", "usage")})
    body["id"] = response.id or body["id"]
    body["model"] = response.model or body["model"]
    body["status"] = response.status
    if response.status == "incomplete":
        reason = _INCOMPLETE.get(response.finish_reason or "")
        if reason is not None:
            body["incomplete_details"] = {"reason": reason}
    if response.error is not None:
        body["error"] = _error(response.error, sink)
    body["output"] = output
    body["usage"] = _usage(response, same)
    return body


def _error(error: StreamError, sink: list[str]) -> dict[str, Any]:
    # Responses error codes are a closed set: anything else is reported as a server error.
    code = error.code or error.type
    if code not in _CODES:
        _lose(sink, f"error code {code!r} (Responses error codes are a fixed set; sent as server_error)")
        code = "rate_limit_exceeded" if "rate_limit" in code else "server_error"
    return {"code": code, "message": error.message or error.type}


def _status(msg: Message) -> str:
    return msg.status if msg.status is not None else "completed"


def _items(msg: Message, same: bool, sink: list[str], start: int) -> list[dict[str, Any]]:
    raw = msg.provider_raw if same else None
    parts = [TextPart(text=msg.content)] if isinstance(msg.content, str) else msg.content
    items: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []

    def flush() -> None:
        if content:
            item: dict[str, Any] = dict(raw) if isinstance(raw, dict) and msg.type == "message" else {}
            item.update(
                type="message",
                id=msg.id if same and msg.id else f"msg_maas_{start + len(items)}",
                role="assistant",
                status=_status(msg),
                content=list(content),
            )
            if msg.phase is not None:
                item["phase"] = msg.phase
            items.append(item)
            content.clear()

    for part in parts:
        if isinstance(part, TextPart):
            content.append(text_json(part, sink))
        elif isinstance(part, RefusalPart):
            content.append({"type": "refusal", "refusal": part.text})
        elif isinstance(part, ToolCallPart) and part.kind in ("function", "custom"):
            flush()
            extras = raw if msg.type in ("function_call", "custom_tool_call") else None
            item = call_item(part, part.status or "completed", extras)
            item.setdefault("id", f"fc_maas_{start + len(items)}")
            items.append(item)
        elif isinstance(part, ReasoningPart) and same:
            flush()
            body = reasoning_item(part, None, raw if msg.type == "reasoning" else None)
            if body.get("id") is None:
                body["id"] = f"rs_maas_{start + len(items)}"
            if body["type"] == "compaction" and body.get("encrypted_content") is None:
                body["encrypted_content"] = ""
            if msg.status is not None:
                body["status"] = msg.status
            items.append(body)
        elif isinstance(part, ReasoningPart):
            _lose(sink, "reasoning of another protocol (Responses replays only its own encrypted_content)")
        elif isinstance(part, ToolCallPart):
            _lose(sink, f"{part.kind} tool call {part.name!r} ({part.id}) of another protocol")
        else:
            kind = part.provider_type if isinstance(part, UnknownPart) else part.__struct_config__.tag
            _lose(sink, f"{kind} part (no Responses output equivalent)")
    flush()
    return items


def _usage(response: Response, same: bool) -> dict[str, Any] | None:
    usage = response.usage
    if usage is None:
        return None
    body: dict[str, Any] = dict(usage.raw) if same and isinstance(usage.raw, dict) else {}
    # The SDK's ResponseUsage requires every count: fill in what the source did not report.
    body.setdefault("input_tokens", usage.input_tokens or 0)
    body.setdefault("output_tokens", usage.output_tokens or 0)
    body.setdefault(
        "total_tokens",
        usage.total_tokens
        if usage.total_tokens is not None
        else (usage.input_tokens or 0) + (usage.output_tokens or 0),
    )
    inputs = dict(body.get("input_tokens_details") or {})
    inputs.setdefault("cached_tokens", usage.cache_read_tokens or 0)
    inputs.setdefault("cache_write_tokens", usage.cache_write_tokens or 0)
    outputs = dict(body.get("output_tokens_details") or {})
    outputs.setdefault("reasoning_tokens", usage.reasoning_tokens or 0)
    body["input_tokens_details"] = inputs
    body["output_tokens_details"] = outputs
    return body
