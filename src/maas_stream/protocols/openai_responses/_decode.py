"""OpenAI Responses stream decoder: typed ``response.*`` SSE events → events.

Keys it emits: ``message`` is the ``output_index`` (``"audio"`` for the item-less audio events);
``part`` is the ``content_index`` of a message item's text or refusal, ``"reasoning"`` for a
reasoning item (summary entries by ``summary_index``, reasoning text, encrypted content),
``"call"`` for the tool call of any call item, ``"result"`` / ``"image"`` for a hosted tool's
result, ``"unknown"`` for an item of unknown type. Interleaved deltas of different items never
merge because every key carries the output index.

``output_item.done`` gives each part's final value (``PartDone.value``) and the item
(``MessageDone.value``), and the terminal response's ``output`` gives them again, matched to the
streamed items by item id (not by position, which a gap, a resumed stream or a compatible
server's numbering can shift): the provider's own summary is the authority on every item (the
aggregator keeps the last value and reports a disagreement with the deltas).

A client call whose input streams as text (``apply_patch_call``'s diff, ``shell_call``'s
commands) has JSON arguments (``_items``): the decoder sends the JSON's start when the item is
added, each streamed piece escaped as a piece of a JSON string, and the rest when the item is
done, so the deltas are always a prefix of the final arguments. Items map through ``_items``, usage, status and errors through
``_meta``, the same mapping the encoders and :func:`~._body.decode_response` use. A
completed response finishes ``stop``: the aggregator decides ``tool_calls``.

Framing-local state only: whether the response was announced, the ``sequence_number``
high-water mark, each item's output index by id, and how much of a streaming client call's JSON
was sent. An event whose number was already seen is dropped (a duplicate, or the replayed
head of a resumed ``starting_after`` stream), so replays are idempotent; a jump is a warning.
Provider input of the wrong JSON type raises :class:`~maas_stream.RemoteProtocolError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec.structs import replace

from ... import events
from ..._exceptions import RemoteProtocolError
from ..._model import ImagePart, ToolCallPart, UnknownPart
from .._base import SSEStreamDecoder
from .._direct import ARGS, SUMMARY, TEXT
from .._names import OPENAI_RESPONSES as PROTOCOL
from .._openai import citation_from_annotation
from ._items import CALL_TYPES, content_part, escaped, item_message, item_parts, stream_prefix
from ._meta import error_from, finish_from, response_fields, usage_from
from ._wire import Envelope, envelope_decoder

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ...events import Event

__all__ = ["StreamDecoder"]

_PROGRESS: Final = frozenset(
    {
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.done",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call_arguments.done",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.shell_call_command.done",
        "response.shell_call_output_content.delta",
        "response.shell_call_output_content.done",
        "response.apply_patch_call_operation_diff.done",
        "response.compaction.compacting",
        "response.output_text.done",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.reasoning_text.done",
        "response.audio.done",
        "response.audio.transcript.done",
    }
)
"""Known events that carry nothing the canonical result lacks: progress of hosted tools, and
``.done`` events whose full value also arrives in ``content_part.done`` / ``output_item.done``."""


class StreamDecoder(SSEStreamDecoder):
    """Decode an OpenAI Responses stream (and Responses-compatible servers' streams).

    Handles every event type of PROTOCOLS.md §2.3 (the SDK's 58-member union) plus
    ``apply_patch_call_operation_diff`` deltas and the ``response.done`` terminal some back-ends
    send. Unknown event types become :class:`~maas_stream.events.UnknownEvent` with the raw JSON.

    Attributes:
        warnings: One line per sequence gap (flushed as ``StreamWarning`` events).
        duplicates: How many events were dropped because their number was already seen.
    """

    protocol = PROTOCOL
    direct = True

    __slots__ = ("_decoded", "_id_at", "_index_of", "_last", "_started", "_streamed", "duplicates")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._started = False
        self._last = -1
        self._decoded: tuple[bytes, Envelope] | None = None
        """A frame the direct fold decoded and hands :meth:`normal`: :meth:`on_frame` reads it once."""
        self.duplicates = 0
        self._index_of: dict[str, int] = {}
        """Item id → the output index the stream gave it."""
        self._id_at: dict[int, str] = {}
        """Output index → the id of the item the stream gave it."""
        self._streamed: dict[int, int] = {}
        """Output index → how many characters of a client call's JSON arguments were streamed."""

    def on_frame(self, event: str, data: bytes | str) -> list[Event]:
        decoded = self._decoded
        try:  # typed, straight from the bytes; only a frame that fails is looked at as text
            if decoded is not None and decoded[0] is data:
                self._decoded = None
                env = decoded[1]
            else:
                env = envelope_decoder.decode(data)
        except msgspec.DecodeError:
            if _no_payload(data):
                return []
            raise
        seq = env.sequence_number
        if seq is not None:
            if seq <= self._last:
                self.duplicates += 1
                return []
            if seq != self._last + 1:
                self.warn(
                    f"sequence_number jumped from {self._last} to {seq}: events {self._last + 1}..{seq - 1} are missing"
                )
            self._last = seq
        kind = env.type or event
        if kind == "response.output_text.delta" and not env.logprobs:
            # The common case: a plain text delta is one event.
            delta = env.delta
            return [
                events.TextDelta(
                    message=env.output_index or 0,
                    part=env.content_index or 0,
                    text=delta if isinstance(delta, str) else "",
                )
            ]
        handler = _HANDLERS.get(kind)
        if handler is not None:
            return handler(self, env, data)
        if kind in _PROGRESS:
            return []
        return [events.UnknownEvent(provider_type=kind, raw=msgspec.json.decode(data))]

    def fold_frames(self, payloads: list[bytes], names: Sequence[str]) -> None:
        """Fold text, refusal, reasoning, summary and arguments deltas directly; the rest go :meth:`normal`.

        Such an event, in sequence and without log-probabilities, is one delta (see
        :data:`_FOLDED`) into a part that exists already; anything else goes as events.
        """
        decode = envelope_decoder.decode
        first = self._frames + 1
        for number, data in enumerate(payloads, first):
            try:
                env = decode(data)
            except _FAULTS:
                env = None
            if env is not None:
                route = _FOLDED.get(env.type)
                seq = env.sequence_number
                if route is not None and not env.logprobs and (seq is None or seq == self._last + 1):
                    delta = env.delta
                    message = env.output_index or 0
                    if route == "summary":
                        # Even an empty one names an entry: only text goes straight in.
                        index = env.summary_index or 0
                        folded = (
                            type(delta) is str
                            and index >= 0
                            and self.fold_delta(message, "reasoning", delta, SUMMARY, index)
                        )
                    elif not delta or not isinstance(delta, str):
                        # Empty or not text: the normal way says what it is (nothing while the
                        # response streams, an error once it has ended), as for a stream of events.
                        folded = False
                    elif route == "content":
                        folded = self.fold_delta(message, env.content_index or 0, delta)
                    else:
                        folded = self.fold_delta(message, route, delta, ARGS if route == "call" else TEXT)
                    if folded:
                        if seq is not None:
                            self._last = seq
                        continue
            if env is not None:
                self._decoded = (data, env)  # not decoded twice: on_frame reads it once
            self.normal(number, names[number - first], data)

    # ------------------------------------------------------------------ deltas

    def _text_delta(self, env: Envelope, data: bytes | str) -> list[Event]:
        message = env.output_index or 0
        part = env.content_index or 0
        text = events.TextDelta(message=message, part=part, text=_delta(env))
        if env.logprobs:
            # Before the text, so an encoder can put them on the same delta event.
            return [events.LogprobsDelta(message=message, part=part, logprobs=env.logprobs), text]
        return [text]

    def _args_delta(self, env: Envelope, data: bytes | str) -> list[Event]:
        return [events.ArgumentsDelta(message=env.output_index or 0, part="call", delta=_delta(env))]

    def _json_piece(self, index: int, text: str) -> list[Event]:
        """A piece of a call's JSON arguments (counted: the item's end sends the rest)."""
        self._streamed[index] = self._streamed.get(index, 0) + len(text)
        return [events.ArgumentsDelta(message=index, part="call", delta=text)] if text else []

    def _escaped_delta(self, env: Envelope, data: bytes | str) -> list[Event]:
        # A piece of a string inside the call's JSON arguments (a patch's diff, a shell command).
        return self._json_piece(env.output_index or 0, escaped(_delta(env)))

    def _shell_added(self, env: Envelope, data: bytes | str) -> list[Event]:
        # Shell commands stream one after another into the arguments' "commands" list.
        text = ('","' if env.command_index else '"') + escaped(env.command or "")
        return self._json_piece(env.output_index or 0, text)

    def _summary_delta(self, env: Envelope, data: bytes | str) -> list[Event]:
        index = _summary_index(env)
        return [
            events.SummaryDelta(
                message=env.output_index or 0, part="reasoning", index=index, text=_delta(env)
            )
        ]

    def _summary_part(self, env: Envelope, data: bytes | str) -> list[Event]:
        index = _summary_index(env)
        part = env.part
        text = part.get("text") if isinstance(part, dict) else None
        return [
            events.SummaryDelta(
                message=env.output_index or 0,
                part="reasoning",
                index=index,
                text=text if isinstance(text, str) else "",
            )
        ]

    def _reasoning_delta(self, env: Envelope, data: bytes | str) -> list[Event]:
        return [events.ReasoningDelta(message=env.output_index or 0, part="reasoning", text=_delta(env))]

    def _refusal_delta(self, env: Envelope, data: bytes | str) -> list[Event]:
        return [
            events.RefusalDelta(message=env.output_index or 0, part=env.content_index or 0, text=_delta(env))
        ]

    def _annotation(self, env: Envelope, data: bytes | str) -> list[Event]:
        citation = citation_from_annotation(env.annotation)
        return [
            events.AnnotationAdded(
                message=env.output_index or 0, part=env.content_index or 0, citation=citation
            )
        ]

    def _partial_image(self, env: Envelope, data: bytes | str) -> list[Event]:
        # A preview: kept as the image until the item's final result replaces it.
        fmt = env.output_format
        value = ImagePart(data=env.partial_image_b64 or "", media_type=f"image/{fmt}" if fmt else None)
        return [events.PartDone(message=env.output_index or 0, part="image", value=value)]

    def _audio(self, env: Envelope, data: bytes | str) -> list[Event]:
        delta = _delta(env)
        if env.type == "response.audio.delta":
            return [events.AudioDelta(message="audio", part="audio", data=delta)]
        return [events.AudioDelta(message="audio", part="audio", transcript=delta)]

    # ------------------------------------------------------------------ parts and items

    def _part_added(self, env: Envelope, data: bytes | str) -> list[Event]:
        part = env.part
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in ("output_text", "refusal"):
            return []  # reasoning_text goes to the item's reasoning part; others come whole at .done
        value = content_part(part)
        return [events.PartStart(message=env.output_index or 0, part=env.content_index or 0, value=value)]

    def _part_done(self, env: Envelope, data: bytes | str) -> list[Event]:
        part = env.part
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in ("output_text", "refusal"):
            return []
        return [
            events.PartDone(
                message=env.output_index or 0, part=env.content_index or 0, value=content_part(part)
            )
        ]

    def _item_added(self, env: Envelope, data: bytes | str) -> list[Event]:
        item = env.item
        index = env.output_index or 0
        self._note(index, item)
        out: list[Event] = []
        if not self._started:
            out.append(events.ResponseStart(protocol=PROTOCOL))
            self._started = True
        if not isinstance(item, dict):
            return out
        msg = item_message(item, [])
        out.append(
            events.MessageStart(
                message=index,
                role=msg.role,
                type=msg.type,
                id=msg.id,
                phase=msg.phase,
                provider_raw=msg.provider_raw,
            )
        )
        if msg.type == "message":
            return out  # content parts arrive with content_part.added
        if msg.type is not None and (msg.type in CALL_TYPES or msg.type == "reasoning"):
            prefix = stream_prefix(msg.type, item)
            for key, p in item_parts(item)[:1]:
                if prefix and isinstance(p, ToolCallPart):
                    # Its input streams as pieces of a JSON string: the arguments start here.
                    out.append(events.PartStart(message=index, part=key, value=replace(p, arguments="")))
                    out += self._json_piece(index, prefix)
                else:
                    out.append(events.PartStart(message=index, part=key, value=p))
        return out

    def _item_done(self, env: Envelope, data: bytes | str) -> list[Event]:
        index = env.output_index or 0
        self._note(index, env.item)
        return _done_events(index, env.item, replay=False, streamed=self._streamed.pop(index, None))

    def _note(self, index: int, item: Any) -> None:
        """Remember which item the stream put at ``index`` (the terminal output is matched by id)."""
        item_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(item_id, str) and item_id not in self._index_of:
            self._index_of[item_id] = index
            self._id_at.setdefault(index, item_id)

    def _terminal_index(self, position: int, item: Any, taken: set[int]) -> int:
        """The output index of a terminal output item.

        Where the stream had it (by id), else its position, unless the stream gave that index to
        another item (then a new index).
        """
        item_id = item.get("id") if isinstance(item, dict) else None
        index = self._index_of.get(item_id) if isinstance(item_id, str) else None
        if index is None:
            index = position
            other = self._id_at.get(index)
            if index in taken or (other is not None and other != item_id):
                index = max([*taken, *self._id_at, position]) + 1
        taken.add(index)
        return index

    # ------------------------------------------------------------------ lifecycle

    def _lifecycle(self, env: Envelope, data: bytes | str) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [_response_start(env.response)]

    def _terminal(self, env: Envelope, data: bytes | str) -> list[Event]:
        response = env.response if isinstance(env.response, dict) else {}
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(_response_start(response))
        output = response.get("output")
        if isinstance(output, list):
            # The terminal response's output is the provider's final word on every item: it
            # settles the items the stream did not complete (cut short, or lost in a gap) and
            # restates the others (the aggregator keeps the last value).
            # Matched by item id, not position: a stream's output indexes need not be the
            # positions in the final list (a gap, a resumed stream, a compatible server).
            taken: set[int] = set()
            for i, item in enumerate(output):
                out += _done_events(self._terminal_index(i, item, taken), item, replay=True)
        usage = usage_from(response.get("usage"))
        if usage is not None:
            out.append(events.UsageUpdate(usage=usage))
        raw_status = response.get("status")
        wire = _terminal_status(env.type, raw_status)
        status, finish, provider_finish = finish_from(wire, response.get("incomplete_details"))
        if status == "failed":
            error = error_from(response.get("error") or {"type": "response.failed"})
            out.append(events.StreamErrorEvent(error=error))
            return out
        if wire == "completed":
            provider_finish = raw_status if isinstance(raw_status, str) else None
        out.append(
            events.ResponseDone(status=status, finish_reason=finish, provider_finish_reason=provider_finish)
        )
        return out

    def _error(self, env: Envelope, data: bytes | str) -> list[Event]:
        raw = msgspec.json.decode(data)
        body = env.error if isinstance(env.error, dict) else raw  # nested (observed) or flat (documented)
        return [events.StreamErrorEvent(error=error_from(body, raw))]


_HANDLERS: Final[dict[str, Callable[[StreamDecoder, Envelope, bytes | str], list[Event]]]] = {
    "response.output_text.delta": StreamDecoder._text_delta,
    "response.function_call_arguments.delta": StreamDecoder._args_delta,
    "response.custom_tool_call_input.delta": StreamDecoder._args_delta,
    "response.mcp_call_arguments.delta": StreamDecoder._args_delta,
    "response.code_interpreter_call_code.delta": StreamDecoder._args_delta,
    "response.apply_patch_call_operation_diff.delta": StreamDecoder._escaped_delta,
    "response.shell_call_command.delta": StreamDecoder._escaped_delta,
    "response.shell_call_command.added": StreamDecoder._shell_added,
    "response.reasoning_summary_text.delta": StreamDecoder._summary_delta,
    "response.reasoning_summary_part.added": StreamDecoder._summary_part,
    "response.reasoning_text.delta": StreamDecoder._reasoning_delta,
    "response.refusal.delta": StreamDecoder._refusal_delta,
    "response.output_text.annotation.added": StreamDecoder._annotation,
    "response.content_part.added": StreamDecoder._part_added,
    "response.content_part.done": StreamDecoder._part_done,
    "response.output_item.added": StreamDecoder._item_added,
    "response.output_item.done": StreamDecoder._item_done,
    "response.image_generation_call.partial_image": StreamDecoder._partial_image,
    "response.audio.delta": StreamDecoder._audio,
    "response.audio.transcript.delta": StreamDecoder._audio,
    "response.created": StreamDecoder._lifecycle,
    "response.queued": StreamDecoder._lifecycle,
    "response.in_progress": StreamDecoder._lifecycle,
    "response.completed": StreamDecoder._terminal,
    "response.incomplete": StreamDecoder._terminal,
    "response.failed": StreamDecoder._terminal,
    "response.done": StreamDecoder._terminal,
    "error": StreamDecoder._error,
}


def _no_payload(data: bytes | str) -> bool:
    """Whether a frame that is not JSON carries nothing to keep.

    A ``[DONE]`` marker (not documented for Responses, but the SDK stops on it) or a blank
    keep-alive; anything else that is not JSON is a protocol error.
    """
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return text.startswith("[DONE]") or not text.strip()


_FOLDED: Final = {
    "response.output_text.delta": "content",
    "response.refusal.delta": "content",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "summary",
    "response.function_call_arguments.delta": "call",
    "response.custom_tool_call_input.delta": "call",
    "response.mcp_call_arguments.delta": "call",
    "response.code_interpreter_call_code.delta": "call",
}
"""The events :meth:`StreamDecoder.fold_frames` folds directly, by the part key their delta goes
to: ``"content"`` (the content index, text), ``"reasoning"`` (text), ``"call"`` (arguments), or
``"summary"``: the ``"reasoning"`` part's summary entry ``summary_index`` (``SUMMARY``)."""

_FAULTS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
"""A frame the direct fold cannot read goes the normal way, which reports it (or skips a blank one)."""


def _delta(env: Envelope) -> str:
    delta = env.delta
    return delta if isinstance(delta, str) else ""


def _terminal_status(event_type: str, status: Any) -> str:
    """The status a terminal event ends with: its type and its response's status agree on it."""
    if event_type == "response.failed" or status == "failed":
        return "failed"
    if status in ("incomplete", "cancelled"):
        return str(status)
    return "incomplete" if event_type == "response.incomplete" else "completed"


def _summary_index(env: Envelope) -> int:
    index = env.summary_index or 0
    if index < 0:
        raise RemoteProtocolError(
            f"summary_index {index} is negative", protocol=PROTOCOL, event_type=env.type
        )
    return index


def _response_start(response: Any) -> events.ResponseStart:
    if not isinstance(response, dict):
        return events.ResponseStart(protocol=PROTOCOL)
    rid = response.get("id")
    model = response.get("model")
    return events.ResponseStart(
        protocol=PROTOCOL,
        id=rid if isinstance(rid, str) else None,
        model=model if isinstance(model, str) else None,
        provider_raw=response_fields(response),
    )


def _done_events(index: int, item: Any, *, replay: bool, streamed: int | None = None) -> list[Event]:
    """The events that end an item (``streamed``: how much of its call's JSON arguments came)."""
    parts = item_parts(item)
    out: list[Event] = []
    for key, part in parts:
        if streamed is not None and isinstance(part, ToolCallPart) and len(part.arguments) > streamed:
            # The rest of the JSON (a string's close, the fields that come only now) as a delta.
            out.append(events.ArgumentsDelta(message=index, part=key, delta=part.arguments[streamed:]))
        if key == "unknown" and not replay and isinstance(part, UnknownPart):
            # Counted once, when the item completes; a replay in the terminal event only confirms it.
            out.append(
                events.UnknownEvent(provider_type=part.provider_type, raw=part.raw, message=index, part=key)
            )
        else:
            out.append(events.PartDone(message=index, part=key, value=part))
    msg = item_message(item, [p for _, p in parts])
    out.append(events.MessageDone(message=index, status=msg.status, value=msg))
    return out
