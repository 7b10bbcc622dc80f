"""Anthropic Messages stream encoder: canonical events → ``message_start`` … ``message_stop`` SSE.

Every assistant message of the source becomes blocks of ONE Anthropic message (a Responses
source's items, say). Anthropic blocks are strictly sequential, so this encoder keeps one block
open at a time: a text or (foreign) thinking block is closed as soon as another part starts (more
text later opens a new block), while a tool call is held open and any part that starts meanwhile
(interleaved parallel calls) waits, its deltas buffered, until the open call closes. Everything
else is written as soon as its input event arrives; ``message_delta`` and ``message_stop`` wait for
the end of the response (usage and the stop reason are known only then).

What Anthropic cannot carry is dropped and listed in :attr:`StreamEncoder.lossy`, never turned
into text: reasoning from another provider keeps its text in a thinking block but loses its
signature or encrypted payload; custom and foreign server-side tool calls, tool results from
other protocols, images, audio, files, code parts, logprobs, foreign citations and unknown
parts of other protocols are dropped. From an Anthropic source everything passes, unknown blocks,
deltas and events included (raw), so a re-decode gives the same canonical response.
"""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar, Final

import msgspec

from ..._model import (
    FinishReason,
    ReasoningPart,
    RefusalPart,
    StreamError,
    TextPart,
    ToolCallPart,
    ToolResultPart,
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
from ._blocks import FINISH_REASONS

__all__ = ["StreamEncoder"]

from .._names import ANTHROPIC as PROTOCOL

_STOP: Final[dict[FinishReason, str]] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "pause": "pause_turn",
    "refusal": "refusal",
    "content_filter": "refusal",
    "error": "end_turn",
    "other": "end_turn",
}

_json = msgspec.json.Encoder()

_DELTA_HEAD: Final = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_TEXT: Final = b',"delta":{"type":"text_delta","text":'
_ARGS: Final = b',"delta":{"type":"input_json_delta","partial_json":'
_THINK: Final = b',"delta":{"type":"thinking_delta","thinking":'
_TAIL: Final = b"}}\n\n"

_SOFT: Final = frozenset({"text", "thinking"})


def _frame(name: str, body: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"


class _Block:
    """One output content block (or a part that waits to become one)."""

    __slots__ = ("index", "kind", "lazy", "pending", "raw", "sent", "signed", "soft", "start", "stopped")

    def __init__(self, kind: str, start: dict[str, Any], *, lazy: bool = False, soft: bool = False) -> None:
        self.kind = kind
        self.start = start
        self.lazy = lazy
        """Open only when content arrives (foreign reasoning: an empty one is never written)."""
        self.soft = soft
        """May be closed early when another part starts; more content then opens a new block."""
        self.index = -1
        self.pending: list[tuple[str, Any]] = []
        self.sent: list[str] = []
        self.signed = False
        self.stopped = False
        self.raw: Any = None


_DROP: Final = _Block("drop", {})


class StreamEncoder(EventEncoder):
    """Encode canonical events as an Anthropic Messages SSE stream.

    The output is accepted by the anthropic SDK's ``client.messages.stream()``: it always starts
    with ``message_start`` and, when the source ended normally, ends with ``message_delta``
    (stop reason and usage, zeros when the source reported none) and ``message_stop``. A source
    that was cut stays cut (no ``message_stop`` is invented, an unfinished tool call is not
    closed); an in-band error is written as ``event: error`` and ends the output.

    Args:
        message_id: The ``message.id``; defaults to the source response's id.
        model: The ``message.model``; defaults to the source response's model.
    """

    _ROUTES: ClassVar[dict[type[Any], str]] = {AudioDelta: "_on_ignored"}
    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, message_id: str | None = None, model: str | None = None) -> None:
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._id = message_id
        self._model = model
        self._source = ""
        self._extra: dict[str, Any] = {}
        self._started = False
        self._done = False
        self._ended = False
        self._skip: set[Any] = set()
        self._blocks: dict[tuple[Any, Any], _Block] = {}
        self._active: _Block | None = None
        self._queue: deque[_Block] = deque()
        self._next = 0
        self._last = -1
        self._usage: Usage | None = None
        self._finish: FinishReason | None = None
        self._provider_finish: str | None = None
        self._client_tools = False
        self._early: list[bytes] = []

    # ------------------------------------------------------------------ API

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the frames it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        if self._done and not isinstance(event, UnknownEvent):
            return b""
        result: bytes = self._route(event)
        return result

    def finish(self) -> bytes:
        """End the output. A source that was cut stays cut: no ``message_stop`` is invented."""
        self._ended = True
        return b""

    # ------------------------------------------------------------------ helpers

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    @property
    def _same(self) -> bool:
        return self._source == PROTOCOL

    def _usage_body(self, final: bool) -> dict[str, Any]:
        usage = self._usage
        if usage is None:
            return {"input_tokens": 0, "output_tokens": 0}
        if self._same and isinstance(usage.raw, dict):
            body = dict(usage.raw)
            body.setdefault("output_tokens", usage.output_tokens or 0)
            return body
        body = {"input_tokens": usage.input_tokens or 0, "output_tokens": usage.output_tokens or 0}
        if usage.cache_write_tokens is not None:
            body["cache_creation_input_tokens"] = usage.cache_write_tokens
        if usage.cache_read_tokens is not None:
            body["cache_read_input_tokens"] = usage.cache_read_tokens
        return body

    def _head(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        message: dict[str, Any] = {
            "id": self._id or "msg_maas",
            "type": "message",
            "role": "assistant",
            "model": self._model or "unknown",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._usage_body(False),
        }
        message.update(self._extra)
        early, self._early = self._early, []
        return _frame("message_start", {"type": "message_start", "message": message}) + b"".join(early)

    # ------------------------------------------------------------------ block scheduling

    def _open(self, block: _Block) -> bytes:
        block.index = self._next
        self._next += 1
        self._last = block.index
        body = {"type": "content_block_start", "index": block.index, "content_block": block.start}
        return _frame("content_block_start", body)

    def _render(self, block: _Block, op: tuple[str, Any]) -> bytes:
        kind, payload = op
        if kind == "stop":
            self._active = None
            block.stopped = True
            if block.index < 0 or payload == "cut":
                return b""
            return _frame("content_block_stop", {"type": "content_block_stop", "index": block.index})
        head = self._open(block) if block.index < 0 else b""
        index = str(block.index).encode()
        if kind == "text":
            return head + _DELTA_HEAD + index + _TEXT + _json.encode(payload) + _TAIL
        if kind == "args":
            return head + _DELTA_HEAD + index + _ARGS + _json.encode(payload) + _TAIL
        if kind == "thinking":
            return head + _DELTA_HEAD + index + _THINK + _json.encode(payload) + _TAIL
        body = {"type": "content_block_delta", "index": block.index, "delta": payload}
        return head + _frame("content_block_delta", body)

    def _advance(self) -> bytes:
        out: list[bytes] = []
        while self._active is None and self._queue:
            block = self._queue.popleft()
            self._active = block
            if not block.lazy:
                out.append(self._open(block))
            ops, block.pending = block.pending, []
            out.extend(self._render(block, op) for op in ops)
        return b"".join(out)

    def _submit(self, block: _Block, kind: str, payload: Any = None) -> bytes:
        if block is not self._active:
            block.pending.append((kind, payload))
            return b""
        out = self._render(block, (kind, payload))
        if self._active is None:
            out += self._advance()
        return out

    def _add(self, key: tuple[Any, Any], block: _Block) -> bytes:
        self._blocks[key] = block
        out = b""
        active = self._active
        if active is not None and active.soft and not self._queue:
            out = self._render(active, ("stop", None))
        if self._active is None:
            self._active = block
            return out + (b"" if block.lazy else self._open(block))
        self._queue.append(block)
        return out

    def _block(self, ev: Any) -> _Block | None:
        """The block a delta goes to; a soft-closed block gets a continuation block."""
        block = self._blocks.get((ev.message, ev.part))
        if block is None or block is _DROP:
            return None
        return block

    def _content(self, ev: Any, block: _Block, kind: str, payload: Any) -> bytes:
        if block.stopped:
            if not block.soft:
                return b""
            again = _Block(block.kind, block.start, lazy=block.lazy, soft=True)
            out = self._add((ev.message, ev.part), again)
            return out + self._submit(again, kind, payload)
        return self._submit(block, kind, payload)

    def _flush(self) -> bytes:
        """Write out every held block as it stands (end of response or error)."""
        out: list[bytes] = []
        while self._queue:
            if self._active is not None:
                self._active = None
            out.append(self._advance())
        return b"".join(out)

    # ------------------------------------------------------------------ handlers: response

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        self._id = self._id or ev.id
        self._model = self._model or ev.model
        if self._same and isinstance(ev.provider_raw, dict):
            self._extra = dict(ev.provider_raw)
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        if ev.role not in ("assistant", "model"):
            self._skip.add(ev.message)
            self._lose(f"{ev.role} message in the output (an Anthropic response holds one assistant message)")
            return b""
        if ev.choice_index not in (None, 0):
            self._skip.add(ev.message)
            self._lose(f"choice {ev.choice_index} (Anthropic streams one message; choice 0 is kept)")
            return b""
        return self._head()

    def _on_message_done(self, ev: MessageDone) -> bytes:
        if ev.message not in self._skip and ev.finish_reason is not None:
            self._finish = ev.finish_reason
            self._provider_finish = ev.provider_finish_reason
        return b""

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _stop_reason(self, ev: ResponseDone) -> str:
        finish = ev.finish_reason or self._finish
        provider = ev.provider_finish_reason or self._provider_finish
        if self._same and provider in FINISH_REASONS:
            return provider
        if finish is None or (finish == "stop" and self._client_tools):
            return "tool_use" if self._client_tools else "end_turn"
        return _STOP[finish]

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        out = [self._head(), self._flush()]
        delta = {"stop_reason": self._stop_reason(ev), "stop_sequence": None}
        out.append(
            _frame(
                "message_delta", {"type": "message_delta", "delta": delta, "usage": self._usage_body(True)}
            )
        )
        out.append(_frame("message_stop", {"type": "message_stop"}))
        self._done = True
        return b"".join(out)

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        out = self._head() + self._flush()
        self._ended = True
        return out + _frame("error", _error_body(ev.error, self._same))

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        raw = ev.raw
        if not self._same or not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            self._lose(f"unknown {ev.provider_type!r} frame")
            return b""
        frame = _frame(raw["type"], raw)
        if not self._started:
            self._early.append(frame)  # the SDK wants message_start first
            return b""
        return frame

    def _on_ignored(self, ev: Event) -> bytes:
        return b""

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        self._lose("logprobs (Anthropic has none)")
        return b""

    # ------------------------------------------------------------------ handlers: parts

    def _on_part_start(self, ev: PartStart) -> bytes:
        key = (ev.message, ev.part)
        if ev.message in self._skip:
            self._blocks[key] = _DROP
            return b""
        head = self._head()
        value = ev.value
        if isinstance(value, TextPart | RefusalPart):
            return head + self._start_text(key, value)
        if isinstance(value, ReasoningPart):
            return head + self._start_reasoning(key, value)
        if isinstance(value, ToolCallPart):
            return head + self._start_call(key, value)
        if isinstance(value, ToolResultPart):
            return head + self._start_result(key, value)
        if isinstance(value, UnknownPart):
            return head + self._start_unknown(key, value)
        self._blocks[key] = _DROP
        self._lose(f"{value.__struct_config__.tag} part (no Anthropic output block for it)")
        return head

    def _start_text(self, key: tuple[Any, Any], value: TextPart | RefusalPart) -> bytes:
        if isinstance(value, RefusalPart):
            self._lose("refusal: sent as a text block (Anthropic has no refusal block)")
        block = _Block("text", {"type": "text", "text": ""}, soft=True)
        out = self._add(key, block)
        if value.text:
            block.sent.append(value.text)
            out += self._submit(block, "text", value.text)
        if isinstance(value, TextPart):
            if value.signature is not None:
                self._lose("text signature (foreign; Anthropic text carries none)")
            for citation in value.annotations or ():
                out += self._citation(block, citation)
        return out

    def _start_reasoning(self, key: tuple[Any, Any], value: ReasoningPart) -> bytes:
        if self._same:
            if value.redacted or value.data is not None:
                block = _Block("redacted", {"type": "redacted_thinking", "data": value.data or ""})
                return self._add(key, block)
            block = _Block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            block.raw = value.signature
            out = self._add(key, block)
            if value.text:
                block.sent.append(value.text)
                out += self._submit(block, "thinking", value.text)
            return out
        if value.signature is not None:
            self._lose(
                f"reasoning signature from {self._source or 'another protocol'} (not valid for Anthropic)"
            )
        if value.data is not None or value.encrypted_content is not None:
            self._lose(
                f"encrypted reasoning from {self._source or 'another protocol'} (not valid for Anthropic)"
            )
        block = _Block(
            "thinking", {"type": "thinking", "thinking": "", "signature": ""}, lazy=True, soft=True
        )
        out = self._add(key, block)
        text = value.text or "".join(value.summary or ())
        if text:
            block.sent.append(text)
            out += self._submit(block, "thinking", text)
        return out

    def _start_call(self, key: tuple[Any, Any], value: ToolCallPart) -> bytes:
        if value.signature is not None:
            self._lose(f"tool call {value.id}: signature (foreign; Anthropic tool_use carries none)")
        start: dict[str, Any]
        if value.kind == "function":
            start = {"type": "tool_use", "id": value.id, "name": value.name, "input": {}}
            self._client_tools = True
        elif value.kind == "mcp":
            start = {"type": "mcp_tool_use", "id": value.id, "name": value.name, "input": {}}
            if value.server_name is not None:
                start["server_name"] = value.server_name
        elif value.kind == "server" and self._same:
            start = {"type": "server_tool_use", "id": value.id, "name": value.name, "input": {}}
        else:
            self._blocks[key] = _DROP
            self._lose(f"{value.kind} tool call {value.name!r} ({value.id}): no Anthropic equivalent")
            return b""
        block = _Block("tool", start)
        block.raw = value.arguments
        return self._add(key, block)

    def _start_result(self, key: tuple[Any, Any], value: ToolResultPart) -> bytes:
        content = value.content
        first = content[0] if isinstance(content, list) and len(content) == 1 else None
        if self._same and isinstance(first, UnknownPart) and _is_block(first.raw, first.provider_type):
            return self._add(key, _Block("raw", first.raw))
        if not self._same:
            self._blocks[key] = _DROP
            self._lose(f"tool result {value.tool_call_id} from {self._source or 'another protocol'}")
            return b""
        block: dict[str, Any] = {"type": "mcp_tool_result", "tool_use_id": value.tool_call_id}
        if value.is_error is not None:
            block["is_error"] = value.is_error
        block["content"] = content if isinstance(content, str) else _result_blocks(content, self._lose)
        return self._add(key, _Block("raw", block))

    def _start_unknown(self, key: tuple[Any, Any], value: UnknownPart) -> bytes:
        raw = value.raw
        if not self._same or not isinstance(raw, dict):
            self._blocks[key] = _DROP
            self._lose(f"unknown {value.provider_type!r} part from {self._source or 'another protocol'}")
            return b""
        if raw.get("type") == "content_block_delta":
            # An unknown delta type: written on the block that is open (or was last written).
            self._blocks[key] = _DROP
            block = self._active
            index = block.index if block is not None and block.index >= 0 else max(self._last, 0)
            body = {**raw, "index": index}
            return _frame("content_block_delta", body)
        block = _Block("raw", raw)
        block.raw = raw
        return self._add(key, block)

    # ------------------------------------------------------------------ handlers: deltas

    def _on_text(self, ev: TextDelta) -> bytes:
        block = self._block(ev)
        if block is None or block.kind != "text":
            return b""
        block.sent.append(ev.text)
        return self._content(ev, block, "text", ev.text)

    def _on_refusal(self, ev: RefusalDelta) -> bytes:
        block = self._block(ev)
        if block is None or block.kind != "text":
            return b""
        block.sent.append(ev.text)
        return self._content(ev, block, "text", ev.text)

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        block = self._block(ev)
        if block is None or block.kind != "thinking":
            return b""
        block.sent.append(ev.text)
        return self._content(ev, block, "thinking", ev.text)

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        block = self._block(ev)
        if block is None or block.kind != "thinking" or not ev.text:
            return b""
        block.sent.append(ev.text)
        return self._content(ev, block, "thinking", ev.text)

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        block = self._block(ev)
        if block is None:
            return b""
        if not self._same or block.kind != "thinking":
            self._lose(f"signature from {self._source or 'another protocol'} (not valid for Anthropic)")
            return b""
        block.signed = True
        delta = {"type": "signature_delta", "signature": ev.signature}
        return self._content(ev, block, "delta", delta)

    def _on_arguments(self, ev: ArgumentsDelta) -> bytes:
        block = self._block(ev)
        if block is None or block.kind != "tool":
            return b""
        block.sent.append(ev.delta)
        return self._submit(block, "args", ev.delta)

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        block = self._block(ev)
        if block is None or block.kind != "text":
            return b""
        return self._citation(block, ev.citation, ev)

    def _citation(self, block: _Block, citation: Any, ev: Any = None) -> bytes:
        if not self._same or not isinstance(citation.raw, dict):
            self._lose(f"citation of kind {citation.kind!r} from {self._source or 'another protocol'}")
            return b""
        delta = {"type": "citations_delta", "citation": citation.raw}
        if ev is not None:
            return self._content(ev, block, "delta", delta)
        return self._submit(block, "delta", delta)

    def _on_part_done(self, ev: PartDone) -> bytes:
        block = self._block(ev)
        if block is None or block.stopped:
            return b""
        value = ev.value
        out = b""
        if isinstance(value, TextPart | RefusalPart) and block.kind == "text":
            out = self._rest(block, value.text, "text")
        elif isinstance(value, ReasoningPart) and block.kind == "thinking":
            out = self._rest(block, value.text or "", "thinking")
            signature = value.signature or block.raw
            if self._same and signature and not block.signed:
                block.signed = True
                out += self._submit(block, "delta", {"type": "signature_delta", "signature": signature})
        elif isinstance(value, ToolCallPart) and block.kind == "tool":
            sent = "".join(block.sent)
            if not (not sent and value.arguments in ("{}", "")):
                out = self._rest(block, value.arguments, "args")
            if value.status == "incomplete":
                return out + self._submit(block, "stop", "cut")
        elif isinstance(value, UnknownPart) and block.kind == "raw" and value.raw != block.raw:
            out = self._raw_update(block, value.raw)
        return out + self._submit(block, "stop")

    def _rest(self, block: _Block, final: str, kind: str) -> bytes:
        sent = "".join(block.sent)
        if final == sent:
            return b""
        if final.startswith(sent):
            rest = final[len(sent) :]
            block.sent.append(rest)
            return self._submit(block, kind, rest)
        self._lose(f"{kind}: the final value differs from the streamed deltas; the deltas are kept")
        return b""

    def _raw_update(self, block: _Block, raw: Any) -> bytes:
        if isinstance(raw, dict) and raw.get("type") == "compaction":
            delta = {
                "type": "compaction_delta",
                "content": raw.get("content"),
                "encrypted_content": raw.get("encrypted_content"),
            }
            return self._submit(block, "delta", delta)
        self._lose(f"final value of a {block.start.get('type')!r} block (its start was already written)")
        return b""


def _is_block(raw: Any, kind: str) -> bool:
    return isinstance(raw, dict) and raw.get("type") == kind


def _result_blocks(parts: list[Any], lose: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, UnknownPart) and isinstance(part.raw, dict):
            blocks.append(part.raw)
        else:
            lose(f"{part.__struct_config__.tag} part in an MCP tool result")
    return blocks


def _error_body(error: StreamError, same: bool) -> dict[str, Any]:
    raw = error.raw
    if same and isinstance(raw, dict) and isinstance(raw.get("error"), dict):
        return raw
    return {"type": "error", "error": {"type": error.type, "message": error.message or error.type}}
