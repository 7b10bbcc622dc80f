"""Anthropic Messages stream decoder: ``message_start`` … ``message_stop`` SSE → events.

Keys it emits: ``message`` is always ``0`` (one assistant message per stream) and ``part`` is the
content block ``index``. It keeps only framing-local state: the stop reason of the last
``message_delta`` (repeated on ``ResponseDone``) and the raw ``compaction`` blocks whose deltas
it folds in until their ``content_block_stop``.

Unknown event types become response-level unknown events; unknown block types and
unknown delta types become unknown parts of the message (raw kept, counted). It must not hold
item state: text, arguments and usage are accumulated by the aggregator.

Bad input is a :class:`~maas_stream.RemoteProtocolError` naming the frame, never a
``TypeError``/``KeyError``: the typed envelope (``_wire``) rejects a non-string ``type``, a
non-integer or negative ``index`` and a malformed ``delta``; the shared mapping (``_blocks``)
rejects blocks, citations and usage whose fields have the wrong JSON type. A block index is
only a key (its state lives in dicts by what arrived), so its value never sizes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ... import events
from ..._exceptions import RemoteProtocolError
from ..._holders import EMPTY, writable
from ..._model import FinishReason, UnknownPart
from .._base import SSEStreamDecoder, model_name
from .._direct import ARGS, TEXT
from .._names import ANTHROPIC as PROTOCOL
from ._blocks import (
    KNOWN_RAW_TYPES,
    MESSAGE_FIELDS,
    block_to_part,
    citation_from,
    error_from,
    finish_of,
    string,
    usage_from,
)
from ._wire import Delta, Frame, frame_decoder

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["StreamDecoder"]


class StreamDecoder(SSEStreamDecoder):
    """Decode an Anthropic Messages stream (``POST /v1/messages`` with ``stream: true``).

    Handles every event of PROTOCOLS.md §3 and every block and delta type of §3.3-3.4
    (beta types included); ``ping`` is skipped. ``message_delta`` usage is cumulative and is
    passed on as an assignment. A stream that ends without ``message_stop`` stays incomplete.
    """

    protocol = PROTOCOL
    direct = True

    __slots__ = ("_decoded", "_finish", "_provider_finish", "_raw", "_unknown", "_usage")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._finish: FinishReason | None = None
        self._decoded: tuple[bytes, Frame] | None = None
        """A frame the direct fold decoded and hands :meth:`normal`: :meth:`on_frame` reads it once."""
        self._provider_finish: str | None = None
        self._raw: dict[int, dict[str, Any]] = EMPTY  # (a dict of its own at the first)
        self._usage: dict[str, Any] = {}
        """The message's usage as known so far (``message_delta`` counts overwrite it)."""
        self._unknown: frozenset[int] = _NONE
        """Indices of this message's blocks of an unknown type: their deltas stay unknown too (block
        indices are unique in a message; a re-encoded unknown block may be stopped before its deltas)."""

    def on_frame(self, event: str, data: bytes | str) -> list[events.Event]:
        # The raw-bytes fast path: the typed decode reads the payload as it came; a blank
        # keep-alive (or bad bytes) is told apart only when the decode fails.
        decoded = self._decoded
        try:
            if decoded is not None and decoded[0] is data:
                self._decoded = None
                frame = decoded[1]
            else:
                frame = frame_decoder.decode(data)
        except msgspec.DecodeError:
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            if not text or text.isspace():
                return []
            raise
        kind = frame.type or event
        if kind == "content_block_delta":
            # The common case: a text or tool-input delta is one event.
            delta = frame.delta
            if delta is not None and frame.index not in self._unknown:
                dtype = delta.type
                if dtype == "text_delta":
                    return [events.TextDelta(message=0, part=frame.index, text=delta.text or "")]
                if dtype == "input_json_delta":
                    return [
                        events.ArgumentsDelta(message=0, part=frame.index, delta=delta.partial_json or "")
                    ]
        handler = _HANDLERS.get(kind)
        if handler is None:
            return [events.UnknownEvent(provider_type=kind, raw=msgspec.json.decode(data))]
        return handler(self, frame, data)

    def fold_frames(self, payloads: list[bytes], names: Sequence[str]) -> None:
        """Fold text, tool-input and thinking deltas of started blocks directly; the rest go :meth:`normal`.

        Such a frame's only event is its delta (:meth:`on_frame`'s common case), so it appends
        to the block's text or arguments; anything else, or a block not started, goes as events.
        """
        decode = frame_decoder.decode
        first = self._frames + 1
        for number, data in enumerate(payloads, first):
            try:
                frame = decode(data)
            except _FAULTS:
                frame = None
            if frame is not None and frame.type == "content_block_delta":
                delta = frame.delta
                index = frame.index
                if delta is not None and index not in self._unknown:
                    dtype = delta.type
                    kind = TEXT
                    if dtype == "input_json_delta":
                        kind = ARGS
                        text = delta.partial_json
                    elif dtype == "text_delta":
                        text = delta.text
                    elif dtype == "thinking_delta":
                        text = delta.thinking
                    else:
                        text = None
                        dtype = ""
                    # An empty one goes the normal way, which says what it is: nothing while the
                    # message streams, an error once it has ended (as for a stream of events).
                    if dtype and text and self.fold_delta(0, index, text, kind):
                        continue
            if frame is not None:
                self._decoded = (data, frame)  # not decoded twice: on_frame reads it once
            self.normal(number, names[number - first], data)

    # ------------------------------------------------------------------ message level

    def _on_message_start(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        message = frame.message
        self._unknown = _NONE
        if not isinstance(message, dict):
            raise RemoteProtocolError("message_start without a message object", event_type="message_start")
        extra = {k: v for k, v in message.items() if k not in MESSAGE_FIELDS}
        msg_id = string(message, "id", "message")
        content = message.get("content")
        if content is not None and not isinstance(content, list):
            raise RemoteProtocolError(
                "message_start: message.content must be a list", event_type="message_start"
            )
        out: list[events.Event] = [
            events.ResponseStart(
                protocol=PROTOCOL,
                id=msg_id,
                model=model_name(string(message, "model", "message")),
                provider_raw=extra or None,
            )
        ]
        raw_usage = message.get("usage")
        self._usage = raw_usage if isinstance(raw_usage, dict) else {}
        usage = usage_from(raw_usage)
        if usage is not None:
            out.append(events.UsageUpdate(usage=usage))
        out.append(events.MessageStart(message=0, role="assistant", id=msg_id))
        if content:
            # A message_start that already carries blocks (not seen from the API; proxies may).
            for i, block in enumerate(content):
                out.extend(self._start(i, block))
                out.append(events.PartDone(message=0, part=i))
        return out

    def _on_message_delta(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        out: list[events.Event] = []
        raw_usage = frame.usage
        if isinstance(raw_usage, dict):
            # Cumulative: the counts given overwrite those known; canonical counts (sums
            # with the cache counts) are made from the whole object.
            raw_usage = self._usage = {**self._usage, **raw_usage}
        usage = usage_from(raw_usage)
        if usage is not None:
            out.append(events.UsageUpdate(usage=usage))
        delta = frame.delta
        if delta is not None and delta.stop_reason:
            reason = delta.stop_reason
            self._finish = finish_of(reason)
            self._provider_finish = reason
            out.append(
                events.MessageDone(message=0, finish_reason=self._finish, provider_finish_reason=reason)
            )
        return out

    def _on_message_stop(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        return [events.ResponseDone(finish_reason=self._finish, provider_finish_reason=self._provider_finish)]

    def _on_error(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        return [events.StreamErrorEvent(error=error_from(msgspec.json.decode(data)))]

    # ------------------------------------------------------------------ blocks

    def _on_block_start(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        return self._start(frame.index, frame.content_block)

    def _start(self, index: int, block: Any) -> list[events.Event]:
        if not isinstance(block, dict):
            raise RemoteProtocolError("content_block_start without a content_block object")
        part = block_to_part(block)  # raises RemoteProtocolError for fields of the wrong type
        if isinstance(part, UnknownPart):
            if part.provider_type not in KNOWN_RAW_TYPES:
                self._unknown = self._unknown | {index}
                return [
                    events.UnknownEvent(provider_type=part.provider_type, raw=block, message=0, part=index)
                ]
            if part.provider_type == "compaction":
                self._raw = writable(self._raw)
                self._raw[index] = dict(block)
            elif part.provider_type == "fallback":
                # The model named by the (last) fallback hop is the one that served the response.
                target = block.get("to")
                model = target.get("model") if isinstance(target, dict) else None
                if isinstance(model, str):
                    start = events.ResponseStart(protocol=PROTOCOL, model=model)
                    return [start, events.PartStart(message=0, part=index, value=part)]
        return [events.PartStart(message=0, part=index, value=part)]

    def _on_block_stop(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        index = frame.index
        raw = self._raw.pop(index, None) if self._raw else None
        if raw is not None:
            value = UnknownPart(provider_type=str(raw.get("type")), raw=raw)
            return [events.PartDone(message=0, part=index, value=value)]
        return [events.PartDone(message=0, part=index)]

    def _on_delta(self, frame: Frame, data: bytes | str) -> list[events.Event]:
        delta = frame.delta
        if delta is None:
            raise RemoteProtocolError("content_block_delta without a delta", event_type="content_block_delta")
        handler = _DELTAS.get(delta.type)
        if handler is None or frame.index in self._unknown:
            # An unknown delta, or a known one (e.g. a signature) on a block we do not know:
            # kept raw, never applied to a part it was not meant for.
            return [
                events.UnknownEvent(
                    provider_type=delta.type or "delta", raw=msgspec.json.decode(data), message=0
                )
            ]
        return handler(self, frame.index, delta, data)

    def _compaction(self, index: int, delta: Delta, data: bytes | str) -> list[events.Event]:
        raw = self._raw.get(index)
        if raw is None:
            return [events.UnknownEvent(provider_type=delta.type, raw=msgspec.json.decode(data), message=0)]
        # As the SDK's beta accumulator does: the delta sets both fields.
        raw["content"] = None if delta.content is msgspec.UNSET else delta.content
        raw["encrypted_content"] = (
            None if delta.encrypted_content is msgspec.UNSET else delta.encrypted_content
        )
        return []


_NONE: Final[frozenset[int]] = frozenset()
"""No block of an unknown type (shared: an empty set costs 216 bytes a stream)."""

_FAULTS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
"""A frame the direct fold cannot read goes the normal way, which reports it (or skips a blank one)."""


def _nothing(decoder: StreamDecoder, frame: Frame, data: bytes | str) -> list[events.Event]:
    return []


def _text(decoder: StreamDecoder, index: int, delta: Delta, data: bytes | str) -> list[events.Event]:
    return [events.TextDelta(message=0, part=index, text=delta.text or "")]


def _json(decoder: StreamDecoder, index: int, delta: Delta, data: bytes | str) -> list[events.Event]:
    return [events.ArgumentsDelta(message=0, part=index, delta=delta.partial_json or "")]


def _thinking(decoder: StreamDecoder, index: int, delta: Delta, data: bytes | str) -> list[events.Event]:
    return [events.ReasoningDelta(message=0, part=index, text=delta.thinking or "")]


def _signature(decoder: StreamDecoder, index: int, delta: Delta, data: bytes | str) -> list[events.Event]:
    return [events.SignatureDelta(message=0, part=index, signature=delta.signature or "")]


def _citation(decoder: StreamDecoder, index: int, delta: Delta, data: bytes | str) -> list[events.Event]:
    return [events.AnnotationAdded(message=0, part=index, citation=citation_from(delta.citation))]


_DELTAS: Final[dict[str, Callable[[StreamDecoder, int, Delta, bytes | str], list[events.Event]]]] = {
    "text_delta": _text,
    "input_json_delta": _json,
    "thinking_delta": _thinking,
    "signature_delta": _signature,
    "citations_delta": _citation,
    "compaction_delta": StreamDecoder._compaction,
}

_HANDLERS: Final[dict[str, Callable[[StreamDecoder, Frame, bytes | str], list[events.Event]]]] = {
    "content_block_delta": StreamDecoder._on_delta,
    "content_block_start": StreamDecoder._on_block_start,
    "content_block_stop": StreamDecoder._on_block_stop,
    "message_start": StreamDecoder._on_message_start,
    "message_delta": StreamDecoder._on_message_delta,
    "message_stop": StreamDecoder._on_message_stop,
    "ping": _nothing,
    "error": StreamDecoder._on_error,
}
