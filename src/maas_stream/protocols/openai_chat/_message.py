"""Whole Chat assistant messages ↔ canonical parts, built from the wire mapping in ``_map``.

:class:`ChoiceWriter` collects the canonical parts of one choice into one assistant message: the
``message`` of a ``chat.completion`` choice (``_body``) or an assistant message of a request's
history (``_history``). :func:`message_parts` reads a response message back into parts
(``_body.decode_response``). The stream encoder writes the same wire objects as deltas with the
same ``_map`` functions.

It must not hold stream state or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..._model import (
    AudioPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
)
from .._replay import replayable
from ._map import (
    LEGACY,
    PROTOCOL,
    ReasoningMode,
    annotation_to_wire,
    audio_from,
    audio_to_wire,
    call_from,
    call_to_wire,
    citation_from_annotation,
    drop_part,
    drop_reasoning,
    legacy_from,
    legacy_to_wire,
    reasoning_field,
    reasoning_from,
    reasoning_to_wire,
)

if TYPE_CHECKING:
    from ..._drops import DropLog
    from ..._model import Part
    from ._wire import Delta, Logprobs

__all__ = ["ChoiceWriter", "message_parts"]


class ChoiceWriter:
    """The canonical parts of one choice → one Chat assistant message.

    Args:
        drops: Where what Chat cannot carry is reported.
        source: The protocol the parts came from (reasoning goes back to its own field, and the
            legacy ``function_call`` channel is used, only for a Chat source).
        reasoning: Where reasoning goes (see :data:`~._map.ReasoningMode`). For a request's
            history too ``auto``: OpenAI-compatible servers (DeepSeek-style
            ``reasoning_content``) require their reasoning back on tool-call turns, so reasoning
            a Chat source made goes back to its own field (and any other is dropped).
        request: Write a request's assistant message (audio by id, no annotations or logprobs,
            ``refusal`` only when there is one) instead of a response's.
        where: The location drops are reported at (``messages[3]``), if any.
    """

    __slots__ = (
        "_where",
        "annotations",
        "audio",
        "calls",
        "drops",
        "legacy",
        "logprobs",
        "mode",
        "reasoning",
        "refusal",
        "request",
        "source",
        "text",
    )

    def __init__(
        self,
        drops: DropLog,
        *,
        source: str | None,
        reasoning: ReasoningMode = "auto",
        request: bool = False,
        where: str | None = None,
    ) -> None:
        self.drops = drops
        self.source = source
        self.mode: ReasoningMode = reasoning
        self.request = request
        self._where = where
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.legacy: dict[str, Any] | None = None
        self.annotations: list[dict[str, Any]] = []
        self.reasoning: dict[str, list[Any]] = {}
        self.audio: dict[str, Any] | None = None
        self.logprobs: dict[str, list[Any]] = {}

    def add(self, part: Part) -> None:
        """Add one canonical part (or report it dropped)."""
        if isinstance(part, TextPart):
            self._text(part)
        elif isinstance(part, RefusalPart):
            self.refusal.append(part.text)
            if part.logprobs and not self.request:
                self.logprobs.setdefault("refusal", []).extend(part.logprobs)
        elif isinstance(part, ToolCallPart) and part.kind in ("function", "custom"):
            if self._is_legacy(part):
                self.legacy = legacy_to_wire(part)
            else:
                self.calls.append(call_to_wire(part))
        elif isinstance(part, AudioPart) and (part.id is not None or not self.request):
            self._audio(part)
        elif isinstance(part, ReasoningPart):
            self._reasoning(part)
        else:
            drop_part(self.drops, part, where=self._where, source=self.source)

    def _text(self, part: TextPart) -> None:
        self.text.append(part.text)
        if self.request:
            return  # annotations and logprobs are output metadata: a request has no place for them
        if part.logprobs:
            self.logprobs.setdefault("content", []).extend(part.logprobs)
        for citation in part.annotations or ():
            annotation = annotation_to_wire(citation)
            if annotation is None:
                what = f"citation of kind {citation.kind!r} (Chat annotations carry URL citations only)"
                self.drops.add("citation", what, where=self._where)
            else:
                self.annotations.append(annotation)

    def _audio(self, part: AudioPart) -> None:
        audio = self.audio
        if audio is None or self.request:
            self.audio = audio_to_wire(part, request=self.request)
            return
        # Several audio parts of one choice are one ``audio`` object, as a stream of them
        # aggregates: data and transcript append, id and expires_at are the last given.
        audio["id"] = part.id or audio["id"]
        audio["data"] += part.data or ""
        audio["transcript"] += part.transcript or ""
        audio["expires_at"] = part.expires_at or audio["expires_at"]

    def _is_legacy(self, part: ToolCallPart) -> bool:
        if part.kind != "function":
            return False
        if self.request:
            # A request's call without an id can only go through the id-less legacy channel.
            return part.item_id == LEGACY or (not part.id and not self.calls)
        return part.item_id == LEGACY and self.source == PROTOCOL

    def _reasoning(self, part: ReasoningPart) -> None:
        field = reasoning_field(part, self.source, self.mode)
        drop_reasoning(self.drops, part, field, self.source, where=self._where)
        if not field:
            return
        values = self.reasoning.setdefault(field, [])
        value = reasoning_to_wire(part, field, len(values), replayable(self.source, PROTOCOL))
        if value is not None:
            values.append(value)

    @property
    def legacy_only(self) -> bool:
        """The choice's only call went through the legacy channel (finish ``function_call``)."""
        return self.legacy is not None and not self.calls

    def message(self) -> dict[str, Any]:
        """The assistant message of the parts added so far."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        refusal = "".join(self.refusal) or None
        if not self.request or refusal is not None:
            message["refusal"] = refusal
        if self.calls:
            message["tool_calls"] = self.calls
        if self.legacy is not None:
            message[LEGACY] = self.legacy
        if self.annotations:
            message["annotations"] = self.annotations
        if self.audio is not None:
            message["audio"] = self.audio
        for field, values in self.reasoning.items():
            if values:
                message[field] = values if field == "reasoning_details" else "".join(values)
        return message


def message_parts(message: Delta, logprobs: Logprobs | None = None) -> list[Part]:
    """A response's whole assistant message (and its choice's logprobs) → canonical parts.

    The order is the one a stream of the same message aggregates to: reasoning, text (with its
    annotations and logprobs), refusal, audio, tool calls, the legacy call.
    """
    parts: list[Part] = [*reasoning_from(message)]
    citations = [citation_from_annotation(a) for a in message.annotations or ()]
    text_logprobs = logprobs.content if logprobs is not None and logprobs.content else None
    if message.content or citations or text_logprobs:
        parts.append(
            TextPart(text=message.content or "", annotations=citations or None, logprobs=text_logprobs)
        )
    refusal_logprobs = logprobs.refusal if logprobs is not None and logprobs.refusal else None
    if message.refusal or refusal_logprobs:
        parts.append(RefusalPart(text=message.refusal or "", logprobs=refusal_logprobs))
    if message.audio is not None:
        parts.append(audio_from(message.audio))
    parts += [call_from(call) for call in message.tool_calls or ()]
    if message.function_call is not None:
        parts.append(legacy_from(message.function_call))
    return parts


def with_status(parts: list[Part], status: Any) -> list[Part]:
    """The parts with every tool call's ``status`` set (a body's calls are whole, or cut by length)."""
    return [msgspec.structs.replace(p, status=status) if isinstance(p, ToolCallPart) else p for p in parts]
