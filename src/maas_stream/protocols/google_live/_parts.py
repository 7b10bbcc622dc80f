"""Google Live's one two-way mapping between canonical parts and Live wire objects.

Function calls (``functionCall`` / ``toolCall.functionCalls[]``), function responses, code
parts, media blobs and usage, both ways. The decoder, the stream encoder and the history codec
all go through these functions, so a call, a result or a usage count reads and writes the same
everywhere.

It must not hold state, do IO, or decide a cross-protocol rule (replay, finish reasons).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._model import AudioPart, CodePart, ImagePart, Part, ToolCallPart, ToolResultPart, UnknownPart, Usage
from ..._usage import google_split, google_usage
from .._json import NOT_JSON
from .._session import result_text

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = [
    "DEFAULT_AUDIO_MIME",
    "blob",
    "call_part",
    "code_part",
    "code_parts",
    "function_call",
    "function_response",
    "result_part",
    "usage_from",
    "usage_wire",
    "whole_parts",
]

DEFAULT_AUDIO_MIME: Final = "audio/pcm;rate=24000"
"""Live's output audio format (24 kHz 16-bit PCM), used when the source did not say."""

_json = msgspec.json.Encoder()


# ---------------------------------------------------------------------- wire → canonical


def _named(obj: Any) -> tuple[str, str | None] | None:
    """An object's ``id`` (``""`` when absent) and ``name``; ``None`` unless both are strings."""
    if not isinstance(obj, dict):
        return None
    given, name = obj.get("id"), obj.get("name")
    if not isinstance(given, str | None) or not isinstance(name, str | None):
        return None
    return given or "", name


def call_part(call: Any) -> ToolCallPart | None:
    """A ``functionCall`` object as a tool call (arguments as JSON text).

    Returns ``None`` when it is not an object or its ``id`` or ``name`` is not a string.
    """
    named = _named(call)
    if named is None:
        return None
    args = call.get("args")
    text = _json.encode(args).decode() if args is not None else "{}"
    return ToolCallPart(id=named[0], name=named[1] or "", arguments=text)


def result_part(response: Any) -> ToolResultPart | None:
    """A ``functionResponse`` object as a tool result (its ``response`` as JSON text).

    Returns ``None`` when it is not an object or its ``id`` or ``name`` is not a string.
    """
    named = _named(response)
    if named is None:
        return None
    content = _json.encode(response.get("response")).decode()
    return ToolResultPart(tool_call_id=named[0], content=content, name=named[1])


def code_part(executable: Any, result: Any) -> CodePart:
    """An ``executableCode`` and/or ``codeExecutionResult`` object as one code part."""
    fields: dict[str, str] = {}
    for obj, names in ((executable, ("language", "code")), (result, ("outcome", "output"))):
        if isinstance(obj, dict):
            fields.update((name, obj[name]) for name in names if isinstance(obj.get(name), str))
    return CodePart(**fields)


def usage_from(raw: Any) -> Usage | None:
    """Map a Live ``usageMetadata`` object to canonical usage (Vertex's names too).

    Live counts as Gemini does (PROTOCOLS.md §6.3): input is ``promptTokenCount`` (cached
    content included) plus ``toolUsePromptTokenCount``; output is ``responseTokenCount``
    (Vertex: ``candidatesTokenCount``) plus ``thoughtsTokenCount``. The total is their sum;
    Live's own ``totalTokenCount`` (which in real captures leaves the thoughts out) stays in
    ``raw``.
    """
    if not isinstance(raw, dict):
        return None
    counts = {key: value for key, value in raw.items() if type(value) is int}
    answer = "responseTokenCount" if "responseTokenCount" in raw else "candidatesTokenCount"
    return google_usage(
        prompt=counts.get("promptTokenCount"),
        tool_use=counts.get("toolUsePromptTokenCount"),
        answer=counts.get(answer),
        thoughts=counts.get("thoughtsTokenCount"),
        cached=counts.get("cachedContentTokenCount"),
        reported_total=counts.get("totalTokenCount"),
        raw=raw,
    )


# ---------------------------------------------------------------------- canonical → wire


def blob(mime_type: str, data: str) -> dict[str, Any]:
    """An ``inlineData`` part."""
    return {"inlineData": {"mimeType": mime_type, "data": data}}


_NOT_JSON = NOT_JSON


def function_call(
    call: ToolCallPart, arguments: str, drops: DropLog | None = None, where: str | None = None
) -> dict[str, Any] | None:
    """A client tool call as a Live ``functionCall`` object (``{id, name, args}``).

    A call cut before it ended (``status: "incomplete"``) is not sent: Live calls are whole and
    the client would run it with half its arguments. Arguments that are not a JSON object are
    sent wrapped as ``{"arguments": text}``. Both are reported in ``drops``.

    Args:
        call: The call (its id, name and status).
        arguments: Its arguments as JSON text (the streamed deltas, or the whole value).
        drops: Where to report what could not be sent as it was.
        where: The location to report (a call id, ``messages[3]``).
    """
    if call.status == "incomplete":
        if drops is not None:
            drops.add(
                "field",
                f"{call.name!r} tool calls cut before they ended (not sent: Live calls are whole)",
                where=where,
            )
        return None
    try:
        args = msgspec.json.decode(arguments) if arguments else {}
    except _NOT_JSON:
        args = None
    if not isinstance(args, dict):
        args = {"arguments": arguments}
        if drops is not None:
            drops.add(
                "field",
                f"{call.name!r} tool call arguments that are not a JSON object (sent as {{'arguments': text}})",
                where=where,
            )
    return {"id": call.id, "name": call.name, "args": args}


def function_response(result: ToolResultPart) -> dict[str, Any]:
    """A tool result as a Live ``functionResponse`` (``response`` is always an object)."""
    response: Any
    if isinstance(result.content, str):
        try:
            response = msgspec.json.decode(result.content)
        except _NOT_JSON:
            response = {"output": result.content}
        if not isinstance(response, dict):
            response = {"output": response}
    else:
        response = {"output": result_text(result)}
    out: dict[str, Any] = {"id": result.tool_call_id}
    if result.name is not None:
        out["name"] = result.name
    out["response"] = response
    return out


def whole_parts(part: Part) -> list[dict[str, Any]] | None:
    """A part Live sends whole as Live parts: media with data, code, a kept Live ``part``.

    Returns ``None`` for any other part (or media without data).
    """
    if isinstance(part, AudioPart | ImagePart) and part.data:
        mime = (part.format if isinstance(part, AudioPart) else part.media_type) or ""
        default = DEFAULT_AUDIO_MIME if isinstance(part, AudioPart) else "image/png"
        return [blob(mime if "/" in mime else default, part.data)]
    if isinstance(part, CodePart):
        return code_parts(part)
    if isinstance(part, UnknownPart) and part.provider_type == "part" and isinstance(part.raw, dict):
        return [part.raw]
    return None


def code_parts(code: CodePart) -> list[dict[str, Any]]:
    """A code part as Live parts: ``executableCode`` and/or ``codeExecutionResult``."""
    out: list[dict[str, Any]] = []
    if code.code is not None:
        out.append({"executableCode": {"language": code.language or "PYTHON", "code": code.code}})
    if code.outcome is not None or code.output is not None:
        result = {k: v for k, v in (("outcome", code.outcome), ("output", code.output)) if v is not None}
        out.append({"codeExecutionResult": result})
    return out


def usage_wire(usage: Usage, *, same: bool) -> dict[str, Any]:
    """Canonical usage as a Live ``usageMetadata`` object.

    Args:
        usage: The canonical usage.
        same: The usage came from Live: its own object goes back unchanged (details by
            modality, ``toolUsePromptTokenCount``, its own ``totalTokenCount``). Any other
            source's object is never copied (a Gemini ``candidatesTokenCount`` is no Live key):
            the counts are the canonical ones restated in Live's terms.
    """
    if same and isinstance(usage.raw, dict):
        return usage.raw
    counts = google_split(usage)
    pairs = (
        ("promptTokenCount", counts.prompt),
        ("cachedContentTokenCount", counts.cached),
        ("responseTokenCount", counts.answer),
        ("thoughtsTokenCount", counts.thoughts),
        ("totalTokenCount", counts.total),
    )
    return {name: count for name, count in pairs if count is not None}
