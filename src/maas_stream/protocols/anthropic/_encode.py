"""Anthropic Messages stream encoder: canonical events → ``message_start`` … ``message_stop`` SSE.

Every assistant message of the source becomes blocks of ONE Anthropic message (a Responses
source's items, say). What each part becomes is the mapping's decision (``_blocks``: the same
:class:`~._writer.BlockWriter` the body encoder and the history writer use, given a part's start
value, which carries no content); this module turns the content deltas into block deltas and
keeps blocks sequential through ``_sequence``. Everything is written as soon as its input event
arrives, except a part held behind an open tool call, and ``message_delta`` /
``message_stop``, which wait for the end (usage and the stop reason are known only then).

Content arrives only as deltas (the aggregator sends a ``.done``-only remainder as a delta before
``PartDone``), so nothing here compares final values with what was sent. What Anthropic cannot
carry is dropped and recorded in :attr:`StreamEncoder.drops`, never turned into text. From an
Anthropic source everything passes, unknown blocks, deltas and events included (raw), so a
re-decode gives the same canonical response. It must not do IO.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ... import events
from ..._drops import DropLog
from ..._model import FinishReason, ToolCallPart, UnknownPart, Usage
from .._base import EventEncoder
from .._names import ANTHROPIC as PROTOCOL
from ._blocks import (
    error_body,
    keep_message,
    message_object,
    stop_reason_of,
    usage_body,
)
from ._sequence import DROPPED, Block, Sequencer, frame
from ._writer import BlockWriter

__all__ = ["StreamEncoder"]

_CALLS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


class StreamEncoder(EventEncoder):
    """Encode canonical events as an Anthropic Messages SSE stream.

    The output is accepted by the anthropic SDK's ``client.messages.stream()``: it always starts
    with ``message_start`` and, when the source ended normally, ends with ``message_delta``
    (stop reason and usage, zeros when the source reported none) and ``message_stop``. A source
    that was cut stays cut: no ``message_stop`` is invented and an unfinished tool call is not
    closed, but a ``message_delta`` still tells what is known of the end (usage, a stop reason
    the source gave). An in-band error is written as ``event: error`` and ends the output.

    Args:
        message_id: The ``message.id``; defaults to the source response's id.
        model: The ``message.model``; defaults to the source response's model.
    """

    _ROUTES: ClassVar[dict[type[Any], str]] = {events.AudioDelta: "_on_ignored"}
    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, message_id: str | None = None, model: str | None = None) -> None:
        self.drops = DropLog(PROTOCOL)
        """What the target protocol could not carry and was dropped."""
        self._writer = BlockWriter(None, self.drops)
        self._id = message_id
        self._model = model
        self._extra: Any = None
        self._started = False
        self._done = False
        self._ended = False
        self._skip: set[Any] = set()
        self._blocks: dict[tuple[Any, Any], Block] = {}
        self._seq = Sequencer()
        self._usage: Usage | None = None
        self._usage_sent: dict[str, Any] | None = None
        self._finishes: dict[Any, tuple[FinishReason, str | None]] = {}

    # ------------------------------------------------------------------ API

    def encode(self, event: events.Event) -> bytes:
        """Encode one canonical event; return the frames it completes (maybe ``b""``)."""
        if self._ended or (self._done and not isinstance(event, events.UnknownEvent)):
            return b""  # after message_stop only a passed-through unknown frame may follow
        return self._TABLE[type(event)](self, event)  # (inlined _route: once per event)

    def finish(self) -> bytes:
        """End the output. A source that was cut stays cut: no ``message_stop`` is invented."""
        if self._ended:
            return b""
        self._ended = True
        if self._done or not self._started:
            return b""
        return self._seq.flush() + self._news()

    # ------------------------------------------------------------------ message level

    def _head(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        self._usage_sent = usage_body(self._usage, native=self._writer.native)
        message = message_object(
            id=self._id,
            model=self._model,
            content=[],
            stop_reason=None,
            usage=self._usage_sent,
            extra=self._extra,
        )
        return frame("message_start", {"type": "message_start", "message": message})

    def _finish(self) -> tuple[FinishReason | None, str | None]:
        """The finish reason of the first message that has one (as the aggregator chooses)."""
        if not self._finishes:
            return None, None
        return self._finishes[min(self._finishes)]

    def _message_delta(self, finish: FinishReason | None, provider: str | None, *, completed: bool) -> bytes:
        native = self._writer.native
        stop = stop_reason_of(finish, provider, native=native, completed=completed)
        delta = {"stop_reason": stop, "stop_sequence": None}
        body = {"type": "message_delta", "delta": delta, "usage": usage_body(self._usage, native=native)}
        return frame("message_delta", body)

    def _news(self) -> bytes:
        """A ``message_delta`` before an early end, if it has anything ``message_start`` had not."""
        finish, provider = self._finish()
        if finish is None and usage_body(self._usage, native=self._writer.native) == self._usage_sent:
            return b""
        return self._message_delta(finish, provider, completed=False)

    def _on_response_start(self, ev: events.ResponseStart) -> bytes:
        if ev.protocol != self._writer.origin:
            self.drops.source = ev.protocol
            self._writer = BlockWriter(ev.protocol, self.drops)
        self._id = self._id or ev.id
        self._model = self._model or ev.model
        if self._writer.native and isinstance(ev.provider_raw, dict) and not self._started:
            self._extra = ev.provider_raw
        return b""

    def _on_message_start(self, ev: events.MessageStart) -> bytes:
        if not keep_message(ev.role, ev.choice_index, self.drops, f"messages[{ev.message}]"):
            self._skip.add(ev.message)
            return b""
        return self._head()

    def _on_message_done(self, ev: events.MessageDone) -> bytes:
        if ev.finish_reason is not None and ev.message not in self._finishes:
            self._finishes[ev.message] = (ev.finish_reason, ev.provider_finish_reason)
        return b""

    def _on_usage(self, ev: events.UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: events.ResponseDone) -> bytes:
        finish: FinishReason | None
        if ev.finish_reason is not None:
            finish, provider = ev.finish_reason, ev.provider_finish_reason
        else:
            finish, provider = self._finish()
        completed = ev.status in (None, "completed")
        out = self._head() + self._seq.flush() + self._message_delta(finish, provider, completed=completed)
        self._done = True
        return out + frame("message_stop", {"type": "message_stop"})

    def _on_error(self, ev: events.StreamErrorEvent) -> bytes:
        out = self._head() + self._seq.flush() + self._news()
        self._ended = True
        return out + frame("error", error_body(ev.error, native=self._writer.native))

    def _on_unknown(self, ev: events.UnknownEvent) -> bytes:
        raw = ev.raw
        if not self._writer.native or not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            self._writer.drop_frame(ev.provider_type, session=ev.passthrough)
            return b""
        return self._head() + frame(raw["type"], raw)  # the SDK wants message_start first

    def _on_ignored(self, ev: events.Event) -> bytes:
        return b""

    def _on_logprobs(self, ev: events.LogprobsDelta) -> bytes:
        self._writer.drop_logprobs()
        return b""

    # ------------------------------------------------------------------ parts

    def _on_part_start(self, ev: events.PartStart) -> bytes:
        key = (ev.message, ev.part)
        if ev.message in self._skip:
            self._blocks[key] = DROPPED
            return b""
        head = self._head()
        value = ev.value
        writer = self._writer
        if isinstance(value, UnknownPart) and writer.native and _is_delta(value.raw):
            # An unknown delta type: written on the block that is open (or was last written).
            self._blocks[key] = DROPPED
            return head + frame("content_block_delta", {**value.raw, "index": self._seq.current})
        start = writer.block(value, start=True)
        if start is None:
            self._blocks[key] = DROPPED
            return head
        block = self._new_block(start)
        self._blocks[key] = block
        return head + self._seq.add(block)

    def _new_block(self, start: dict[str, Any]) -> Block:
        kind = start["type"]
        if kind == "text":
            return Block("text", start, soft=True)
        if kind == "thinking":
            if self._writer.replay:
                block = Block("thinking", start)
                block.signature = start["signature"] or None
                return block
            # Reasoning from elsewhere: unsigned, written only once it has text.
            return Block("thinking", start, lazy=not start["thinking"], soft=True)
        if kind in _CALLS:
            return Block("tool", start)
        block = Block("raw", start)
        block.raw = start
        return block

    def _block(self, ev: Any, kind: str) -> Block | None:
        block = self._blocks.get((ev.message, ev.part))
        if block is None or block.kind != kind:
            return None
        return block

    def _content(self, ev: Any, block: Block, kind: str, payload: Any) -> bytes:
        if block.stopped:
            if not block.soft:
                return b""
            # A soft block closed early for another part: the rest goes to a new block.
            block = block.again()
            self._blocks[(ev.message, ev.part)] = block
            return self._seq.add(block) + self._seq.submit(block, kind, payload)
        return self._seq.submit(block, kind, payload)

    def _on_text(self, ev: events.TextDelta) -> bytes:
        block = self._blocks.get((ev.message, ev.part))  # (inlined _block: the hot path)
        if block is None or block.kind != "text":
            return b""
        return self._content(ev, block, "text", ev.text)

    def _on_refusal(self, ev: events.RefusalDelta) -> bytes:
        block = self._block(ev, "text")
        return b"" if block is None else self._content(ev, block, "text", ev.text)

    def _on_reasoning(self, ev: events.ReasoningDelta) -> bytes:
        block = self._blocks.get((ev.message, ev.part))  # (inlined _block: the hot path)
        if block is None or block.kind != "thinking":
            return b""
        return self._content(ev, block, "thinking", ev.text)

    def _on_summary(self, ev: events.SummaryDelta) -> bytes:
        block = self._block(ev, "thinking")
        if block is None or not ev.text:
            return b""
        return self._content(ev, block, "thinking", ev.text)

    def _on_signature(self, ev: events.SignatureDelta) -> bytes:
        # A signature that may not be replayed here is recorded once, from the part's end.
        block = self._block(ev, "thinking")
        if block is None or not self._writer.replay:
            return b""
        block.signature = ev.signature
        return self._content(ev, block, "delta", {"type": "signature_delta", "signature": ev.signature})

    def _on_arguments(self, ev: events.ArgumentsDelta) -> bytes:
        block = self._block(ev, "tool")
        return b"" if block is None else self._content(ev, block, "args", ev.delta)

    def _on_annotation(self, ev: events.AnnotationAdded) -> bytes:
        block = self._block(ev, "text")
        if block is None:
            return b""
        citation = self._writer.citation(ev.citation)
        if citation is None:
            return b""
        return self._content(ev, block, "delta", {"type": "citations_delta", "citation": citation})

    def _on_part_done(self, ev: events.PartDone) -> bytes:
        block = self._blocks.get((ev.message, ev.part))
        if block is None or block is DROPPED:
            return b""
        value = ev.value
        if value is not None:
            self._writer.drop_state(value)
        if block.stopped:
            return b""
        seq = self._seq
        out = b""
        if block.kind == "thinking" and self._writer.replay:
            signature = getattr(value, "signature", None)
            if signature and signature != block.signature:
                block.signature = signature
                out = seq.submit(block, "delta", {"type": "signature_delta", "signature": signature})
        elif block.kind == "tool" and isinstance(value, ToolCallPart) and value.status == "incomplete":
            return seq.submit(block, "stop", "cut")  # a cut call is never closed
        elif block.kind == "raw" and isinstance(value, UnknownPart) and value.raw != block.raw:
            out = self._raw_update(block, value.raw)
        return out + seq.submit(block, "stop")

    def _raw_update(self, block: Block, raw: Any) -> bytes:
        if isinstance(raw, dict) and raw.get("type") == "compaction":
            delta = {
                "type": "compaction_delta",
                "content": raw.get("content"),
                "encrypted_content": raw.get("encrypted_content"),
            }
            return self._seq.submit(block, "delta", delta)
        what = f"final value of a {block.start.get('type')!r} block (its start was already written)"
        self.drops.add("field", what)
        return b""


def _is_delta(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("type") == "content_block_delta"
