"""The wire side of the Realtime stream encoder: one response's output items and their events.

:class:`ResponseWriter` numbers the server events, synthesizes ids, opens a response with
``response.created``, adds output items (``message``, ``function_call``, or a kept raw item),
writes their content-part, delta and ``*.done`` events, and closes the response with
``response.done`` listing every item with its own status. It also writes the session's other
events: input transcription, the client's ``function_call_output`` and ``error``.

It knows Realtime's event grammar only: which canonical part goes to which item is the
encoder's business (``_encode``). It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._accumulate import FRAGMENTS, add_fragment, compact
from .._names import OPENAI_REALTIME as PROTOCOL
from .._session import frame
from .._template import HOLE, template
from ._items import call_item, output_item, status_wire, usage_wire

if TYPE_CHECKING:
    from ... import events
    from ..._model import StreamError, ToolCallPart, ToolResultPart, Usage

__all__ = ["Item", "ResponseWriter"]

_json: Final = msgspec.json.Encoder()
_FIELD: Final = {"output_text": "text", "output_audio": "transcript"}
"""The streamed field of each content part type."""


class Item:
    """One output item being written (``message``, ``function_call`` or ``raw``)."""

    __slots__ = (
        "args",
        "call",
        "content",
        "done",
        "frames",
        "id",
        "index",
        "kind",
        "pieces",
        "status",
        "written",
    )

    def __init__(self, item_id: str, index: int, kind: str) -> None:
        self.id = item_id
        self.index = index
        self.kind = kind
        self.content: list[dict[str, Any]] = []
        """The content parts as written so far (a raw item: the item itself); a closed part's
        text is held encoded (``msgspec.Raw``, see :meth:`ResponseWriter.content_done`)."""
        self.args: list[str] = []
        self.call: ToolCallPart | None = None
        self.done = False
        self.status = "completed"
        """The status ``response.done`` lists (``incomplete`` once cut or cancelled)."""
        self.pieces: dict[int, list[str]] | None = None
        """The text or transcript written to each open content part, joined into :attr:`content`
        only when the item is listed or the part closed (appending to a ``str`` per delta is
        quadratic)."""
        self.written: dict[int, int] | None = None
        """The characters written to each open text part whose text the converter's aggregator
        keeps (its encoder reads that much there at the part's end: ``written_text``), in place
        of :attr:`pieces`."""
        self.frames: dict[tuple[str, int], tuple[str | None, tuple[bytes, ...]]] | None = None
        """The pre-encoded delta events of this item (see :meth:`ResponseWriter.delta`), by event
        type and content index, with the response id they were made for."""

    def streamed(self, index: int, text: str) -> None:
        """Add ``text`` to what content part ``index`` has streamed."""
        pieces = self.pieces
        if pieces is None:
            pieces = self.pieces = {}
        found = pieces.get(index)
        if found is None:
            pieces[index] = [text]
        else:
            found.append(text)  # (add_fragment inlined: the hot path)
            if len(found) >= FRAGMENTS:
                compact(found)

    def synced(self) -> list[dict[str, Any]]:
        """The content parts with everything streamed so far."""
        if self.pieces:
            for index, pieces in self.pieces.items():
                part = self.content[index]
                part[_FIELD[part["type"]]] = "".join(pieces)
        return self.content


class ResponseWriter:
    """Realtime server events for a session's responses, one response open at a time."""

    def __init__(self) -> None:
        self._n = 0
        self._ids = 0
        self.response: str | None = None
        """The id of the open response (``None`` between responses)."""
        self.output: list[Item] = []

    def event(self, body: dict[str, Any], *, client: bool = False) -> bytes:
        """One event line (a server event gets the next ``event_id``)."""
        if not client:
            self._n += 1
            body["event_id"] = f"event_maas_{self._n}"
        return frame(body, client=client)

    def synth(self, prefix: str) -> str:
        """A new id of ours (``item_maas_3``)."""
        self._ids += 1
        return f"{prefix}_maas_{self._ids}"

    def _base(self, item: Item) -> dict[str, Any]:
        return {"response_id": self.response, "item_id": item.id, "output_index": item.index}

    def delta(self, item: Item, kind: str, index: int, delta: str) -> bytes:
        """A ``{kind}`` delta event of ``item`` (content part ``index``; a call's: ``-1``).

        The hot path: the event is encoded once per item and part as a template (what
        :meth:`event` writes for the body, with the delta and the event id left open), then
        each delta is one join. The bytes are those :meth:`event` would write.
        """
        frames = item.frames
        if frames is None:
            frames = item.frames = {}
        found = frames.get((kind, index))
        if found is None or found[0] != self.response:
            body: dict[str, Any] = {"type": kind, **self._base(item)}
            if index >= 0:
                body["content_index"] = index
            else:
                assert item.call is not None
                body["call_id"] = item.call.id
            body["delta"] = HOLE[0]
            body["event_id"] = HOLE[1]
            head, middle, tail = template(frame, body, 2)
            # The event id's constant part goes into the fragments: only its number is encoded
            # per event (an int's encoding is the cheapest).
            found = frames[kind, index] = (self.response, (head, middle + b'"event_maas_', b'"' + tail))
        head, middle, tail = found[1]
        self._n += 1
        return b"".join((head, _json.encode(delta), middle, _json.encode(self._n), tail))

    def wire(self, item: Item, status: str) -> dict[str, Any]:
        """An item as the server lists it (without audio data)."""
        if item.kind == "raw":
            return item.content[0]
        if item.kind == "function_call":
            assert item.call is not None
            return call_item(item.call, "".join(item.args), id=item.id, status=status)
        return {
            "id": item.id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": item.synced(),
        }

    # ------------------------------------------------------------------ responses

    def open(self, start: events.ResponseStart | None) -> bytes:
        """``response.created`` unless a response is open (its id and, from Realtime, its fields)."""
        if self.response is not None:
            return b""
        self.response = (start.id if start is not None and start.id else None) or self.synth("resp")
        response: dict[str, Any] = {"object": "realtime.response", "id": self.response}
        response.update(status="in_progress", status_details=None, output=[])
        if start is not None and start.protocol == PROTOCOL and isinstance(start.provider_raw, dict):
            for key, value in start.provider_raw.items():
                response.setdefault(key, value)
        response.setdefault("usage", None)
        self.output = []
        return self.event({"type": "response.created", "response": response})

    def done(
        self, end: events.ResponseDone, usage: Usage | None, *, same: bool, error: StreamError | None = None
    ) -> bytes:
        """``response.done``: every item with its status, the response status and the usage.

        ``same``: the source is Realtime (its own usage object is written back unchanged);
        ``error``: what failed the response (``status_details.error``).
        """
        status, details = status_wire(end.status, end.finish_reason, end.provider_finish_reason)
        if error is not None and details is not None and status == "failed":
            details["error"] = {"type": error.type, "code": error.code, "message": error.message or ""}
        output = [self.wire(item, item.status) for item in self.output]
        response: dict[str, Any] = {"object": "realtime.response", "id": self.response}
        response.update(status=status, status_details=details, output=output)
        if usage is not None:
            response["usage"] = usage_wire(usage, same=same)
        self.response = None
        return self.event({"type": "response.done", "response": response})

    # ------------------------------------------------------------------ items

    def add(
        self, kind: str, item_id: str, start: events.ResponseStart | None, call: ToolCallPart | None = None
    ) -> tuple[Item, bytes]:
        """A new output item (opening the response if needed) and its ``output_item.added``.

        Args:
            kind: ``message``, ``function_call`` (with its ``call``) or ``raw``.
            item_id: The item's id.
            start: The source's response start, for ``response.created``.
            call: The call of a ``function_call`` item (its id and name).
        """
        out = self.open(start)
        item = Item(item_id, len(self.output), kind)
        item.call = call
        self.output.append(item)
        if kind != "raw":
            # The SDK's ResponseOutputItemAddedEvent has no item_id (the item carries its id).
            body = {
                "type": "response.output_item.added",
                "response_id": self.response,
                "output_index": item.index,
            }
            out += self.event({**body, "item": self.wire(item, "in_progress")})
        return item, out

    def raw(self, raw: dict[str, Any], start: events.ResponseStart | None) -> bytes:
        """An item of a type this library does not know, kept whole by the Realtime decoder."""
        item, out = self.add("raw", str(raw.get("id") or self.synth("item")), start)
        item.content = [raw]
        item.done = True
        base = {"response_id": self.response, "output_index": item.index}
        out += self.event({"type": "response.output_item.added", **base, "item": raw})
        return out + self.event({"type": "response.output_item.done", **base, "item": raw})

    def item_done(self, item: Item, status: str) -> bytes:
        """``output_item.done`` with the item's status (kept for ``response.done``)."""
        item.done = True
        item.status = status
        body = {"type": "response.output_item.done", "response_id": self.response, "output_index": item.index}
        return self.event({**body, "item": self.wire(item, status)})

    def content(self, item: Item, kind: str, *, shared: bool = False) -> tuple[int, bytes]:
        """A new text or audio content part of a message item: its index and ``content_part.added``.

        ``shared``: a text part whose text the aggregator feeding the encoder keeps; the part
        counts what it wrote (:attr:`Item.written`) rather than keeping it.
        """
        index = len(item.content)
        if kind == "text":
            if shared:
                if item.written is None:
                    item.written = {}
                item.written[index] = 0
            item.content.append({"type": "output_text", "text": ""})
            part: dict[str, Any] = {"type": "text", "text": ""}
        else:
            item.content.append({"type": "output_audio", "transcript": ""})
            part = {"type": "audio", "transcript": ""}
        body = {"type": "response.content_part.added", **self._base(item), "content_index": index}
        return index, self.event({**body, "part": part})

    def text(self, item: Item, index: int, text: str) -> bytes:
        """An ``output_text.delta``."""
        written = item.written
        if written is None or index not in written:
            pieces = item.pieces  # (Item.streamed inlined for a part that has streamed: the hot path)
            found = pieces.get(index) if pieces is not None else None
            if found is None:
                item.streamed(index, text)
            else:
                found.append(text)
                if len(found) >= FRAGMENTS:
                    compact(found)
        else:
            written[index] += len(text)  # (the aggregator keeps the text)
        frames = item.frames
        made = frames.get(("response.output_text.delta", index)) if frames is not None else None
        if made is None or made[0] != self.response:
            return self.delta(item, "response.output_text.delta", index, text)
        head, middle, tail = made[1]  # (the end of delta inlined, once its template is made)
        self._n += 1
        return b"".join((head, _json.encode(text), middle, _json.encode(self._n), tail))

    def audio(self, item: Item, index: int, data: str | None, transcript: str | None) -> bytes:
        """``output_audio.delta`` and/or ``output_audio_transcript.delta``."""
        out = self.delta(item, "response.output_audio.delta", index, data) if data else b""
        if transcript:
            item.streamed(index, transcript)
            out += self.delta(item, "response.output_audio_transcript.delta", index, transcript)
        return out

    def content_done(self, item: Item, index: int, kind: str, written: str | None = None) -> bytes:
        """The part's ``*.done`` events and ``content_part.done``, with what was streamed.

        ``written``: a shared text part's text as written, read from the aggregator by the
        encoder (:attr:`Item.written`); otherwise the part's own :attr:`Item.pieces`. The
        part's text is encoded here once, for these events and the item's later listings
        (``output_item.done``, ``response.done``): the part is closed, it streams no more.
        """
        base = {**self._base(item), "content_index": index}
        wire = item.content[index]
        field = _FIELD[wire["type"]]
        if written is None:
            pieces = item.pieces.pop(index, None) if item.pieces is not None else None
            written = "".join(pieces) if pieces is not None else wire[field]
        text = wire[field] = msgspec.Raw(_json.encode(written))
        if kind == "text":
            out = self.event({"type": "response.output_text.done", **base, "text": text})
            part: dict[str, Any] = {"type": "text", "text": text}
        else:
            transcript = text
            out = self.event({"type": "response.output_audio.done", **base})
            out += self.event(
                {"type": "response.output_audio_transcript.done", **base, "transcript": transcript}
            )
            part = {"type": "audio", "transcript": transcript}
        return out + self.event({"type": "response.content_part.done", **base, "part": part})

    def arguments(self, item: Item, delta: str) -> bytes:
        """A ``function_call_arguments.delta``."""
        add_fragment(item.args, delta)
        return self.delta(item, "response.function_call_arguments.delta", -1, delta)

    def call_done(self, item: Item, status: str) -> bytes:
        """A call's end: ``function_call_arguments.done`` (unless cut) and ``output_item.done``."""
        assert item.call is not None
        out = b""
        if status == "completed":
            body = {
                "type": "response.function_call_arguments.done",
                **self._base(item),
                "call_id": item.call.id,
            }
            out = self.event({**body, "name": item.call.name, "arguments": "".join(item.args)})
        return out + self.item_done(item, status)

    # ------------------------------------------------------------------ session events

    def input_delta(self, item_id: str, delta: str) -> bytes:
        """A ``conversation.item.input_audio_transcription.delta``."""
        body = {"type": "conversation.item.input_audio_transcription.delta", "item_id": item_id}
        return self.event({**body, "content_index": 0, "delta": delta})

    def input_done(self, item_id: str, transcript: str) -> bytes:
        """A ``conversation.item.input_audio_transcription.completed``."""
        body = {"type": "conversation.item.input_audio_transcription.completed", "item_id": item_id}
        usage = {"type": "duration", "seconds": 0}
        return self.event({**body, "content_index": 0, "transcript": transcript, "usage": usage})

    def function_output(self, result: ToolResultPart) -> bytes:
        """The client's ``conversation.item.create`` of a ``function_call_output``."""
        return self.event({"type": "conversation.item.create", "item": output_item(result)}, client=True)

    def error(self, error: dict[str, Any]) -> bytes:
        """An ``error`` event."""
        return self.event({"type": "error", "error": error})
