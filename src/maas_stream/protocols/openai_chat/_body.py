"""OpenAI Chat Completions non-streaming body: a canonical Response → a ``chat.completion`` object.

It makes the decisions the stream encoder (``_encode``) makes: every assistant message maps to
the choice of its ``choice_index`` (choice 0 without one); reasoning goes back only to the
compatible field it came from when the source is Chat; server and MCP tool calls, citations
without a URL, media, code and unknown parts are dropped and reported in ``lossy``, never turned
into text. It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

from ..._model import (
    AudioPart,
    ReasoningPart,
    RefusalPart,
    Response,
    TextPart,
    ToolCallPart,
    UnknownPart,
    Usage,
)
from .._names import OPENAI_CHAT as PROTOCOL
from ._encode import _FINISH, LEGACY, _annotation

__all__ = ["encode_response"]

_ASSISTANT: Final = ("assistant", "model")


def _lose(sink: list[str], what: str) -> None:
    if what not in sink:
        sink.append(what)


class _Choice:
    __slots__ = (
        "annotations",
        "audio",
        "calls",
        "finish",
        "legacy",
        "logprobs",
        "reasoning",
        "refusal",
        "text",
    )

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.legacy: dict[str, Any] | None = None
        self.annotations: list[dict[str, Any]] = []
        self.reasoning: dict[str, list[Any]] = {}
        self.audio: dict[str, Any] | None = None
        self.finish: str | None = None
        self.logprobs: dict[str, list[Any]] = {}


def encode_response(response: Response, *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Encode a canonical response as an OpenAI ``chat.completion`` object.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        lossy: If given, a line is appended for everything Chat cannot carry (dropped).

    Returns:
        The JSON object a non-streaming ``POST /v1/chat/completions`` answers with.
    """
    sink: list[str] = lossy if lossy is not None else []
    same = response.protocol == PROTOCOL
    choices: dict[int, _Choice] = {}
    for msg in response.messages:
        if msg.role not in _ASSISTANT:
            _lose(sink, f"{msg.role} message in the output")
            continue
        index = msg.choice_index if msg.choice_index is not None else 0
        choice = choices.setdefault(index, _Choice())
        if msg.finish_reason is not None:
            choice.finish = _FINISH[msg.finish_reason]
        content = msg.content
        if isinstance(content, str):
            choice.text.append(content)
            continue
        for part in content:
            _part(choice, part, same, sink)
    if not choices:
        choices[0] = _Choice()
    body: dict[str, Any] = {
        "id": response.id or "chatcmpl-maas",
        "object": "chat.completion",
        "created": 0,
        "model": response.model or "unknown",
    }
    raw = response.provider_raw
    if same and isinstance(raw, dict):
        created = raw.get("created")
        body["created"] = created if type(created) is int else 0
        for key in ("system_fingerprint", "service_tier"):
            if key in raw:
                body[key] = raw[key]
    default = _FINISH[response.finish_reason] if response.finish_reason is not None else "stop"
    body["choices"] = [_choice_body(i, choices[i], default) for i in sorted(choices)]
    if response.usage is not None:
        body["usage"] = _usage(response.usage, same)
    return body


def _part(choice: _Choice, part: Any, same: bool, sink: list[str]) -> None:  # noqa: C901
    if isinstance(part, TextPart):
        choice.text.append(part.text)
        if part.logprobs:
            choice.logprobs.setdefault("content", []).extend(part.logprobs)
        for citation in part.annotations or ():
            annotation = _annotation(citation)
            if annotation is None:
                _lose(sink, f"citation of kind {citation.kind!r} (Chat annotations carry URL citations only)")
            else:
                choice.annotations.append(annotation)
    elif isinstance(part, RefusalPart):
        choice.refusal.append(part.text)
        if part.logprobs:
            choice.logprobs.setdefault("refusal", []).extend(part.logprobs)
    elif isinstance(part, ToolCallPart):
        if part.kind in ("server", "mcp"):
            _lose(sink, f"{part.kind} tool call {part.name!r} ({part.id}): Chat has no server-side tools")
        elif part.item_id == LEGACY and same:
            choice.legacy = {"name": part.name, "arguments": part.arguments}
        elif part.kind == "custom":
            choice.calls.append(
                {"id": part.id, "type": "custom", "custom": {"name": part.name, "input": part.arguments}}
            )
        else:
            fn = {"name": part.name, "arguments": part.arguments}
            choice.calls.append({"id": part.id, "type": "function", "function": fn})
    elif isinstance(part, ReasoningPart):
        field = part.origin_field if same else None
        if field is None:
            _lose(sink, "reasoning (Chat Completions carries no reasoning)")
        elif field == "reasoning_details":
            detail: dict[str, Any] = {"type": "reasoning.text", "text": part.text or ""}
            if part.data is not None:
                detail = {"type": "reasoning.encrypted", "data": part.data}
            for key in ("format", "id", "signature"):
                if getattr(part, key) is not None:
                    detail[key] = getattr(part, key)
            choice.reasoning.setdefault(field, []).append(detail)
        else:
            choice.reasoning.setdefault(field, []).append(part.text or "")
    elif isinstance(part, AudioPart) and part.id is not None:
        choice.audio = {
            "id": part.id,
            "data": part.data or "",
            "transcript": part.transcript or "",
            "expires_at": part.expires_at or 0,
        }
    else:
        kind = part.provider_type if isinstance(part, UnknownPart) else part.__struct_config__.tag
        _lose(sink, f"{kind} part (no Chat Completions equivalent)")


def _choice_body(index: int, choice: _Choice, default: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(choice.text) if choice.text else None,
        "refusal": "".join(choice.refusal) if choice.refusal else None,
    }
    if choice.calls:
        message["tool_calls"] = choice.calls
    if choice.legacy is not None:
        message[LEGACY] = choice.legacy
    if choice.annotations:
        message["annotations"] = choice.annotations
    if choice.audio is not None:
        message["audio"] = choice.audio
    for field, values in choice.reasoning.items():
        message[field] = values if field == "reasoning_details" else "".join(values)
    reason = choice.finish or default
    if reason == "stop" and choice.calls:
        reason = "tool_calls"
    elif reason == "tool_calls" and not choice.calls and choice.legacy is not None:
        reason = LEGACY
    logprobs = choice.logprobs or None
    return {"index": index, "message": message, "finish_reason": reason, "logprobs": logprobs}


def _usage(usage: Usage, same: bool) -> dict[str, Any]:
    if same and isinstance(usage.raw, dict):
        return usage.raw
    body: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens or 0,
        "completion_tokens": usage.output_tokens or 0,
        "total_tokens": usage.total_tokens
        if usage.total_tokens is not None
        else (usage.input_tokens or 0) + (usage.output_tokens or 0),
    }
    if usage.cache_read_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": usage.cache_read_tokens}
    if usage.reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return body
