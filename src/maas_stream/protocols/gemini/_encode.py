"""Gemini stream encoder: canonical events → ``streamGenerateContent?alt=sse`` chunks.

Every canonical message maps to a candidate: its ``choice_index`` when it has one, else
candidate 0 (the items or blocks of a Responses or Anthropic turn all belong to one answer).
Output is ``data: <GenerateContentResponse>`` lines, each followed by a blank line and nothing
else (google-genai's parser reads any other line as error text).

Each text or thought delta is written at once as a part; a function call is written whole
(one ``functionCall`` part) when it closes, as Gemini API streams do. The finish reason goes on
a last chunk per candidate, with the usage known then; usage reported after that gets a chunk
of its own.

What Gemini cannot carry is dropped and listed in :attr:`StreamEncoder.lossy`, never turned into
text: signatures, redacted or encrypted reasoning from other providers, refusals, logprobs,
server-side and MCP calls of other providers, citations without a URL, audio transcripts, and
unknown parts of other protocols. A call cut by the end of its source stream is dropped too
and its candidate gets no ``finishReason``, so the output stays incomplete as the source was.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec

from ..._model import (
    AudioPart,
    CitationPart,
    CodePart,
    FilePart,
    FinishReason,
    ImagePart,
    Part,
    ReasoningPart,
    RefusalPart,
    StreamError,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)
from ...events import (
    AnnotationAdded,
    ArgumentsDelta,
    AudioDelta,
    Event,
    LogprobsDelta,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    RefusalDelta,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    StreamErrorEvent,
    SummaryDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import EventEncoder
from ._decode import SIGNATURE_TYPE, SYNTH_PREFIX

__all__ = ["StreamEncoder", "call_args", "media_body", "usage_body"]

from .._names import GEMINI as PROTOCOL

_FINISH: Final[dict[FinishReason, str]] = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "refusal": "SAFETY",
    "pause": "OTHER",
    "error": "OTHER",
    "other": "OTHER",
}
_KEEP_FINISH: Final = frozenset({"length", "content_filter"})

_json = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()
_SEP: Final = b"\r\n\r\n"


def call_args(arguments: str) -> dict[str, Any] | None:
    """A call's arguments text as the JSON object Gemini wants, or ``None`` if it is not one."""
    if not arguments.strip():
        return {}
    try:
        value = _dec.decode(arguments)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def media_body(part: Part) -> dict[str, Any] | None:
    """``inlineData`` / ``fileData`` for an image, audio or file part (``None`` if it has neither)."""
    if isinstance(part, ImagePart | FilePart):
        mime = part.media_type or ("image/png" if isinstance(part, ImagePart) else "application/octet-stream")
        if part.data is not None:
            return {"inlineData": {"mimeType": mime, "data": part.data}}
        if part.url is not None:
            return {"fileData": {"mimeType": mime, "fileUri": part.url}}
        return None
    if isinstance(part, AudioPart) and part.data:
        fmt = part.format or "wav"
        return {"inlineData": {"mimeType": fmt if "/" in fmt else f"audio/{fmt}", "data": part.data}}
    return None


def usage_body(usage: Usage, *, source: str) -> dict[str, Any]:
    """``usageMetadata`` for canonical usage (the raw object when it came from Gemini)."""
    body: dict[str, Any] = {}
    if source == PROTOCOL and isinstance(usage.raw, dict):
        # The provider's object (as merged over the stream by the aggregator), with its counts
        # restated from the canonical fields so that they read back the same.
        body = dict(usage.raw)
    if usage.input_tokens is not None:
        body["promptTokenCount"] = usage.input_tokens
    if source == PROTOCOL and usage.output_tokens is not None and usage.reasoning_tokens is not None:
        if usage.output_tokens == usage.reasoning_tokens:
            body.pop("candidatesTokenCount", None)  # Gemini leaves it out when only thoughts were counted
    if usage.output_tokens is not None and usage.output_tokens != (usage.reasoning_tokens or 0):
        body["candidatesTokenCount"] = usage.output_tokens - (usage.reasoning_tokens or 0)
    if usage.total_tokens is not None:
        body["totalTokenCount"] = usage.total_tokens
    elif usage.input_tokens is not None or usage.output_tokens is not None:
        body["totalTokenCount"] = (usage.input_tokens or 0) + (usage.output_tokens or 0)
    if usage.cache_read_tokens is not None:
        body["cachedContentTokenCount"] = usage.cache_read_tokens
    if usage.reasoning_tokens is not None:
        body["thoughtsTokenCount"] = usage.reasoning_tokens
    return body


class _Out:
    """How one canonical part is being written out."""

    __slots__ = ("cand", "kind", "sent", "sig")

    def __init__(self, kind: str, cand: int) -> None:
        self.kind = kind
        self.cand = cand
        self.sent = 0
        """Characters of text written so far."""
        self.sig: str | None = None
        """A signature waiting for the next part written for this part."""


class StreamEncoder(EventEncoder):
    """Encode canonical events as a Gemini ``streamGenerateContent?alt=sse`` stream.

    Args:
        response_id: The ``responseId`` of every chunk; defaults to the source response's id.
        model: The ``modelVersion`` of every chunk; defaults to the source response's model.
    """

    _ROUTES: ClassVar[dict[type[Any], str]] = {
        RefusalDelta: "_nothing",
        ArgumentsDelta: "_nothing",
        AudioDelta: "_nothing",
    }
    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, response_id: str | None = None, model: str | None = None) -> None:
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._rid = response_id
        self._model = model
        self._source = ""
        self._top: dict[str, Any] = {}
        self._feedback: Any = None
        self._cands: dict[int, int] = {}
        self._announced: list[int] = []
        self._parts: dict[tuple[int, int], _Out] = {}
        self._pending: dict[int, str] = {}
        self._server_ids: set[str] = set()
        self._citations: dict[int, list[dict[str, Any]]] = {}
        self._finished: set[int] = set()
        self._usage: Usage | None = None
        self._usage_sent = True
        self._ended = False

    # ------------------------------------------------------------------ API

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the chunks it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        result: bytes = self._route(event)
        return result

    def finish(self) -> bytes:
        """End the output. Gemini has no terminator; usage not yet written gets a last chunk."""
        if self._ended:
            return b""
        self._ended = True
        return b"" if self._usage_sent else self._frame({})

    # ------------------------------------------------------------------ framing

    def _frame(self, body: dict[str, Any]) -> bytes:
        if self._usage is not None:
            body["usageMetadata"] = usage_body(self._usage, source=self._source)
            self._usage_sent = True
        if self._model:
            body["modelVersion"] = self._model
        if self._top:
            body.update(self._top)
        if self._rid:
            body["responseId"] = self._rid
        if self._feedback is not None:
            body["promptFeedback"] = self._feedback
            self._feedback = None
        return b"data: " + _json.encode(body) + _SEP

    def _parts_chunk(self, cand: int, parts: list[dict[str, Any]]) -> bytes:
        content = {"role": "model", "parts": parts}
        return self._frame({"candidates": [{"content": content, "index": cand}]})

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    def _gemini(self) -> bool:
        return self._source == PROTOCOL

    def _cand(self, message: Any) -> int:
        return self._cands.get(message, 0) if isinstance(message, int) else 0

    def _sign(self, body: dict[str, Any], out: _Out | None, cand: int) -> dict[str, Any]:
        """Attach the signature waiting for this part (or for the candidate's next part)."""
        sig = out.sig if out is not None and out.sig is not None else self._pending.pop(cand, None)
        if out is not None:
            out.sig = None
        if sig is not None:
            body["thoughtSignature"] = sig
        return body

    # ------------------------------------------------------------------ handlers

    def _nothing(self, ev: Any) -> bytes:
        if isinstance(ev, AudioDelta) and ev.transcript:
            self._lose("audio transcript (Gemini output audio has no transcript field)")
        return b""

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        self._rid = self._rid or ev.id
        self._model = self._model or ev.model
        raw = ev.provider_raw
        if self._gemini() and isinstance(raw, dict):
            for key in ("createTime", "modelStatus"):
                if key in raw:
                    self._top[key] = raw[key]
            self._feedback = raw.get("promptFeedback")
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        if ev.role not in ("assistant", "model"):
            self._lose(f"{ev.role} message in the output")
        cand = ev.choice_index if ev.choice_index is not None else 0
        if isinstance(ev.message, int):
            self._cands[ev.message] = cand
        if cand not in self._announced:
            self._announced.append(cand)
        return b""

    def _on_part_start(self, ev: PartStart) -> bytes:
        assert isinstance(ev.message, int)
        assert isinstance(ev.part, int)
        cand = self._cand(ev.message)
        key = (ev.message, ev.part)
        value = ev.value
        if isinstance(value, TextPart | ReasoningPart):
            out = self._parts[key] = _Out("text" if isinstance(value, TextPart) else "thought", cand)
            if isinstance(value, ReasoningPart):
                self._reasoning_loss(value)
            if value.signature is not None:
                self._signature(out, value.signature)
            return self._write_text(out, value.text or "")
        if isinstance(value, ToolCallPart):
            kind = "call"
            if value.kind in ("server", "mcp") and not (value.kind == "server" and self._gemini()):
                kind = "drop"
                self._lose(
                    f"{value.kind} tool call {value.name!r} ({value.id}): Gemini output has no place for it"
                )
            self._parts[key] = _Out(kind, cand)
            return b""
        if isinstance(value, UnknownPart):
            self._parts[key] = _Out("drop", cand)
            return self._unknown_part(cand, value)
        if isinstance(value, RefusalPart | CitationPart):
            self._parts[key] = _Out("drop", cand)
            self._lose(f"{value.__struct_config__.tag} part (no Gemini equivalent)")
            return b""
        # Media, code and tool results are written whole when they close.
        self._parts[key] = _Out("whole", cand)
        return b""

    def _reasoning_loss(self, value: ReasoningPart) -> None:
        if value.redacted or value.data is not None or value.encrypted_content is not None:
            self._lose("redacted or encrypted reasoning (Gemini cannot carry it)")

    def _signature(self, out: _Out, signature: str) -> None:
        if self._gemini():
            out.sig = signature
        else:
            self._lose("reasoning/part signature from another provider (Gemini only replays its own)")

    def _unknown_part(self, cand: int, value: UnknownPart) -> bytes:
        if self._gemini() and isinstance(value.raw, dict):
            if value.provider_type == SIGNATURE_TYPE:
                sig = value.raw.get("thoughtSignature")
                if isinstance(sig, str):
                    self._pending[cand] = sig
                return b""
            if value.provider_type.startswith("part."):
                return self._parts_chunk(cand, [value.raw])
        self._lose(f"unknown {value.provider_type!r} part")
        return b""

    def _write_text(self, out: _Out, text: str) -> bytes:
        if not text or out.kind not in ("text", "thought"):
            return b""
        out.sent += len(text)
        body: dict[str, Any] = {"text": text}
        if out.kind == "thought":
            body["thought"] = True
        return self._parts_chunk(out.cand, [self._sign(body, out, out.cand)])

    def _get(self, ev: Any) -> _Out | None:
        return self._parts.get((ev.message, ev.part))

    def _on_text(self, ev: TextDelta) -> bytes:
        out = self._get(ev)
        return self._write_text(out, ev.text) if out is not None and out.kind == "text" else b""

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        out = self._get(ev)
        return self._write_text(out, ev.text) if out is not None and out.kind == "thought" else b""

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        # A reasoning summary is what Gemini's thought parts are: sent as thought text.
        out = self._get(ev)
        return self._write_text(out, ev.text) if out is not None and out.kind == "thought" else b""

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        out = self._get(ev)
        if out is not None and out.kind in ("text", "thought", "call"):
            self._signature(out, ev.signature)
        return b""

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        if self._gemini():
            return b""  # re-sent whole from the candidate's groundingMetadata/citationMetadata
        cite = ev.citation
        if cite.url is None:
            self._lose(f"citation of kind {cite.kind!r} without a URL")
            return b""
        source: dict[str, Any] = {"uri": cite.url}
        if cite.start is not None:
            source["startIndex"] = cite.start
        if cite.end is not None:
            source["endIndex"] = cite.end
        if cite.title is not None:
            self._lose("citation titles (Gemini API citationSources have none)")
        self._citations.setdefault(self._cand(ev.message), []).append(source)
        return b""

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        self._lose("token logprobs")
        return b""

    def _on_part_done(self, ev: PartDone) -> bytes:
        out = self._get(ev)
        value = ev.value
        if out is None or value is None:
            return b""
        if out.kind in ("text", "thought") and isinstance(value, TextPart | ReasoningPart):
            return self._close_text(out, value)
        if out.kind == "call" and isinstance(value, ToolCallPart):
            return self._call(out, value)
        if out.kind == "whole":
            return self._whole(out, value)
        return b""

    def _close_text(self, out: _Out, value: TextPart | ReasoningPart) -> bytes:
        text = value.text or ""
        frames = b""
        if len(text) > out.sent:
            frames = self._write_text(out, text[out.sent :])
        if out.sig is not None:
            body: dict[str, Any] = {"text": ""}
            if out.kind == "thought":
                body["thought"] = True
            frames += self._parts_chunk(out.cand, [self._sign(body, out, out.cand)])
        return frames

    def _call(self, out: _Out, value: ToolCallPart) -> bytes:
        if value.status == "incomplete":
            self._lose(f"tool call {value.name!r} ({value.id}) was cut before it completed")
            return b""
        parsed = call_args(value.arguments)
        if parsed is None:
            self._lose(f"tool call {value.name!r} ({value.id}): arguments are not a JSON object")
            return b""
        args: Any = parsed if value.arguments.strip() else {}
        if args and "\n" not in value.arguments and "\r" not in value.arguments:
            args = msgspec.Raw(value.arguments.encode())  # byte-exact, as it arrived
        if value.kind == "server":
            self._server_ids.add(value.id)
            body: dict[str, Any] = {"toolCall": {"toolType": value.name, "args": args, "id": value.id}}
        else:
            call: dict[str, Any] = {"name": value.name, "args": args}
            if value.id and not value.id.startswith(SYNTH_PREFIX):
                call = {"id": value.id, **call}
            body = {"functionCall": call}
            if value.kind == "custom":
                self._lose(f"custom tool call {value.name!r}: sent as a function call")
        if value.signature is not None:
            self._signature(out, value.signature)
        return self._parts_chunk(out.cand, [self._sign(body, out, out.cand)])

    def _whole(self, out: _Out, value: Part) -> bytes:
        body: dict[str, Any] | None
        if isinstance(value, CodePart):
            body = {}
            if value.code is not None:
                body["executableCode"] = {"language": value.language or "PYTHON", "code": value.code}
            if value.outcome is not None or value.output is not None:
                result: dict[str, Any] = {"outcome": value.outcome or "OUTCOME_OK"}
                if value.output is not None:
                    result["output"] = value.output
                if body:
                    frame = self._parts_chunk(out.cand, [self._sign(body, out, out.cand)])
                    return frame + self._parts_chunk(out.cand, [{"codeExecutionResult": result}])
                body["codeExecutionResult"] = result
        elif isinstance(value, ToolResultPart):
            body = self._result(value)
        else:
            body = media_body(value)
            if isinstance(value, AudioPart) and value.transcript:
                self._lose("audio transcript (Gemini output audio has no transcript field)")
        if not body:
            self._lose(f"{value.__struct_config__.tag} part Gemini cannot carry (no data, URL or code)")
            return b""
        return self._parts_chunk(out.cand, [self._sign(body, out, out.cand)])

    def _result(self, value: ToolResultPart) -> dict[str, Any] | None:
        if not self._gemini():
            self._lose(f"tool result {value.tool_call_id} inside the model output")
            return None
        response: Any = value.content
        if isinstance(response, str):
            try:
                response = _dec.decode(response)
            except msgspec.DecodeError:
                response = {"output": response}
        if value.tool_call_id in self._server_ids:
            return {
                "toolResponse": {"toolType": value.name or "", "response": response, "id": value.tool_call_id}
            }
        fr: dict[str, Any] = {"name": value.name or "", "response": response}
        if value.tool_call_id:
            fr = {"id": value.tool_call_id, **fr}
        return {"functionResponse": fr}

    def _finish_chunk(self, cand: int, reason: FinishReason | None, raw: str | None, extras: Any) -> bytes:
        self._finished.add(cand)
        body: dict[str, Any] = {"index": cand}
        pending = self._pending.pop(cand, None)
        if pending is not None:
            body["content"] = {"role": "model", "parts": [{"text": "", "thoughtSignature": pending}]}
        if reason is not None:
            body["finishReason"] = raw if self._gemini() and raw else _FINISH[reason]
        if self._gemini() and isinstance(extras, dict):
            body.update(extras)
        sources = self._citations.pop(cand, None)
        if sources:
            body["citationMetadata"] = {"citationSources": sources}
        return self._frame({"candidates": [body]})

    def _on_message_done(self, ev: MessageDone) -> bytes:
        cand = self._cand(ev.message)
        if cand in self._finished:
            return b""
        reason = ev.finish_reason
        if reason is None:
            # An item of a multi-item turn (an item of an incomplete Responses output, too):
            # the response's end finishes the candidate, or leaves it cut.
            return b""
        if ev.status == "incomplete" and reason not in _KEEP_FINISH:
            # The source was cut here: no finishReason, so the output reads as cut too.
            self._finished.add(cand)
            return b""
        extras = ev.value.provider_raw if ev.value is not None else None
        return self._finish_chunk(cand, reason, ev.provider_finish_reason, extras)

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        self._usage_sent = False
        return b""

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        frames: list[bytes] = []
        cut = ev.status == "incomplete" and ev.finish_reason not in _KEEP_FINISH
        for cand in self._announced:
            if cand in self._finished or cut:
                continue
            frames.append(
                self._finish_chunk(cand, ev.finish_reason or "stop", ev.provider_finish_reason, None)
            )
        if not self._announced and (self._feedback is not None or ev.finish_reason == "content_filter"):
            if self._feedback is None:
                self._feedback = {"blockReason": "OTHER"}
            frames.append(self._frame({}))
        elif not self._usage_sent:
            frames.append(self._frame({}))
        self._ended = True
        return b"".join(frames)

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        self._ended = True
        return b"data: " + _json.encode({"error": _error(ev.error)}) + _SEP

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        self._lose(f"unknown {ev.provider_type!r} frame")
        return b""


def _error(error: StreamError) -> dict[str, Any]:
    raw = error.raw
    if isinstance(raw, dict) and "message" in raw and type(raw.get("code")) is int and "status" in raw:
        return raw
    code = int(error.code) if error.code is not None and error.code.isdigit() else 500
    return {"code": code, "message": error.message or error.type, "status": error.type.upper()}
