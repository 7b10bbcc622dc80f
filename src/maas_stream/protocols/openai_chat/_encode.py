"""OpenAI Chat Completions stream encoder: canonical events → ``chat.completion.chunk`` SSE.

Every canonical message maps to a choice: its ``choice_index`` when it has one (a Chat or
Gemini source with several choices), else choice 0 (a Responses or Anthropic source, whose
items or blocks all belong to one assistant turn). Each input event yields its chunk at once;
only the finish chunks, the usage chunk and ``[DONE]`` wait for the end of the response.

This module owns the response and message lifecycle: finish reasons (the canonical reason,
already normalized by the aggregator, mapped by one table), the usage chunk (the same usage
object as the response body's), errors and pass-through extension chunks. The part writers are
in ``_parts``. What Chat cannot carry is dropped and reported in :attr:`StreamEncoder.lossy`
as records, never turned into text: reasoning (unless the source was Chat, or a compatible
reasoning field is asked for), signatures and encrypted reasoning of other protocols,
server-side and MCP tool calls, citations without a URL, media, code and unknown parts, input
messages and further responses of a session. It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from ..._holders import EMPTY, writable
from ...events import Event, ResponseStart
from .._base import EventEncoder
from ._map import (
    PROTOCOL,
    ReasoningMode,
    drop_frame,
    error_to_wire,
    finish_to_wire,
    header_from,
    usage_to_wire,
)
from ._parts import PartWriter

if TYPE_CHECKING:
    from ..._model import FinishReason, Usage
    from ...events import (
        MessageDone,
        MessageStart,
        ResponseDone,
        StreamErrorEvent,
        UnknownEvent,
        UsageUpdate,
    )

__all__ = ["ReasoningMode", "StreamEncoder"]

_json = msgspec.json.Encoder()


class StreamEncoder(PartWriter, EventEncoder):
    """Encode canonical events as an OpenAI Chat Completions SSE stream.

    Args:
        include_usage: Send the usage-only chunk before ``[DONE]`` when usage is known (as
            ``stream_options.include_usage`` does).
        reasoning: Where reasoning goes. ``"auto"`` puts it back in the compatible field it
            came from when the source is Chat, and drops it (reported) otherwise; ``"drop"``
            always drops it; the other values send it in that field, for clients of
            OpenAI-compatible servers that read it (signatures and encrypted reasoning of
            another protocol are still dropped: they replay only to their own).
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
        super().__init__(reasoning)
        self.include_usage = include_usage
        self._id = completion_id
        self._fixed_id = completion_id is not None
        self._fixed_model = model is not None
        self._model = model
        self._finish: dict[int, FinishReason] = EMPTY  # (EMPTY until the first entry: see _parts)
        self._finished: dict[int, None] = EMPTY
        self._explicit: dict[int, None] = EMPTY
        self._usage: Usage | None = None
        self._ended = False

    # ------------------------------------------------------------------ API

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the chunks it completes (maybe ``b""``)."""
        if self._ended:
            if type(event) is ResponseStart:
                self.drops.add("message", "a further response (Chat carries one response per stream)")
            return b""
        result: bytes = self._TABLE[type(event)](self, event)  # (inlined _route)
        return result

    def finish(self) -> bytes:
        """End the output.

        A source that was cut stays cut: no finish reason or ``[DONE]`` is invented, but the
        usage known so far is sent, as the response body reports it.
        """
        if self._ended:
            return b""
        self._ended = True
        frames = [self._flush_annotations(choice) for choice in list(self._held)]
        if self.include_usage and self._usage is not None:
            frames.append(self._usage_chunk(self._usage))
        return b"".join(frames)

    # ------------------------------------------------------------------ response and messages

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        self.drops.source = ev.protocol
        if not self._fixed_id:
            self._id = ev.id or self._id
        if not self._fixed_model:
            self._model = ev.model or self._model
        if ev.protocol == PROTOCOL and ev.provider_raw is not None:
            self._header = header_from(ev.provider_raw)
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        if ev.role not in ("assistant", "model"):
            self.drops.add("message", f"{ev.role} message in the output")
            self._skipped = writable(self._skipped)
            self._skipped[ev.message] = None
            return b""
        choice = ev.choice_index if ev.choice_index is not None else 0
        if ev.choice_index is not None:
            self._explicit = writable(self._explicit)
            self._explicit[choice] = None
        if choice and isinstance(ev.message, int):  # (choice 0 is the default: not stored)
            self._choices = writable(self._choices)
            self._choices[ev.message] = choice
        return self._announce(choice)

    def _on_message_done(self, ev: MessageDone) -> bytes:
        if ev.message in self._skipped:
            return b""
        choice = self._choice(ev.message)
        if ev.finish_reason is not None:
            self._finish = writable(self._finish)
            self._finish[choice] = ev.finish_reason
            if choice in self._explicit and choice not in self._finished:
                # A source with real choices (Chat, Gemini candidates): finish it now.
                return self._finish_chunk(choice, ev.finish_reason)
        return b""

    def _finish_chunk(self, choice: int, reason: FinishReason) -> bytes:
        head = self._flush_annotations(choice) if self._held else b""
        self._finished = writable(self._finished)
        self._finished[choice] = None
        legacy_only = choice in self._legacy and not self._tools.get(choice)
        wire = finish_to_wire(reason, legacy_only=legacy_only)
        return head + self._chunk(choice, {}, finish_reason=wire)

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        frames: list[bytes] = []
        for choice in sorted(self._announced) or [0]:
            if choice in self._finished:
                continue
            reason = self._finish.get(choice)
            if ev.finish_reason is not None and (reason is None or choice not in self._explicit):
                reason = ev.finish_reason
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
            "created": 0,
            "model": self._model or "unknown",
            **self._header,
            "choices": [],
            "usage": usage_to_wire(usage, self._source),
        }
        return b"data: " + _json.encode(body) + b"\n\n"

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        # The error chunk ends the output (the openai SDK raises on it), so it carries the
        # usage known so far, as OpenAI-compatible servers do.
        frames = b"".join([self._flush_annotations(choice) for choice in list(self._held)])
        self._ended = True
        body: dict[str, Any] = {"error": error_to_wire(ev.error)}
        if self._usage is not None:
            body["usage"] = usage_to_wire(self._usage, self._source)
        return frames + b"data: " + _json.encode(body) + b"\n\n"

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        if self._source == PROTOCOL and ev.message is None and isinstance(ev.raw, dict):
            return b"data: " + _json.encode(ev.raw) + b"\n\n"  # a Chat extension chunk, verbatim
        drop_frame(self.drops, ev.provider_type, session=ev.passthrough)
        return b""
