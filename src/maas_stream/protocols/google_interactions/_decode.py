"""Google Interactions stream decoder: SSE → events, current and legacy schema alike.

Current schema: ``interaction.created`` → (``step.start`` → ``step.delta``* → ``step.stop``)+ →
``interaction.completed``. Legacy schema: ``interaction.start``, ``content.start`` /
``content.delta`` / ``content.stop``, ``interaction.complete``. The schema is told from each
event's type, so both are accepted without configuration; a legacy content block is read as the
step it became (a text block as a ``model_output`` step).

Keys it emits: ``message`` is the step (or legacy content) index; ``part`` is ``0`` for a
thought, ``"call"`` for a call, the content position inside a ``model_output`` step, and
``"step"`` for a step kept whole. Built-in tool steps and result steps are buffered until their
``step.stop`` (their fields arrive in a delta of their own type) and then emitted whole. The
only state is per open step: its kind, its content position, and that buffer.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._exceptions import RemoteProtocolError
from ..._model import FinishReason, ReasoningPart, ResponseStatus, Role, StreamError, TextPart, ToolCallPart
from ...events import (
    AnnotationAdded,
    ArgumentsDelta,
    Event,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    StreamErrorEvent,
    SummaryDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import SSEStreamDecoder
from ._steps import (
    arguments_text,
    call_from_step,
    citation_from,
    message_from_step,
    part_from_content,
    step_kind,
)
from ._steps import usage_from as usage_from
from ._wire import Delta, Envelope, envelope_decoder

__all__ = ["StreamDecoder", "error_from"]

from .._names import GOOGLE_INTERACTIONS as PROTOCOL

_MEDIA_DELTAS: Final = frozenset({"image", "audio", "document", "video"})

# interaction status → (response status, finish reason)
_STATUS: Final[dict[str, tuple[ResponseStatus, FinishReason]]] = {
    "completed": ("completed", "stop"),
    "requires_action": ("completed", "tool_calls"),
    "incomplete": ("incomplete", "length"),
    "budget_exceeded": ("incomplete", "length"),
    "cancelled": ("incomplete", "other"),
    "failed": ("failed", "error"),
}


def error_from(raw: Any) -> StreamError:
    """Map an Interactions ``error`` object (``{code, message}``) to a StreamError."""
    if isinstance(raw, dict):
        code = raw.get("code")
        message = raw.get("message")
        return StreamError(
            type=str(code or "error"),
            message=message if isinstance(message, str) else None,
            code=None if code is None else str(code),
            raw=raw,
        )
    return StreamError(type="error", message=None if raw is None else str(raw), raw=raw)


class _Step:
    __slots__ = ("buffer", "kind", "last", "pos", "type")

    def __init__(self, step_type: str, kind: str) -> None:
        self.type = step_type
        self.kind = kind
        self.pos = -1
        self.last = ""
        self.buffer: dict[str, Any] | None = None


def _legacy_step(content: dict[str, Any]) -> dict[str, Any]:
    kind = content.get("type")
    if kind == "text" or kind in _MEDIA_DELTAS:
        return {"type": "model_output", "content": [content]}
    return content


class StreamDecoder(SSEStreamDecoder):
    """Decode a Google Interactions SSE stream (``POST /v1beta/interactions`` with ``stream``).

    Accepts the current ``step.*`` schema and the legacy ``content.*`` schema, a trailing
    ``data: [DONE]``, and ``event: error`` frames.
    """

    protocol = PROTOCOL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._steps: dict[int, _Step] = {}
        self._started = False
        self._handlers: dict[str, Any] = {
            "step.delta": self._on_delta,
            "content.delta": self._on_delta,
            "step.start": self._on_start,
            "content.start": self._on_start,
            "step.stop": self._on_stop,
            "content.stop": self._on_stop,
            "interaction.created": self._on_created,
            "interaction.start": self._on_created,
            "interaction.completed": self._on_completed,
            "interaction.complete": self._on_completed,
            "interaction.status_update": self._on_status,
            "error": self._on_error,
        }

    def on_frame(self, event: str, data: bytes | str) -> list[Event]:
        # The raw-bytes fast path: the typed decode reads the payload as it came; a frame that
        # is not JSON (``[DONE]``, a blank keep-alive, bad bytes) is told apart only then.
        try:
            env = envelope_decoder.decode(data)
        except msgspec.DecodeError:
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            if text.startswith("[DONE]") or not text.strip():
                return []
            raise
        kind = env.event_type or event
        handler = self._handlers.get(kind)
        out: list[Event] = []
        if handler is None:
            out.append(UnknownEvent(provider_type=kind, raw=msgspec.json.decode(data)))
            return out
        handler(env, data, out)
        return out

    # ------------------------------------------------------------------ lifecycle

    def _start(self, interaction: dict[str, Any] | None, out: list[Event]) -> None:
        if self._started:
            return
        self._started = True
        inter = interaction or {}
        raw = {
            k: v for k, v in inter.items() if k not in ("id", "model", "status", "steps", "outputs", "usage")
        }
        out.append(
            ResponseStart(
                protocol=PROTOCOL,
                id=inter.get("id") or None,
                model=inter.get("model") or inter.get("agent") or None,
                provider_raw=raw or None,
            )
        )

    def _on_created(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        self._steps.clear()
        self._start(env.interaction, out)

    def _on_status(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        # The final status is repeated in interaction.completed; nothing to keep here.
        return

    def _on_completed(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        inter = env.interaction or {}
        self._start(inter, out)
        self._close_all(out)
        usage = usage_from(inter.get("usage"))
        if usage is not None:
            out.append(UsageUpdate(usage=usage))
        status = str(inter.get("status") or "completed")
        mapped = _STATUS.get(status, ("completed", "other"))
        if mapped[0] == "failed":
            errors = inter.get("errors")
            first = errors[0] if isinstance(errors, list) and errors else {"message": "interaction failed"}
            out.append(StreamErrorEvent(error=error_from(first)))
        # A later interaction.created on the same stream starts the next response.
        self._started = False
        out.append(ResponseDone(status=mapped[0], finish_reason=mapped[1], provider_finish_reason=status))

    def _on_error(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        out.append(StreamErrorEvent(error=error_from(env.error)))

    def _close_all(self, out: list[Event]) -> None:
        for index in list(self._steps):
            self._stop(index, out)

    def on_finish(self) -> list[Event]:
        out: list[Event] = []
        for index, step in list(self._steps.items()):
            # A cut stream: a buffered step is emitted as far as it got, but left open.
            if step.buffer is not None:
                self._emit_buffer(index, step, out, close=False)
        return out

    # ------------------------------------------------------------------ steps

    def _on_start(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        index = _index(env)
        raw = env.step if env.step is not None else env.content
        if raw is None:
            raise RemoteProtocolError("step.start without a step", event_type=env.event_type)
        if env.content is not None and env.step is None:
            raw = _legacy_step(raw)
        self._start(None, out)
        if index in self._steps:
            self._stop(index, out)
        step_type = str(raw.get("type") or "")
        kind = step_kind(step_type)
        step = _Step(step_type, kind)
        self._steps[index] = step
        role: Role = "tool" if kind == "result" else "user" if step_type == "user_input" else "assistant"
        out.append(MessageStart(message=index, role=role, type=step_type))
        if kind == "thought":
            value = message_from_step(raw).content[0]
            assert isinstance(value, ReasoningPart)
            out.append(PartStart(message=index, part=0, value=value))
        elif kind == "output":
            content = raw.get("content")
            if isinstance(content, list):
                for item in content:
                    step.pos += 1
                    step.last = str(item.get("type")) if isinstance(item, dict) else ""
                    out.append(PartStart(message=index, part=step.pos, value=part_from_content(item)))
        elif kind in ("call", "mcp_call"):
            if raw.get("id") or raw.get("name"):
                # (A legacy function_call block may start empty; its delta then starts the call.)
                out.append(PartStart(message=index, part="call", value=call_from_step(raw)))
        else:
            step.buffer = dict(raw)

    def _on_stop(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        self._stop(_index(env), out)

    def _stop(self, index: int, out: list[Event]) -> None:
        step = self._steps.pop(index, None)
        if step is None:
            return
        if step.buffer is not None:
            self._emit_buffer(index, step, out, close=True)
        out.append(MessageDone(message=index))

    def _emit_buffer(self, index: int, step: _Step, out: list[Event], *, close: bool) -> None:
        merged = step.buffer or {}
        step.buffer = None
        if step.kind == "server_call":
            value: Any = call_from_step(merged)
            out.append(PartStart(message=index, part="call", value=value))
            if close:
                out.append(PartDone(message=index, part="call"))
        elif step.kind == "result":
            part = message_from_step(merged).content
            assert isinstance(part, list)
            out.append(PartStart(message=index, part="step", value=part[0]))
            if close:
                out.append(PartDone(message=index, part="step"))
        else:
            out.append(UnknownEvent(provider_type=step.type, raw=merged, message=index, part="step"))

    # ------------------------------------------------------------------ deltas

    def _on_delta(self, env: Envelope, data: bytes | str, out: list[Event]) -> None:
        index = _index(env)
        delta = env.delta
        if delta is None:
            raise RemoteProtocolError("step.delta without a delta", event_type=env.event_type)
        step = self._steps.get(index)
        if step is None:
            # A delta for a step that never started: treat it as a model output step.
            self._start(None, out)
            step = self._steps[index] = _Step("model_output", "output")
            out.append(MessageStart(message=index, type="model_output"))
        dtype = delta.type
        if dtype == "text":
            if step.last != "text" or step.pos < 0:
                step.pos += 1
                step.last = "text"
                out.append(PartStart(message=index, part=step.pos, value=TextPart(text="")))
            if delta.text:
                out.append(TextDelta(message=index, part=step.pos, text=delta.text))
            return
        if step.buffer is not None:
            raw = msgspec.json.decode(data).get("delta") or {}
            for key, value in raw.items():
                if key != "type" or value != step.type:
                    step.buffer[key] = value
            return
        self._other_delta(index, step, delta, data, out)

    def _other_delta(
        self, index: int, step: _Step, delta: Delta, data: bytes | str, out: list[Event]
    ) -> None:
        dtype = delta.type
        main: int | str = "call" if step.kind in ("call", "mcp_call") else 0
        if dtype == "thought_signature":
            if delta.signature is not None:
                out.append(SignatureDelta(message=index, part=main, signature=delta.signature))
        elif dtype == "thought_summary":
            content = delta.content
            if (
                isinstance(content, dict)
                and content.get("type") == "text"
                and isinstance(content.get("text"), str)
            ):
                out.append(SummaryDelta(message=index, part=main, index=0, text=content["text"]))
            else:
                out.append(UnknownEvent(provider_type="thought_summary", raw=content, message=index))
        elif dtype == "arguments_delta":
            if isinstance(delta.arguments, str):
                out.append(ArgumentsDelta(message=index, part="call", delta=delta.arguments))
        elif dtype in ("text_annotation_delta", "text_annotation"):
            if isinstance(delta.annotations, list):
                if step.last != "text":
                    step.pos += 1
                    step.last = "text"
                    out.append(PartStart(message=index, part=step.pos, value=TextPart(text="")))
                out.extend(
                    AnnotationAdded(message=index, part=step.pos, citation=citation_from(a))
                    for a in delta.annotations
                )
        elif dtype in ("function_call", "mcp_server_tool_call") and step.kind in ("call", "mcp_call"):
            # Legacy: the whole call in one delta.
            if delta.id or delta.name:
                value = ToolCallPart(id=delta.id or "", name=delta.name or "", arguments="")
                out.append(PartStart(message=index, part="call", value=value))
            text = arguments_text(delta.arguments)
            if text:
                out.append(ArgumentsDelta(message=index, part="call", delta=text))
            if delta.signature is not None:
                out.append(SignatureDelta(message=index, part="call", signature=delta.signature))
        elif dtype in _MEDIA_DELTAS:
            raw = msgspec.json.decode(data).get("delta")
            step.pos += 1
            step.last = dtype
            out.append(PartStart(message=index, part=step.pos, value=part_from_content(raw)))
            out.append(PartDone(message=index, part=step.pos))
        else:
            raw = msgspec.json.decode(data).get("delta")
            out.append(UnknownEvent(provider_type=f"delta.{dtype}", raw=raw, message=index))


def _index(env: Envelope) -> int:
    if env.index is None:
        raise RemoteProtocolError(f"{env.event_type} without an index", event_type=env.event_type)
    return env.index
