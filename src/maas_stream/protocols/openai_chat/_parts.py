"""OpenAI Chat Completions stream encoder, part half: framing and the per-part-kind writers.

:class:`PartWriter` turns the canonical part events (starts, deltas, ends) into
``chat.completion.chunk`` deltas, with the wire objects of ``_map``, so a stream and a body of the
same response carry the same tool calls, audio, annotations and reasoning. Content arrives only
as deltas (the aggregator emits a part's start empty and any ``.done``-only remainder as a delta),
so nothing here re-sends "the rest" of a final value. What a part cannot carry is reported when
the part ends, from its final value, by the same functions the body encoder uses.

The response and message lifecycle (finish reasons, usage, errors, ``[DONE]``) is
:class:`~._encode.StreamEncoder`'s. It must not do IO.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._drops import DropLog
from ..._holders import EMPTY, writable
from ..._model import AudioPart, ReasoningPart, RefusalPart, TextPart, ToolCallPart
from .._replay import replayable
from .._template import HOLE, template
from ._map import (
    LEGACY,
    PROTOCOL,
    ReasoningMode,
    annotation_to_wire,
    audio_delta,
    call_to_wire,
    detail_head,
    drop_part,
    drop_reasoning,
    legacy_to_wire,
    reasoning_field,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..._model import Part
    from ...events import (
        AnnotationAdded,
        ArgumentsDelta,
        AudioDelta,
        LogprobsDelta,
        PartDone,
        PartStart,
        ReasoningDelta,
        RefusalDelta,
        SignatureDelta,
        SummaryDelta,
        TextDelta,
    )

__all__ = ["PartWriter"]

_json = msgspec.json.Encoder()


def _sse(body: Any) -> bytes:
    return b"data: " + _json.encode(body) + b"\n\n"


_MADE: Final[dict[str, Any]] = {}
"""The delta handed to ``_delta`` for a part whose chunk is made already (it is not read)."""
_CONTENT: Final = {"content": HOLE[0]}
_REFUSAL: Final = {"refusal": HOLE[0]}
_AUDIO_DATA: Final = {"audio": {"data": HOLE[0]}}
_AUDIO_TRANSCRIPT: Final = {"audio": {"transcript": HOLE[0]}}
"""The text and refusal deltas of :meth:`_delta`'s template (made once, not per delta; never changed)."""

_HEADER: Final[Mapping[str, Any]] = MappingProxyType({"created": 0})
"""The chunk header fields of a stream whose source gave none (shared, read-only)."""


class _Out:
    """How one canonical part is being written out."""

    __slots__ = ("alt", "choice", "field", "frames", "kind", "meta", "start", "tool")

    def __init__(
        self, kind: str, choice: int, tool: int = -1, field: str = "", start: Part | None = None
    ) -> None:
        self.kind = kind
        """``text``, ``refusal``, ``tool``, ``reasoning``, ``audio``; ``drop`` (reported when it
        ends) or ``skip`` (part of a message that is not the model's, reported as a message)."""
        self.choice = choice
        self.tool = tool
        self.field = field
        self.start = start
        """The start value of a part that is dropped, in case its end brings none."""
        self.meta: Mapping[str, Any] = EMPTY
        """Fields repeated on every ``reasoning_details`` entry of this part (type, index, format, id)."""
        self.frames: tuple[bytes, ...] | None = None
        """This part's delta chunk, pre-encoded with the delta left open (see ``_delta``)."""
        self.alt: tuple[bytes, ...] | None = None
        """An audio part's transcript chunk, pre-encoded the same way (``frames``: its data's)."""


class PartWriter:
    """Framing and the part writers of the Chat stream encoder (see the module docstring).

    A mixin: :class:`~._encode.StreamEncoder` joins it with the event routing of
    :class:`~.._base.EventEncoder`, which finds these ``_on_*`` handlers by name.

    Args:
        reasoning: Where reasoning goes (see :data:`~._map.ReasoningMode`).
    """

    def __init__(self, reasoning: ReasoningMode) -> None:
        self.reasoning: ReasoningMode = reasoning
        self.drops = DropLog(PROTOCOL)
        """What the target protocol could not carry and was dropped, as records."""
        self._source = ""
        self._id: str | None = None
        self._model: str | None = None
        self._header: Mapping[str, Any] = _HEADER
        # The maps below start as the shared EMPTY (nothing per idle stream) and get a dict of
        # their own at their first entry (``writable``); dicts stand for sets (a third the size).
        self._choices: dict[int, int] = EMPTY
        """The choice of each source message, when it is not choice 0 (the default)."""
        self._announced: tuple[int, ...] = ()
        """The choices announced (their role chunk sent): a tuple, as a stream has one or a few."""
        self._parts: dict[tuple[Any, Any], _Out] = {}
        self._tools: dict[int, int] = EMPTY
        self._legacy: dict[int, None] = EMPTY
        self._details: dict[int, int] = EMPTY
        self._held: dict[int, list[dict[str, Any]]] = EMPTY
        self._skipped: dict[Any, None] = EMPTY
        """Source messages that are not the model's (user, tool...): their parts are not written."""

    # ------------------------------------------------------------------ framing

    def _chunk(self, choice: int, delta: dict[str, Any], **extra: Any) -> bytes:
        body = self._chunk_body(choice, delta)
        if extra:
            body["choices"][0].update(extra)
        return _sse(body)

    def _delta(self, out: _Out, delta: dict[str, Any], value: str) -> bytes:
        """The chunk of one streamed value of a part: ``delta`` holds ``HOLE[0]`` where it goes.

        The hot path: the part's chunk is encoded once (a part always streams in one shape,
        and the chunk header is fixed once the response started), then each value is one join
        of the same bytes :meth:`_chunk` would write.
        """
        frames = out.frames
        if frames is None:
            frames = out.frames = template(_sse, self._chunk_body(out.choice, delta), 1)
        return b"".join((frames[0], _json.encode(value), frames[1]))

    def _chunk_body(self, choice: int, delta: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": self._id or "chatcmpl-maas",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self._model or "unknown",
            **self._header,
            "choices": [{"index": choice, "delta": delta, "finish_reason": None}],
        }

    def _choice(self, message: Any) -> int:
        return self._choices.get(message, 0) if isinstance(message, int) else 0

    def _announce(self, choice: int) -> bytes:
        if choice in self._announced:
            return b""
        self._announced += (choice,)
        return self._chunk(choice, {"role": "assistant", "content": ""})

    def _flush_annotations(self, choice: int) -> bytes:
        held = self._held.pop(choice, None) if self._held else None
        return self._chunk(choice, {"annotations": held}) if held else b""

    # ------------------------------------------------------------------ part starts

    def _on_part_start(self, ev: PartStart) -> bytes:
        assert isinstance(ev.message, int)
        assert isinstance(ev.part, int)
        choice = self._choice(ev.message)
        key = (ev.message, ev.part)
        if ev.message in self._skipped:
            self._parts[key] = _Out("skip", choice)
            return b""
        value = ev.value
        head = self._announce(choice)
        if isinstance(value, TextPart):
            self._parts[key] = _Out("text", choice)
        elif isinstance(value, RefusalPart):
            self._parts[key] = _Out("refusal", choice)
        elif isinstance(value, ToolCallPart) and value.kind in ("function", "custom"):
            head += self._call_start(key, choice, value)
        elif isinstance(value, ReasoningPart):
            head += self._reasoning_start(key, choice, value)
        elif isinstance(value, AudioPart):
            self._parts[key] = _Out("audio", choice)
            audio = audio_delta(value.id, value.data, value.transcript, value.expires_at)
            if audio:
                head += self._chunk(choice, {"audio": audio})
        else:
            self._parts[key] = _Out("drop", choice, start=value)  # reported from its final value when it ends
        return head

    def _call_start(self, key: tuple[int, int], choice: int, value: ToolCallPart) -> bytes:
        if value.item_id == LEGACY and self._source == PROTOCOL:
            self._parts[key] = _Out("tool", choice, field=LEGACY)
            self._legacy = writable(self._legacy)
            self._legacy[choice] = None
            return self._chunk(choice, {LEGACY: legacy_to_wire(value, "")})
        tool = self._tools.get(choice, 0)
        self._tools = writable(self._tools)
        self._tools[choice] = tool + 1
        self._parts[key] = _Out("tool", choice, tool, field=value.kind)
        return self._chunk(choice, {"tool_calls": [{"index": tool, **call_to_wire(value, "")}]})

    def _reasoning_start(self, key: tuple[int, int], choice: int, value: ReasoningPart) -> bytes:
        field = reasoning_field(value, self._source, self.reasoning)
        if not field:
            self._parts[key] = _Out("drop", choice, start=value)
            return b""
        self._parts[key] = out = _Out("reasoning", choice, field=field)
        if field != "reasoning_details":
            return b""
        index = self._details.get(choice, 0)
        self._details = writable(self._details)
        self._details[choice] = index + 1
        out.meta = detail_head(value, index)
        if value.data is not None and self._keep_state():
            # Opaque reasoning: an entry of its own, complete as it starts.
            return self._chunk(
                choice,
                {"reasoning_details": [{**out.meta, "type": "reasoning.encrypted", "data": value.data}]},
            )
        return b""

    def _keep_state(self) -> bool:
        return replayable(self._source, PROTOCOL)

    # ------------------------------------------------------------------ deltas

    def _get(self, ev: Any) -> _Out | None:
        return self._parts.get((ev.message, ev.part))

    def _on_text(self, ev: TextDelta) -> bytes:
        out = self._parts.get((ev.message, ev.part))  # (inlined _get: the hot path)
        if out is None or out.kind != "text":
            return b""
        return self._delta(out, _CONTENT, ev.text)

    def _on_refusal(self, ev: RefusalDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "refusal":
            return b""
        return self._delta(out, _REFUSAL, ev.text)

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning":
            return b""
        if out.field == "reasoning_details":
            return self._chunk(out.choice, {"reasoning_details": [{**out.meta, "text": ev.text}]})
        return self._delta(out, {out.field: HOLE[0]}, ev.text)

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning" or not ev.text:
            return b""
        if out.field == "reasoning_details":
            detail = {**out.meta, "type": "reasoning.summary", "summary": ev.text}
            return self._chunk(out.choice, {"reasoning_details": [detail]})
        return self._delta(out, {out.field: HOLE[0]}, ev.text)

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        out = self._get(ev)
        if (
            out is None
            or out.kind != "reasoning"
            or out.field != "reasoning_details"
            or not self._keep_state()
        ):
            return b""  # no place for it: reported when the part ends
        return self._chunk(out.choice, {"reasoning_details": [{**out.meta, "signature": ev.signature}]})

    def _on_arguments(self, ev: ArgumentsDelta) -> bytes:
        out = self._parts.get((ev.message, ev.part))  # (inlined _get: the hot path)
        if out is None or out.kind != "tool":
            return b""
        # The delta's shape is only read for the part's first chunk (_delta): made only then.
        return self._delta(out, _MADE if out.frames is not None else _call_delta(out), ev.delta)

    def _on_audio(self, ev: AudioDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "audio":
            return b""
        if ev.id is None and ev.expires_at is None and not (ev.data and ev.transcript):
            # The common delta, data or transcript alone: pre-encoded, as ``_delta`` writes text.
            if ev.data:
                return self._delta(out, _AUDIO_DATA, ev.data)
            if not ev.transcript:
                return b""
            frames = out.alt
            if frames is None:
                frames = out.alt = template(_sse, self._chunk_body(out.choice, _AUDIO_TRANSCRIPT), 1)
            return b"".join((frames[0], _json.encode(ev.transcript), frames[1]))
        audio = audio_delta(ev.id, ev.data, ev.transcript, ev.expires_at)
        return self._chunk(out.choice, {"audio": audio}) if audio else b""

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "text":
            return b""
        annotation = annotation_to_wire(ev.citation)
        if annotation is None:
            what = f"citation of kind {ev.citation.kind!r} (Chat annotations carry URL citations only)"
            self.drops.add("citation", what)
            return b""
        # The openai SDK merges `annotations` only when they come in one delta (a second
        # index-less list breaks its accumulator), as OpenAI sends them: hold them until the
        # choice finishes.
        self._held = writable(self._held)
        self._held.setdefault(out.choice, []).append(annotation)
        return b""

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind not in ("text", "refusal"):
            return b""
        field = "content" if out.kind == "text" else "refusal"
        return self._chunk(out.choice, {}, logprobs={field: ev.logprobs})

    def _on_part_done(self, ev: PartDone) -> bytes:
        out = self._get(ev)
        if out is None:
            return b""
        value = ev.value or out.start
        if value is None:
            return b""
        if out.kind == "drop":
            drop_part(self.drops, value, source=self._source)
        elif out.kind == "reasoning" and isinstance(value, ReasoningPart):
            drop_reasoning(self.drops, value, out.field, self._source)
        return b""


def _call_delta(out: _Out) -> dict[str, Any]:
    """The delta of a tool call's streamed arguments, ``HOLE[0]`` where they go."""
    if out.field == LEGACY:
        return {LEGACY: {"arguments": HOLE[0]}}
    call: dict[str, Any] = {"index": out.tool}
    if out.field == "custom":
        call["custom"] = {"input": HOLE[0]}
    else:
        call["function"] = {"arguments": HOLE[0]}
    return {"tool_calls": [call]}
