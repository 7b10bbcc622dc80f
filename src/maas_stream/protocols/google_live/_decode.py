"""Google Live (BidiGenerateContent) decoder: websocket messages (JSON lines) → events.

What each message of a session is, as events, is ``_events``' (:class:`~._events.LiveEvents`).

Recorded server lines are decoded typed in one pass (``SessionDecoder.feed``); a message's text
is decoded untyped only when it, or one of its parts, is kept whole. Folded directly
(:meth:`StreamDecoder.fold_lines`), a message that only continues the open turn's text, thought,
audio or transcript goes straight into its part's buffers: a run of consecutive common lines as
recorded (one part's text, or its audio and transcription) is decoded in one msgspec call per
kind and folds with one append per buffer. A line that opens a turn with such a delta opens the
turn's response, message and part in the target without events (``fold_message``), then folds.
A line that ends the turn in a common shape (its calls alone, or a ``turnComplete`` that says
nothing else; usage beside either) and a client's tool results between turns close the turn, or
open and close their own message and response, in the target without events (``fold_end``).
"""

from __future__ import annotations

import operator
from typing import Any, Final

import msgspec

from ... import events as ev
from ..._model import AudioPart, Part, ReasoningPart, Role, TextPart, ToolResultPart
from .._base import _DECODE_FAULTS, _State
from .._direct import AUDIO, TRANSCRIPT
from .._jsonl import client_message
from .._session import NOT_SERVER
from ._events import CLIENT_KEYS, LiveEvents, _tool_results, client_type, kept_client
from ._parts import call_part, usage_from
from ._recorded import (
    _AUDIO_AT,
    _AUDIO_DATA,
    _AUDIO_RUN,
    _COMMON,
    _KIND_AT,
    _MODEL_TURN,
    _PREFIX,
    _QUIET,
    _TEXT,
    _TEXT_RUN,
    _THOUGHT,
    _THOUGHT_END,
    _recorded_delta,
    _run_deltas,
    _str,
    _whole_run,
)
from ._wire import ServerMessage, frame_decoder, server_decoder

_OPEN: Final = _State.OPEN
_kind_of: Final = operator.itemgetter(_KIND_AT)
_CUTS: Final = bytes(0x20 if i in b"mo" else 0x78 for i in range(256))
"""A line's byte that tells a common line's kind (``modelTurn``, ``outputTranscription``), and those
bytes as ``fold_lines`` cuts a chunk by them: ``x`` for any other (no common line)."""

__all__ = ["StreamDecoder"]

_CLIENT_TOOL: Final = b'{"dir":"client","msg":{"toolResponse":'
"""How a client's tool results begin as recorded (``_fold_each`` folds them without events)."""
_GENERATION_COMPLETE: Final = b'{"dir":"server","msg":{"serverContent":{"generationComplete":true}}}'
_NO_DELTA: Final = (_QUIET, "")
"""A ``generationComplete`` alone as recorded (``_read_whole``), and what ``_delta`` says of it."""
_STOP: Final = ev.ResponseDone(finish_reason="stop")
_DONE: Final = ev.ResponseDone()
"""How a folded turn's response ends (``fold_end``), and the response the decoder opened for a
client's tool results (events are frozen: one each, shared)."""


class StreamDecoder(LiveEvents):
    """Decode a Google Live session recorded as ``{"dir", "msg"}`` JSON lines (or fed live).

    What each message is as events is :class:`~._events.LiveEvents`; this class adds the direct
    fold (the module docstring).
    """

    def fold_lines(self, lines: list[bytes]) -> None:
        """Fold a chunk's lines: a message that only continues an open part goes to its buffer.

        A common line as recorded (``_TEXT_HEAD``...) needs only its strings decoded: a run of
        consecutive ones of the same part (text; or audio and its transcription) is decoded in
        ONE msgspec call and folds with one append per buffer (:meth:`_fold_run`). Any other
        line takes :meth:`_fold_each` (decoded whole, the same typed decode as ``feed``, then
        folded or held). A delta folds when the decoder's state says it continues an open part,
        after the lines before it went ``normal`` (they may open that part).
        """
        whole, split = _whole_run(lines)
        if whole:
            # The whole chunk is one run (most chunks of a long turn): no line by line look.
            self._fold_run(whole, lines, split)
            return
        # A chunk across a turn's boundary: cut at its lines that are no common lines by their
        # kind's byte (few: C loops find them), and each stretch between them is tried as one run.
        try:
            cuts = bytes(map(_kind_of, lines)).translate(_CUTS)
        except IndexError:
            cuts = b""  # a short line (a blank one, say): one stretch, looked at line by line
        n = len(lines)
        other: list[bytes] = []
        at = 0
        while at < n:
            stop = cuts.find(b"x", at) % (n + 1)  # (none: -1, the end)
            if stop > at:
                other = self._fold_stretch(lines[at:stop], other)
            if stop < n:
                other.append(lines[stop])
            at = stop + 1
        if other:
            self._fold_each(other, common=False)

    def fold_one(self, msg: bytes | str, direction: str) -> Any:
        """Fold one message of a started, open session as :meth:`_fold_each` folds its line: ``True``.

        A server message decoded whole: a delta, a turn's end. A client's tool results between
        turns, and what ``feed_message`` would make of any other client message but a ``setup``
        (its one ``UnknownEvent``, handed on without it). Any other message goes
        ``feed_message`` with what this decoded of it (the typed message, or a client message's
        JSON values), decoded once.
        """
        if not self._started or self._state is not _OPEN:
            return None
        if direction == "client":
            return self._fold_client(msg)
        try:
            message = server_decoder.decode(msg)
        except _DECODE_FAULTS:
            return None  # a bad message: feed_message says why
        delta = self._delta(message)
        if delta is None:
            content = message.server_content
            if not (message.tool_call is not None or (content is not None and content.turn_complete)):
                return message
            if not self._fold_line(None, message):
                return message
        elif delta[0] != _QUIET and not (delta[1] and self._fold_line(delta, None)):
            return message
        self._frames += 1
        return True

    def _fold_client(self, msg: bytes | str) -> Any:
        """:meth:`fold_one` of a client message: ``True``, or its JSON values for ``feed_message``."""
        try:
            raw = msgspec.json.decode(msg)
        except _DECODE_FAULTS:
            return None  # a bad message: feed_message says why
        if not isinstance(raw, dict) or not raw:
            return None  # no client message (never ``True``): feed_message says why
        key = next(iter(raw))
        name = CLIENT_KEYS.get(key)
        if name == "toolResponse":
            results = _tool_results(raw)
            if results is None or not self._fold_results(results):
                return raw
        elif name == "setup":
            return raw  # (it names the model)
        else:
            self._frames += 1
            target = self._target  # (set by feed_message_into)
            if target is None or not target.count_passthrough(client_type(key, name)):
                self._forget([kept_client(raw, key, name)])
            return True
        self._frames += 1
        return True

    def _fold_stretch(self, lines: list[bytes], other: list[bytes]) -> list[bytes]:
        """Fold lines that are all common lines by their first bytes, after ``other`` (held before them).

        As one run when they are one (``_whole_run``), also after a thought that opens them (held
        with ``other``: no common line by its end); else line by line. Returns what is held after
        them (not folded yet).
        """
        if len(lines) > 1 and lines[0].endswith(_THOUGHT_END):
            other.append(lines[0])  # a thought that opens its turn's text: no common line, held
            lines = lines[1:]
        whole, split = _whole_run(lines)
        if whole:
            if other:
                self._fold_each(other, common=False)
                other = []
            self._fold_run(whole, lines, split)
            return other
        run: list[bytes] = []
        group = 0
        common = _COMMON.get
        for line in lines:
            shape_ = common(line[:_PREFIX])
            if shape_ is not None:
                kind, cut, end, head = shape_
                if line[cut:] == end and (not head or line.startswith(head)):
                    if kind != group or other:
                        if run:
                            self._fold_run(group, run)
                            run = []
                        if other:
                            self._fold_each(other, common=False)
                            other = []
                        group = kind
                    run.append(line)
                    continue
            if run:
                self._fold_run(group, run)
                run = []
            other.append(line)
        if run:
            self._fold_run(group, run)
        return other

    def _fold_run(
        self, group: int, run: list[bytes], split: tuple[list[bytes], list[bytes]] | None = None
    ) -> None:
        """Fold a run of common lines of one part, or take its lines one by one.

        Unless each line holds one delta (``_run_deltas``), the run goes :meth:`_fold_each`, which
        says what the lines are (errors included). Its deltas fold together once the decoder's
        state says they continue the open part (folding changes no state, so then all of them
        do); until then its lines go ``normal`` one at a time, as :meth:`_fold_each` would send
        them. ``split``: an audio run's lines by kind, when known (``_whole_run``).
        """
        deltas = _run_deltas(group, run, split)
        if deltas is None:
            self._fold_each(run)
            return
        chunks, texts = deltas
        if not self._msg_open:
            # The run opens the next turn (what its first line's starts would do).
            if group == _TEXT_RUN:
                self._fold_turn(0, TextPart(text=""))
            else:
                first = run[0]
                fmt = (
                    _str(first[_AUDIO_AT : first.find(_AUDIO_DATA, _AUDIO_AT)])
                    if chunks and first[_KIND_AT] == _MODEL_TURN
                    else None
                )
                self._fold_turn("audio", AudioPart(format=fmt))
        for i, line in enumerate(run):
            if self._msg_open and self._fold_values(group, chunks, texts):
                self._frames += len(run) - i
                return
            self.normal([line])
            # The line's delta went with it: the rest are the next lines'.
            if group == _AUDIO_RUN and line[_KIND_AT] == _MODEL_TURN:
                chunks = chunks[1:]
            else:
                texts = texts[1:]

    def _fold_values(self, group: int, chunks: list[str], texts: list[str]) -> bool:
        """Fold a run's deltas if they continue the open part (one append per buffer); else nothing.

        ``chunks`` are its audio chunks, ``texts`` its texts or transcriptions (``_run_deltas``).
        A text run that starts the turn's next part (after a thought, a call) opens it in the
        target first (``fold_part``: what its first line's ``PartStart`` would do).
        """
        if group == _TEXT_RUN:
            if self._last != "text":
                # The run opens the turn's next text part (what ``_text`` sends as a PartStart).
                if not self.fold_part(self._turn, None, self._pos + 1, TextPart(text="")):
                    return False
                self._pos += 1
                self._last = "text"
            return self.fold_deltas(self._turn, self._pos, texts)
        if not self._audio:
            return False
        if chunks and not self.fold_deltas(self._turn, "audio", chunks, AUDIO):
            return False
        # The same part's buffers: once the audio folded, its transcript does too.
        return not texts or self.fold_deltas(self._turn, "audio", texts, TRANSCRIPT)

    def _fold_each(self, lines: list[bytes], common: bool = True) -> None:
        """Fold lines one at a time: a delta continuing the open part folds, every other line is held.

        Consecutive held lines go ``normal`` together (``normal_decoded``: as decoded here), before
        the next delta or turn end is tried (:meth:`_fold_line`). A line with no events
        (``_QUIET``), with nothing held, is only counted. Not ``common``: none of the lines is a
        common line as recorded (``fold_lines`` looked), none is read as one again.
        """
        read = self._read if common else self._read_whole
        held: list[bytes] = []
        decoded: list[Any] = []
        frames = self._frames
        for line in lines:
            if not line:
                continue
            message, delta, ending = read(line)
            if delta is not None and delta[0] == _QUIET:
                if not held and self._started:
                    frames += 1  # no events: only counted
                    continue
            elif (ending is not None and self._started) or (delta is not None and delta[1]):
                if held:
                    self._frames = frames
                    self.normal_decoded(decoded, held)
                    frames = self._frames
                    held, decoded = [], []
                if self._fold_line(delta, ending):
                    frames += 1
                    continue
            held.append(line)
            decoded.append(message)
        if held:
            self._frames = frames
            self.normal_decoded(decoded, held)
            frames = self._frames
        self._frames = frames

    def _read(self, line: bytes) -> tuple[Any, tuple[int, str] | None, Any]:
        """A line as :meth:`_fold_each` takes it: its message, its delta, and what it ends.

        The message is ``None`` for a common line as recorded (read by its strings) and
        :data:`NOT_SERVER` for a client line, an odd or bad one (the normal way says which). What
        it ends: the message of a turn's end (its calls, ``turnComplete``), or a client's tool
        results (a list), else ``None``.
        """
        delta = _recorded_delta(line)
        if delta is not None:
            return None, delta, None
        return self._read_whole(line)

    def _read_whole(self, line: bytes) -> tuple[Any, tuple[int, str] | None, Any]:
        """:meth:`_read` of a line that is no common line as recorded: decoded whole.

        A thought as recorded (``_THOUGHT_END``) has only its text decoded (``_recorded_delta``), a
        ``generationComplete`` alone as recorded none (no delta, no events once the session started).
        """
        if line.endswith(_THOUGHT_END):
            delta = _recorded_delta(line)
            if delta is not None:
                return None, delta, None
        elif line == _GENERATION_COMPLETE:
            return None, _NO_DELTA, None
        if line.startswith(_CLIENT_TOOL):
            results = _tool_results(client_message(line))
            if results is not None:
                return NOT_SERVER, None, results
        try:
            message = frame_decoder.decode(line).msg
        except _DECODE_FAULTS:
            return NOT_SERVER, None, None
        delta = self._delta(message)
        content = message.server_content
        if delta is None and (
            message.tool_call is not None or (content is not None and content.turn_complete)
        ):
            return message, None, message
        return message, delta, None

    def _fold_line(self, delta: tuple[int, str] | None, ending: Any) -> bool:
        """Fold a line's non-empty delta, or what it ends (:meth:`_read`); ``False``: go the normal way."""
        if ending is not None:
            return self._fold_results(ending) if type(ending) is list else self._fold_turn_end(ending)
        assert delta is not None
        kind, piece = delta
        if not self._msg_open and not (
            kind <= _TEXT and self._fold_turn(0, ReasoningPart() if kind == _THOUGHT else TextPart(text=""))
        ):
            return False
        if kind <= _TEXT:
            return self._last == ("thought" if kind == _THOUGHT else "text") and self.fold_delta(
                self._turn, self._pos, piece
            )
        return self._audio and self.fold_delta(self._turn, "audio", piece, kind)

    @staticmethod
    def _delta(message: ServerMessage) -> tuple[int, str] | None:
        """The one delta a message holds (kind, text), if that is all it holds; else ``None``.

        One text or thought part without a signature, one audio chunk, or one output
        transcription fragment: its events are that one delta when it continues the open part
        (:meth:`_server_line`). ``(_QUIET, "")`` for a message with none of these and nothing
        else (no events once the session started). A message that does anything else (ends the
        turn, carries a call, usage or a session key, ...) is no delta.
        """
        content = message.server_content
        if (
            content is None
            or content.turn_complete
            or content.interrupted
            or content.input_transcription is not None
            or content.grounding_metadata is not None
            or content.url_context_metadata is not None
            or message.tool_call is not None
            or message.usage_metadata is not None
            or message.setup_complete is not None
            or message.tool_call_cancellation is not None
            or message.go_away is not None
            or message.session_resumption_update is not None
        ):
            return None
        turn = content.model_turn
        transcript = content.output_transcription
        text = transcript.text if transcript is not None else None
        if turn is None or not turn.parts:
            return (TRANSCRIPT, text) if text else _NO_DELTA
        if text or len(turn.parts) != 1:
            return None
        part = turn.parts[0]
        if part.text is not None:
            if part.thought_signature is not None:
                return None
            return (_THOUGHT if part.thought else _TEXT, part.text)
        blob = part.inline_data
        if blob is None or not blob.data or not (blob.mime_type or "").startswith("audio/"):
            return None
        return (AUDIO, blob.data)

    def _fold_turn(self, part: str | int, value: Part) -> bool:
        """Open the next turn (and its response, when none is open) with its first part, in the target.

        What ``_ensure_turn`` then the part's ``PartStart`` send, without events
        (``fold_message``); the part's deltas then fold. ``False``: nothing was done, go the
        normal way (also before the session started: its first line opens a response of its own).
        """
        if not self._started or not self.fold_message(
            None if self._open else self._response_start(), self._turn, "assistant", part, value
        ):
            return False
        self._open = True
        self._ours = False
        self._begin_turn()
        if part == "audio":
            self._audio = True
        else:
            self._pos, self._last = 0, "thought" if isinstance(value, ReasoningPart) else "text"
        return True

    def _fold_turn_end(self, message: ServerMessage) -> bool:
        """Fold a message that ends the turn: its calls (``toolCall``) or ``turnComplete``, usage beside either.

        What ``_tool_call`` or ``_turn_complete`` send, without events (``fold_end``): only their
        common shapes (a turn's calls alone; a turn's end that says nothing else, neither
        interrupted nor with a reason, the turn open and no input transcription open). ``False``:
        nothing was done, go the normal way.
        """
        if (
            (self._msg_open and not self._open)
            or message.setup_complete is not None
            or message.tool_call_cancellation is not None
            or message.go_away is not None
            or message.session_resumption_update is not None
        ):
            return False
        usage = usage_from(message.usage_metadata) if message.usage_metadata is not None else None
        content = message.server_content
        if message.tool_call is not None:
            if content is not None:
                return False
            pos = self._pos if self._msg_open else -1
            parts: list[tuple[int, Part]] = []
            for raw in message.tool_call.function_calls:
                value = call_part(raw)
                if value is None:
                    return False  # the normal way raises
                pos += 1
                parts.append((pos, value))
            start: ev.ResponseStart | None = None
            role: Role | None = None
            if not self._msg_open:  # the calls open the turn (``_ensure_turn``)
                start, role = None if self._open else self._response_start(), "assistant"
            if not self.fold_end(start, self._turn, role, parts, usage, _STOP):
                return False
            self._pos, self._last, self._audio = pos, "", self._audio and self._msg_open
        else:
            assert content is not None  # (``_fold_each``: a turn's end)
            turn = content.model_turn
            said = content.output_transcription
            if (
                not self._msg_open
                or self._input_open
                or self._interrupted
                or content.interrupted
                or content.turn_complete_reason
                or (turn is not None and turn.parts)
                or (said is not None and said.text)
                or content.input_transcription is not None
                or content.grounding_metadata is not None
                or content.url_context_metadata is not None
                or not self.fold_end(None, self._turn, None, (), usage, _STOP)
            ):
                return False
        self._msg_open = False
        self._turn += 1
        self._open = self._ours = False
        return True

    def _fold_results(self, results: list[ToolResultPart]) -> bool:
        """Fold a client's tool results as ``_tool_response`` sends them, without events (``fold_end``).

        Only between turns (no turn open); ``False``: nothing was done, go the normal way.
        """
        if self._msg_open:
            return False
        ours = not self._open
        if not self.fold_end(
            self._response_start() if ours else None,
            ("tool", self._tools),
            "tool",
            list(enumerate(results)),
            None,
            _DONE if ours else None,
        ):
            return False
        self._tools += 1
        if ours:
            self._ours = False
        return True
