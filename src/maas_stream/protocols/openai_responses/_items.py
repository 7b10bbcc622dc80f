"""OpenAI Responses items ↔ canonical messages and parts (shared by the stream and history codecs).

One Responses item is one canonical :class:`~maas_stream.Message` whose ``type`` is the item type
and whose ``id`` is the item id (PROTOCOLS.md §2.5, DESIGN.md "Canonical model"):

* ``message`` → text / refusal parts (annotations as citations, logprobs kept), ``phase`` kept;
  input messages' ``input_text`` / ``input_image`` / ``input_file`` → text / image / file parts.
* ``function_call`` / ``custom_tool_call`` → one tool call (``id`` = ``call_id``, ``item_id`` =
  item id); hosted tools (web / file search, code interpreter, image generation, computer, shell,
  apply_patch, tool search) → a ``server`` tool call; MCP items → an ``mcp`` tool call with
  ``server_name``. A call's ``arguments`` is the input as the provider streams it (the code, the
  diff, the shell commands) or, for tools that stream no input, the JSON of the action.
* ``reasoning`` → one reasoning part (summary list, reasoning text, ``encrypted_content``, id),
  byte-exact; ``compaction`` → a reasoning part holding its ``encrypted_content``.
* ``*_output`` items → a ``tool`` message with one tool result.
* Any other type → one unknown part with the whole item.

Fields without a canonical home are kept in ``Message.provider_raw``: the extra keys of the
item types rebuilt from canonical parts, or the whole item for every other type, so a
same-protocol re-encode is lossless.

It must not know the stream's event grammar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._model import (
    AudioPart,
    CitationPart,
    FilePart,
    ImagePart,
    Message,
    MessageStatus,
    Part,
    PartStatus,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallKind,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)
from ..openai_chat._decode import citation_from_annotation

if TYPE_CHECKING:
    from ...events import Key

__all__ = [
    "CALL_TYPES",
    "REBUILT_TYPES",
    "annotation_from_citation",
    "call_item",
    "content_part",
    "item_message",
    "item_parts",
    "message_status",
    "reasoning_item",
]

_json = msgspec.json.Encoder()

CALL_TYPES: Final[dict[str, tuple[ToolCallKind, str]]] = {
    "function_call": ("function", ""),
    "custom_tool_call": ("custom", ""),
    "mcp_call": ("mcp", ""),
    "mcp_approval_request": ("mcp", ""),
    "mcp_list_tools": ("mcp", "mcp_list_tools"),
    "web_search_call": ("server", "web_search"),
    "file_search_call": ("server", "file_search"),
    "code_interpreter_call": ("server", "code_interpreter"),
    "image_generation_call": ("server", "image_generation"),
    "computer_call": ("server", "computer"),
    "local_shell_call": ("server", "local_shell"),
    "shell_call": ("server", "shell"),
    "apply_patch_call": ("server", "apply_patch"),
    "tool_search_call": ("server", "tool_search"),
}
"""Item types that are tool calls: their canonical kind and (for hosted tools) tool name."""

OUTPUT_TYPES: Final = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "tool_search_output",
        "mcp_approval_response",
        "program_output",
    }
)
"""Item types that are tool results."""

_KNOWN_KEYS: Final[dict[str, frozenset[str]]] = {
    "message": frozenset({"id", "type", "role", "status", "phase", "content"}),
    "function_call": frozenset({"id", "type", "status", "call_id", "name", "arguments"}),
    "custom_tool_call": frozenset({"id", "type", "status", "call_id", "name", "input"}),
    "reasoning": frozenset({"id", "type", "status", "summary", "content", "encrypted_content"}),
}
REBUILT_TYPES: Final = frozenset(_KNOWN_KEYS)
"""Item types rebuilt from canonical parts; only their extra keys go to ``provider_raw``."""

_STATUS: Final[dict[str, MessageStatus]] = {
    "completed": "completed",
    "incomplete": "incomplete",
    "in_progress": "in_progress",
    "failed": "incomplete",
    "cancelled": "incomplete",
}
_PART_STATUS: Final[dict[str, PartStatus]] = {
    "completed": "completed",
    "incomplete": "incomplete",
    "failed": "incomplete",
    "cancelled": "incomplete",
}


def message_status(status: Any) -> MessageStatus | None:
    """The canonical status of an item status (``failed`` counts as ``incomplete``)."""
    return _STATUS.get(status) if isinstance(status, str) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else _json.encode(value).decode()


def _call_arguments(kind: str, item: dict[str, Any]) -> str:
    """The call's input as the provider streams it, else the JSON of its action."""
    if kind in ("function_call", "mcp_call", "mcp_approval_request"):
        return _text(item.get("arguments"))
    if kind == "custom_tool_call":
        return _text(item.get("input"))
    if kind == "code_interpreter_call":
        return _text(item.get("code"))
    if kind == "apply_patch_call":
        op = item.get("operation")
        return _text(op.get("diff")) if isinstance(op, dict) else ""
    if kind == "shell_call":
        action = item.get("action")
        commands = action.get("commands") if isinstance(action, dict) else None
        return "\n".join(c for c in commands if isinstance(c, str)) if isinstance(commands, list) else ""
    if kind == "file_search_call":
        return _text({"queries": item.get("queries") or []})
    if kind == "tool_search_call":
        return _text(item.get("arguments") if item.get("arguments") is not None else {})
    if kind == "mcp_list_tools":
        return "{}"
    action = item.get("action", item.get("actions"))
    return _text(action if action is not None else {})


def _call_part(kind: str, item: dict[str, Any]) -> ToolCallPart:
    call_kind, tool_name = CALL_TYPES[kind]
    item_id = _str(item.get("id"))
    call_id = _str(item.get("call_id")) or item_id or ""
    return ToolCallPart(
        id=call_id,
        name=_str(item.get("name")) or tool_name,
        arguments=_call_arguments(kind, item),
        kind=call_kind,
        item_id=item_id,
        server_name=_str(item.get("server_label")),
        status=_PART_STATUS.get(status) if isinstance(status := item.get("status"), str) else None,
    )


def content_part(raw: Any) -> Part:
    """Map one message content part (output or input) to a canonical part."""
    if not isinstance(raw, dict):
        return UnknownPart(provider_type=type(raw).__name__, raw=raw)
    kind = raw.get("type")
    if kind in ("output_text", "input_text", "text"):
        annotations = raw.get("annotations")
        logprobs = raw.get("logprobs")
        return TextPart(
            text=_text(raw.get("text")),
            annotations=[citation_from_annotation(a) for a in annotations] if annotations else None,
            logprobs=logprobs if logprobs else None,
        )
    if kind == "refusal":
        return RefusalPart(text=_text(raw.get("refusal")))
    if kind == "input_image":
        return ImagePart(
            url=_str(raw.get("image_url")), file_id=_str(raw.get("file_id")), detail=_str(raw.get("detail"))
        )
    if kind == "input_file":
        return FilePart(
            file_id=_str(raw.get("file_id")),
            url=_str(raw.get("file_url")),
            data=_str(raw.get("file_data")),
            filename=_str(raw.get("filename")),
        )
    if kind == "input_audio" and isinstance(raw.get("input_audio"), dict):
        audio = raw["input_audio"]
        return AudioPart(data=_str(audio.get("data")), format=_str(audio.get("format")))
    return UnknownPart(provider_type=str(kind), raw=raw)


def _reasoning_part(item: dict[str, Any]) -> ReasoningPart:
    summary = item.get("summary")
    content = item.get("content")
    texts = (
        [c.get("text") or "" for c in content if isinstance(c, dict)]
        if isinstance(content, list) and content
        else None
    )
    return ReasoningPart(
        id=_str(item.get("id")),
        summary=[_text(s.get("text")) if isinstance(s, dict) else _text(s) for s in summary]
        if summary
        else None,
        text="".join(texts) if texts else None,
        encrypted_content=_str(item.get("encrypted_content")),
    )


def _result_content(item: dict[str, Any]) -> list[Part] | str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(o, dict) and "type" in o for o in output) and output:
        return [content_part(o) for o in output]
    if item.get("type") == "tool_search_output":
        return _text(item.get("tools"))
    if item.get("type") == "mcp_approval_response":
        return _text({"approve": item.get("approve"), "reason": item.get("reason")})
    return _text(output if output is not None else item.get("result"))


def item_parts(item: Any) -> list[tuple[Key, Part]]:
    """The canonical parts of one item, each with the part key the stream decoder uses.

    Keys: a message's content index; ``"reasoning"``; ``"call"`` for the tool call, ``"result"``
    for a hosted tool's result and ``"image"`` for a generated image; ``"unknown"``.
    """
    if not isinstance(item, dict):
        return [("unknown", UnknownPart(provider_type=type(item).__name__, raw=item))]
    kind = item.get("type")
    if kind == "message" or (kind is None and "role" in item):
        content = item.get("content")
        if isinstance(content, str):
            return [(0, TextPart(text=content))]
        return [(i, content_part(c)) for i, c in enumerate(content)] if isinstance(content, list) else []
    if kind == "reasoning":
        return [("reasoning", _reasoning_part(item))]
    if kind == "compaction":
        return [
            (
                "reasoning",
                ReasoningPart(
                    id=_str(item.get("id")),
                    encrypted_content=_str(item.get("encrypted_content")),
                    format="compaction",
                ),
            )
        ]
    if isinstance(kind, str) and kind in CALL_TYPES:
        call = _call_part(kind, item)
        parts: list[tuple[Key, Part]] = [("call", call)]
        if kind == "mcp_call" and (item.get("output") is not None or item.get("error") is not None):
            error = item.get("error")
            parts.append(
                (
                    "result",
                    ToolResultPart(
                        tool_call_id=call.id,
                        name=call.name,
                        content=_text(item.get("output") if error is None else error),
                        is_error=True if error is not None else None,
                    ),
                )
            )
        elif kind == "image_generation_call" and isinstance(item.get("result"), str):
            fmt = _str(item.get("output_format"))
            parts.append(
                ("image", ImagePart(data=item["result"], media_type=f"image/{fmt}" if fmt else None))
            )
        return parts
    if isinstance(kind, str) and kind in OUTPUT_TYPES:
        call_id = (
            _str(item.get("call_id")) or _str(item.get("approval_request_id")) or _str(item.get("id")) or ""
        )
        return [("result", ToolResultPart(tool_call_id=call_id, content=_result_content(item)))]
    return [("unknown", UnknownPart(provider_type=str(kind), raw=item))]


def item_message(item: Any, parts: list[Part] | None = None) -> Message:
    """The canonical message of one item (``parts``, when given, is its content)."""
    if not isinstance(item, dict):
        return Message(role="assistant", content=parts or [], provider_raw=item)
    kind_raw = item.get("type") or ("message" if "role" in item else None)
    kind = kind_raw if isinstance(kind_raw, str) else None
    known = _KNOWN_KEYS.get(kind) if kind is not None else None
    if known is not None:
        extras = {k: v for k, v in item.items() if k not in known}
        raw: Any = extras or None
    else:
        raw = item
    role: Any = "tool" if kind in OUTPUT_TYPES else "assistant"
    if kind == "message":
        item_role = item.get("role")
        role = item_role if item_role in ("user", "system", "developer", "assistant") else "assistant"
    phase = item.get("phase")
    return Message(
        role=role,
        content=parts if parts is not None else [p for _, p in item_parts(item)],
        id=_str(item.get("id")),
        type=kind,
        status=message_status(item.get("status")),
        phase=phase if phase in ("commentary", "final_answer") else None,
        tool_call_id=_str(item.get("call_id")) if role == "tool" else None,
        provider_raw=raw,
    )


# ---------------------------------------------------------------------- canonical → items

_ANNOTATION_TYPES: Final = frozenset(
    {"url_citation", "file_citation", "container_file_citation", "file_path"}
)


def annotation_from_citation(citation: CitationPart) -> dict[str, Any] | None:
    """A Responses annotation for a citation, or ``None`` when Responses has no shape for it."""
    raw = citation.raw
    if isinstance(raw, dict) and raw.get("type") in _ANNOTATION_TYPES:
        inner = raw.get(raw["type"])
        if isinstance(inner, dict):  # Chat's nested url_citation: flatten it
            return {"type": raw["type"], **inner}
        return raw
    if citation.url is not None:
        return {
            "type": "url_citation",
            "url": citation.url,
            "title": citation.title or "",
            "start_index": citation.start if citation.start is not None else 0,
            "end_index": citation.end if citation.end is not None else 0,
        }
    if citation.file_id is not None:
        return {
            "type": "file_citation",
            "file_id": citation.file_id,
            "filename": citation.title or "",
            "index": 0,
        }
    return None


def text_json(part: TextPart, lossy: list[str] | None = None) -> dict[str, Any]:
    """An ``output_text`` content part."""
    annotations: list[dict[str, Any]] = []
    for citation in part.annotations or ():
        annotation = annotation_from_citation(citation)
        if annotation is not None:
            annotations.append(annotation)
        elif lossy is not None:
            lossy.append(f"citation of kind {citation.kind!r} (no Responses annotation for it)")
    body: dict[str, Any] = {"type": "output_text", "text": part.text, "annotations": annotations}
    if part.logprobs:
        body["logprobs"] = part.logprobs
    return body


def call_item(part: ToolCallPart, status: str | None, extras: Any = None) -> dict[str, Any]:
    """A ``function_call`` or ``custom_tool_call`` item for a tool call."""
    item: dict[str, Any] = dict(extras) if isinstance(extras, dict) else {}
    if part.kind == "custom":
        item.update(type="custom_tool_call", call_id=part.id, name=part.name, input=part.arguments)
    else:
        item.update(type="function_call", call_id=part.id, name=part.name, arguments=part.arguments)
    if part.item_id is not None:
        item["id"] = part.item_id
    if status is not None:
        item["status"] = status
    return item


def reasoning_item(part: ReasoningPart, status: str | None, extras: Any = None) -> dict[str, Any]:
    """A ``reasoning`` (or, for a compaction part, ``compaction``) item."""
    item: dict[str, Any] = dict(extras) if isinstance(extras, dict) else {}
    if part.format == "compaction":
        item.update(type="compaction", id=part.id, encrypted_content=part.encrypted_content)
        return item
    item["type"] = "reasoning"
    if part.id is not None:
        item["id"] = part.id
    item["summary"] = [{"type": "summary_text", "text": s} for s in part.summary or ()]
    if part.text is not None:
        item["content"] = [{"type": "reasoning_text", "text": part.text}]
    if part.encrypted_content is not None:
        item["encrypted_content"] = part.encrypted_content
    if status is not None:
        item["status"] = status
    return item
