"""OpenAI Realtime encoder: canonical events → Realtime server events as ``{"dir", "msg"}`` lines.

GA event names throughout. A response's ``response.created`` goes out with its first output (so
a source response holding only client-side messages emits nothing); each canonical message's
text and audio parts form one ``message`` output item (``content_part.added`` →
``output_text`` / ``output_audio`` and ``output_audio_transcript`` deltas → ``*.done`` →
``content_part.done``), each function call its own ``function_call`` item with argument deltas;
``response.done`` carries the output items (without audio data, as the server sends them), each
with its status (``incomplete`` for a cut or cancelled item), the response status with its
``status_details`` and the usage. Input transcriptions (``user`` messages of type
``input_transcription``) go out as ``conversation.item.input_audio_transcription`` events; tool
results as the client's ``conversation.item.create`` of a ``function_call_output`` (``dir:
"client"``). Realtime session and client events kept by the Realtime decoder pass through.

Content is written from the deltas only (the aggregator sends every value as deltas before a
part's ``PartDone``). In a converter (:meth:`StreamEncoder.read_text_from`) a text part's text is
read at its end from the aggregator that feeds the encoder, which keeps it anyway: the encoder
counts what it wrote rather than keeping a second copy. This module maps canonical messages and parts to output items; the events
themselves are written by ``_writer`` and the item shapes come from ``_items``.

Dropped and reported as records (:attr:`StreamEncoder.lossy`): reasoning and signatures, server
and MCP tool calls, refusals, citations, images, files, code, user and system input, and frames
of other protocols. It must not decide cross-protocol rules or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ... import events
from ..._emit import written_text
from ..._exceptions import LocalProtocolError
from ..._model import AudioPart, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from .._names import OPENAI_REALTIME as PROTOCOL
from .._session import SessionEncoder
from ._writer import Item, ResponseWriter

if TYPE_CHECKING:
    from ..._model import Part, StreamError
    from .._base import PartStates

__all__ = ["StreamEncoder"]

_Key = tuple[Any, Any]


class StreamEncoder(SessionEncoder):
    """Encode canonical events as an OpenAI Realtime session (server events, JSON lines)."""

    _ROUTES: ClassVar[dict[type[Any], str]] = {
        events.ReasoningDelta: "_on_reasoning_lost",
        events.SummaryDelta: "_on_reasoning_lost",
    }
    protocol: ClassVar[str] = PROTOCOL
    title: ClassVar[str] = "Realtime"

    def __init__(self) -> None:
        super().__init__()
        self._w = ResponseWriter()
        self._pending: events.ResponseStart | None = None
        self._ids: dict[Any, str] = {}
        """Item ids by canonical message: the source's own (Realtime) or synthesized (inputs)."""
        self._messages: dict[Any, Item] = {}
        """The open ``message`` item of each canonical message."""
        self._parts: dict[_Key, tuple[Item, int, str]] = {}
        """Open content parts: their item, content index and kind."""
        self._calls: dict[_Key, Item] = {}
        self._inputs: dict[_Key, list[str]] = {}
        self._whole: set[_Key] = set()
        self._reopen: dict[_Key, str] = {}
        self._owners: dict[Any, dict[Any, Item]] = {}
        """Every item of the open response, by canonical message and part (for cancellations)."""
        self._assistant = False
        """Whether the current response has a model message (even one whose content is dropped)."""
        self._fatal: StreamError | None = None
        """The error that ended the source (not a recoverable one), for the open response's end."""
        self._texts: PartStates | None = None
        """Where a converter's aggregator keeps the parts' text (:meth:`read_text_from`)."""

    def read_text_from(self, parts: PartStates) -> None:
        """A text part's text is read at its end from ``parts`` (:attr:`Item.written`), not kept."""
        self._texts = parts

    # ------------------------------------------------------------------ messages

    def _on_response_start(self, ev: events.ResponseStart) -> bytes:
        super()._on_response_start(ev)
        if self._w.response is None:
            self._pending = ev
        return b""

    def _on_message_start(self, ev: events.MessageStart) -> bytes:
        super()._on_message_start(ev)
        if ev.role in ("assistant", "model"):
            self._assistant = True
        if ev.id and self._same:
            self._ids[ev.message] = ev.id
        return b""

    def _input_id(self, message: Any) -> str:
        found = self._ids.get(message)
        if found is None:
            found = self._ids[message] = self._w.synth("item")
        return found

    def _own(self, key: _Key, item: Item) -> None:
        self._owners.setdefault(key[0], {})[key[1]] = item

    # ------------------------------------------------------------------ parts

    def _on_part_start(self, ev: events.PartStart) -> bytes:
        key = (ev.message, ev.part)
        role = self._roles.get(ev.message, "assistant")
        value = ev.value
        if role in ("user", "tool"):
            return self._input_part(key, role, value)
        if isinstance(value, TextPart | AudioPart):
            return self._content_start(key, value, shared=self._texts is not None)
        if isinstance(value, ToolCallPart):
            return self._call_start(key, value)
        if isinstance(value, UnknownPart) and self._same:
            self._whole.add(key)
        elif role in ("assistant", "model"):
            self._lose_part(value)
        return b""

    def _input_part(self, key: _Key, role: str, value: Part) -> bytes:
        if role == "user" and isinstance(value, AudioPart):
            self._inputs[key] = [value.transcript] if value.transcript else []
        elif role == "tool" and isinstance(value, ToolResultPart):
            self._whole.add(key)
        elif role == "tool":
            self._lose_part(value)
        return b""

    def _call_start(self, key: _Key, value: ToolCallPart) -> bytes:
        if value.kind not in ("function", "custom"):
            self._lose("server_call", f"{value.kind} tool call {value.name!r} (no Realtime form)")
            return b""
        # A call is an item of its own; text after it belongs to a new message item, so the
        # order of the output is kept.
        out = self._on_message_done(events.MessageDone(message=key[0]))
        item_id = value.item_id if self._same and value.item_id else self._w.synth("item")
        item, added = self._w.add("function_call", item_id, self._pending, value)
        self._calls[key] = item
        self._own(key, item)
        return out + added

    def _content_start(self, key: _Key, value: TextPart | AudioPart, *, shared: bool = False) -> bytes:
        out = b""
        item = self._messages.get(key[0])
        if item is None or item.done:
            item, out = self._w.add("message", self._ids.get(key[0]) or self._w.synth("item"), self._pending)
            self._messages[key[0]] = item
        kind = "text" if isinstance(value, TextPart) else "audio"
        index, added = self._w.content(item, kind, shared=shared)
        self._parts[key] = (item, index, kind)
        self._own(key, item)
        out += added
        if isinstance(value, AudioPart) and (value.data or value.transcript):
            out += self._w.audio(item, index, value.data, value.transcript)  # audio is not streamed as text
        return out

    def _reopened(self, key: _Key) -> tuple[bytes, tuple[Item, int, str] | None]:
        """A part closed early (its item ended at a call) that goes on: a new message item.

        Its rest keeps its own text (it ends with what it wrote, not the whole part's).
        """
        kind = self._reopen.pop(key, None)
        if kind is None:
            return b"", None
        out = self._content_start(key, TextPart(text="") if kind == "text" else AudioPart())
        return out, self._parts.get(key)

    def _open_part(self, key: _Key, kind: str) -> tuple[bytes, tuple[Item, int, str] | None]:
        head = b""
        found = self._parts.get(key)
        if found is None:
            head, found = self._reopened(key)
        return head, found if found is not None and found[2] == kind else None

    def _on_text(self, ev: events.TextDelta) -> bytes:
        found = self._parts.get((ev.message, ev.part))
        if found is not None and found[2] == "text":
            return self._w.text(found[0], found[1], ev.text)  # the common case: an open part
        head, found = self._open_part((ev.message, ev.part), "text")
        return head + (self._w.text(found[0], found[1], ev.text) if found is not None else b"")

    def _on_audio(self, ev: events.AudioDelta) -> bytes:
        key = (ev.message, ev.part)
        found = self._parts.get(key)
        if found is not None and found[2] == "audio":
            # The common case: an open output part (input parts are never in ``_parts``).
            return self._w.audio(found[0], found[1], ev.data, ev.transcript)
        inputs = self._inputs.get(key)
        if inputs is not None:
            if not ev.transcript:
                return b""
            inputs.append(ev.transcript)
            return self._w.input_delta(self._input_id(ev.message), ev.transcript)
        head, found = self._open_part(key, "audio")
        return head + (
            self._w.audio(found[0], found[1], ev.data, ev.transcript) if found is not None else b""
        )

    def _on_arguments(self, ev: events.ArgumentsDelta) -> bytes:
        item = self._calls.get((ev.message, ev.part))
        return self._w.arguments(item, ev.delta) if item is not None else b""

    def _on_reasoning_lost(self, ev: events.ReasoningDelta | events.SummaryDelta) -> bytes:
        self._lose("reasoning", "a reasoning part (no Realtime form)")
        return b""

    def _on_signature(self, ev: events.SignatureDelta) -> bytes:
        self._lose("signature", "signatures (no Realtime form)")
        return b""

    def _on_part_done(self, ev: events.PartDone) -> bytes:
        key = (ev.message, ev.part)
        value = ev.value
        if key in self._inputs:
            transcript = "".join(self._inputs.pop(key))
            return self._w.input_done(self._input_id(ev.message), transcript)
        if key in self._whole:
            self._whole.discard(key)
            if isinstance(value, ToolResultPart):
                return self._w.function_output(value)
            if isinstance(value, UnknownPart) and isinstance(value.raw, dict):
                return self._w.raw(value.raw, self._pending)
            return b""
        call = self._calls.pop(key, None)
        if call is not None:
            cut = isinstance(value, ToolCallPart) and value.status == "incomplete"
            return self._w.call_done(call, "incomplete" if cut else "completed")
        self._reopen.pop(key, None)
        found = self._parts.pop(key, None)
        return self._content_done(key, found, value) if found is not None else b""

    def _content_done(self, key: _Key, found: tuple[Item, int, str], done: Part | None = None) -> bytes:
        """A content part's end (``done``: its final value, if the source ended it)."""
        item, index, kind = found
        written = item.written
        count = written.pop(index, None) if written is not None else None
        if count is None:
            return self._w.content_done(item, index, kind)  # its text is its own
        state = self._texts.part_state(*key) if self._texts is not None else None
        if state is None:
            raise LocalProtocolError("a shared text part is not in the aggregator that feeds the encoder")
        return self._w.content_done(item, index, kind, written_text(state, count, done))

    def _on_message_done(self, ev: events.MessageDone) -> bytes:
        item = self._messages.pop(ev.message, None)
        if item is None or item.done:
            return b""
        # Content parts still open (a call started before the source closed them) end first:
        # Realtime closes a part before its item. Later deltas for them start a new item.
        out = b""
        for key, found in list(self._parts.items()):
            if found[0] is item:
                del self._parts[key]
                self._reopen[key] = found[2]
                out += self._content_done(key, found)
        return out + self._w.item_done(item, "incomplete" if ev.status == "incomplete" else "completed")

    def _on_cancelled(self, ev: events.Cancelled) -> bytes:
        owned = self._owners.get(ev.message, {})
        for part, item in owned.items():
            if ev.part is None or part == ev.part:
                item.status = "incomplete"  # response.done lists it so
        return b""

    # ------------------------------------------------------------------ responses

    def _on_response_done(self, ev: events.ResponseDone) -> bytes:
        pending = self._pending
        real = self._assistant or (pending is not None and pending.protocol == PROTOCOL and bool(pending.id))
        self._assistant = False
        if self._w.response is None and not real:
            # Only client-side messages (tool results, input transcripts): no model response.
            self._pending = None
            return b""
        out = self._w.open(pending)
        cut = ev.status in ("incomplete", "failed")
        for message in list(self._messages):
            out += self._on_message_done(
                events.MessageDone(message=message, status="incomplete" if cut else None)
            )
        out += self._w.done(ev, self._usage, same=self._same, error=self._fatal)
        self._usage = None
        self._pending = None
        self._messages = {}
        self._owners = {}
        return out

    def _end(self) -> bytes:
        """End a response left open by a failed source, as a Realtime server does.

        ``response.done`` with status ``failed`` and the error: the ``error`` event alone leaves
        a client waiting for the response's end.
        """
        if self._fatal is None or self._w.response is None:
            return b""
        return self._on_response_done(events.ResponseDone(status="failed", finish_reason="error"))

    def _on_error(self, ev: events.StreamErrorEvent) -> bytes:
        err = ev.error
        if not ev.recoverable:
            self._fatal = err
        raw = err.raw if self._same and isinstance(err.raw, dict) else None
        return self._w.error(
            raw or {"type": err.type, "code": err.code, "message": err.message or "", "param": None}
        )
