"""One Gemini candidate's parts as events: its text and thought runs, signatures, calls.

Gemini's chunks carry no part keys: a candidate's parts arrive as runs (consecutive text, or
thought, parts are one canonical part until the kind changes or a signed part starts another),
whole function calls, and calls streamed in pieces (``willContinue``, ``partialArgs``). A
:class:`CandidateRuns` holds what the decoder needs to number them: the current run, the open
streamed call, the last text part (where citations go) and the fields with no canonical home.
The decoder (``_decode``) keeps one per candidate index, on the event path and the direct fold.

It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET

from ... import events as ev
from ..._model import TextPart, ToolCallPart
from ._args import ArgsWriter
from ._meta import citations_from_wire
from ._parts import (
    SIGNATURE_TYPE,
    SYNTH_PREFIX,
    call_arguments,
    call_part,
    other_part,
    text_part,
    unknown_type,
)

if TYPE_CHECKING:
    from ._wire import (
        FunctionCall,
        WirePart,
    )

__all__ = ["CandidateRuns"]

_EMPTY_TEXT: Final = TextPart(text="")


class CandidateRuns:
    """One candidate's parts: where runs start and end, and its open streamed call.

    Every method appends the events of what it was given to ``out``.
    """

    __slots__ = (
        "calls",
        "cut",
        "fields",
        "finish",
        "index",
        "key",
        "kind",
        "last_text",
        "rid",
        "signed",
        "stream",
    )

    def __init__(self, index: int, rid: str) -> None:
        self.index = index
        self.rid = rid
        self.key = -1
        """The current part's key (the part ordinal)."""
        self.kind = ""
        """The open run: ``"text"``, ``"thought"``, ``"stream"`` (a streamed call) or ``""``."""
        self.signed = False
        self.calls = 0
        self.stream: tuple[ToolCallPart, ArgsWriter] | None = None
        """The open streamed call and the writer of its arguments."""
        self.cut = False
        self.finish: str | None = None
        self.last_text: int | None = None
        self.fields: dict[str, Any] | None = None
        """Candidate fields with no canonical home (the latest of each; made on first use)."""

    def note(self, fields: dict[str, Any]) -> None:
        """Keep the latest of each of a chunk's candidate fields with no canonical home."""
        if fields:
            if self.fields is None:
                self.fields = fields
            else:
                self.fields.update(fields)

    # ------------------------------------------------------------------ parts

    def new_key(self, out: list[ev.Event]) -> int:
        """Close the open text run (if any) and take the next part key."""
        if self.key >= 0 and self.kind in ("text", "thought"):
            out.append(ev.PartDone(message=self.index, part=self.key))
        self.key += 1
        self.kind = ""
        self.signed = False
        return self.key

    def part(self, part: WirePart, out: list[ev.Event]) -> bool:
        """Emit the events of one part; ``False`` when it is of no known kind."""
        text = part.text
        if text is not UNSET and self.kind != "stream":
            self._text(text, part, out)
            return True
        call = part.function_call
        if call is not None:
            self._function_call(part, call, out)
            return True
        if self.kind == "stream":
            self.cut_call(out)
        if text is not UNSET:
            self._text(text, part, out)
            return True
        value = other_part(part, self._server_id)
        if value is None:
            return False
        index = self.index
        if part.thought_signature and not isinstance(value, ToolCallPart):
            key = self.new_key(out)
            sig: dict[str, Any] = {"thoughtSignature": part.thought_signature}
            out.append(ev.UnknownEvent(provider_type=SIGNATURE_TYPE, raw=sig, message=index, part=key))
        key = self.new_key(out)
        out.append(ev.PartStart(message=index, part=key, value=value))
        out.append(ev.PartDone(message=index, part=key))
        return True

    def unknown(self, raw: Any, out: list[ev.Event]) -> None:
        """A part of no known kind, kept whole."""
        if self.kind == "stream":
            self.cut_call(out)
        key = self.new_key(out)
        out.append(ev.UnknownEvent(provider_type=unknown_type(raw), raw=raw, message=self.index, part=key))

    def annotate(self, out: list[ev.Event]) -> None:
        """The candidate's citations, on its last text run (or a new empty one)."""
        citations = citations_from_wire(self.fields or {})
        if not citations:
            return
        key = self.last_text
        if key is None:
            key = self.new_key(out)
            out.append(ev.PartStart(message=self.index, part=key, value=_EMPTY_TEXT))
        out.extend(ev.AnnotationAdded(message=self.index, part=key, citation=cite) for cite in citations)

    def _server_id(self) -> str:
        return f"{SYNTH_PREFIX}{self.rid}_{self.index}_s{self.key + 1}"

    def _text(self, text: str, part: WirePart, out: list[ev.Event]) -> None:
        kind = "thought" if part.thought else "text"
        sig = part.thought_signature
        if not text and not sig:
            return  # an empty text part carries nothing (Gemini sends one with the finish reason)
        index = self.index
        if self.kind != kind or (sig and self.signed):
            key = self.new_key(out)
            self.kind = kind
            out.append(ev.PartStart(message=index, part=key, value=text_part("", thought=kind == "thought")))
        key = self.key
        if sig:
            self.signed = True
            out.append(ev.SignatureDelta(message=index, part=key, signature=sig))
        if kind == "text":
            self.last_text = key
            if text:
                out.append(ev.TextDelta(message=index, part=key, text=text))
        elif text:
            out.append(ev.ReasoningDelta(message=index, part=key, text=text))

    # ------------------------------------------------------------------ function calls

    def _function_call(self, part: WirePart, call: FunctionCall, out: list[ev.Event]) -> None:
        if call.name is None and self.kind == "stream":
            self._continue_call(part, call, out)
            return
        if call.name is None and call.args is UNSET and not call.partial_args and not call.will_continue:
            return  # a bare terminal marker with no call open: nothing to close
        if self.kind == "stream":
            self.cut_call(out)
        index = self.index
        key = self.new_key(out)
        self.calls += 1
        call_id = f"{SYNTH_PREFIX}{self.rid}_{index}_{self.calls}"
        sig = part.thought_signature
        if call.will_continue:
            value = call_part(call, call_id, sig, "")
            out.append(ev.PartStart(message=index, part=key, value=value))
            self.kind = "stream"
            self.stream = (value, ArgsWriter())
            self._partial(call, out)
            return
        out.append(
            ev.PartStart(message=index, part=key, value=call_part(call, call_id, sig, call_arguments(call)))
        )
        out.append(ev.PartDone(message=index, part=key))

    def _partial(self, call: FunctionCall, out: list[ev.Event]) -> None:
        assert self.stream is not None
        writer = self.stream[1]
        for arg in call.partial_args or ():
            delta = writer.feed(arg)
            if delta:
                out.append(ev.ArgumentsDelta(message=self.index, part=self.key, delta=delta))

    def _continue_call(self, part: WirePart, call: FunctionCall, out: list[ev.Event]) -> None:
        if part.thought_signature:
            out.append(ev.SignatureDelta(message=self.index, part=self.key, signature=part.thought_signature))
        if call.partial_args:
            self._partial(call, out)
            return
        if call.will_continue:
            return  # a keep-going marker between arguments
        assert self.stream is not None
        started, writer = self.stream
        out.append(ev.ArgumentsDelta(message=self.index, part=self.key, delta=writer.finish()))
        final = writer.final_text()
        value = None
        if final is not None:
            value = msgspec.structs.replace(started, arguments=final, status="completed")
        out.append(ev.PartDone(message=self.index, part=self.key, value=value))
        self.kind = ""
        self.stream = None

    def cut_call(self, out: list[ev.Event]) -> None:
        """The open streamed call never got its terminal part: it ends incomplete."""
        assert self.stream is not None
        call, writer = self.stream
        self.kind = ""
        self.stream = None
        self.cut = True
        value = msgspec.structs.replace(call, arguments=writer.text, status="incomplete")
        out.append(ev.PartDone(message=self.index, part=self.key, value=value))
