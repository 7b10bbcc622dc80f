"""Canonical messages and parts → OpenAI Responses items: the one writing of items in the package.

The stream encoder, the body encoder and the history codec write items with it, so the three
renderings cannot disagree (``_items`` is the way in). Text and refusals are ``message`` content,
client calls are their own ``function_call`` / ``custom_tool_call`` items (:func:`output_route`),
reasoning is replayed only where :func:`~maas_stream.protocols._replay.replayable` allows it, and
everything else is dropped and recorded with the kind that fits (:func:`drop_part`). A tool
result for a built-in client call goes back as the matching ``*_output`` item
(:func:`result_item`); citations become Responses annotations where Responses has a shape for
them.

It must not read items (``_items``), know the stream's event grammar or the response envelope
(``_meta``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from ... import _model as canonical
from ._items import CLIENT_CALLS, REBUILT_TYPES, _type

if TYPE_CHECKING:
    from ..._drops import DropKind, DropLog
    from ._output import Item

__all__ = [
    "annotation_from_citation",
    "call_item",
    "content_json",
    "drop_part",
    "drop_signature",
    "dropped_signature",
    "input_content_json",
    "message_item",
    "output_route",
    "reasoning_drops",
    "reasoning_item",
    "result_item",
    "text_json",
    "whole_item_body",
]


Route = Literal["text", "refusal", "call", "reasoning"]


def output_route(part: canonical.Part, *, replay: bool) -> Route | None:
    """Where a part of an assistant message goes in a Responses output (``None``: dropped).

    Text and refusals are ``message`` content; function and custom calls are items of their own;
    reasoning is a ``reasoning`` item only when ``replay`` (its origin is Responses, see
    :func:`~maas_stream.protocols._replay.replayable`). Anything else has no output item here
    and goes to :func:`drop_part`.
    """
    if isinstance(part, canonical.TextPart):
        return "text"
    if isinstance(part, canonical.RefusalPart):
        return "refusal"
    if isinstance(part, canonical.ToolCallPart) and part.kind in ("function", "custom"):
        return "call"
    if isinstance(part, canonical.ReasoningPart) and replay:
        return "reasoning"
    return None


def reasoning_drops(part: canonical.ReasoningPart) -> list[tuple[DropKind, str]]:
    """The drops of a reasoning part Responses may not replay (one per kind of content held)."""
    out: list[tuple[DropKind, str]] = []
    if part.text or part.summary:
        out.append(
            ("reasoning", "reasoning of another protocol (Responses replays only its own reasoning items)")
        )
    if part.signature:
        out.append(("signature", "reasoning signature of another protocol (Responses has no field for it)"))
    if part.encrypted_content or part.data or part.redacted:
        out.append(
            (
                "encrypted_reasoning",
                "encrypted or redacted reasoning of another protocol (Responses replays only its own)",
            )
        )
    return out or [
        ("reasoning", "empty reasoning block of another protocol (Responses replays only its own)")
    ]


_PART_KINDS: Final[dict[type[Any], DropKind]] = {
    canonical.ImagePart: "media",
    canonical.AudioPart: "media",
    canonical.FilePart: "media",
    canonical.CodePart: "code",
    canonical.CitationPart: "citation",
    canonical.ToolResultPart: "tool_result",
    canonical.TextPart: "field",
    canonical.RefusalPart: "refusal",
}


def drop_part(
    drops: DropLog, part: canonical.Part, *, where: str | None = None, place: str = "output"
) -> None:
    """Record that ``part`` was dropped, with the kind that fits it.

    Args:
        drops: The conversion's drop log.
        part: The part Responses has no place for.
        where: Its location (``messages[3]``); a call's id is used for a call.
        place: ``output`` or ``input`` (the wording of the reason).
    """
    if isinstance(part, canonical.ReasoningPart):
        for kind, what in reasoning_drops(part):
            drops.add(kind, what, where=where or part.id)
        return
    if isinstance(part, canonical.ToolCallPart):
        what = f"{part.kind} tool call {part.name!r} of another protocol (Responses runs only its own hosted tools)"
        drops.add("server_call", what, where=part.id or where)
        return
    if isinstance(part, canonical.UnknownPart):
        drops.add("unknown", f"unknown {part.provider_type!r} part of another protocol", where=where)
        return
    tag = part.__struct_config__.tag
    drops.add(
        _PART_KINDS.get(type(part), "field"), f"{tag} part (no Responses {place} item for it)", where=where
    )


def dropped_signature(part: canonical.Part) -> str | None:
    """What a kept text or call part's signature drop says, if it has one (Responses has no field for it)."""
    if isinstance(part, canonical.TextPart | canonical.ToolCallPart) and part.signature:
        return f"signature on a {part.__struct_config__.tag} part (Responses has no field for it)"
    return None


def drop_signature(drops: DropLog, part: canonical.Part, *, where: str | None = None) -> None:
    """Record the signature of a text or call part that is kept (:func:`dropped_signature`)."""
    what = dropped_signature(part)
    if what is not None:
        drops.add("signature", what, where=where)


def annotation_from_citation(citation: canonical.CitationPart) -> dict[str, Any] | None:
    """A Responses annotation for a citation, or ``None`` when Responses has no shape for it."""
    raw = citation.raw
    kind = _type(raw)
    if isinstance(raw, dict) and kind in _ANNOTATION_TYPES:
        inner = raw.get(kind)
        if isinstance(inner, dict):  # Chat's nested url_citation: flatten it
            return {"type": kind, **inner}
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


_ANNOTATION_TYPES: Final = frozenset(
    {"url_citation", "file_citation", "container_file_citation", "file_path"}
)


def text_json(part: canonical.TextPart, drops: DropLog | None = None) -> dict[str, Any]:
    """An ``output_text`` content part (citations without a Responses shape are dropped)."""
    annotations: list[dict[str, Any]] = []
    for citation in part.annotations or ():
        annotation = annotation_from_citation(citation)
        if annotation is not None:
            annotations.append(annotation)
        elif drops is not None:
            drops.add("citation", f"citation of kind {citation.kind!r} (no Responses annotation for it)")
    body: dict[str, Any] = {"type": "output_text", "text": part.text, "annotations": annotations}
    if part.logprobs:
        body["logprobs"] = part.logprobs
    return body


def content_json(part: canonical.Part, drops: DropLog | None = None) -> dict[str, Any] | None:
    """A ``message`` item's content part for a text, refusal or (same-protocol) unknown part."""
    if isinstance(part, canonical.TextPart):
        return text_json(part, drops)
    if isinstance(part, canonical.RefusalPart):
        return {"type": "refusal", "refusal": part.text}
    if isinstance(part, canonical.UnknownPart) and isinstance(part.raw, dict):
        raw: dict[str, Any] = part.raw
        return raw
    return None


def input_content_json(
    part: canonical.Part, *, assistant: bool, drops: DropLog, where: str
) -> dict[str, Any] | None:
    """A request's content part for a canonical part (``None``: dropped and recorded).

    Text is ``input_text`` (``output_text`` in an assistant message); images, files and audio
    are ``input_image`` / ``input_file`` / ``input_audio``; an unknown part with a ``type`` goes
    back as it came.
    """
    if isinstance(part, canonical.TextPart):
        return text_json(part, drops) if assistant else {"type": "input_text", "text": part.text}
    if isinstance(part, canonical.RefusalPart):
        return {"type": "refusal", "refusal": part.text}
    if isinstance(part, canonical.ImagePart):
        image: dict[str, Any] = {"type": "input_image", "detail": part.detail or "auto"}
        url = part.url
        if url is None and part.data is not None:
            url = f"data:{part.media_type or 'image/png'};base64,{part.data}"
        if url is not None:
            image["image_url"] = url
        if part.file_id is not None:
            image["file_id"] = part.file_id
        return image
    if isinstance(part, canonical.FilePart):
        fields = {
            "file_id": part.file_id,
            "file_url": part.url,
            "file_data": part.data,
            "filename": part.filename,
        }
        return {"type": "input_file", **{k: v for k, v in fields.items() if v is not None}}
    if isinstance(part, canonical.AudioPart) and part.data is not None:
        return {"type": "input_audio", "input_audio": {"data": part.data, "format": part.format or "wav"}}
    if isinstance(part, canonical.UnknownPart) and _type(part.raw) is not None:
        raw: dict[str, Any] = part.raw
        return raw
    drop_part(drops, part, where=where, place="input")
    return None


def message_item(
    id: str | None,
    status: str,
    content: list[dict[str, Any]],
    *,
    phase: str | None = None,
    extras: Any = None,
) -> dict[str, Any]:
    """An assistant ``message`` output item (``extras``: a Responses source's own extra keys)."""
    item: dict[str, Any] = dict(extras) if isinstance(extras, dict) else {}
    item.update(type="message", id=id, role="assistant", status=status, content=content)
    if phase is not None:
        item["phase"] = phase
    return item


def call_item(part: canonical.ToolCallPart, status: str | None, extras: Any = None) -> dict[str, Any]:
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


def reasoning_item(part: canonical.ReasoningPart, status: str | None, extras: Any = None) -> dict[str, Any]:
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


def _result_text(part: canonical.ToolResultPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "".join(p.text for p in part.content if isinstance(p, canonical.TextPart))


def _json_of(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None


def _screenshot(part: canonical.ToolResultPart) -> dict[str, Any] | None:
    if isinstance(part.content, str):
        raw = _json_of(part.content)
        return raw if _type(raw) == "computer_screenshot" else None
    for p in part.content:
        if isinstance(p, canonical.ImagePart):
            url = p.url
            if url is None and p.data is not None:
                url = f"data:{p.media_type or 'image/png'};base64,{p.data}"
            shot = {"type": "computer_screenshot", "image_url": url, "file_id": p.file_id}
            return {k: v for k, v in shot.items() if v is not None}
    return None


def result_item(
    kind: str, part: canonical.ToolResultPart, output: str | list[dict[str, Any]], drops: DropLog
) -> dict[str, Any]:
    """The ``*_output`` item answering a call of item type ``kind`` with a tool result.

    ``output`` is the result as ``function_call_output`` carries it. A built-in client call gets
    its own output item: a shell call's output list (the result's JSON, or its text as the
    ``stdout`` of one command that exited 0, 1 for an error result), a local shell call's
    output text, a patch's status (``failed`` for an error result), a computer call's screenshot
    (the result's image), a client tool search's tools (the result's JSON list). A result
    that has no such shape goes as a ``function_call_output`` and is recorded.
    """
    call_id = part.tool_call_id
    text = _result_text(part)
    if kind == "shell_call":
        entries = _json_of(text) if isinstance(part.content, str) else None
        if not (isinstance(entries, list) and all(isinstance(e, dict) and "outcome" in e for e in entries)):
            exit_code = 1 if part.is_error else 0
            entries = [{"stdout": text, "stderr": "", "outcome": {"type": "exit", "exit_code": exit_code}}]
        return {"type": "shell_call_output", "call_id": call_id, "output": entries}
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "id": call_id, "output": text}
    if kind == "apply_patch_call":
        status = "failed" if part.is_error else "completed"
        return {"type": "apply_patch_call_output", "call_id": call_id, "status": status, "output": text}
    if kind == "computer_call":
        shot = _screenshot(part)
        if shot is not None:
            return {"type": "computer_call_output", "call_id": call_id, "output": shot}
    if kind == "tool_search_call":
        tools = _json_of(text)
        if isinstance(tools, list):
            out = {"type": "tool_search_output", "call_id": call_id, "execution": "client", "tools": tools}
            return {**out, "status": "completed"}
    if kind in CLIENT_CALLS:
        drops.add(
            "tool_result",
            f"result of a {kind} without the shape its output item needs (sent as a function_call_output)",
            where=call_id,
        )
    if part.is_error:
        drops.add("tool_result", "is_error flag of a tool result (no Responses field for it)", where=call_id)
    out_kind = "custom_tool_call_output" if kind == "custom_tool_call" else "function_call_output"
    return {"type": out_kind, "call_id": call_id, "output": output}


def whole_item_body(item: Item, value: canonical.Message | None, status: str | None) -> dict[str, Any]:
    """The final body of a Responses item kept whole (a Responses source's, re-encoded)."""
    raw = value.provider_raw if value is not None else None
    if item.type not in REBUILT_TYPES:
        body = dict(raw) if isinstance(raw, dict) else dict(item.body)
        if "status" in body and status is not None and body.get("status") in (None, "in_progress"):
            body["status"] = status
        return body
    parts = value.content if value is not None and isinstance(value.content, list) else []
    wire_status = status if status in ("completed", "incomplete", "in_progress") else None
    for part in parts:
        if isinstance(part, canonical.ToolCallPart):
            return call_item(part, wire_status, raw)
        if isinstance(part, canonical.ReasoningPart):
            assert value is not None
            return reasoning_item(part, value.status, raw)
    return dict(item.body)
