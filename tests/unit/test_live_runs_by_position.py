"""Google Live: a whole audio chunk's lines are split by position, as its first two lines say.

``_recorded._whole_run`` takes each line for the kind its position says (all one kind, or
alternating) and checks it as one: a chunk by its end (its whole head is ``_audio_data``'s to
compare), a transcription by its head and end. A line whose kind byte says otherwise, or that
holds the other kind's head and end crossed, must still fold as the event path says (an error
included).
"""

from __future__ import annotations

import pytest

from maas_stream.protocols.google_live._recorded import _AUDIO_RUN, _whole_run
from tests.unit.test_direct_fold_sessions import assert_same
from tests.unit.test_live_whole_runs import POOL

AUDIO, SAID = POOL["audio"], POOL["said"]
HEAD = b'{"dir":"server","msg":{"serverContent":{'
CROSSED = {
    "a transcription's head, a chunk's end": HEAD + b'"outputTranscription":{"text":"s"}}]}}}}',
    "a chunk's head, a transcription's end": HEAD
    + b'"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm","data":"AAAA"}}}}',
    "a chunk's head and end, another kind byte": AUDIO[:41] + b"x" + AUDIO[42:],
}
"""Lines that are no common line, each with some of one (invalid JSON, or an odd message)."""
OPENED = (
    b'{"dir":"client","msg":{"setup":{"model":"models/gemini-live"}}}\n'
    b'{"dir":"server","msg":{"setupComplete":{}}}\n'
)


def test_the_kinds_come_from_the_first_two_lines() -> None:
    assert _whole_run([AUDIO, SAID, AUDIO]) == (_AUDIO_RUN, ([AUDIO, AUDIO], [SAID]))
    assert _whole_run([SAID, AUDIO, SAID]) == (_AUDIO_RUN, ([AUDIO], [SAID, SAID]))
    assert _whole_run([AUDIO, AUDIO, AUDIO]) == (_AUDIO_RUN, ([AUDIO] * 3, []))
    assert _whole_run([SAID, SAID]) == (_AUDIO_RUN, ([], [SAID, SAID]))
    # Any other order puts a line at the other kind's place: its head or end says no.
    for lines in ([AUDIO, SAID, SAID], [SAID, AUDIO, AUDIO], [AUDIO, AUDIO, SAID], [SAID, SAID, AUDIO]):
        assert _whole_run(lines) == (0, None), lines


@pytest.mark.parametrize("name", sorted(CROSSED))
@pytest.mark.parametrize("at", [1, 2, 3])
def test_a_crossed_line_in_a_whole_chunk_folds_as_the_event_path(name: str, at: int) -> None:
    body = [AUDIO, SAID, AUDIO, SAID, AUDIO]
    body[at] = CROSSED[name]
    chunk = b"\n".join(body) + b"\n"
    opener = AUDIO + b"\n"  # the turn's audio part is open: the chunk continues it
    assert_same("google-live", OPENED + opener + chunk, [OPENED, opener, chunk])
    assert_same("google-live", OPENED + chunk, [OPENED, chunk])


def test_a_chunk_place_is_checked_by_its_end_alone() -> None:
    """At a chunk's place a line with a chunk's end passes ``_whole_run`` whatever its kind byte
    (its whole head is ``_audio_data``'s to refuse, as the test above folds it); at a transcription's
    place it does not."""
    body = [AUDIO, SAID, AUDIO, SAID, AUDIO]
    for name in ("a transcription's head, a chunk's end", "a chunk's head and end, another kind byte"):
        assert _whole_run([*body[:2], CROSSED[name], *body[3:]])[0] == _AUDIO_RUN, name
        assert _whole_run([*body[:1], CROSSED[name], *body[2:]])[0] == 0, name
