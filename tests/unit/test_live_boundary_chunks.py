"""Google Live: a chunk across a turn's boundary is cut at its lines that are no common lines.

``StreamDecoder.fold_lines`` cuts such a chunk where a line's kind byte says it is no common line,
and tries each stretch between the cuts as one run (after a first line that is none by its end, a
thought say); whatever the stretches hold, the fold must stay the event path's.
"""

from __future__ import annotations

import itertools

import pytest

from maas_stream.protocols.google_live._decode import _GENERATION_COMPLETE
from maas_stream.protocols.google_live._recorded import _THOUGHT, _recorded_delta
from tests.unit.test_direct_fold import _lines
from tests.unit.test_direct_fold_sessions import assert_same
from tests.unit.test_live_whole_runs import POOL, TURN_LINES

OPENED = _lines(("client", {"setup": {"model": "models/gemini-live"}}), ("server", {"setupComplete": {}}))
TEXT, AUDIO, SAID, THOUGHT = POOL["text"], POOL["audio"], POOL["said"], POOL["thought"]
CUTS = {name: line.rstrip(b"\n") for name, line in TURN_LINES.items() if name != "bad"}
"""Lines that end or bracket a turn (each is a cut)."""

STRETCHES = {
    "text": [TEXT] * 4,
    "thought then text": [THOUGHT, TEXT, TEXT, TEXT],
    "two thoughts then text": [THOUGHT, THOUGHT, TEXT, TEXT],
    "audio and said": [AUDIO, SAID] * 3,
    "said then audio": [SAID, AUDIO, SAID],
    "audio then text": [AUDIO, SAID, TEXT, TEXT],
    "garbled end inside": [TEXT, POOL["text, garbled end"], TEXT],
    "odd audio head": [AUDIO, POOL["audio, other head"], AUDIO],
    "a blank line": [TEXT, b"", TEXT],
    "a short line": [AUDIO, POOL["short"], AUDIO],
    "one thought": [THOUGHT],
}


@pytest.mark.parametrize(("first", "second"), list(itertools.product(sorted(STRETCHES), repeat=2)))
@pytest.mark.parametrize("cut", sorted(CUTS))
def test_a_chunk_across_a_turn_boundary_folds_as_the_event_path(first: str, second: str, cut: str) -> None:
    """Two stretches around a cut line, in one chunk, after a turn of text and of audio (each its own chunk)."""
    before = b"\n".join([TEXT, TEXT]) + b"\n"
    audio = b"\n".join([AUDIO, SAID]) + b"\n"
    chunk = b"\n".join([*STRETCHES[first], CUTS[cut], CUTS[cut], *STRETCHES[second]]) + b"\n"
    for lead in (before, audio):
        assert_same("google-live", OPENED + lead + chunk, [OPENED, lead, chunk])


@pytest.mark.parametrize(
    ("part", "want"),
    [
        ({"text": "plan ", "thought": True}, "plan "),
        ({"text": 'a "q"\n', "thought": True}, 'a "q"\n'),
        ({"text": "", "thought": True}, ""),
        ({"text": "x", "thought": False}, None),
        ({"text": "x", "thoughtSignature": "s", "thought": True}, None),
    ],
)
def test_a_thought_as_recorded_is_read_by_its_text(part: dict[str, object], want: str | None) -> None:
    """A thought as recorded (one part, its text, ``"thought":true`` last) is read without a whole decode."""
    line = _lines(("server", {"serverContent": {"modelTurn": {"parts": [part]}}})).rstrip(b"\n")
    assert _recorded_delta(line) == (None if want is None else (_THOUGHT, want))
    chunk = b"\n".join([line, TEXT, TEXT, CUTS["turn complete"]]) + b"\n"
    assert_same("google-live", OPENED + chunk, [OPENED, chunk])


def test_a_generation_complete_as_recorded_folds_as_the_event_path() -> None:
    """``generationComplete`` alone as recorded is no delta and no events once the session started;
    before it (no setup yet) and after held lines it goes the normal way, as decoded."""
    done = CUTS["generation complete"]
    assert done == _GENERATION_COMPLETE
    client = POOL["client"]
    for body in (
        [done, *OPENED.splitlines(), TEXT, done],
        [*OPENED.splitlines(), client, done, TEXT, done, AUDIO],
    ):
        chunk = b"\n".join(body) + b"\n"
        assert_same("google-live", chunk, [chunk])
        assert_same("google-live", chunk, chunk.splitlines(keepends=True))
