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
from itertools import repeat
from typing import Final

import msgspec

from .._base import _DECODE_FAULTS
from .._direct import AUDIO, TEXT, TRANSCRIPT
from ._wire import AudioChunk

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
    "_recorded_delta",
    "_run_deltas",
    "_str",
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
