"""The content deltas applied to the fold's parts.

Text, arguments, reasoning, summaries, signatures, audio, citations, log-probabilities. The layer of the aggregator between its state (``_fold``) and its lifecycle handlers
(``_lifecycle``). Each handler returns the part it changed (``None`` when nothing changed),
for the emitter (``_emit``).

Rules enforced here (and only here): only deltas of the same call or block merge; an empty
delta is a no-op; signatures are set, never appended; thinking is never merged across parts.

It must not know any wire format, and must not build canonical events (the emitter does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._accumulate import add_fragment, add_text, empty_refusal, empty_text
from ._fold import Fold
from ._holders import find_keyed
from ._model import AudioPart, ReasoningPart

if TYPE_CHECKING:
    from ._accumulate import PartState
    from .events import (
        AnnotationAdded,
        ArgumentsDelta,
        AudioDelta,
        Event,
        LogprobsDelta,
        ReasoningDelta,
        RefusalDelta,
        SignatureDelta,
        SummaryDelta,
        TextDelta,
    )

__all__ = ["Deltas"]


class Deltas(Fold):
    """The content-delta handlers (slotted: no state of their own)."""

    __slots__ = ()

    def _on_text(self, ev: TextDelta, out: list[Event]) -> PartState | None:
        if not ev.text:
            return None
        msg = find_keyed(self._messages, self._keyed, ev.message)
        part = find_keyed(msg.parts, msg.by_key, ev.part) if msg is not None else None
        if part is None:
            part = self._part(ev.message, ev.part, empty_text, out)
        buf = part.text
        if buf is None:
            part.text = [ev.text]  # (``add_text``, inlined: one call per text delta)
        else:
            add_fragment(buf, ev.text)
        return part

    def _on_args(self, ev: ArgumentsDelta, out: list[Event]) -> PartState | None:
        if not ev.delta:
            return None
        msg = find_keyed(self._messages, self._keyed, ev.message)
        part = find_keyed(msg.parts, msg.by_key, ev.part) if msg is not None else None
        if part is None:
            part = self._part(ev.message, ev.part, self._empty_call, out)
        if part.args is None:
            part.args = [ev.delta]  # a whole call (``_whole_parts``) or no call: made on first use
        else:
            add_fragment(part.args, ev.delta)
        return part

    def _on_reasoning(self, ev: ReasoningDelta, out: list[Event]) -> PartState | None:
        if not ev.text:
            return None
        part = self._part(ev.message, ev.part, ReasoningPart, out)
        add_text(part, ev.text)
        return part

    def _on_refusal(self, ev: RefusalDelta, out: list[Event]) -> PartState | None:
        if not ev.text:
            return None
        part = self._part(ev.message, ev.part, empty_refusal, out)
        add_text(part, ev.text)
        return part

    def _on_summary(self, ev: SummaryDelta, out: list[Event]) -> PartState | None:
        part = self._part(ev.message, ev.part, ReasoningPart, out)
        summary = part.summary
        if summary is None:
            base = part.base
            existing = base.summary if isinstance(base, ReasoningPart) and base.summary else []
            summary = part.summary = {i: [s] for i, s in enumerate(existing)}
        # Keyed by the provider's index, ordered by it when built: an index names an entry,
        # so a large one costs no more memory than a small one.
        entry = summary.get(ev.index)
        if entry is None:
            entry = summary[ev.index] = []
        if ev.text:
            add_fragment(entry, ev.text)
        return part

    def _on_signature(self, ev: SignatureDelta, out: list[Event]) -> PartState | None:
        part = self._part(ev.message, ev.part, ReasoningPart, out)
        if "signature" not in type(part.base).__struct_fields__:
            self.warn(f"a signature for a {part.base.__struct_config__.tag} part, which has none; dropped")
            return None
        part.set("signature", ev.signature)
        return part

    def _on_audio(self, ev: AudioDelta, out: list[Event]) -> PartState | None:
        part = self._part(ev.message, ev.part, AudioPart, out)
        if ev.data:
            if part.audio_data is None:
                part.audio_data = []
            part.audio_data.append(ev.data)
        if ev.transcript:
            if part.audio_transcript is None:
                part.audio_transcript = []
            add_fragment(part.audio_transcript, ev.transcript)
        if ev.id is not None:
            part.set("id", ev.id)
        if ev.expires_at is not None:
            part.set("expires_at", ev.expires_at)
        return part

    def _on_annotation(self, ev: AnnotationAdded, out: list[Event]) -> PartState | None:
        part = self._part(ev.message, ev.part, empty_text, out)
        if part.annotations is None:
            part.annotations = []
        part.annotations.append(ev.citation)
        return part

    def _on_logprobs(self, ev: LogprobsDelta, out: list[Event]) -> PartState | None:
        if not ev.logprobs:
            return None
        part = self._part(ev.message, ev.part, empty_text, out)
        if part.logprobs is None:
            part.logprobs = []
        part.logprobs.extend(ev.logprobs)
        return part
