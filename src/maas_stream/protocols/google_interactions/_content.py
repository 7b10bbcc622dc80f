"""Interactions Content items and annotations ↔ canonical parts (a piece of the ``_steps`` mapping).

Content items (``text``, ``image``, ``audio``, ``document``, ``video``) appear in ``model_output``
and ``user_input`` steps, in function results and as media deltas; annotations
(``url_citation``, ``file_citation``, ``place_citation``, ...) ride on text. A content item
with fields the canonical part has no place for is kept whole as an ``unknown`` part.

Going back, what a Content item cannot carry (a signature on text, log-probabilities, an audio
transcript, an image known only by file id) is reported to the :class:`~maas_stream.DropLog`.
It must not hold state or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._model import AudioPart, CitationPart, FilePart, ImagePart, Part, TextPart, UnknownPart

if TYPE_CHECKING:
    from ..._drops import DropKind, DropLog

__all__ = [
    "annotation_from",
    "citation_from",
    "content_from_part",
    "is_content",
    "part_from_content",
    "report",
    "result_content",
    "result_wire",
]

CONTENT_TYPES: Final = frozenset({"text", "image", "audio", "document", "video"})
"""The Content item types."""

LOGPROBS: Final = "log-probabilities (Interactions has no such field)"
"""The drop of log-probabilities, wherever they are met (a delta, a text or refusal part)."""

_json = msgspec.json.Encoder()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _content_type(raw: Any) -> str | None:
    """The ``type`` of a Content item, or ``None`` when ``raw`` is not one."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    return kind if isinstance(kind, str) and kind in CONTENT_TYPES else None


# ---------------------------------------------------------------------------------- wire → parts


def citation_from(raw: Any) -> CitationPart:
    """Map an annotation (``url_citation``, ``file_citation``, ``place_citation``, ...)."""
    if not isinstance(raw, dict):
        return CitationPart(kind="unknown", raw=raw)
    return CitationPart(
        kind=_str(raw.get("type")) or "unknown",
        url=_str(raw.get("url")) or _str(raw.get("document_uri")),
        title=_str(raw.get("title")) or _str(raw.get("file_name")) or _str(raw.get("name")),
        start=_int(raw.get("start_index")),
        end=_int(raw.get("end_index")),
        raw=raw,
    )


def part_from_content(content: Any) -> Part:
    """Map one Content item to a part (kept whole as ``unknown`` when a field has no home)."""
    if not isinstance(content, dict):
        return UnknownPart(provider_type="content", raw=content)
    kind = content.get("type")
    text = content.get("text", "")
    if kind == "text" and isinstance(text, str):
        # A text block may open without its text (``{"type": "text"}``): its deltas bring it.
        annotations = content.get("annotations")
        return TextPart(
            text=text,
            annotations=[citation_from(a) for a in annotations] if isinstance(annotations, list) else None,
        )
    keys = set(content)
    if kind == "image" and keys <= {"type", "data", "uri", "mime_type"}:
        return ImagePart(
            data=_str(content.get("data")),
            url=_str(content.get("uri")),
            media_type=_str(content.get("mime_type")),
        )
    if kind == "audio" and keys <= {"type", "data", "mime_type"}:
        return AudioPart(data=_str(content.get("data")), format=_str(content.get("mime_type")))
    if kind == "document" and keys <= {"type", "data", "uri", "mime_type"}:
        return FilePart(
            data=_str(content.get("data")),
            url=_str(content.get("uri")),
            media_type=_str(content.get("mime_type")),
        )
    return UnknownPart(provider_type=_str(kind) or "content", raw=content)


def result_content(result: Any) -> list[Part] | str:
    """A ``function_result.result`` as tool-result content (objects as JSON text)."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(_content_type(c) is not None for c in result):
        return [part_from_content(c) for c in result]
    return _json.encode(result).decode()


# ---------------------------------------------------------------------------------- parts → wire


def is_content(part: Part, *, same: bool) -> bool:
    """Whether a part goes into a Content run (``model_output`` / ``user_input`` content).

    An ``unknown`` part holding a Content item counts only when it came from Interactions.
    """
    if isinstance(part, TextPart | ImagePart | AudioPart | FilePart):
        return True
    return same and isinstance(part, UnknownPart) and _content_type(part.raw) is not None


def content_from_part(
    part: Part, *, drops: DropLog | None, where: str | None = None
) -> dict[str, Any] | None:
    """A content part (see :func:`is_content`) → a Content item; ``None`` when it cannot be one.

    What the item cannot carry is reported to ``drops``.
    """
    if isinstance(part, TextPart):
        out: dict[str, Any] = {"type": "text", "text": part.text}
        if part.annotations:
            out["annotations"] = [annotation_from(c) for c in part.annotations]
        if part.signature is not None:
            report(drops, "signature", "signatures on text or media (Interactions content has none)", where)
        if part.logprobs:
            report(drops, "logprobs", LOGPROBS, where)
        return out
    if isinstance(part, ImagePart):
        if part.detail is not None:
            report(drops, "field", "image detail (Interactions images have no such field)", where)
        return _media("image", part.data, part.url, part.media_type, drops, where)
    if isinstance(part, AudioPart):
        if part.transcript:
            report(drops, "media", "audio transcripts (Interactions audio has no transcript)", where)
        return _media("audio", part.data, None, part.format, drops, where)
    if isinstance(part, FilePart):
        if part.filename is not None:
            report(drops, "field", "file names (Interactions documents have none)", where)
        return _media("document", part.data, part.url, part.media_type, drops, where)
    if isinstance(part, UnknownPart) and _content_type(part.raw) is not None:
        item: dict[str, Any] = part.raw
        return item
    return None


def _media(
    kind: str, data: str | None, uri: str | None, mime: str | None, drops: DropLog | None, where: str | None
) -> dict[str, Any] | None:
    if not data and not uri:
        report(
            drops,
            "media",
            f"{kind} content without data or a URI (a file id alone has no Interactions form)",
            where,
        )
        return None
    fields = (("data", data), ("uri", uri), ("mime_type", mime))
    return {"type": kind, **{key: value for key, value in fields if value}}


def annotation_from(citation: CitationPart) -> Any:
    """The wire annotation of a citation (its raw object when it came from Interactions)."""
    if isinstance(citation.raw, dict) and citation.raw.get("type") == citation.kind:
        return citation.raw
    fields = (
        ("url", citation.url),
        ("title", citation.title),
        ("start_index", citation.start),
        ("end_index", citation.end),
    )
    return {"type": "url_citation", **{key: value for key, value in fields if value is not None}}


def result_wire(content: list[Part] | str, *, drops: DropLog | None, where: str | None = None) -> Any:
    """Tool-result content back to a ``result`` value (parts that are not content are dropped)."""
    if isinstance(content, str):
        return content
    out: list[dict[str, Any]] = []
    for part in content:
        item = content_from_part(part, drops=drops, where=where) if is_content(part, same=True) else None
        if item is not None:
            out.append(item)
        elif not is_content(part, same=True):
            tag = part.__struct_config__.tag
            report(
                drops,
                "tool_result",
                f"{tag} parts inside a tool result (Interactions results hold content)",
                where,
            )
    return out


def report(drops: DropLog | None, kind: DropKind, what: str, where: str | None = None) -> None:
    """Record a drop when a log is given (every writer of this package reports through here)."""
    if drops is not None:
        drops.add(kind, what, where=where)
