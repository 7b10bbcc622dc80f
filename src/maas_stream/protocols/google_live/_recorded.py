"""Google Live's common lines as recorded, recognized and read without a typed decode.

A recorded server line that holds one text delta, one audio chunk or one output transcription
and nothing else has a fixed shape around its JSON strings (:data:`_TEXT_HEAD` and the others):
such a line is told by its first bytes (:data:`_COMMON`), and a run of them of one part is read
in one msgspec call per kind (:func:`_run_deltas`); a single one by :func:`_recorded_delta`. Any
other line, or one whose pieces are not exactly strings, is decoded whole by the decoder
(``_decode``), which folds what these read (``StreamDecoder.fold_lines``).

It must not do IO.
"""

from __future__ import annotations

import operator
from typing import Final

import msgspec

from .._base import _DECODE_FAULTS
from .._direct import AUDIO, TEXT, TRANSCRIPT

__all__ = [
    "_AUDIO_AT",
    "_AUDIO_DATA",
    "_AUDIO_RUN",
    "_COMMON",
    "_KIND_AT",
    "_MODEL_TURN",
    "_PREFIX",
    "_QUIET",
    "_TEXT",
    "_TEXT_HEAD",
    "_TEXT_RUN",
    "_THOUGHT",
    "_THOUGHT_END",
    "_recorded_delta",
    "_run_deltas",
    "_str",
    "_whole_run",
]


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
_str = msgspec.json.Decoder(str).decode
_strings = msgspec.json.Decoder(list[str]).decode
"""A run's values (``_run_deltas``): texts, transcriptions or audio data."""
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
_said_of = operator.itemgetter(slice(_TRANSCRIPT_AT, -4))
_text_of = operator.itemgetter(slice(_TEXT_AT, -6))
_ALTERNATING: Final = b"mo" * 512
"""An audio run's lines as recorded, chunk then transcription (``_run_deltas`` splits it by slicing)."""


def _run_deltas(
    group: int, run: list[bytes], split: tuple[list[bytes], list[bytes]] | None = None
) -> tuple[list[str], list[str]] | None:
    """A run's deltas (audio chunks, texts or transcriptions), each value decoded in ONE call per kind.

    ``None`` unless each line holds exactly one value of its kind and each is a delta: a
    non-empty text, or an audio chunk (non-empty data) of an ``audio/`` type, what
    :meth:`StreamDecoder._delta` says of its line. Each line's string is what lies between its
    head and its fixed closing (its run's lines are common lines as recorded, ``fold_lines``);
    were a line odd, the array would not hold one string per line. ``split``: an audio run's
    lines already split by kind (``_by_kind``'s, as :func:`_whole_run` gives them).
    """
    try:
        if group == _TEXT_RUN:
            texts = _strings(b"[" + b",".join(map(_text_of, run)) + b"]")
            return ([], texts) if len(texts) == len(run) and "" not in texts else None
        if split is None:
            split = _by_kind(run)
        if split is None:
            audio = [line for line in run if line[_KIND_AT] == _MODEL_TURN]
            spoken = [line for line in run if line[_KIND_AT] != _MODEL_TURN]
        else:
            audio, spoken = split
        said = len(spoken)
        chunks = _audio_data(audio) if audio else []
        texts = _strings(b"[" + b",".join(map(_said_of, spoken)) + b"]") if said else []
    except _DECODE_FAULTS:
        return None
    if chunks is None or len(chunks) != len(audio) or len(texts) != said or "" in texts or "" in chunks:
        return None
    return chunks, texts


def _audio_data(audio: list[bytes]) -> list[str] | None:
    """A run's audio chunks (their ``data``), decoded in ONE call: ``None`` unless they share one ``audio/`` type.

    The first line says the type (its ``mimeType`` string, before :data:`_AUDIO_DATA`: a JSON
    string holds no unescaped quote, so the first ``,"data":`` ends it) after :data:`_AUDIO_HEAD`;
    each line must begin as it does, up to its data string, which then lies between that head
    and the fixed closing (so each line's head is checked here, whoever checked it before).
    Raises what decoding raises when the type is no string.
    """
    first = audio[0]
    at = first.find(_AUDIO_DATA, _AUDIO_AT) + len(_AUDIO_DATA)
    if (
        at < _AUDIO_AT + len(_AUDIO_DATA)
        or not first.startswith(_AUDIO_HEAD)
        or not _str(first[_AUDIO_AT : at - len(_AUDIO_DATA)]).startswith("audio/")
    ):
        return None
    head = first[:at]
    if list(map(operator.itemgetter(slice(at)), audio)).count(head) != len(audio):
        return None
    return _strings(b"[" + b",".join(map(operator.itemgetter(slice(at, -7)), audio)) + b"]")


def _by_kind(run: list[bytes]) -> tuple[list[bytes], list[bytes]] | None:
    """An audio run's lines split by slicing: its chunks, its transcriptions (``None``: in no such order).

    Each line's kind is its byte at :data:`_KIND_AT` (``m``: audio, ``o``: transcription): all
    one kind, or alternating as recorded (:data:`_ALTERNATING`).
    """
    kinds = bytes(map(_kind_of, run))
    said = kinds.count(b"o")
    if not said:
        return run, []
    if said == len(run):
        return [], run
    if _ALTERNATING.startswith(kinds):
        return run[0::2], run[1::2]
    if _ALTERNATING.startswith(kinds, 1):
        return run[1::2], run[0::2]
    return None


_TEXT_SEP: Final = _TEXT_END + b"\n" + _TEXT_HEAD
_SAID_SEP: Final = _TRANSCRIPT_END + b"\n" + _TRANSCRIPT_HEAD
"""What lies between two consecutive common text lines, around the newline (``_whole_run``); between
two transcriptions."""
_audio_end_of = operator.itemgetter(slice(-len(_AUDIO_END), None))


def _whole_run(lines: list[bytes]) -> tuple[int, tuple[list[bytes], list[bytes]] | None]:
    """The run (``_TEXT_RUN``, ``_AUDIO_RUN``) whose common lines as recorded ALL the lines are, else 0.

    With it, an audio run's lines split by kind (``_by_kind``: :func:`_run_deltas` takes them
    so), else ``None``.

    What ``fold_lines`` checks line by line (each line's head and end), checked for the whole
    chunk a kind at a time in C loops. Text: each newline between two lines is a
    :data:`_TEXT_SEP` (it holds one newline and cannot overlap itself, so counting them counts
    the boundaries that are one), the first line starts and the last one ends as a text line
    does. Audio: its chunks and transcriptions, all one kind or alternating (the orders
    ``_run_deltas`` splits by slicing) as its first two lines say, each chunk with its end, each
    transcription with its head and end (a chunk's whole head, type included, so its kind too,
    is ``_audio_data``'s to compare: a line whose head is odd fails the run there, and it goes
    line by line); any other order says 0.
    """
    first = lines[0]
    if first.startswith(_TEXT_HEAD):
        return (_TEXT_RUN if _all_are(lines, _TEXT_HEAD, _TEXT_END, _TEXT_SEP) else 0), None
    last = lines[-1]
    if not (
        last.startswith(_AUDIO_HEAD)
        if last.endswith(_AUDIO_END)
        else last.endswith(_TRANSCRIPT_END) and last.startswith(_TRANSCRIPT_HEAD)
    ) or not (first.startswith(_AUDIO_HEAD) or first.startswith(_TRANSCRIPT_HEAD)):
        return 0, None  # (most chunks that are no run say so here)
    # Its kinds by position, as its first two lines say (all one, or alternating; ``_by_kind``'s
    # orders): each line is then checked as one of its kind, below or by ``_audio_data``.
    said = first[_KIND_AT] != _MODEL_TURN
    if len(lines) > 1 and (lines[1][_KIND_AT : _KIND_AT + 1] == b"m") == said:
        audio, spoken = (lines[1::2], lines[0::2]) if said else (lines[0::2], lines[1::2])
    else:
        audio, spoken = ([], lines) if said else (lines, [])
    split = audio, spoken
    whole = list(map(_audio_end_of, audio)).count(_AUDIO_END) == len(audio) and _all_are(
        spoken, _TRANSCRIPT_HEAD, _TRANSCRIPT_END, _SAID_SEP
    )
    return (_AUDIO_RUN, split) if whole else (0, None)


def _all_are(lines: list[bytes], head: bytes, end: bytes, between: bytes) -> bool:
    """Whether every line starts with ``head`` and ends with ``end`` (``between``: ``end``, a newline, ``head``).

    Their boundaries are counted in the lines joined, in C loops (no slice per line): each
    newline must lie within one ``between``, which holds one newline and cannot overlap itself
    (a head ends with ``:``, an end starts with a quote), so each is counted once.
    """
    n = len(lines)
    if not n:
        return True
    return (
        lines[0].startswith(head)
        and lines[-1].endswith(end)
        and (n == 1 or b"\n".join(lines).count(between) == n - 1)
    )


_TEXT, _THOUGHT, _QUIET = TEXT, -1, -2
"""A common delta's kind (``StreamDecoder._delta``): ``fold_delta``'s buffer, thought text, and
no delta at all (a message with no events once the session started: ``generationComplete``, say)."""


_THOUGHT_END: Final = b'","thought":true}]}}}}'
"""How a thought as recorded ends: one text part (``_TEXT_HEAD``, its text) that is a thought and
nothing else (no common line: it opens its part, ``_recorded_delta`` reads it)."""
_THOUGHT_CUT: Final = 1 - len(_THOUGHT_END)


def _recorded_delta(line: bytes) -> tuple[int, str] | None:
    """The delta (kind, text) of a common line as recorded (``_TEXT_HEAD``...), or of a thought, or ``None``."""
    try:
        if line.startswith(_TEXT_HEAD):
            if line.endswith(_TEXT_END):
                return (_TEXT, _str(line[_TEXT_AT:-6]))
            if line.endswith(_THOUGHT_END):  # (a turn's first line, often)
                return (_THOUGHT, _str(line[_TEXT_AT:_THOUGHT_CUT]))
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
