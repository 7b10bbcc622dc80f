"""Canonical parts → Anthropic content blocks: the write side of this protocol's one mapping.

:class:`BlockWriter` is the one place that decides what a canonical part becomes in Anthropic:
the stream encoder asks it for each ``content_block_start`` (a part's start value, which carries
no content yet), the body encoder for a ``message``'s content, the history writer for a
request's blocks. The read side, usage, stop reasons and the ``message`` object are in
``_blocks``. Raw blocks, citations and server calls are written only for parts that came from
Anthropic; signatures and redacted thinking only where
:func:`~maas_stream.protocols._replay.replayable` allows. What cannot be written is recorded in
a :class:`~maas_stream.DropLog` (no provider id in ``what``: ids go to ``where``), never turned
into text. It holds no stream state and does no IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, assert_never

from ... import _model as m
from .._json import object_from_text
from .._names import ANTHROPIC as PROTOCOL
from .._replay import replayable
from ._blocks import SERVER_RESULT_TYPES

if TYPE_CHECKING:
    from ..._drops import DropKind, DropLog

__all__ = ["BlockWriter", "drop_kind"]

_CALL_BLOCKS: Final = {"function": "tool_use", "server": "server_tool_use", "mcp": "mcp_tool_use"}
_DELTA: Final = "content_block_delta"


_object_args = object_from_text


_PART_KINDS: Final[dict[type[Any], DropKind]] = {
    m.TextPart: "field",
    m.RefusalPart: "refusal",
    m.ImagePart: "media",
    m.AudioPart: "media",
    m.FilePart: "media",
    m.ToolCallPart: "field",
    m.ToolResultPart: "tool_result",
    m.ReasoningPart: "reasoning",
    m.CitationPart: "citation",
    m.CodePart: "code",
    m.UnknownPart: "unknown",
}


def drop_kind(part: m.Part) -> DropKind:
    """The drop kind of a whole part of this type."""
    if isinstance(part, m.ToolCallPart) and part.kind in ("server", "mcp"):
        return "server_call"
    return _PART_KINDS[type(part)]


class BlockWriter:
    """Canonical parts → Anthropic content blocks, for parts that came from one protocol.

    Args:
        origin: The protocol the parts came from (a stream's source, ``Response.protocol``,
            ``Message.provider``); ``None`` when unknown. Raw blocks, citations and server calls
            are written only for Anthropic's own parts; signatures and redacted thinking only
            where :func:`~maas_stream.protocols._replay.replayable` allows.
        drops: Where what cannot be written is recorded.
        request: Writing a request (history) rather than a response: thinking Anthropic did not
            sign is dropped (it cannot be sent back), and images and documents are kept.
    """

    __slots__ = ("_mcp", "drops", "native", "origin", "replay", "request")

    def __init__(self, origin: str | None, drops: DropLog, *, request: bool = False) -> None:
        self.origin = origin
        self.drops = drops
        self.request = request
        self.native = origin == PROTOCOL
        self.replay = replayable(origin, PROTOCOL)
        self._mcp: set[str] = set()
        """Ids of the MCP calls written: their results become ``mcp_tool_result`` blocks."""

    def drop(self, kind: DropKind, what: str, where: str | None = None) -> None:
        """Record one drop."""
        self.drops.add(kind, what, where=where)

    def blocks(self, parts: list[m.Part] | str, *, where: str | None = None) -> list[dict[str, Any]]:
        """The blocks of a message's content (a string is one text block)."""
        if isinstance(parts, str):
            return [{"type": "text", "text": parts}]
        out: list[dict[str, Any]] = []
        for part in parts:
            block = self.block(part, where=where)
            if block is not None:
                out.append(block)
        return out

    def block(
        self, part: m.Part, *, where: str | None = None, start: bool = False, assistant: bool = True
    ) -> dict[str, Any] | None:
        """The block for one part, or ``None`` when it was dropped (and recorded).

        Args:
            part: The part.
            where: Where it sits (``messages[3]``), for the drop records.
            start: Write a stream's ``content_block_start``: the part carries no content yet
                (it follows as deltas) and continuation state is reported at its end, through
                :meth:`drop_state`.
            assistant: The part sits in an assistant turn (tool results become
                ``mcp_tool_result`` there, ``tool_result`` elsewhere).
        """
        match part:
            case m.TextPart():
                return self._text(part, where, start)
            case m.RefusalPart():
                self.drop("refusal", "refusal sent as a text block (Anthropic has no refusal block)", where)
                if part.logprobs and not start:
                    self.drop_logprobs(where)
                return {"type": "text", "text": part.text}
            case m.ReasoningPart():
                return self._reasoning(part, where, start)
            case m.ToolCallPart():
                return self._call(part, start)
            case m.ToolResultPart():
                return self._result(part, where, assistant)
            case m.ImagePart() | m.FilePart():
                return self._source(part, where)
            case m.UnknownPart():
                return self._unknown(part, where)
            case m.AudioPart() | m.CodePart() | m.CitationPart():
                tag = part.__struct_config__.tag
                self.drop(drop_kind(part), f"{tag} part (no Anthropic block for it)", where)
                return None
            case _:
                assert_never(part)

    def citation(self, citation: m.CitationPart, where: str | None = None) -> dict[str, Any] | None:
        """A citation object, for an Anthropic source; others are dropped."""
        if self.native and isinstance(citation.raw, dict):
            raw: dict[str, Any] = citation.raw
            return raw
        self.drop("citation", f"citation of kind {citation.kind!r} (not an Anthropic citation)", where)
        return None

    def drop_frame(self, provider_type: str, *, session: bool = False, body: bool = False) -> None:
        """Record a response-level frame of unknown type (or a session frame) that is dropped.

        Args:
            provider_type: The frame's type.
            session: It is a known session or client frame of a websocket protocol.
            body: Writing a response body, which has no place for any frame, Anthropic's own
                included (a stream passes those through).
        """
        if session:
            self.drop("session_frame", f"{provider_type!r} frame (no Anthropic event for it)")
        elif body and self.native:
            self.drop("unknown", f"unknown {provider_type!r} event (a message body has no events)")
        else:
            self.drop("unknown", f"unknown {provider_type!r} frame (not an Anthropic event)")

    def drop_logprobs(self, where: str | None = None) -> None:
        """Record that token log-probabilities were dropped."""
        self.drop("logprobs", "logprobs (Anthropic has none)", where)

    def drop_state(self, part: m.Part, where: str | None = None) -> None:
        """Record the continuation state of a part that is not written back.

        Signatures of text and tool calls (Anthropic has no place for them) always; a thinking
        signature and redacted or encrypted reasoning when they may not be replayed here.
        """
        if isinstance(part, m.ReasoningPart):
            if self.replay:
                return
            if part.signature is not None:
                self.drop("signature", "thinking signature (only its maker can verify it)", where)
            if part.data is not None or part.encrypted_content is not None or part.redacted:
                self.drop("encrypted_reasoning", "encrypted reasoning (only its maker can read it)", where)
        elif isinstance(part, m.TextPart) and part.signature is not None:
            self.drop("signature", "text signature (Anthropic text carries none)", where)
        elif isinstance(part, m.ToolCallPart) and part.signature is not None:
            self.drop("signature", "tool call signature (Anthropic tool_use carries none)", where or part.id)

    # ------------------------------------------------------------------ per part type

    def _text(self, part: m.TextPart, where: str | None, start: bool) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "text", "text": part.text}
        citations = [c for c in (self.citation(n, where) for n in part.annotations or ()) if c is not None]
        if citations:
            block["citations"] = citations
        if not start:
            self.drop_state(part, where)
            if part.logprobs:
                self.drop_logprobs(where)
        return block

    def _reasoning(self, part: m.ReasoningPart, where: str | None, start: bool) -> dict[str, Any] | None:
        if self.replay:
            if part.redacted or part.data is not None:
                if part.data is None and self.request:
                    self.drop("encrypted_reasoning", "redacted thinking without its data", where)
                    return None
                return {"type": "redacted_thinking", "data": part.data or ""}
            if self.request and not part.signature:
                self.drop("reasoning", "thinking without a signature (Anthropic cannot take it back)", where)
                return None
            return {"type": "thinking", "thinking": part.text or "", "signature": part.signature or ""}
        text = part.text or "".join(part.summary or ())
        if self.request:
            # Anthropic takes back only thinking it signed: other reasoning cannot be sent.
            opaque = part.data is not None or part.encrypted_content is not None or part.redacted
            if opaque:
                self.drop("encrypted_reasoning", "encrypted reasoning (only its maker can read it)", where)
            elif text or part.signature is not None:
                self.drop("reasoning", "reasoning Anthropic did not sign (it cannot take it back)", where)
            return None
        if not start:
            self.drop_state(part, where)
            if not text:
                return None
        return {"type": "thinking", "thinking": text, "signature": ""}

    def _call(self, part: m.ToolCallPart, start: bool) -> dict[str, Any] | None:
        kind = part.kind
        if kind == "custom":
            what = f"custom tool call {part.name!r} (Anthropic tool input is a JSON object)"
            self.drop("field", what, part.id)
            return None
        if kind == "server" and not self.native:
            self.drop("server_call", f"server tool call {part.name!r}: no Anthropic equivalent", part.id)
            return None
        if not start:
            self.drop_state(part)
        args = _object_args(part.arguments)
        if args is None:
            self.drop("field", "tool call arguments that are not a JSON object (sent as {})", part.id)
            args = {}
        block: dict[str, Any] = {"type": _CALL_BLOCKS[kind], "id": part.id, "name": part.name, "input": args}
        if kind == "mcp":
            block["server_name"] = part.server_name or ""
            self._mcp.add(part.id)
        return block

    def _result(self, part: m.ToolResultPart, where: str | None, assistant: bool) -> dict[str, Any] | None:
        content = part.content
        first = content[0] if isinstance(content, list) and len(content) == 1 else None
        if (
            self.native
            and isinstance(first, m.UnknownPart)
            and first.provider_type in SERVER_RESULT_TYPES
            and isinstance(first.raw, dict)
            and first.raw.get("type") == first.provider_type
        ):
            raw: dict[str, Any] = first.raw
            return raw  # a server tool's result block, as it came
        if assistant and not (self.native or part.tool_call_id in self._mcp):
            self.drop(
                "tool_result", "tool result in an assistant turn (Anthropic has no block for it)", where
            )
            return None
        block: dict[str, Any] = {
            "type": "mcp_tool_result" if assistant else "tool_result",
            "tool_use_id": part.tool_call_id,
        }
        if isinstance(content, str):
            block["content"] = content
        else:
            inner = (self.block(p, where=where, assistant=False) for p in content)
            block["content"] = [b for b in inner if b is not None]
        if part.is_error is not None or (assistant and not self.request):
            block["is_error"] = bool(part.is_error)  # required in a response's mcp_tool_result
        return block

    def _source(self, part: m.ImagePart | m.FilePart, where: str | None) -> dict[str, Any] | None:
        kind = "image" if isinstance(part, m.ImagePart) else "document"
        tag = part.__struct_config__.tag
        if not self.request:
            self.drop("media", f"{tag} part (no Anthropic output block for it)", where)
            return None
        source: dict[str, Any]
        if part.data is not None:
            default = "image/png" if kind == "image" else "application/pdf"
            source = {"type": "base64", "media_type": part.media_type or default, "data": part.data}
        elif part.url is not None:
            source = {"type": "url", "url": part.url}
        elif part.file_id is not None:
            source = {"type": "file", "file_id": part.file_id}
        else:
            self.drop("media", f"{tag} part without data, URL or file id", where)
            return None
        block: dict[str, Any] = {"type": kind, "source": source}
        if isinstance(part, m.FilePart) and part.filename is not None:
            block["title"] = part.filename
        return block

    def _unknown(self, part: m.UnknownPart, where: str | None) -> dict[str, Any] | None:
        raw = part.raw
        if not self.native or not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            self.drop("unknown", f"unknown {part.provider_type!r} part (not an Anthropic block)", where)
            return None
        if raw["type"] == _DELTA:
            self.drop("unknown", f"unknown {part.provider_type!r} delta (only a stream has deltas)", where)
            return None
        block: dict[str, Any] = raw
        return block
