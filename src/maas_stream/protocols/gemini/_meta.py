"""Gemini response metadata ↔ canonical: usage, finish reasons, citations, errors.

That is ``usageMetadata``, ``finishReason``, citation and grounding metadata, candidate fields
with no canonical home, and error bodies.

This is the one mapping of these fields, both ways: the stream decoder and :func:`decode_response`
read with the ``*_from_wire`` functions; the stream encoder and :func:`encode_response` write with
the ``*_to_wire`` functions, so a body and a stream made from the same
:class:`~maas_stream.Response` carry the same usage and finish reasons.

Choices:

* ``output_tokens`` counts answer and thought tokens (``candidatesTokenCount`` excludes
  thoughts; canonical output, like OpenAI's ``completion_tokens``, includes them).
* ``input_tokens`` counts every prompt token: ``promptTokenCount`` (which already holds the
  cached content, ``cache_read_tokens``) plus ``toolUsePromptTokenCount``, which Gemini counts
  apart; so ``totalTokenCount`` is input plus output, as DESIGN wants.
* ``finishReason`` maps by :data:`FINISH_REASONS`; anything else (``MALFORMED_FUNCTION_CALL``,
  ``OTHER``, ``LANGUAGE``, ...) is ``other``, with the raw value kept. Whether a turn that ends
  with client calls finishes ``tool_calls`` is the aggregator's rule, not decided here.
* A candidate that was cut (its message ``incomplete`` for a reason other than ``length`` or
  ``content_filter``) gets no ``finishReason``, so the output reads as cut as its source did.

It must not hold state, build events or decide what is dropped beyond the fields it writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._model import CitationPart, FinishReason, StreamError, Usage
from ..._usage import google_split, google_usage

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = [
    "FINISH_REASONS",
    "KEEP_FINISH",
    "RESPONSE_FIELDS",
    "candidate_fields_to_wire",
    "citation_to_wire",
    "citations_from_wire",
    "error_from_wire",
    "error_to_wire",
    "finish_from_wire",
    "finish_to_wire",
    "usage_from_wire",
    "usage_to_wire",
]

FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}
"""Gemini ``finishReason`` → canonical (anything else is ``other``)."""

_FINISH_WIRE: Final[dict[FinishReason, str]] = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "refusal": "SAFETY",
    "pause": "OTHER",
    "error": "OTHER",
    "other": "OTHER",
}
"""Canonical → Gemini ``finishReason`` (Gemini has no "tool calls" reason: a call turn is ``STOP``)."""

KEEP_FINISH: Final = frozenset({"length", "content_filter"})
"""Canonical reasons that leave a response ``incomplete`` yet are written as its finish."""

RESPONSE_FIELDS: Final = ("createTime", "modelStatus", "promptFeedback")
"""Response fields with no canonical home: kept whole in ``Response.provider_raw``."""


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------- usage


def usage_from_wire(raw: Any) -> Usage | None:
    """Map ``usageMetadata`` to canonical usage (``None`` when it is not an object).

    Input is ``promptTokenCount`` (cached content included) plus ``toolUsePromptTokenCount``;
    output is ``candidatesTokenCount`` plus ``thoughtsTokenCount`` (``_usage.google_usage``).
    """
    if not isinstance(raw, dict):
        return None
    return google_usage(
        prompt=_int(raw.get("promptTokenCount")),
        tool_use=_int(raw.get("toolUsePromptTokenCount")),
        answer=_int(raw.get("candidatesTokenCount")),
        thoughts=_int(raw.get("thoughtsTokenCount")),
        cached=_int(raw.get("cachedContentTokenCount")),
        reported_total=_int(raw.get("totalTokenCount")),
        raw=raw,
    )


def usage_to_wire(usage: Usage, *, own: bool) -> dict[str, Any]:
    """``usageMetadata`` for canonical usage: the one rendering of the body and the stream.

    Args:
        usage: The canonical usage.
        own: The usage came from Gemini: start from its raw object (details, traffic type,
            ``toolUsePromptTokenCount``, its own ``totalTokenCount``), with the other counts
            restated from the canonical fields so that they read back the same.
    """
    body: dict[str, Any] = dict(usage.raw) if own and isinstance(usage.raw, dict) else {}
    counts = google_split(usage, tool_use=_int(body.get("toolUsePromptTokenCount")) or 0)
    if counts.prompt is not None:
        body["promptTokenCount"] = counts.prompt
    if usage.output_tokens is not None:
        if counts.answer or not counts.thoughts:
            body["candidatesTokenCount"] = counts.answer
        else:
            body.pop("candidatesTokenCount", None)  # Gemini leaves it out when only thoughts were counted
    if counts.total is not None:
        # A Gemini source's own total goes back as it came (the canonical one is input +
        # output, which a hand-made or odd ``totalTokenCount`` may not be).
        body.setdefault("totalTokenCount", counts.total)
    if counts.cached is not None:
        body["cachedContentTokenCount"] = counts.cached
    if counts.thoughts is not None:
        body["thoughtsTokenCount"] = counts.thoughts
    return body


# ---------------------------------------------------------------------- finish


def finish_from_wire(raw: str | None) -> FinishReason | None:
    """A Gemini ``finishReason`` (or ``blockReason``) as the canonical reason."""
    if not raw:
        return None
    return FINISH_REASONS.get(raw, "other")


def finish_to_wire(
    reason: FinishReason | None, *, status: str | None, provider: str | None, own: bool
) -> str | None:
    """The ``finishReason`` of a candidate that ended with ``reason``; ``None`` when it was cut.

    Args:
        reason: The canonical finish reason.
        status: The message's (or response's) status: ``incomplete`` or ``failed`` with a reason
            other than ``length``/``content_filter`` means the source was cut, and so is the output.
        provider: The provider's own reason, written back when it came from Gemini and agrees.
        own: The reason came from a Gemini stream.
    """
    if reason is None or (status in ("incomplete", "failed") and reason not in KEEP_FINISH):
        return None
    if own and provider:
        theirs = finish_from_wire(provider)
        if theirs == reason or (theirs == "stop" and reason == "tool_calls"):
            return provider
    return _FINISH_WIRE[reason]


# ---------------------------------------------------------------------- citations


def citations_from_wire(fields: dict[str, Any]) -> list[CitationPart]:
    """Citations of a candidate: ``citationMetadata`` sources and grounding supports/chunks."""
    out: list[CitationPart] = []
    meta = fields.get("citationMetadata")
    if isinstance(meta, dict):
        sources = meta.get("citationSources") or meta.get("citations") or []
        out.extend(
            CitationPart(
                kind="citation_source",
                url=_str(src.get("uri")),
                title=_str(src.get("title")),
                start=_int(src.get("startIndex")),
                end=_int(src.get("endIndex")),
                raw=src,
            )
            for src in (sources if isinstance(sources, list) else ())
            if isinstance(src, dict)
        )
    grounding = fields.get("groundingMetadata")
    if isinstance(grounding, dict):
        out.extend(_grounding(grounding))
    return out


def _grounding(grounding: dict[str, Any]) -> list[CitationPart]:
    chunks = grounding.get("groundingChunks")
    chunks = chunks if isinstance(chunks, list) else []
    supports = grounding.get("groundingSupports")
    out: list[CitationPart] = []
    used: set[int] = set()
    for support in supports if isinstance(supports, list) else ():
        if not isinstance(support, dict):
            continue
        raw_segment = support.get("segment")
        segment: dict[str, Any] = raw_segment if isinstance(raw_segment, dict) else {}
        indices = support.get("groundingChunkIndices")
        for i in indices if isinstance(indices, list) else ():
            if type(i) is int and 0 <= i < len(chunks):
                used.add(i)
                out.append(_chunk_citation(chunks[i], segment, support))
    for i, chunk in enumerate(chunks):
        if i not in used:
            out.append(_chunk_citation(chunk, {}, None))
    return out


def _chunk_citation(chunk: Any, segment: dict[str, Any], support: Any) -> CitationPart:
    source: dict[str, Any] = {}
    if isinstance(chunk, dict):
        for key in ("web", "retrievedContext", "maps", "image"):
            if isinstance(chunk.get(key), dict):
                source = chunk[key]
                break
    return CitationPart(
        kind="grounding_chunk",
        url=_str(source.get("uri")),
        title=_str(source.get("title")),
        start=_int(segment.get("startIndex")),
        end=_int(segment.get("endIndex")),
        cited_text=_str(segment.get("text")),
        raw={"chunk": chunk, "support": support} if support is not None else {"chunk": chunk},
    )


def citation_to_wire(cite: CitationPart, drops: DropLog) -> dict[str, Any] | None:
    """A ``citationMetadata.citationSources[]`` entry for a citation of another protocol.

    A citation without a URL, and a citation's title, have no place there: dropped (reported).
    """
    if cite.url is None:
        drops.add("citation", f"citation of kind {cite.kind!r} without a URL")
        return None
    source: dict[str, Any] = {"uri": cite.url}
    if cite.start is not None:
        source["startIndex"] = cite.start
    if cite.end is not None:
        source["endIndex"] = cite.end
    if cite.title is not None:
        drops.add("citation", "citation titles (Gemini API citationSources have none)")
    return source


def candidate_fields_to_wire(provider_raw: Any) -> dict[str, Any]:
    """A Gemini message's own candidate fields (safety ratings, grounding, ...) to write back."""
    if not isinstance(provider_raw, dict):
        return {}
    return {k: v for k, v in provider_raw.items() if k not in ("content", "index", "finishReason")}


# ---------------------------------------------------------------------- errors


def error_from_wire(raw: Any) -> StreamError:
    """Map a Google error object ``{code, message, status}`` to a StreamError."""
    if not isinstance(raw, dict):
        return StreamError(type="error", message=str(raw), raw=raw)
    code = raw.get("code")
    status = _str(raw.get("status")) or "error"
    return StreamError(
        type=status, message=_str(raw.get("message")), code=None if code is None else str(code), raw=raw
    )


def error_to_wire(error: StreamError) -> dict[str, Any]:
    """A Google error object ``{code, message, status}`` (the provider's own when it is one)."""
    raw = error.raw
    if isinstance(raw, dict) and "message" in raw and type(raw.get("code")) is int and "status" in raw:
        return raw
    code = int(error.code) if error.code is not None and error.code.isdigit() else 500
    return {"code": code, "message": error.message or error.type, "status": error.type.upper()}
