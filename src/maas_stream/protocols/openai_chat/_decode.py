"""OpenAI Chat Completions stream decoder: ``chat.completion.chunk`` SSE → events.

Keys it emits: ``message`` is the choice index; ``part`` is the ``tool_calls[].index`` (an
``int``) for tool calls, or one of ``"content"``, ``"refusal"``, ``"reasoning"``, ``"audio"``,
``"function_call"`` and ``("reasoning_details", i)``. It keeps only framing-local state: which
choices and reasoning channels it has announced, and whether ``[DONE]`` was seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from ... import events as ev
from ..._accumulate import FRAGMENTS, compact
from ..._exceptions import RemoteProtocolError
from ..._model import ReasoningPart, ToolCallPart
from .._base import SSEStreamDecoder, model_name
from .._direct import ARGS
from ._map import (
    LEGACY,
    PROTOCOL,
    call_kind,
    citation_from_annotation,
    detail_part,
    error_from,
    finish_from,
    response_raw,
    usage_from,
)
from ._wire import (
    Choice,
    Chunk,
    Delta,
    FoldChunk,
    FoldLaterChunk,
    LaterChunk,
    ReasoningDetail,
    ToolCallDelta,
    chunk_decoder,
    fold_decoder,
    fold_later_decoder,
    later_decoder,
)

_FIRST: Final = (0,)
"""The choices announced in most streams (one shared tuple rather than 48 bytes a stream)."""

_NO_RUN: Final[list[str]] = []
"""No run yet (never appended to: its choice is ``None``)."""

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...events import Key

__all__ = ["StreamDecoder"]


class StreamDecoder(SSEStreamDecoder):
    """Decode an OpenAI Chat Completions stream (and OpenAI-compatible servers' streams).

    Handles every delta field of PROTOCOLS.md §1: content, refusal, tool calls by index (id on
    the first fragment only, or repeated), legacy ``function_call``, audio, ``n > 1`` choices,
    the usage-only chunk, logprobs, ``[DONE]``, error objects inside chunks and ``event: error``
    frames, and the compatible-provider fields ``reasoning_content`` / ``reasoning`` /
    ``reasoning_details`` and ``annotations``.
    """

    protocol = PROTOCOL
    direct = True

    __slots__ = ("_choices", "_done", "_have_id", "_reasoning", "_started")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._started = False
        self._have_id = False
        self._choices: tuple[int, ...] = ()
        """The choices announced (a tuple: there are few; an empty set costs 216 bytes, a list 56)."""
        self._reasoning: set[tuple[int, Any]] | None = None
        """The reasoning channels announced per choice (made on first use)."""
        self._done = False

    def on_frame(self, event: str, data: bytes | str) -> list[ev.Event]:
        out: list[ev.Event] = []
        chunk: Chunk | LaterChunk
        try:
            if self._have_id:  # the envelope was read: a later chunk's is not (LaterChunk)
                chunk = later_decoder.decode(data)
            else:
                chunk = chunk_decoder.decode(data)
        except msgspec.DecodeError:
            return self._odd_frame(event, data)
        if self._done:
            raise RemoteProtocolError("data after [DONE]", event_type=event)
        if type(chunk) is Chunk and (chunk.id or not self._started):
            # Azure sends a first chunk with an empty id (prompt filter results): announce the
            # response at once and again when the real id arrives.
            self._started = True
            self._have_id = bool(chunk.id)
            out.append(
                ev.ResponseStart(
                    protocol=PROTOCOL,
                    id=chunk.id or None,
                    model=model_name(chunk.model or None),
                    provider_raw=response_raw(chunk.created, chunk.system_fingerprint, chunk.service_tier),
                )
            )
        if chunk.prompt_filter_results is not None or chunk.moderation is not None:
            # Whole-chunk extensions (Azure prompt filters, moderation results): kept verbatim.
            kind = "prompt_filter_results" if chunk.prompt_filter_results is not None else "moderation"
            out.append(ev.UnknownEvent(provider_type=kind, raw=msgspec.json.decode(data)))
        for choice in chunk.choices:
            self._choice(choice, out)
        if chunk.usage:
            usage = usage_from(chunk.usage)
            if usage is not None:
                out.append(ev.UsageUpdate(usage=usage))
        if chunk.error:
            out.append(ev.StreamErrorEvent(error=error_from(chunk.error)))
        elif event == "error":
            out.append(ev.StreamErrorEvent(error=error_from(msgspec.json.decode(data))))
        return out

    def fold_frames(self, payloads: list[bytes], names: Sequence[str]) -> None:
        """Fold the frames of one text or one arguments delta directly; the others go :meth:`normal`.

        A common frame is one whose events would be only that delta: its choice announced
        already, no finish reason, log-probabilities, usage, error, id to announce, nor any field
        but the content or one call's argument fragment (read with ``fold_decoder``).
        """
        seen = self._choices
        plain = self._have_id and not self._done  # no response start nor [DONE] to mind
        # A chunk after the id's is read without its envelope (as on_frame reads it).
        decode = fold_later_decoder.decode if self._have_id else fold_decoder.decode
        first = self._frames + 1
        # An "event: error" frame is never common; a chunk of plain "data:" events has none.
        typed = type(names) is not list or names.count("message") != len(names)
        # The buffers the last text and the last arguments delta went to (fold_delta's append,
        # inlined), with their choice (None: none; a normal frame may change the parts) and call.
        text_run, text_index, args_run, args_index, args_call = self._runs()
        chunk: FoldChunk | FoldLaterChunk | None
        for number, data in enumerate(payloads, first):
            try:
                chunk = decode(data)
            except _FAULTS:
                chunk = None
            if not (
                chunk is None
                or len(chunk.choices) != 1
                or chunk.usage
                or (typed and names[number - first] == "error")
                or (not plain and (self._done or getattr(chunk, "id", None) or not self._started))
            ):
                choice = chunk.choices[0]
                delta = choice.delta
                index = choice.index
                if not (
                    delta is None
                    or choice.finish_reason
                    or index not in seen
                    or delta.reasoning_content is not None
                    or delta.reasoning is not None
                ):
                    calls = delta.tool_calls
                    if calls is None:
                        text = delta.content
                        if not text:
                            continue  # nothing to fold, nothing to announce
                        if index == text_index:
                            text_run.append(text)
                            if len(text_run) >= FRAGMENTS:
                                compact(text_run)
                            continue
                        run = self.fold_run(index, "content", text)
                        if run is not None:
                            text_run, text_index = run, index
                            continue
                    elif len(calls) == 1 and not delta.content:
                        call = calls[0]
                        fn = call.function
                        # (an empty fragment is appended: it changes nothing, as it adds no event)
                        if fn is not None and not call.id and not fn.name and fn.arguments is not None:
                            args = fn.arguments
                            if index == args_index and call.index == args_call:
                                args_run.append(args)
                                if len(args_run) >= FRAGMENTS:
                                    compact(args_run)
                                continue
                            run = self.fold_run(index, call.index, args, ARGS)
                            if run is not None:
                                args_run, args_index, args_call = run, index, call.index
                                continue
            text_index = args_index = None
            self.normal(number, names[number - first] if typed else "message", data)
            plain = self._have_id and not self._done
            decode = fold_later_decoder.decode if self._have_id else fold_decoder.decode
            seen = self._choices

    def _runs(self) -> tuple[list[str], int | None, list[str], int | None, Key]:
        """The runs :meth:`fold_frames` starts with: the one the last chunk ended in, if any.

        The part the last delta went to is kept between chunks (``DirectFold``); one delta a
        chunk, as a slow network delivers them, then appends without a call.
        """
        hot = self._hot
        message = self._hot_message
        if hot is not None and type(message) is int:
            part = self._hot_part
            if part == "content" and hot.text is not None:
                return hot.text, message, _NO_RUN, None, 0
            if type(part) is int and hot.args is not None:
                return _NO_RUN, None, hot.args, message, part
        return _NO_RUN, None, _NO_RUN, None, 0

    def _odd_frame(self, event: str, data: bytes | str) -> list[ev.Event]:
        """A frame that is not a JSON chunk: ``[DONE]``, an empty keep-alive, or bad bytes."""
        if data[:6] in _DONE:
            if self._done:
                raise RemoteProtocolError("data after [DONE]", event_type=event)
            self._done = True
            return [ev.ResponseDone()]
        if not data.strip():
            return []  # an empty data line carries nothing (some proxies send one as keep-alive)
        if self._done:
            raise RemoteProtocolError("data after [DONE]", event_type=event)
        if isinstance(data, bytes):
            # Not valid UTF-8: decode with replacement, as the SSE standard does, and retry.
            text = data.decode("utf-8", "replace")
            if text.encode() != data:
                return self.on_frame(event, text)
        chunk_decoder.decode(data)  # raises the DecodeError with its message
        raise AssertionError("unreachable: the frame failed to decode above")

    def _choice(self, choice: Choice, out: list[ev.Event]) -> None:
        index = choice.index
        delta = choice.delta
        if index not in self._choices:
            self._choices = _FIRST if index == 0 and not self._choices else (*self._choices, index)
            role = delta.role if delta is not None and delta.role else "assistant"
            out.append(ev.MessageStart(message=index, role=_role(role), choice_index=index))
        if delta is not None:
            content = delta.content
            if (
                content
                and delta.tool_calls is None
                and delta.reasoning_details is None
                and delta.reasoning_content is None
                and delta.reasoning is None
                and delta.annotations is None
                and delta.refusal is None
                and delta.audio is None
                and delta.function_call is None
            ):
                out.append(ev.TextDelta(message=index, part="content", text=content))  # the common case
            else:
                self._delta(index, delta, out)
        logprobs = choice.logprobs
        if logprobs is not None:
            if logprobs.content:
                out.append(ev.LogprobsDelta(message=index, part="content", logprobs=logprobs.content))
            if logprobs.refusal:
                out.append(ev.LogprobsDelta(message=index, part="refusal", logprobs=logprobs.refusal))
        if choice.finish_reason:
            out.append(
                ev.MessageDone(
                    message=index,
                    finish_reason=finish_from(choice.finish_reason),
                    provider_finish_reason=choice.finish_reason,
                )
            )

    def _delta(self, index: int, delta: Delta, out: list[ev.Event]) -> None:
        details = delta.reasoning_details
        if details:
            for detail in details:
                self._reasoning_detail(index, detail, out)
        else:
            reasoning = delta.reasoning_content
            field = "reasoning_content"
            if not reasoning and isinstance(delta.reasoning, str):
                reasoning = delta.reasoning
                field = "reasoning"
            if reasoning:
                announced = self._announced()
                if (index, field) not in announced:
                    announced.add((index, field))
                    out.append(
                        ev.PartStart(message=index, part="reasoning", value=ReasoningPart(origin_field=field))
                    )
                out.append(ev.ReasoningDelta(message=index, part="reasoning", text=reasoning))
        if delta.annotations:
            for annotation in delta.annotations:
                citation = citation_from_annotation(annotation)
                out.append(ev.AnnotationAdded(message=index, part="content", citation=citation))
        if delta.content:
            out.append(ev.TextDelta(message=index, part="content", text=delta.content))
        if delta.refusal:
            out.append(ev.RefusalDelta(message=index, part="refusal", text=delta.refusal))
        if delta.tool_calls:
            self._tool_calls(index, delta.tool_calls, out)
        legacy = delta.function_call
        if legacy is not None:
            if legacy.name:
                # The legacy channel has no call id; item_id marks the channel so a Chat
                # re-encode can put the call back where it came from.
                value = ToolCallPart(id="", name=legacy.name, arguments="", item_id=LEGACY)
                out.append(ev.PartStart(message=index, part="function_call", value=value))
            if legacy.arguments:
                out.append(ev.ArgumentsDelta(message=index, part="function_call", delta=legacy.arguments))
        audio = delta.audio
        if audio is not None:
            out.append(
                ev.AudioDelta(
                    message=index,
                    part="audio",
                    data=audio.data,
                    transcript=audio.transcript,
                    id=audio.id,
                    expires_at=audio.expires_at,
                )
            )

    def _tool_calls(self, index: int, calls: list[ToolCallDelta], out: list[ev.Event]) -> None:
        for call in calls:
            fn = call.function
            custom = call.custom
            name = fn.name if fn is not None else custom.name if custom is not None else None
            if call.id or name:
                value = ToolCallPart(id=call.id or "", name=name or "", arguments="", kind=call_kind(call))
                out.append(ev.PartStart(message=index, part=call.index, value=value))
            args = fn.arguments if fn is not None else custom.input if custom is not None else None
            if args:
                out.append(ev.ArgumentsDelta(message=index, part=call.index, delta=args))

    def _announced(self) -> set[tuple[int, Any]]:
        """The reasoning channels announced so far (made on first use)."""
        if self._reasoning is None:
            self._reasoning = set()
        return self._reasoning

    def _reasoning_detail(self, index: int, detail: ReasoningDetail, out: list[ev.Event]) -> None:
        key = ("reasoning_details", detail.index or 0)
        if detail.type == "reasoning.encrypted":
            # Opaque reasoning: a block of its own, complete as it arrives.
            self._announced().add((index, key))
            out.append(ev.PartStart(message=index, part=key, value=detail_part(detail)))
            return
        announced = self._announced()
        if (index, key) not in announced:
            announced.add((index, key))
            value = ReasoningPart(id=detail.id, format=detail.format, origin_field="reasoning_details")
            out.append(ev.PartStart(message=index, part=key, value=value))
        if detail.text:
            out.append(ev.ReasoningDelta(message=index, part=key, text=detail.text))
        if detail.summary:
            out.append(ev.SummaryDelta(message=index, part=key, index=0, text=detail.summary))
        if detail.signature:
            out.append(ev.SignatureDelta(message=index, part=key, signature=detail.signature))


_DONE: Final = (b"[DONE]", "[DONE]")

_FAULTS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
"""A frame the direct fold cannot read goes the normal way, which reports it (or reads ``[DONE]``)."""


_ROLES: Final = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _role(role: str) -> Any:
    return role if role in _ROLES else "assistant"
