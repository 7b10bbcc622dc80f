"""The direct fold: a decoder's common deltas go straight into the result, without events.

The direct fold (:class:`DirectFold`, docs/architecture.md): a ``direct`` decoder appends common
text, arguments, summary and audio deltas to part buffers the target hands out (the part exists, deltas go
straight in), and may close a part and open the next without events (:meth:`DirectFold.fold_part`:
a run of text ends, a whole call arrives; :meth:`DirectFold.fold_message`: a line opens a turn's
response, message and part; :meth:`DirectFold.fold_end`: a line ends a turn, its calls and usage
with it, or is a whole message); any other frame goes as events, in order, and makes it
forget every buffer it was handed. Both framings fold through it: SSE (:meth:`SSEStreamDecoder.feed_into`, each protocol's
``fold_frames``) and JSON lines (``_jsonl``, each session protocol's ``fold_lines``); a protocol
decides only which of its frames are common.

:class:`DirectFold` is the decoder's half (a base of :class:`~._base.SSEStreamDecoder` and of
the JSON-lines decoders, ``_jsonl``); :class:`FoldTarget` and :class:`PartBuffers` are what it
folds into (``_stream_aggregator.StreamAggregator`` and ``_fold.Fold``, the aggregator's half).

It must not do IO, and must not apply the aggregator's rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from .._accumulate import FRAGMENTS, compact, whole_groups

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._model import Part, Role, Usage
    from ..events import (
        Event,
        Key,
        ResponseDone,
        ResponseStart,
    )

__all__ = ["ARGS", "AUDIO", "SUMMARY", "TEXT", "TRANSCRIPT", "DirectFold", "FoldTarget", "PartBuffers"]


class PartBuffers(Protocol):
    """What a direct fold appends to: a part's text and arguments fragments (``add_fragment``), its audio.

    ``summary`` holds a reasoning part's summary entries by index once its first summary delta
    went the normal way (``None`` before: the aggregator builds it from the part's base).
    """

    text: list[str] | None
    summary: dict[int, list[str]] | None
    audio_data: list[str] | None
    audio_transcript: list[str] | None

    @property
    def args(self) -> list[str] | None:
        """A call's arguments fragments (``None``: the part is no call opened so)."""
        ...


class FoldTarget(Protocol):
    """Where a decoder's ``feed_into`` folds a stream: the aggregator's side of the direct fold."""

    def consume(self, events: list[Event]) -> None:
        """Apply a frame's events the normal way (in order, nothing handed on)."""
        ...

    def part_buffers(self, message: Key, part: Key) -> PartBuffers | None:
        """The part's buffers if it exists and deltas go straight in (kept until :meth:`consume`)."""
        ...

    @property
    def keeps_passthrough(self) -> bool:
        """Whether pass-through messages are kept (their events wanted), or only counted by type."""
        ...

    def count_passthrough(self, provider_type: str) -> bool:
        """Count a pass-through message by type without its event (``False``: they are kept)."""
        ...

    def open_part(
        self, message: Key, close: Key | None, part: Key, value: Part, done: bool = False
    ) -> PartBuffers | None:
        """Close ``close``, open ``part`` as ``value`` (and close it when ``done``) without events.

        What ``PartDone``/``PartStart``/``PartDone`` would leave; the new part's buffers, or
        ``None`` (nothing done) when deltas do not go straight in or the part cannot open so.
        """
        ...

    def open_message(
        self, start: ResponseStart | None, message: Key, role: Role, part: Key, value: Part
    ) -> PartBuffers | None:
        """Open ``message`` (after the response ``start``, if given) with part ``part`` as ``value``, without events.

        What ``start``, ``MessageStart``, ``PartStart`` would leave; the new part's buffers, or
        ``None`` (nothing done) when deltas would not go straight in or the message exists.
        """
        ...

    def end_message(
        self,
        start: ResponseStart | None,
        message: Key,
        role: Role | None,
        parts: Sequence[tuple[Key, Part]],
        usage: Usage | None,
        done: ResponseDone | None,
    ) -> bool:
        """End ``message`` (new when ``role`` is given, after the response ``start``) with whole ``parts``, without events.

        What ``start``, ``MessageStart``, each part's ``PartStart``/``PartDone``, ``UsageUpdate``,
        ``MessageDone`` and ``done`` would leave; ``False`` (nothing done) when those events
        would not apply so.
        """
        ...


_IDLE: Final[dict[Any, Any]] = {}
"""A decoder's buffers while idle or before its chunk's first lookup: empty, never written."""

TEXT: Final = 0
""":meth:`DirectFold.fold_delta` appends to the part's text (also a reasoning part's thinking)."""
ARGS: Final = 1
"""... to the part's arguments."""
AUDIO: Final = 2
"""... to the audio part's base64 data chunks (kept apart, as ``AudioDelta.data`` is)."""
TRANSCRIPT: Final = 3
"""... to the audio part's transcript."""
SUMMARY: Final = 4
"""... to the reasoning part's summary entry ``index`` (a non-empty ``SummaryDelta``'s text)."""


class DirectFold:
    """The decoders' half of the direct fold (module docstring), one home for both framings.

    A framing's ``feed_into`` sets :attr:`_target` for one chunk and restores it after
    (:meth:`_fold_begin`, :meth:`_fold_end`); its protocol hands each common delta to
    :meth:`fold_delta` and every other frame to the framing's ``normal``, which calls
    :meth:`_forget` before the frame's events reach the target.

    What is kept between chunks (and websocket messages) is the part the last delta went to
    (:attr:`_hot`), so that a run of deltas split over many small chunks looks its part up once:
    a decoder folds only into the target that owns it (``StreamAggregator``), whose parts change
    only through the decoder's frames, so the part stays the one for its keys until a normal
    frame, an error, or the target changing on its own (:meth:`forget_folded`) forgets it.
    """

    direct: ClassVar[bool] = False
    """Whether the protocol folds common frames directly (``feed_into`` is worth it)."""

    __slots__ = ("_buffers", "_hot", "_hot_message", "_hot_part", "_target")

    def __init__(self) -> None:
        self._target: FoldTarget | None = None
        self._buffers: dict[tuple[Key, Key], PartBuffers] = _IDLE
        """Buffers :meth:`fold_delta` got from the target since the last normal frame of this
        ``feed_into`` (made on first use: most chunks of a run need none)."""
        self._hot: PartBuffers | None = None
        """The buffers :meth:`fold_delta` used last (one of :attr:`_buffers`), for the keys below:
        a run of deltas to one part skips the dictionary."""
        self._hot_message: Key = 0
        self._hot_part: Key = 0

    def _fold_begin(self, target: FoldTarget) -> None:
        """A chunk's fold starts: deltas may go into ``target``'s parts (the last run's first)."""
        self._target = target

    def _fold_end(self, failed: bool = False) -> None:
        """A chunk's fold ended: while idle no cycle, and only the hot part kept (none if it ``failed``)."""
        self._target, self._buffers = None, _IDLE
        if failed:
            self._hot = None

    def forget_folded(self) -> None:
        """Forget the part the last delta went to (:attr:`_hot`): the target changed on its own."""
        self._hot = None

    def _forget(self, events: list[Event]) -> None:
        """Hand a normal frame's events to the target, forgetting every buffer it handed out."""
        self._buffers.clear()
        self._hot = None
        if events:
            target = self._target
            assert target is not None
            target.consume(events)

    def fold_part(
        self, message: Key, close: Key | None, part: Key, value: Part, done: bool = False
    ) -> PartBuffers | None:
        """Close part ``close`` and open ``part`` in the target without events (``FoldTarget.open_part``).

        The new part's buffers become the ones :meth:`fold_delta` uses next; ``None``: nothing was
        done, go the normal way.
        """
        target = self._target
        return self._opened(
            message, part, target.open_part(message, close, part, value, done) if target else None
        )

    def fold_message(
        self, start: ResponseStart | None, message: Key, role: Role, part: Key, value: Part
    ) -> PartBuffers | None:
        """Open a message (and a response, ``start``) with its first part in the target without events.

        ``FoldTarget.open_message``, for a line that starts a turn with a delta: the new part's
        buffers become the ones :meth:`fold_delta` uses next; ``None``: nothing was done, go the
        normal way.
        """
        target = self._target
        return self._opened(
            message, part, target.open_message(start, message, role, part, value) if target else None
        )

    def fold_end(
        self,
        start: ResponseStart | None,
        message: Key,
        role: Role | None,
        parts: Sequence[tuple[Key, Part]],
        usage: Usage | None = None,
        done: ResponseDone | None = None,
    ) -> bool:
        """End a message (and its response, ``done``) with whole parts in the target without events.

        ``FoldTarget.end_message``, for a line that ends a turn (its calls, usage, its end) or is
        a whole message (a client's tool results). The buffers handed out are forgotten, as after
        a normal frame; ``False``: nothing was done, go the normal way.
        """
        target = self._target
        if target is None or not target.end_message(start, message, role, parts, usage, done):
            return False
        self._buffers.clear()
        self._hot = None
        return True

    def _opened(self, message: Key, part: Key, found: PartBuffers | None) -> PartBuffers | None:
        """A part the target opened (``found``, unless ``None``) is the one :meth:`fold_delta` uses next."""
        if found is not None:
            if self._buffers is _IDLE:
                self._buffers = {}
            self._buffers[message, part] = found
            self._hot, self._hot_message, self._hot_part = found, message, part
        return found

    def text_buffer(self, message: Key, part: Key) -> PartBuffers | None:
        """The buffers of a part deltas may go into: the last call's, ``self._buffers`` or the target's.

        Kept until the next normal frame; ``None``: go the normal way.
        """
        found = self._hot
        if found is None or part != self._hot_part or message != self._hot_message:
            found = self._buffers.get((message, part))
            if found is None:
                target = self._target
                found = target.part_buffers(message, part) if target is not None else None
                if found is None:
                    return None
                if self._buffers is _IDLE:
                    self._buffers = {}
                self._buffers[message, part] = found
            self._hot, self._hot_message, self._hot_part = found, message, part
        return found

    def fold_delta(self, message: Key, part: Key, text: str, kind: int = TEXT, index: int = 0) -> bool:
        """Append a common delta to a buffer of its part; ``False``: go the normal way.

        ``kind`` names the buffer: :data:`TEXT`, :data:`ARGS`, :data:`AUDIO`, :data:`TRANSCRIPT`
        or :data:`SUMMARY` (entry ``index``; ``text`` not empty, and only once the part has a
        summary, else ``False``). The buffers come from the last call's, ``self._buffers`` or the
        target (kept until the next normal frame); text, arguments, transcripts and summaries are
        joined as they come (``add_fragment``'s rule, inlined: this runs once per event), audio
        chunks are kept apart (base64 joins as bytes, not text), as the aggregator does with each
        delta event.
        """
        found = self._hot
        if found is None or part != self._hot_part or message != self._hot_message:
            found = self.text_buffer(message, part)
            if found is None:
                return False
        if kind == TEXT:
            held = found.text
            if held is None:
                found.text = [text]
                return True
            buf = held
        elif kind == ARGS:
            args = found.args
            if args is None:
                return False  # not a call's part (the normal way says what it is)
            buf = args
        elif kind == AUDIO:
            if found.audio_data is None:
                found.audio_data = [text]
            else:
                found.audio_data.append(text)
            return True
        elif kind == TRANSCRIPT:
            held = found.audio_transcript
            if held is None:
                found.audio_transcript = [text]
                return True
            buf = held
        else:
            summary = found.summary
            if summary is None or not text:
                return False
            entry = summary.get(index)
            if entry is None:
                summary[index] = [text]
                return True
            buf = entry
        buf.append(text)
        if len(buf) >= FRAGMENTS:
            compact(buf)
        return True

    def fold_run(self, message: Key, part: Key, text: str, kind: int = TEXT) -> list[str] | None:
        """:meth:`fold_delta` of a run's first delta, then the buffer it went to; ``None``: go the normal way.

        For a hot loop that appends the run's next deltas of the same part itself (``append``,
        then :func:`~maas_stream._accumulate.compact` at :data:`~maas_stream._accumulate.FRAGMENTS`
        pieces), until its next normal frame. :data:`TEXT` or :data:`ARGS` only.
        """
        if not self.fold_delta(message, part, text, kind):
            return None
        hot = self._hot  # the part fold_delta just appended to
        assert hot is not None
        return hot.text if kind == TEXT else hot.args

    def fold_deltas(self, message: Key, part: Key, pieces: list[str], kind: int = TEXT) -> bool:
        """Append a run of common deltas (in order, none empty) to one buffer of a part; ``False``: go the normal way.

        What :meth:`fold_delta` of each piece would do, in one call (not for :data:`SUMMARY`):
        texts, arguments and transcripts join into one piece; audio chunks too when all but the
        last are whole base64 groups (``whole_groups``: joined as text they are the bytes they
        encode, and the build joins what follows them alike), else they are kept apart.
        """
        if len(pieces) == 1:
            return self.fold_delta(message, part, pieces[0], kind)
        joined = "".join(pieces)
        if kind != AUDIO or whole_groups(pieces[:-1], joined):
            return self.fold_delta(message, part, joined, kind)
        if not self.fold_delta(message, part, pieces[0], AUDIO):
            return False
        hot = self._hot  # the part fold_delta just appended the first chunk to
        assert hot is not None
        assert hot.audio_data is not None
        hot.audio_data += pieces[1:]
        return True
