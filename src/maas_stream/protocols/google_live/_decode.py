"""Google Live (BidiGenerateContent) decoder: websocket messages (JSON lines) → events.

Live is a session, not one response, and it is not flattened into plain messages:

* Each **model turn** becomes its own assistant message (message key = the model turn number):
  text, thought text (reasoning), one audio part per turn (``inlineData`` audio concatenated,
  ``outputTranscription`` as its transcript), code parts, and the turn's ``toolCall`` calls
  (arguments as JSON text). A turn ends at ``turnComplete``, at a ``toolCall`` (the model waits
  for the results) or when the client answers with ``toolResponse``; model output after that is
  the next turn. Each turn is one response: a ``ResponseStart`` when it begins and a
  ``ResponseDone`` when it ends (``finish_reason`` ``stop``, which the aggregator turns into
  ``tool_calls`` when the turn holds calls; status ``incomplete`` with provider reason
  ``interrupted`` after a barge-in).
* A client ``toolResponse`` becomes a ``tool`` message with one tool result per function
  response (message key ``("tool", n)``); its content is the ``response`` object as JSON text.
* ``inputTranscription`` becomes a ``user`` message holding an audio part with the transcript.
* A ``toolCallCancellation`` becomes one ``Cancelled(call_id=...)`` per id: the aggregator finds
  the call (in whichever turn it was made) and marks it, and its message, ``incomplete``. The
  message itself is also kept whole in ``Response.unknown_events`` (a session frame the Live
  encoder passes through).
* Every other client message (``setup``, ``clientContent``, ``realtimeInput``) and session
  message (``setupComplete``, ``goAway``, ``sessionResumptionUpdate``, ...) is kept whole as an
  unknown event (client ones as ``client.<name>``), counted, and passed through by the Live
  encoder.
* ``usageMetadata`` is per turn; each report replaces the last (``Response.usage`` is the last
  turn's).

It keeps only framing-level state, because Live's messages carry no keys of their own: the
turn counter and the position of the open turn's current part (the message and part keys it
synthesizes), whether the turn's audio part and the input transcription are open, whether a
response is open (and whether the decoder opened it for session messages), and the session id
and model for ``ResponseStart``. Item state (which calls exist, their status) is the
aggregator's: a cancellation names the call by id.

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
from itertools import repeat
from typing import Any, Final

import msgspec

from ... import events as ev
from ..._exceptions import RemoteProtocolError
from ..._model import AudioPart, ImagePart, MessageStatus, Part, ReasoningPart, Role, TextPart, ToolResultPart
from .._base import _DECODE_FAULTS
from .._direct import AUDIO, TEXT, TRANSCRIPT
from .._jsonl import client_message
from .._names import GOOGLE_LIVE as PROTOCOL
from .._session import NOT_SERVER, SessionDecoder
from ._parts import call_part, code_part, result_part, usage_from
from ._wire import AudioChunk, LivePart, ServerContent, ServerMessage, frame_decoder, server_decoder

__all__ = ["CLIENT_KEYS", "StreamDecoder"]

CLIENT_KEYS: Final[dict[str, str]] = {
    "setup": "setup",
    "clientContent": "clientContent",
    "client_content": "clientContent",
    "realtimeInput": "realtimeInput",
    "realtime_input": "realtimeInput",
    "toolResponse": "toolResponse",
    "tool_response": "toolResponse",
}
"""Client message keys (camelCase and the Python SDK's snake_case) → canonical camelCase name."""

_SESSION_KEYS: Final = ("setupComplete", "toolCallCancellation", "goAway", "sessionResumptionUpdate")


_HEAD: Final = b'{"dir":"server","msg":{"serverContent":{'
_TEXT_HEAD: Final = _HEAD + b'"modelTurn":{"parts":[{"text":'
_AUDIO_HEAD: Final = _HEAD + b'"modelTurn":{"parts":[{"inlineData":{"mimeType":'
_AUDIO_DATA: Final = b',"data":'
_TRANSCRIPT_HEAD: Final = _HEAD + b'"outputTranscription":{"text":'
"""The common lines as recorded, around their JSON strings: a line that is ``_TEXT_HEAD`` + a string
+ ``}]}}}}`` is a message of one text part and nothing else (likewise one audio chunk,
``_AUDIO_HEAD`` + mime type + ``_AUDIO_DATA`` + data + ``}}]}}}}``, and one output transcription,
``_TRANSCRIPT_HEAD`` + text + ``}}}}``), so its strings are all :meth:`StreamDecoder.fold_lines`
decodes. Any other line, or one whose pieces are not exactly strings, is decoded whole."""
_TEXT_END, _AUDIO_END, _TRANSCRIPT_END = b'"}]}}}}', b'"}}]}}}}', b'"}}}}'
"""How a common line ends: its last string, then the fixed closing (a line whose last value is no
string, a thought's ``"thought":true`` say, is no common line: it would fail its whole run)."""
_BLOB_AT: Final = len(_HEAD + b'"modelTurn":{"parts":[{"inlineData":')
"""Where the ``inlineData`` object of a common audio line starts (it ends 6 bytes before the line does)."""
_str = msgspec.json.Decoder(str).decode
_strings = msgspec.json.Decoder(list[str]).decode
_chunks = msgspec.json.Decoder(list[AudioChunk]).decode
"""A run's values (``_run_deltas``): texts or transcriptions; audio ``inlineData``."""
_KIND_AT, _MODEL_TURN = len(_HEAD) + 1, ord("m")
"""Which common line of an audio run: ``"modelTurn"`` (audio) or ``"outputTranscription"``."""
_TEXT_AT, _AUDIO_AT, _TRANSCRIPT_AT = len(_TEXT_HEAD), len(_AUDIO_HEAD), len(_TRANSCRIPT_HEAD)

_TEXT_RUN, _AUDIO_RUN = 1, 2
"""The runs of common lines that fold together: one text part; one audio part and its transcription."""
_PREFIX: Final = 70
_COMMON: Final[dict[bytes, tuple[int, int, bytes, bytes]]] = {
    head[:_PREFIX]: (group, -len(end), end, head[_PREFIX:] and head)
    for group, head, end in (
        (_TEXT_RUN, _TEXT_HEAD, _TEXT_END),
        (_AUDIO_RUN, _AUDIO_HEAD, _AUDIO_END),
        (_AUDIO_RUN, _TRANSCRIPT_HEAD, _TRANSCRIPT_END),
    )
}
"""The common lines by their first :data:`_PREFIX` bytes (one dictionary look-up per line): the run
each belongs to, where its end starts (compared as a slice: cheaper than ``endswith``), its end,
and its head when longer than that (``_AUDIO_HEAD``: checked too)."""


_kind_of = operator.itemgetter(_KIND_AT)
_blob_of = operator.itemgetter(slice(_BLOB_AT, -6))
_said_of = operator.itemgetter(slice(_TRANSCRIPT_AT, -4))
_text_of = operator.itemgetter(slice(_TEXT_AT, -6))
_ALTERNATING: Final = b"mo" * 512
"""An audio run's lines as recorded, chunk then transcription (``_run_deltas`` splits it by slicing)."""
_mime_of = operator.attrgetter("mime_type")
_data_of = operator.attrgetter("data")


def _run_deltas(group: int, run: list[bytes]) -> tuple[list[str], list[str]] | None:
    """A run's deltas (audio chunks, texts or transcriptions), each value decoded in ONE call per kind.

    ``None`` unless each line holds exactly one value of its kind and each is a delta: a
    non-empty text, or an audio chunk (non-empty data) of an ``audio/`` type, what
    :meth:`StreamDecoder._delta` says of its line. Each line's string is what lies between its
    head and its fixed closing (its run's lines are common lines as recorded, ``fold_lines``);
    were a line odd, the array would not hold one string per line.
    """
    try:
        if group == _TEXT_RUN:
            texts = _strings(b"[" + b",".join(map(_text_of, run)) + b"]")
            return ([], texts) if len(texts) == len(run) and "" not in texts else None
        kinds = bytes(map(_kind_of, run))  # each line's: audio (``m``) or transcription (``o``)
        said = kinds.count(b"o")
        if not said:
            audio, spoken = run, []
        elif said == len(run):
            audio, spoken = [], run
        elif _ALTERNATING.startswith(kinds):
            audio, spoken = run[0::2], run[1::2]
        elif _ALTERNATING.startswith(kinds, 1):
            audio, spoken = run[1::2], run[0::2]
        else:
            audio = [line for line in run if line[_KIND_AT] == _MODEL_TURN]
            spoken = [line for line in run if line[_KIND_AT] != _MODEL_TURN]
        blobs = _chunks(b"[" + b",".join(map(_blob_of, audio)) + b"]") if audio else []
        texts = _strings(b"[" + b",".join(map(_said_of, spoken)) + b"]") if said else []
    except _DECODE_FAULTS:
        return None
    if len(blobs) != len(audio) or len(texts) != said or "" in texts:
        return None
    chunks = list(map(_data_of, blobs))
    if "" in chunks or not all(map(str.startswith, set(map(_mime_of, blobs)), repeat("audio/"))):
        return None
    return chunks, texts


_CLIENT_TOOL: Final = b'{"dir":"client","msg":{"toolResponse":'
"""How a client's tool results begin as recorded (``_fold_each`` folds them without events)."""
_STOP: Final = ev.ResponseDone(finish_reason="stop")
_DONE: Final = ev.ResponseDone()
"""How a turn's response ends (``_turn_complete``, ``_tool_call``), and the response the decoder
opened for a client's tool results (events are frozen: one each, shared)."""

_TEXT, _THOUGHT, _QUIET = TEXT, -1, -2
"""A common delta's kind (``StreamDecoder._delta``): ``fold_delta``'s buffer, thought text, and
no delta at all (a message with no events once the session started: ``generationComplete``, say)."""


def _recorded_delta(line: bytes) -> tuple[int, str] | None:
    """The delta (kind, text) of a common line as recorded (``_TEXT_HEAD``...), or ``None``."""
    try:
        if line.startswith(_TEXT_HEAD):
            if line.endswith(_TEXT_END):  # a thought's ends otherwise: no failed decode for it
                return (_TEXT, _str(line[_TEXT_AT:-6]))
        elif line.startswith(_AUDIO_HEAD):
            if line.endswith(_AUDIO_END):
                body = line[_AUDIO_AT:-7]
                at = body.find(_AUDIO_DATA)
                if at > 0 and _str(body[:at]).startswith("audio/"):
                    return (AUDIO, _str(body[at + 8 :]))
        elif line.startswith(_TRANSCRIPT_HEAD) and line.endswith(_TRANSCRIPT_END):
            return (TRANSCRIPT, _str(line[_TRANSCRIPT_AT:-4]))
    except _DECODE_FAULTS:
        pass  # not exactly strings: the whole decode says what the line is
    return None


def _results(body: Any) -> list[ToolResultPart]:
    """A ``toolResponse``'s tool results (``functionResponses``, or the SDK's snake_case name)."""
    responses = body.get("functionResponses") if isinstance(body, dict) else None
    if responses is None and isinstance(body, dict):
        responses = body.get("function_responses")
    if not isinstance(responses, list):
        raise RemoteProtocolError("toolResponse without functionResponses")
    results: list[ToolResultPart] = []
    for item in responses:
        result = result_part(item)
        if result is None:
            raise RemoteProtocolError(
                "toolResponse.functionResponses must hold objects whose id and name are strings"
            )
        results.append(result)
    return results


def _tool_results(raw: Any) -> list[ToolResultPart] | None:
    """A client message's tool results if it is a ``toolResponse`` as ``_client`` reads it; else ``None``."""
    if not isinstance(raw, dict) or not raw or CLIENT_KEYS.get(next(iter(raw))) != "toolResponse":
        return None
    try:
        return _results(next(iter(raw.values())))
    except RemoteProtocolError:
        return None  # the normal way raises it


def _raw(line: bytes | str, whole: bool) -> Any:
    """A server message as plain JSON values, from its recorded line (``whole``) or its text."""
    raw = msgspec.json.decode(line)
    return raw["msg"] if whole else raw


class StreamDecoder(SessionDecoder):
    """Decode a Google Live session recorded as ``{"dir", "msg"}`` JSON lines (or fed live)."""

    protocol = PROTOCOL
    frame_decoder = frame_decoder

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session: str | None = None
        self._turn = 0
        self._msg_open = False
        self._pos = -1
        self._last = ""
        self._audio = False
        self._interrupted = False
        self._tools = 0
        self._inputs = 0
        self._input_open = False

    # ------------------------------------------------------------------ entry

    def on_message(self, msg: bytes | str, direction: str) -> list[ev.Event]:
        out: list[ev.Event] = []
        if direction == "client":
            self._client(msg, out)
        else:
            self._server_line(server_decoder.decode(msg), msg, out, False)
        return out

    def _server_line(
        self, message: ServerMessage, line: bytes | str, out: list[ev.Event], whole: bool = True
    ) -> None:
        """The events of one server message: ``line`` is its recorded line (``whole``) or its text.

        The text is decoded untyped only when the message, or a part of it, is kept whole.
        """
        if not self._started:
            # The session starts: say which protocol this is before any session message.
            self._started = True
            self._ensure_open(out, ours=True)
        content = message.server_content
        if content is not None:
            if content.input_transcription is not None:
                self._input(content.input_transcription.text, bool(content.input_transcription.finished), out)
            turn = content.model_turn
            if turn is not None and turn.parts:
                if not self._msg_open:
                    self._ensure_turn(out)
                for i, part in enumerate(turn.parts):
                    self._part(part, i, line, whole, out)
            transcript = content.output_transcription
            if transcript is not None and transcript.text:
                if not self._msg_open:
                    self._ensure_turn(out)
                if not self._audio:
                    self._start_audio(None, out)
                out.append(ev.AudioDelta(message=self._turn, part="audio", transcript=transcript.text))
            if (
                content.interrupted
                or content.grounding_metadata is not None
                or content.url_context_metadata is not None
            ):
                self._content_extras(content, out)
            if not (
                content.turn_complete
                or message.tool_call
                or message.usage_metadata
                or message.setup_complete is not None
                or message.tool_call_cancellation is not None
                or message.go_away is not None
                or message.session_resumption_update is not None
            ):
                return  # the common case: a piece of a model turn
        self._turn_end(message, content, line, whole, out)

    def fold_lines(self, lines: list[bytes]) -> None:
        """Fold a chunk's lines: a message that only continues an open part goes to its buffer.

        A common line as recorded (``_TEXT_HEAD``...) needs only its strings decoded: a run of
        consecutive ones of the same part (text; or audio and its transcription) is decoded in
        ONE msgspec call and folds with one append per buffer (:meth:`_fold_run`). Any other
        line takes :meth:`_fold_each` (decoded whole, the same typed decode as ``feed``, then
        folded or held). A delta folds when the decoder's state says it continues an open part,
        after the lines before it went ``normal`` (they may open that part).
        """
        other: list[bytes] = []
        run: list[bytes] = []
        group = 0
        common = _COMMON.get
        for line in lines:
            shape = common(line[:_PREFIX])
            if shape is not None:
                kind, cut, end, head = shape
                if line[cut:] == end and (not head or line.startswith(head)):
                    if kind != group or other:
                        if run:
                            self._fold_run(group, run)
                            run = []
                        if other:
                            self._fold_each(other)
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
        if other:
            self._fold_each(other)

    def _fold_run(self, group: int, run: list[bytes]) -> None:
        """Fold a run of common lines of one part, or take its lines one by one.

        Unless each line holds one delta (``_run_deltas``), the run goes :meth:`_fold_each`, which
        says what the lines are (errors included). Its deltas fold together once the decoder's
        state says they continue the open part (folding changes no state, so then all of them
        do); until then its lines go ``normal`` one at a time, as :meth:`_fold_each` would send
        them.
        """
        deltas = _run_deltas(group, run)
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

    def _fold_each(self, lines: list[bytes]) -> None:
        """Fold lines one at a time: a delta continuing the open part folds, every other line is held.

        Consecutive held lines go ``normal`` together (``normal_decoded``: as decoded here), before
        the next delta or turn end is tried (:meth:`_fold_line`). A line with no events
        (``_QUIET``), with nothing held, is only counted.
        """
        read = self._read
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
            return (TRANSCRIPT, text) if text else (_QUIET, "")
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

    def _turn_end(
        self,
        message: ServerMessage,
        content: ServerContent | None,
        line: bytes | str,
        whole: bool,
        out: list[ev.Event],
    ) -> None:
        """What a message holds besides model turn content: calls, usage, its end, session keys."""
        session = (
            message.setup_complete is not None
            or message.tool_call_cancellation is not None
            or message.go_away is not None
            or message.session_resumption_update is not None
        )
        if message.tool_call is not None:
            self._tool_call(message.tool_call.function_calls, out)
        if message.tool_call_cancellation is not None:
            self._cancel(message.tool_call_cancellation, out)
        if message.usage_metadata is not None:
            usage = usage_from(message.usage_metadata)
            if usage is not None:
                out.append(ev.UsageUpdate(usage=usage))
        if content is not None and content.turn_complete:
            self._turn_complete(content, out)
        main = content is not None or message.tool_call is not None or message.usage_metadata is not None
        if session or not main:
            self._session_message(_raw(line, whole), out)

    def _session_message(self, raw: Any, out: list[ev.Event]) -> None:
        if not isinstance(raw, dict):
            raise RemoteProtocolError("a Live server message must be a JSON object")
        setup = raw.get("setupComplete")
        if isinstance(setup, dict) and isinstance(setup.get("sessionId"), str):
            self._session = setup["sessionId"]
        key = next((k for k in _SESSION_KEYS if k in raw), None) or next(iter(raw), "empty")
        out.append(ev.UnknownEvent(provider_type=key, raw=raw, passthrough=True))

    def on_finish(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        if self._open and self._ours and not self._msg_open and not self._input_open:
            self._close_response(out)
        return out

    # ------------------------------------------------------------------ responses and turns

    def _response_id(self) -> str | None:
        return self._session

    def _ensure_turn(self, out: list[ev.Event]) -> None:
        self._ensure_open(out, ours=False)
        self._ours = False
        if not self._msg_open:
            self._begin_turn()
            out.append(ev.MessageStart(message=self._turn, role="assistant"))

    def _begin_turn(self) -> None:
        """The decoder's state when a turn's message opens (no part yet)."""
        self._msg_open = True
        self._pos = -1
        self._last = ""
        self._audio = False

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

    def _end_turn(self, out: list[ev.Event], status: MessageStatus | None = None) -> None:
        if self._msg_open:
            self._msg_open = False
            out.append(ev.MessageDone(message=self._turn, status=status))
            self._turn += 1

    # ------------------------------------------------------------------ server content

    def _content_extras(self, content: ServerContent, out: list[ev.Event]) -> None:
        if content.interrupted:
            self._interrupted = True
        if content.grounding_metadata is not None:
            self._metadata("groundingMetadata", content.grounding_metadata, out)
        if content.url_context_metadata is not None:
            self._metadata("urlContextMetadata", content.url_context_metadata, out)

    def _metadata(self, name: str, raw: Any, out: list[ev.Event]) -> None:
        self._ensure_turn(out)
        out.append(ev.UnknownEvent(provider_type=name, raw=raw, message=self._turn))

    def _input(self, text: str | None, finished: bool, out: list[ev.Event]) -> None:
        key = ("input", self._inputs)
        if not self._input_open and (text or finished):
            self._ensure_open(out, ours=False)
            self._input_open = True
            out.append(ev.MessageStart(message=key, role="user", type="input_transcription"))
            out.append(ev.PartStart(message=key, part=0, value=AudioPart()))
        if text:
            out.append(ev.AudioDelta(message=key, part=0, transcript=text))
        if finished:
            self._end_input(out)

    def _end_input(self, out: list[ev.Event]) -> None:
        if self._input_open:
            self._input_open = False
            out.append(ev.MessageDone(message=("input", self._inputs)))
            self._inputs += 1

    def _start_audio(self, fmt: str | None, out: list[ev.Event]) -> None:
        if not self._audio:
            self._audio = True
            out.append(ev.PartStart(message=self._turn, part="audio", value=AudioPart(format=fmt)))

    def _part(self, part: LivePart, i: int, line: bytes | str, whole: bool, out: list[ev.Event]) -> None:
        turn = self._turn
        text = part.text
        if text is not None:
            if self._last == "text" and not part.thought and part.thought_signature is None:
                if text:  # the common case: more of the open text part
                    out.append(ev.TextDelta(message=turn, part=self._pos, text=text))
            else:
                self._text(part, out)
            return
        blob = part.inline_data
        if blob is not None and (blob.mime_type or "").startswith("audio/"):
            if not self._audio:
                self._start_audio(blob.mime_type, out)
            out.append(ev.AudioDelta(message=turn, part="audio", data=blob.data))
            return
        if part.function_call is not None:
            self._call(part.function_call, out)
            return
        self._pos += 1
        self._last = ""
        if blob is not None:
            value: Any = ImagePart(data=blob.data, media_type=blob.mime_type)
        elif part.executable_code is not None or part.code_execution_result is not None:
            value = code_part(part.executable_code, part.code_execution_result)
        else:
            raw = _raw(line, whole)["serverContent"]["modelTurn"]["parts"][i]
            out.append(ev.UnknownEvent(provider_type="part", raw=raw, message=turn, part=self._pos))
            return
        out += [
            ev.PartStart(message=turn, part=self._pos, value=value),
            ev.PartDone(message=turn, part=self._pos),
        ]

    def _text(self, part: LivePart, out: list[ev.Event]) -> None:
        turn = self._turn
        kind = "thought" if part.thought else "text"
        if self._last != kind:
            self._pos += 1
            self._last = kind
            value: Any = ReasoningPart() if part.thought else TextPart(text="")
            out.append(ev.PartStart(message=turn, part=self._pos, value=value))
        if part.text:
            delta: ev.Event = (
                ev.ReasoningDelta(message=turn, part=self._pos, text=part.text)
                if part.thought
                else ev.TextDelta(message=turn, part=self._pos, text=part.text)
            )
            out.append(delta)
        if part.thought_signature is not None:
            out.append(ev.SignatureDelta(message=turn, part=self._pos, signature=part.thought_signature))
            if part.thought:
                self._last = ""  # a signature closes its thought block; more thought is a new one

    def _turn_complete(self, content: ServerContent, out: list[ev.Event]) -> None:
        interrupted = self._interrupted
        self._interrupted = False
        self._end_turn(out, "incomplete" if interrupted else None)
        self._end_input(out)
        reason = content.turn_complete_reason
        if interrupted:
            self._close_response(
                out, status="incomplete", finish_reason="other", provider_finish_reason="interrupted"
            )
        elif reason:
            self._close_response(out, finish_reason="other", provider_finish_reason=reason)
        else:
            self._close_response(out, finish_reason="stop")

    # ------------------------------------------------------------------ tools

    def _call(self, raw: Any, out: list[ev.Event]) -> None:
        value = call_part(raw)
        if value is None:
            raise RemoteProtocolError("a Live function call must be an object whose id and name are strings")
        self._pos += 1
        self._last = ""
        out += [
            ev.PartStart(message=self._turn, part=self._pos, value=value),
            ev.PartDone(message=self._turn, part=self._pos),
        ]

    def _tool_call(self, calls: list[Any], out: list[ev.Event]) -> None:
        self._ensure_turn(out)
        for call in calls:
            self._call(call, out)
        # The model waits for the results: this turn, and this response, end here ("stop": the
        # aggregator says "tool_calls" for a turn that holds calls).
        self._end_turn(out)
        self._close_response(out, finish_reason="stop")

    def _cancel(self, raw: Any, out: list[ev.Event]) -> None:
        ids = raw.get("ids", []) if isinstance(raw, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise RemoteProtocolError("toolCallCancellation.ids must be a list of strings")
        # The aggregator finds each call by id, in whichever turn it was made.
        out += [ev.Cancelled(call_id=call_id) for call_id in ids]

    # ------------------------------------------------------------------ client messages

    def _client(self, msg: bytes | str, out: list[ev.Event]) -> None:
        raw = msgspec.json.decode(msg)
        if not isinstance(raw, dict) or not raw:
            raise RemoteProtocolError("a Live client message must be a non-empty JSON object")
        key = next(iter(raw))
        name = CLIENT_KEYS.get(key)
        if name == "setup" and isinstance(raw[key], dict):
            model = raw[key].get("model")
            self._model = model if isinstance(model, str) else None
        if not self._started:
            self._started = True
            self._ensure_open(out, ours=True)
        if name == "toolResponse":
            self._tool_response(raw[key], out)
            return
        out.append(ev.UnknownEvent(provider_type=f"client.{name or key}", raw=raw, passthrough=True))

    def _tool_response(self, body: Any, out: list[ev.Event]) -> None:
        results = _results(body)
        ours = not self._open
        self._ensure_open(out, ours=ours)
        self._end_turn(out)
        key = ("tool", self._tools)
        self._tools += 1
        out.append(ev.MessageStart(message=key, role="tool"))
        for i, result in enumerate(results):
            out += [ev.PartStart(message=key, part=i, value=result), ev.PartDone(message=key, part=i)]
        out.append(ev.MessageDone(message=key))
        if ours:
            self._close_response(out)
