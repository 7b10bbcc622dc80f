"""Gemini non-streaming body: a canonical Response → a ``GenerateContentResponse``.

It makes the decisions the stream encoder (``_encode``) makes: each assistant message goes to
the candidate of its ``choice_index`` (0 without one); reasoning text becomes ``thought`` parts,
never plain text; signatures are kept only from a Gemini source; client calls become
``functionCall`` parts (synthesized ids left out); server and MCP calls of other protocols,
refusals, citations without a URL and unknown parts of other protocols are dropped and reported
in ``lossy``. It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

from ..._model import (
    CodePart,
    Message,
    ReasoningPart,
    RefusalPart,
    Response,
    TextPart,
    ToolCallPart,
    UnknownPart,
)
from .._names import GEMINI as PROTOCOL
from ._decode import SYNTH_PREFIX
from ._encode import _FINISH, _KEEP_FINISH, call_args, media_body, usage_body

__all__ = ["encode_response"]

_ASSISTANT: Final = ("assistant", "model")


def _lose(sink: list[str], what: str) -> None:
    if what not in sink:
        sink.append(what)


def encode_response(response: Response, *, lossy: list[str] | None = None) -> dict[str, Any]:
    """Encode a canonical response as a Gemini ``GenerateContentResponse``.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        lossy: If given, a line is appended for everything Gemini cannot carry (dropped).

    Returns:
        The JSON object a ``:generateContent`` call answers with.
    """
    sink: list[str] = lossy if lossy is not None else []
    same = response.protocol == PROTOCOL
    candidates: dict[int, dict[str, Any]] = {}
    for msg in response.messages:
        if msg.role not in _ASSISTANT:
            _lose(sink, f"{msg.role} message in the output")
            continue
        index = msg.choice_index if msg.choice_index is not None else 0
        cand = candidates.setdefault(index, {"content": {"role": "model", "parts": []}, "index": index})
        _fill(cand, msg, same, sink)
    for cand in candidates.values():
        if "finishReason" not in cand:
            _finish(cand, response, same)
    body: dict[str, Any] = {"candidates": [candidates[i] for i in sorted(candidates)]}
    raw = response.provider_raw
    if same and isinstance(raw, dict):
        for key in ("promptFeedback", "createTime", "modelStatus"):
            if key in raw:
                body[key] = raw[key]
    if response.usage is not None:
        body["usageMetadata"] = usage_body(response.usage, source=response.protocol)
    if response.model:
        body["modelVersion"] = response.model
    if response.id:
        body["responseId"] = response.id
    return body


def _fill(cand: dict[str, Any], msg: Message, same: bool, sink: list[str]) -> None:
    """Add one assistant message's parts (and, from Gemini, its candidate fields) to a candidate."""
    parts: list[dict[str, Any]] = cand["content"]["parts"]
    content = [TextPart(text=msg.content)] if isinstance(msg.content, str) else msg.content
    for part in content:
        wire = _part(part, same, sink)
        if wire is not None:
            parts.append(wire)
        if isinstance(part, TextPart) and not same:
            _citations(cand, part, sink)
    if same and isinstance(msg.provider_raw, dict):
        # The candidate's own fields (safetyRatings, groundingMetadata, citationMetadata...).
        cand.update({k: v for k, v in msg.provider_raw.items() if k not in ("content", "index")})
    if msg.finish_reason is not None:
        cand["finishReason"] = _FINISH[msg.finish_reason]


def _finish(cand: dict[str, Any], response: Response, same: bool) -> None:
    """The response's end finishes a candidate with no finish of its own; a cut one stays cut."""
    reason = response.finish_reason
    if same and response.provider_finish_reason and reason is not None:
        cand["finishReason"] = response.provider_finish_reason
    elif reason is not None and (response.status == "completed" or reason in _KEEP_FINISH):
        cand["finishReason"] = _FINISH[reason]
    elif response.status == "completed":
        cand["finishReason"] = "STOP"


def _citations(cand: dict[str, Any], part: TextPart, sink: list[str]) -> None:
    for cite in part.annotations or ():
        if cite.url is None:
            _lose(sink, f"citation of kind {cite.kind!r} without a URL")
            continue
        source: dict[str, Any] = {"uri": cite.url}
        if cite.start is not None:
            source["startIndex"] = cite.start
        if cite.end is not None:
            source["endIndex"] = cite.end
        if cite.title is not None:
            _lose(sink, "citation titles (Gemini API citationSources have none)")
        cand.setdefault("citationMetadata", {"citationSources": []})["citationSources"].append(source)


def _part(part: Any, same: bool, sink: list[str]) -> dict[str, Any] | None:  # noqa: C901
    body: dict[str, Any] | None
    if isinstance(part, TextPart | ReasoningPart):
        if isinstance(part, ReasoningPart):
            if part.redacted or part.data is not None or part.encrypted_content is not None:
                _lose(sink, "redacted or encrypted reasoning (Gemini cannot carry it)")
            text = part.text or "".join(part.summary or ())
            body = {"text": text, "thought": True} if text or part.signature else None
        else:
            body = {"text": part.text}
        if body is not None and part.signature is not None:
            if same:
                body["thoughtSignature"] = part.signature
            else:
                _lose(sink, "reasoning/part signature from another provider (Gemini only replays its own)")
        return body
    if isinstance(part, ToolCallPart):
        if part.kind in ("server", "mcp"):
            _lose(sink, f"{part.kind} tool call {part.name!r} ({part.id}): Gemini output has no place for it")
            return None
        args = call_args(part.arguments)
        if args is None:
            _lose(sink, f"tool call {part.name!r} ({part.id}): arguments are not a JSON object")
            return None
        call: dict[str, Any] = {"name": part.name, "args": args}
        if part.id and not part.id.startswith(SYNTH_PREFIX):
            call["id"] = part.id
        if part.kind == "custom":
            _lose(sink, f"custom tool call {part.name!r}: sent as a function call")
        body = {"functionCall": call}
        if part.signature is not None:
            if same:
                body["thoughtSignature"] = part.signature
            else:
                _lose(sink, "reasoning/part signature from another provider (Gemini only replays its own)")
        return body
    if isinstance(part, CodePart):
        if part.code is not None:
            return {"executableCode": {"language": part.language or "PYTHON", "code": part.code}}
        if part.outcome is not None or part.output is not None:
            return {
                "codeExecutionResult": {"outcome": part.outcome or "OUTCOME_OK", "output": part.output or ""}
            }
    media = media_body(part)
    if media is not None:
        return media
    if isinstance(part, UnknownPart) and same and isinstance(part.raw, dict):
        raw: dict[str, Any] = part.raw
        return raw
    if isinstance(part, RefusalPart):
        _lose(sink, "refusal part (no Gemini equivalent)")
        return None
    kind = part.provider_type if isinstance(part, UnknownPart) else part.__struct_config__.tag
    _lose(sink, f"{kind} part (no Gemini equivalent)")
    return None
