"""Gemini ``streamGenerateContent?alt=sse`` decoder: ``GenerateContentResponse`` chunks → events.

Keys it emits: ``message`` is the candidate index (an ``int``); ``part`` is the ordinal of the
canonical part within that candidate (an ``int``). The decoder decides where a part ends, because
Gemini sends no part boundaries: consecutive text parts of the same kind (thought vs answer) are
one run (a new run starts when a second ``thoughtSignature`` arrives on the same run), every
``functionCall`` with a ``name`` is its own call, and a Vertex streamed call (``willContinue``)
lasts until its terminal ``functionCall`` without ``partialArgs``/``willContinue``.

What each part, usage object, finish reason and citation becomes is the package's one mapping
(``_parts`` and ``_meta``); choices made here (PROTOCOLS.md §4):

* Messages have role ``assistant`` (the canonical role; Gemini's ``model``) and
  ``provider="gemini"``; ``choice_index`` is the candidate index.
* Calls without an ``id`` get a stable synthesized one, ``maas_gc_<responseId>_<candidate>_<n>``
  (same bytes, same ids); no encoder sends such an id back to Gemini.
* A streamed call still open when another part, the finish reason or the end of input arrives is
  cut: it ends ``incomplete`` and so does the response.
* Gemini sends no terminator: ``ResponseDone`` comes from :meth:`StreamDecoder.finish` when every
  candidate seen had a ``finishReason`` (or the prompt was blocked); otherwise the response ends
  ``incomplete``. The finish reason is the provider's, mapped; whether a turn of client calls
  finishes ``tool_calls`` is the aggregator's rule.
* Invalid input (wrong JSON types, arguments that are not a JSON object or not UTF-8, a
  ``partialArgs`` path that is malformed, too deep or indexes absurdly far) raises
  :class:`~maas_stream.RemoteProtocolError`.

It keeps only framing-local state per candidate (the current run and the open streamed call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET

from ... import events as ev
from ..._exceptions import RemoteProtocolError
from ..._model import Message
from .._base import SSEStreamDecoder, model_name
from .._names import GEMINI as PROTOCOL
from ._candidate import CandidateRuns
from ._meta import error_from_wire, finish_from_wire, usage_from_wire
from ._parts import (
    SIGNATURE_TYPE,
    SYNTH_PREFIX,
    call_arguments,
    call_part,
    text_part,
)
from ._wire import (
    Candidate,
    block_reason,
    candidate_fields,
    decode_any,
    decode_chunk,
    fold_decoders,
    normalize,
    raw_part,
    reencoded,
    renamed,
    response_fields,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ._wire import FoldChunk, FoldPart

__all__ = ["SIGNATURE_TYPE", "StreamDecoder"]

_FAULTS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, RemoteProtocolError)
"""A chunk the direct fold cannot read goes the normal way, which reports it (or skips a blank one)."""

_NO_CALLS: Final[Iterator[str]] = iter(())
"""The arguments of a chunk without whole calls."""


def _plan(c: CandidateRuns, parts: list[FoldPart], data: bytes) -> list[str] | None:
    """The arguments of a candidate's whole calls, if every part is common; else ``None``.

    Common: text that continues a run unsigned or opens one (signed or not), and whole calls
    whose arguments read (a streamed one, a signature on an open run, bad arguments: ``None``);
    ``args`` are re-encoded where the normal way renames the chunk's names (and so re-encodes them).
    Follows the run state as :meth:`CandidateRuns.part` would change it, without changing it.
    """
    kind, signed = c.kind, c.signed
    args: list[str] = []
    for part in parts:
        text = part.text
        sig = part.thought_signature
        if text is not UNSET:
            run = "thought" if part.thought else "text"
            if not text and not sig:
                continue
            if kind != run or (sig and signed):
                kind, signed = run, bool(sig)
            elif sig:
                return None  # a signature for the open run: a SignatureDelta
            continue
        call = part.function_call
        if call is None or call.will_continue:
            return None
        if call.name is None and call.args is UNSET and not call.partial_args:
            continue
        try:
            if call.args is not UNSET and renamed(data):
                call = msgspec.structs.replace(call, args=reencoded(call.args))
            args.append(call_arguments(call))
        except _FAULTS:
            return None
        kind, signed = "", False
    return args


class StreamDecoder(SSEStreamDecoder):
    """Decode a Gemini ``streamGenerateContent?alt=sse`` stream (Gemini API and Vertex).

    Handles every part field of PROTOCOLS.md §4.6 (text, thoughts, signatures on any part,
    inline and file data, whole and streamed function calls, function responses, executable
    code and results, server-side tool calls and responses; unknown parts are kept), several
    candidates, ``promptFeedback`` blocks, citation and grounding metadata, usage, and in-stream
    ``{"error": ...}`` chunks. Field names may be camelCase or snake_case.
    """

    protocol = PROTOCOL
    direct = True

    __slots__ = ("_blocked", "_cands", "_error", "_rid", "_snake", "_usage")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rid: str | None = None
        """The response id (``""`` when none is given), ``None`` until the first chunk started the response."""
        self._cands: CandidateRuns | dict[int, CandidateRuns] | None = None
        """The candidates (:meth:`_cand`): one, nearly always, held bare; a dict by index from
        the second on."""
        self._blocked: str | None = None
        self._snake = False
        """The direct fold read the last chunk with snake_case names (``_wire.fold_decoders[1]``)."""
        self._error = False
        self._usage: Any = None
        """The latest ``usageMetadata``, not yet emitted. Gemini repeats usage on every chunk and
        the last one is authoritative, so it is emitted once: before a candidate's finish, before
        an error, and at the end of input."""

    # ------------------------------------------------------------------ frames

    def on_frame(self, event: str, data: bytes | str) -> list[ev.Event]:
        if self._rid is not None and self._target is None:  # (folding: fold_frames read it lean already)
            delta = self._run_delta(data)
            if delta is not None:
                return delta
        # The raw-bytes fast path: the typed decode reads the payload as it came; a blank
        # keep-alive (or bad bytes) is told apart only when the decode fails.
        try:
            chunk = decode_chunk(data)
        except msgspec.DecodeError:
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            if not text.strip():
                return []
            raise
        out: list[ev.Event] = []
        if chunk.usage_metadata:
            self._usage = chunk.usage_metadata
        if chunk.error is not None:
            self._error = True
            self._flush_usage(out)
            out.append(ev.StreamErrorEvent(error=error_from_wire(chunk.error)))
            return out
        if self._rid is None:
            self._rid = chunk.response_id or ""
            raw = response_fields(chunk)
            out.append(
                ev.ResponseStart(
                    protocol=PROTOCOL,
                    id=chunk.response_id,
                    model=model_name(chunk.model_version),
                    provider_raw=raw or None,
                )
            )
        blocked = block_reason(chunk)
        if blocked is not None:
            self._blocked = blocked
        for position, cand in enumerate(chunk.candidates):
            self._candidate(cand, position, data, out)
        return out

    def _run_delta(self, data: bytes | str) -> list[ev.Event] | None:
        """The events of a chunk that only continues a text or thought run; ``None``: another chunk.

        The common chunk of the event path (a converter's, a bridge's): one candidate, one part
        of the open run's kind, no signature, nothing else (read with the lean
        :class:`~._wire.FoldChunk`, which refuses any other field, in the naming the direct fold
        last read). It gives what :meth:`on_frame`'s full reading gives: one delta (none for an
        empty text), its usage kept.
        """
        try:
            chunk: FoldChunk = fold_decoders[self._snake].decode(data)
        except _FAULTS:
            return None
        cs = chunk.candidates
        if len(cs) != 1 or (content := cs[0].content) is None or len(content.parts) != 1:
            return None
        part = content.parts[0]
        text = part.text
        if text is UNSET or part.thought_signature or part.function_call is not None:
            return None
        c = self._cand(cs[0].index)
        if c is None or c.kind != ("thought" if part.thought else "text"):
            return None
        if chunk.usage_metadata:
            self._usage = chunk.usage_metadata
        if not text:
            return []
        if part.thought:
            return [ev.ReasoningDelta(message=c.index, part=c.key, text=text)]
        return [ev.TextDelta(message=c.index, part=c.key, text=text)]

    def fold_frames(self, payloads: list[bytes], names: Sequence[str]) -> None:
        """Fold each chunk that holds only common parts directly, all or nothing per chunk.

        A chunk is read with the lean :class:`~._wire.FoldChunk` (camelCase or snake_case
        names, whichever read the last one); one that does not decode so (a finish reason, an
        error, candidate metadata, another part kind, an unknown field) goes :meth:`normal`. A
        common chunk continues a text or thought run (:meth:`fold_delta`), opens the next run
        or holds whole calls (:meth:`_fold_chunk`), with the state :meth:`on_frame` leaves;
        its usage is kept as :meth:`on_frame` keeps it.
        """
        fold = self.fold_delta
        decode = fold_decoders[self._snake].decode
        started = self._rid is not None
        last = -1  # the candidate index looked up last, and what was found (a normal frame may add one)
        c: CandidateRuns | None = None
        first = self._frames + 1
        for number, data in enumerate(payloads, first):
            if started:
                try:
                    chunk: FoldChunk | None = decode(data)
                except _FAULTS:
                    chunk = self._other_names(data)
                    decode = fold_decoders[self._snake].decode
                if chunk is not None:
                    cs = chunk.candidates
                    if len(cs) == 1 and (content := cs[0].content) is not None and len(content.parts) == 1:
                        part = content.parts[0]
                        text = part.text
                        index = cs[0].index
                        if index != last:
                            last, c = index, self._cand(index)
                        if c is not None and text is not UNSET:
                            kind = "thought" if part.thought else "text"
                            if c.kind == kind and not part.thought_signature:
                                done = not text or fold(index, c.key, text)
                            else:  # a run opens: _fold_chunk's work for one text part
                                done = (
                                    c.kind != "stream"
                                    and c.finish is None
                                    and (c.kind != kind or c.signed)
                                    and self._fold_part(c, part, _NO_CALLS)
                                )
                            if done:
                                if chunk.usage_metadata:
                                    self._usage = chunk.usage_metadata
                                continue
                    if self._fold_chunk(chunk, data):
                        if chunk.usage_metadata:
                            self._usage = chunk.usage_metadata
                        continue
            self.normal(number, names[number - first], data)
            started = self._rid is not None
            last = -1

    def _other_names(self, data: bytes) -> FoldChunk | None:
        """A chunk the last naming did not read, read with the other (kept for the next ones)."""
        try:
            chunk = fold_decoders[not self._snake].decode(data)
        except _FAULTS:
            return None
        self._snake = not self._snake
        return chunk

    def _fold_chunk(self, chunk: FoldChunk, data: bytes) -> bool:
        """Fold a chunk of known candidates and common parts, as :meth:`on_frame` would; ``False``: untouched.

        All or nothing: every part is checked first (a call's arguments read, so bad ones go the
        normal way and fail there), then applied; only the first change can be refused (the
        target is not folding directly), before anything changed.
        """
        cs = chunk.candidates
        if len(cs) > 1 and len({cand.index for cand in cs}) != len(cs):
            return False
        plans: list[tuple[CandidateRuns, list[FoldPart], list[str]]] = []
        for cand in cs:
            c = self._cand(cand.index)
            if c is None or c.finish is not None or c.kind == "stream":
                return False
            parts = cand.content.parts if cand.content is not None else []
            args = _plan(c, parts, data)
            if args is None:
                return False
            plans.append((c, parts, args))
        changed = False
        for c, parts, args in plans:
            calls = iter(args)
            for part in parts:
                if not self._fold_part(c, part, calls):
                    assert not changed, "the target refused a part after folding one"
                    return False
                changed = True
        return True

    def _fold_part(self, c: CandidateRuns, part: FoldPart, args: Iterator[str]) -> bool:
        """Fold one part :func:`_plan` found common; ``False``: the target refused, nothing changed."""
        index = c.index
        close = c.key if c.kind in ("text", "thought") else None
        text = part.text
        sig = part.thought_signature
        if text is not UNSET:
            kind = "thought" if part.thought else "text"
            if not text and not sig:
                return True
            if c.kind == kind and not sig:
                return not text or self.fold_delta(index, c.key, text)
            value = text_part("", thought=kind == "thought", signature=sig or None)
            if self.fold_part(index, close, c.key + 1, value) is None:
                return False
            c.key += 1
            c.kind = kind
            c.signed = bool(sig)
            if kind == "text":
                c.last_text = c.key
            return not text or self.fold_delta(index, c.key, text)
        call = part.function_call
        assert call is not None
        if call.name is None and call.args is UNSET and not call.partial_args:
            return True  # a bare terminal marker with no call open
        call_id = f"{SYNTH_PREFIX}{c.rid}_{index}_{c.calls + 1}"
        whole = call_part(call, call_id, sig, next(args))
        if self.fold_part(index, close, c.key + 1, whole, done=True) is None:
            return False
        c.key += 1
        c.kind = ""
        c.signed = False
        c.calls += 1
        return True

    def _flush_usage(self, out: list[ev.Event]) -> None:
        if self._usage is not None:
            usage = usage_from_wire(normalize(decode_any(self._usage)))
            self._usage = None
            if usage is not None:
                out.append(ev.UsageUpdate(usage=usage))

    def on_finish(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        self._flush_usage(out)
        cands = self._all_cands()
        for c in cands:
            if c.finish is None:
                self._close_candidate(c, out, None)
        if self._error:
            return out
        first = cands[0] if cands else None
        if first is not None and all(c.finish is not None for c in cands):
            out.append(
                ev.ResponseDone(
                    status="incomplete" if any(c.cut for c in cands) else None,
                    finish_reason=finish_from_wire(first.finish),
                    provider_finish_reason=first.finish,
                )
            )
        elif first is None and self._blocked is not None:
            out.append(ev.ResponseDone(finish_reason="content_filter", provider_finish_reason=self._blocked))
        return out

    # ------------------------------------------------------------------ candidates

    def _cand(self, index: int) -> CandidateRuns | None:
        """The candidate of ``index``, if it started."""
        held = self._cands
        if isinstance(held, dict):
            return held.get(index)
        return held if held is not None and held.index == index else None

    def _all_cands(self) -> list[CandidateRuns]:
        """The candidates, in the order they started."""
        held = self._cands
        if isinstance(held, dict):
            return list(held.values())
        return [] if held is None else [held]

    def _candidate(self, cand: Candidate, position: int, data: bytes | str, out: list[ev.Event]) -> None:
        index = cand.index
        c = self._cand(index)
        if c is None:
            c = CandidateRuns(index, self._rid or "")
            held = self._cands
            if held is None:
                self._cands = c
            elif isinstance(held, dict):
                held[index] = c
            else:
                self._cands = {held.index: held, index: c}
            out.append(ev.MessageStart(message=index, role="assistant", choice_index=index))
        content = cand.content
        if content is not None:
            for n, part in enumerate(content.parts):
                if not c.part(part, out):
                    c.unknown(raw_part(data, position, n), out)
        c.note(candidate_fields(cand))
        if cand.finish_reason:
            c.finish = cand.finish_reason
            self._close_candidate(c, out, cand.finish_reason)

    def _close_candidate(self, c: CandidateRuns, out: list[ev.Event], finish: str | None) -> None:
        if c.kind == "stream":
            c.cut_call(out)
        c.annotate(out)
        c.kind = ""
        reason = finish_from_wire(finish)
        self._flush_usage(out)
        value = Message(
            role="assistant",
            choice_index=c.index,
            finish_reason=reason,
            provider=PROTOCOL,
            provider_raw=dict(c.fields) if c.fields else None,
        )
        out.append(
            ev.MessageDone(
                message=c.index,
                status="incomplete" if c.cut or finish is None else None,
                finish_reason=reason,
                provider_finish_reason=finish,
                value=value,
            )
        )
