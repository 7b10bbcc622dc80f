"""OpenAI Chat Completions wire objects ↔ canonical values: the one mapping of this package.

Every Chat rendering goes through these functions, in both directions: the stream decoder
(``_decode``), the stream encoder (``_encode`` and its part writers), the response bodies
(``_body``) and the history codec (``_history``). So the usage a body reports and the usage a
stream's usage chunk reports for the same response are one function's output, and likewise tool
calls, the legacy ``function_call`` channel, audio, annotations, reasoning fields and finish
reasons.

It owns: finish reason, usage and error objects; annotations ↔ citations (reading an error
object or an annotation is ``protocols/_openai.py``, shared by the OpenAI family);
``tool_calls[]`` entries and the legacy ``function_call``; ``audio``; the reasoning fields
(``reasoning_content``, ``reasoning``, ``reasoning_details``) and the rule of which one a
reasoning part goes to; what a Chat output cannot carry, reported as structured drops with a
stable kind.

It must not hold stream state, decide cross-protocol rules (finish-reason normalization lives in
the aggregator, the replay rule in ``protocols/_replay.py``) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from ..._model import (
    AudioPart,
    CitationPart,
    FinishReason,
    ReasoningPart,
    StreamError,
    ToolCallKind,
    ToolCallPart,
    UnknownPart,
    Usage,
)
from ..._usage import total_of, usage_of
from .._names import OPENAI_CHAT as PROTOCOL
from .._openai import citation_from_annotation, error_from
from .._replay import replayable

if TYPE_CHECKING:
    from ..._drops import DropKind, DropLog
    from ..._model import Part
    from ._wire import AudioDelta, Delta, FunctionDelta, ReasoningDetail, ToolCallDelta

__all__ = [
    "LEGACY",
    "PROTOCOL",
    "ReasoningMode",
    "annotation_to_wire",
    "audio_delta",
    "audio_from",
    "audio_to_wire",
    "call_from",
    "call_kind",
    "call_to_wire",
    "citation_from_annotation",
    "detail_head",
    "detail_part",
    "drop_frame",
    "drop_part",
    "drop_reasoning",
    "error_from",
    "error_to_wire",
    "finish_from",
    "finish_to_wire",
    "header_from",
    "legacy_from",
    "legacy_to_wire",
    "reasoning_field",
    "reasoning_from",
    "reasoning_to_wire",
    "response_raw",
    "usage_from",
    "usage_to_wire",
]

LEGACY: Final = "function_call"
"""The deprecated single-call channel. Also the ``ToolCallPart.item_id`` of a call that came
through it, so a Chat re-encode puts it back there (the channel has no call id)."""

ReasoningMode: TypeAlias = Literal["auto", "drop", "reasoning_content", "reasoning", "reasoning_details"]
"""Where reasoning goes in a Chat output: ``auto`` = back to the field it came from when the
source is Chat (dropped otherwise), ``drop`` = never, or always the named compatible field."""

# ---------------------------------------------------------------------- finish reasons

_FINISH_FROM: Final[dict[str, FinishReason]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    LEGACY: "tool_calls",
    "content_filter": "content_filter",
}

_FINISH_TO: Final[dict[FinishReason, str]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "stop",
    "pause": "stop",
    "error": "stop",
    "other": "stop",
}


def finish_from(raw: str) -> FinishReason:
    """A wire ``finish_reason`` → the canonical one (``other`` for one Chat does not define)."""
    return _FINISH_FROM.get(raw, "other")


def finish_to_wire(reason: FinishReason, *, legacy_only: bool = False) -> str:
    """A canonical finish reason → the wire ``finish_reason``.

    Args:
        reason: The canonical reason (already normalized by the aggregator: client calls ⇒
            ``tool_calls``).
        legacy_only: The choice's only call went through the legacy ``function_call`` channel,
            whose finish reason on the wire is ``function_call``.
    """
    wire = _FINISH_TO[reason]
    return LEGACY if wire == "tool_calls" and legacy_only else wire


# ---------------------------------------------------------------------- usage, errors, header


def usage_from(raw: Any) -> Usage | None:
    """A Chat ``usage`` object → canonical usage (``None`` for a missing or odd one).

    Chat already counts as canonical usage does: ``prompt_tokens`` includes
    ``prompt_tokens_details.cached_tokens`` (and an OpenAI-compatible server's
    ``cache_write_tokens``), ``completion_tokens`` includes
    ``completion_tokens_details.reasoning_tokens`` (PROTOCOLS.md §1.6).
    """
    if not isinstance(raw, dict):
        return None
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    pd = prompt_details if isinstance(prompt_details, dict) else {}
    cd = completion_details if isinstance(completion_details, dict) else {}
    return usage_of(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        reported_total=_int(raw.get("total_tokens")),
        reasoning_tokens=_int(cd.get("reasoning_tokens")),
        cache_read_tokens=_int(pd.get("cached_tokens")),
        cache_write_tokens=_int(pd.get("cache_write_tokens")),
        raw=raw,
    )


def usage_to_wire(usage: Usage, source: str | None) -> dict[str, Any]:
    """Canonical usage → a Chat ``usage`` object: THE usage of bodies and of usage chunks.

    A Chat source's own object goes back unchanged (with the fields we do not model); any other
    is built from the canonical counts, which mean what Chat's do: ``cached_tokens`` stays
    inside ``prompt_tokens`` (``cache_write_tokens`` too, as OpenAI-compatible servers send it),
    ``reasoning_tokens`` inside ``completion_tokens``.
    """
    if source == PROTOCOL and isinstance(usage.raw, dict):
        return usage.raw
    body: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens or 0,
        "completion_tokens": usage.output_tokens or 0,
        "total_tokens": total_of(usage) or 0,
    }
    details: dict[str, int] = {}
    if usage.cache_read_tokens is not None:
        details["cached_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens is not None:
        details["cache_write_tokens"] = usage.cache_write_tokens
    if details:
        body["prompt_tokens_details"] = details
    if usage.reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return body


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def error_to_wire(error: StreamError) -> dict[str, Any]:
    """A StreamError → an OpenAI error object (a Chat source's own object unchanged)."""
    if isinstance(error.raw, dict) and "message" in error.raw:
        return error.raw
    body: dict[str, Any] = {"message": error.message or error.type, "type": error.type}
    if error.code is not None:
        body["code"] = error.code
    return body


class _Created:
    """The one field most streams' response-level fields hold (see :func:`response_raw`)."""

    def __init__(self, created: int | None) -> None:
        self.created = created


def response_raw(created: int | None, fingerprint: str | None, tier: str | None) -> dict[str, Any]:
    """The response-level fields with no canonical home, kept for a Chat re-encode.

    Most streams have only ``created``: that dict is an instance's attribute dict, whose keys
    are shared by every one (a dict of its own like any, 80 bytes where a one-key literal is 184,
    in every idle stream).
    """
    if fingerprint is None and tier is None:
        return _Created(created).__dict__
    raw: dict[str, Any] = {"created": created}
    if fingerprint is not None:
        raw["system_fingerprint"] = fingerprint
    if tier is not None:
        raw["service_tier"] = tier
    return raw


def header_from(raw: Any) -> dict[str, Any]:
    """The ``created`` / ``system_fingerprint`` / ``service_tier`` a Chat output writes back."""
    if not isinstance(raw, dict):
        return {"created": 0}
    created = raw.get("created")
    header: dict[str, Any] = {"created": created if type(created) is int else 0}
    for key in ("system_fingerprint", "service_tier"):
        if key in raw:
            header[key] = raw[key]
    return header


# ---------------------------------------------------------------------- annotations


def annotation_to_wire(citation: CitationPart) -> dict[str, Any] | None:
    """A citation → a Chat ``url_citation`` annotation (``None``: it has no URL, so no place)."""
    raw = citation.raw
    if (
        isinstance(raw, dict)
        and raw.get("type") == "url_citation"
        and isinstance(raw.get("url_citation"), dict)
    ):
        return raw
    if citation.url is None:
        return None
    body: dict[str, Any] = {"url": citation.url, "title": citation.title or ""}
    body["start_index"] = citation.start if citation.start is not None else 0
    body["end_index"] = citation.end if citation.end is not None else 0
    if citation.cited_text is not None:
        body["content"] = citation.cited_text
    return {"type": "url_citation", "url_citation": body}


# ---------------------------------------------------------------------- tool calls and audio


def call_kind(call: ToolCallDelta) -> ToolCallKind:
    """A ``tool_calls[]`` entry's kind: ``custom`` (free-form input) or ``function``."""
    return "custom" if call.type == "custom" or call.custom is not None else "function"


def call_from(call: ToolCallDelta) -> ToolCallPart:
    """A whole ``tool_calls[]`` entry (of a message, not a delta) → a tool call part."""
    fn, custom = call.function, call.custom
    if call_kind(call) == "custom":
        name = custom.name if custom is not None else None
        args = custom.input if custom is not None else None
        return ToolCallPart(id=call.id or "", name=name or "", arguments=args or "", kind="custom")
    name = fn.name if fn is not None else None
    args = fn.arguments if fn is not None else None
    return ToolCallPart(id=call.id or "", name=name or "", arguments=args or "")


def call_to_wire(part: ToolCallPart, arguments: str | None = None) -> dict[str, Any]:
    """A client tool call → a ``tool_calls[]`` entry (``arguments`` overrides the part's)."""
    args = part.arguments if arguments is None else arguments
    if part.kind == "custom":
        return {"id": part.id, "type": "custom", "custom": {"name": part.name, "input": args}}
    return {"id": part.id, "type": "function", "function": {"name": part.name, "arguments": args}}


def legacy_from(fn: FunctionDelta) -> ToolCallPart:
    """A whole legacy ``function_call`` → a tool call without id, marked as from that channel."""
    return ToolCallPart(id="", name=fn.name or "", arguments=fn.arguments or "", item_id=LEGACY)


def legacy_to_wire(part: ToolCallPart, arguments: str | None = None) -> dict[str, Any]:
    """A tool call → the legacy ``function_call`` object (no id: the channel has none)."""
    return {"name": part.name, "arguments": part.arguments if arguments is None else arguments}


def audio_from(audio: AudioDelta) -> AudioPart:
    """A message's ``audio`` object → an audio part (an empty field is an absent one)."""
    return AudioPart(
        id=audio.id or None,
        data=audio.data or None,
        transcript=audio.transcript or None,
        expires_at=audio.expires_at or None,
    )


def audio_to_wire(part: AudioPart, *, request: bool = False) -> dict[str, Any]:
    """An audio part → a message's ``audio`` (a request refers to earlier audio by id only)."""
    if request:
        return {"id": part.id}
    return {
        "id": part.id or "",
        "data": part.data or "",
        "transcript": part.transcript or "",
        "expires_at": part.expires_at or 0,
    }


def audio_delta(
    id: str | None, data: str | None, transcript: str | None, expires_at: int | None
) -> dict[str, Any]:
    """A streamed ``audio`` delta: only what it adds (data and transcript append, the rest replace)."""
    audio: dict[str, Any] = {}
    if id is not None:
        audio["id"] = id
    if data:
        audio["data"] = data
    if transcript:
        audio["transcript"] = transcript
    if expires_at is not None:
        audio["expires_at"] = expires_at
    return audio


# ---------------------------------------------------------------------- reasoning


def reasoning_field(part: ReasoningPart, source: str | None, mode: ReasoningMode) -> str:
    """The Chat field a reasoning part is written to, or ``""`` when it is dropped."""
    if mode == "auto":
        return (part.origin_field or "") if source == PROTOCOL else ""
    return "" if mode == "drop" else mode


def detail_part(detail: ReasoningDetail) -> ReasoningPart:
    """A whole ``reasoning_details[]`` entry → a reasoning part (encrypted ones are redacted)."""
    if detail.type == "reasoning.encrypted":
        return ReasoningPart(
            id=detail.id,
            format=detail.format,
            origin_field="reasoning_details",
            data=detail.data,
            redacted=True,
        )
    return ReasoningPart(
        text=detail.text or None,
        summary=[detail.summary] if detail.summary else None,
        signature=detail.signature or None,
        id=detail.id,
        format=detail.format,
        origin_field="reasoning_details",
    )


def reasoning_from(message: Delta) -> list[ReasoningPart]:
    """The reasoning of a whole message, from the field a stream of it would be read from.

    ``reasoning_details`` first, else ``reasoning_content``, else a string ``reasoning``
    (OpenRouter sends ``reasoning`` and ``reasoning_details`` for the same text).
    """
    if message.reasoning_details:
        return [detail_part(d) for d in message.reasoning_details]
    if message.reasoning_content:
        return [ReasoningPart(text=message.reasoning_content, origin_field="reasoning_content")]
    if isinstance(message.reasoning, str) and message.reasoning:
        return [ReasoningPart(text=message.reasoning, origin_field="reasoning")]
    return []


def detail_head(part: ReasoningPart, index: int) -> dict[str, Any]:
    """The fields every ``reasoning_details`` entry of one part repeats (type, index, format, id)."""
    head: dict[str, Any] = {"type": "reasoning.text", "index": index}
    if part.format is not None:
        head["format"] = part.format
    if part.id is not None:
        head["id"] = part.id
    return head


def reasoning_to_wire(part: ReasoningPart, field: str, index: int, keep_state: bool) -> Any:
    """A whole reasoning part → its value in ``field`` (a ``reasoning_details`` entry, or text).

    ``None`` when nothing of it can be written (as a stream of it would write nothing).

    Args:
        part: The reasoning.
        field: Where it goes (see :func:`reasoning_field`).
        index: Its position among the choice's ``reasoning_details`` entries.
        keep_state: Whether its signature and encrypted data may be written (the replay rule).
    """
    text = (part.text or "") + "".join(part.summary or ())
    if field != "reasoning_details":
        return text or None
    signature = part.signature if keep_state else None
    if not (part.text or part.summary or signature or (part.data is not None and keep_state)):
        return None
    detail = detail_head(part, index)
    if part.data is not None and keep_state:
        detail["type"] = "reasoning.encrypted"
        detail["data"] = part.data
        return detail
    if part.text is None and part.summary:
        detail["type"] = "reasoning.summary"
    else:
        detail["text"] = part.text or ""
    if part.summary:
        detail["summary"] = "".join(part.summary)
    if signature:
        detail["signature"] = signature
    return detail


# ---------------------------------------------------------------------- drops


def drop_reasoning(
    drops: DropLog, part: ReasoningPart, field: str, source: str | None, *, where: str | None = None
) -> None:
    """Report what of a reasoning part its Chat field cannot carry (all of it when ``field`` is ``""``).

    Signatures and encrypted data survive only in ``reasoning_details`` and only back to Chat
    (:func:`~maas_stream.protocols._replay.replayable`).
    """
    keep_state = field == "reasoning_details" and replayable(source, PROTOCOL)
    opaque = part.data is not None or part.encrypted_content is not None or bool(part.redacted)
    if not field and (part.text or part.summary or not opaque):
        drops.add("reasoning", "reasoning (Chat Completions carries no reasoning)", where=where)
    kept = keep_state and part.data is not None and part.encrypted_content is None
    if opaque and not kept:
        drops.add(
            "encrypted_reasoning",
            "redacted or encrypted reasoning (Chat Completions cannot carry it)",
            where=where,
        )
    if part.signature and not keep_state:
        drops.add("signature", "reasoning signature (Chat Completions cannot carry it)", where=where)


_KINDS: Final[dict[str, DropKind]] = {
    "image": "media",
    "audio": "media",
    "file": "media",
    "code": "code",
    "citation": "citation",
    "tool_result": "tool_result",
    "refusal": "refusal",
}


def drop_part(drops: DropLog, part: Part, *, where: str | None = None, source: str | None = None) -> None:
    """Report a part that has no place in a Chat output, with the kind that says what it is."""
    if isinstance(part, ReasoningPart):
        drop_reasoning(drops, part, "", source, where=where)
    elif isinstance(part, ToolCallPart) and part.kind in ("server", "mcp"):
        what = f"{part.kind} tool call {part.name!r} (Chat has no server-side tools)"
        drops.add("server_call", what, where=where if where is not None else part.id or None)
    elif isinstance(part, UnknownPart):
        drops.add("unknown", f"{part.provider_type} part (no Chat Completions equivalent)", where=where)
    else:
        tag = part.__struct_config__.tag
        assert isinstance(tag, str)
        drops.add(_KINDS.get(tag, "field"), f"{tag} part (no Chat Completions equivalent)", where=where)


def drop_frame(drops: DropLog, provider_type: str, *, session: bool = False) -> None:
    """Report a response-level frame with no place in a Chat output.

    Args:
        drops: The log.
        provider_type: The frame's type.
        session: It is a known session or client frame of a websocket protocol (not unknown).
    """
    if session:
        drops.add("session_frame", f"{provider_type!r} frame (no Chat Completions counterpart)")
    else:
        drops.add("unknown", f"unknown {provider_type!r} frame")
