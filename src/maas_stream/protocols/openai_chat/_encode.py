"""OpenAI Chat Completions stream encoder: canonical events → ``chat.completion.chunk`` SSE.

Every canonical message maps to a choice: its ``choice_index`` when it has one (a Chat or
Gemini source with several choices), else choice 0 (a Responses or Anthropic source, whose
items or blocks all belong to one assistant turn). Each input event yields its chunk at once;
only the finish chunks, the usage chunk and ``[DONE]`` wait for the end of the response.

What Chat cannot carry is dropped and listed in :attr:`StreamEncoder.lossy`, never turned into
text: reasoning (unless the source was Chat, or a compatible reasoning field is asked for),
server-side and MCP tool calls and their results, citations without a URL, images, files,
code parts and unknown parts from other protocols.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

import msgspec

from ..._model import (
    AudioPart,
    CitationPart,
    FinishReason,
    ReasoningPart,
    RefusalPart,
    StreamError,
    TextPart,
    ToolCallPart,
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

__all__ = ["ReasoningMode", "StreamEncoder"]

from .._names import OPENAI_CHAT as PROTOCOL

LEGACY: Final = "function_call"

ReasoningMode = Literal["auto", "drop", "reasoning_content", "reasoning", "reasoning_details"]

_FINISH: Final[dict[FinishReason, str]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "stop",
    "pause": "stop",
    "error": "stop",
    "other": "stop",
}

_json = msgspec.json.Encoder()


class _Out:
    """How one canonical part is being written out."""

    __slots__ = ("choice", "field", "kind", "meta", "sent", "tool")

    def __init__(self, kind: str, choice: int, tool: int = -1, field: str = "") -> None:
        self.kind = kind
        self.choice = choice
        self.tool = tool
        self.field = field
        self.sent: list[str] = []
        self.meta: dict[str, Any] = {}
        """Fields repeated on every ``reasoning_details`` entry of this part (index, format, id)."""


class StreamEncoder(EventEncoder):
    """Encode canonical events as an OpenAI Chat Completions SSE stream.

    Args:
        include_usage: Send the usage-only chunk before ``[DONE]`` when usage is known (as
            ``stream_options.include_usage`` does).
        reasoning: Where reasoning goes. ``"auto"`` puts it back in the compatible field it
            came from when the source is Chat, and drops it (reported) otherwise; ``"drop"``
            always drops it; the other values send it in that field, for clients of
            OpenAI-compatible servers that read it.
        completion_id: The ``id`` of every chunk; defaults to the source response's id.
        model: The ``model`` of every chunk; defaults to the source response's model.
    """

    protocol: ClassVar[str] = PROTOCOL

    def __init__(
        self,
        *,
        include_usage: bool = True,
        reasoning: ReasoningMode = "auto",
        completion_id: str | None = None,
        model: str | None = None,
    ) -> None:
        self.include_usage = include_usage
        self.reasoning: ReasoningMode = reasoning
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._id = completion_id
        self._fixed_id = completion_id is not None
        self._fixed_model = model is not None
        self._model = model
        self._created = 0
        self._extra: dict[str, Any] = {}
        self._source = ""
        self._choices: dict[int, int] = {}
        self._announced: set[int] = set()
        self._parts: dict[tuple[int, int], _Out] = {}
        self._tools: dict[int, int] = {}
        self._finish: dict[int, str] = {}
        self._finished: set[int] = set()
        self._legacy: set[int] = set()
        self._explicit: set[int] = set()
        self._usage: Usage | None = None
        self._details: dict[int, int] = {}
        self._held: dict[int, list[dict[str, Any]]] = {}
        self._ended = False
        self._dropped: set[Any] = set()
        """Source messages that are not the model's (user, tool...): their parts are not written."""

    # ------------------------------------------------------------------ API

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the chunks it completes (maybe ``b""``)."""
        if self._ended:
            if type(event) is ResponseStart:
                self._lose("a further response (Chat carries one response per stream); dropped")
            return b""
        result: bytes = self._route(event)
        return result

    def finish(self) -> bytes:
        """End the output. A source that was cut stays cut: no ``[DONE]`` is invented."""
        if self._ended:
            return b""
        self._ended = True
        return b"".join([self._flush_annotations(choice) for choice in list(self._held)])

    # ------------------------------------------------------------------ framing

    def _chunk(self, choice: int, delta: dict[str, Any], **extra: Any) -> bytes:
        body: dict[str, Any] = {
            "id": self._id or "chatcmpl-maas",
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model or "unknown",
            **self._extra,
            "choices": [{"index": choice, "delta": delta, "finish_reason": None, **extra}],
        }
        return b"data: " + _json.encode(body) + b"\n\n"

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    def _choice(self, message: Any) -> int:
        return self._choices.get(message, 0) if isinstance(message, int) else 0

    def _announce(self, choice: int) -> bytes:
        if choice in self._announced:
            return b""
        self._announced.add(choice)
        return self._chunk(choice, {"role": "assistant", "content": ""})

    # ------------------------------------------------------------------ handlers

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        if not self._fixed_id:
            self._id = ev.id or self._id
        if not self._fixed_model:
            self._model = ev.model or self._model
        raw = ev.provider_raw
        if ev.protocol == PROTOCOL and isinstance(raw, dict):
            created = raw.get("created")
            self._created = created if type(created) is int else 0
            for key in ("system_fingerprint", "service_tier"):
                if key in raw:
                    self._extra[key] = raw[key]
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        if ev.role not in ("assistant", "model"):
            self._lose(f"{ev.role} message in the output")
            self._dropped.add(ev.message)
            return b""
        choice = ev.choice_index if ev.choice_index is not None else 0
        if ev.choice_index is not None:
            self._explicit.add(choice)
        if isinstance(ev.message, int):
            self._choices[ev.message] = choice
        return self._announce(choice)

    def _reasoning_field(self, part: ReasoningPart) -> str:
        mode = self.reasoning
        if mode == "auto":
            if self._source == PROTOCOL and part.origin_field:
                return part.origin_field
            return ""
        return "" if mode == "drop" else mode

    def _on_part_start(self, ev: PartStart) -> bytes:
        assert isinstance(ev.message, int)
        assert isinstance(ev.part, int)
        choice = self._choice(ev.message)
        key = (ev.message, ev.part)
        if ev.message in self._dropped:
            self._parts[key] = _Out("drop", choice)
            return b""
        value = ev.value
        head = self._announce(choice)
        if isinstance(value, TextPart):
            self._parts[key] = out = _Out("text", choice)
            return head + self._text(out, value.text, "content")
        if isinstance(value, RefusalPart):
            self._parts[key] = out = _Out("refusal", choice)
            return head + self._text(out, value.text, "refusal")
        if isinstance(value, ToolCallPart):
            if value.kind in ("server", "mcp"):
                self._parts[key] = _Out("drop", choice)
                self._lose(
                    f"{value.kind} tool call {value.name!r} ({value.id}): Chat has no server-side tools"
                )
                return head
            if value.item_id == LEGACY and self._source == PROTOCOL:
                self._parts[key] = _Out("tool", choice, field=LEGACY)
                self._legacy.add(choice)
                return head + self._chunk(choice, {LEGACY: {"name": value.name, "arguments": ""}})
            tool = self._tools.get(choice, 0)
            self._tools[choice] = tool + 1
            self._parts[key] = _Out("tool", choice, tool)
            call: dict[str, Any] = {"index": tool, "id": value.id, "type": "function"}
            if value.kind == "custom":
                call["type"] = "custom"
                call["custom"] = {"name": value.name, "input": ""}
            else:
                call["function"] = {"name": value.name, "arguments": ""}
            return head + self._chunk(choice, {"tool_calls": [call]})
        if isinstance(value, ReasoningPart):
            field = self._reasoning_field(value)
            if not field:
                self._parts[key] = _Out("drop", choice)
                self._lose("reasoning (Chat Completions carries no reasoning)")
                return head
            self._parts[key] = out = _Out("reasoning", choice, field=field)
            if field == "reasoning_details":
                out.meta["index"] = self._details.get(choice, 0)
                self._details[choice] = out.meta["index"] + 1
                if value.format is not None:
                    out.meta["format"] = value.format
                if value.id is not None:
                    out.meta["id"] = value.id
                detail = self._detail(out)
                if value.data is not None:
                    detail["type"] = "reasoning.encrypted"
                    detail["data"] = value.data
                    return head + self._chunk(choice, {"reasoning_details": [detail]})
                return head
            return head + (self._text(out, value.text, field) if value.text else b"")
        if isinstance(value, AudioPart):
            self._parts[key] = _Out("audio", choice)
            return head + self._audio(choice, value.id, value.data, value.transcript, value.expires_at)
        self._parts[key] = _Out("drop", choice)
        kind = value.provider_type if isinstance(value, UnknownPart) else value.__struct_config__.tag
        self._lose(f"{kind} part (no Chat Completions equivalent)")
        return head

    def _detail(self, out: _Out) -> dict[str, Any]:
        return {"type": "reasoning.text", **out.meta}

    def _text(self, out: _Out, text: str, field: str) -> bytes:
        if not text:
            return b""
        out.sent.append(text)
        if field == "reasoning_details":
            return b""
        return self._chunk(out.choice, {field: text})

    def _audio(
        self, choice: int, id: str | None, data: str | None, transcript: str | None, expires_at: int | None
    ) -> bytes:
        audio: dict[str, Any] = {}
        if id is not None:
            audio["id"] = id
        if data:
            audio["data"] = data
        if transcript:
            audio["transcript"] = transcript
        if expires_at is not None:
            audio["expires_at"] = expires_at
        return self._chunk(choice, {"audio": audio}) if audio else b""

    def _get(self, ev: Any) -> _Out | None:
        return self._parts.get((ev.message, ev.part))

    def _on_text(self, ev: TextDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "text":
            return b""
        out.sent.append(ev.text)
        return self._chunk(out.choice, {"content": ev.text})

    def _on_refusal(self, ev: RefusalDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "refusal":
            return b""
        out.sent.append(ev.text)
        return self._chunk(out.choice, {"refusal": ev.text})

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning":
            return b""
        out.sent.append(ev.text)
        if out.field == "reasoning_details":
            detail = self._detail(out)
            detail["text"] = ev.text
            return self._chunk(out.choice, {"reasoning_details": [detail]})
        return self._chunk(out.choice, {out.field: ev.text})

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning" or out.field != "reasoning_details":
            if out is not None and out.kind == "reasoning" and ev.text:
                out.sent.append(ev.text)
                return self._chunk(out.choice, {out.field: ev.text})
            return b""
        detail = self._detail(out)
        detail["type"] = "reasoning.summary"
        detail["summary"] = ev.text
        return self._chunk(out.choice, {"reasoning_details": [detail]})

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning" or out.field != "reasoning_details":
            if out is not None and out.kind not in ("drop",):
                self._lose("signature (no place for it in this Chat output)")
            return b""
        detail = self._detail(out)
        detail["signature"] = ev.signature
        return self._chunk(out.choice, {"reasoning_details": [detail]})

    def _on_arguments(self, ev: ArgumentsDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "tool":
            return b""
        out.sent.append(ev.delta)
        return self._args(out, ev.delta)

    def _args(self, out: _Out, delta: str) -> bytes:
        if out.field == LEGACY:
            return self._chunk(out.choice, {LEGACY: {"arguments": delta}})
        return self._chunk(
            out.choice, {"tool_calls": [{"index": out.tool, "function": {"arguments": delta}}]}
        )

    def _on_audio(self, ev: AudioDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "audio":
            return b""
        return self._audio(out.choice, ev.id, ev.data, ev.transcript, ev.expires_at)

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "text":
            return b""
        annotation = _annotation(ev.citation)
        if annotation is None:
            self._lose(f"citation of kind {ev.citation.kind!r} (Chat annotations carry URL citations only)")
            return b""
        # The openai SDK merges `annotations` only when they come in one delta (a second
        # index-less list breaks its accumulator), as OpenAI sends them: hold them until the
        # choice finishes.
        self._held.setdefault(out.choice, []).append(annotation)
        return b""

    def _flush_annotations(self, choice: int) -> bytes:
        held = self._held.pop(choice, None)
        return self._chunk(choice, {"annotations": held}) if held else b""

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind not in ("text", "refusal"):
            return b""
        field = "content" if out.kind == "text" else "refusal"
        return self._chunk(out.choice, {}, logprobs={field: ev.logprobs})

    def _on_part_done(self, ev: PartDone) -> bytes:
        out = self._get(ev)
        value = ev.value
        if out is None or value is None:
            return b""
        # A final value longer than what was streamed (a .done-only value, or Anthropic's "{}"
        # start value with no deltas): send the rest.
        if out.kind == "tool" and isinstance(value, ToolCallPart):
            return self._rest(out, value.arguments, lambda rest: self._args(out, rest), "arguments")
        if out.kind == "text" and isinstance(value, TextPart):
            return self._rest(
                out, value.text, lambda rest: self._chunk(out.choice, {"content": rest}), "text"
            )
        if out.kind == "refusal" and isinstance(value, RefusalPart):
            return self._rest(
                out, value.text, lambda rest: self._chunk(out.choice, {"refusal": rest}), "refusal"
            )
        if out.kind == "reasoning" and isinstance(value, ReasoningPart) and out.field != "reasoning_details":
            text = value.text or ""
            return self._rest(out, text, lambda rest: self._chunk(out.choice, {out.field: rest}), "reasoning")
        return b""

    def _rest(self, out: _Out, final: str, emit: Any, what: str) -> bytes:
        sent = "".join(out.sent)
        if final == sent:
            return b""
        if final.startswith(sent):
            rest = final[len(sent) :]
            out.sent.append(rest)
            result: bytes = emit(rest)
            return result
        self._lose(f"{what}: the final value differs from the streamed deltas; Chat keeps the deltas")
        return b""

    def _on_message_done(self, ev: MessageDone) -> bytes:
        choice = self._choice(ev.message)
        if ev.finish_reason is not None:
            self._finish[choice] = _FINISH[ev.finish_reason]
            if choice in self._explicit and choice not in self._finished:
                # A source with real choices (Chat, Gemini candidates): finish it now.
                return self._finish_chunk(choice, self._finish[choice])
        return b""

    def _finish_chunk(self, choice: int, reason: str) -> bytes:
        head = self._flush_annotations(choice) if self._held else b""
        self._finished.add(choice)
        if reason == "stop" and self._tools.get(choice):
            reason = "tool_calls"
        elif reason == "tool_calls" and choice in self._legacy and not self._tools.get(choice):
            reason = LEGACY
        return head + self._chunk(choice, {}, finish_reason=reason)

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        frames: list[bytes] = []
        choices = sorted(self._announced) or [0]
        for choice in choices:
            if choice in self._finished:
                continue
            reason = self._finish.get(choice)
            if ev.finish_reason is not None and (reason is None or choice not in self._explicit):
                reason = _FINISH[ev.finish_reason]
            if reason is None and self._source == PROTOCOL:
                frames.append(self._flush_annotations(choice))
                continue  # a Chat source that sent no finish reason (audio streams): none invented
            frames.append(self._announce(choice))
            frames.append(self._finish_chunk(choice, reason or "stop"))
        frames += [self._flush_annotations(choice) for choice in list(self._held)]  # any late ones
        if self.include_usage and self._usage is not None:
            frames.append(self._usage_chunk(self._usage))
        frames.append(b"data: [DONE]\n\n")
        self._ended = True
        return b"".join(frames)

    def _usage_chunk(self, usage: Usage) -> bytes:
        body = {
            "id": self._id or "chatcmpl-maas",
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model or "unknown",
            **self._extra,
            "choices": [],
            "usage": self._usage_body(usage),
        }
        return b"data: " + _json.encode(body) + b"\n\n"

    def _usage_body(self, usage: Usage) -> dict[str, Any]:
        raw: dict[str, Any] | None = (
            usage.raw if self._source == PROTOCOL and isinstance(usage.raw, dict) else None
        )
        if raw is None:
            raw = {
                "prompt_tokens": usage.input_tokens or 0,
                "completion_tokens": usage.output_tokens or 0,
                "total_tokens": usage.total_tokens
                if usage.total_tokens is not None
                else (usage.input_tokens or 0) + (usage.output_tokens or 0),
            }
            if usage.cache_read_tokens is not None or usage.cache_write_tokens is not None:
                details: dict[str, int] = {}
                if usage.cache_read_tokens is not None:
                    details["cached_tokens"] = usage.cache_read_tokens
                if usage.cache_write_tokens is not None:
                    details["cache_write_tokens"] = usage.cache_write_tokens
                raw["prompt_tokens_details"] = details
            if usage.reasoning_tokens is not None:
                raw["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
        return raw

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        # The error chunk ends the output (the openai SDK raises on it), so it carries the
        # usage known so far, as OpenAI-compatible servers do.
        frames = b"".join([self._flush_annotations(choice) for choice in list(self._held)])
        self._ended = True
        body: dict[str, Any] = {"error": _error(ev.error)}
        if self._usage is not None:
            body["usage"] = self._usage_body(self._usage)
        return frames + b"data: " + _json.encode(body) + b"\n\n"

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        if self._source == PROTOCOL and ev.message is None and isinstance(ev.raw, dict):
            return b"data: " + _json.encode(ev.raw) + b"\n\n"  # a Chat extension chunk, verbatim
        self._lose(f"unknown {ev.provider_type!r} frame")
        return b""


def _annotation(citation: CitationPart) -> dict[str, Any] | None:
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


def _error(error: StreamError) -> dict[str, Any]:
    if isinstance(error.raw, dict) and "message" in error.raw:
        return error.raw
    body: dict[str, Any] = {"message": error.message or error.type, "type": error.type}
    if error.code is not None:
        body["code"] = error.code
    return body
