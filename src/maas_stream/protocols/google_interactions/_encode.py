"""Google Interactions stream encoder: canonical events → current-schema SSE.

Each canonical part becomes a step: reasoning → ``thought``; a run of text / image / audio / file
parts of one message → one ``model_output`` step; a function call → ``function_call`` (its
argument deltas as ``arguments_delta``); a built-in server call → its ``<tool>_call`` step; a tool
result → ``function_result``; an unknown part holding an Interactions step → that step, verbatim.
Text and argument deltas go out at once; built-in steps, results and media go out whole when
their part ends (Interactions sends them in one delta anyway).

Dropped (and listed in :attr:`StreamEncoder.lossy`), never turned into text: signatures from
non-Google sources, encrypted or redacted reasoning, refusals, code parts, audio transcripts,
server tool calls of tools Interactions does not have, input (user) messages and unknown
frames of other protocols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from ..._model import (
    AudioPart,
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)
from .._base import EventEncoder
from ._steps import annotation_from, content_from_part, is_step, result_wire, step_from_call

if TYPE_CHECKING:
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

__all__ = ["StreamEncoder"]

from .._names import GOOGLE_INTERACTIONS as PROTOCOL

SIGNATURE_SOURCES: Final = frozenset({"google-interactions", "gemini", "google-live"})

_json = msgspec.json.Encoder()

_STATUS: Final[dict[str | None, str]] = {
    "tool_calls": "requires_action",
    "length": "incomplete",
    "content_filter": "incomplete",
    "error": "failed",
}


class _Out:
    __slots__ = ("args", "audio", "kind", "step")

    def __init__(self, kind: str, step: int) -> None:
        self.kind = kind
        self.step = step
        self.args = False
        self.audio: list[str] = []


class StreamEncoder(EventEncoder):
    """Encode canonical events as a Google Interactions SSE stream (current ``step.*`` schema).

    Args:
        interaction_id: The interaction ``id``; defaults to the source response's id.
        model: The ``model``; defaults to the source response's model.
    """

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, interaction_id: str | None = None, model: str | None = None) -> None:
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._id = interaction_id
        self._model = model
        self._source = ""
        self._started = False
        self._ended = False
        self._next = 0
        self._skip: set[Any] = set()
        self._output: tuple[Any, int] | None = None
        self._parts: dict[tuple[Any, Any], _Out] = {}
        self._open: dict[int, bool] = {}
        self._usage: Usage | None = None

    # ------------------------------------------------------------------ API

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the SSE frames it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        result: bytes = self._route(event)
        return result

    def finish(self) -> bytes:
        """End the output. A cut source stays cut: no ``interaction.completed`` is invented."""
        self._ended = True
        return b""

    # ------------------------------------------------------------------ framing

    @staticmethod
    def _frame(event_type: str, body: dict[str, Any]) -> bytes:
        body["event_type"] = event_type
        return b"event: " + event_type.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        inter: dict[str, Any] = {"status": "in_progress", "object": "interaction"}
        if self._id:
            inter["id"] = self._id
        if self._model:
            inter["model"] = self._model
        return self._frame("interaction.created", {"interaction": inter})

    def _step_start(self, step: dict[str, Any]) -> tuple[int, bytes]:
        index = self._next
        self._next += 1
        self._open[index] = True
        return index, self._start() + self._frame("step.start", {"index": index, "step": step})

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return self._frame("step.delta", {"index": index, "delta": delta})

    def _stop(self, index: int) -> bytes:
        if self._open.pop(index, None) is None:
            return b""
        return self._frame("step.stop", {"index": index})

    def _close_output(self) -> bytes:
        if self._output is None:
            return b""
        index = self._output[1]
        self._output = None
        return self._stop(index)

    def _signatures_ok(self) -> bool:
        if self._source in SIGNATURE_SOURCES:
            return True
        self._lose(f"signatures from {self._source or 'another protocol'} dropped (not valid for Gemini)")
        return False

    # ------------------------------------------------------------------ handlers

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        self._id = ev.id or self._id
        self._model = ev.model or self._model
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        if ev.role in ("user", "system", "developer"):
            self._skip.add(ev.message)
            self._lose("input (user) messages are not part of an Interactions output stream; dropped")
        return b""

    def _on_part_start(self, ev: PartStart) -> bytes:
        if ev.message in self._skip:
            return b""
        value = ev.value
        key = (ev.message, ev.part)
        if isinstance(value, TextPart | ImagePart | AudioPart | FilePart):
            out = b""
            if self._output is None or self._output[0] != ev.message:
                out = self._close_output()
                index, frame = self._step_start({"type": "model_output"})
                out += frame
                self._output = (ev.message, index)
            self._parts[key] = _Out("content", self._output[1])
            if isinstance(value, TextPart) and value.text:
                out += self._delta(self._output[1], {"type": "text", "text": value.text})
            return out
        out = self._close_output()
        if isinstance(value, ReasoningPart):
            step: dict[str, Any] = {"type": "thought"}
            if value.signature is not None and self._signatures_ok():
                step["signature"] = value.signature
            if value.encrypted_content or value.data:
                self._lose("encrypted or redacted reasoning has no Interactions form; dropped")
            index, frame = self._step_start(step)
            self._parts[key] = _Out("thought", index)
            out += frame
            for text in value.summary or ([value.text] if value.text else []):
                out += self._summary(index, text)
            return out
        if isinstance(value, ToolCallPart) and value.kind in ("function", "custom", "mcp"):
            call = ToolCallPart(
                id=value.id,
                name=value.name,
                arguments="",
                kind="mcp" if value.kind == "mcp" else "function",
                server_name=value.server_name,
                signature=value.signature if value.signature is None or self._signatures_ok() else None,
            )
            found = step_from_call(call)
            assert found is not None
            index, frame = self._step_start(found)
            self._parts[key] = _Out("call", index)
            return out + frame
        # Built-in calls, results and unknown parts go out whole at PartDone.
        self._parts[key] = _Out("whole", -1)
        return out

    def _summary(self, index: int, text: str) -> bytes:
        return self._delta(index, {"type": "thought_summary", "content": {"type": "text", "text": text}})

    def _on_text(self, ev: TextDelta) -> bytes:
        part = self._parts.get((ev.message, ev.part))
        if part is None or part.kind != "content":
            return b""
        return self._delta(part.step, {"type": "text", "text": ev.text})

    def _on_refusal(self, ev: RefusalDelta) -> bytes:
        self._lose("refusal text has no Interactions form; dropped")
        return b""

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        part = self._parts.get((ev.message, ev.part))
        if part is None or part.kind != "thought":
            return b""
        return self._summary(part.step, ev.text)

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        part = self._parts.get((ev.message, ev.part))
        if part is None or part.kind != "thought" or not ev.text:
            return b""
        return self._summary(part.step, ev.text)

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        part = self._parts.get((ev.message, ev.part))
        if part is None or part.kind not in ("thought", "call"):
            if part is not None:
                self._lose("signatures on text or media parts have no Interactions form; dropped")
            return b""
        if not self._signatures_ok():
            return b""
        return self._delta(part.step, {"type": "thought_signature", "signature": ev.signature})

    def _on_arguments(self, ev: ArgumentsDelta) -> bytes:
        part = self._parts.get((ev.message, ev.part))
        if part is None or part.kind != "call":
            return b""
        part.args = True
        return self._delta(part.step, {"type": "arguments_delta", "arguments": ev.delta})

    def _on_audio(self, ev: AudioDelta) -> bytes:
        if ev.transcript:
            self._lose("audio transcripts have no Interactions form; dropped")
        return b""

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        part = self._parts.get((ev.message, ev.part))
        if part is None or part.kind != "content":
            return b""
        return self._delta(
            part.step, {"type": "text_annotation_delta", "annotations": [annotation_from(ev.citation)]}
        )

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        self._lose("log-probabilities have no Interactions form; dropped")
        return b""

    def _on_part_done(self, ev: PartDone) -> bytes:
        part = self._parts.pop((ev.message, ev.part), None)
        value = ev.value
        if part is None or value is None:
            return b""
        if part.kind == "content":
            if isinstance(value, ImagePart | AudioPart | FilePart):
                item = content_from_part(value)
                if item is not None and (item.get("data") or item.get("uri")):
                    return self._delta(part.step, item)
            return b""
        if part.kind == "thought":
            return self._stop(part.step)
        if part.kind == "call":
            out = b""
            if isinstance(value, ToolCallPart):
                if not part.args and value.arguments and value.arguments != "{}":
                    out += self._delta(part.step, {"type": "arguments_delta", "arguments": value.arguments})
                if value.status == "incomplete":
                    self._open.pop(part.step, None)
                    return out
            return out + self._stop(part.step)
        return self._whole(value)

    def _whole(self, value: Part) -> bytes:
        step: dict[str, Any] | None = None
        if isinstance(value, ToolCallPart):
            found = step_from_call(value)
            if found is None:
                self._lose(f"server tool call {value.name!r} has no Interactions step; dropped")
                return b""
            if "signature" in found and not self._signatures_ok():
                del found["signature"]
            arguments = found.pop("arguments", None)
            index, out = self._step_start(found)
            if arguments is not None:
                out += self._delta(index, {"type": found["type"], "arguments": arguments})
            return out + self._stop(index)
        if isinstance(value, ToolResultPart):
            step = {"type": "function_result", "call_id": value.tool_call_id}
            if value.name is not None:
                step["name"] = value.name
            step["result"] = result_wire(value.content)
            if value.is_error is not None:
                step["is_error"] = value.is_error
        elif isinstance(value, UnknownPart) and self._source == PROTOCOL and _kept_step(value):
            step = dict(value.raw)
        if step is None:
            self._lose(f"a {value.__struct_config__.tag} part has no Interactions step; dropped")
            return b""
        index, out = self._step_start(step)
        return out + self._stop(index)

    def _on_message_done(self, ev: MessageDone) -> bytes:
        if self._output is not None and self._output[0] == ev.message:
            if ev.status == "incomplete":
                # A cut source stays cut: the step is left without its step.stop.
                self._open.pop(self._output[1], None)
                self._output = None
                return b""
            return self._close_output()
        return b""

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        out = self._start() + self._close_output()
        for index in list(self._open):
            out += self._stop(index)
        if self._source == PROTOCOL and ev.provider_finish_reason:
            status = ev.provider_finish_reason
        elif ev.status == "incomplete":
            status = "incomplete"
        else:
            status = _STATUS.get(ev.finish_reason, "completed")
        inter: dict[str, Any] = {"status": status, "object": "interaction"}
        if self._id:
            inter["id"] = self._id
        if self._model:
            inter["model"] = self._model
        if self._usage is not None:
            inter["usage"] = _usage_wire(self._usage, self._source)
        # A session source (Live, Realtime) may start another response: a new interaction.
        self._started = False
        self._next = 0
        self._output = None
        self._parts = {}
        return out + self._frame("interaction.completed", {"interaction": inter})

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        err = ev.error
        raw = err.raw if self._source == PROTOCOL and isinstance(err.raw, dict) else None
        body = raw or {k: v for k, v in (("code", err.code or err.type), ("message", err.message)) if v}
        return self._start() + self._frame("error", {"error": body})

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        raw = ev.raw
        if self._source == PROTOCOL and isinstance(raw, dict) and isinstance(raw.get("event_type"), str):
            body = dict(raw)
            return self._frame(str(body.pop("event_type")), body)
        self._lose(f"unknown {ev.provider_type!r} frames of another protocol dropped")
        return b""


def _usage_wire(usage: Usage, source: str) -> dict[str, Any]:
    if source == PROTOCOL and isinstance(usage.raw, dict):
        return usage.raw
    pairs = (
        ("total_input_tokens", usage.input_tokens),
        ("total_output_tokens", usage.output_tokens),
        ("total_thought_tokens", usage.reasoning_tokens),
        ("total_cached_tokens", usage.cache_read_tokens),
        ("total_tokens", usage.total_tokens),
    )
    out: dict[str, Any] = {name: value for name, value in pairs if value is not None}
    return out


def _kept_step(part: UnknownPart) -> bool:
    """An unknown part our decoder made from a whole step (of any type, known or not)."""
    raw = part.raw
    return is_step(raw) or (isinstance(raw, dict) and raw.get("type") == part.provider_type)
