"""Google Interactions stream encoder: canonical events → current-schema SSE.

Each canonical part becomes a step through the package's one mapping (``_steps``): reasoning →
``thought``; a run of text / image / audio / file parts of one message → one ``model_output``
step; a function, custom or MCP call → its call step (argument deltas as ``arguments_delta``);
built-in server calls, tool results and kept Interactions steps → their steps, whole, when the
part ends (Interactions sends them in one delta anyway). Content travels only as the deltas the
aggregator emits (a start carries none); ``PartDone.value`` is read for whole steps and media.

What Interactions cannot carry is reported in :attr:`StreamEncoder.drops` (records, kinds as in
``_steps``), never turned into text: foreign signatures (:func:`~._replay.replayable`),
encrypted or redacted reasoning, refusals, code parts, transcripts, log-probabilities, server
calls of tools Interactions does not have, input (user) messages and unknown frames of other
protocols. It keeps only framing state: which output step each open part writes to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from ..._drops import DropLog
from ..._model import ReasoningPart, TextPart, ToolCallPart
from .._base import EventEncoder
from .._names import GOOGLE_INTERACTIONS as PROTOCOL
from .._template import HOLE, template
from ._content import LOGPROBS, annotation_from, content_from_part, is_content, report
from ._steps import (
    CHOICE_DROP,
    INPUT_DROP,
    INPUT_ROLES,
    error_wire,
    keep_signature,
    reasoning_drops,
    status_wire,
    step_from_call,
    step_of_part,
    thought_step,
    unknown_what,
    usage_wire,
)

if TYPE_CHECKING:
    from ... import events
    from ..._model import FinishReason, Usage

__all__ = ["StreamEncoder"]

_json = msgspec.json.Encoder()
_SUMMARY: Final = {"type": "thought_summary", "content": {"type": "text", "text": HOLE[0]}}
"""A reasoning part's ``step.delta`` (see ``_Out.delta``)."""
_TEXT: Final = {"type": "text", "text": HOLE[0]}
"""A text part's ``step.delta`` (made once, not per delta)."""
_ARGUMENTS: Final = {"type": "arguments_delta", "arguments": HOLE[0]}
"""A call's ``step.delta``."""


class _Out:
    """Where one open canonical part is written: its kind, its output step, whether text went."""

    __slots__ = ("frames", "kind", "step", "wrote")

    def __init__(self, kind: str, step: int) -> None:
        self.kind = kind
        self.step = step
        self.wrote = False
        self.frames: tuple[bytes, ...] | None = None
        """The part's ``step.delta`` (text, summary text or arguments), pre-encoded."""

    def delta(self, delta: dict[str, Any], value: str) -> bytes:
        """The ``step.delta`` of one streamed ``value``: ``delta`` holds ``HOLE[0]`` where it goes.

        A part streams in one shape, so its frame is encoded once (by ``StreamEncoder._frame``)
        and each value is one join of the same bytes.
        """
        frames = self.frames
        if frames is None:
            body = {"index": self.step, "delta": delta}
            frames = self.frames = template(lambda b: StreamEncoder._frame("step.delta", b), body, 1)
        return b"".join((frames[0], _json.encode(value), frames[1]))


class StreamEncoder(EventEncoder):
    """Encode canonical events as a Google Interactions SSE stream (current ``step.*`` schema).

    Args:
        interaction_id: The interaction ``id``; defaults to the source response's id.
        model: The ``model``; defaults to the source response's model.
    """

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, interaction_id: str | None = None, model: str | None = None) -> None:
        self.drops = DropLog(PROTOCOL)
        """What the target protocol could not carry and was dropped, one record per kind+what."""
        self._id = interaction_id
        self._model = model
        self._source: str | None = None
        self._started = False
        self._ended = False
        self._next = 0
        self._skip: set[Any] = set()
        self._output: tuple[Any, int] | None = None
        self._parts: dict[tuple[Any, Any], _Out] = {}
        self._open: set[int] = set()
        self._usage: Usage | None = None
        self._finish: tuple[Any, FinishReason, str | None] | None = None
        """The first output message's key and finish (per-choice sources give it there only)."""
        self._failed = False

    # ------------------------------------------------------------------ API

    def encode(self, event: events.Event) -> bytes:
        """Encode one canonical event; return the SSE frames it completes (maybe ``b""``)."""
        return b"" if self._ended else self._TABLE[type(event)](self, event)

    def finish(self) -> bytes:
        """End the output. A cut source stays cut: no ``interaction.completed`` is invented."""
        self._ended = True
        return b""

    # ------------------------------------------------------------------ framing

    @property
    def _same(self) -> bool:
        return self._source == PROTOCOL

    @staticmethod
    def _frame(event_type: str, body: dict[str, Any]) -> bytes:
        body["event_type"] = event_type
        return b"event: " + event_type.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"

    def _interaction(self, status: str) -> dict[str, Any]:
        inter: dict[str, Any] = {"status": status, "object": "interaction"}
        if self._id:
            inter["id"] = self._id
        if self._model:
            inter["model"] = self._model
        return inter

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        return self._frame("interaction.created", {"interaction": self._interaction("in_progress")})

    def _step_start(self, step: dict[str, Any]) -> tuple[int, bytes]:
        index = self._next
        self._next += 1
        self._open.add(index)
        return index, self._start() + self._frame("step.start", {"index": index, "step": step})

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return self._frame("step.delta", {"index": index, "delta": delta})

    def _stop(self, index: int) -> bytes:
        if index not in self._open:
            return b""
        self._open.discard(index)
        return self._frame("step.stop", {"index": index})

    def _close_output(self) -> bytes:
        if self._output is None:
            return b""
        index = self._output[1]
        self._output = None
        return self._stop(index)

    def _summary(self, index: int, text: str) -> bytes:
        return self._delta(index, {"type": "thought_summary", "content": {"type": "text", "text": text}})

    def _part(self, message: Any, part: Any, *kinds: str) -> _Out | None:
        out = self._parts.get((message, part))
        return out if out is not None and out.kind in kinds else None

    # ------------------------------------------------------------------ handlers

    def _on_response_start(self, ev: events.ResponseStart) -> bytes:
        self._source = ev.protocol
        self.drops.source = ev.protocol
        self._id = self._id or ev.id  # an id given to the encoder wins (a stored interaction's)
        self._model = ev.model or self._model
        return b""

    def _on_message_start(self, ev: events.MessageStart) -> bytes:
        if ev.role in INPUT_ROLES:
            self._skip.add(ev.message)
            report(self.drops, "message", INPUT_DROP)
        elif ev.choice_index not in (None, 0):
            self._skip.add(ev.message)
            report(self.drops, "message", CHOICE_DROP, f"choice {ev.choice_index}")
        return b""

    def _on_part_start(self, ev: events.PartStart) -> bytes:
        if ev.message in self._skip:
            return b""
        value = ev.value
        key = (ev.message, ev.part)
        if is_content(value, same=self._same):
            # Text follows as deltas; media goes out whole at its PartDone.
            out = b""
            if self._output is None or self._output[0] != ev.message:
                out = self._close_output()
                index, out_frame = self._step_start({"type": "model_output"})
                out += out_frame
                self._output = (ev.message, index)
            self._parts[key] = _Out("content", self._output[1])
            return out
        out = self._close_output()
        if isinstance(value, ReasoningPart):
            index, frame = self._step_start(thought_step(value, origin=self._source, drops=self.drops))
            self._parts[key] = _Out("thought", index)
            # Summary items are no streamed content: the start holds them (its text is a delta).
            return out + frame + b"".join(self._summary(index, t) for t in value.summary or ())
        if isinstance(value, ToolCallPart) and value.kind != "server":
            step = step_from_call(value)  # (its arguments, {} so far, follow as deltas)
            assert step is not None
            if value.signature is not None and keep_signature(self._source, self.drops):
                step["signature"] = value.signature
            index, frame = self._step_start(step)
            self._parts[key] = _Out("call", index)
            return out + frame
        # Built-in calls, results and other parts go out whole at PartDone.
        self._parts[key] = _Out("whole", -1)
        return out

    def _on_text(self, ev: events.TextDelta) -> bytes:
        part = self._parts.get((ev.message, ev.part))  # (inlined _part: the hot path)
        if part is None or part.kind != "content":
            return b""
        part.wrote = True
        return part.delta(_TEXT, ev.text)

    def _on_refusal(self, ev: events.RefusalDelta) -> bytes:
        return b""  # reported once, at its PartDone (Interactions has no refusal)

    def _on_audio(self, ev: events.AudioDelta) -> bytes:
        return b""  # the audio goes out whole at its PartDone (a transcript is reported there)

    def _on_reasoning(self, ev: events.ReasoningDelta) -> bytes:
        part = self._part(ev.message, ev.part, "thought")
        return b"" if part is None else part.delta(_SUMMARY, ev.text)

    def _on_summary(self, ev: events.SummaryDelta) -> bytes:
        part = self._part(ev.message, ev.part, "thought")
        return b"" if part is None or not ev.text else part.delta(_SUMMARY, ev.text)

    def _on_signature(self, ev: events.SignatureDelta) -> bytes:
        # A signature on content is reported at its PartDone (the value holds it).
        part = self._part(ev.message, ev.part, "thought", "call")
        if part is None or not keep_signature(self._source, self.drops):
            return b""
        return self._delta(part.step, {"type": "thought_signature", "signature": ev.signature})

    def _on_arguments(self, ev: events.ArgumentsDelta) -> bytes:
        part = self._part(ev.message, ev.part, "call")
        return b"" if part is None else part.delta(_ARGUMENTS, ev.delta)

    def _on_annotation(self, ev: events.AnnotationAdded) -> bytes:
        part = self._part(ev.message, ev.part, "content")
        if part is None:
            return b""
        return self._delta(
            part.step, {"type": "text_annotation_delta", "annotations": [annotation_from(ev.citation)]}
        )

    def _on_logprobs(self, ev: events.LogprobsDelta) -> bytes:
        report(self.drops, "logprobs", LOGPROBS)
        return b""

    def _on_part_done(self, ev: events.PartDone) -> bytes:
        part = self._parts.pop((ev.message, ev.part), None)
        value = ev.value
        if part is None or value is None:
            return b""
        if part.kind == "content":
            # Reports what the item cannot carry; only media go out here (text went as deltas).
            item = content_from_part(value, drops=self.drops)
            if item is None or (isinstance(value, TextPart) and part.wrote):
                return b""
            if isinstance(value, TextPart):
                # A text part with no text still is one (as in a body); its text went as deltas.
                return self._delta(part.step, {"type": "text", "text": ""})
            return self._delta(part.step, item)
        if part.kind == "call" and isinstance(value, ToolCallPart) and value.status == "incomplete":
            self._open.discard(part.step)  # a cut call stays cut: no step.stop
            return b""
        if part.kind == "thought" and isinstance(value, ReasoningPart):
            reasoning_drops(value, self.drops)
        if part.kind in ("thought", "call"):
            return self._stop(part.step)
        out = b""
        for step in step_of_part(value, origin=self._source, drops=self.drops):
            out += self._whole(step)
        return out

    def _whole(self, step: dict[str, Any]) -> bytes:
        """A whole step: a call's arguments in a delta of its own type, anything else at once."""
        arguments = step.pop("arguments", None) if step["type"].endswith("_call") else None
        index, out = self._step_start(step)
        if arguments is not None:
            out += self._delta(index, {"type": step["type"], "arguments": arguments})
        return out + self._stop(index)

    def _on_message_done(self, ev: events.MessageDone) -> bytes:
        if (
            ev.finish_reason is not None
            and ev.message not in self._skip
            and _earlier(ev.message, self._finish)
        ):
            self._finish = (ev.message, ev.finish_reason, ev.provider_finish_reason)
        if self._output is None or self._output[0] != ev.message:
            return b""
        if ev.status == "incomplete":
            # A cut source stays cut: the step is left without its step.stop.
            self._open.discard(self._output[1])
            self._output = None
            return b""
        return self._close_output()

    def _on_usage(self, ev: events.UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: events.ResponseDone) -> bytes:
        out = self._start() + self._close_output()
        for index in sorted(self._open):
            out += self._stop(index)
        # One status per interaction: the response's finish, else its first message's (the
        # aggregator already normalized both); after an in-band error the interaction failed.
        finish, provider = ev.finish_reason, ev.provider_finish_reason
        if finish is None and self._finish is not None:
            _, finish, provider = self._finish
        status = status_wire("failed" if self._failed else ev.status, finish, provider, same=self._same)
        inter = self._interaction(status)
        if self._usage is not None:
            inter["usage"] = usage_wire(self._usage, same=self._same)
        # A session source (Live, Realtime) may start another response: a new interaction.
        self._started = False
        self._next = 0
        self._output = None
        self._parts = {}
        self._skip = set()
        self._finish = None
        self._failed = False
        return out + self._frame("interaction.completed", {"interaction": inter})

    def _on_error(self, ev: events.StreamErrorEvent) -> bytes:
        self._failed = True
        return self._start() + self._frame("error", {"error": error_wire(ev.error, same=self._same)})

    def _on_unknown(self, ev: events.UnknownEvent) -> bytes:
        raw = ev.raw
        if self._same and isinstance(raw, dict) and isinstance(raw.get("event_type"), str):
            body = dict(raw)
            return self._frame(str(body.pop("event_type")), body)
        report(self.drops, "unknown", unknown_what(ev.provider_type, "frames", same=self._same))
        return b""


def _earlier(message: Any, than: tuple[Any, Any, Any] | None) -> bool:
    """Whether ``message`` comes before the message ``than`` holds (canonical keys count up)."""
    if than is None:
        return True
    return isinstance(message, int) and isinstance(than[0], int) and message < than[0]
