"""OpenAI Realtime encoder: canonical events → Realtime server events as ``{"dir", "msg"}`` lines.

GA event names throughout. A response's ``response.created`` goes out with its first output (so
a source response holding only client-side messages emits nothing); each canonical message's
text and audio parts form one ``message`` output item (``content_part.added`` →
``output_text`` / ``output_audio`` and ``output_audio_transcript`` deltas → ``*.done`` →
``content_part.done``), each function call its own ``function_call`` item with argument deltas;
``response.done`` carries the output items (without audio data, as the server sends them), the
status with its ``status_details`` and the usage. Input transcriptions (``user`` messages of type
``input_transcription``) go out as ``conversation.item.input_audio_transcription`` events; tool
results as the client's ``conversation.item.create`` of a ``function_call_output`` (``dir:
"client"``). Realtime session and client events kept by the Realtime decoder pass through.

Dropped (listed in :attr:`StreamEncoder.lossy`): reasoning, server and MCP tool calls of other
protocols, refusals, citations, images, files, code, and unknown frames of other protocols.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec

from ..._model import AudioPart, MessageStatus, TextPart, ToolCallPart, ToolResultPart, UnknownPart, Usage
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

__all__ = ["StreamEncoder"]

from .._names import OPENAI_REALTIME as PROTOCOL

_json = msgspec.json.Encoder()
_SERVER: Final = b'{"dir":"server","msg":'
_CLIENT: Final = b'{"dir":"client","msg":'
_CANCELLED: Final = frozenset({"turn_detected", "client_cancelled"})


class _Item:
    __slots__ = ("args", "call_id", "content", "done", "id", "index", "kind", "name")

    def __init__(self, item_id: str, index: int, kind: str) -> None:
        self.id = item_id
        self.index = index
        self.kind = kind
        self.content: list[dict[str, Any]] = []
        self.args: list[str] = []
        self.call_id = ""
        self.name = ""
        self.done = False


class StreamEncoder(EventEncoder):
    """Encode canonical events as an OpenAI Realtime session (server events, JSON lines)."""

    _ROUTES: ClassVar[dict[type[Any], str]] = {
        RefusalDelta: "_on_lost",
        ReasoningDelta: "_on_lost",
        SummaryDelta: "_on_lost",
        SignatureDelta: "_on_lost",
        AnnotationAdded: "_on_lost",
        LogprobsDelta: "_on_lost",
    }
    protocol: ClassVar[str] = PROTOCOL

    def __init__(self) -> None:
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._source = ""
        self._ended = False
        self._n = 0
        self._ids = 0
        self._pending: ResponseStart | None = None
        self._response: str | None = None
        self._output: list[_Item] = []
        self._roles: dict[Any, str] = {}
        self._message_ids: dict[Any, str] = {}
        self._messages: dict[Any, _Item] = {}
        self._parts: dict[tuple[Any, Any], tuple[_Item, int, str]] = {}
        self._calls: dict[tuple[Any, Any], _Item] = {}
        self._inputs: dict[tuple[Any, Any], list[str]] = {}
        self._whole: set[tuple[Any, Any]] = set()
        self._reopen: dict[tuple[Any, Any], str] = {}
        self._usage: Usage | None = None
        self._assistant = False
        """Whether the current response has a model message (even one whose content is dropped)."""

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the JSON lines it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        result: bytes = self._route(event)
        return result

    def finish(self) -> bytes:
        """End the output. A cut source stays cut: no ``response.done`` is invented."""
        self._ended = True
        return b""

    # ------------------------------------------------------------------ helpers

    def _event(self, body: dict[str, Any], *, client: bool = False) -> bytes:
        if not client:
            self._n += 1
            body["event_id"] = f"event_maas_{self._n}"
        return (_CLIENT if client else _SERVER) + _json.encode(body) + b"}\n"

    def _synth(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_maas_{self._ids}"

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    def _open(self) -> bytes:
        if self._response is not None:
            return b""
        start = self._pending
        self._response = (start.id if start is not None and start.id else None) or self._synth("resp")
        response: dict[str, Any] = {"object": "realtime.response", "id": self._response}
        response["status"] = "in_progress"
        response["status_details"] = None
        response["output"] = []
        if start is not None and start.protocol == PROTOCOL and isinstance(start.provider_raw, dict):
            for key, value in start.provider_raw.items():
                response.setdefault(key, value)
        response.setdefault("usage", None)
        self._output = []
        return self._event({"type": "response.created", "response": response})

    def _base(self, item: _Item) -> dict[str, Any]:
        return {"response_id": self._response, "item_id": item.id, "output_index": item.index}

    def _item_wire(self, item: _Item, status: str) -> dict[str, Any]:
        if item.kind == "function_call":
            return {
                "id": item.id,
                "type": "function_call",
                "status": status,
                "name": item.name,
                "call_id": item.call_id,
                "arguments": "".join(item.args),
            }
        return {
            "id": item.id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": item.content,
        }

    def _add_item(self, kind: str, item_id: str) -> tuple[_Item, bytes]:
        out = self._open()
        item = _Item(item_id, len(self._output), kind)
        self._output.append(item)
        return item, out

    # ------------------------------------------------------------------ handlers

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        if self._response is None:
            self._pending = ev
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        self._roles[ev.message] = ev.role
        if ev.role in ("assistant", "model"):
            self._assistant = True
        if ev.id and self._source == PROTOCOL:
            self._message_ids[ev.message] = ev.id
        if ev.role in ("user", "system", "developer") and ev.type != "input_transcription":
            self._lose("input messages are not Realtime server events; dropped")
        return b""

    def _on_part_start(self, ev: PartStart) -> bytes:
        key = (ev.message, ev.part)
        role = self._roles.get(ev.message, "assistant")
        value = ev.value
        if role == "user":
            if isinstance(value, AudioPart):
                self._inputs[key] = [value.transcript] if value.transcript else []
            return b""
        if role == "tool":
            if isinstance(value, ToolResultPart):
                self._whole.add(key)
            return b""
        if isinstance(value, TextPart | AudioPart):
            return self._content_start(key, value)
        if isinstance(value, ToolCallPart):
            if value.kind not in ("function", "custom"):
                self._lose(f"{value.kind} tool call {value.name!r} has no Realtime form; dropped")
                return b""
            # A call is an item of its own; text after it belongs to a new message item, so
            # the order of the output is kept.
            closing = self._on_message_done(MessageDone(message=ev.message))
            item_id = value.item_id if self._source == PROTOCOL and value.item_id else self._synth("item")
            item, out = self._add_item("function_call", item_id)
            out = closing + out
            item.call_id = value.id
            item.name = value.name
            self._calls[key] = item
            wire = self._item_wire(item, "in_progress")
            return out + self._event({"type": "response.output_item.added", **self._base(item), "item": wire})
        if isinstance(value, UnknownPart) and self._source == PROTOCOL:
            self._whole.add(key)
            return b""
        self._lose(f"a {value.__struct_config__.tag} part has no Realtime form; dropped")
        return b""

    def _content_start(self, key: tuple[Any, Any], value: TextPart | AudioPart) -> bytes:
        message = key[0]
        out = b""
        item = self._messages.get(message)
        if item is None or item.done:
            item_id = self._message_ids.get(message) or self._synth("item")
            item, out = self._add_item("message", item_id)
            self._messages[message] = item
            wire = self._item_wire(item, "in_progress")
            out += self._event({"type": "response.output_item.added", **self._base(item), "item": wire})
        index = len(item.content)
        if isinstance(value, TextPart):
            item.content.append({"type": "output_text", "text": ""})
            part: dict[str, Any] = {"type": "text", "text": ""}
            kind = "text"
        else:
            item.content.append({"type": "output_audio", "transcript": ""})
            part = {"type": "audio", "transcript": ""}
            kind = "audio"
        self._parts[key] = (item, index, kind)
        out += self._event(
            {"type": "response.content_part.added", **self._base(item), "content_index": index, "part": part}
        )
        if isinstance(value, TextPart) and value.text:
            out += self._text(item, index, value.text)
        if isinstance(value, AudioPart) and (value.data or value.transcript):
            out += self._audio(item, index, value.data, value.transcript)
        return out

    def _text(self, item: _Item, index: int, text: str) -> bytes:
        item.content[index]["text"] += text
        body = {
            "type": "response.output_text.delta",
            **self._base(item),
            "content_index": index,
            "delta": text,
        }
        return self._event(body)

    def _audio(self, item: _Item, index: int, data: str | None, transcript: str | None) -> bytes:
        out = b""
        base = {**self._base(item), "content_index": index}
        if data:
            out += self._event({"type": "response.output_audio.delta", **base, "delta": data})
        if transcript:
            item.content[index]["transcript"] += transcript
            out += self._event(
                {"type": "response.output_audio_transcript.delta", **base, "delta": transcript}
            )
        return out

    def _reopened(self, key: tuple[Any, Any]) -> tuple[bytes, tuple[_Item, int, str] | None]:
        """A part closed early (its item ended at a call) that goes on: a new message item."""
        kind = self._reopen.pop(key, None)
        if kind is None:
            return b"", None
        out = self._content_start(key, TextPart(text="") if kind == "text" else AudioPart())
        return out, self._parts.get(key)

    def _on_text(self, ev: TextDelta) -> bytes:
        key = (ev.message, ev.part)
        head = b""
        found = self._parts.get(key)
        if found is None:
            head, found = self._reopened(key)
        if found is None or found[2] != "text":
            return head
        return head + self._text(found[0], found[1], ev.text)

    def _on_audio(self, ev: AudioDelta) -> bytes:
        key = (ev.message, ev.part)
        inputs = self._inputs.get(key)
        if inputs is not None:
            if not ev.transcript:
                return b""
            inputs.append(ev.transcript)
            body = {
                "type": "conversation.item.input_audio_transcription.delta",
                "item_id": self._input_id(ev.message),
                "content_index": 0,
                "delta": ev.transcript,
            }
            return self._event(body)
        head = b""
        found = self._parts.get(key)
        if found is None:
            head, found = self._reopened(key)
        if found is None or found[2] != "audio":
            return head
        return head + self._audio(found[0], found[1], ev.data, ev.transcript)

    def _input_id(self, message: Any) -> str:
        found = self._message_ids.get(message)
        if found is None:
            found = self._message_ids[message] = self._synth("item")
        return found

    def _on_arguments(self, ev: ArgumentsDelta) -> bytes:
        item = self._calls.get((ev.message, ev.part))
        if item is None:
            return b""
        item.args.append(ev.delta)
        body = {"type": "response.function_call_arguments.delta", **self._base(item), "call_id": item.call_id}
        body["delta"] = ev.delta
        return self._event(body)

    def _on_lost(self, ev: Event) -> bytes:
        self._lose(f"{type(ev).__name__} has no Realtime form; dropped")
        return b""

    def _on_part_done(self, ev: PartDone) -> bytes:
        key = (ev.message, ev.part)
        value = ev.value
        if key in self._inputs:
            parts = self._inputs.pop(key)
            transcript = (
                value.transcript if isinstance(value, AudioPart) and value.transcript else "".join(parts)
            )
            body = {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": self._input_id(ev.message),
                "content_index": 0,
                "transcript": transcript,
                "usage": {"type": "duration", "seconds": 0},
            }
            return self._event(body)
        if key in self._whole:
            self._whole.discard(key)
            return self._whole_part(value)
        call = self._calls.pop(key, None)
        if call is not None:
            return self._call_done(call, value)
        self._reopen.pop(key, None)
        found = self._parts.pop(key, None)
        if found is None:
            return b""
        return self._close_part(found, value)

    def _close_part(self, found: tuple[_Item, int, str], value: Any) -> bytes:
        item, index, kind = found
        base = {**self._base(item), "content_index": index}
        if kind == "text":
            text = value.text if isinstance(value, TextPart) else item.content[index]["text"]
            item.content[index]["text"] = text
            out = self._event({"type": "response.output_text.done", **base, "text": text})
            part: dict[str, Any] = {"type": "text", "text": text}
        else:
            given = value.transcript if isinstance(value, AudioPart) else None
            transcript = given if given is not None else str(item.content[index]["transcript"])
            item.content[index]["transcript"] = transcript
            out = self._event({"type": "response.output_audio.done", **base})
            out += self._event(
                {"type": "response.output_audio_transcript.done", **base, "transcript": transcript}
            )
            part = {"type": "audio", "transcript": transcript}
        return out + self._event({"type": "response.content_part.done", **base, "part": part})

    def _call_done(self, item: _Item, value: Any) -> bytes:
        if isinstance(value, ToolCallPart) and value.status == "incomplete":
            return b""  # a cut (or cancelled) call is never reported as done
        if isinstance(value, ToolCallPart):
            item.args = [value.arguments]
            item.name = value.name or item.name
        item.done = True
        base = self._base(item)
        out = self._event(
            {
                "type": "response.function_call_arguments.done",
                **base,
                "call_id": item.call_id,
                "name": item.name,
                "arguments": "".join(item.args),
            }
        )
        status = (
            "incomplete" if isinstance(value, ToolCallPart) and value.status == "incomplete" else "completed"
        )
        wire = self._item_wire(item, status)
        return out + self._event({"type": "response.output_item.done", **base, "item": wire})

    def _whole_part(self, value: Any) -> bytes:
        if isinstance(value, ToolResultPart):
            content = value.content
            output = (
                content
                if isinstance(content, str)
                else "".join(p.text for p in content if isinstance(p, TextPart))
            )
            item = {"type": "function_call_output", "call_id": value.tool_call_id, "output": output}
            return self._event({"type": "conversation.item.create", "item": item}, client=True)
        if isinstance(value, UnknownPart) and isinstance(value.raw, dict):
            item_id = str(value.raw.get("id") or self._synth("item"))
            entry, out = self._add_item("raw", item_id)
            base = {"response_id": self._response, "output_index": entry.index}
            out += self._event({"type": "response.output_item.added", **base, "item": value.raw})
            entry.content = [value.raw]
            entry.done = True
            return out + self._event({"type": "response.output_item.done", **base, "item": value.raw})
        return b""

    def _on_message_done(self, ev: MessageDone) -> bytes:
        item = self._messages.pop(ev.message, None)
        if item is None or item.done:
            return b""
        item.done = True
        # Content parts still open (a call started before the source closed them) end first:
        # Realtime closes a part before its item. Later deltas for them start a new item.
        out = b""
        for key, found in list(self._parts.items()):
            if found[0] is item:
                del self._parts[key]
                self._reopen[key] = found[2]
                out += self._close_part(found, None)
        status = "incomplete" if ev.status == "incomplete" else "completed"
        wire = self._item_wire(item, status)
        return out + self._event({"type": "response.output_item.done", **self._base(item), "item": wire})

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        pending = self._pending
        real = self._assistant or (pending is not None and pending.protocol == PROTOCOL and bool(pending.id))
        self._assistant = False
        if self._response is None and not real:
            # Only client-side messages (tool results, input transcripts): no model response.
            self._pending = None
            return b""
        out = self._open()
        for message in list(self._messages):
            closing: MessageStatus | None = "incomplete" if ev.status in ("incomplete", "failed") else None
            out += self._on_message_done(MessageDone(message=message, status=closing))
        status, details = _status(ev)
        output = [i.content[0] if i.kind == "raw" else self._item_wire(i, "completed") for i in self._output]
        response: dict[str, Any] = {"object": "realtime.response", "id": self._response}
        response.update(status=status, status_details=details, output=output)
        if self._usage is not None:
            response["usage"] = _usage_wire(self._usage)
            self._usage = None
        self._response = None
        self._pending = None
        self._messages = {}
        return out + self._event({"type": "response.done", "response": response})

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        err = ev.error
        raw = err.raw if self._source == PROTOCOL and isinstance(err.raw, dict) else None
        error = raw or {"type": err.type, "code": err.code, "message": err.message or "", "param": None}
        return self._event({"type": "error", "error": error})

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        raw = ev.raw
        if self._source != PROTOCOL or not isinstance(raw, dict):
            self._lose(f"unknown {ev.provider_type!r} frames of another protocol dropped")
            return b""
        line = _json.encode(raw)
        return (_CLIENT if ev.provider_type.startswith("client.") else _SERVER) + line + b"}\n"


def _status(ev: ResponseDone) -> tuple[str, Any]:
    reason = ev.provider_finish_reason
    if ev.status == "failed" or ev.finish_reason == "error":
        return "failed", {"type": "failed"}
    if ev.status == "incomplete" or ev.finish_reason in ("length", "content_filter"):
        if reason == "interrupted":
            return "cancelled", {"type": "cancelled", "reason": "turn_detected"}
        if reason in _CANCELLED:
            return "cancelled", {"type": "cancelled", "reason": reason}
        wire_reason = "content_filter" if ev.finish_reason == "content_filter" else "max_output_tokens"
        return "incomplete", {"type": "incomplete", "reason": wire_reason}
    return "completed", None


def _usage_wire(usage: Usage) -> dict[str, Any]:
    raw = usage.raw
    if isinstance(raw, dict) and "input_tokens" in raw and "output_tokens" in raw:
        return raw
    pairs = (
        ("total_tokens", usage.total_tokens),
        ("input_tokens", usage.input_tokens),
        ("output_tokens", usage.output_tokens),
    )
    out: dict[str, Any] = {name: value for name, value in pairs if value is not None}
    if usage.cache_read_tokens is not None:
        out["input_token_details"] = {"cached_tokens": usage.cache_read_tokens}
    return out
