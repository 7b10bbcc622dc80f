"""A ``message`` item's text and refusal parts: their writers (see ``_writers`` for the others).

A :class:`TextWriter` writes a part's ``content_part.added``, its deltas and its ``.done`` events,
and keeps the text it wrote: an item can end while its part is still open (a call comes between,
or the response ends early), and the part then ends with what was written. Inside a converter
the aggregator already keeps that text: a :class:`SharedTextWriter` counts what it wrote and the
encoder reads that much from the aggregator's part when it ends one early, rather than keeping a
second copy (``StreamEncoder.read_text_from``). A :class:`ContinuedTextWriter` writes the rest of a part
whose first item ended early, and keeps its own text (it ends with what it wrote).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

import msgspec

from ..._accumulate import add_fragment
from ..._emit import written_text
from ..._exceptions import LocalProtocolError
from ..._model import CitationPart, RefusalPart, TextPart
from .._template import HOLE, SHARED_MAX
from ._items_write import annotation_from_citation, text_json
from ._output import appended, members, replaced
from ._writers import DropSource, PartWriter

if TYPE_CHECKING:
    from ..._accumulate import PartState
    from ..._model import Part
    from ._output import Item, Output

__all__ = ["ContinuedTextWriter", "SharedTextWriter", "TextWriter"]

_encode: Final = msgspec.json.Encoder().encode

_NONE: Final = cast("list[Any]", ())
"""A writer's rare list before its first entry: one shared empty value (written by replacing it)."""


class _TextRare:
    """A text part's log-probabilities (for the next delta, and sent) and citations sent: made at the first."""

    __slots__ = ("annotations", "logprobs", "pending")

    def __init__(self) -> None:
        self.pending: list[Any] = _NONE
        self.logprobs: list[Any] = _NONE
        self.annotations: list[CitationPart] = _NONE


_PART_FRAMES: Final[dict[tuple[str, str | None, int, int], tuple[tuple[bytes, ...], tuple[bytes, ...]]]] = {}
"""Text parts' ``content_part.added`` and delta events (:meth:`Output.delta_frame`), shared, by what sets them."""


class TextWriter(PartWriter):
    """A text or refusal content part of a ``message`` item."""

    __slots__ = ("closed", "index", "kind", "rare", "sent")

    continued: bool = False
    """A part's rest after its first item ended (:class:`ContinuedTextWriter`): ends with what it wrote."""

    def __init__(self, out: Output, item: Item, refusal: bool) -> None:
        super().__init__(out, item)
        self.kind = "refusal" if refusal else "text"
        self.index = len(members(item.content))
        item.content = appended(item.content, self)  # (its content part in place of the writer once it ends)
        self.sent: str | list[str] = ""
        """The text written so far: its first fragment as it came (most parts of an idle stream
        hold one), a list from the second on (joined as they come, see ``add_fragment``)."""
        self.rare: _TextRare | None = None
        """Log-probabilities and citations (rare): made at the first."""
        self.closed = False

    def _rare(self) -> _TextRare:
        if self.rare is None:
            self.rare = _TextRare()
        return self.rare

    def _common(self) -> dict[str, Any]:
        item = self.item
        assert item is not None
        return {"item_id": item.id, "output_index": item.index, "content_index": self.index}

    def open(self) -> bytes:
        """The ``content_part.added`` event (and :attr:`frames`, the part's delta event)."""
        item = self.item
        assert item is not None
        assert item.index >= 0  # (opened before its parts: its id and index are final)
        key = (self.kind, item.id, item.index, self.index)
        found = _PART_FRAMES.get(key)
        if found is None:
            common = self._common()
            body = {**common, "delta": HOLE[0]}
            if self.kind == "text":
                part = {"type": "output_text", "text": HOLE[0], "annotations": [], "logprobs": []}
                body["logprobs"] = []
                delta = self.out.delta_frame("response.output_text.delta", body)
            else:
                part = {"type": "refusal", "refusal": HOLE[0]}
                delta = self.out.delta_frame("response.refusal.delta", body)
            found = (self.out.delta_frame("response.content_part.added", {**common, "part": part}), delta)
            if len(_PART_FRAMES) >= SHARED_MAX:
                _PART_FRAMES.clear()  # (bounded: a Responses source's item ids are its own)
            _PART_FRAMES[key] = found
        self.frames = found[1]
        return self.out.fill(found[0], "")

    def text(self, text: str) -> bytes:
        if self.closed:
            return b""  # the encoder moves a part that goes on after its item ended
        self.keep(text)
        rare = self.rare
        if rare is None or not rare.pending:  # one shape for every delta of the part (as the encoder's)
            assert self.frames is not None  # (made by open)
            return self.out.fill(self.frames, text)
        body = {**self._common(), "delta": text}
        if self.kind == "refusal":
            return self.out.frame("response.refusal.delta", body)
        body["logprobs"] = rare.pending
        if rare.logprobs is _NONE:
            rare.logprobs = []
        rare.logprobs.extend(rare.pending)
        rare.pending = _NONE
        return self.out.frame("response.output_text.delta", body)

    def logprobs(self, logprobs: list[Any]) -> bytes:
        if self.kind == "text" and not self.closed:
            # Sent on the next text delta (Responses puts them there).
            rare = self._rare()
            if rare.pending is _NONE:
                rare.pending = []
            rare.pending.extend(logprobs)
        return b""

    def annotation(self, citation: CitationPart) -> bytes:
        if self.kind != "text" or self.closed:
            return b""
        annotation = annotation_from_citation(citation)
        if annotation is None:
            return b""  # recorded with the final value, as the body encoder records it
        rare = self._rare()
        if rare.annotations is _NONE:
            rare.annotations = []
        index = len(rare.annotations)
        rare.annotations.append(citation)
        body = {**self._common(), "annotation_index": index, "annotation": annotation}
        return self.out.frame("response.output_text.annotation.added", body)

    def keep(self, text: str) -> None:
        """Keep ``text`` as written: joined as they come (the encoder inlines this: its hot path)."""
        sent = self.sent
        if isinstance(sent, list):
            add_fragment(sent, text)
        else:
            self.sent = [sent, text] if sent else text

    def sent_text(self) -> str:
        """The text written so far."""
        sent = self.sent
        return sent if isinstance(sent, str) else "".join(sent)

    def sent_value(self, text: str | None = None) -> TextPart | RefusalPart:
        """The part as far as it was written (``text``: its text, read elsewhere, or kept here)."""
        if text is None:
            text = self.sent_text()
        if self.kind == "refusal":
            return RefusalPart(text=text)
        rare = self.rare
        if rare is None:
            return TextPart(text=text)
        return TextPart(text=text, annotations=rare.annotations or None, logprobs=rare.logprobs or None)

    def done(self, value: Part, log: DropSource) -> bytes:
        if self.closed or not isinstance(value, TextPart | RefusalPart):
            return b""
        item = self.item
        assert item is not None
        rare = self.rare
        frames = (
            self.text("") if rare is not None and rare.pending else b""
        )  # log-probabilities no text followed
        self.closed = True
        if self.continued:
            value = self.sent_value()
        common = self._common()
        # The whole text goes out three times more (this event, the part's and the item's, and
        # the terminal response): encoded once, each writes the same bytes.
        text = msgspec.Raw(_encode(value.text))
        if isinstance(value, TextPart):
            part = text_json(value, None if self.continued or not value.annotations else log.drops)
            part["text"] = text
            frames += self.out.frame(
                "response.output_text.done", {**common, "text": text, "logprobs": value.logprobs or []}
            )
        else:
            part = {"type": "refusal", "refusal": text}
            frames += self.out.frame("response.refusal.done", {**common, "refusal": text})
        item.content = replaced(item.content, self.index, part)
        return frames + self.out.frame("response.content_part.done", {**common, "part": part})


class ContinuedTextWriter(TextWriter):
    """The rest of a text or refusal part whose first ``message`` item ended early (a call came between)."""

    __slots__ = ()
    continued = True


class SharedTextWriter(TextWriter):
    """A text or refusal part whose text the converter's aggregator keeps: written, not kept again.

    :attr:`sent` counts the characters written (the aggregator emitted the part's start text as
    its first delta): the text written so far is that much of the aggregator's part
    (:func:`~maas_stream._emit.written_text`; the aggregator may have folded more of the same
    source chunk already), which the encoder reads when it ends the part early
    (:meth:`sent_value` given the text). A converter thus holds each part's text once.
    """

    __slots__ = ()

    def __init__(self, out: Output, item: Item, refusal: bool) -> None:
        super().__init__(out, item, refusal)
        self.sent = cast("Any", 0)

    def keep(self, text: str) -> None:
        """Count ``text`` as written (the aggregator keeps it)."""
        self.sent = cast("Any", cast("int", self.sent) + len(text))

    def read_from(self, state: PartState) -> str:
        """The text written so far, read from the aggregator's ``state`` of the part."""
        return written_text(state, cast("int", self.sent))

    def sent_text(self) -> str:
        raise LocalProtocolError("a shared text part's text is read from its aggregator (read_from)")
