"""Wire objects every OpenAI protocol shares: annotations → citations, error objects → errors.

Chat ``annotations[]``, Responses ``annotations[]`` and the OpenAI error object
(``{"message", "type", "code", ...}``, which Chat chunks, Responses bodies and Realtime
``error`` events carry) have one shape across the family, so one reader serves Chat, Responses
and Realtime; each package imports it from here (a protocol package imports no other protocol
package). Writing them back is each protocol's own mapping (Chat nests a ``url_citation``,
Responses flattens it).

It must not hold state, know a stream's event grammar or do IO.
"""

from __future__ import annotations

from typing import Any

from .._model import CitationPart, StreamError

__all__ = ["citation_from_annotation", "error_from"]


def error_from(raw: Any) -> StreamError:
    """An OpenAI-style error object (``{"message", "type", "code", ...}``) → a StreamError."""
    if isinstance(raw, dict):
        code = raw.get("code")
        message = raw.get("message")
        return StreamError(
            type=str(raw.get("type") or "error"),
            message=message if isinstance(message, str) else None,
            code=None if code is None else str(code),
            raw=raw,
        )
    return StreamError(type="error", message=str(raw), raw=raw)


def citation_from_annotation(raw: Any) -> CitationPart:
    """An OpenAI annotation (Chat ``annotations[]`` or Responses ``annotations[]``) → a citation."""
    if not isinstance(raw, dict):
        return CitationPart(kind="unknown", raw=raw)
    named = raw.get("type")
    kind = named if isinstance(named, str) and named else "unknown"  # never str() of a tree
    inner = raw.get(kind)
    body: dict[str, Any] = inner if isinstance(inner, dict) else raw
    start = body.get("start_index")
    end = body.get("end_index")
    content = body.get("content")
    return CitationPart(
        kind=kind,
        url=_str(body.get("url")),
        title=_str(body.get("title")),
        file_id=_str(body.get("file_id")),
        start=start if type(start) is int else None,
        end=end if type(end) is int else None,
        cited_text=content if isinstance(content, str) else None,
        raw=raw,
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
