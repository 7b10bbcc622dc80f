"""OpenAI Responses items → canonical messages and parts: the one reading of items in the package.

The stream decoder, :func:`~._body.decode_response` and the history codec read items with it, so
the three renderings cannot disagree (``_items_write`` is the way back, used by the stream
encoder, the body encoder and the history codec). One Responses item is one canonical
:class:`~maas_stream.Message` whose ``type`` is the item type, whose ``id`` is the item id and
whose ``provider`` is ``openai-responses`` (PROTOCOLS.md §2.5, DESIGN.md "Canonical model"):

* ``message`` → text / refusal parts (annotations as citations, logprobs kept), ``phase`` kept;
  input messages' ``input_text`` / ``input_image`` / ``input_file`` → text / image / file parts.
* ``function_call`` / ``custom_tool_call`` → one tool call (``id`` = ``call_id``, ``item_id`` =
  item id); hosted tools (web / file search, code interpreter, image generation, a hosted
  ``shell_call``, server ``tool_search_call``, ``program``) → a ``server`` tool call; MCP items → an
  ``mcp`` tool call with ``server_name``. A call's ``arguments`` is the input as the provider
  streams it (the code, the program) or, for tools that stream no input, the JSON of the action.
* Calls the client executes (:data:`CLIENT_CALLS`: ``computer_call``, ``local_shell_call``,
  ``shell_call`` with no hosted environment, ``apply_patch_call``, ``tool_search_call`` with
  ``execution: "client"``) → a ``function`` tool call, so a turn that makes one finishes
  ``tool_calls`` and every other protocol presents it as a function call. Kind ``function``, not
  ``custom``: their input is structured (a patch is an operation on a path, a shell call a list of
  commands with limits), and Anthropic and Gemini take only JSON objects. The name is the tool's
  type (``computer``, ``local_shell``, ``shell``, ``apply_patch``, ``tool_search``, the names the
  request's ``tools`` declare); the arguments are the JSON object of the action (``action``, the
  ``operation`` with its ``diff`` last, ``{"actions": [...]}`` for a batch, the search's
  ``arguments``). The item type and all its fields stay in ``Message.type`` / ``provider_raw``, so
  a same-protocol re-encode writes the item as it came. Their ``*_output`` items are tool results
  with the call id, and a tool result of another protocol for such a call goes back as the
  matching ``*_output`` item (:func:`~._items_write.result_item`).
* ``reasoning`` → one reasoning part (summary list, reasoning text, ``encrypted_content``, id),
  byte-exact; ``compaction`` → a reasoning part holding its ``encrypted_content``.
* ``*_output`` items → a ``tool`` message with one tool result.
* Any other type → one unknown part with the whole item.

Fields without a canonical home are kept in ``Message.provider_raw``: the extra keys of the
item types rebuilt from canonical parts, or the whole item for every other type, so a
same-protocol re-encode is lossless.

Odd JSON types in an item never raise: they map to empty or unknown values (bad framing is the
decoders' business). Writing items back is ``_items_write``; this module only reads.

It must not know the stream's event grammar or the response envelope (``_meta``), or write items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ... import _model as canonical
from .._names import OPENAI_RESPONSES as PROTOCOL
from .._openai import citation_from_annotation

if TYPE_CHECKING:
    from ...events import Key

__all__ = [
    "CALL_TYPES",
    "CLIENT_CALLS",
    "OUTPUT_TYPES",
    "REBUILT_TYPES",
    "call_kind",
    "escaped",
    "stream_prefix",
    "content_part",
    "item_message",
    "item_parts",
    "message_status",
]

_json = msgspec.json.Encoder()

CALL_TYPES: Final[dict[str, tuple[canonical.ToolCallKind, str]]] = {
    "function_call": ("function", ""),
    "custom_tool_call": ("custom", ""),
    "mcp_call": ("mcp", ""),
    "mcp_approval_request": ("mcp", ""),
    "mcp_list_tools": ("mcp", "mcp_list_tools"),
    "program": ("server", "program"),
    "web_search_call": ("server", "web_search"),
    "file_search_call": ("server", "file_search"),
    "code_interpreter_call": ("server", "code_interpreter"),
    "image_generation_call": ("server", "image_generation"),
    "computer_call": ("function", "computer"),
    "local_shell_call": ("function", "local_shell"),
    "shell_call": ("function", "shell"),
    "apply_patch_call": ("function", "apply_patch"),
    "tool_search_call": ("server", "tool_search"),
}
"""Item types that are tool calls: their canonical kind and (for built-in tools) tool name.

The kind of a ``shell_call`` and a ``tool_search_call`` depends on the item (:func:`call_kind`)."""

CLIENT_CALLS: Final[dict[str, str]] = {
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
}
"""Built-in tool calls the client executes, with the item type of their result."""

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

_STATUS: Final[dict[str, canonical.MessageStatus]] = {
    "completed": "completed",
    "incomplete": "incomplete",
    "in_progress": "in_progress",
    "failed": "incomplete",
    "cancelled": "incomplete",
}
_PART_STATUS: Final[dict[str, canonical.PartStatus]] = {
    "completed": "completed",
    "incomplete": "incomplete",
    "failed": "incomplete",
    "cancelled": "incomplete",
}


def message_status(status: Any) -> canonical.MessageStatus | None:
    """The canonical status of an item status (``failed`` counts as ``incomplete``)."""
    return _STATUS.get(status) if isinstance(status, str) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _type(value: Any) -> str | None:
    """An item's or part's ``type``, when it is a string (anything else is no type)."""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else _json.encode(value).decode()


# ---------------------------------------------------------------------- items → canonical


def _patch_operation(op: Any) -> Any:
    """A patch operation with its ``diff`` last (it streams, so the JSON grows at its end)."""
    if not isinstance(op, dict) or "diff" not in op:
        return op if op is not None else {}
    return {**{k: v for k, v in op.items() if k != "diff"}, "diff": op["diff"]}


def _shell_action(action: Any) -> Any:
    """A shell action with its ``commands`` first (they stream, so the JSON grows in them)."""
    if not isinstance(action, dict) or "commands" not in action:
        return action if action is not None else {}
    return {"commands": action["commands"], **{k: v for k, v in action.items() if k != "commands"}}


def _call_arguments(kind: str, item: dict[str, Any]) -> str:
    """The call's input as the provider streams it, else the JSON of its action."""
    if kind in ("function_call", "mcp_call", "mcp_approval_request"):
        return _text(item.get("arguments"))
    if kind == "custom_tool_call":
        return _text(item.get("input"))
    if kind in ("code_interpreter_call", "program"):
        return _text(item.get("code"))
    if kind == "apply_patch_call":
        return _text(_patch_operation(item.get("operation")))
    if kind == "shell_call":
        return _text(_shell_action(item.get("action")))
    if kind == "file_search_call":
        return _text({"queries": item.get("queries") or []})
    if kind == "tool_search_call":
        return _text(item.get("arguments") if item.get("arguments") is not None else {})
    if kind == "mcp_list_tools":
        return "{}"
    action = item.get("action")
    if action is None and isinstance(item.get("actions"), list):
        action = {"actions": item["actions"]}  # a batched computer call: still a JSON object
    return _text(action if action is not None else {})


def escaped(text: str) -> str:
    """``text`` as it reads inside a JSON string (pieces escape to pieces of the whole)."""
    return _json.encode(text).decode()[1:-1]


def stream_prefix(kind: str, item: dict[str, Any]) -> str:
    """The start of a streaming client call's JSON arguments, before its first streamed piece.

    ``apply_patch_call``: the operation up to its open ``diff`` string; ``shell_call``: up to the
    open ``commands`` list. The stream decoder sends it as the first arguments delta, then each
    streamed piece :func:`escaped`, so the deltas are always a prefix of the item's final
    arguments (:func:`item_parts`) and every target protocol can stream them as they come.
    """
    if kind == "apply_patch_call":
        op = item.get("operation")
        if not isinstance(op, dict) or op.get("type") == "delete_file":
            return ""
        text = _text(_patch_operation({**op, "diff": ""}))
        return text[:-2]  # without the closing '"}'
    if kind == "shell_call":
        return '{"commands":['  # _shell_action puts them first
    return ""


def call_kind(kind: str, item: dict[str, Any]) -> canonical.ToolCallKind:
    """Who executes a call item.

    A hosted shell (a container environment) and a server tool search run at the provider; the
    other built-in client tools at the client.
    """
    if kind == "shell_call":
        env = item.get("environment")
        hosted = isinstance(env, dict) and env.get("type") not in (None, "local")
        return "server" if hosted else "function"
    if kind == "tool_search_call":
        return "function" if item.get("execution") == "client" else "server"
    return CALL_TYPES[kind][0]


def _call_part(kind: str, item: dict[str, Any]) -> canonical.ToolCallPart:
    _, tool_name = CALL_TYPES[kind]
    item_id = _str(item.get("id"))
    call_id = _str(item.get("call_id")) or item_id or ""
    return canonical.ToolCallPart(
        id=call_id,
        name=_str(item.get("name")) or tool_name,
        arguments=_call_arguments(kind, item),
        kind=call_kind(kind, item),
        item_id=item_id,
        server_name=_str(item.get("server_label")),
        status=_PART_STATUS.get(status) if isinstance(status := item.get("status"), str) else None,
    )


def content_part(raw: Any) -> canonical.Part:
    """Map one message content part (output or input) to a canonical part."""
    kind = _type(raw)
    if not isinstance(raw, dict):
        return canonical.UnknownPart(provider_type=type(raw).__name__, raw=raw)
    if kind in ("output_text", "input_text", "text"):
        annotations = raw.get("annotations")
        logprobs = raw.get("logprobs")
        return canonical.TextPart(
            text=_text(raw.get("text")),
            annotations=[citation_from_annotation(a) for a in annotations]
            if isinstance(annotations, list) and annotations
            else None,
            logprobs=logprobs if isinstance(logprobs, list) and logprobs else None,
        )
    if kind == "refusal":
        return canonical.RefusalPart(text=_text(raw.get("refusal")))
    if kind == "input_image":
        return canonical.ImagePart(
            url=_str(raw.get("image_url")), file_id=_str(raw.get("file_id")), detail=_str(raw.get("detail"))
        )
    if kind == "input_file":
        return canonical.FilePart(
            file_id=_str(raw.get("file_id")),
            url=_str(raw.get("file_url")),
            data=_str(raw.get("file_data")),
            filename=_str(raw.get("filename")),
        )
    if kind == "input_audio" and isinstance(raw.get("input_audio"), dict):
        audio = raw["input_audio"]
        return canonical.AudioPart(data=_str(audio.get("data")), format=_str(audio.get("format")))
    return canonical.UnknownPart(provider_type=str(raw.get("type")), raw=raw)


def _reasoning_part(item: dict[str, Any]) -> canonical.ReasoningPart:
    summary = item.get("summary")
    content = item.get("content")
    texts = (
        [_text(c.get("text")) for c in content if isinstance(c, dict)]
        if isinstance(content, list) and content
        else None
    )
    return canonical.ReasoningPart(
        id=_str(item.get("id")),
        summary=[_text(s.get("text")) if isinstance(s, dict) else _text(s) for s in summary]
        if isinstance(summary, list) and summary
        else None,
        text="".join(texts) if texts else None,
        encrypted_content=_str(item.get("encrypted_content")),
    )


def _result_content(item: dict[str, Any]) -> list[canonical.Part] | str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list) and output and all(_type(o) is not None for o in output):
        return [content_part(o) for o in output]
    if item.get("type") == "tool_search_output":
        return _text(item.get("tools"))
    if item.get("type") == "computer_call_output" and _type(output) == "computer_screenshot":
        assert isinstance(output, dict)
        url, file_id = _str(output.get("image_url")), _str(output.get("file_id"))
        if url is not None or file_id is not None:
            return [canonical.ImagePart(url=url, file_id=file_id)]
    if item.get("type") == "mcp_approval_response":
        return _text({"approve": item.get("approve"), "reason": item.get("reason")})
    return _text(output if output is not None else item.get("result"))


def _call_parts(kind: str, item: dict[str, Any]) -> list[tuple[Key, canonical.Part]]:
    call = _call_part(kind, item)
    parts: list[tuple[Key, canonical.Part]] = [("call", call)]
    if kind == "mcp_call" and (item.get("output") is not None or item.get("error") is not None):
        error = item.get("error")
        result = canonical.ToolResultPart(
            tool_call_id=call.id,
            name=call.name,
            content=_text(item.get("output") if error is None else error),
            is_error=True if error is not None else None,
        )
        parts.append(("result", result))
    elif kind == "image_generation_call" and isinstance(item.get("result"), str):
        fmt = _str(item.get("output_format"))
        parts.append(
            ("image", canonical.ImagePart(data=item["result"], media_type=f"image/{fmt}" if fmt else None))
        )
    return parts


def item_parts(item: Any) -> list[tuple[Key, canonical.Part]]:
    """The canonical parts of one item, each with the part key the stream decoder uses.

    Keys: a message's content index; ``"reasoning"``; ``"call"`` for the tool call, ``"result"``
    for a hosted tool's result and ``"image"`` for a generated image; ``"unknown"``.
    """
    if not isinstance(item, dict):
        return [("unknown", canonical.UnknownPart(provider_type=type(item).__name__, raw=item))]
    kind = _type(item)
    if kind == "message" or (item.get("type") is None and "role" in item):
        content = item.get("content")
        if isinstance(content, str):
            return [(0, canonical.TextPart(text=content))]
        return [(i, content_part(c)) for i, c in enumerate(content)] if isinstance(content, list) else []
    if kind == "reasoning":
        return [("reasoning", _reasoning_part(item))]
    if kind == "compaction":
        compaction = canonical.ReasoningPart(
            id=_str(item.get("id")),
            encrypted_content=_str(item.get("encrypted_content")),
            format="compaction",
        )
        return [("reasoning", compaction)]
    if kind in CALL_TYPES:
        return _call_parts(kind, item)
    if kind in OUTPUT_TYPES:
        call_id = (
            _str(item.get("call_id")) or _str(item.get("approval_request_id")) or _str(item.get("id")) or ""
        )
        failed = kind == "apply_patch_call_output" and item.get("status") == "failed"
        result = canonical.ToolResultPart(
            tool_call_id=call_id, content=_result_content(item), is_error=True if failed else None
        )
        return [("result", result)]
    return [("unknown", canonical.UnknownPart(provider_type=str(item.get("type")), raw=item))]


def item_message(item: Any, parts: list[canonical.Part] | None = None) -> canonical.Message:
    """The canonical message of one item (``parts``, when given, is its content)."""
    if not isinstance(item, dict):
        return canonical.Message(role="assistant", content=parts or [], provider=PROTOCOL, provider_raw=item)
    kind = _type(item) or ("message" if "role" in item else None)
    known = _KNOWN_KEYS.get(kind) if kind is not None else None
    raw: Any = item
    if known is not None:
        raw = {k: v for k, v in item.items() if k not in known} or None
    role: Any = "tool" if kind in OUTPUT_TYPES else "assistant"
    if kind == "message":
        item_role = item.get("role")
        role = item_role if item_role in ("user", "system", "developer", "assistant") else "assistant"
    phase = item.get("phase")
    content = parts if parts is not None else [p for _, p in item_parts(item)]
    call_id = _str(item.get("call_id"))
    if role == "tool" and call_id is None:  # local_shell_call_output: its id is the call's
        call_id = next((p.tool_call_id for p in content if isinstance(p, canonical.ToolResultPart)), None)
    return canonical.Message(
        role=role,
        content=content,
        id=_str(item.get("id")),
        type=kind,
        status=message_status(item.get("status")),
        phase=phase if phase in ("commentary", "final_answer") else None,
        tool_call_id=call_id if role == "tool" else None,
        provider=PROTOCOL,
        provider_raw=raw,
    )
