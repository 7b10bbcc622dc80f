"""OpenAI Responses stream encoder: canonical events → typed ``response.*`` SSE events.

The output follows the grammar the openai SDK's ``client.responses.stream()`` accumulates:
``sequence_number`` from 0; ``response.created`` and ``response.in_progress`` first; for each
output item ``output_item.added`` before its deltas, ``content_part.added`` before text, the
``.done`` events with full values, ``output_item.done``; and a terminal ``response.completed``
(or ``.incomplete`` / ``.failed``) carrying the whole response with its output and usage.

Mapping: a canonical message from a Responses source is one item (its type, id and extra fields
kept, so a same-protocol re-encode is lossless). A message from any other source is split: its
text and refusal parts form ``message`` items, and each function or custom tool call becomes its
own ``function_call`` / ``custom_tool_call`` item, in order. Each input event yields its frames
at once; nothing is held.

What Responses cannot carry is dropped and listed in :attr:`StreamEncoder.lossy`, never turned
into text: reasoning from other protocols (thinking text, signatures, redacted data: Responses
replays only its own ``encrypted_content``), server-side and MCP calls of other protocols,
images, files, code and unknown parts of other protocols.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec

from ..._model import (
    AudioPart,
    FinishReason,
    ReasoningPart,
    RefusalPart,
    StreamError,
    TextPart,
    ToolCallPart,
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
from ._items import REBUILT_TYPES, annotation_from_citation, call_item, reasoning_item, text_json

__all__ = ["StreamEncoder"]

from .._names import OPENAI_RESPONSES as PROTOCOL

_json = msgspec.json.Encoder()

_DELTA_EVENTS: Final[dict[str, tuple[str, str, str]]] = {
    # item type: (delta event, done event, done field)
    "function_call": (
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "arguments",
    ),
    "custom_tool_call": (
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "input",
    ),
    "mcp_call": ("response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "arguments"),
    "code_interpreter_call": (
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "code",
    ),
    "apply_patch_call": (
        "response.apply_patch_call_operation_diff.delta",
        "response.apply_patch_call_operation_diff.done",
        "diff",
    ),
}

_PROGRESS: Final[dict[str, tuple[str, str]]] = {
    "web_search_call": ("response.web_search_call.in_progress", "response.web_search_call.completed"),
    "file_search_call": ("response.file_search_call.in_progress", "response.file_search_call.completed"),
    "code_interpreter_call": (
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.completed",
    ),
    "image_generation_call": (
        "response.image_generation_call.in_progress",
        "response.image_generation_call.completed",
    ),
    "mcp_call": ("response.mcp_call.in_progress", "response.mcp_call.completed"),
    "mcp_list_tools": ("response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed"),
}

_INCOMPLETE_REASON: Final[dict[FinishReason, str]] = {
    "length": "max_output_tokens",
    "content_filter": "content_filter",
}


class _Item:
    """One output item being written."""

    __slots__ = ("body", "content", "done", "id", "index", "type", "whole")

    def __init__(self, index: int, type: str, id: str | None) -> None:
        self.index = index
        self.type = type
        self.id = id
        self.body: dict[str, Any] = {}
        self.content: list[dict[str, Any] | None] = []
        self.done = False
        self.whole = False
        """One canonical message is this whole item (a Responses source)."""


class _Out:
    """How one canonical part is written: into which item, as what."""

    __slots__ = (
        "annotations",
        "closed",
        "content",
        "item",
        "kind",
        "logprobs",
        "sent",
        "sent_annotations",
        "sent_logprobs",
        "summary",
        "text_open",
    )

    def __init__(self, kind: str, item: _Item | None, content: int = 0) -> None:
        self.kind = kind
        self.item = item
        self.content = content
        self.sent: list[str] = []
        self.logprobs: list[Any] = []
        self.annotations = 0
        self.summary: list[list[str]] = []
        self.text_open = False
        self.closed = False
        self.sent_annotations: list[Any] = []
        self.sent_logprobs: list[Any] = []


class StreamEncoder(EventEncoder):
    """Encode canonical events as an OpenAI Responses SSE stream.

    Args:
        response_id: The response ``id``; defaults to the source response's id.
        model: The response ``model``; defaults to the source response's model.
    """

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, response_id: str | None = None, model: str | None = None) -> None:
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._id = response_id
        self._model = model
        self._base: dict[str, Any] = {}
        self._source = ""
        self._seq = 0
        self._started = False
        self._ended = False
        self._items: list[_Item] = []
        self._whole: dict[int, _Item] = {}
        self._text_item: dict[int, _Item] = {}
        self._msg_meta: dict[int, MessageStart] = {}
        self._parts: dict[tuple[int, int], _Out] = {}
        self._usage: Usage | None = None
        self._synth = 0
        self._other_choices: set[int] = set()
        self._message_finish: FinishReason | None = None

    # ------------------------------------------------------------------ API

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the frames it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        if self._other_choices and getattr(event, "message", None) in self._other_choices:
            return b""  # a second choice / candidate: a response has one output list
        head = b"" if self._started or isinstance(event, ResponseStart) else self._start()
        result: bytes = self._route(event)
        return head + result if head else result

    def finish(self) -> bytes:
        """End the output. A source that was cut stays cut: no terminal event is invented."""
        self._ended = True
        return b""

    # ------------------------------------------------------------------ framing

    def _frame(self, kind: str, body: dict[str, Any]) -> bytes:
        body["type"] = kind
        body["sequence_number"] = self._seq
        self._seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"

    def _raw_frame(self, raw: dict[str, Any]) -> bytes:
        body = dict(raw)
        kind = str(body.get("type") or "unknown")
        body["sequence_number"] = self._seq
        self._seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    def _response(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self._id or "resp_maas",
            "object": "response",
            "created_at": 0,
            "model": self._model or "unknown",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            **self._base,
        }
        body["id"] = self._id or body["id"]
        body["model"] = self._model or body["model"]
        body["status"] = status
        body["output"] = output
        body["usage"] = None
        return body

    def _start(self) -> bytes:
        self._started = True
        created = self._response("in_progress", [])
        self._id = created["id"]  # the SDK rejects a response whose id changes mid-stream
        return self._frame("response.created", {"response": created}) + self._frame(
            "response.in_progress", {"response": self._response("in_progress", [])}
        )

    def _new_item(self, type: str, id: str | None, added: dict[str, Any]) -> tuple[_Item, bytes]:
        item = _Item(len(self._items), type, id)
        self._items.append(item)
        body = dict(added)
        body["type"] = type
        if id is not None:
            body["id"] = id
        item.body = body
        return item, self._frame("response.output_item.added", {"output_index": item.index, "item": body})

    def _synth_id(self, prefix: str) -> str:
        self._synth += 1
        return f"{prefix}_maas_{self._synth}"

    # ------------------------------------------------------------------ handlers: structure

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        self._id = self._id or ev.id
        self._model = self._model or ev.model
        if ev.protocol == PROTOCOL and isinstance(ev.provider_raw, dict):
            self._base = {k: v for k, v in ev.provider_raw.items() if k not in ("status", "output", "usage")}
        return self._start() if not self._started else b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        assert isinstance(ev.message, int)
        if ev.choice_index:
            self._other_choices.add(ev.message)
            self._lose(f"choice {ev.choice_index} (a Responses stream carries one choice)")
            return b""
        self._msg_meta[ev.message] = ev
        same = self._source == PROTOCOL and ev.type is not None
        if same and ev.type == "message":
            added: dict[str, Any] = {"status": "in_progress", "role": "assistant", "content": []}
            if ev.phase is not None:
                added["phase"] = ev.phase
            if isinstance(ev.provider_raw, dict):
                added = {**ev.provider_raw, **added}
            item, frame = self._new_item("message", ev.id or self._synth_id("msg"), added)
            self._text_item[ev.message] = item
            return frame
        if same and ev.type is not None:
            item = _Item(-1, ev.type, ev.id)
            self._whole[ev.message] = item
            if ev.type not in REBUILT_TYPES:
                # A hosted tool or an unknown item: its raw item is all there is; send it as is.
                raw = ev.provider_raw if isinstance(ev.provider_raw, dict) else {}
                return self._open_whole(item, raw)
            return b""
        if ev.role not in ("assistant", "model"):
            self._lose(f"{ev.role} message in the output")
        return b""

    def _open_whole(self, item: _Item, added: dict[str, Any]) -> bytes:
        new, frame = self._new_item(item.type, item.id, added)
        item.index = new.index
        item.body = new.body
        item.whole = True
        self._items[new.index] = item
        progress = _PROGRESS.get(item.type)
        if progress is not None and item.id is not None:
            frame += self._frame(progress[0], {"output_index": item.index, "item_id": item.id})
        return frame

    def _on_part_start(self, ev: PartStart) -> bytes:
        assert isinstance(ev.message, int)
        assert isinstance(ev.part, int)
        key = (ev.message, ev.part)
        value = ev.value
        whole = self._whole.get(ev.message)
        if whole is not None:
            return self._whole_part(key, whole, value)
        if isinstance(value, TextPart | RefusalPart):
            return self._text_part(key, ev.message, value)
        if isinstance(value, ToolCallPart):
            if value.kind in ("server", "mcp"):
                self._parts[key] = _Out("drop", None)
                self._lose(f"{value.kind} tool call {value.name!r} ({value.id}) of another protocol")
                return b""
            frames = self._close_text_item(ev.message)
            added = call_item(value, "in_progress")
            if value.kind == "custom":
                added["input"] = ""
            else:
                added["arguments"] = ""
            item, frame = self._new_item(added["type"], value.item_id or self._synth_id("fc"), added)
            self._parts[key] = out = _Out("call", item)
            out.sent = []
            # A start value (Anthropic's "{}") counts only if no delta follows: it is sent, if
            # still needed, when the call closes.
            return frames + frame
        if isinstance(value, AudioPart):
            self._parts[key] = _Out("audio", None)
            return self._audio(value.data, value.transcript)
        if isinstance(value, ReasoningPart):
            self._parts[key] = _Out("drop", None)
            self._lose("reasoning of another protocol (Responses replays only its own encrypted_content)")
            return b""
        self._parts[key] = _Out("drop", None)
        kind = value.provider_type if isinstance(value, UnknownPart) else value.__struct_config__.tag
        self._lose(f"{kind} part (no Responses output equivalent)")
        return b""

    def _whole_part(self, key: tuple[int, int], item: _Item, value: Any) -> bytes:
        frames = b""
        if isinstance(value, ToolCallPart) and item.type in ("function_call", "custom_tool_call"):
            if item.index < 0:
                meta = self._msg_meta.get(key[0])
                extras = meta.provider_raw if meta is not None else None
                added = call_item(value, "in_progress", extras)
                added["input" if item.type == "custom_tool_call" else "arguments"] = ""
                frames = self._open_whole(item, added)
            self._parts[key] = out = _Out("call", item)
            return frames + (self._args(out, value.arguments) if value.arguments else b"")
        if isinstance(value, ReasoningPart) and item.type == "reasoning":
            if item.index < 0:
                meta = self._msg_meta.get(key[0])
                extras = meta.provider_raw if meta is not None else None
                added = {**(extras if isinstance(extras, dict) else {}), "summary": []}
                if value.encrypted_content is not None:
                    added["encrypted_content"] = value.encrypted_content
                frames = self._open_whole(item, added)
            self._parts[key] = out = _Out("reasoning", item)
            for i, text in enumerate(value.summary or ()):
                frames += self._summary(out, i, text)
            if value.text:
                frames += self._reasoning_text(out, value.text)
            return frames
        if isinstance(value, ToolCallPart) and item.type in _DELTA_EVENTS:
            self._parts[key] = _Out("call", item)
            return b""
        if isinstance(value, ToolCallPart) and item.type == "shell_call":
            self._parts[key] = _Out("shell", item)
            return b""
        self._parts[key] = _Out("whole", item)  # carried by the item itself
        return b""

    def _text_part(self, key: tuple[int, int], message: int, value: TextPart | RefusalPart) -> bytes:
        frames = b""
        item = self._text_item.get(message)
        if item is None or item.done:
            meta = self._msg_meta.get(message)
            added: dict[str, Any] = {"status": "in_progress", "role": "assistant", "content": []}
            if meta is not None and meta.phase is not None:
                added["phase"] = meta.phase
            item, frames = self._new_item("message", self._synth_id("msg"), added)
            self._text_item[message] = item
        index = len(item.content)
        item.content.append(None)
        kind = "text" if isinstance(value, TextPart) else "refusal"
        self._parts[key] = out = _Out(kind, item, index)
        part = (
            {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            if kind == "text"
            else {"type": "refusal", "refusal": ""}
        )
        frames += self._frame(
            "response.content_part.added",
            {"item_id": item.id, "output_index": item.index, "content_index": index, "part": part},
        )
        if value.text:
            frames += self._text_delta(out, value.text)
        return frames

    def _close_text_item(self, message: int) -> bytes:
        item = self._text_item.get(message)
        if item is None or item.done:
            return b""
        frames = b""
        for out in self._parts.values():
            if out.item is item and not out.closed and out.kind in ("text", "refusal"):
                # Another protocol's message goes on after its text (a tool call): the text
                # part ends here, with what was sent, so the message item can end.
                text = "".join(out.sent)
                value: TextPart | RefusalPart = (
                    TextPart(
                        text=text,
                        annotations=out.sent_annotations or None,
                        logprobs=out.sent_logprobs or None,
                    )
                    if out.kind == "text"
                    else RefusalPart(text=text)
                )
                frames += self._text_done(out, value)
        meta = self._msg_meta.get(message)
        return frames + self._item_done(item, self._message_body(item, meta, "completed"))

    def _message_body(self, item: _Item, meta: MessageStart | None, status: str | None) -> dict[str, Any]:
        body = dict(item.body)
        body["status"] = status or "completed"
        body["content"] = [c for c in item.content if c is not None]
        if meta is not None and meta.phase is not None:
            body["phase"] = meta.phase
        return body

    def _item_done(self, item: _Item, body: dict[str, Any]) -> bytes:
        item.done = True
        item.body = body
        frames = b""
        progress = _PROGRESS.get(item.type)
        if progress is not None and item.id is not None and body.get("status") == "completed":
            frames = self._frame(progress[1], {"output_index": item.index, "item_id": item.id})
        return frames + self._frame("response.output_item.done", {"output_index": item.index, "item": body})

    # ------------------------------------------------------------------ handlers: deltas

    def _get(self, ev: Any) -> _Out | None:
        return self._parts.get((ev.message, ev.part))

    def _text_delta(self, out: _Out, text: str) -> bytes:
        item = out.item
        assert item is not None
        out.sent.append(text)
        logprobs = out.logprobs
        if logprobs:
            out.logprobs = []
            out.sent_logprobs.extend(logprobs)
        kind = "response.output_text.delta" if out.kind == "text" else "response.refusal.delta"
        body: dict[str, Any] = {
            "item_id": item.id,
            "output_index": item.index,
            "content_index": out.content,
            "delta": text,
        }
        if out.kind == "text":
            body["logprobs"] = logprobs
        return self._frame(kind, body)

    def _on_text(self, ev: TextDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "text":
            return b""
        return self._text_delta(out, ev.text)

    def _on_refusal(self, ev: RefusalDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "refusal":
            return b""
        return self._text_delta(out, ev.text)

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        out = self._get(ev)
        if out is not None and out.kind == "text":
            out.logprobs.extend(ev.logprobs)  # sent on the next text delta (Responses puts them there)
        return b""

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "text" or out.item is None:
            return b""
        annotation = annotation_from_citation(ev.citation)
        if annotation is None:
            self._lose(f"citation of kind {ev.citation.kind!r} (no Responses annotation for it)")
            return b""
        index = out.annotations
        out.annotations += 1
        out.sent_annotations.append(ev.citation)
        return self._frame(
            "response.output_text.annotation.added",
            {
                "item_id": out.item.id,
                "output_index": out.item.index,
                "content_index": out.content,
                "annotation_index": index,
                "annotation": annotation,
            },
        )

    def _summary(self, out: _Out, index: int, text: str) -> bytes:
        item = out.item
        assert item is not None
        frames = b""
        while len(out.summary) <= index:
            frames += self._close_summary(out)
            out.summary.append([])
            frames += self._frame(
                "response.reasoning_summary_part.added",
                {
                    "item_id": item.id,
                    "output_index": item.index,
                    "summary_index": len(out.summary) - 1,
                    "part": {"type": "summary_text", "text": ""},
                },
            )
        if text:
            out.summary[index].append(text)
            frames += self._frame(
                "response.reasoning_summary_text.delta",
                {"item_id": item.id, "output_index": item.index, "summary_index": index, "delta": text},
            )
        return frames

    def _close_summary(self, out: _Out) -> bytes:
        if not out.summary or out.summary[-1] is None:
            return b""
        item = out.item
        assert item is not None
        index = len(out.summary) - 1
        text = "".join(out.summary[index])
        common = {"item_id": item.id, "output_index": item.index, "summary_index": index}
        return self._frame("response.reasoning_summary_text.done", {**common, "text": text}) + self._frame(
            "response.reasoning_summary_part.done", {**common, "part": {"type": "summary_text", "text": text}}
        )

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning":
            return b""
        return self._summary(out, ev.index, ev.text)

    def _reasoning_text(self, out: _Out, text: str) -> bytes:
        item = out.item
        assert item is not None
        frames = b""
        common = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        if not out.text_open:
            out.text_open = True
            frames = self._frame(
                "response.content_part.added", {**common, "part": {"type": "reasoning_text", "text": ""}}
            )
        out.sent.append(text)
        return frames + self._frame("response.reasoning_text.delta", {**common, "delta": text})

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "reasoning" or not ev.text:
            return b""
        return self._reasoning_text(out, ev.text)

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        out = self._get(ev)
        if out is not None and out.kind != "drop":
            self._lose("signature (Responses has no field for it)")
        return b""

    def _args(self, out: _Out, delta: str) -> bytes:
        item = out.item
        assert item is not None
        out.sent.append(delta)
        if out.kind == "shell":
            return self._shell_delta(out, delta)
        kind = _DELTA_EVENTS[item.type][0]
        return self._frame(kind, {"item_id": item.id, "output_index": item.index, "delta": delta})

    def _shell_delta(self, out: _Out, delta: str) -> bytes:
        item = out.item
        assert item is not None
        frames = b""
        pieces = delta.split("\n")
        for n, piece in enumerate(pieces):
            if n > 0 or not out.text_open:
                index = out.annotations if not out.text_open else out.annotations + 1
                if out.text_open:
                    frames += self._frame(
                        "response.shell_call_command.done",
                        {"output_index": item.index, "command_index": out.annotations, "command": ""},
                    )
                out.annotations = index
                out.text_open = True
                frames += self._frame(
                    "response.shell_call_command.added",
                    {"output_index": item.index, "command_index": index, "command": ""},
                )
            if piece:
                frames += self._frame(
                    "response.shell_call_command.delta",
                    {"output_index": item.index, "command_index": out.annotations, "delta": piece},
                )
        return frames

    def _on_arguments(self, ev: ArgumentsDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind not in ("call", "shell"):
            return b""
        return self._args(out, ev.delta)

    def _audio(self, data: str | None, transcript: str | None) -> bytes:
        frames = b""
        if data:
            frames += self._frame("response.audio.delta", {"delta": data})
        if transcript:
            frames += self._frame("response.audio.transcript.delta", {"delta": transcript})
        return frames

    def _on_audio(self, ev: AudioDelta) -> bytes:
        out = self._get(ev)
        if out is None or out.kind != "audio":
            return b""
        return self._audio(ev.data, ev.transcript)

    # ------------------------------------------------------------------ handlers: ends

    def _rest(self, out: _Out, final: str) -> str:
        sent = "".join(out.sent)
        if final == sent or not final.startswith(sent):
            return ""
        return final[len(sent) :]

    def _on_part_done(self, ev: PartDone) -> bytes:
        out = self._get(ev)
        value = ev.value
        if out is None or value is None:
            return b""
        if out.kind in ("text", "refusal") and isinstance(value, TextPart | RefusalPart):
            return self._text_done(out, value)
        if out.kind in ("call", "shell") and isinstance(value, ToolCallPart):
            return self._call_done(out, value)
        if out.kind == "reasoning" and isinstance(value, ReasoningPart):
            return self._reasoning_done(out, value)
        if out.kind == "audio":
            return self._frame("response.audio.done", {}) + self._frame("response.audio.transcript.done", {})
        return b""

    def _text_done(self, out: _Out, value: TextPart | RefusalPart) -> bytes:
        item = out.item
        assert item is not None
        if out.closed:
            if value.text != "".join(out.sent):
                self._lose("text that arrived after its message item ended")
            return b""
        out.closed = True
        frames = b""
        rest = self._rest(out, value.text)
        if rest or out.logprobs:
            frames += self._text_delta(out, rest)
        common = {"item_id": item.id, "output_index": item.index, "content_index": out.content}
        if isinstance(value, TextPart):
            part = text_json(value, self.lossy)
            frames += self._frame(
                "response.output_text.done", {**common, "text": value.text, "logprobs": value.logprobs or []}
            )
        else:
            part = {"type": "refusal", "refusal": value.text}
            frames += self._frame("response.refusal.done", {**common, "refusal": value.text})
        item.content[out.content] = part
        return frames + self._frame("response.content_part.done", {**common, "part": part})

    def _call_done(self, out: _Out, value: ToolCallPart) -> bytes:
        item = out.item
        assert item is not None
        frames = b""
        rest = self._rest(out, value.arguments)
        if rest:
            frames += self._args(out, rest)
        if out.kind == "shell":
            if out.text_open:
                frames += self._frame(
                    "response.shell_call_command.done",
                    {"output_index": item.index, "command_index": out.annotations, "command": ""},
                )
            return frames
        spec = _DELTA_EVENTS.get(item.type)
        if spec is not None:
            body: dict[str, Any] = {"item_id": item.id, "output_index": item.index, spec[2]: value.arguments}
            if item.type == "function_call":
                body["name"] = value.name
            frames += self._frame(spec[1], body)
        if item.type in ("function_call", "custom_tool_call") and not item.whole:
            # An item of its own (a call split out of another protocol's message): it ends here.
            status = "incomplete" if value.status == "incomplete" else "completed"
            frames += self._item_done(item, call_item(value, status, item.body))
        return frames

    def _reasoning_done(self, out: _Out, value: ReasoningPart) -> bytes:
        item = out.item
        assert item is not None
        frames = b""
        for i, text in enumerate(value.summary or ()):
            sent = "".join(out.summary[i]) if i < len(out.summary) else ""
            if text != sent and text.startswith(sent):
                frames += self._summary(out, i, text[len(sent) :])
        frames += self._close_summary(out)
        if value.text:
            rest = self._rest(out, value.text)
            if rest:
                frames += self._reasoning_text(out, rest)
        if out.text_open:
            common = {"item_id": item.id, "output_index": item.index, "content_index": 0}
            text = value.text or ""
            frames += self._frame("response.reasoning_text.done", {**common, "text": text})
            frames += self._frame(
                "response.content_part.done", {**common, "part": {"type": "reasoning_text", "text": text}}
            )
        return frames

    def _on_message_done(self, ev: MessageDone) -> bytes:
        assert isinstance(ev.message, int)
        meta = self._msg_meta.get(ev.message)
        whole = self._whole.get(ev.message)
        if ev.finish_reason is not None:
            self._message_finish = ev.finish_reason  # a per-choice finish (Chat, Gemini)
        value = ev.value
        status = ev.status or (value.status if value is not None else None)
        if whole is not None:
            if whole.done:
                return b""
            frames = b""
            if whole.index < 0:
                frames = self._open_whole(whole, {})
            return frames + self._item_done(whole, self._whole_body(whole, value, status))
        item = self._text_item.get(ev.message)
        if item is None or item.done:
            return b""
        body = self._message_body(item, meta, status)
        if value is not None and self._source == PROTOCOL:
            if isinstance(value.provider_raw, dict):
                body = {**value.provider_raw, **body}
            if isinstance(value.content, list):
                # The item's final content (output_item.done) wins over what the parts sent.
                content = [_content_json(p) for p in value.content]
                body["content"] = [c for c in content if c is not None]
        return self._item_done(item, body)

    def _whole_body(self, item: _Item, value: Any, status: str | None) -> dict[str, Any]:
        raw = value.provider_raw if value is not None else None
        if item.type not in REBUILT_TYPES:
            body = dict(raw) if isinstance(raw, dict) else dict(item.body)
            if "status" in body and status is not None and body.get("status") in (None, "in_progress"):
                body["status"] = status
            return body
        parts = value.content if value is not None and isinstance(value.content, list) else []
        wire_status = status if status in ("completed", "incomplete", "in_progress") else None
        for part in parts:
            if isinstance(part, ToolCallPart):
                return call_item(part, wire_status, raw)
            if isinstance(part, ReasoningPart):
                body = reasoning_item(part, None, raw)
                if value is not None and value.status is not None:
                    body["status"] = value.status
                return body
        return dict(item.body)

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _output(self) -> list[dict[str, Any]]:
        return [item.body for item in self._items if item.done or item.body]

    def _usage_body(self) -> dict[str, Any] | None:
        usage = self._usage
        if usage is None:
            return None
        if self._source == PROTOCOL and isinstance(usage.raw, dict):
            return usage.raw
        return {
            "input_tokens": usage.input_tokens or 0,
            "input_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0},
            "output_tokens": usage.output_tokens or 0,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
            "total_tokens": usage.total_tokens
            if usage.total_tokens is not None
            else (usage.input_tokens or 0) + (usage.output_tokens or 0),
        }

    def _close_all(self) -> bytes:
        frames = b""
        for message, item in self._text_item.items():
            if not item.done:
                frames += self._close_text_item(message)
        return frames

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        frames = self._close_all()
        finish = ev.finish_reason or self._message_finish
        incomplete = ev.status == "incomplete" or (
            ev.status is None and finish in ("length", "content_filter")
        )
        if ev.status == "failed":
            response = self._response("failed", self._output())
            response["usage"] = self._usage_body()
            frames += self._frame("response.failed", {"response": response})
        elif incomplete:
            response = self._response("incomplete", self._output())
            reason = _INCOMPLETE_REASON.get(finish) if finish is not None else None
            response["incomplete_details"] = {"reason": reason or ev.provider_finish_reason or "other"}
            response["usage"] = self._usage_body()
            frames += self._frame("response.incomplete", {"response": response})
        else:
            response = self._response("completed", self._output())
            response["usage"] = self._usage_body()
            frames += self._frame("response.completed", {"response": response})
        self._ended = True
        return frames

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        error = ev.error
        raw = error.raw
        frames = self._close_all()
        if self._source == PROTOCOL and isinstance(raw, dict) and raw.get("type") == "error":
            frames += self._raw_frame(raw)  # the source's own error event, flat or nested
        else:
            frames += self._frame("error", _flat_error(error))
        response = self._response("failed", self._output())
        response["error"] = {"code": error.code or error.type, "message": error.message or error.type}
        response["usage"] = self._usage_body()
        frames += self._frame("response.failed", {"response": response})
        self._ended = True
        return frames

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        if self._source == PROTOCOL and ev.message is None and isinstance(ev.raw, dict):
            return self._raw_frame(ev.raw)  # a Responses event of a type we do not know, verbatim
        if ev.message is None:
            self._lose(f"unknown {ev.provider_type!r} frame")
        return b""


def _content_json(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return text_json(part)
    if isinstance(part, RefusalPart):
        return {"type": "refusal", "refusal": part.text}
    if isinstance(part, UnknownPart) and isinstance(part.raw, dict):
        return part.raw
    return None


def _flat_error(error: StreamError) -> dict[str, Any]:
    return {"code": error.code or error.type, "message": error.message or error.type, "param": None}
