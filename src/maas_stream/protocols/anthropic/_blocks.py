"""Anthropic content blocks ↔ canonical parts: this protocol's ONE mapping (with ``_writer``).

It owns how one content block (a JSON object as the API sends or takes it) becomes one canonical
part, citations, and both directions of usage, stop reasons, error payloads and the ``message``
object; ``_writer.BlockWriter`` owns the way back from parts to blocks. The stream decoder,
:func:`~._body.decode_response` and the history reader use the read side (:func:`block_to_part`,
:func:`usage_from`, :func:`finish_of`); the stream encoder, the body encoder and the history
writer use the write side (``BlockWriter``, :func:`usage_body`, :func:`stop_reason_of`,
:func:`message_object`), so the three renderings cannot disagree. It holds no stream state and
does no framing or IO.

Blocks with no canonical home are kept whole, so a same-protocol round trip is lossless:
server-tool results become a :class:`ToolResultPart` holding the block as one
:class:`UnknownPart` (attached to the server call by ``tool_call_id``, never a client result);
``compaction``, ``fallback``, ``container_upload`` and block types we do not know become an
:class:`UnknownPart` with the raw block. Going back, raw blocks, citations and server calls are
written only for parts that came from Anthropic; signatures and redacted thinking only where
:func:`~maas_stream.protocols._replay.replayable` allows. What cannot be written is recorded in
a :class:`~maas_stream.DropLog`, never turned into text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._exceptions import RemoteProtocolError
from ..._model import (
    CitationPart,
    FilePart,
    FinishReason,
    ImagePart,
    Part,
    ReasoningPart,
    StreamError,
    TextPart,
    ToolCallKind,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)
from ..._usage import known_sum, usage_of
from .._names import ANTHROPIC as PROTOCOL

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = [
    "FINISH_REASONS",
    "KNOWN_RAW_TYPES",
    "MESSAGE_FIELDS",
    "SERVER_RESULT_TYPES",
    "STOP_REASONS",
    "args_text",
    "block_to_part",
    "citation_from",
    "error_body",
    "error_from",
    "finish_of",
    "fresh_input",
    "keep_message",
    "message_object",
    "string",
    "stop_reason_of",
    "usage_body",
    "usage_from",
]

SERVER_RESULT_TYPES: Final = frozenset(
    {
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
    }
)
"""Results of server-side tools: part of the assistant turn, answered by the provider."""

KNOWN_RAW_TYPES: Final = frozenset({"container_upload", "compaction", "fallback"})
"""Known block types with no canonical home: kept as an unknown part, but not counted as unknown."""

MESSAGE_FIELDS: Final = frozenset(
    {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
)
"""``message`` fields with a canonical home; the others go to ``provider_raw``."""

FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause",
    "refusal": "refusal",
    "compaction": "other",
}
"""Anthropic ``stop_reason`` → canonical finish reason (anything else is ``other``)."""

STOP_REASONS: Final[dict[FinishReason, str | None]] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "pause": "pause_turn",
    "refusal": "refusal",
    "content_filter": "refusal",
    "error": None,
    "other": "end_turn",
}
"""Canonical finish reason → Anthropic ``stop_reason`` (the one table every writer uses)."""

_CALL_TYPES: Final[dict[str, ToolCallKind]] = {
    "tool_use": "function",
    "server_tool_use": "server",
    "mcp_tool_use": "mcp",
}
_RESULT_TYPES: Final = frozenset({"tool_result", "mcp_tool_result"})

_json = msgspec.json.Encoder()


# ---------------------------------------------------------------------- reading (wire → canonical)


def _bad(what: str) -> RemoteProtocolError:
    return RemoteProtocolError(what, protocol=PROTOCOL)


def string(obj: dict[str, Any], key: str, owner: str | None = None) -> str | None:
    """A string field, or ``None`` when absent.

    Raises:
        RemoteProtocolError: The field holds another JSON type (named after ``owner``, by
            default the object's ``type``).
    """
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _bad(f"{owner or obj.get('type')}: {key!r} must be a string, not {type(value).__name__}")


def _count(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None or type(value) is int:
        return value
    raise _bad(f"usage: {key!r} must be an integer, not {type(value).__name__}")


def args_text(value: Any) -> str:
    """A tool call's ``input`` object as JSON text (``{}`` when absent)."""
    if value is None:
        return "{}"
    return _json.encode(value).decode()


def finish_of(stop_reason: str | None) -> FinishReason | None:
    """Map an Anthropic ``stop_reason`` to the canonical finish reason (unknown ones: ``other``)."""
    if stop_reason is None:
        return None
    return FINISH_REASONS.get(stop_reason, "other")


def _prompt(raw: dict[str, Any]) -> tuple[int | None, int | None, int | None, int | None]:
    """(all prompt tokens, cache reads, cache writes, output) of one usage object or iteration.

    Anthropic's ``input_tokens`` excludes the cache reads and writes; the canonical count
    includes them (DESIGN: the cache counts are subsets of ``input_tokens``).
    """
    fresh = _count(raw, "input_tokens")
    read = _count(raw, "cache_read_input_tokens")
    write = _count(raw, "cache_creation_input_tokens")
    output = _count(raw, "output_tokens")
    prompt = None if fresh is None else fresh + (read or 0) + (write or 0)
    return prompt, read, write, output


def fresh_input(usage: Usage) -> int:
    """Anthropic's ``input_tokens`` for canonical usage: the prompt less its cache reads and writes.

    The inverse of :func:`usage_from`'s sum, so a Chat or Responses ``cached_tokens`` (already
    inside their prompt count) is never counted twice. 0 when the input is unknown (the SDK
    requires the count).
    """
    cached = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    return max((usage.input_tokens or 0) - cached, 0)


def usage_from(raw: Any) -> Usage | None:
    """Map an Anthropic ``usage`` object to canonical usage; only the fields present are set.

    ``input_tokens`` counts every prompt token: Anthropic's ``input_tokens`` plus its cache
    reads and writes (``cache_read_tokens``/``cache_write_tokens``, subsets of it).

    With ``iterations`` (context compaction, advisor calls: one entry per sampling step), the
    top-level counts are those of the ``message`` iterations only: a compaction step or an
    advisor call is billed but left out of them. The canonical counts are then the sums over
    every iteration, so that they count all the tokens the provider bills; the raw object
    (iterations included) stays in ``raw`` for a same-protocol re-encode. ``reasoning_tokens``
    is the top-level ``output_tokens_details.thinking_tokens`` (iterations carry none).
    Anthropic reports no total: ``total_tokens`` is input plus output, as everywhere.

    Raises:
        RemoteProtocolError: ``usage`` (or one of its counts or iterations) has the wrong JSON
            type.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _bad(f"usage must be an object, not {type(raw).__name__}")
    details = raw.get("output_tokens_details")
    if details is not None and not isinstance(details, dict):
        raise _bad("usage: 'output_tokens_details' must be an object")
    prompt, read, write, output = _prompt(raw)
    iterations = raw.get("iterations")
    if iterations is not None:
        if not isinstance(iterations, list) or not all(isinstance(i, dict) for i in iterations):
            raise _bad("usage: 'iterations' must be a list of objects")
        if iterations:
            prompt = read = write = output = None
            for step in iterations:
                p, r, w, o = _prompt(step)
                prompt, read, write, output = (
                    known_sum(prompt, p),
                    known_sum(read, r),
                    known_sum(write, w),
                    known_sum(output, o),
                )
    return usage_of(
        input_tokens=prompt,
        output_tokens=output,
        cache_write_tokens=write,
        cache_read_tokens=read,
        reasoning_tokens=_count(details, "thinking_tokens") if details else None,
        raw=raw,
    )


def citation_from(raw: Any) -> CitationPart:
    """Map an Anthropic citation object (``char_location``, ``web_search_result_location``, ...).

    Raises:
        RemoteProtocolError: The citation is not an object or a field has the wrong JSON type.
    """
    if not isinstance(raw, dict):
        raise _bad(f"a citation must be an object, not {type(raw).__name__}")
    kind = string(raw, "type") or "unknown"
    start: Any = None
    end: Any = None
    for lo, hi in (
        ("start_char_index", "end_char_index"),
        ("start_page_number", "end_page_number"),
        ("start_block_index", "end_block_index"),
    ):
        if lo in raw:
            start, end = raw.get(lo), raw.get(hi)
            break
    source = raw.get("source") if kind == "search_result_location" else None
    url = string(raw, "url") or (source if isinstance(source, str) else None)
    return CitationPart(
        kind=kind,
        url=url,
        title=string(raw, "title") or string(raw, "document_title"),
        file_id=string(raw, "file_id"),
        start=start if type(start) is int else None,
        end=end if type(end) is int else None,
        cited_text=string(raw, "cited_text"),
        raw=raw,
    )


def _source_part(kind: str, block: dict[str, Any]) -> Part:
    source = block.get("source")
    if not isinstance(source, dict):
        return UnknownPart(provider_type=kind, raw=block)
    stype = source.get("type")
    media = string(source, "media_type")
    if kind == "image":
        if stype == "base64":
            return ImagePart(data=string(source, "data"), media_type=media)
        if stype == "url":
            return ImagePart(url=string(source, "url"))
        if stype == "file":
            return ImagePart(file_id=string(source, "file_id"))
        return UnknownPart(provider_type=kind, raw=block)
    extra = set(block) - {"type", "source", "title", "cache_control"}
    if extra:
        return UnknownPart(provider_type=kind, raw=block)  # context / citations: keep whole
    title = string(block, "title")
    if stype == "base64":
        return FilePart(data=string(source, "data"), media_type=media, filename=title)
    if stype == "url":
        return FilePart(url=string(source, "url"), media_type=media, filename=title)
    if stype == "file":
        return FilePart(file_id=string(source, "file_id"), filename=title)
    return UnknownPart(provider_type=kind, raw=block)


def _result_content(content: Any) -> list[Part] | str:
    if content is None:
        return []
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"a tool result's content must be a string or a list, not {type(content).__name__}")
    return [block_to_part(b) for b in content]


def block_to_part(block: Any) -> Part:
    """Map one complete content block to its canonical part (unknown blocks kept whole).

    Raises:
        RemoteProtocolError: The block is not an object, or a field it is read by has the wrong
            JSON type (a non-string ``type``, ``text``, ``id``...).
    """
    if not isinstance(block, dict):
        raise _bad(f"a content block must be an object, not {type(block).__name__}")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise _bad(f"a content block's type must be a string, not {type(kind).__name__}")
    if kind == "text":
        citations = block.get("citations")
        if citations is not None and not isinstance(citations, list):
            raise _bad("text block: 'citations' must be a list")
        notes = [citation_from(c) for c in citations] if citations else None
        return TextPart(text=string(block, "text") or "", annotations=notes)
    if kind == "thinking":
        return ReasoningPart(
            text=string(block, "thinking") or "", signature=string(block, "signature") or None
        )
    if kind == "redacted_thinking":
        return ReasoningPart(redacted=True, data=string(block, "data"))
    call = _CALL_TYPES.get(kind)
    if call is not None:
        return ToolCallPart(
            id=string(block, "id") or "",
            name=string(block, "name") or "",
            arguments=args_text(block.get("input")),
            kind=call,
            server_name=string(block, "server_name"),
        )
    if kind in _RESULT_TYPES:
        is_error = block.get("is_error")
        if is_error is not None and not isinstance(is_error, bool):
            raise _bad(f"{kind} block: 'is_error' must be a boolean")
        return ToolResultPart(
            tool_call_id=string(block, "tool_use_id") or "",
            content=_result_content(block.get("content")),
            is_error=is_error,
        )
    if kind in SERVER_RESULT_TYPES:
        content = block.get("content")
        failed = isinstance(content, dict) and str(content.get("type") or "").endswith("_error")
        return ToolResultPart(
            tool_call_id=string(block, "tool_use_id") or "",
            content=[UnknownPart(provider_type=kind, raw=block)],
            is_error=True if failed else None,
        )
    if kind in ("image", "document"):
        return _source_part(kind, block)
    return UnknownPart(provider_type=kind or "unknown", raw=block)


def error_from(payload: Any) -> StreamError:
    """Map an error payload (``{"type":"error","error":{type, message}}``) to a stream error.

    Lenient on purpose: whatever its shape, the provider said it failed.
    """
    inner = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(inner, dict):
        message = inner.get("message")
        kind = inner.get("type")
        return StreamError(
            type=kind if isinstance(kind, str) and kind else "error",
            message=message if isinstance(message, str) else None,
            raw=payload,
        )
    return StreamError(type="error", message=None if payload is None else str(payload), raw=payload)


# ---------------------------------------------------------------------- writing (canonical → wire)


def stop_reason_of(
    finish: FinishReason | None, provider: str | None, *, native: bool, completed: bool
) -> str | None:
    """The ``stop_reason`` for a canonical finish reason (an Anthropic source's own, when known).

    Args:
        finish: The canonical finish reason.
        provider: The source's own finish reason.
        native: The source is Anthropic (its own stop reason is written back).
        completed: The response ended normally: a missing finish reason is then ``end_turn``
            (an ended Anthropic message always has one); otherwise it stays ``None``.
    """
    if native and provider in FINISH_REASONS:
        return provider
    if finish is None:
        return "end_turn" if completed else None
    return STOP_REASONS[finish]


def usage_body(usage: Usage | None, *, native: bool) -> dict[str, Any]:
    """The ``usage`` object for canonical usage: THE function every writer uses.

    An Anthropic source's own object is written back as it came (``iterations`` included);
    other usage from its fields, ``input_tokens`` without the cache reads and writes (zeros
    where a count is unknown: the SDK requires both token counts).
    """
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    if native and isinstance(usage.raw, dict):
        body = dict(usage.raw)
        body.setdefault("input_tokens", fresh_input(usage))
        body.setdefault("output_tokens", usage.output_tokens or 0)
        return body
    # The canonical input counts the cache reads and writes; Anthropic's leaves them out.
    body = {"input_tokens": fresh_input(usage), "output_tokens": usage.output_tokens or 0}
    if usage.cache_write_tokens is not None:
        body["cache_creation_input_tokens"] = usage.cache_write_tokens
    if usage.cache_read_tokens is not None:
        body["cache_read_input_tokens"] = usage.cache_read_tokens
    if usage.reasoning_tokens is not None:
        body["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    return body


def message_object(
    *,
    id: str | None,
    model: str | None,
    content: list[dict[str, Any]],
    stop_reason: str | None,
    usage: dict[str, Any],
    extra: Any = None,
) -> dict[str, Any]:
    """A ``message`` object: the non-streaming body, or ``message_start.message`` (no content yet)."""
    message: dict[str, Any] = {
        "id": id or "msg_maas",
        "type": "message",
        "role": "assistant",
        "model": model or "unknown",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }
    if isinstance(extra, dict):
        message.update({k: v for k, v in extra.items() if k not in MESSAGE_FIELDS})
    return message


def error_body(error: StreamError, *, native: bool) -> dict[str, Any]:
    """The ``error`` event payload (an Anthropic source's own one as it came)."""
    raw = error.raw
    if native and isinstance(raw, dict) and isinstance(raw.get("error"), dict):
        return raw
    return {"type": "error", "error": {"type": error.type, "message": error.message or error.type}}


def keep_message(role: str, choice_index: int | None, drops: DropLog, where: str) -> bool:
    """Whether a message goes into the one assistant message of a response (else recorded).

    Every assistant message of choice 0 does (a Responses source's items, say); other roles
    and other choices are dropped.
    """
    if role not in ("assistant", "model"):
        what = f"{role} message in the output (an Anthropic response holds one assistant message)"
        drops.add("message", what, where=where)
        return False
    if choice_index not in (None, 0):
        what = "choices after the first (an Anthropic response holds one message)"
        drops.add("message", what, where=f"choices[{choice_index}]")
        return False
    return True
