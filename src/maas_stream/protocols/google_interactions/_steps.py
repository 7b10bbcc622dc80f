"""Interactions steps and content ↔ canonical parts.

This is the mapping shared by the decoder, the encoder and the history codec.

A step becomes one canonical :class:`~maas_stream.Message` whose ``type`` is the step type:

* ``thought`` → a reasoning part (``signature`` and ``summary`` byte-exact);
* ``model_output`` → its content items as text / image / audio / file parts;
* ``function_call`` → a ``function`` tool call (``arguments`` as JSON text, a ``signature`` kept
  when the step has one, even an empty one);
* ``function_result`` → a ``tool`` message with a tool result;
* built-in tool calls (``google_search_call``, ``code_execution_call``, ...) → a ``server`` tool
  call named after the tool; ``mcp_server_tool_call`` → an ``mcp`` call;
* built-in results and any other step type → an ``unknown`` part holding the whole step.

It must not hold stream state.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._model import (
    AudioPart,
    CitationPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)

__all__ = [
    "BUILTIN_TOOLS",
    "citation_from",
    "is_step",
    "content_from_part",
    "message_from_step",
    "part_from_content",
    "step_kind",
    "steps_from_message",
    "usage_from",
]

BUILTIN_TOOLS: Final = frozenset(
    {
        "google_search",
        "code_execution",
        "url_context",
        "file_search",
        "google_maps",
        "retrieval",
        "computer_use",
    }
)
"""Server-side tools whose steps are ``<tool>_call`` / ``<tool>_result``."""

_json = msgspec.json.Encoder()
_MEDIA: Final = frozenset({"image", "audio", "document", "video"})


def is_step(raw: Any) -> bool:
    """Whether ``raw`` looks like an Interactions step object (a kept whole step)."""
    if not isinstance(raw, dict):
        return False
    kind = raw.get("type")
    return isinstance(kind, str) and (kind in _STEP_TYPES or kind.endswith(("_call", "_result")))


_STEP_TYPES: Final = frozenset({"user_input", "model_output", "thought", "function_call", "function_result"})


def step_kind(step_type: str) -> str:
    """Classify a step type.

    Returns ``thought``, ``output``, ``call``, ``server_call``, ``mcp_call``, ``result``
    (function result) or ``whole`` (kept as one unknown part).
    """
    if step_type == "thought":
        return "thought"
    if step_type == "model_output":
        return "output"
    if step_type == "function_call":
        return "call"
    if step_type == "function_result":
        return "result"
    if step_type == "mcp_server_tool_call":
        return "mcp_call"
    if step_type.endswith("_call") and step_type[:-5] in BUILTIN_TOOLS:
        return "server_call"
    return "whole"


def usage_from(raw: Any) -> Usage | None:
    """Map an Interactions ``usage`` object to canonical usage."""
    if not isinstance(raw, dict):
        return None
    return Usage(
        input_tokens=_int(raw.get("total_input_tokens")),
        output_tokens=_int(raw.get("total_output_tokens")),
        total_tokens=_int(raw.get("total_tokens")),
        reasoning_tokens=_int(raw.get("total_thought_tokens")),
        cache_read_tokens=_int(raw.get("total_cached_tokens")),
        raw=raw,
    )


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def citation_from(raw: Any) -> CitationPart:
    """Map an annotation (``url_citation``, ``file_citation``, ``place_citation``, ...)."""
    if not isinstance(raw, dict):
        return CitationPart(kind="unknown", raw=raw)
    kind = str(raw.get("type") or "unknown")
    start = raw.get("start_index")
    end = raw.get("end_index")
    return CitationPart(
        kind=kind,
        url=_str(raw.get("url")) or _str(raw.get("document_uri")),
        title=_str(raw.get("title")) or _str(raw.get("file_name")) or _str(raw.get("name")),
        start=start if type(start) is int else None,
        end=end if type(end) is int else None,
        raw=raw,
    )


def part_from_content(content: Any) -> Part:
    """Map one Content item (``text``, ``image``, ``audio``, ``document``, ``video``) to a part."""
    if not isinstance(content, dict):
        return UnknownPart(provider_type="content", raw=content)
    kind = content.get("type")
    if kind == "text" and isinstance(content.get("text"), str):
        annotations = content.get("annotations")
        return TextPart(
            text=content["text"],
            annotations=[citation_from(a) for a in annotations] if isinstance(annotations, list) else None,
        )
    if kind == "image" and set(content) <= {"type", "data", "uri", "mime_type"}:
        return ImagePart(
            data=_str(content.get("data")),
            url=_str(content.get("uri")),
            media_type=_str(content.get("mime_type")),
        )
    if kind == "audio" and set(content) <= {"type", "data", "mime_type"}:
        return AudioPart(data=_str(content.get("data")), format=_str(content.get("mime_type")))
    if kind == "document" and set(content) <= {"type", "data", "uri", "mime_type"}:
        return FilePart(
            data=_str(content.get("data")),
            url=_str(content.get("uri")),
            media_type=_str(content.get("mime_type")),
        )
    return UnknownPart(provider_type=str(kind or "content"), raw=content)


def content_from_part(part: Part) -> dict[str, Any] | None:
    """Map a part back to a Content item; ``None`` when Content cannot carry it."""
    if isinstance(part, TextPart):
        out: dict[str, Any] = {"type": "text", "text": part.text}
        if part.annotations:
            out["annotations"] = [annotation_from(c) for c in part.annotations]
        return out
    if isinstance(part, ImagePart):
        return _media("image", part.data, part.url, part.media_type)
    if isinstance(part, AudioPart):
        return _media("audio", part.data, None, part.format)
    if isinstance(part, FilePart):
        return _media("document", part.data, part.url, part.media_type)
    if (
        isinstance(part, UnknownPart)
        and isinstance(part.raw, dict)
        and part.raw.get("type") in _MEDIA | {"text"}
    ):
        return part.raw
    return None


def _media(kind: str, data: str | None, uri: str | None, mime: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind}
    if data is not None:
        out["data"] = data
    if uri is not None:
        out["uri"] = uri
    if mime is not None:
        out["mime_type"] = mime
    return out


def annotation_from(citation: CitationPart) -> Any:
    """The wire annotation of a citation (its raw object when it came from Interactions)."""
    if isinstance(citation.raw, dict) and citation.raw.get("type") == citation.kind:
        return citation.raw
    out: dict[str, Any] = {"type": "url_citation"}
    if citation.url is not None:
        out["url"] = citation.url
    if citation.title is not None:
        out["title"] = citation.title
    if citation.start is not None:
        out["start_index"] = citation.start
    if citation.end is not None:
        out["end_index"] = citation.end
    return out


def arguments_text(value: Any) -> str:
    """A step's ``arguments`` object as JSON text (empty when absent)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _json.encode(value).decode()


def arguments_object(text: str) -> Any:
    """JSON text back to the ``arguments`` object (``{}`` for empty text; invalid JSON stays text)."""
    if not text:
        return {}
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


def result_content(result: Any) -> list[Part] | str:
    """A ``function_result.result`` as tool-result content (objects as JSON text)."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(
        isinstance(c, dict) and c.get("type") in _MEDIA | {"text"} for c in result
    ):
        return [part_from_content(c) for c in result]
    return _json.encode(result).decode()


def result_wire(content: list[Part] | str) -> Any:
    """Tool-result content back to a ``result`` value."""
    if isinstance(content, str):
        return content
    out = [content_from_part(p) for p in content]
    return [c for c in out if c is not None]


def message_from_step(step: dict[str, Any]) -> Message:
    """One whole step → one canonical message (history and non-streamed steps)."""
    kind = str(step.get("type") or "")
    sk = step_kind(kind)
    if sk == "thought":
        summary = step.get("summary")
        texts = [c.get("text") for c in summary if isinstance(c, dict)] if isinstance(summary, list) else None
        return Message(
            role="assistant",
            type=kind,
            content=[
                ReasoningPart(
                    signature=_str(step.get("signature")),
                    summary=[t for t in texts if isinstance(t, str)] if texts is not None else None,
                )
            ],
        )
    if sk == "output":
        content = step.get("content")
        parts = [part_from_content(c) for c in content] if isinstance(content, list) else []
        return Message(role="assistant", type=kind, content=parts)
    if sk in ("call", "server_call", "mcp_call"):
        return Message(role="assistant", type=kind, content=[call_from_step(step)])
    if sk == "result":
        call_id = str(step.get("call_id") or "")
        is_error = step.get("is_error")
        part = ToolResultPart(
            tool_call_id=call_id,
            content=result_content(step.get("result")),
            name=_str(step.get("name")),
            is_error=is_error if isinstance(is_error, bool) else None,
        )
        return Message(role="tool", type=kind, content=[part], tool_call_id=call_id)
    if kind == "user_input":
        content = step.get("content")
        parts = [part_from_content(c) for c in content] if isinstance(content, list) else []
        return Message(role="user", type=kind, content=parts)
    return Message(role="assistant", type=kind, content=[UnknownPart(provider_type=kind, raw=step)])


def call_from_step(step: dict[str, Any]) -> ToolCallPart:
    """A call step (function, built-in or MCP) → a tool-call part."""
    kind = str(step.get("type") or "")
    sk = step_kind(kind)
    signature = _str(step.get("signature"))
    if sk == "call":
        return ToolCallPart(
            id=str(step.get("id") or ""),
            name=str(step.get("name") or ""),
            arguments=arguments_text(step.get("arguments")),
            signature=signature,
        )
    if sk == "mcp_call":
        return ToolCallPart(
            id=str(step.get("id") or ""),
            name=str(step.get("name") or ""),
            arguments=arguments_text(step.get("arguments")),
            kind="mcp",
            server_name=_str(step.get("server_name")),
            signature=signature,
        )
    return ToolCallPart(
        id=str(step.get("id") or ""),
        name=kind[:-5],
        arguments=arguments_text(step.get("arguments")),
        kind="server",
        signature=signature,
    )


def step_from_call(part: ToolCallPart, extra: Any = None) -> dict[str, Any] | None:
    """A tool-call part → its step; ``None`` for a server tool Interactions does not have."""
    step: dict[str, Any]
    if part.kind == "server":
        if part.name not in BUILTIN_TOOLS:
            return None
        step = {"type": f"{part.name}_call", "id": part.id}
        if part.arguments:
            step["arguments"] = arguments_object(part.arguments)
    elif part.kind == "mcp":
        step = {"type": "mcp_server_tool_call", "id": part.id, "name": part.name}
        if part.server_name is not None:
            step["server_name"] = part.server_name
        step["arguments"] = arguments_object(part.arguments)
    else:
        step = {"type": "function_call", "id": part.id, "name": part.name}
        step["arguments"] = arguments_object(part.arguments)
    if part.signature is not None:
        step["signature"] = part.signature
    if isinstance(extra, dict):
        for key, value in extra.items():
            step.setdefault(key, value)
    return step


def steps_from_message(message: Message, lossy: list[str] | None, index: int) -> list[dict[str, Any]]:
    """One canonical message → the steps that carry it (history direction)."""
    content = message.content
    if isinstance(content, str):
        kind = "user_input" if message.role in ("user", "system", "developer") else "model_output"
        return [{"type": kind, "content": [{"type": "text", "text": content}]}]
    steps: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    out_kind = "user_input" if message.role in ("user", "system", "developer") else "model_output"

    def flush() -> None:
        if pending:
            steps.append({"type": out_kind, "content": list(pending)})
            pending.clear()

    for part in content:
        item = content_from_part(part)
        if item is not None:
            pending.append(item)
            continue
        flush()
        step = _step_of_part(part, message, lossy, index)
        if step is not None:
            steps.append(step)
    flush()
    if not steps and message.type == "model_output":
        steps.append({"type": "model_output", "content": []})
    return steps


def _step_of_part(part: Part, message: Message, lossy: list[str] | None, index: int) -> dict[str, Any] | None:
    if isinstance(part, ReasoningPart):
        step: dict[str, Any] = {"type": "thought"}
        if part.signature is not None:
            step["signature"] = part.signature
        if part.summary is not None:
            step["summary"] = [{"type": "text", "text": s} for s in part.summary]
        elif part.text:
            step["summary"] = [{"type": "text", "text": part.text}]
        if (part.encrypted_content or part.data) and lossy is not None:
            lossy.append(
                f"messages[{index}]: encrypted or redacted reasoning has no Interactions form; dropped"
            )
        return step
    if isinstance(part, ToolCallPart):
        found = step_from_call(part)
        if found is None and lossy is not None:
            lossy.append(
                f"messages[{index}]: server tool call {part.name!r} ({part.id}) has no Interactions form"
            )
        return found
    if isinstance(part, ToolResultPart):
        result: dict[str, Any] = {"type": "function_result", "call_id": part.tool_call_id}
        if part.name is not None:
            result["name"] = part.name
        result["result"] = result_wire(part.content)
        if part.is_error is not None:
            result["is_error"] = part.is_error
        return result
    if isinstance(part, UnknownPart) and is_step(part.raw):
        return dict(part.raw)
    if lossy is not None:
        lossy.append(
            f"messages[{index}]: a {part.__struct_config__.tag} part has no Interactions step; dropped"
        )
    return None
