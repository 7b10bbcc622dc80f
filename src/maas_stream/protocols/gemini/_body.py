"""Gemini non-streaming bodies: a canonical Response ↔ a ``GenerateContentResponse``.

:func:`encode_response` makes the decisions the stream encoder makes, through the same mapping
(``_parts.ToWire`` for parts, ``_meta`` for usage, finish reasons and citations): each assistant
message goes to the candidate of its ``choice_index`` (0 without one); reasoning text becomes
``thought`` parts, never plain text; signatures are kept only when ``replayable`` from the
response's protocol; a cut candidate gets no ``finishReason``; what Gemini cannot carry is
dropped and recorded in a :class:`~maas_stream.DropLog`.

:func:`decode_response` reads a body with the same wire Structs and part mapping as the stream
decoder and the history codec: one message per candidate (``choice_index``, its own finish
reason), ``promptFeedback`` blocking as ``content_filter``, ``usageMetadata``, and an
``{"error": ...}`` body as a failed response.

It must not do IO.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._drops import DropLog
from ..._exceptions import RemoteProtocolError
from ..._model import (
    ASSISTANT_ROLES,
    CitationPart,
    FinishReason,
    Message,
    MessageStatus,
    Part,
    Response,
    ResponseStatus,
    TextPart,
    UnknownPart,
)
from .._names import GEMINI as PROTOCOL
from ._meta import (
    KEEP_FINISH,
    candidate_fields_to_wire,
    citation_to_wire,
    citations_from_wire,
    error_from_wire,
    finish_from_wire,
    finish_to_wire,
    usage_from_wire,
    usage_to_wire,
)
from ._parts import SIGNATURE_TYPE, SYNTH_PREFIX, ToWire, parts_from_wire
from ._wire import Candidate, block_reason, candidate_fields, decode_chunk, normalize, response_fields

if TYPE_CHECKING:
    from ._wire import Chunk

__all__ = ["decode_response", "encode_response"]

_json: Final = msgspec.json.Encoder()
_any: Final = msgspec.json.Decoder()


# ---------------------------------------------------------------------- canonical → Gemini


def encode_response(response: Response, *, drops: DropLog | None = None) -> dict[str, Any]:
    """Encode a canonical response as a Gemini ``GenerateContentResponse``.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        drops: If given, records what Gemini cannot carry (dropped).

    Returns:
        The JSON object a ``:generateContent`` call answers with.
    """
    log = drops if drops is not None else DropLog(PROTOCOL, response.protocol)
    wire = ToWire(log, response.protocol)
    candidates: dict[int, dict[str, Any]] = {}
    decided: set[int] = set()
    for i, msg in enumerate(response.messages):
        wire.where = f"messages[{i}]"
        if msg.role not in ASSISTANT_ROLES:
            wire.drop("message", f"{msg.role} message in the output")
            continue
        index = msg.choice_index if msg.choice_index is not None else 0
        cand = candidates.setdefault(index, {"content": {"role": "model", "parts": []}, "index": index})
        _fill(cand, msg, wire)
        if index not in decided and msg.finish_reason is not None:
            decided.add(index)
            finish = finish_to_wire(
                msg.finish_reason, status=msg.status, provider=response.provider_finish_reason, own=wire.own
            )
            if finish is not None:
                cand["finishReason"] = finish
    # The response's end finishes a candidate with no finish of its own; a cut one stays cut.
    reason: FinishReason | None = response.finish_reason
    if reason is None and response.status == "completed":
        reason = "stop"
    finish = finish_to_wire(
        reason, status=response.status, provider=response.provider_finish_reason, own=wire.own
    )
    for index, cand in candidates.items():
        if index not in decided and finish is not None:
            cand["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidates[i] for i in sorted(candidates)]}
    raw = response.provider_raw
    if wire.own and isinstance(raw, dict):
        body.update({k: raw[k] for k in ("promptFeedback", "createTime", "modelStatus") if k in raw})
    if not candidates and "promptFeedback" not in body and response.finish_reason == "content_filter":
        body["promptFeedback"] = {"blockReason": "OTHER"}
    if response.usage is not None:
        body["usageMetadata"] = usage_to_wire(response.usage, own=wire.own)
    if response.model:
        body["modelVersion"] = response.model
    if response.id:
        body["responseId"] = response.id
    return body


def _fill(cand: dict[str, Any], msg: Message, wire: ToWire) -> None:
    """Add one assistant message's parts (and, from Gemini, its candidate fields) to a candidate."""
    parts: list[dict[str, Any]] = cand["content"]["parts"]
    content = [TextPart(text=msg.content)] if isinstance(msg.content, str) else msg.content
    pending: str | None = None
    for part in content:
        if isinstance(part, UnknownPart) and part.provider_type == SIGNATURE_TYPE:
            pending = wire.kept_signature(part)
            continue
        written = wire.part(part)
        if pending is not None and written and "thoughtSignature" not in written[0]:
            written[0]["thoughtSignature"] = pending
            pending = None
        parts.extend(written)
        if isinstance(part, TextPart) and not wire.own:
            _citations(cand, part, wire)
    if pending is not None:
        parts.append(wire.text("", thought=False, signature=pending))
    if wire.own:
        cand.update(candidate_fields_to_wire(msg.provider_raw))


def _citations(cand: dict[str, Any], part: TextPart, wire: ToWire) -> None:
    for cite in part.annotations or ():
        source = citation_to_wire(cite, wire.drops)
        if source is not None:
            cand.setdefault("citationMetadata", {"citationSources": []})["citationSources"].append(source)


# ---------------------------------------------------------------------- Gemini → canonical


def decode_response(body: Any) -> Response:
    """Decode a Gemini ``GenerateContentResponse`` (a ``:generateContent`` answer).

    Args:
        body: The body as JSON text or bytes, or as plain JSON values (camelCase or snake_case).

    Returns:
        The canonical response: one assistant message per candidate (``choice_index`` and its
        own finish reason), usage, id and model; ``failed`` for an ``{"error": ...}`` body.

    Raises:
        RemoteProtocolError: The body is not a ``GenerateContentResponse`` (not JSON, wrong
            JSON types, a function call whose arguments are not a JSON object).
    """
    data = body if isinstance(body, bytes | str) else _json.encode(body)
    try:
        chunk = decode_chunk(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RemoteProtocolError(f"invalid {PROTOCOL} response body: {exc}", protocol=PROTOCOL) from exc
    usage = usage_from_wire(_any.decode(chunk.usage_metadata)) if chunk.usage_metadata else None
    raw = response_fields(chunk)
    common: dict[str, Any] = {
        "protocol": PROTOCOL,
        "id": chunk.response_id,
        "model": chunk.model_version,
        "usage": usage,
        "provider_raw": raw or None,
    }
    if chunk.error is not None:
        return Response(status="failed", finish_reason="error", error=error_from_wire(chunk.error), **common)
    plain = _Plain(data)
    messages: list[Message] = []
    unknown: dict[str, int] = {}
    for position, cand in enumerate(chunk.candidates):
        messages.append(_message(cand, position, chunk, plain, unknown))
    finishes = [m.finish_reason for m in messages]
    status: ResponseStatus
    reason: FinishReason | None = next((f for f in finishes if f is not None), None)
    provider = next((c.finish_reason for c in chunk.candidates if c.finish_reason), None)
    blocked = block_reason(chunk)
    if not messages and blocked is not None:
        status, reason, provider = "incomplete", "content_filter", blocked
    elif messages and all(f is not None for f in finishes):
        status = "incomplete" if reason in KEEP_FINISH else "completed"
    else:
        status = "incomplete"
    return Response(
        status=status,
        finish_reason=reason,
        provider_finish_reason=provider,
        messages=messages,
        unknown=unknown,
        **common,
    )


class _Plain:
    """The body as plain JSON values, decoded only if a part of unknown kind needs it."""

    __slots__ = ("_data", "_value")

    def __init__(self, data: bytes | str) -> None:
        self._data = data
        self._value: Any = None

    def part(self, candidate: int, part: int) -> Any:
        if self._value is None:
            self._value = normalize(_any.decode(self._data))
        return self._value["candidates"][candidate]["content"]["parts"][part]


class _Ids:
    """Synthesized ids for one candidate's calls, as the stream decoder makes them."""

    __slots__ = ("calls", "content", "prefix")

    def __init__(self, rid: str, index: int, content: list[Part]) -> None:
        self.prefix = f"{SYNTH_PREFIX}{rid}_{index}_"
        self.calls = 0
        self.content = content

    def call(self) -> str:
        self.calls += 1
        return f"{self.prefix}{self.calls}"

    def server(self) -> str:
        return f"{self.prefix}s{len(self.content)}"


def _message(cand: Candidate, position: int, chunk: Chunk, plain: _Plain, unknown: dict[str, int]) -> Message:
    index = cand.index
    content: list[Part] = []
    ids = _Ids(chunk.response_id or "", index, content)
    for n, wire in enumerate(cand.content.parts if cand.content is not None else ()):
        for part in parts_from_wire(wire, partial(plain.part, position, n), ids.call, ids.server):
            if isinstance(part, UnknownPart):
                unknown[part.provider_type] = unknown.get(part.provider_type, 0) + 1
            content.append(part)
    fields = candidate_fields(cand)
    _annotate(content, citations_from_wire(fields))
    reason = finish_from_wire(cand.finish_reason)
    status: MessageStatus = "incomplete" if reason is None or reason in KEEP_FINISH else "completed"
    return Message(
        role="assistant",
        content=content,
        status=status,
        choice_index=index,
        finish_reason=reason,
        provider=PROTOCOL,
        provider_raw=fields or None,
    )


def _annotate(content: list[Part], citations: list[CitationPart]) -> None:
    """Put a candidate's citations on its last text part (or a new empty one), as the stream does."""
    if not citations:
        return
    last = next((i for i in range(len(content) - 1, -1, -1) if isinstance(content[i], TextPart)), None)
    if last is None:
        content.append(TextPart(text="", annotations=citations))
        return
    text = content[last]
    assert isinstance(text, TextPart)
    content[last] = msgspec.structs.replace(text, annotations=[*(text.annotations or ()), *citations])
