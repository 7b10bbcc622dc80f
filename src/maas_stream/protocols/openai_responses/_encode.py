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
at once; nothing is held. The items, usage, status and error are written with the mapping the
body encoder uses (``_items_write``, ``_meta``), so a stream and a body of the same response agree.

This module owns the decisions (which item a part goes to, when an item ends, the terminal
event); the writing of each part is ``_writers``', the framing ``_output``'s. What Responses
cannot carry is dropped and recorded in :attr:`StreamEncoder.drops`, never turned into text:
reasoning of other protocols (Responses replays only its own, see ``protocols/_replay.py``),
signatures, server-side and MCP calls of other protocols, images, files, code, unknown parts
and frames of other protocols, other choices and non-assistant messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from ... import events
from ..._accumulate import FRAGMENTS, compact
from ..._drops import DropLog
from ..._exceptions import LocalProtocolError
from ..._holders import EMPTY, writable
from ..._model import AudioPart, ReasoningPart, ToolCallPart
from .._base import EventEncoder
from .._names import OPENAI_RESPONSES as PROTOCOL
from .._replay import replayable
from ._items import REBUILT_TYPES
from ._items_write import (
    call_item,
    content_json,
    dropped_signature,
    message_item,
    output_route,
    reasoning_item,
    whole_item_body,
)
from ._meta import (
    error_json,
    flat_error,
    incomplete_details,
    response_fields,
    response_object,
    usage_json,
)
from ._output import NO_CONTENT, REBUILT, Item, Output, WholeItem, members
from ._text_writer import ContinuedTextWriter, SharedTextWriter, TextWriter
from ._writers import (
    AUDIO_DELTA,
    TRANSCRIPT_DELTA,
    AudioWriter,
    CallWriter,
    DropWriter,
    PartWriter,
    ReasoningWriter,
    whole_part_writer,
)

if TYPE_CHECKING:
    from ..._model import FinishReason, Part, Usage
    from .._base import PartStates

__all__ = ["StreamEncoder"]

_json: Final = msgspec.json.Encoder().encode

_ASSISTANT = ("assistant", "model")
_NO_SKIP: Final[set[int]] = set()
"""The skipped messages of every encoder that skipped none (never added to)."""


_NOTHING: Final = PartWriter(Output(), None)
"""The writer of a part never started: it writes nothing (one for every encoder)."""

_FRESH: Final = 0
_STARTED: Final = 1
_ENDED: Final = 2


class _Rare:
    """The encoder's state that few streams have, made at its first use (one slot when idle)."""

    __slots__ = ("base", "drops", "meta", "whole")

    def __init__(self) -> None:
        self.drops: DropLog | None = None
        """Made at the first drop: most streams drop nothing."""
        self.base: dict[str, Any] | None = None
        """A Responses source's response fields."""
        self.meta: dict[int, events.MessageStart] = EMPTY
        self.whole: dict[int, Item] = EMPTY


class StreamEncoder(EventEncoder):
    """Encode canonical events as an OpenAI Responses SSE stream.

    Args:
        response_id: The response ``id``; defaults to the source response's id.
        model: The response ``model``; defaults to the source response's model.
    """

    __slots__ = (
        "_finish",
        "_hot",
        "_hot_kept",
        "_hot_message",
        "_hot_part",
        "_id",
        "_model",
        "_out",
        "_parts",
        "_phase",
        "_rare",
        "_skip",
        "_source",
        "_text_item",
        "_texts",
        "_usage",
    )

    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, response_id: str | None = None, model: str | None = None) -> None:
        self._source: str | None = None
        self._id = response_id
        self._model = model
        self._rare: _Rare | None = None
        """What few streams have (a drop, a Responses source's fields and items, a message's
        phase): made at its first use."""
        self._out = Output()
        self._phase = _FRESH
        """Whether the output started (:data:`_STARTED`) or ended (:data:`_ENDED`)."""
        # One message of one part in most streams: held bare.
        self._text_item: Item | dict[int, Item] | None = None
        """Each message's open text item (see :meth:`_text_of`): the first held bare (most
        streams have one), a dict by message once another message has one."""
        self._parts: dict[tuple[Any, Any], PartWriter] = EMPTY
        """The writers of the parts started, but the hot one's when it has not been stored (most
        streams write one part: it is never stored, see :meth:`_store_hot`)."""
        # The writer of the part the last delta went to (most deltas go where the last one went).
        self._hot: PartWriter = _NOTHING
        self._hot_message: Any = None
        self._hot_part: Any = None
        self._hot_kept = True
        """The hot writer is in :attr:`_parts` (or is none): parts taking turns store nothing again."""
        self._skip: set[int] = _NO_SKIP  # (a set of its own once a message is skipped)
        self._usage: Usage | None = None
        self._finish: tuple[FinishReason, str | None] | None = None
        self._texts: PartStates | None = None
        """Where a converter's aggregator keeps the parts' text (:meth:`read_text_from`)."""

    # ------------------------------------------------------------------ API

    @property
    def drops(self) -> DropLog:
        """What Responses could not carry and was dropped, as records."""
        rare = self._rare_state()
        drops = rare.drops
        if drops is None:
            drops = rare.drops = DropLog(PROTOCOL, self._source)
        return drops

    @drops.setter
    def drops(self, value: DropLog) -> None:
        self._rare_state().drops = value

    def dropped(self) -> int:
        """How many distinct drop records there are (no log is made for none)."""
        rare = self._rare
        return len(rare.drops) if rare is not None and rare.drops is not None else 0

    def read_text_from(self, parts: PartStates) -> None:
        """A text part's writer reads its text from ``parts`` (:class:`SharedTextWriter`)."""
        self._texts = parts

    def _rare_state(self) -> _Rare:
        rare = self._rare
        if rare is None:
            rare = self._rare = _Rare()
        return rare

    @property
    def _same(self) -> bool:
        """The source is Responses: its items are kept whole."""
        return self._source == PROTOCOL

    @property
    def _meta(self) -> dict[int, events.MessageStart]:
        """The starts that carry a phase or provider fields (most carry neither)."""
        rare = self._rare
        return EMPTY if rare is None else rare.meta

    @property
    def _whole(self) -> dict[int, Item]:
        """A Responses source's items kept whole, by message."""
        rare = self._rare
        return EMPTY if rare is None else rare.whole

    def encode(self, event: events.Event) -> bytes:
        """Encode one canonical event; return the frames it completes (maybe ``b""``)."""
        phase = self._phase
        if phase == _ENDED:
            return b""
        if self._skip and getattr(event, "message", None) in self._skip:
            return b""  # another choice, or a message that is not the model's: reported once
        if phase == _STARTED:
            return self._TABLE[type(event)](self, event)  # (inlined _route: the hot path)
        head = b"" if isinstance(event, events.ResponseStart) else self._start()
        return head + self._TABLE[type(event)](self, event)

    def finish(self) -> bytes:
        """End the output. A source that was cut stays cut: no terminal event is invented."""
        self._phase = _ENDED
        return b""

    # ------------------------------------------------------------------ the response

    def _response(self, status: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
        return response_object(self._id, self._model, self._base(), status, self._out.output(), usage)

    def _base(self) -> dict[str, Any] | None:
        rare = self._rare
        return None if rare is None else rare.base

    def _start(self) -> bytes:
        self._phase = _STARTED
        created = response_object(self._id, self._model, self._base(), "in_progress", [])
        self._id = created["id"]  # the SDK rejects a response whose id changes mid-stream
        return self._out.frame("response.created", {"response": created}) + self._out.frame(
            "response.in_progress", {"response": self._response("in_progress")}
        )

    def _on_response_start(self, ev: events.ResponseStart) -> bytes:
        self._source = ev.protocol
        rare = self._rare
        if rare is not None and rare.drops is not None:
            rare.drops.source = ev.protocol
        self._id = self._id or ev.id
        self._model = self._model or ev.model
        if self._same:
            self._rare_state().base = response_fields(ev.provider_raw)
        return self._start() if self._phase == _FRESH else b""

    def _on_usage(self, ev: events.UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: events.ResponseDone) -> bytes:
        frames = self._close_all()
        finish, provider = (ev.finish_reason, ev.provider_finish_reason)
        if finish is None and self._finish is not None:
            finish, provider = self._finish  # a per-choice finish (Chat, Gemini)
        status = ev.status
        if status not in ("failed", "incomplete"):
            status = (
                "incomplete" if status is None and finish in ("length", "content_filter") else "completed"
            )
        response = self._response(status, usage_json(self._usage, same=self._same))
        if status == "incomplete":
            response["incomplete_details"] = incomplete_details(
                finish, provider, same=self._same, drops=self.drops
            )
        self._phase = _ENDED
        return frames + self._out.frame(f"response.{status}", {"response": response})

    def _on_error(self, ev: events.StreamErrorEvent) -> bytes:
        error = ev.error
        frames = self._close_all("incomplete")
        raw = error.raw
        if self._same and isinstance(raw, dict) and raw.get("type") == "error":
            frames += self._out.raw_frame(raw)  # the source's own error event, flat or nested
        else:
            frames += self._out.frame("error", flat_error(error))
        response = self._response("failed", usage_json(self._usage, same=self._same))
        response["error"] = error_json(error)  # the code may change here: the error event keeps it
        self._phase = _ENDED
        return frames + self._out.frame("response.failed", {"response": response})

    def _on_unknown(self, ev: events.UnknownEvent) -> bytes:
        if self._same and ev.message is None and isinstance(ev.raw, dict):
            return self._out.raw_frame(ev.raw)  # a Responses event of a type we do not know, verbatim
        if ev.message is None:
            self.drops.add("unknown", f"unknown {ev.provider_type!r} frame of another protocol")
        return b""

    # ------------------------------------------------------------------ messages

    def _on_message_start(self, ev: events.MessageStart) -> bytes:
        assert isinstance(ev.message, int)
        if ev.choice_index:
            return self._skip_message(
                ev.message, "choices after the first (a Responses response carries one)"
            )
        if ev.phase is not None or ev.provider_raw is not None:
            rare = self._rare_state()
            rare.meta = writable(rare.meta)
            rare.meta[ev.message] = ev
        if self._same and ev.type == "message":
            item = self._set_text(Item(-1, "message", ev.id, ev.message))
            return self._out.open(
                item, message_item(ev.id, "in_progress", NO_CONTENT, phase=ev.phase, extras=ev.provider_raw)
            )
        if self._same and ev.type is not None:
            rare = self._rare_state()
            rare.whole = writable(rare.whole)
            item = rare.whole[ev.message] = WholeItem(-1, ev.type, ev.id)
            if ev.type not in REBUILT_TYPES:
                # A hosted tool or an unknown item: its raw item is all there is; send it as is.
                return self._out.open(item, ev.provider_raw if isinstance(ev.provider_raw, dict) else {})
            return b""
        if ev.role not in _ASSISTANT:
            return self._skip_message(
                ev.message, f"{ev.role} message in the output (Responses outputs are the model's)"
            )
        return b""

    def _skip_message(self, message: int, what: str) -> bytes:
        if self._skip is _NO_SKIP:
            self._skip = set()
        self._skip.add(message)  # its later events are not routed
        self.drops.add("message", what, where=f"messages[{message}]")
        return b""

    def _on_message_done(self, ev: events.MessageDone) -> bytes:
        assert isinstance(ev.message, int)
        if ev.finish_reason is not None and self._finish is None:
            self._finish = (ev.finish_reason, ev.provider_finish_reason)
        value = ev.value
        status = ev.status or (value.status if value is not None else None)
        whole = self._whole.get(ev.message)
        if whole is not None:
            if whole.done:
                return b""
            frames = self._out.open(whole, {}) if whole.index < 0 else b""
            return frames + self._out.close(whole, whole_item_body(whole, value, status))
        item = self._text_of(ev.message)
        if item is None or item.done:
            return b""
        body = self._message_body(ev.message, item, status)
        if value is not None and self._same:
            if isinstance(value.provider_raw, dict):
                body = {**value.provider_raw, **body}
            if isinstance(value.content, list):
                # The item's final content (output_item.done) wins over what the parts sent.
                body["content"] = [c for c in map(content_json, value.content) if c is not None]
        return self._out.close(item, body)

    def _message_body(self, message: int, item: Item, status: str | None) -> dict[str, Any]:
        meta = self._meta.get(message)
        content = [
            c for c in members(item.content) if isinstance(c, dict)
        ]  # (not the writer of a part still open)
        phase = meta.phase if meta is not None else None
        extras = None if item.body is REBUILT else item.body
        return message_item(item.id, status or "completed", content, phase=phase, extras=extras)

    def _text_of(self, message: int) -> Item | None:
        """The open (or last) text item of ``message``, if it has one."""
        held = self._text_item
        if isinstance(held, dict):
            return held.get(message)
        return held if held is not None and held.message == message else None

    def _set_text(self, item: Item) -> Item:
        """Make ``item`` its message's text item (in place of one that ended)."""
        held = self._text_item
        if isinstance(held, dict):
            held[item.message] = item
        elif held is None or held.message == item.message:
            self._text_item = item
        else:
            self._text_item = {held.message: held, item.message: item}
        return item

    def _close_text_item(self, message: int, status: str = "completed") -> bytes:
        """End a message's open ``message`` item.

        Another protocol's message goes on with a call (the text before it is complete), or the
        response ends (``incomplete`` on an error).
        """
        item = self._text_of(message)
        if item is None or item.done:
            return b""
        frames = b""
        for writer in [c for c in members(item.content) if isinstance(c, TextWriter)]:
            # A part still open (it holds its writer) ends here, with what was sent, so the
            # message item can end.
            text = self._shared_text(writer) if type(writer) is SharedTextWriter else None
            frames += writer.done(writer.sent_value(text), self)
        return frames + self._out.close(item, self._message_body(message, item, status))

    def _shared_text(self, writer: SharedTextWriter) -> str:
        """What a :class:`SharedTextWriter` wrote, read from the aggregator's part (a rare path)."""
        texts = self._texts
        assert texts is not None
        keys = [key for key, found in self._parts.items() if found is writer]
        if writer is self._hot:
            keys.append((self._hot_message, self._hot_part))
        state = texts.part_state(*keys[0]) if keys else None
        if state is None:
            raise LocalProtocolError("a shared text part is not in the aggregator that feeds the encoder")
        return writer.read_from(state)

    def _close_all(self, status: str = "completed") -> bytes:
        held = self._text_item
        messages = list(held) if isinstance(held, dict) else [] if held is None else [held.message]
        return b"".join([self._close_text_item(message, status) for message in messages])

    # ------------------------------------------------------------------ parts

    def _on_part_start(self, ev: events.PartStart) -> bytes:
        assert isinstance(ev.message, int)
        assert isinstance(ev.part, int)
        whole = self._whole.get(ev.message)
        if whole is not None:
            meta = self._meta.get(ev.message)
            extras = meta.provider_raw if meta is not None else None
            writer, frames = whole_part_writer(
                self._out, whole, ev.value, extras, replay=replayable(self._source, PROTOCOL)
            )
        else:
            writer, frames = self._new_part(ev.message, ev.value)
        self._set_writer(ev.message, ev.part, writer)
        return frames

    def _new_part(self, message: int, value: Part) -> tuple[PartWriter, bytes]:
        """The writer of a part of a message split into items (another protocol's, mostly)."""
        if isinstance(value, AudioPart):
            return AudioWriter(self._out, None), b""
        route = output_route(value, replay=replayable(self._source, PROTOCOL))
        if route == "text" or route == "refusal":
            return self._text_part(message, refusal=route == "refusal", shared=self._texts is not None)
        if isinstance(value, ToolCallPart) and route == "call":
            frames = self._close_text_item(message)
            added = call_item(value, "in_progress")
            added["input" if value.kind == "custom" else "arguments"] = ""
            item = Item(-1, added["type"], value.item_id)
            frames += self._out.open(item, added)
            return CallWriter(self._out, item, own=True), frames
        if isinstance(value, ReasoningPart) and route == "reasoning":
            frames = self._close_text_item(message)
            item = Item(-1, "reasoning", value.id)
            frames += self._out.open(item, reasoning_item(value, "in_progress"))
            writer = ReasoningWriter(self._out, item, own=True)
            return writer, frames + writer.start(value)
        return DropWriter(self._out, self.drops, value, where=f"messages[{message}]"), b""

    def _text_part(
        self, message: int, *, refusal: bool, continued: bool = False, shared: bool = False
    ) -> tuple[TextWriter, bytes]:
        frames = b""
        item = self._text_of(message)
        if item is None or item.done:
            meta = self._meta.get(message)
            item = self._set_text(Item(-1, "message", None, message))
            phase = meta.phase if meta is not None else None
            frames = self._out.open(item, message_item(None, "in_progress", NO_CONTENT, phase=phase))
            if phase is None:
                item.body = REBUILT  # (what it says is its id and type: rebuilt when read)
        kind = SharedTextWriter if shared else ContinuedTextWriter if continued else TextWriter
        writer = kind(self._out, item, refusal)
        return writer, frames + writer.open()

    def _set_writer(self, message: int, part: int, writer: PartWriter) -> None:
        if message != self._hot_message or part != self._hot_part:
            self._store_hot()
        self._hot, self._hot_message, self._hot_part = writer, message, part
        self._hot_kept = False

    def _store_hot(self) -> None:
        """Keep the hot writer in :attr:`_parts` before another part's takes its place."""
        if self._hot_kept:
            return  # (it came from _parts: parts taking turns, audio and its transcript say)
        self._hot_kept = True
        hot = self._hot
        if hot is not _NOTHING:
            key = (self._hot_message, self._hot_part)
            if self._parts.get(key) is not hot:
                self._parts = writable(self._parts)
                self._parts[key] = hot

    def _writer(self, ev: Any) -> PartWriter:
        """The writer of the event's part (one that writes nothing for a part never started)."""
        if ev.part == self._hot_part and ev.message == self._hot_message:
            return self._hot
        if not self._hot_kept:  # (the check of _store_hot inlined: parts taking turns)
            self._store_hot()
        writer = self._parts.get((ev.message, ev.part)) or _NOTHING
        self._hot, self._hot_message, self._hot_part = writer, ev.message, ev.part
        return writer  # (kept: it is _parts' own)

    def _on_text(self, ev: events.TextDelta | events.RefusalDelta) -> bytes:
        # (_writer inlined: the hot path)
        writer = (
            self._hot if ev.part == self._hot_part and ev.message == self._hot_message else self._writer(ev)
        )
        frames = writer.frames
        kind = type(writer)
        if (kind is SharedTextWriter or kind is TextWriter) and frames is not None:
            text_writer: TextWriter = writer  # type: ignore[assignment]  # (no cast call: the hot path)
            if text_writer.rare is None and not text_writer.closed:
                # (TextWriter.text of a delta of the part's one shape inlined: the hot path)
                text = ev.text
                sent = text_writer.sent
                if kind is SharedTextWriter:  # (its text is the aggregator's: it counts what it wrote)
                    text_writer.sent = sent + len(text)  # type: ignore[operator]
                elif isinstance(sent, list):  # (as TextWriter.text joins them, add_fragment inlined)
                    sent.append(text)
                    if len(sent) >= FRAGMENTS:
                        compact(sent)
                elif sent:
                    text_writer.sent = [sent, text]
                else:
                    text_writer.sent = text
                out = self._out  # (Output.fill inlined)
                seq = out.seq
                out.seq = seq + 1
                return b"".join((frames[0], _json(text), frames[1], b"%d" % seq, frames[2]))
        if not writer.closed:
            return writer.text(ev.text)
        # The part goes on after its message item ended (a call came between): the rest is
        # a new content part in a new message item, so no text is lost.
        assert isinstance(ev.message, int)
        assert isinstance(writer, TextWriter)
        assert isinstance(ev.part, int)
        writer, added = self._text_part(ev.message, refusal=writer.kind == "refusal", continued=True)
        self._set_writer(ev.message, ev.part, writer)
        return added + writer.text(ev.text)

    _on_refusal = _on_text

    def _on_logprobs(self, ev: events.LogprobsDelta) -> bytes:
        return self._writer(ev).logprobs(ev.logprobs)

    def _on_annotation(self, ev: events.AnnotationAdded) -> bytes:
        return self._writer(ev).annotation(ev.citation)

    def _on_summary(self, ev: events.SummaryDelta) -> bytes:
        return self._writer(ev).summary(ev.index, ev.text)

    def _on_reasoning(self, ev: events.ReasoningDelta) -> bytes:
        # (_writer inlined: the hot path)
        writer = (
            self._hot if ev.part == self._hot_part and ev.message == self._hot_message else self._writer(ev)
        )
        return writer.reasoning(ev.text) if ev.text else b""

    def _on_signature(self, ev: events.SignatureDelta) -> bytes:
        return self._writer(ev).signature()

    def _on_arguments(self, ev: events.ArgumentsDelta) -> bytes:
        # (_writer inlined: the hot path of a call)
        writer = (
            self._hot if ev.part == self._hot_part and ev.message == self._hot_message else self._writer(ev)
        )
        return writer.args(ev.delta)

    def _on_audio(self, ev: events.AudioDelta) -> bytes:
        # (_writer inlined: the hot path of a spoken response)
        writer = (
            self._hot if ev.part == self._hot_part and ev.message == self._hot_message else self._writer(ev)
        )
        if type(writer) is not AudioWriter:
            return writer.audio(ev.data, ev.transcript)
        # (AudioWriter.audio and Output.fill inlined: one piece of audio or of its transcript)
        data, transcript = ev.data, ev.transcript
        if data and transcript:
            return writer.audio(data, transcript)
        frames = AUDIO_DELTA if data else TRANSCRIPT_DELTA if transcript else None
        if frames is None:
            return b""
        out = self._out
        seq = out.seq
        out.seq = seq + 1
        return b"".join((frames[0], _json(data or transcript), frames[1], b"%d" % seq, frames[2]))

    def _on_part_done(self, ev: events.PartDone) -> bytes:
        writer = self._writer(ev)
        if writer is _NOTHING or ev.value is None:
            return b""
        if not isinstance(writer, DropWriter):
            what = dropped_signature(ev.value)  # (the log is made at the first drop)
            if what is not None:
                self.drops.add("signature", what, where=f"messages[{ev.message}]")
        return writer.done(ev.value, self)
