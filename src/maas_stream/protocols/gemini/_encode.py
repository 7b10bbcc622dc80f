"""Gemini stream encoder: canonical events → ``streamGenerateContent?alt=sse`` chunks.

Every canonical message maps to a candidate: its ``choice_index`` when it has one, else
candidate 0 (the items or blocks of a Responses or Anthropic turn all belong to one answer).
Output is ``data: <GenerateContentResponse>`` lines, each followed by a blank line and nothing
else (google-genai's parser reads any other line as error text).

Each text or thought delta is written at once as a part; every other part (a function call
included) is written whole when it closes, as Gemini API streams send calls, through the
package's one part mapping (``_parts.ToWire``). Content arrives only as deltas (the aggregator's
rule), so nothing here re-sends a part's final value. The finish reason goes on a last chunk per
candidate, with the usage known then (``_meta``: the same rendering as the response body), and
that chunk always carries ``content`` (an empty text part when nothing else is left, as Gemini 3
streams end): google-genai's chat helper (``client.chats``) leaves out of its history a turn
with a chunk that has no ``content``. For the same reason a finish chunk is held until the
next chunk, the response's end or the stream's end, so that usage reported after the finish
(a Chat upstream's usage-only chunk) rides on it instead of on a chunk without candidates; usage
is written alone only when no candidate was announced (a blocked prompt), at the end of a cut
stream, or before an error.

What Gemini cannot carry is dropped and recorded in :attr:`StreamEncoder.drops`, never turned
into text (a refusal alone is written as text, per delta, so the user still reads it, and
recorded as a ``refusal`` drop): signatures of other origins (replay is ``_replay.replayable``'s call), redacted or
encrypted reasoning, logprobs, server-side and MCP calls of other providers,
citations without a URL, audio transcripts, unknown parts and frames of other protocols. A
call cut by the end of its source stream is dropped too and its candidate gets no
``finishReason``, so the output stays incomplete as the source was.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec

from ... import events as ev
from ..._drops import DropLog
from ..._model import (
    CitationPart,
    FinishReason,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    UnknownPart,
    Usage,
)
from .._base import EventEncoder
from .._names import GEMINI as PROTOCOL
from .._names import GOOGLE_LIVE, OPENAI_REALTIME
from .._template import HOLE, template
from ._meta import (
    candidate_fields_to_wire,
    citation_to_wire,
    error_to_wire,
    finish_to_wire,
    usage_to_wire,
)
from ._parts import SIGNATURE_TYPE, ToWire

__all__ = ["StreamEncoder"]

_json: Final = msgspec.json.Encoder()
_SEP: Final = b"\r\n\r\n"
_SESSIONS: Final = frozenset({GOOGLE_LIVE, OPENAI_REALTIME})


class _Out:
    """How one canonical part is being written out."""

    __slots__ = ("cand", "frames", "kind", "sig", "signed")

    def __init__(self, kind: str, cand: int) -> None:
        self.kind = kind
        """``text``, ``thought`` (written per delta), ``whole`` (written when it closes) or ``drop``."""
        self.cand = cand
        self.sig: str | None = None
        """A signature waiting for the next part written for this part."""
        self.signed = False
        """A signature of this part was seen (written, waiting, or dropped)."""
        self.frames: tuple[Any, Any, bytes, bytes] | None = None
        """This part's text chunk, pre-encoded: the usage and wire writer it was made with, and
        the bytes before and after the text (see ``StreamEncoder._write_text``)."""

    def take(self, wire: ToWire, signature: str | None) -> None:
        """Keep a signature of this part for its next written part, if it may go to Gemini."""
        if signature is not None:
            self.signed = True
            self.sig = wire.signature(signature)


class StreamEncoder(EventEncoder):
    """Encode canonical events as a Gemini ``streamGenerateContent?alt=sse`` stream.

    Args:
        response_id: The ``responseId`` of every chunk; defaults to the source response's id.
        model: The ``modelVersion`` of every chunk; defaults to the source response's model.
    """

    _ROUTES: ClassVar[dict[type[Any], str]] = {
        ev.RefusalDelta: "_on_refusal",
        ev.ArgumentsDelta: "_nothing",
        ev.AudioDelta: "_on_audio",
    }
    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, response_id: str | None = None, model: str | None = None) -> None:
        self.drops = DropLog(PROTOCOL)
        """What the target protocol could not carry and was dropped."""
        self._wire = ToWire(self.drops, None, exact_args=True)
        self._rid = response_id
        self._model = model
        self._top: dict[str, Any] = {}
        self._feedback: Any = None
        self._cands: dict[int, int] = {}
        self._announced: list[int] = []
        self._parts: dict[tuple[Any, Any], _Out] = {}
        self._pending: dict[int, str] = {}
        self._citations: dict[int, list[dict[str, Any]]] = {}
        self._finished: set[int] = set()
        self._skip: set[Any] = set()
        """Keys of the messages left out (not the model's)."""
        self._usage: Usage | None = None
        self._usage_sent = True
        self._held: list[dict[str, Any]] = []
        """Finish candidates not yet written (see the module doc)."""
        self._ended = False
        self._texts: dict[tuple[str, int], tuple[Any, Any, bytes, bytes]] = {}
        """The pre-encoded text chunks (``_text_frames``), by part kind and candidate."""

    # ------------------------------------------------------------------ API

    def encode(self, event: ev.Event) -> bytes:
        """Encode one canonical event; return the chunks it completes (maybe ``b""``)."""
        return b"" if self._ended else self._TABLE[type(event)](self, event)

    def finish(self) -> bytes:
        """End the output. Gemini has no terminator; usage not yet written gets a last chunk."""
        ended, self._ended = self._ended, True
        if ended:
            return b""
        held = self._release()
        return held if held or self._usage_sent else self._frame({})

    # ------------------------------------------------------------------ framing

    def _release(self) -> bytes:
        """The held finish chunks (one chunk per candidate, in order), with the usage known now."""
        held, self._held = self._held, []
        return b"".join(self._frame({"candidates": [body]}) for body in held)

    def _frame(self, body: dict[str, Any]) -> bytes:
        if self._usage is not None:
            body["usageMetadata"] = usage_to_wire(self._usage, own=self._wire.own)
            self._usage_sent = True
        if self._model:
            body["modelVersion"] = self._model
        if self._top:
            body.update(self._top)
        if self._rid:
            body["responseId"] = self._rid
        if self._feedback is not None:
            body["promptFeedback"] = self._feedback
            self._feedback = None
        return b"data: " + _json.encode(body) + _SEP

    def _parts_chunk(self, cand: int, parts: list[dict[str, Any]]) -> bytes:
        if not parts:
            return b""
        content = {"role": "model", "parts": parts}
        return self._release() + self._frame({"candidates": [{"content": content, "index": cand}]})

    def _cand(self, message: Any) -> int:
        return self._cands.get(message, 0) if isinstance(message, int) else 0

    def _sign(self, parts: list[dict[str, Any]], out: _Out | None, cand: int) -> list[dict[str, Any]]:
        """Attach the signature waiting for this part (or for the candidate's next part)."""
        sig = out.sig if out is not None and out.sig is not None else self._pending.pop(cand, None)
        if out is not None:
            out.sig = None
        if sig is not None and parts and "thoughtSignature" not in parts[0]:
            parts[0]["thoughtSignature"] = sig
        return parts

    def _get(self, event: Any) -> _Out | None:
        return self._parts.get((event.message, event.part))

    # ------------------------------------------------------------------ response and messages

    def _nothing(self, event: Any) -> bytes:
        return b""

    def _on_response_start(self, event: ev.ResponseStart) -> bytes:
        self.drops.source = event.protocol
        self._wire = ToWire(self.drops, event.protocol, exact_args=True)
        self._rid = self._rid or event.id
        self._model = self._model or event.model
        raw = event.provider_raw
        if self._wire.own and isinstance(raw, dict):
            for key in ("createTime", "modelStatus"):
                if key in raw:
                    self._top[key] = raw[key]
            self._feedback = raw.get("promptFeedback")
        return b""

    def _on_message_start(self, event: ev.MessageStart) -> bytes:
        if event.role not in ("assistant", "model"):
            # A model's answer holds no user or tool turn (a session's client side, say).
            self.drops.add("message", f"{event.role} message in the output")
            self._skip.add(event.message)
            return b""
        cand = event.choice_index if event.choice_index is not None else 0
        if isinstance(event.message, int):
            self._cands[event.message] = cand
        if cand not in self._announced:
            self._announced.append(cand)
        return b""

    def _finish_chunk(self, cand: int, finish: str, extras: Any) -> None:
        """Hold candidate ``cand``'s finish (written by :meth:`_release`)."""
        self._finished.add(cand)
        # Never without content: the chat helper drops a turn with a content-less chunk.
        body: dict[str, Any] = {
            "content": {
                "role": "model",
                "parts": [self._wire.text("", thought=False, signature=self._pending.pop(cand, None))],
            },
            "index": cand,
            "finishReason": finish,
        }
        if self._wire.own:
            body.update(candidate_fields_to_wire(extras))
        sources = self._citations.pop(cand, None)
        if sources:
            body["citationMetadata"] = {"citationSources": sources}
        self._held.append(body)

    def _on_message_done(self, event: ev.MessageDone) -> bytes:
        cand = self._cand(event.message)
        if cand in self._finished or event.finish_reason is None or event.message in self._skip:
            # An item of a multi-item turn (an item of an incomplete Responses output, too):
            # the response's end finishes the candidate, or leaves it cut.
            return b""
        own = self._wire.own
        finish = finish_to_wire(
            event.finish_reason, status=event.status, provider=event.provider_finish_reason, own=own
        )
        if finish is None:
            # The source was cut here: no finishReason, so the output reads as cut too.
            self._finished.add(cand)
            return b""
        self._finish_chunk(cand, finish, event.value.provider_raw if event.value is not None else None)
        return b""

    def _on_response_done(self, event: ev.ResponseDone) -> bytes:
        reason: FinishReason = event.finish_reason or "stop"
        own = self._wire.own
        finish = finish_to_wire(reason, status=event.status, provider=event.provider_finish_reason, own=own)
        for cand in self._announced:
            if cand not in self._finished and finish is not None:
                self._finish_chunk(cand, finish, None)
        frames = [self._release()]
        if not self._announced and (self._feedback is not None or event.finish_reason == "content_filter"):
            if self._feedback is None:
                self._feedback = {"blockReason": "OTHER"}
            frames.append(self._frame({}))
        elif not self._usage_sent:
            frames.append(self._frame({}))
        self._ended = True
        return b"".join(frames)

    def _on_usage(self, event: ev.UsageUpdate) -> bytes:
        self._usage = event.usage
        self._usage_sent = False
        return b""

    def _on_error(self, event: ev.StreamErrorEvent) -> bytes:
        self._ended = True
        held = self._release()
        usage = b"" if self._usage_sent else self._frame({})  # the usage known before the error
        return held + usage + b"data: " + _json.encode({"error": error_to_wire(event.error)}) + _SEP

    def _on_unknown(self, event: ev.UnknownEvent) -> bytes:
        if self.drops.source in _SESSIONS:
            self.drops.add("session_frame", f"{event.provider_type!r} session frame")
        else:
            self.drops.add("unknown", f"unknown {event.provider_type!r} frame")
        return b""

    # ------------------------------------------------------------------ parts

    def _on_part_start(self, event: ev.PartStart) -> bytes:
        assert isinstance(event.message, int)
        assert isinstance(event.part, int)
        cand = self._cand(event.message)
        key = (event.message, event.part)
        value = event.value
        if event.message in self._skip:
            self._parts[key] = _Out("drop", cand)
            return b""
        if isinstance(value, TextPart | ReasoningPart):
            out = self._parts[key] = _Out("text" if isinstance(value, TextPart) else "thought", cand)
            if isinstance(value, ReasoningPart):
                self._wire.reasoning_loss(value)
            out.take(self._wire, value.signature)
            return b""
        if isinstance(value, UnknownPart) and value.provider_type == SIGNATURE_TYPE:
            self._parts[key] = _Out("drop", cand)
            sig = self._wire.kept_signature(value)
            if sig is not None:
                self._pending[cand] = sig
            return b""
        if isinstance(value, RefusalPart):
            # Sent as text, per delta, so that the user still reads it (reported once).
            self._parts[key] = _Out("text", cand)
            self._wire.refusal()
            return b""
        if isinstance(value, UnknownPart | CitationPart):
            # Written (or dropped) at once: nothing of them streams.
            self._parts[key] = _Out("drop", cand)
            return self._parts_chunk(cand, self._sign(self._wire.part(value), None, cand))
        # Calls, media, code and tool results are written whole when they close.
        self._parts[key] = _Out("whole", cand)
        return b""

    def _write_text(self, out: _Out, text: str) -> bytes:
        if not text:
            return b""
        if self._held or self._feedback is not None or out.sig is not None or out.cand in self._pending:
            body = self._wire.text(text, thought=out.kind == "thought")
            return self._parts_chunk(out.cand, self._sign([body], out, out.cand))
        # The hot path: nothing held, no signature to attach, so the chunk is the part's text
        # chunk, encoded once (by ``_frame``, as long as the usage it carries stays the same).
        usage, wire, frames = self._usage, self._wire, out.frames
        if frames is None or frames[0] is not usage or frames[1] is not wire:
            frames = out.frames = self._text_frames(out.kind, out.cand)
        elif usage is not None:
            self._usage_sent = True
        return b"".join((frames[2], _json.encode(text), frames[3]))

    def _text_frames(self, kind: str, cand: int) -> tuple[Any, Any, bytes, bytes]:
        """The text chunk of a ``kind`` part of candidate ``cand``, pre-encoded (see ``_Out.frames``).

        Made once per kind and candidate while the usage and the wire writer stay the same, not
        once per part (the parts of a turn alternate between thoughts and text).
        """
        usage, wire = self._usage, self._wire
        frames = self._texts.get((kind, cand))
        if frames is None or frames[0] is not usage or frames[1] is not wire:
            body = wire.text(HOLE[0], thought=kind == "thought")
            content = {"role": "model", "parts": [body]}
            chunk = {"candidates": [{"content": content, "index": cand}]}
            head, tail = template(self._frame, chunk, 1)
            frames = self._texts[(kind, cand)] = (usage, wire, head, tail)
        elif usage is not None:
            self._usage_sent = True  # as ``_frame`` does when it writes the usage
        return frames

    def _on_text(self, event: ev.TextDelta) -> bytes:
        out = self._parts.get((event.message, event.part))  # (inlined _get: the hot path)
        return self._write_text(out, event.text) if out is not None and out.kind == "text" else b""

    def _on_refusal(self, event: ev.RefusalDelta) -> bytes:
        out = self._parts.get((event.message, event.part))  # (inlined _get: the hot path)
        return self._write_text(out, event.text) if out is not None and out.kind == "text" else b""

    def _on_reasoning(self, event: ev.ReasoningDelta) -> bytes:
        out = self._parts.get((event.message, event.part))  # (inlined _get: the hot path)
        return self._write_text(out, event.text) if out is not None and out.kind == "thought" else b""

    def _on_summary(self, event: ev.SummaryDelta) -> bytes:
        # A reasoning summary is what Gemini's thought parts are: sent as thought text.
        out = self._parts.get((event.message, event.part))  # (inlined _get: the hot path)
        return self._write_text(out, event.text) if out is not None and out.kind == "thought" else b""

    def _on_signature(self, event: ev.SignatureDelta) -> bytes:
        out = self._get(event)
        # A call's signature travels on its done value, which is written whole.
        if out is not None and out.kind in ("text", "thought"):
            out.take(self._wire, event.signature)
        return b""

    def _on_audio(self, event: ev.AudioDelta) -> bytes:
        if event.transcript and event.message not in self._skip:
            self.drops.add("media", "audio transcript (Gemini output audio has no transcript field)")
        return b""

    def _on_annotation(self, event: ev.AnnotationAdded) -> bytes:
        if self._wire.own or event.message in self._skip:
            return b""  # re-sent whole from the candidate's groundingMetadata/citationMetadata
        source = citation_to_wire(event.citation, self.drops)
        if source is not None:
            self._citations.setdefault(self._cand(event.message), []).append(source)
        return b""

    def _on_logprobs(self, event: ev.LogprobsDelta) -> bytes:
        if event.message not in self._skip:
            self.drops.add("logprobs", "token logprobs")
        return b""

    def _on_part_done(self, event: ev.PartDone) -> bytes:
        out = self._get(event)
        value = event.value
        if out is None or value is None:
            return b""
        if out.kind in ("text", "thought"):
            if not out.signed and isinstance(value, TextPart | ReasoningPart):
                out.take(self._wire, value.signature)  # a signature given only in the done value
            if out.sig is None:
                return b""
            # A signature after the last text (or on a part with none): an empty part carries it.
            body = self._wire.text("", thought=out.kind == "thought")
            return self._parts_chunk(out.cand, self._sign([body], out, out.cand))
        if out.kind != "whole":
            return b""
        if isinstance(value, ToolCallPart):
            self._wire.where = value.id
        parts = self._wire.part(value)
        self._wire.where = None
        return self._parts_chunk(out.cand, self._sign(parts, out, out.cand))
