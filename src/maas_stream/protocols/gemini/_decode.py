"""Gemini ``streamGenerateContent?alt=sse`` decoder: ``GenerateContentResponse`` chunks → events.

Keys it emits: ``message`` is the candidate index (an ``int``); ``part`` is the ordinal of the
canonical part within that candidate (an ``int``). The decoder decides where a part ends, because
Gemini sends no part boundaries: consecutive text parts of the same kind (thought vs answer) are
one run (a new run starts when a second ``thoughtSignature`` arrives on the same run), every
``functionCall`` with a ``name`` is its own call, and a Vertex streamed call (``willContinue``)
lasts until its terminal ``functionCall`` without ``partialArgs``/``willContinue``.

Choices documented here (PROTOCOLS.md §4):

* Messages have role ``assistant`` (the canonical role; Gemini's ``model``) and
  ``provider="google"``; ``choice_index`` is the candidate index.
* Calls without an ``id`` get a stable synthesized one, ``maas_gc_<responseId>_<candidate>_<n>``
  (same bytes, same ids); the history codec never sends such an id back to Gemini.
* A ``thoughtSignature`` stays on the part it came with: ``TextPart.signature``,
  ``ReasoningPart.signature``, ``ToolCallPart.signature``. On a part whose canonical type has no
  signature field (code, image, file, function response) it is kept as an ``unknown`` part of type
  ``gemini.thought_signature`` placed right before that part.
* A streamed call still open when another part, the finish reason or the end of input arrives is
  cut: it ends ``incomplete`` and so does the response.
* Gemini sends no terminator: ``ResponseDone`` comes from :meth:`StreamDecoder.finish` when every
  candidate seen had a ``finishReason`` (or the prompt was blocked); otherwise the response ends
  ``incomplete``.

It keeps only framing-local state per candidate (the current run and the open streamed call).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET

from ..._exceptions import RemoteProtocolError
from ..._model import (
    AudioPart,
    CitationPart,
    CodePart,
    FilePart,
    FinishReason,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    StreamError,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from ...events import (
    AnnotationAdded,
    ArgumentsDelta,
    Event,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    StreamErrorEvent,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import SSEStreamDecoder
from ._args import ArgsWriter
from ._wire import CANDIDATE_EXTRAS, Candidate, FunctionCall, WirePart, decode_any, decode_chunk, raw_part

__all__ = [
    "FINISH_REASONS",
    "SIGNATURE_TYPE",
    "StreamDecoder",
    "citations_from",
    "error_from",
    "media_part",
    "usage_from",
]

from .._names import GEMINI as PROTOCOL

SIGNATURE_TYPE: Final = "gemini.thought_signature"
"""``UnknownPart.provider_type`` of a signature kept for the part that follows it."""
SYNTH_PREFIX: Final = "maas_gc_"

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
"""Gemini ``finishReason`` → canonical; anything else (``MALFORMED_FUNCTION_CALL``, ``OTHER``,
``LANGUAGE``, ...) is ``other``, with the raw value in ``provider_finish_reason``."""


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def usage_from(raw: Any) -> Usage | None:
    """Map ``usageMetadata`` to canonical usage.

    ``output_tokens`` counts answer and thought tokens (``candidatesTokenCount`` excludes
    thoughts; canonical output, like OpenAI's ``completion_tokens``, includes them).
    """
    if not isinstance(raw, dict):
        return None
    candidates = _int(raw.get("candidatesTokenCount"))
    thoughts = _int(raw.get("thoughtsTokenCount"))
    output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    return Usage(
        input_tokens=_int(raw.get("promptTokenCount")),
        output_tokens=output,
        total_tokens=_int(raw.get("totalTokenCount")),
        reasoning_tokens=thoughts,
        cache_read_tokens=_int(raw.get("cachedContentTokenCount")),
        raw=raw,
    )


def error_from(raw: Any) -> StreamError:
    """Map a Google error object ``{code, message, status}`` to a StreamError."""
    if isinstance(raw, dict):
        message = raw.get("message")
        code = raw.get("code")
        return StreamError(
            type=str(raw.get("status") or "error"),
            message=message if isinstance(message, str) else None,
            code=None if code is None else str(code),
            raw=raw,
        )
    return StreamError(type="error", message=str(raw), raw=raw)


def media_part(mime: str | None, data: str | None, url: str | None, name: str | None) -> Part:
    """An ``inlineData`` / ``fileData`` part as an image, audio or file part by MIME type."""
    if mime is not None and mime.startswith("image/"):
        return ImagePart(url=url, data=data, media_type=mime)
    if mime is not None and mime.startswith("audio/") and url is None:
        return AudioPart(data=data, format=mime)
    return FilePart(url=url, data=data, filename=name, media_type=mime)


def citations_from(extras: dict[str, Any]) -> list[CitationPart]:
    """Citations of a candidate: ``citationMetadata`` sources and grounding supports/chunks."""
    out: list[CitationPart] = []
    meta = extras.get("citationMetadata")
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
    grounding = extras.get("groundingMetadata")
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


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Candidate:
    """Framing-local state of one candidate."""

    __slots__ = (
        "call",
        "calls",
        "cut",
        "extras",
        "finish",
        "index",
        "key",
        "kind",
        "last_text",
        "signed",
        "writer",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.key = -1
        """The current part's key (the part ordinal)."""
        self.kind = ""
        """The open run: ``"text"``, ``"thought"``, ``"stream"`` (a streamed call) or ``""``."""
        self.signed = False
        self.calls = 0
        self.call: ToolCallPart | None = None
        self.writer: ArgsWriter | None = None
        self.cut = False
        self.finish: str | None = None
        self.last_text: int | None = None
        self.extras: dict[str, Any] = {}


class StreamDecoder(SSEStreamDecoder):
    """Decode a Gemini ``streamGenerateContent?alt=sse`` stream (Gemini API and Vertex).

    Handles every part field of PROTOCOLS.md §4.6 (text, thoughts, signatures on any part,
    inline and file data, whole and streamed function calls, function responses, executable
    code and results, server-side tool calls and responses; unknown parts are kept), several
    candidates, ``promptFeedback`` blocks, citation and grounding metadata, usage, and in-stream
    ``{"error": ...}`` chunks. Field names may be camelCase or snake_case.
    """

    protocol = PROTOCOL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._started = False
        self._rid = ""
        self._cands: dict[int, _Candidate] = {}
        self._blocked: str | None = None
        self._error = False
        self._usage: Any = None
        """The latest ``usageMetadata``, not yet emitted. Gemini repeats usage on every chunk and
        the last one is authoritative, so it is emitted once: before a candidate's finish, before
        an error, and at the end of input."""

    # ------------------------------------------------------------------ frames

    def on_frame(self, event: str, data: bytes | str) -> list[Event]:
        # The raw-bytes fast path: the typed decode reads the payload as it came; a blank
        # keep-alive (or bad bytes) is told apart only when the decode fails.
        try:
            chunk = decode_chunk(data)
        except msgspec.DecodeError:
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            if not text.strip():
                return []
            raise
        out: list[Event] = []
        if chunk.usage_metadata:
            self._usage = chunk.usage_metadata
        if chunk.error is not None:
            self._error = True
            self._flush_usage(out)
            out.append(StreamErrorEvent(error=error_from(chunk.error)))
            return out
        if not self._started:
            self._started = True
            self._rid = chunk.response_id or ""
            raw: dict[str, Any] = {}
            if chunk.create_time:
                raw["createTime"] = decode_any(chunk.create_time)
            if chunk.model_status is not None:
                raw["modelStatus"] = chunk.model_status
            if chunk.prompt_feedback is not None:
                raw["promptFeedback"] = chunk.prompt_feedback
            out.append(
                ResponseStart(
                    protocol=PROTOCOL,
                    id=chunk.response_id,
                    model=chunk.model_version,
                    provider_raw=raw or None,
                )
            )
        feedback = chunk.prompt_feedback
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            self._blocked = feedback["blockReason"]
        for position, cand in enumerate(chunk.candidates):
            self._candidate(cand, position, data, out)
        return out

    def _flush_usage(self, out: list[Event]) -> None:
        if self._usage is not None:
            usage = usage_from(decode_any(self._usage))
            self._usage = None
            if usage is not None:
                out.append(UsageUpdate(usage=usage))

    def on_finish(self) -> list[Event]:
        out: list[Event] = []
        self._flush_usage(out)
        for c in self._cands.values():
            if c.finish is None:
                self._close_candidate(c, out, None)
        if self._error:
            return out
        first = next(iter(self._cands.values()), None)
        if first is not None and all(c.finish is not None for c in self._cands.values()):
            assert first.finish is not None
            out.append(
                ResponseDone(
                    status="incomplete" if any(c.cut for c in self._cands.values()) else None,
                    finish_reason=self._reason(first),
                    provider_finish_reason=first.finish,
                )
            )
        elif first is None and self._blocked is not None:
            out.append(ResponseDone(finish_reason="content_filter", provider_finish_reason=self._blocked))
        return out

    # ------------------------------------------------------------------ candidates

    def _candidate(self, cand: Candidate, position: int, data: bytes | str, out: list[Event]) -> None:
        index = cand.index
        c = self._cands.get(index)
        if c is None:
            c = self._cands[index] = _Candidate(index)
            out.append(MessageStart(message=index, role="assistant", choice_index=index))
        content = cand.content
        if content is not None:
            for n, part in enumerate(content.parts):
                if not self._part(c, part, out):
                    self._unknown(c, raw_part(data, position, n), out)
        if (
            cand.safety_ratings
            or cand.grounding_metadata
            or cand.citation_metadata
            or cand.url_context_metadata
            or cand.finish_message
            or cand.avg_logprobs
            or cand.logprobs_result
            or cand.token_count
        ):
            for attr, name in CANDIDATE_EXTRAS:
                value = getattr(cand, attr)
                if value:
                    decoded = decode_any(value)
                    if decoded is not None and decoded != {}:
                        c.extras[name] = decoded
        if cand.finish_reason:
            c.finish = cand.finish_reason
            self._close_candidate(c, out, cand.finish_reason)

    def _reason(self, c: _Candidate) -> FinishReason:
        reason = FINISH_REASONS.get(c.finish or "", "other")
        if reason == "stop" and c.calls:
            return "tool_calls"
        return reason

    def _close_candidate(self, c: _Candidate, out: list[Event], finish: str | None) -> None:
        if c.kind == "stream":
            self._cut(c, out)
        index = c.index
        citations = citations_from(c.extras)
        if citations:
            key = c.last_text
            if key is None:
                key = self._new_key(c, out)
                out.append(PartStart(message=index, part=key, value=TextPart(text="")))
            out.extend(AnnotationAdded(message=index, part=key, citation=cite) for cite in citations)
        c.kind = ""
        reason = self._reason(c) if finish is not None else None
        self._flush_usage(out)
        value = Message(
            role="assistant",
            choice_index=index,
            finish_reason=reason,
            provider="google",
            provider_raw=dict(c.extras) or None,
        )
        out.append(
            MessageDone(
                message=index,
                status="incomplete" if c.cut or finish is None else None,
                finish_reason=reason,
                provider_finish_reason=finish,
                value=value,
            )
        )

    # ------------------------------------------------------------------ parts

    def _new_key(self, c: _Candidate, out: list[Event]) -> int:
        if c.key >= 0 and c.kind in ("text", "thought"):
            out.append(PartDone(message=c.index, part=c.key))
        c.key += 1
        c.kind = ""
        c.signed = False
        return c.key

    def _part(self, c: _Candidate, part: WirePart, out: list[Event]) -> bool:
        """Emit the events of one part; ``False`` when it is of no known kind."""
        text = part.text
        if text is not UNSET and c.kind != "stream":
            self._text(c, text, part, out)
            return True
        call = part.function_call
        if call is not None:
            self._function_call(c, part, call, out)
            return True
        if c.kind == "stream":
            self._cut(c, out)
        if text is not UNSET:
            self._text(c, text, part, out)
            return True
        value = self._other(c, part)
        if value is None:
            return False
        index = c.index
        if part.thought_signature and not isinstance(value, ToolCallPart):
            key = self._new_key(c, out)
            sig: dict[str, Any] = {"thoughtSignature": part.thought_signature}
            out.append(UnknownEvent(provider_type=SIGNATURE_TYPE, raw=sig, message=index, part=key))
        key = self._new_key(c, out)
        out.append(PartStart(message=index, part=key, value=value))
        out.append(PartDone(message=index, part=key))
        return True

    def _text(self, c: _Candidate, text: str, part: WirePart, out: list[Event]) -> None:
        kind = "thought" if part.thought else "text"
        sig = part.thought_signature
        if not text and not sig:
            return  # an empty text part carries nothing (Gemini sends one with the finish reason)
        index = c.index
        if c.kind != kind or (sig and c.signed):
            key = self._new_key(c, out)
            c.kind = kind
            value: Part = ReasoningPart() if kind == "thought" else TextPart(text="")
            out.append(PartStart(message=index, part=key, value=value))
        key = c.key
        if sig:
            c.signed = True
            out.append(SignatureDelta(message=index, part=key, signature=sig))
        if kind == "text":
            c.last_text = key
            if text:
                out.append(TextDelta(message=index, part=key, text=text))
        elif text:
            out.append(ReasoningDelta(message=index, part=key, text=text))

    def _other(self, c: _Candidate, part: WirePart) -> Part | None:
        if part.inline_data is not None:
            blob = part.inline_data
            return media_part(blob.mime_type, blob.data, None, blob.display_name)
        if part.file_data is not None:
            fd = part.file_data
            return media_part(fd.mime_type, None, fd.file_uri, fd.display_name)
        if part.executable_code is not None:
            code = part.executable_code
            return CodePart(language=code.language, code=code.code)
        if part.code_execution_result is not None:
            result = part.code_execution_result
            return CodePart(outcome=result.outcome, output=result.output)
        if isinstance(part.tool_call, dict):
            tc = part.tool_call
            args = tc.get("args")
            return ToolCallPart(
                id=str(tc.get("id") or f"{SYNTH_PREFIX}{self._rid}_{c.index}_s{c.key + 1}"),
                name=str(tc.get("toolType") or ""),
                arguments=msgspec.json.encode(args if args is not None else {}).decode(),
                kind="server",
                signature=part.thought_signature,
                status="completed",
            )
        if isinstance(part.tool_response, dict):
            tr = part.tool_response
            return ToolResultPart(
                tool_call_id=str(tr.get("id") or ""),
                name=str(tr.get("toolType") or ""),
                content=msgspec.json.encode(tr.get("response", {})).decode(),
            )
        if isinstance(part.function_response, dict):
            fr = part.function_response
            return ToolResultPart(
                tool_call_id=str(fr.get("id") or ""),
                name=_str(fr.get("name")),
                content=msgspec.json.encode(fr.get("response", {})).decode(),
            )
        return None

    def _unknown(self, c: _Candidate, raw: Any, out: list[Event]) -> None:
        if c.kind == "stream":
            self._cut(c, out)
        field = (
            next((k for k in raw if k not in ("thought", "thoughtSignature")), "part")
            if isinstance(raw, dict)
            else "part"
        )
        key = self._new_key(c, out)
        out.append(UnknownEvent(provider_type=f"part.{field}", raw=raw, message=c.index, part=key))

    # ------------------------------------------------------------------ function calls

    def _function_call(self, c: _Candidate, part: WirePart, call: FunctionCall, out: list[Event]) -> None:
        index = c.index
        if call.name is None and c.kind == "stream":
            self._continue_call(c, part, call, out)
            return
        if call.name is None and call.args is UNSET and not call.partial_args and not call.will_continue:
            return  # a bare terminal marker with no call open: nothing to close
        if c.kind == "stream":
            self._cut(c, out)
        key = self._new_key(c, out)
        c.calls += 1
        call_id = call.id or f"{SYNTH_PREFIX}{self._rid}_{c.index}_{c.calls}"
        name = call.name or ""
        sig = part.thought_signature
        if call.will_continue:
            value = ToolCallPart(id=call_id, name=name, arguments="", signature=sig)
            out.append(PartStart(message=index, part=key, value=value))
            c.kind = "stream"
            c.call = value
            c.writer = ArgsWriter()
            if call.partial_args:
                self._partial(c, call, out)
            return
        if call.args is not UNSET:
            arguments = bytes(call.args).decode()
        elif call.partial_args:
            writer = ArgsWriter()
            for arg in call.partial_args:
                writer.feed(arg)
            writer.finish()
            arguments = writer.final_text() or writer.text
        else:
            arguments = "{}"
        value = ToolCallPart(id=call_id, name=name, arguments=arguments, signature=sig)
        out.append(PartStart(message=index, part=key, value=value))
        out.append(PartDone(message=index, part=key))

    def _partial(self, c: _Candidate, call: FunctionCall, out: list[Event]) -> None:
        writer = c.writer
        assert writer is not None
        for arg in call.partial_args or ():
            delta = writer.feed(arg)
            if delta:
                out.append(ArgumentsDelta(message=c.index, part=c.key, delta=delta))

    def _continue_call(self, c: _Candidate, part: WirePart, call: FunctionCall, out: list[Event]) -> None:
        if part.thought_signature:
            out.append(SignatureDelta(message=c.index, part=c.key, signature=part.thought_signature))
        if call.partial_args:
            self._partial(c, call, out)
            return
        if call.will_continue:
            return  # a keep-going marker between arguments
        writer = c.writer
        assert writer is not None
        out.append(ArgumentsDelta(message=c.index, part=c.key, delta=writer.finish()))
        final = writer.final_text()
        value = None
        if final is not None and c.call is not None:
            value = msgspec.structs.replace(c.call, arguments=final, status="completed")
        out.append(PartDone(message=c.index, part=c.key, value=value))
        c.kind = ""
        c.call = None
        c.writer = None

    def _cut(self, c: _Candidate, out: list[Event]) -> None:
        """The open streamed call never got its terminal part: it ends incomplete."""
        call = c.call
        writer = c.writer
        c.kind = ""
        c.call = None
        c.writer = None
        c.cut = True
        if call is None or writer is None:
            raise RemoteProtocolError("internal: streamed call state lost")  # pragma: no cover
        value = msgspec.structs.replace(call, arguments=writer.text, status="incomplete")
        out.append(PartDone(message=c.index, part=c.key, value=value))
