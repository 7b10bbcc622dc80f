"""OpenAI Realtime decoder: websocket events (JSON lines) → events.

A Realtime connection is a session holding several responses:

* ``response.created`` … ``response.done`` is one response (``ResponseStart`` / ``ResponseDone``
  with its status and ``status_details``); its usage replaces the last (``Response.usage`` is the
  last response's). Each output item is one message keyed by its item id: a ``message`` item's
  content parts (text, or audio with its transcript) keyed by ``content_index``; a
  ``function_call`` item holds one tool call (``id`` = ``call_id``, ``item_id`` = the item id).
  ``response.done`` is the authority: items it lists that were never streamed are added from
  it, and an item it lists ``incomplete`` (cut by a cancellation, say) is ``Cancelled``, so a
  call it ended is never reported ``completed``. A completed response says ``stop``; the
  aggregator says ``tool_calls`` when it holds client calls.
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
* ``error`` is a recoverable error (``StreamErrorEvent(recoverable=True)``): the SDK's
  ``RealtimeErrorEvent`` says most errors are recoverable and the session stays open (a
  ``response.cancel`` with nothing active, say). It fails no response: a failed response says
  so in its ``response.done`` (status ``failed``), and a session that ends closes the socket.

It keeps framing-level state only: whether a response is open (and whether the decoder opened
it), the model, the ids of the items the open response streamed (``response.done`` adds the
others from its list, and they must not start twice), the call names of the open response
(the beta ``function_call_arguments.done`` carries none, and a final value without its name
would blank the streamed one), a counter for tool-result message keys, and input transcription
deltas until ``.completed``: a transcription often outlives the response it began in, and a
message must not straddle two responses (the aggregator closes a response's messages at its
end). Item values and statuses are the aggregator's.

Recorded server lines are decoded typed in one pass (``SessionDecoder.feed``), a server message
alike (``on_message``): the event's ``type`` picks its Struct (``_wire.message_decoder``; a type
the decoder does not name is read untagged); the streamed deltas (text, audio, transcript, call
arguments: nearly every event of a session) go straight from the typed event to their delta
event, or, folded directly (:meth:`StreamDecoder.fold_lines`), straight into their part's buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ... import events as ev
from ..._exceptions import RemoteProtocolError
from ..._model import AudioPart, Role, ToolCallPart
from .._base import _DECODE_FAULTS, _State
from .._direct import ARGS, AUDIO, TEXT, TRANSCRIPT
from .._jsonl import Msg, WrappedLine, raw_message
from .._names import OPENAI_REALTIME as PROTOCOL
from .._openai import error_from
from .._session import NOT_SERVER, SessionDecoder
from ._items import call_from_item, finish_from, part_from_content, result_from_item, usage_from
from ._wire import _NAMED, DELTAS, QUIET, ServerEvent, frame_decoder, message_decoder, server_decoder

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["StreamDecoder"]

_OPEN: Final = _State.OPEN
_ROLES: Final[dict[str, Role]] = {"system": "system", "user": "user", "assistant": "assistant"}
_SESSION_FAMILIES = (
    "conversation.",
    "input_audio_buffer.",
    "output_audio_buffer.",
    "rate_limits.",
    "session.",
    "transcription_session.",
)


def _string(obj: dict[str, Any], name: str) -> str:
    """A string field of a provider object ("" when absent or null)."""
    value = obj.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RemoteProtocolError(f"a Realtime {name!r} must be a string, not {type(value).__name__}")
    return value


class StreamDecoder(SessionDecoder):
    """Decode an OpenAI Realtime session recorded as ``{"dir", "msg"}`` JSON lines (or fed live)."""

    protocol = PROTOCOL
    frame_decoder = frame_decoder

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._items: dict[str, None] = {}  # a set (an empty dict is 64 B, an empty set 216)
        self._names: dict[str, str] = {}
        self._inputs: dict[str, list[str]] = {}
        self._tools = 0

    def fold_lines(self, lines: list[bytes]) -> None:
        """Fold a chunk's lines: a streamed delta of a started session goes to ``fold_delta``.

        Its event would be one delta with the same key and text (:meth:`_server_line`), so
        appending it to the existing part is what the aggregator would do. It folds after the
        lines held before it went ``normal`` (they may start the session or add the part); every
        other line (an empty delta, a part the target does not hand out, ...) is held, and
        consecutive held lines go ``normal`` together, as decoded here (``normal_decoded``). A
        quiet ``.done`` line of a started session has no events: with nothing held, it is only
        counted.
        """
        decode = frame_decoder.decode
        fold = self.fold_delta
        held: list[bytes] = []
        decoded: list[Any] = []
        frames = self._frames
        started = self._started  # only a normal line starts the session
        for line in lines:
            if not line:
                continue
            try:
                event: Any = decode(line).msg
            except _DECODE_FAULTS:
                event = NOT_SERVER  # a client line, an odd or bad one: the normal way says which
            else:
                into = event.into
                text = event.delta
                if into is not None and text:
                    if held:
                        self._frames = frames
                        self.normal_decoded(decoded, held)
                        frames = self._frames
                        started = self._started
                        held, decoded = [], []
                    if started and fold(
                        event.item_id or "", "call" if into == ARGS else event.content_index, text, into
                    ):
                        frames += 1
                        continue
                elif event.type in QUIET and started and not held:
                    frames += 1
                    continue
            held.append(line)
            decoded.append(event)
        if held:
            self._frames = frames
            self.normal_decoded(decoded, held)
            frames = self._frames
        self._frames = frames

    def fold_one(self, msg: bytes | str, direction: str) -> Any:
        """Fold one message of a started, open session without ``feed_message``: ``True``.

        As :meth:`fold_lines` folds its line: a streamed delta, a quiet ``.done``. And what
        ``feed_message`` would make of a message kept whole (a session event with no handler,
        a client event but a tool result), its one ``UnknownEvent``, handed on without it. Any
        other message goes ``feed_message`` with what this decoded of it (the typed event; a
        client event's JSON values), decoded once.
        """
        if not self._started or self._state is not _OPEN:
            return None
        target = self._target  # (set by feed_message_into)
        if direction == "client":
            if target is not None and not target.keeps_passthrough:
                # Only counted: its type is all that is read (the audio it carries is not).
                kind = _client_kind(msg)
                if kind is not None:
                    target.count_passthrough(kind)
                    self._frames += 1
                    return True
            try:
                raw = msgspec.json.decode(msg)
            except _DECODE_FAULTS:
                return None  # a bad message: feed_message says why
            kept = _client_event(raw)
            if kept is None:
                return raw if type(raw) is dict else None  # (never ``True``)
        else:
            try:
                event: Any = message_decoder.decode(msg)
            except _DECODE_FAULTS:
                return None  # any other type, or a bad message: feed_message says which
            into = event.into
            text = event.delta
            if into is not None and text:
                if not self.fold_delta(
                    event.item_id or "", "call" if into == ARGS else event.content_index, text, into
                ):
                    return event
                self._frames += 1
                return True
            if event.type not in _KEPT:
                if event.type not in QUIET:
                    return event
                self._frames += 1
                return True
            if target is not None and target.count_passthrough(event.type):
                self._frames += 1
                return True  # only counted: not decoded whole
            kept = ev.UnknownEvent(provider_type=event.type, raw=msgspec.json.decode(msg), passthrough=True)
        self._frames += 1
        self._forget([kept])
        return True

    def _server_line(self, event: ServerEvent, line: bytes, out: list[ev.Event]) -> None:
        delta = _DELTAS.get(event.type)
        if delta is not None and self._started:
            delta(self, event, out)
            return
        if not self._started:
            self._start(event, out)
        if delta is not None:
            delta(self, event, out)
        else:
            self._server(event, WrappedLine(line), out)

    def on_message(self, msg: bytes | str, direction: str, decoded: Any = None) -> list[ev.Event]:
        out: list[ev.Event] = []
        event: Any = None
        if direction != "client":
            event = decoded
            if event is None:
                try:
                    event = message_decoder.decode(msg)
                except _DECODE_FAULTS:
                    event = server_decoder.decode(msg)  # any other type (or a bad message: this says why)
        if not self._started:
            self._start(event, out)
        if event is None:
            self._client(msgspec.json.decode(msg) if decoded is None else decoded, out)
        else:
            delta = _DELTAS.get(event.type)
            if delta is not None:
                delta(self, event, out)
            else:
                self._server(event, msg, out)
        return out

    def _start(self, event: ServerEvent | None, out: list[ev.Event]) -> None:
        # The session starts: say which protocol this is before any session event.
        self._started = True
        if event is not None and event.type == "session.created":
            model = (event.session or {}).get("model")
            self._model = model if isinstance(model, str) else None
        self._ensure_open(out, ours=True)

    def _server(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        """Every server event but the streamed deltas (``msg`` is its text, for a raw copy)."""
        if not event.type:
            raise RemoteProtocolError("a Realtime server event without a type")
        handler = _HANDLERS.get(event.type)
        if handler is None:
            # Session-level server events of known families carry no response content; they
            # are kept for a same-protocol re-encode and never fail a conversion closed.
            known = event.type.startswith(_SESSION_FAMILIES)
            out.append(ev.UnknownEvent(provider_type=event.type, raw=raw_message(msg), passthrough=known))
        else:
            handler(self, event, msg, out)

    # ------------------------------------------------------------------ responses

    def on_finish(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        for item_id, held in self._inputs.items():
            # Cut before .completed: keep what was transcribed, left open (incomplete).
            self._input_message(item_id, "".join(held), False, out)
        if self._open and self._ours and not self._inputs:
            self._close_response(out, only_ours=True)
        return out

    def _on_session(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        model = (event.session or {}).get("model")
        if isinstance(model, str):
            self._model = model
        out.append(ev.UnknownEvent(provider_type=event.type, raw=raw_message(msg), passthrough=True))

    def _on_created(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        response = event.response or {}
        raw = {
            k: v
            for k, v in response.items()
            if k not in ("id", "status", "status_details", "output", "usage")
        }
        self._open = True
        self._ours = False
        self._items = {}
        self._names = {}
        start = ev.ResponseStart(
            protocol=PROTOCOL, id=_string(response, "id") or None, model=self._model, provider_raw=raw
        )
        out.append(start)

    def _on_done(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        response = event.response or {}
        self._ensure_open(out, ours=True)
        status = _string(response, "status") or "completed"
        details = response.get("status_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        reason = reason if isinstance(reason, str) else None
        output = response.get("output")
        for item in output if isinstance(output, list) else []:
            if not isinstance(item, dict):
                continue
            item_id = _string(item, "id")
            if item_id not in self._items:
                self._item_start(item, out)
                self._item_done(item, out)
            elif item.get("status") == "incomplete":
                # The authority on item status: a call cut by a cancellation is not completed,
                # even if its own events closed it.
                out.append(ev.Cancelled(message=item_id, reason=reason or status))
        usage = usage_from(response.get("usage"))
        if usage is not None:
            out.append(ev.UsageUpdate(usage=usage))
        mapped, finish = finish_from(status, reason)
        if mapped == "failed":
            error = details.get("error") if isinstance(details, dict) else None
            failed = error or {"type": "failed", "message": "response failed"}
            out.append(ev.StreamErrorEvent(error=error_from(failed)))
        self._open = False
        self._ours = False
        self._items = {}
        self._names = {}
        out.append(
            ev.ResponseDone(status=mapped, finish_reason=finish, provider_finish_reason=reason or status)
        )

    def _on_error(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        # "Most errors are recoverable and the session will stay open" (the SDK's
        # RealtimeErrorEvent): a response that fails says so in its own response.done, and a
        # session that ends closes the websocket. An error event fails nothing by itself.
        out.append(ev.StreamErrorEvent(error=error_from(event.error), recoverable=True))

    # ------------------------------------------------------------------ items

    def _on_item_added(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        if event.item is None:
            raise RemoteProtocolError("response.output_item.added without an item")
        self._ensure_open(out, ours=True)
        self._item_start(event.item, out)

    def _item_start(self, item: dict[str, Any], out: list[ev.Event]) -> None:
        item_id = _string(item, "id")
        self._items[item_id] = None
        kind = _string(item, "type")
        given = item.get("role")
        role = _ROLES.get(given, "assistant") if isinstance(given, str) else "assistant"
        out.append(ev.MessageStart(message=item_id, role=role, type=kind, id=item_id or None))
        if kind == "function_call":
            value = self._call(item, item_id)
            self._names[item_id] = value.name
            out.append(ev.PartStart(message=item_id, part="call", value=value))
        elif kind == "message":
            content = item.get("content")
            for i, c in enumerate(content if isinstance(content, list) else []):
                part = part_from_content(c)
                if part is not None:
                    out.append(ev.PartStart(message=item_id, part=i, value=part))

    def _call(self, item: dict[str, Any], item_id: str) -> ToolCallPart:
        call = call_from_item(item)
        if call is None:
            raise RemoteProtocolError(
                "a Realtime function_call's call_id, name and arguments must be strings"
            )
        return call if call.name else msgspec.structs.replace(call, name=self._names.get(item_id, ""))

    def _on_item_done(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        if event.item is None:
            raise RemoteProtocolError("response.output_item.done without an item")
        self._ensure_open(out, ours=True)
        if _string(event.item, "id") not in self._items:
            self._item_start(event.item, out)
        self._item_done(event.item, out)

    def _item_done(self, item: dict[str, Any], out: list[ev.Event]) -> None:
        item_id = _string(item, "id")
        kind = _string(item, "type")
        if kind == "function_call":
            out.append(ev.PartDone(message=item_id, part="call", value=self._call(item, item_id)))
        elif kind != "message":
            out.append(ev.UnknownEvent(provider_type=kind, raw=item, message=item_id, part="item"))
        incomplete = item.get("status") == "incomplete"
        out.append(ev.MessageDone(message=item_id, status="incomplete" if incomplete else None))

    def _on_part_added(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        part = part_from_content(event.part)
        if part is None:
            out.append(
                ev.UnknownEvent(provider_type="content_part", raw=event.part, message=event.item_id or "")
            )
            return
        out.append(ev.PartStart(message=event.item_id or "", part=event.content_index, value=part))

    def _on_part_done(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        out.append(ev.PartDone(message=event.item_id or "", part=event.content_index))

    def _on_text(self, event: ServerEvent, out: list[ev.Event]) -> None:
        if event.delta:
            out.append(ev.TextDelta(message=event.item_id or "", part=event.content_index, text=event.delta))

    def _on_audio(self, event: ServerEvent, out: list[ev.Event]) -> None:
        if event.delta:
            out.append(ev.AudioDelta(message=event.item_id or "", part=event.content_index, data=event.delta))

    def _on_transcript(self, event: ServerEvent, out: list[ev.Event]) -> None:
        if event.delta:
            key = event.item_id or ""
            out.append(ev.AudioDelta(message=key, part=event.content_index, transcript=event.delta))

    def _on_quiet(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        # The full text / transcript is repeated in content_part.done and response.done.
        return

    def _on_arguments(self, event: ServerEvent, out: list[ev.Event]) -> None:
        if event.delta:
            out.append(ev.ArgumentsDelta(message=event.item_id or "", part="call", delta=event.delta))

    def _on_arguments_done(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        item_id = event.item_id or ""
        value = ToolCallPart(
            id=event.call_id or "",
            name=event.name or self._names.get(item_id, ""),
            arguments=event.arguments or "",
            item_id=item_id or None,
        )
        out.append(ev.PartDone(message=item_id, part="call", value=value))

    # ------------------------------------------------------------------ input transcription

    def _on_input_delta(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        # Held until .completed: the transcription often outlives the response it started in,
        # and a message must not straddle two responses.
        if event.delta:
            self._inputs.setdefault(event.item_id or "", []).append(event.delta)

    def _on_input_done(self, event: ServerEvent, msg: Msg, out: list[ev.Event]) -> None:
        item_id = event.item_id or ""
        held = self._inputs.pop(item_id, [])
        transcript = event.transcript if event.transcript is not None else "".join(held)
        self._input_message(item_id, transcript, True, out)

    def _input_message(self, item_id: str, transcript: str, done: bool, out: list[ev.Event]) -> None:
        self._ensure_open(out, ours=True)
        key = ("input", item_id)
        out.append(ev.MessageStart(message=key, role="user", type="input_transcription", id=item_id or None))
        out.append(ev.PartStart(message=key, part=0, value=AudioPart(transcript=transcript)))
        if done:
            out += [ev.PartDone(message=key, part=0), ev.MessageDone(message=key)]
            self._close_response(out, only_ours=True)

    # ------------------------------------------------------------------ client events

    def _client(self, raw: Any, out: list[ev.Event]) -> None:
        """A client event's events (``raw``: its JSON values)."""
        kept = _client_event(raw)
        if kept is not None:
            out.append(kept)
            return
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise RemoteProtocolError("a Realtime client event must be an object with a type")
        self._function_output(raw["item"], out)

    def _function_output(self, item: dict[str, Any], out: list[ev.Event]) -> None:
        result = result_from_item(item)
        if result is None:
            raise RemoteProtocolError("a function_call_output's call_id must be a string")
        self._ensure_open(out, ours=True)
        key = ("tool", self._tools)
        self._tools += 1
        start = ev.MessageStart(
            message=key, role="tool", type="function_call_output", id=_string(item, "id") or None
        )
        out += [start, ev.PartStart(message=key, part=0, value=result), ev.PartDone(message=key, part=0)]
        out.append(ev.MessageDone(message=key))
        self._close_response(out, only_ours=True)


class _ItemHead(msgspec.Struct):
    type: Any = None


class _ClientHead(msgspec.Struct):
    """What :func:`_client_event` reads of a client event: its type, its item's type."""

    type: str
    item: _ItemHead | None = None


_client_head = msgspec.json.Decoder(_ClientHead)


def _client_kind(msg: bytes | str) -> str | None:
    """The pass-through type of a client event :func:`_client_event` keeps whole, read without decoding it whole.

    ``None``: anything else (a tool result, no type, an item that is not an object, bad JSON),
    for the path that decodes it whole to say what it is.
    """
    try:
        head = _client_head.decode(msg)
    except _DECODE_FAULTS:
        return None
    item = head.item
    if head.type == "conversation.item.create" and item is not None and item.type == "function_call_output":
        return None
    return f"client.{head.type}"


def _client_event(raw: Any) -> ev.UnknownEvent | None:
    """A client event kept whole (every one but a tool result); ``None``: a tool result, or no event."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if not isinstance(kind, str):
        return None
    if kind == "conversation.item.create":
        item = raw.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            return None
    return ev.UnknownEvent(provider_type=f"client.{kind}", raw=raw, passthrough=True)


# The dispatch tables: one per class (not a dict of bound methods per decoder, ~2 KiB a session).
_ON_DELTA: Final = {
    TEXT: StreamDecoder._on_text,
    AUDIO: StreamDecoder._on_audio,
    TRANSCRIPT: StreamDecoder._on_transcript,
    ARGS: StreamDecoder._on_arguments,
}
_DELTAS: Final[dict[str, Callable[[StreamDecoder, ServerEvent, list[ev.Event]], None]]] = {
    name: _ON_DELTA[into] for name, into in DELTAS.items()
}
"""The streamed deltas (nearly every event of a session): they need nothing but the typed event."""
_HANDLERS: Final[dict[str, Callable[[StreamDecoder, ServerEvent, Msg, list[ev.Event]], None]]] = {
    **dict.fromkeys(QUIET, StreamDecoder._on_quiet),
    "response.function_call_arguments.done": StreamDecoder._on_arguments_done,
    "response.content_part.added": StreamDecoder._on_part_added,
    "response.content_part.done": StreamDecoder._on_part_done,
    "response.output_item.added": StreamDecoder._on_item_added,
    "response.output_item.done": StreamDecoder._on_item_done,
    "response.created": StreamDecoder._on_created,
    "response.done": StreamDecoder._on_done,
    "conversation.item.input_audio_transcription.delta": StreamDecoder._on_input_delta,
    "conversation.item.input_audio_transcription.completed": StreamDecoder._on_input_done,
    "session.created": StreamDecoder._on_session,
    "session.updated": StreamDecoder._on_session,
    "error": StreamDecoder._on_error,
}
"""Every other server event the decoder reads, by type (the rest are kept whole)."""
_KEPT: Final = frozenset(
    name for name in _NAMED if name not in _HANDLERS and name.startswith(_SESSION_FAMILIES)
)
"""The session events typed (``_wire``) that are kept whole: one ``UnknownEvent`` each, no state."""
