"""Anthropic content blocks ↔ canonical parts, shared by the stream decoder and the history codec.

It owns the mapping of one block (a JSON object as the API sends or takes it) to one canonical
part, citations, usage and stop reasons. It holds no state and does no framing.

Blocks with no canonical home are kept whole, so a same-protocol round trip is lossless:
server-tool results become a :class:`ToolResultPart` holding the block as one
:class:`UnknownPart` (attached to the server call by ``tool_call_id``, never a client result);
``compaction``, ``fallback``, ``container_upload`` and block types we do not know become an
:class:`UnknownPart` with the raw block.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._model import (
    CitationPart,
    FilePart,
    FinishReason,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)

__all__ = [
    "FINISH_REASONS",
    "KNOWN_RAW_TYPES",
    "SERVER_RESULT_TYPES",
    "args_text",
    "block_to_part",
    "citation_from",
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

_json = msgspec.json.Encoder()


def args_text(value: Any) -> str:
    """A tool call's ``input`` object as JSON text (``{}`` when absent)."""
    if value is None:
        return "{}"
    return _json.encode(value).decode()


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def usage_from(raw: Any) -> Usage | None:
    """Map an Anthropic ``usage`` object to canonical usage; only the fields present are set."""
    if not isinstance(raw, dict):
        return None
    details = raw.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        cache_write_tokens=_int(raw.get("cache_creation_input_tokens")),
        cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
        reasoning_tokens=_int(thinking),
        raw=raw,
    )


def citation_from(raw: Any) -> CitationPart:
    """Map an Anthropic citation object (``char_location``, ``web_search_result_location``, ...)."""
    if not isinstance(raw, dict):
        return CitationPart(kind="unknown", raw=raw)
    kind = str(raw.get("type") or "unknown")
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
    url = _str(raw.get("url")) or (_str(raw.get("source")) if kind == "search_result_location" else None)
    return CitationPart(
        kind=kind,
        url=url,
        title=_str(raw.get("title")) or _str(raw.get("document_title")),
        file_id=_str(raw.get("file_id")),
        start=_int(start),
        end=_int(end),
        cited_text=_str(raw.get("cited_text")),
        raw=raw,
    )


def _source_part(kind: str, block: dict[str, Any]) -> Part:
    source = block.get("source")
    if not isinstance(source, dict):
        return UnknownPart(provider_type=kind, raw=block)
    stype = source.get("type")
    media = _str(source.get("media_type"))
    if kind == "image":
        if stype == "base64":
            return ImagePart(data=_str(source.get("data")), media_type=media)
        if stype == "url":
            return ImagePart(url=_str(source.get("url")))
        if stype == "file":
            return ImagePart(file_id=_str(source.get("file_id")))
        return UnknownPart(provider_type=kind, raw=block)
    extra = set(block) - {"type", "source", "title", "cache_control"}
    if extra:
        return UnknownPart(provider_type=kind, raw=block)  # context / citations: keep whole
    title = _str(block.get("title"))
    if stype == "base64":
        return FilePart(data=_str(source.get("data")), media_type=media, filename=title)
    if stype == "url":
        return FilePart(url=_str(source.get("url")), media_type=media, filename=title)
    if stype == "file":
        return FilePart(file_id=_str(source.get("file_id")), filename=title)
    return UnknownPart(provider_type=kind, raw=block)


def _result_content(content: Any) -> list[Part] | str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return [] if content is None else [UnknownPart(provider_type=type(content).__name__, raw=content)]
    return [block_to_part(b) for b in content]


def block_to_part(block: Any) -> Part:
    """Map one complete content block to its canonical part (unknown blocks kept whole)."""
    if not isinstance(block, dict):
        return UnknownPart(provider_type=type(block).__name__, raw=block)
    kind = str(block.get("type") or "")
    if kind == "text":
        citations = block.get("citations")
        notes = [citation_from(c) for c in citations] if isinstance(citations, list) and citations else None
        return TextPart(text=str(block.get("text") or ""), annotations=notes)
    if kind == "thinking":
        return ReasoningPart(
            text=str(block.get("thinking") or ""), signature=_str(block.get("signature")) or None
        )
    if kind == "redacted_thinking":
        return ReasoningPart(redacted=True, data=_str(block.get("data")))
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return ToolCallPart(
            id=str(block.get("id") or ""),
            name=str(block.get("name") or ""),
            arguments=args_text(block.get("input")),
            kind="function" if kind == "tool_use" else "server" if kind == "server_tool_use" else "mcp",
            server_name=_str(block.get("server_name")),
        )
    if kind in ("tool_result", "mcp_tool_result"):
        is_error = block.get("is_error")
        return ToolResultPart(
            tool_call_id=str(block.get("tool_use_id") or ""),
            content=_result_content(block.get("content")),
            is_error=is_error if isinstance(is_error, bool) else None,
        )
    if kind in SERVER_RESULT_TYPES:
        content = block.get("content")
        failed = isinstance(content, dict) and str(content.get("type") or "").endswith("_error")
        return ToolResultPart(
            tool_call_id=str(block.get("tool_use_id") or ""),
            content=[UnknownPart(provider_type=kind, raw=block)],
            is_error=True if failed else None,
        )
    if kind in ("image", "document"):
        return _source_part(kind, block)
    return UnknownPart(provider_type=kind or "unknown", raw=block)
