"""Google Live: a chunk whose lines are all one run's common lines folds without a look at each line.

``_recorded._whole_run`` says so for the whole chunk at once (text: its separators counted; audio:
its lines split by position, their heads and ends compared a kind at a time); it must say exactly
what ``fold_lines``' line by line look says of these lines (a chunk's head past its first bytes,
kind byte included, is ``_audio_data``'s to compare: ``test_live_runs_by_position``), and the fold
must stay the event path's whatever the chunk holds.
"""

from __future__ import annotations

import itertools
import random

import pytest

from maas_stream.protocols.google_live._recorded import (
    _AUDIO_RUN,
    _COMMON,
    _PREFIX,
    _TEXT_RUN,
    _by_kind,
    _whole_run,
)
from tests.unit.test_direct_fold import _lines, _live
from tests.unit.test_direct_fold_sessions import LIVE, _audio, assert_same

POOL = {
    "text": _lines(_live({"text": "w "})).rstrip(b"\n"),
    "text with escapes": _lines(_live({"text": 'a "q"\n}]}}}}'})).rstrip(b"\n"),
    "audio": _lines(_audio("AAAA")).rstrip(b"\n"),
    "said": _lines(_live(transcript="s ")).rstrip(b"\n"),
    "thought": _lines(_live({"text": "t", "thought": True})).rstrip(b"\n"),
    "audio, keys swapped": _lines(_live({"inlineData": {"data": "AAAA", "mimeType": "audio/pcm"}})).rstrip(
        b"\n"
    ),
    "audio, other head": b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"inlineData":'
    b'{"mimeTypo":"audio/pcm","data":"AAAA"}}]}}}}',
    "said, finished": _lines(
        ("server", {"serverContent": {"outputTranscription": {"text": "f", "finished": True}}})
    ).rstrip(b"\n"),
    "text, garbled end": _lines(_live({"text": "g"})).rstrip(b"\n")[:-1] + b"]",
    "client": _lines(("client", {"realtimeInput": {"audio": {"data": "AAAA"}}})).rstrip(b"\n"),
    "empty": b"",
    "short": b"{}",
}
COMMON = {"text": _TEXT_RUN, "text with escapes": _TEXT_RUN, "audio": _AUDIO_RUN, "said": _AUDIO_RUN}


def line_by_line(lines: list[bytes], audio_heads: bool = True) -> int:
    """What ``fold_lines`` sees line by line: the run all the lines are common lines of, in an order
    ``_whole_run`` takes (an audio run's kinds all one, or alternating), else 0. Without
    ``audio_heads``, the head of an audio chunk between the first and the last line is not looked
    at past its first bytes (``_whole_run`` leaves it to ``_audio_data``)."""
    groups = set()
    for at, line in enumerate(lines):
        shape = _COMMON.get(line[:_PREFIX])
        if shape is None:
            return 0
        group, cut, end, head = shape
        if not audio_heads and 0 < at < len(lines) - 1 and line[41] == ord("m") and group == _AUDIO_RUN:
            head = b""
        if line[cut:] != end or (head and not line.startswith(head)):
            return 0
        groups.add(group)
    if len(groups) != 1:
        return 0
    kinds = [line[41] for line in lines]
    if groups == {_AUDIO_RUN} and len(set(kinds)) > 1 and any(a == b for a, b in itertools.pairwise(kinds)):
        return 0
    return groups.pop()


def test_the_pool_is_what_it_says() -> None:
    """Each pool line is a common line, or not, as its name says (so the comparison below can fail)."""
    for name, line in POOL.items():
        assert line_by_line([line]) == COMMON.get(name, 0), name


@pytest.mark.parametrize("seed", range(40))
def test_whole_run_says_what_the_line_by_line_look_says(seed: int) -> None:
    rng = random.Random(seed)
    names = list(POOL)
    common = list(COMMON)
    for _ in range(200):
        size = rng.randint(1, 12)
        if rng.random() < 0.5:  # mostly common lines: a whole run, or one odd line in it
            picked = [rng.choice(common) for _ in range(size)]
            if rng.random() < 0.5:
                picked[rng.randrange(size)] = rng.choice(names)
        else:
            picked = [rng.choice(names) for _ in range(size)]
        lines = [POOL[name] for name in picked]
        whole, split = _whole_run(lines)
        assert whole == line_by_line(lines, audio_heads=False), picked
        # An audio run comes split by kind, as ``_run_deltas`` would split it; nothing else does.
        assert split == (_by_kind(lines) if whole == _AUDIO_RUN else None), picked


def test_alternating_audio_and_uniform_runs_are_whole() -> None:
    audio, said, text = POOL["audio"], POOL["said"], POOL["text"]
    assert _whole_run([audio, said] * 5) == (_AUDIO_RUN, ([audio] * 5, [said] * 5))
    assert _whole_run([said, audio] * 5 + [said]) == (_AUDIO_RUN, ([audio] * 5, [said] * 6))
    assert _whole_run([audio] * 7) == (_AUDIO_RUN, ([audio] * 7, []))
    assert _whole_run([said] * 7) == (_AUDIO_RUN, ([], [said] * 7))
    assert _whole_run([text] * 7) == (_TEXT_RUN, None)
    assert _whole_run([audio, audio, said]) == (0, None)  # taken line by line (still folded as a run there)
    assert _whole_run([text] * 3 + [POOL["thought"]] + [text] * 3) == (0, None)


def test_an_odd_audio_head_in_a_whole_chunk_folds_the_same() -> None:
    """A chunk ``_whole_run`` takes for an audio run though a line's head is odd (``mimeTypo``) or
    its type no audio type: ``_audio_data`` refuses the run, its lines go one by one."""
    audio, said = POOL["audio"], POOL["said"]
    opened = _lines(("client", {"setup": {"model": "models/gemini-live"}}), ("server", {"setupComplete": {}}))
    for odd in (POOL["audio, other head"], _blob(b'"video/mp4"').rstrip(b"\n")):
        assert _whole_run([audio, said, odd, said])[0] == _AUDIO_RUN
        for body in ([audio, said, odd, said, audio], [odd, said, audio, said], [odd, odd], [said, odd]):
            chunk = b"\n".join(body) + b"\n"
            assert_same("google-live", opened + audio + b"\n" + chunk, [opened, audio + b"\n", chunk])
            assert_same("google-live", opened + chunk, [opened, chunk])


@pytest.mark.parametrize("name", sorted(n for n in LIVE))
@pytest.mark.parametrize("size", [2, 3, 5, 8])
def test_chunks_of_whole_lines_fold_the_same(name: str, size: int) -> None:
    """Each edge case cut at line ends, ``size`` lines a chunk: many chunks are whole runs, or nearly."""
    data = LIVE[name]
    lines = data.splitlines(keepends=True)
    chunks = [b"".join(lines[i : i + size]) for i in range(0, len(lines), size)]
    assert_same("google-live", data, chunks)


def _blob(mime: bytes, data: bytes = b'"AAAA"') -> bytes:
    return (
        b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":'
        + mime
        + b',"data":'
        + data
        + b"}}]}}}}\n"
    )


AUDIO_TYPES = {
    "two audio types in one run": [
        _blob(b'"audio/pcm"'),
        _blob(b'"audio/pcm;rate=16000"'),
        _blob(b'"audio/pcm"'),
    ],
    "a type that is no audio type inside a run": [
        _blob(b'"audio/pcm"'),
        _blob(b'"video/mp4"'),
        _blob(b'"audio/pcm"'),
    ],
    "a first type that is no audio type": [_blob(b'"text/plain"'), _blob(b'"audio/pcm"')],
    "a type that is no string": [_blob(b'"audio/pcm"'), _blob(b"7"), _blob(b'"audio/pcm"')],
    "a first type that is no string": [_blob(b'{"a":1,"data":2}'), _blob(b'"audio/pcm"')],
    "a type with escaped quotes": [_blob(b'"audio/\\",\\"data\\":"')] * 3,
    "a type with spaces around it": [_blob(b' "audio/pcm" ')] * 2 + [_blob(b'"audio/pcm"')],
    "data that is no string": [_blob(b'"audio/pcm"'), _blob(b'"audio/pcm"', b"5"), _blob(b'"audio/pcm"')],
    "empty data": [_blob(b'"audio/pcm"'), _blob(b'"audio/pcm"', b'""')],
    "data with escapes": [_blob(b'"audio/pcm"', b'"AA\\u0041A"')] * 3,
}


@pytest.mark.parametrize("name", sorted(AUDIO_TYPES))
@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_audio_runs_fold_their_data_by_their_one_type(name: str, size: int) -> None:
    """An audio run's data is read after its first line's head (type included): any other line goes its own way."""
    said = _lines(_live(transcript="s ")).splitlines(keepends=True)[0]
    body = [line for blob in AUDIO_TYPES[name] for line in (blob, blob, said)]
    opened = _lines(("client", {"setup": {"model": "models/gemini-live"}}), ("server", {"setupComplete": {}}))
    opened += _blob(b'"audio/pcm"')  # the turn's first chunk: the run's type, as most lines below
    lines = opened.splitlines(keepends=True) + body
    data = b"".join(lines)
    chunks = [b"".join(lines[i : i + size]) for i in range(0, len(lines), size)]
    assert_same("google-live", data, chunks)


TURN_LINES = {
    "call": _lines(("server", {"toolCall": {"functionCalls": [{"id": "c", "name": "f", "args": {}}]}})),
    "results": _lines(
        ("client", {"toolResponse": {"functionResponses": [{"id": "c", "name": "f", "response": {}}]}})
    ),
    "generation complete": _lines(("server", {"serverContent": {"generationComplete": True}})),
    "turn complete": _lines(
        ("server", {"serverContent": {"turnComplete": True}, "usageMetadata": {"totalTokenCount": 3}})
    ),
    "bad": b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"x"}]}}\n',
}
"""Lines that end or bracket a turn, and a bad one (mixed into the pool's lines below)."""


@pytest.mark.parametrize("seed", range(30))
def test_random_mixes_of_lines_fold_the_same_in_chunks_cut_anywhere(seed: int) -> None:
    """Common lines, near misses (a thought, a garbled end, an odd head), turn ends and now and then
    a bad line, in any order and cut at line ends or anywhere: the fold is the event path's
    (a chunk that mixes runs and other lines, and a bad line inside it, included)."""
    rng = random.Random(seed)
    pool = [line + b"\n" for line in POOL.values() if line] + list(TURN_LINES.values())
    weights = [
        (4 if line.rstrip(b"\n") in (POOL["text"], POOL["audio"], POOL["said"]) else 1)
        * (0.04 if line == TURN_LINES["bad"] else 1)
        for line in pool
    ]
    opened = _lines(("client", {"setup": {"model": "models/gemini-live"}}), ("server", {"setupComplete": {}}))
    lines = opened.splitlines(keepends=True) + rng.choices(pool, weights, k=120)
    data = b"".join(lines)
    if rng.random() < 0.5:
        size = rng.randint(1, 20)
        chunks = [b"".join(lines[i : i + size]) for i in range(0, len(lines), size)]
    else:
        cuts = sorted(rng.sample(range(1, len(data)), 12))
        chunks = [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]
    assert_same("google-live", data, chunks)
