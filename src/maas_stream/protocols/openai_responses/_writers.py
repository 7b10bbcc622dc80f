"""The stream encoder's part writers: how each kind of canonical part becomes ``response.*`` events.

One writer per open part, chosen when the part starts: message text or refusal (a content part
of a ``message`` item), a call's input (``function_call_arguments`` and the other input deltas;
a patch's diff and shell commands are written from the call's final JSON arguments), reasoning
(summary parts and reasoning text), audio, or a dropped part. A writer turns the part's deltas
into events at once and writes the ``.done`` events when the part ends, with values from
``_items``. Content arrives only as deltas (the aggregator emits whatever
a provider gave only in a ``.done`` event as a last delta), so no writer resends a final value.

Summary entries are keyed by their index in a dict, never by filling a list up to it: memory
follows what was received, not the value of an index.

It must not decide which part goes into which item (the encoder does) or frame events itself
(``_output``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec

from ..._accumulate import add_fragment
from ..._model import CitationPart, ReasoningPart, ToolCallPart
from .._template import HOLE
from ._items_write import (
    call_item,
    drop_part,
    reasoning_drops,
    reasoning_item,
)
from ._output import Output

if TYPE_CHECKING:
    from ..._drops import DropKind, DropLog
    from ..._model import Part
    from ._output import Item

__all__ = [
    "AUDIO_DELTA",
    "TRANSCRIPT_DELTA",
    "AudioWriter",
    "CallWriter",
    "DropWriter",
    "PartWriter",
    "PatchWriter",
    "ReasoningWriter",
    "ShellWriter",
    "whole_part_writer",
]

DELTA_EVENTS: Final[dict[str, tuple[str, str, str]]] = {
    # item type: (delta event, done event, done field)
    "function_call": (
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "arguments",
    ),
    "custom_tool_call": (
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "input",
    ),
    "mcp_call": ("response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "arguments"),
    "code_interpreter_call": (
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "code",
    ),
}
"""The item types whose input streams, with their delta and done events."""


class PartWriter:
    """A part carried by its item as a whole (a hosted tool's result, say): it writes nothing."""

    __slots__ = ("frames", "item", "out")

    closed: bool = False
    """Whether a text part's content part ended (only a :class:`TextWriter` ever closes)."""

    def __init__(self, out: Output, item: Item | None) -> None:
        self.out = out
        self.item = item
        self.frames: tuple[bytes, ...] | None = None
        """The part's delta event, pre-encoded (:meth:`Output.delta_frame`) at its first delta (a text
        part's when it opens)."""

    def text(self, text: str) -> bytes:
        """A text or refusal delta."""
        return b""

    def logprobs(self, logprobs: list[Any]) -> bytes:
        """Log-probabilities of the next text delta."""
        return b""

    def annotation(self, citation: CitationPart) -> bytes:
        """A citation added to the text."""
        return b""

    def args(self, delta: str) -> bytes:
        """A piece of a call's input."""
        return b""

    def summary(self, index: int, text: str) -> bytes:
        """A piece of reasoning summary entry ``index``."""
        return b""

    def reasoning(self, text: str) -> bytes:
        """A piece of reasoning text."""
        return b""

    def signature(self) -> bytes:
        """A signature: recorded when the part ends (its final value holds it), see ``_items``."""
        return b""

    def audio(self, data: str | None, transcript: str | None) -> bytes:
        """A piece of audio or of its transcript."""
        return b""

    def done(self, value: Part, log: DropSource) -> bytes:
        """The part ended with ``value`` (its metadata; its content came as deltas); ``log``: the drops."""
        return b""


class DropSource(Protocol):
    """What holds a conversion's drop log, made on first use (the encoder)."""

    @property
    def drops(self) -> DropLog:
        """The drop log (made when first read)."""
        ...


class CallWriter(PartWriter):
    """A call's streamed input; a call of its own (split out of a message) also ends its item."""

    __slots__ = ("own",)

    def __init__(self, out: Output, item: Item, own: bool = False) -> None:
        super().__init__(out, item)
        self.own = own

    def args(self, delta: str) -> bytes:
        frames = self.frames
        if frames is None:
            item = self.item
            assert item is not None
            body = {"item_id": item.id, "output_index": item.index, "delta": HOLE[0]}
            frames = self.out.delta_frame(DELTA_EVENTS[item.type][0], body)
            if item.index >= 0:  # opened: its id and index are final
                self.frames = frames
        return self.out.fill(frames, delta)

    def done(self, value: Part, log: DropSource) -> bytes:
        item = self.item
        assert item is not None
        if not isinstance(value, ToolCallPart):
            return b""
        frames = b""
        spec = DELTA_EVENTS.get(item.type)
        if spec is not None:
            body: dict[str, Any] = {"item_id": item.id, "output_index": item.index, spec[2]: value.arguments}
            if item.type == "function_call":
                body["name"] = value.name
            frames += self.out.frame(spec[1], body)
        if self.own:
            status = "incomplete" if value.status == "incomplete" else "completed"
            frames += self.out.close(item, call_item(value, status, item.body))
        return frames


def _arguments(value: Part) -> dict[str, Any]:
    """A client call's JSON arguments as an object (``{}`` when they are not one)."""
    if not isinstance(value, ToolCallPart):
        return {}
    try:
        args = msgspec.json.decode(value.arguments)
    except msgspec.DecodeError:
        return {}
    return args if isinstance(args, dict) else {}


class PatchWriter(PartWriter):
    """An ``apply_patch_call``'s diff: the JSON arguments' ``diff``, written when the call ends.

    The canonical deltas are pieces of the escaped JSON (see ``_items.stream_prefix``); the
    final value holds the whole diff, which goes out as one delta and the done event.
    """

    __slots__ = ()

    def done(self, value: Part, log: DropSource) -> bytes:
        item = self.item
        assert item is not None
        diff = _arguments(value).get("diff")
        if not isinstance(diff, str):
            return b""
        common = {"item_id": item.id, "output_index": item.index}
        frames = (
            self.out.frame("response.apply_patch_call_operation_diff.delta", {**common, "delta": diff})
            if diff
            else b""
        )
        return frames + self.out.frame(
            "response.apply_patch_call_operation_diff.done", {**common, "diff": diff}
        )


class ShellWriter(PartWriter):
    """A ``shell_call``'s commands: the JSON arguments' ``commands``, written when the call ends.

    The canonical deltas are pieces of the escaped JSON (see ``_items.stream_prefix``); the
    final value holds every command, each written as added, one delta and done.
    """

    __slots__ = ()

    def done(self, value: Part, log: DropSource) -> bytes:
        item = self.item
        assert item is not None
        commands = _arguments(value).get("commands")
        frames = b""
        for n, command in enumerate(commands if isinstance(commands, list) else ()):
            if not isinstance(command, str):
                continue
            common = {"output_index": item.index, "command_index": n}
            frames += self.out.frame("response.shell_call_command.added", {**common, "command": ""})
            if command:
                frames += self.out.frame("response.shell_call_command.delta", {**common, "delta": command})
            frames += self.out.frame("response.shell_call_command.done", {**common, "command": command})
        return frames


class ReasoningWriter(PartWriter):
    """A ``reasoning`` item's summary parts and reasoning text (Responses reasoning only)."""

    __slots__ = ("current", "own", "summaries", "summary_frames", "text_frames", "text_open")

    def __init__(self, out: Output, item: Item, own: bool = False) -> None:
        super().__init__(out, item)
        self.own = own
        self.summaries: dict[int, tuple[int, list[str]]] = {}
        """Source summary index → (wire summary index, texts sent)."""
        self.current: int | None = None
        """The source index of the open summary part."""
        self.text_open = False
        self.summary_frames = -1
        """The wire summary index :attr:`frames` was made for."""
        self.text_frames: tuple[bytes, ...] | None = None
        """The reasoning text delta event, pre-encoded."""

    def _common(self, index: int) -> dict[str, Any]:
        item = self.item
        assert item is not None
        return {"item_id": item.id, "output_index": item.index, "summary_index": index}

    def start(self, value: ReasoningPart) -> bytes:
        """The summary a start value holds (its text follows as deltas)."""
        return b"".join([self.summary(i, text) for i, text in enumerate(value.summary or ())])

    def _close_summary(self) -> bytes:
        if self.current is None:
            return b""
        wire, texts = self.summaries[self.current]
        self.current = None
        text = "".join(texts)
        common = self._common(wire)
        return self.out.frame(
            "response.reasoning_summary_text.done", {**common, "text": text}
        ) + self.out.frame(
            "response.reasoning_summary_part.done", {**common, "part": {"type": "summary_text", "text": text}}
        )

    def summary(self, index: int, text: str) -> bytes:
        frames = b""
        entry = self.summaries.get(index)
        if entry is None:
            frames = self._close_summary()
            entry = self.summaries[index] = (len(self.summaries), [])
            self.current = index
            part = {"type": "summary_text", "text": ""}
            frames += self.out.frame(
                "response.reasoning_summary_part.added", {**self._common(entry[0]), "part": part}
            )
        if text:
            add_fragment(entry[1], text)
            if self.frames is None or self.summary_frames != entry[0]:
                body = {**self._common(entry[0]), "delta": HOLE[0]}
                self.frames = self.out.delta_frame("response.reasoning_summary_text.delta", body)
                self.summary_frames = entry[0]
            frames += self.out.fill(self.frames, text)
        return frames

    def reasoning(self, text: str) -> bytes:
        item = self.item
        assert item is not None
        frames = b""
        if not self.text_open:
            self.text_open = True
            common = {"item_id": item.id, "output_index": item.index, "content_index": 0}
            frames = self.out.frame(
                "response.content_part.added", {**common, "part": {"type": "reasoning_text", "text": ""}}
            )
            body = {**common, "delta": HOLE[0]}
            self.text_frames = self.out.delta_frame("response.reasoning_text.delta", body)
        assert self.text_frames is not None
        return frames + self.out.fill(self.text_frames, text)

    def done(self, value: Part, log: DropSource) -> bytes:
        item = self.item
        assert item is not None
        if not isinstance(value, ReasoningPart):
            return b""
        frames = self._close_summary()
        if self.text_open:
            common = {"item_id": item.id, "output_index": item.index, "content_index": 0}
            text = value.text or ""
            frames += self.out.frame("response.reasoning_text.done", {**common, "text": text})
            frames += self.out.frame(
                "response.content_part.done", {**common, "part": {"type": "reasoning_text", "text": text}}
            )
        if self.own:
            frames += self.out.close(item, reasoning_item(value, "completed", item.body))
        return frames


AUDIO_DELTA: Final = Output.delta_frame("response.audio.delta", {"delta": HOLE[0]})
TRANSCRIPT_DELTA: Final = Output.delta_frame("response.audio.transcript.delta", {"delta": HOLE[0]})
"""The audio and transcript delta events (:meth:`Output.frame`'s bytes, made once)."""


class AudioWriter(PartWriter):
    """Audio and its transcript (Responses streams them outside any item)."""

    __slots__ = ()

    def audio(self, data: str | None, transcript: str | None) -> bytes:
        frames = self.out.fill(AUDIO_DELTA, data) if data else b""  # (the encoder writes one piece itself)
        return frames + self.out.fill(TRANSCRIPT_DELTA, transcript) if transcript else frames

    def done(self, value: Part, log: DropSource) -> bytes:
        return self.out.frame("response.audio.done", {}) + self.out.frame(
            "response.audio.transcript.done", {}
        )


class DropWriter(PartWriter):
    """A part Responses cannot carry: recorded once, or for reasoning once per kind it held."""

    __slots__ = ("drops", "kinds", "where")

    def __init__(self, out: Output, drops: DropLog, value: Part, *, where: str | None = None) -> None:
        super().__init__(out, None)
        self.drops = drops
        self.where = where
        self.kinds: set[DropKind] | None = set() if isinstance(value, ReasoningPart) else None
        """The kinds recorded for a reasoning part (its content comes as deltas)."""
        if self.kinds is None:
            drop_part(drops, value, where=where)
        else:
            self._record(value)

    def _record(self, part: Part) -> None:
        if self.kinds is None or not isinstance(part, ReasoningPart):
            return
        for kind, what in reasoning_drops(part):
            if kind not in self.kinds and (kind != "reasoning" or part.text or part.summary):
                self.kinds.add(kind)
                self.drops.add(kind, what, where=self.where)

    def summary(self, index: int, text: str) -> bytes:
        if not (text and self.kinds is not None and "reasoning" in self.kinds):  # (recorded already)
            self._record(ReasoningPart(summary=[text]))
        return b""

    def reasoning(self, text: str) -> bytes:
        kinds = self.kinds  # (the hot path: recorded already, every delta after the first)
        if not (text and kinds is not None and "reasoning" in kinds):
            self._record(ReasoningPart(text=text))
        return b""

    def signature(self) -> bytes:
        self._record(ReasoningPart(signature="-"))
        return b""

    def done(self, value: Part, log: DropSource) -> bytes:
        self._record(value)
        if self.kinds is not None and not self.kinds:
            self.kinds.add("reasoning")
            kind, what = reasoning_drops(ReasoningPart())[0]
            self.drops.add(kind, what, where=self.where)  # an empty block: still dropped
        return b""


def whole_part_writer(
    out: Output, item: Item, value: Part, extras: Any, *, replay: bool
) -> tuple[PartWriter, bytes]:
    """The writer of a part of a Responses item kept whole, opening the item if it waited.

    A ``function_call`` / ``custom_tool_call`` or ``reasoning`` item is opened by its part (its
    added body is built from it, with ``extras``, the item's own extra keys); a hosted tool's
    call streams its input if its type has input deltas; anything else is carried by the item.
    """
    extras = extras if isinstance(extras, dict) else {}
    frames = b""
    if isinstance(value, ToolCallPart) and item.type in ("function_call", "custom_tool_call"):
        if item.index < 0:
            added = call_item(value, "in_progress", extras)
            added["input" if item.type == "custom_tool_call" else "arguments"] = ""
            frames = out.open(item, added)
        return CallWriter(out, item), frames
    if isinstance(value, ReasoningPart) and item.type == "reasoning" and replay:
        if item.index < 0:
            added = {**extras, "summary": []}
            if value.encrypted_content is not None:
                added["encrypted_content"] = value.encrypted_content
            frames = out.open(item, added)
        writer = ReasoningWriter(out, item)
        return writer, frames + writer.start(value)
    if isinstance(value, ToolCallPart) and item.type == "apply_patch_call":
        return PatchWriter(out, item), b""
    if isinstance(value, ToolCallPart) and item.type == "shell_call":
        return ShellWriter(out, item), b""
    if isinstance(value, ToolCallPart) and item.type in DELTA_EVENTS:
        return CallWriter(out, item), b""
    return PartWriter(out, item), b""  # carried by the item itself
