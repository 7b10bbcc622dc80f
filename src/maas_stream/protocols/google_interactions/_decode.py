"""Google Interactions stream decoder: SSE → events, current and legacy schema alike.

Current schema: ``interaction.created`` → (``step.start`` → ``step.delta``* → ``step.stop``)+ →
``interaction.completed``. Legacy schema: ``interaction.start``, ``content.start`` /
``content.delta`` / ``content.stop``, ``interaction.complete``. The schema is told from each
event's type, so both are accepted without configuration; a legacy content block is read as the
step it became (a text block as a ``model_output`` step).

Keys it emits: ``message`` is the step (or legacy content) index, a dict key and never a size;
``part`` is ``0`` for a thought, ``"call"`` for a call, the content position inside a
``model_output`` (or ``user_input``) step, and ``"step"`` for a step kept whole. Built-in tool
steps and result steps are buffered until their ``step.stop`` (their fields arrive in a delta of
their own type) and then emitted whole. Parts, usage, status and errors are built by the
package's one mapping (``_steps``). The only state is per open step (its kind, its content
position, that buffer) and the model the stream announced.

Invalid input (a field the mapping reads with the wrong JSON type, JSON nested deeper than
``_wire.MAX_DEPTH``, a frame without its index) raises ``RemoteProtocolError``; it must not
raise anything else for what the provider sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ... import events as ev
from ..._exceptions import RemoteProtocolError
from ..._model import Message, Part, TextPart
from .._base import SSEStreamDecoder
from .._direct import ARGS, SUMMARY
from .._names import GOOGLE_INTERACTIONS as PROTOCOL
from ._content import citation_from, part_from_content
from ._steps import (
    arguments_text,
    call_from_step,
    error_from,
    failure_of,
    finish_from_status,
    interaction_extra,
    legacy_step,
    message_from_step,
    role_of,
    step_kind,
    usage_from,
)
from ._wire import Delta, Envelope, InteractionFields, check_depth, decode_raw, envelope_decoder

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["StreamDecoder"]

_MEDIA_DELTAS: Final = frozenset({"image", "audio", "document", "video"})


class _Step:
    """One open step: its type, kind, last content part and (if emitted whole) gathered fields."""

    __slots__ = ("buffer", "kind", "last", "pos", "type")

    def __init__(self, step_type: str, kind: str) -> None:
        self.type = step_type
        self.kind = kind
        self.pos = -1
        self.last = ""
        self.buffer: dict[str, Any] | None = None


def _only_part(message: Message) -> Part:
    content = message.content
    assert isinstance(content, list)
    return content[0]


class StreamDecoder(SSEStreamDecoder):
    """Decode a Google Interactions SSE stream (``POST /v1beta/interactions`` with ``stream``).

    Accepts the current ``step.*`` schema and the legacy ``content.*`` schema, a trailing
    ``data: [DONE]``, and ``event: error`` frames. Invalid input (a field of the wrong JSON type,
    JSON nested deeper than ``_wire.MAX_DEPTH``) raises ``RemoteProtocolError``.
    """

    protocol = PROTOCOL
    direct = True
    __slots__ = ("_decoded", "_model", "_started", "_steps")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._steps: dict[int, _Step] = {}
        self._started = False
        self._decoded: tuple[bytes, Envelope] | None = None
        """A frame the direct fold decoded and hands :meth:`normal`: :meth:`on_frame` reads it once."""
        self._model: str | None = None
        """The model announced at the start (a final interaction naming another one wins)."""

    def on_frame(self, event: str, data: bytes | str) -> list[ev.Event]:
        decoded = self._decoded
        if decoded is not None and decoded[0] is data:
            self._decoded = None
            env: Envelope | None = decoded[1]
        else:
            env = _envelope(data)
        if env is None:
            return []
        kind = env.event_type or event
        handler = _HANDLERS.get(kind)
        out: list[ev.Event] = []
        if handler is None:
            out.append(ev.UnknownEvent(provider_type=kind, raw=decode_raw(data)))
            return out
        handler(self, env, data, out)
        return out

    def fold_frames(self, payloads: list[bytes], names: Sequence[str]) -> None:
        """Fold a step's text deltas (in its open text part), arguments and summary deltas directly.

        Such a delta's only event is itself (:meth:`_on_delta`, :meth:`_other_delta`); any other
        frame, or a step not started, goes :meth:`normal`. A text summary delta appends to entry 0
        of the step's main part once that has a summary (``fold_delta``'s :data:`SUMMARY`).
        """
        decode = envelope_decoder.decode
        steps = self._steps
        first = self._frames + 1
        for number, data in enumerate(payloads, first):
            try:
                env = decode(data)
            except _FAULTS:
                env = None
            if env is not None and env.event_type in _DELTA_TYPES:
                delta = env.delta
                index = env.index
                step = steps.get(index) if index is not None else None
                if delta is not None and step is not None and index is not None:
                    dtype = delta.type
                    if dtype == "text":
                        if step.last == "text":
                            text = delta.text
                            if not text:
                                continue  # no event
                            if self.fold_delta(index, step.pos, text):
                                continue
                    elif step.buffer is None:
                        if dtype == "arguments_delta":
                            text = delta.arguments
                            if not text or not isinstance(text, str):
                                continue  # no event
                            if self.fold_delta(index, "call", text, ARGS):
                                continue
                        elif dtype == "thought_summary" and self._fold_summary(index, step, delta.content):
                            continue
            if env is not None:
                self._decoded = (data, env)  # not decoded twice: on_frame reads it once
            self.normal(number, names[number - first], data)

    def _fold_summary(self, index: int, step: _Step, content: Any) -> bool:
        """Fold a text summary delta (:meth:`_other_delta`'s ``SummaryDelta``) directly, if it can be."""
        if type(content) is not dict or content.get("type") != "text":
            return False
        text = content.get("text")
        return type(text) is str and self.fold_delta(index, _main(step), text, SUMMARY)

    # ------------------------------------------------------------------ lifecycle

    def _start(self, interaction: dict[str, Any] | None, out: list[ev.Event]) -> None:
        inter = interaction or {}
        check_depth(inter)
        fields = msgspec.convert(inter, InteractionFields)  # checked even when already started
        if self._started:
            return
        self._started = True
        self._model = fields.model or fields.agent or None
        out.append(
            ev.ResponseStart(
                protocol=PROTOCOL,
                id=fields.id or None,
                model=self._model,
                provider_raw=interaction_extra(inter),
            )
        )

    def _on_created(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        self._steps.clear()
        self._start(env.interaction, out)

    def _on_status(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        # The final status is repeated in interaction.completed; nothing to keep here.
        return

    def _on_completed(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        inter = env.interaction or {}
        check_depth(inter)
        fields = msgspec.convert(inter, InteractionFields)
        model = fields.model or fields.agent or None
        if self._started and model is not None and model != self._model:
            # The final interaction is the authority (a model fallback mid-stream, say).
            out.append(ev.ResponseStart(protocol=PROTOCOL, id=fields.id or None, model=model))
            self._model = model
        self._start(inter, out)
        self._close_all(out)
        usage = usage_from(fields.usage)
        if usage is not None:
            out.append(ev.UsageUpdate(usage=usage))
        wire = fields.status or "completed"
        status, finish = finish_from_status(wire)
        if status == "failed":
            out.append(ev.StreamErrorEvent(error=failure_of(fields.errors)))
        # A later interaction.created on the same stream starts the next response.
        self._started = False
        out.append(ev.ResponseDone(status=status, finish_reason=finish, provider_finish_reason=wire))

    def _on_error(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        check_depth(env.error)
        out.append(ev.StreamErrorEvent(error=error_from(env.error)))

    def _close_all(self, out: list[ev.Event]) -> None:
        for index in list(self._steps):
            self._stop(index, out)

    def on_finish(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        for index, step in list(self._steps.items()):
            # A cut stream: a buffered step is emitted as far as it got, but left open.
            if step.buffer is not None:
                self._emit_buffer(index, step, out, close=False)
        return out

    # ------------------------------------------------------------------ steps

    def _on_start(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        index = _index(env)
        raw = env.step if env.step is not None else env.content
        if raw is None:
            raise RemoteProtocolError("step.start without a step", event_type=env.event_type)
        check_depth(raw)
        if env.step is None:
            raw = legacy_step(raw)
        self._start(None, out)
        if index in self._steps:
            self._stop(index, out)
        found = raw.get("type")
        step_type = found if isinstance(found, str) else ""
        kind = step_kind(step_type)
        step = _Step(step_type, kind)
        self._steps[index] = step
        out.append(ev.MessageStart(message=index, role=role_of(step_type), type=step_type))
        if kind == "thought":
            out.append(ev.PartStart(message=index, part=0, value=_only_part(message_from_step(raw))))
        elif kind in ("output", "input"):
            content = message_from_step(raw).content
            for part in content if isinstance(content, list) else ():
                step.pos += 1
                step.last = "text" if isinstance(part, TextPart) else "content"
                out.append(ev.PartStart(message=index, part=step.pos, value=part))
        elif kind in ("call", "mcp_call"):
            call = call_from_step(raw)
            if call.id or call.name:
                # (A legacy function_call block may start empty; its delta then starts the call.)
                out.append(ev.PartStart(message=index, part="call", value=call))
        else:
            step.buffer = dict(raw)

    def _on_stop(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        self._stop(_index(env), out)

    def _stop(self, index: int, out: list[ev.Event]) -> None:
        step = self._steps.pop(index, None)
        if step is None:
            return
        if step.buffer is not None:
            self._emit_buffer(index, step, out, close=True)
        out.append(ev.MessageDone(message=index))

    def _emit_buffer(self, index: int, step: _Step, out: list[ev.Event], *, close: bool) -> None:
        merged = step.buffer or {}
        step.buffer = None
        if step.kind == "server_call":
            out.append(ev.PartStart(message=index, part="call", value=call_from_step(merged)))
            if close:
                out.append(ev.PartDone(message=index, part="call"))
        elif step.kind == "result":
            out.append(ev.PartStart(message=index, part="step", value=_only_part(message_from_step(merged))))
            if close:
                out.append(ev.PartDone(message=index, part="step"))
        else:
            out.append(ev.UnknownEvent(provider_type=step.type, raw=merged, message=index, part="step"))

    # ------------------------------------------------------------------ deltas

    def _on_delta(self, env: Envelope, data: bytes | str, out: list[ev.Event]) -> None:
        index = _index(env)
        delta = env.delta
        if delta is None:
            raise RemoteProtocolError("step.delta without a delta", event_type=env.event_type)
        step = self._steps.get(index)
        if step is None:
            # A delta for a step that never started: treat it as a model output step.
            self._start(None, out)
            step = self._steps[index] = _Step("model_output", "output")
            out.append(ev.MessageStart(message=index, type="model_output"))
        if delta.type == "text":
            if step.last != "text":
                self._text_part(index, step, out)
            if delta.text:
                out.append(ev.TextDelta(message=index, part=step.pos, text=delta.text))
            return
        if step.buffer is not None:
            for key, value in decode_raw(data)["delta"].items():
                if key != "type" or value != step.type:
                    step.buffer[key] = value
            return
        self._other_delta(index, step, delta, data, out)

    def _text_part(self, index: int, step: _Step, out: list[ev.Event]) -> None:
        if step.last != "text":
            step.pos += 1
            step.last = "text"
            out.append(ev.PartStart(message=index, part=step.pos, value=TextPart(text="")))

    def _other_delta(
        self, index: int, step: _Step, delta: Delta, data: bytes | str, out: list[ev.Event]
    ) -> None:
        dtype = delta.type
        main = _main(step)
        if dtype == "thought_signature":
            if delta.signature is not None:
                out.append(ev.SignatureDelta(message=index, part=main, signature=delta.signature))
        elif dtype == "thought_summary":
            content = delta.content
            if (
                isinstance(content, dict)
                and content.get("type") == "text"
                and isinstance(content.get("text"), str)
            ):
                out.append(ev.SummaryDelta(message=index, part=main, index=0, text=content["text"]))
            else:
                check_depth(content)
                out.append(ev.UnknownEvent(provider_type="thought_summary", raw=content, message=index))
        elif dtype == "arguments_delta":
            if isinstance(delta.arguments, str):
                out.append(ev.ArgumentsDelta(message=index, part="call", delta=delta.arguments))
        elif dtype in ("text_annotation_delta", "text_annotation"):
            if isinstance(delta.annotations, list):
                check_depth(delta.annotations)
                self._text_part(index, step, out)
                out.extend(
                    ev.AnnotationAdded(message=index, part=step.pos, citation=citation_from(a))
                    for a in delta.annotations
                )
        elif dtype in ("function_call", "mcp_server_tool_call") and step.kind in ("call", "mcp_call"):
            self._legacy_call(index, step, decode_raw(data)["delta"], out)
        elif dtype in _MEDIA_DELTAS:
            step.pos += 1
            step.last = "content"
            out.append(
                ev.PartStart(message=index, part=step.pos, value=part_from_content(decode_raw(data)["delta"]))
            )
            out.append(ev.PartDone(message=index, part=step.pos))
        else:
            out.append(
                ev.UnknownEvent(provider_type=f"delta.{dtype}", raw=decode_raw(data)["delta"], message=index)
            )

    def _legacy_call(self, index: int, step: _Step, raw: dict[str, Any], out: list[ev.Event]) -> None:
        """Legacy: the whole call in one delta (its arguments and signature as deltas)."""
        call = call_from_step({**raw, "type": step.type, "arguments": None, "signature": None})
        if call.id or call.name:
            out.append(ev.PartStart(message=index, part="call", value=call))
        text = arguments_text(raw.get("arguments"))
        if text:
            out.append(ev.ArgumentsDelta(message=index, part="call", delta=text))
        signature = raw.get("signature")
        if isinstance(signature, str):
            out.append(ev.SignatureDelta(message=index, part="call", signature=signature))


_HANDLERS: Final[dict[str, Any]] = {
    "step.delta": StreamDecoder._on_delta,
    "content.delta": StreamDecoder._on_delta,
    "step.start": StreamDecoder._on_start,
    "content.start": StreamDecoder._on_start,
    "step.stop": StreamDecoder._on_stop,
    "content.stop": StreamDecoder._on_stop,
    "interaction.created": StreamDecoder._on_created,
    "interaction.start": StreamDecoder._on_created,
    "interaction.completed": StreamDecoder._on_completed,
    "interaction.complete": StreamDecoder._on_completed,
    "interaction.status_update": StreamDecoder._on_status,
    "error": StreamDecoder._on_error,
}


_DELTA_TYPES: Final = frozenset({"step.delta", "content.delta"})

_FAULTS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
"""A frame the direct fold cannot read goes the normal way, which reports it (or skips it)."""


def _main(step: _Step) -> int | str:
    """The key of a step's main part (a call's, or the first): what signatures and summaries go to."""
    return "call" if step.kind in ("call", "mcp_call") else 0


def _index(env: Envelope) -> int:
    if env.index is None:
        raise RemoteProtocolError(f"{env.event_type} without an index", event_type=env.event_type)
    return env.index


def _envelope(data: bytes | str) -> Envelope | None:
    """The typed envelope of a frame; ``None`` for one that carries nothing.

    The raw-bytes fast path: the typed decode reads the payload as it came; a frame that is not
    JSON (``[DONE]``, a blank keep-alive, bad bytes) is told apart only when it fails.
    """
    try:
        return envelope_decoder.decode(data)
    except RecursionError as exc:
        raise RemoteProtocolError("the frame is nested too deeply") from exc
    except msgspec.DecodeError:
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        if text.startswith("[DONE]") or text.isspace() or not text:
            return None
        raise
