"""OpenAI Responses stream decoder: typed ``response.*`` SSE events → events.

Keys it emits: ``message`` is the ``output_index`` (``"audio"`` for the item-less audio events);
``part`` is the ``content_index`` of a message item's text or refusal, ``"reasoning"`` for a
reasoning item (summary entries by ``summary_index``, reasoning text, encrypted content),
``"call"`` for the tool call of any call item, ``"result"`` / ``"image"`` for a hosted tool's
result, ``"unknown"`` for an item of unknown type. Interleaved deltas of different items never
merge because every key carries the output index.

``output_item.done`` (and the terminal response's ``output``) gives each part's final value
(``PartDone.value``) and the item (``MessageDone.value``): a ``.done``-only value is kept and a
final value that disagrees with the deltas wins (the aggregator reports it).

Framing-local state only: whether the response was announced, and the ``sequence_number``
high-water mark. An event whose number was already seen is dropped (a duplicate, or the replayed
head of a resumed ``starting_after`` stream), so replays are idempotent; a jump is recorded in
:attr:`StreamDecoder.gaps` and :attr:`StreamDecoder.warnings`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..._model import FinishReason, ImagePart, StreamError, UnknownPart, Usage
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
    StreamErrorEvent,
    SummaryDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import SSEStreamDecoder
from ..openai_chat._decode import citation_from_annotation
from ._items import CALL_TYPES, content_part, item_message, item_parts
from ._wire import Envelope, envelope_decoder

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["StreamDecoder", "usage_from"]

from .._names import OPENAI_RESPONSES as PROTOCOL

_INCOMPLETE: Final[dict[str, FinishReason]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}

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

_CALLS_FOR_FINISH: Final = frozenset({"function_call", "custom_tool_call"})


def usage_from(raw: Any) -> Usage | None:
    """Map a Responses ``usage`` object to canonical usage (``None`` for a missing one)."""
    if not isinstance(raw, dict):
        return None
    details_in = raw.get("input_tokens_details")
    details_out = raw.get("output_tokens_details")
    di = details_in if isinstance(details_in, dict) else {}
    do = details_out if isinstance(details_out, dict) else {}
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        total_tokens=_int(raw.get("total_tokens")),
        reasoning_tokens=_int(do.get("reasoning_tokens")),
        cache_read_tokens=_int(di.get("cached_tokens")),
        cache_write_tokens=_int(di.get("cache_write_tokens")),
        raw=raw,
    )


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def error_from(raw: Any, event: dict[str, Any] | None = None) -> StreamError:
    """Map a Responses error (flat event, nested ``error`` object, or ``response.error``)."""
    body = raw if isinstance(raw, dict) else {}
    code = body.get("code")
    message = body.get("message")
    kind = body.get("type") if isinstance(body.get("type"), str) and body.get("type") != "error" else None
    return StreamError(
        type=str(kind or code or "error"),
        message=message if isinstance(message, str) else None,
        code=None if code is None else str(code),
        raw=event if event is not None else raw,
    )


class StreamDecoder(SSEStreamDecoder):
    """Decode an OpenAI Responses stream (and Responses-compatible servers' streams).

    Handles every event type of PROTOCOLS.md §2.3 (the SDK's 58-member union) plus
    ``apply_patch_call_operation_diff`` deltas and the ``response.done`` terminal some back-ends
    send. Unknown event types become :class:`~maas_stream.events.UnknownEvent` with the raw JSON.

    Attributes:
        gaps: ``(expected, got)`` sequence numbers for each jump forward in the stream.
        warnings: One line per gap, for the pipeline to put in ``Response.warnings``.
        duplicates: How many events were dropped because their number was already seen.
    """

    protocol = PROTOCOL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._started = False
        self._last = -1
        self._saw_call = False
        self._done_items: set[int] = set()
        self.gaps: list[tuple[int, int]] = []
        self.warnings: list[str] = []
        self.duplicates = 0
        self._handlers: dict[str, Callable[[Envelope, bytes | str], list[Event]]] = {
            "response.output_text.delta": self._text_delta,
            "response.function_call_arguments.delta": self._args_delta,
            "response.custom_tool_call_input.delta": self._args_delta,
            "response.mcp_call_arguments.delta": self._args_delta,
            "response.code_interpreter_call_code.delta": self._args_delta,
            "response.apply_patch_call_operation_diff.delta": self._args_delta,
            "response.shell_call_command.delta": self._args_delta,
            "response.shell_call_command.added": self._shell_added,
            "response.reasoning_summary_text.delta": self._summary_delta,
            "response.reasoning_summary_part.added": self._summary_part,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.output_text.annotation.added": self._annotation,
            "response.content_part.added": self._part_added,
            "response.content_part.done": self._part_done,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.image_generation_call.partial_image": self._partial_image,
            "response.audio.delta": self._audio,
            "response.audio.transcript.delta": self._audio,
            "response.created": self._lifecycle,
            "response.queued": self._lifecycle,
            "response.in_progress": self._lifecycle,
            "response.completed": self._terminal,
            "response.incomplete": self._terminal,
            "response.failed": self._terminal,
            "response.done": self._terminal,
            "error": self._error,
        }

    def on_frame(self, event: str, data: bytes | str) -> list[Event]:
        # The raw-bytes fast path: the typed decode reads the payload as it came; a frame that
        # is not JSON (``[DONE]``, a blank keep-alive, bad bytes) is told apart only then.
        try:
            ev = envelope_decoder.decode(data)
        except msgspec.DecodeError:
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            if text.startswith("[DONE]") or not text.strip():
                return []  # not documented for Responses, but the SDK stops on it: nothing to keep
            raise
        seq = ev.sequence_number
        if seq is not None:
            if seq <= self._last:
                self.duplicates += 1
                return []
            if seq != self._last + 1:
                self.gaps.append((self._last + 1, seq))
                self.warnings.append(
                    f"sequence_number jumped from {self._last} to {seq}: events {self._last + 1}..{seq - 1} are missing"
                )
            self._last = seq
        kind = ev.type or event
        if kind == "response.output_text.delta" and not ev.logprobs:
            # The common case: a plain text delta is one event.
            delta = ev.delta
            return [
                TextDelta(
                    message=ev.output_index or 0,
                    part=ev.content_index or 0,
                    text=delta if isinstance(delta, str) else "",
                )
            ]
        handler = self._handlers.get(kind)
        if handler is not None:
            return handler(ev, data)
        if kind in _PROGRESS:
            return []
        return [UnknownEvent(provider_type=kind, raw=msgspec.json.decode(data))]

    # ------------------------------------------------------------------ deltas

    def _text_delta(self, ev: Envelope, data: bytes | str) -> list[Event]:
        message = ev.output_index or 0
        part = ev.content_index or 0
        text = TextDelta(message=message, part=part, text=_delta(ev))
        if ev.logprobs:
            # Before the text, so an encoder can put them on the same delta event.
            return [LogprobsDelta(message=message, part=part, logprobs=ev.logprobs), text]
        return [text]

    def _args_delta(self, ev: Envelope, data: bytes | str) -> list[Event]:
        return [ArgumentsDelta(message=ev.output_index or 0, part="call", delta=_delta(ev))]

    def _shell_added(self, ev: Envelope, data: bytes | str) -> list[Event]:
        # Shell commands stream one after another; canonical arguments are the commands, one a line.
        text = ("\n" if ev.command_index else "") + (ev.command or "")
        return [ArgumentsDelta(message=ev.output_index or 0, part="call", delta=text)] if text else []

    def _summary_delta(self, ev: Envelope, data: bytes | str) -> list[Event]:
        return [
            SummaryDelta(
                message=ev.output_index or 0, part="reasoning", index=ev.summary_index or 0, text=_delta(ev)
            )
        ]

    def _summary_part(self, ev: Envelope, data: bytes | str) -> list[Event]:
        part = ev.part
        text = part.get("text") if isinstance(part, dict) else None
        return [
            SummaryDelta(
                message=ev.output_index or 0,
                part="reasoning",
                index=ev.summary_index or 0,
                text=text if isinstance(text, str) else "",
            )
        ]

    def _reasoning_delta(self, ev: Envelope, data: bytes | str) -> list[Event]:
        return [ReasoningDelta(message=ev.output_index or 0, part="reasoning", text=_delta(ev))]

    def _refusal_delta(self, ev: Envelope, data: bytes | str) -> list[Event]:
        return [RefusalDelta(message=ev.output_index or 0, part=ev.content_index or 0, text=_delta(ev))]

    def _annotation(self, ev: Envelope, data: bytes | str) -> list[Event]:
        citation = citation_from_annotation(ev.annotation)
        return [AnnotationAdded(message=ev.output_index or 0, part=ev.content_index or 0, citation=citation)]

    def _partial_image(self, ev: Envelope, data: bytes | str) -> list[Event]:
        # A preview: kept as the image until the item's final result replaces it.
        fmt = ev.output_format
        value = ImagePart(data=ev.partial_image_b64 or "", media_type=f"image/{fmt}" if fmt else None)
        return [PartDone(message=ev.output_index or 0, part="image", value=value)]

    def _audio(self, ev: Envelope, data: bytes | str) -> list[Event]:
        delta = _delta(ev)
        if ev.type == "response.audio.delta":
            return [AudioDelta(message="audio", part="audio", data=delta)]
        return [AudioDelta(message="audio", part="audio", transcript=delta)]

    # ------------------------------------------------------------------ parts and items

    def _part_added(self, ev: Envelope, data: bytes | str) -> list[Event]:
        part = ev.part
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in ("output_text", "refusal"):
            return []  # reasoning_text goes to the item's reasoning part; others come whole at .done
        value = content_part(part)
        return [PartStart(message=ev.output_index or 0, part=ev.content_index or 0, value=value)]

    def _part_done(self, ev: Envelope, data: bytes | str) -> list[Event]:
        part = ev.part
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in ("output_text", "refusal"):
            return []
        return [PartDone(message=ev.output_index or 0, part=ev.content_index or 0, value=content_part(part))]

    def _item_added(self, ev: Envelope, data: bytes | str) -> list[Event]:
        item = ev.item
        index = ev.output_index or 0
        out: list[Event] = []
        if not self._started:
            out.append(ResponseStart(protocol=PROTOCOL))
            self._started = True
        if not isinstance(item, dict):
            return out
        kind = item.get("type")
        if kind in _CALLS_FOR_FINISH:
            self._saw_call = True
        msg = item_message(item, [])
        out.append(
            MessageStart(
                message=index,
                role=msg.role,
                type=msg.type,
                id=msg.id,
                phase=msg.phase,
                provider_raw=msg.provider_raw,
            )
        )
        if kind == "message":
            return out  # content parts arrive with content_part.added
        if kind in CALL_TYPES or kind == "reasoning":
            out.extend(PartStart(message=index, part=key, value=p) for key, p in item_parts(item)[:1])
        return out

    def _item_done(self, ev: Envelope, data: bytes | str) -> list[Event]:
        item = ev.item
        if isinstance(item, dict) and item.get("type") in _CALLS_FOR_FINISH:
            self._saw_call = True
        self._done_items.add(ev.output_index or 0)
        return _done_events(ev.output_index or 0, item, replay=False)

    # ------------------------------------------------------------------ lifecycle

    def _lifecycle(self, ev: Envelope, data: bytes | str) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [_response_start(ev.response)]

    def _terminal(self, ev: Envelope, data: bytes | str) -> list[Event]:
        response = ev.response if isinstance(ev.response, dict) else {}
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(_response_start(response))
        output = response.get("output")
        if isinstance(output, list):
            # The terminal response's output settles every item the stream did not complete
            # (one cut short, or lost in a gap). Items completed by output_item.done keep that
            # value: the server re-encrypts reasoning per event, so the bytes may differ.
            for i, item in enumerate(output):
                if isinstance(item, dict) and item.get("type") in _CALLS_FOR_FINISH:
                    self._saw_call = True
                if i not in self._done_items:
                    out += _done_events(i, item, replay=True)
        usage = usage_from(response.get("usage"))
        if usage is not None:
            out.append(UsageUpdate(usage=usage))
        status = response.get("status")
        if ev.type == "response.failed" or status == "failed":
            out.append(
                StreamErrorEvent(error=error_from(response.get("error") or {"type": "response.failed"}))
            )
            return out
        if ev.type == "response.incomplete" or status in ("incomplete", "cancelled"):
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            out.append(
                ResponseDone(
                    status="incomplete",
                    finish_reason=_INCOMPLETE.get(reason, "other") if isinstance(reason, str) else "other",
                    provider_finish_reason=reason if isinstance(reason, str) else status,
                )
            )
            return out
        out.append(
            ResponseDone(
                status="completed",
                finish_reason="tool_calls" if self._saw_call else "stop",
                provider_finish_reason=status if isinstance(status, str) else None,
            )
        )
        return out

    def _error(self, ev: Envelope, data: bytes | str) -> list[Event]:
        raw = msgspec.json.decode(data)
        body = ev.error if isinstance(ev.error, dict) else raw  # nested (observed) or flat (documented)
        return [StreamErrorEvent(error=error_from(body, raw))]


def _delta(ev: Envelope) -> str:
    delta = ev.delta
    return delta if isinstance(delta, str) else ""


def _response_start(response: Any) -> ResponseStart:
    if not isinstance(response, dict):
        return ResponseStart(protocol=PROTOCOL)
    rid = response.get("id")
    model = response.get("model")
    raw = {k: v for k, v in response.items() if k not in ("output", "usage", "status")}
    return ResponseStart(
        protocol=PROTOCOL,
        id=rid if isinstance(rid, str) else None,
        model=model if isinstance(model, str) else None,
        provider_raw=raw,
    )


def _done_events(index: int, item: Any, *, replay: bool) -> list[Event]:
    parts = item_parts(item)
    out: list[Event] = []
    for key, part in parts:
        if key == "unknown" and not replay and isinstance(part, UnknownPart):
            # Counted once, when the item completes; a replay in the terminal event only confirms it.
            out.append(UnknownEvent(provider_type=part.provider_type, raw=part.raw, message=index, part=key))
        else:
            out.append(PartDone(message=index, part=key, value=part))
    msg = item_message(item, [p for _, p in parts])
    out.append(MessageDone(message=index, status=msg.status, value=msg))
    return out
