"""OpenAI Realtime decoder: websocket events (JSON lines) → events.

A Realtime connection is a session holding several responses:

* ``response.created`` … ``response.done`` is one response (``ResponseStart`` / ``ResponseDone``
  with its status and ``status_details``); its usage replaces the last (``Response.usage`` is the
  last response's). Each output item is one message keyed by its item id: a ``message`` item's
  content parts (text, or audio with its transcript) keyed by ``content_index``; a
  ``function_call`` item holds one tool call (``id`` = ``call_id``, ``item_id`` = the item id).
  ``response.done`` is the oracle: items it lists that were never streamed are added from it.
* Both the GA event names (``response.output_text.delta``, ``response.output_audio.delta``,
  ``response.output_audio_transcript.delta``) and the beta ones (``response.text.delta``,
  ``response.audio.delta``, ``response.audio_transcript.delta``) are read.
* Input audio transcription (``conversation.item.input_audio_transcription.delta`` /
  ``.completed``) becomes a ``user`` message (key ``("input", item_id)``) with an audio part
  holding the transcript.
* A client ``conversation.item.create`` of a ``function_call_output`` becomes a ``tool`` message
  with one tool result. Every other client event, and every session event (``session.*``,
  ``input_audio_buffer.*``, ``conversation.item.*``, ``rate_limits.updated``, a failed input
  transcription, ...), is kept whole as an unknown event (client ones as ``client.<type>``),
  counted, and passed through by the Realtime encoder.
* ``error`` is an in-band error (the response ends ``failed``).

Session-local state only: whether a response is open, the items and call names seen in it.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._exceptions import RemoteProtocolError
from ..._model import (
    AudioPart,
    FinishReason,
    Part,
    ResponseStatus,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from ...events import (
    ArgumentsDelta,
    AudioDelta,
    Event,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ResponseDone,
    ResponseStart,
    StreamErrorEvent,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import JSONLinesStreamDecoder, Msg, WrappedLine, _State, raw_message
from ..openai_chat._decode import error_from
from ._wire import ServerEvent, frame_decoder, server_decoder

__all__ = ["StreamDecoder", "part_from_content", "usage_from"]

from .._names import OPENAI_REALTIME as PROTOCOL

_TEXT: Final = frozenset({"response.output_text.delta", "response.text.delta"})
_AUDIO: Final = frozenset({"response.output_audio.delta", "response.audio.delta"})
_TRANSCRIPT: Final = frozenset({"response.output_audio_transcript.delta", "response.audio_transcript.delta"})
_QUIET: Final = frozenset(
    {
        "response.output_text.done",
        "response.text.done",
        "response.output_audio.done",
        "response.audio.done",
        "response.output_audio_transcript.done",
        "response.audio_transcript.done",
    }
)
_ROLES: Final = frozenset({"system", "user", "assistant"})


def usage_from(raw: Any) -> Usage | None:
    """Map a Realtime ``response.usage`` object to canonical usage."""
    if not isinstance(raw, dict):
        return None
    details = raw.get("input_token_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None

    def num(value: Any) -> int | None:
        return value if type(value) is int else None

    return Usage(
        input_tokens=num(raw.get("input_tokens")),
        output_tokens=num(raw.get("output_tokens")),
        total_tokens=num(raw.get("total_tokens")),
        cache_read_tokens=num(cached),
        raw=raw,
    )


def part_from_content(content: Any) -> Part | None:
    """A Realtime content part (``output_text``, ``output_audio``, ``text``, ``audio``)."""
    if not isinstance(content, dict):
        return None
    kind = content.get("type")
    if kind in ("text", "output_text", "input_text"):
        return TextPart(text=str(content.get("text") or ""))
    if kind in ("audio", "output_audio", "input_audio"):
        transcript = content.get("transcript")
        audio = content.get("audio")
        return AudioPart(
            transcript=transcript if isinstance(transcript, str) and transcript else None,
            data=audio if isinstance(audio, str) else None,
        )
    return None


_SESSION_FAMILIES = (
    "conversation.",
    "input_audio_buffer.",
    "output_audio_buffer.",
    "rate_limits.",
    "session.",
    "transcription_session.",
)


class StreamDecoder(JSONLinesStreamDecoder):
    """Decode an OpenAI Realtime session recorded as ``{"dir", "msg"}`` JSON lines (or fed live)."""

    protocol = PROTOCOL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model: str | None = None
        self._started = False
        self._open = False
        self._ours = False
        self._items: set[str] = set()
        self._names: dict[str, str] = {}
        self._inputs: dict[str, list[str]] = {}
        self._tools = 0
        self._handlers: dict[str, Any] = {
            **dict.fromkeys(_TEXT, self._on_text),
            **dict.fromkeys(_AUDIO, self._on_audio),
            **dict.fromkeys(_TRANSCRIPT, self._on_transcript),
            **dict.fromkeys(_QUIET, self._on_quiet),
            "response.function_call_arguments.delta": self._on_arguments,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.content_part.added": self._on_part_added,
            "response.content_part.done": self._on_part_done,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.created": self._on_created,
            "response.done": self._on_done,
            "conversation.item.input_audio_transcription.delta": self._on_input_delta,
            "conversation.item.input_audio_transcription.completed": self._on_input_done,
            "session.created": self._on_session,
            "session.updated": self._on_session,
            "error": self._on_error,
        }

    def _line(self, line: bytes) -> list[Event]:
        # Fast path (the hot one): a server event line decoded typed in one pass, envelope
        # included, instead of envelope → raw message → event. Anything else takes the base path.
        if not self._started:
            return super()._line(line)
        try:
            frame = frame_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return super()._line(line)
        ev = frame.msg
        if frame.dir != "server" or ev is None:
            return super()._line(line)
        self._frames += 1
        out: list[Event] = []
        try:
            self._server(ev, WrappedLine(line), out)
        except RemoteProtocolError as exc:
            self._state = _State.ERROR
            exc.protocol = exc.protocol or self.protocol
            exc.frame = exc.frame or self._frames
            raise
        return out

    def on_message(self, msg: bytes | str, direction: str) -> list[Event]:
        out: list[Event] = []
        if not self._started:
            # The session starts: say which protocol this is before any session event.
            self._started = True
            if direction == "server" and b'"session.created"' in (
                msg if isinstance(msg, bytes) else msg.encode()
            ):
                session = msgspec.json.decode(msg).get("session")
                model = session.get("model") if isinstance(session, dict) else None
                self._model = model if isinstance(model, str) else None
            self._ensure_open(out)
        if direction == "client":
            self._client(msg, out)
            return out
        self._server(server_decoder.decode(msg), msg, out)
        return out

    def _server(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if not ev.type:
            raise RemoteProtocolError("a Realtime server event without a type")
        handler = self._handlers.get(ev.type)
        if handler is None:
            # Session-level server events of known families carry no response content; they
            # are kept for a same-protocol re-encode and never fail a conversion closed.
            known = ev.type.startswith(_SESSION_FAMILIES)
            out.append(UnknownEvent(provider_type=ev.type, raw=raw_message(msg), passthrough=known))
        else:
            handler(ev, msg, out)

    # ------------------------------------------------------------------ responses

    def _ensure_open(self, out: list[Event], *, ours: bool = True) -> bool:
        if self._open:
            return False
        self._open = True
        self._ours = ours
        out.append(ResponseStart(protocol=PROTOCOL, model=self._model))
        return True

    def _close_ours(self, out: list[Event]) -> None:
        if self._open and self._ours:
            self._open = False
            self._ours = False
            out.append(ResponseDone())

    def on_finish(self) -> list[Event]:
        out: list[Event] = []
        for item_id, held in self._inputs.items():
            # Cut before .completed: keep what was transcribed, left open (incomplete).
            self._input_message(item_id, "".join(held), False, out)
        if self._open and self._ours and not self._inputs:
            self._close_ours(out)
        return out

    def _on_session(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        session = ev.session or {}
        model = session.get("model")
        if isinstance(model, str):
            self._model = model
        out.append(UnknownEvent(provider_type=ev.type, raw=raw_message(msg), passthrough=True))

    def _on_created(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        response = ev.response or {}
        raw = {
            k: v
            for k, v in response.items()
            if k not in ("id", "status", "status_details", "output", "usage")
        }
        self._open = True
        self._ours = False
        self._items = set()
        out.append(
            ResponseStart(protocol=PROTOCOL, id=response.get("id"), model=self._model, provider_raw=raw)
        )

    def _on_done(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        response = ev.response or {}
        self._ensure_open(out)
        output = response.get("output")
        calls = False
        for item in output if isinstance(output, list) else []:
            if not isinstance(item, dict):
                continue
            calls = calls or item.get("type") == "function_call"
            item_id = item.get("id")
            if isinstance(item_id, str) and item_id not in self._items:
                self._item_start(item, out)
                self._item_done(item, out)
        usage = usage_from(response.get("usage"))
        if usage is not None:
            out.append(UsageUpdate(usage=usage))
        status = str(response.get("status") or "completed")
        details = response.get("status_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        mapped_status: ResponseStatus = "completed"
        finish: FinishReason = "tool_calls" if calls else "stop"
        if status == "failed":
            error = details.get("error") if isinstance(details, dict) else None
            out.append(
                StreamErrorEvent(error=error_from(error or {"type": "failed", "message": "response failed"}))
            )
            mapped_status, finish = "failed", "error"
        elif status in ("cancelled", "incomplete"):
            mapped_status = "incomplete"
            finish = {"max_output_tokens": "length", "content_filter": "content_filter"}.get(
                str(reason), "other"
            )  # type: ignore[assignment]
        self._open = False
        self._ours = False
        out.append(
            ResponseDone(
                status=mapped_status,
                finish_reason=finish,
                provider_finish_reason=str(reason) if isinstance(reason, str) else status,
            )
        )

    def _on_error(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        out.append(StreamErrorEvent(error=error_from(ev.error)))

    # ------------------------------------------------------------------ items

    def _on_item_added(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if ev.item is None:
            raise RemoteProtocolError("response.output_item.added without an item")
        self._ensure_open(out)
        self._item_start(ev.item, out)

    def _item_start(self, item: dict[str, Any], out: list[Event]) -> None:
        item_id = str(item.get("id") or "")
        self._items.add(item_id)
        kind = str(item.get("type") or "")
        role: Role = item["role"] if item.get("role") in _ROLES else "assistant"
        out.append(MessageStart(message=item_id, role=role, type=kind, id=item_id or None))
        if kind == "function_call":
            name = str(item.get("name") or "")
            self._names[item_id] = name
            value = ToolCallPart(
                id=str(item.get("call_id") or ""),
                name=name,
                arguments=str(item.get("arguments") or ""),
                item_id=item_id or None,
            )
            out.append(PartStart(message=item_id, part="call", value=value))
        elif kind == "message":
            content = item.get("content")
            for i, c in enumerate(content if isinstance(content, list) else []):
                part = part_from_content(c)
                if part is not None:
                    out.append(PartStart(message=item_id, part=i, value=part))

    def _on_item_done(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if ev.item is None:
            raise RemoteProtocolError("response.output_item.done without an item")
        self._ensure_open(out)
        if str(ev.item.get("id") or "") not in self._items:
            self._item_start(ev.item, out)
        self._item_done(ev.item, out)

    def _item_done(self, item: dict[str, Any], out: list[Event]) -> None:
        item_id = str(item.get("id") or "")
        kind = item.get("type")
        if kind == "function_call":
            value = ToolCallPart(
                id=str(item.get("call_id") or ""),
                name=str(item.get("name") or self._names.get(item_id, "")),
                arguments=str(item.get("arguments") or ""),
                item_id=item_id or None,
            )
            out.append(PartDone(message=item_id, part="call", value=value))
        elif kind != "message":
            out.append(UnknownEvent(provider_type=str(kind), raw=item, message=item_id, part="item"))
        status = item.get("status")
        out.append(MessageDone(message=item_id, status="incomplete" if status == "incomplete" else None))

    def _on_part_added(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        part = part_from_content(ev.part)
        if part is None:
            out.append(UnknownEvent(provider_type="content_part", raw=ev.part, message=ev.item_id or ""))
            return
        out.append(PartStart(message=ev.item_id or "", part=ev.content_index, value=part))

    def _on_part_done(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        out.append(PartDone(message=ev.item_id or "", part=ev.content_index))

    def _on_text(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if ev.delta:
            out.append(TextDelta(message=ev.item_id or "", part=ev.content_index, text=ev.delta))

    def _on_audio(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if ev.delta:
            out.append(AudioDelta(message=ev.item_id or "", part=ev.content_index, data=ev.delta))

    def _on_transcript(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if ev.delta:
            out.append(AudioDelta(message=ev.item_id or "", part=ev.content_index, transcript=ev.delta))

    def _on_quiet(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        # The full text / transcript is repeated in content_part.done and response.done.
        return

    def _on_arguments(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        if ev.delta:
            out.append(ArgumentsDelta(message=ev.item_id or "", part="call", delta=ev.delta))

    def _on_arguments_done(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        item_id = ev.item_id or ""
        value = ToolCallPart(
            id=ev.call_id or "",
            name=ev.name or self._names.get(item_id, ""),
            arguments=ev.arguments or "",
            item_id=item_id or None,
        )
        out.append(PartDone(message=item_id, part="call", value=value))

    # ------------------------------------------------------------------ input transcription

    def _on_input_delta(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        # Held until .completed: the transcription often outlives the response it started in,
        # and a message must not straddle two responses.
        if ev.delta:
            self._inputs.setdefault(ev.item_id or "", []).append(ev.delta)

    def _on_input_done(self, ev: ServerEvent, msg: Msg, out: list[Event]) -> None:
        item_id = ev.item_id or ""
        held = self._inputs.pop(item_id, [])
        transcript = ev.transcript if ev.transcript is not None else "".join(held)
        self._input_message(item_id, transcript, True, out)

    def _input_message(self, item_id: str, transcript: str, done: bool, out: list[Event]) -> None:
        self._ensure_open(out)
        key = ("input", item_id)
        out.append(MessageStart(message=key, role="user", type="input_transcription", id=item_id or None))
        out.append(PartStart(message=key, part=0, value=AudioPart(transcript=transcript)))
        if done:
            out += [PartDone(message=key, part=0), MessageDone(message=key)]
            self._close_ours(out)

    # ------------------------------------------------------------------ client events

    def _client(self, msg: bytes | str, out: list[Event]) -> None:
        raw = msgspec.json.decode(msg)
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise RemoteProtocolError("a Realtime client event must be an object with a type")
        item = raw.get("item")
        if raw["type"] == "conversation.item.create" and isinstance(item, dict):
            if item.get("type") == "function_call_output":
                self._ensure_open(out)
                key = ("tool", self._tools)
                self._tools += 1
                output = item.get("output")
                result = ToolResultPart(
                    tool_call_id=str(item.get("call_id") or ""),
                    content=output if isinstance(output, str) else msgspec.json.encode(output).decode(),
                )
                out.append(
                    MessageStart(message=key, role="tool", type="function_call_output", id=item.get("id"))
                )
                out += [PartStart(message=key, part=0, value=result), PartDone(message=key, part=0)]
                out.append(MessageDone(message=key))
                self._close_ours(out)
                return
        out.append(UnknownEvent(provider_type=f"client.{raw['type']}", raw=raw, passthrough=True))
