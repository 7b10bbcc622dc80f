"""The session decoders' direct fold gives what their event path gives: Session, Response, errors, warnings.

Google Live and OpenAI Realtime fold runs of common lines at once (``DirectFold.fold_deltas``), hand
lines they decoded already the normal way without decoding them again
(``SessionDecoder.normal_decoded``) and only count lines with no events (Live's
``generationComplete``, Realtime's quiet ``.done`` events). Live also opens and ends turns in the
target without events (``fold_message``, ``fold_end``: calls, turn ends with usage, tool results).
Every recording and corpus stream, and
lines built to sit inside runs (odd, bad, quiet, padded audio, transcripts), are folded both ways in
random chunkings and compared: the session, the response, the error (type, frame, message) and
what was aggregated before it.
"""

from __future__ import annotations

import base64
import random
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream._accumulate import join_base64, whole_groups
from maas_stream._aggregate import Aggregator
from maas_stream._registry import get_protocol
from maas_stream.events import (
    AudioDelta,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    ResponseDone,
    ResponseStart,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from maas_stream.protocols import google_live
from maas_stream.protocols._direct import AUDIO, TEXT, TRANSCRIPT
from maas_stream.protocols._session import NOT_SERVER
from tests.unit.test_direct_fold import AUDIO as AUDIO_PART
from tests.unit.test_direct_fold import PADDED, SESSION, _lines, _live, _opened, _realtime, _rt, _session
from tests.unit.test_direct_fold import _streams as every_stream

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

SEEDS = [0, 1, 2]


def chunked(data: bytes, seed: int) -> list[bytes]:
    """``data`` cut at random places (pieces of 1 to 300 bytes, some at line ends)."""
    rng = random.Random(seed)
    out: list[bytes] = []
    at = 0
    while at < len(data):
        end = data.find(b"\n", at) + 1 if rng.random() < 0.3 else 0
        if end <= at:
            end = at + rng.randint(1, 300)
        out.append(data[at:end])
        at = end
    return out or [b""]


def by_events(protocol: str, chunks: list[bytes]) -> tuple[ms.Session, ms.Response]:
    """The event path: every line decoded to events, every event applied."""
    decoder = get_protocol(protocol).decoder()
    agg = Aggregator(protocol)
    try:
        for chunk in chunks:
            agg.consume(decoder.feed(chunk))
    except ms.RemoteProtocolError as exc:
        agg.consume(exc.events)
        exc.partial = agg.snapshot()
        raise
    agg.consume(decoder.finish())
    response = agg.finish()
    return agg.session(), response


def direct(protocol: str, chunks: list[bytes]) -> tuple[ms.Session, ms.Response]:
    """The direct fold (what ``ms.aggregate`` does)."""
    agg = ms.StreamAggregator(protocol)
    for chunk in chunks:
        agg.feed(chunk)
    response = agg.finish()
    return agg.session(), response


def outcome(run: Callable[[], tuple[ms.Session, ms.Response]]) -> tuple[Any, ...]:
    """The session and response, or the error's type, frame, message and partial response."""
    try:
        session, response = run()
    except ms.RemoteProtocolError as exc:
        return (type(exc).__name__, exc.frame, str(exc), exc.partial)
    return ("ok", session, response)


def assert_same(protocol: str, data: bytes, chunks: list[bytes]) -> tuple[Any, ...]:
    assert b"".join(chunks) == data
    want = outcome(lambda: by_events(protocol, chunks))
    got = outcome(lambda: direct(protocol, chunks))
    assert got == want
    return got


def _streams() -> list[object]:
    return [p for p in every_stream() if p.values[0] in SESSION]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("protocol", "path"), _streams())
@pytest.mark.parametrize("seed", SEEDS)
def test_recordings_and_corpus_fold_the_same_in_random_chunks(protocol: str, path: Path, seed: int) -> None:
    data = path.read_bytes()
    assert_same(protocol, data, chunked(data, seed))


@pytest.mark.parametrize(("protocol", "path"), _streams())
def test_recordings_and_corpus_fold_the_same_whole(protocol: str, path: Path) -> None:
    data = path.read_bytes()
    assert_same(protocol, data, [data])


def _audio(data: str) -> tuple[str, Any]:
    return _live({"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": data}})


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


GENERATION_DONE = ("server", {"serverContent": {"generationComplete": True}})
USAGE = {"promptTokenCount": 5, "responseTokenCount": 7, "totalTokenCount": 12}
TURN_END_USAGE = ("server", {"serverContent": {"turnComplete": True}, "usageMetadata": USAGE})


def _call(*ids: str, **more: Any) -> tuple[str, Any]:
    calls = [{"id": i, "name": "f", "args": {"a": i}} for i in ids]
    return ("server", {"toolCall": {"functionCalls": calls}, **more})


def _results(*ids: str) -> tuple[str, Any]:
    results = [{"id": i, "name": "f", "response": {"output": i}} for i in ids]
    return ("client", {"toolResponse": {"functionResponses": results}})


BAD_TEXT = b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"\\x"}]}}}}\n'

LIVE = {
    "text runs around quiet lines": _session(
        _live({"text": "a"}),
        *[_live({"text": f"w{i} "}) for i in range(20)],
        GENERATION_DONE,
        *[_live({"text": f"v{i} "}) for i in range(20)],
        GENERATION_DONE,
        GENERATION_DONE,
        _live(transcript=""),
        *[_live({"text": f"u{i} "}) for i in range(5)],
    ),
    "quiet lines before the session starts and between turns": _lines(
        GENERATION_DONE,
        ("client", {"setup": {"model": "models/gemini-live"}}),
        GENERATION_DONE,
        _live({"text": "a"}),
        _live({"text": "b"}, turnComplete=True),
        GENERATION_DONE,
        _live({"text": "c"}),
    ),
    "a bad line after quiet lines": _opened(
        _live({"text": "a"}), *[_live({"text": f"w{i} "}) for i in range(5)], GENERATION_DONE, GENERATION_DONE
    )
    + BAD_TEXT,
    "audio runs without padding": _session(
        _live(transcript="hi "),
        *[x for i in range(40) for x in (_audio(_b64(bytes([i] * 6))), _live(transcript=f"s{i} "))],
    ),
    "audio runs with padding inside and at their end": _session(
        _audio(_b64(b"\x01\x02")),
        *[_audio(_b64(bytes([i] * (6 if i % 5 else 4)))) for i in range(30)],
        *[x for i in range(20) for x in (_audio(_b64(bytes([i] * 5))), _live(transcript=f"p{i} "))],
        _audio(_b64(b"\x07")),
    ),
    "audio runs of uneven chunks": _session(
        _audio("AAAA"), *[_audio("AAAA" * (1 + i % 3)) for i in range(30)], _audio("AAAAAAA"), _audio("AAAA")
    ),
    "audio that is no base64 inside a run": _session(
        *[_audio("AAAA") for _ in range(5)],
        _audio("A=AA"),
        _audio("!!!!"),
        *[_audio("AQI=") for _ in range(5)],
    ),
    "transcripts alone, then audio and transcripts out of step": _session(
        *[_live(transcript=f"t{i} ") for i in range(15)],
        *[_audio("AAAA") for _ in range(3)],
        *[_live(transcript=f"u{i} ") for i in range(3)],
        _audio("AQI="),
        _live(transcript="x"),
        _live(transcript="y"),
        _audio("AAAA"),
    ),
    "odd and client lines inside runs": _session(
        *[_live({"text": f"w{i} "}) for i in range(4)],
        ("client", {"realtimeInput": {"audio": {"data": "AAAA"}}}),
        *[_live({"text": f"v{i} "}) for i in range(4)],
        ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "k"}]}, "unknownKey": 1}}),
        *[_audio("AAAA") for _ in range(4)],
        ("server", {"sessionResumptionUpdate": {"newHandle": "h"}}),
        *[_audio("AAAA") for _ in range(4)],
        _live(AUDIO_PART, PADDED),
    ),
    "a bad audio line inside an audio run": _opened(_live({"text": "a"}), *[_audio("AAAA") for _ in range(4)])
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"inlineData":'
    + b'{"mimeType":"audio/pcm","data":"AA\\q"}}]}}}}\n'
    + _lines(_audio("AAAA")),
    "a line that is no JSON between quiet lines": _opened(_live({"text": "a"}), GENERATION_DONE)
    + b"{nope\n"
    + _lines(GENERATION_DONE),
    "a line that only looks like a common audio line": _opened(_live({"text": "a"}), _audio("AAAA"))
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"inlineDatum":0,"q":'
    + b'{"mimeType":"audio/pcm","data":"AAAA"}}]}}}}\n'
    + _lines(_audio("AAAA")),
    "thoughts and odd-ended text lines inside text runs": _session(
        _live({"text": "plan ", "thought": True}),
        *[_live({"text": f"w{i} "}) for i in range(6)],
        _live({"text": "more ", "thought": True}),
        *[_live({"text": f"v{i} "}) for i in range(6)],
        _live({"text": "signed"}, {"text": "two"}),
        _live({"text": "x", "thoughtSignature": "c2ln"}),
        *[_live({"text": f"u{i} "}) for i in range(6)],
        _live({"text": "last ", "thought": True}),
    ),
    "audio lines whose head or end is not the common one inside audio runs": _session(
        *[x for i in range(6) for x in (_audio("AAAA"), _live(transcript=f"s{i} "))],
        _live({"inlineData": {"data": "AAAA", "mimeType": "audio/pcm;rate=24000"}}),
        *[x for i in range(3) for x in (_audio("AQI="), _live(transcript=f"t{i} "))],
        _live({"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AAAA", "x": 1}}),
        _live(transcript="q"),
        ("server", {"serverContent": {"outputTranscription": {"text": "f", "finished": True}}}),
        *[x for i in range(3) for x in (_audio("AAAA"), _live(transcript=f"r{i} "))],
    ),
    "a text line with a garbled end inside a text run": _opened(
        *[_live({"text": f"w{i} "}) for i in range(4)]
    )
    + b'{"dir":"server","msg":{"serverContent":{"modelTurn":{"parts":[{"text":"g"}]}}}}}\n'
    + _lines(*[_live({"text": f"v{i} "}) for i in range(4)]),
    "a transcript line with a garbled end inside an audio run": _opened(
        _live({"text": "a"}), *[x for i in range(3) for x in (_audio("AAAA"), _live(transcript=f"s{i} "))]
    )
    + b'{"dir":"server","msg":{"serverContent":{"outputTranscription":{"text":"g"}}}x\n'
    + _lines(_audio("AAAA")),
    "turn ends, calls and tool results in their common and odd shapes": _session(
        _call("c1"),  # calls open the turn
        _results("c1"),
        *[_live({"text": f"w{i} "}) for i in range(3)],
        _call("c2", "c3", usageMetadata=USAGE),  # two calls closing an open turn, usage beside them
        _results("c2", "c3"),
        _live({"text": "a"}),
        TURN_END_USAGE,
        ("server", {"toolCall": {"functionCalls": [{"name": "f", "args": {}}]}}),  # no id: the normal way
        ("client", {"tool_response": {"function_responses": [{"id": "c4", "name": "f", "response": {}}]}}),
        ("client", {"toolResponse": {"functionResponses": []}}),
        _live({"text": "b"}),
        ("server", {"serverContent": {"turnComplete": True, "turnCompleteReason": "MALFORMED"}}),
        _live({"text": "c"}),
        ("server", {"serverContent": {"interrupted": True}}),
        TURN_END_USAGE,
        ("server", {"serverContent": {"inputTranscription": {"text": "hi"}}}),
        _live({"text": "d"}),
        TURN_END_USAGE,
        _live({"text": "e"}),
        _results("c5"),  # while a turn is open: the normal way
        _call("c6", serverContent={"modelTurn": {"parts": [{"text": "f"}]}}),
        _live({"text": "g"}, turnComplete=True),
        TURN_END_USAGE,  # no turn open: the normal way
        _live({"text": "h"}),
        ("server", {"serverContent": {"turnComplete": True}, "goAway": {"timeLeft": "1s"}}),
        _call("c7"),
        _results("c7"),
    ),
    "tool results and a turn end before the session started": _lines(
        _results("c0"),
        TURN_END_USAGE,
        ("client", {"setup": {"model": "models/gemini-live"}}),
        _results("c1"),
        _call("c2"),
    ),
    "bad tool results": _opened(_call("c1"))
    + _lines(("client", {"toolResponse": {"functionResponses": [{"id": 1, "name": "f"}]}}), _call("c2")),
    "a bad call": _opened(_live({"text": "a"}))
    + _lines(("server", {"toolCall": {"functionCalls": [{"id": "c1", "name": 2}]}}), TURN_END_USAGE),
}

REALTIME = {
    "quiet .done lines between deltas": _realtime(
        *[_rt("output_text", f"t{i} ") for i in range(10)],
        ("server", {"type": "response.output_text.done", "item_id": "m", "content_index": 0, "text": "x"}),
        *[_rt("output_audio", "AAAA", index=1) for i in range(5)],
        ("server", {"type": "response.output_audio.done", "item_id": "m", "content_index": 1}),
        ("server", {"type": "response.audio.done", "item_id": "m", "content_index": 1}),
        *[_rt("output_audio_transcript", f"s{i} ", index=1) for i in range(5)],
        ("server", {"type": "response.output_audio_transcript.done", "item_id": "m", "content_index": 1}),
        ("server", {"type": "response.text.done", "item_id": "m", "content_index": 0}),
    ),
    "a quiet line first": _lines(
        ("server", {"type": "response.output_text.done", "item_id": "m", "content_index": 0, "text": "x"}),
        _rt("output_text", "a"),
    ),
    "held lines decoded once, a client line among them": _realtime(
        _rt("output_text", "a"),
        ("server", {"type": "rate_limits.updated", "rate_limits": []}),
        ("client", {"type": "input_audio_buffer.append", "audio": "AAAA"}),
        ("server", {"type": "response.output_text.done", "item_id": "m", "content_index": 0}),
        ("server", {"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}),
        _rt("output_text", "b"),
    ),
    "a bad line after quiet lines": _realtime(
        _rt("output_text", "a"),
        ("server", {"type": "response.output_text.done", "item_id": "m", "content_index": 0}),
    )
    + b'{"dir":"server","msg":{"type":"response.output_item.added"}}\n',
    "padded audio deltas": _realtime(
        *[_rt("output_audio", "AQI=" if i % 2 else "AAAA", index=1) for i in range(9)]
    ),
}

CASES = [
    *[pytest.param("google-live", name, id=f"live: {name}") for name in LIVE],
    *[pytest.param("openai-realtime", name, id=f"realtime: {name}") for name in REALTIME],
]


@pytest.mark.parametrize(("protocol", "name"), CASES)
@pytest.mark.parametrize("seed", [*SEEDS, "lines", "whole"])
def test_edge_cases_fold_the_same_both_ways(protocol: str, name: str, seed: Any) -> None:
    data = (LIVE if protocol == "google-live" else REALTIME)[name]
    if seed == "lines":
        chunks = data.splitlines(keepends=True)
    elif seed == "whole":
        chunks = [data]
    else:
        chunks = chunked(data, seed)
    assert_same(protocol, data, chunks)


def test_the_bad_lines_fail_as_they_should() -> None:
    """The error cases above are errors (so their comparison compares errors), with their frame."""
    got = assert_same(
        "google-live", LIVE["a bad line after quiet lines"], [LIVE["a bad line after quiet lines"]]
    )
    assert got[0] == "RemoteProtocolError"
    assert got[1] == 11  # setup, setupComplete, 6 texts, 2 quiet lines, then the bad one
    data = REALTIME["a bad line after quiet lines"]
    assert assert_same("openai-realtime", data, [data])[0] == "RemoteProtocolError"
    for name, frame in (
        ("a text line with a garbled end inside a text run", 7),  # setup, setupComplete, 4 texts
        ("a transcript line with a garbled end inside an audio run", 10),  # ..., a text, 3 audio + 3 said
    ):
        got = assert_same("google-live", LIVE[name], [LIVE[name]])
        assert got[:2] == ("RemoteProtocolError", frame)
    for name in ("bad tool results", "a bad call"):  # setup, setupComplete, a call or a text, the bad one
        got = assert_same("google-live", LIVE[name], [LIVE[name]])
        assert got[:2] == ("RemoteProtocolError", 4)


def test_a_line_that_is_no_common_line_splits_its_run() -> None:
    """A thought's line has a text line's head: the text lines around it still fold as runs, no events."""
    data = _opened(
        _live({"text": "a"}),
        *[_live({"text": f"w{i} "}) for i in range(4)],
        _live({"text": "t", "thought": True}),
        *[_live({"text": f"v{i} "}) for i in range(4)],
    )
    agg = Counting("google-live")
    agg.feed(data)
    assert [type(e) for e in agg.applied if getattr(e, "message", None) == 0] == [PartStart, ReasoningDelta]
    content = assert_same("google-live", data, [data])[2].messages[0].content
    assert content == [
        ms.TextPart(text="aw0 w1 w2 w3 "),
        ms.ReasoningPart(text="t"),
        ms.TextPart(text="v0 v1 v2 v3 "),
    ]


def test_padded_audio_joins_as_bytes() -> None:
    """Audio folded in runs (joined or kept apart by ``whole_groups``) is the bytes sent, in order."""
    data = LIVE["audio runs with padding inside and at their end"]
    raw = [b"\x01\x02", *(bytes([i] * (6 if i % 5 else 4)) for i in range(30))]
    raw += [bytes([i] * 5) for i in range(20)] + [b"\x07"]
    parts = ms.aggregate(data, protocol="google-live").messages[0].content
    assert [base64.b64decode(p.data or "") for p in parts if isinstance(p, ms.AudioPart)] == [b"".join(raw)]


class Counting(ms.StreamAggregator):
    """Counts the events applied the normal way."""

    applied: list[Any]

    def consume(self, events: list[Any]) -> None:
        self.applied = [*getattr(self, "applied", []), *events]
        super().consume(events)


@pytest.mark.parametrize(
    ("protocol", "quiet"),
    [
        ("google-live", GENERATION_DONE),
        (
            "openai-realtime",
            ("server", {"type": "response.output_text.done", "item_id": "m", "content_index": 0}),
        ),
    ],
)
def test_quiet_lines_are_only_counted(protocol: str, quiet: tuple[str, Any]) -> None:
    """A line with no events, between folded deltas, reaches the aggregator as nothing at all."""
    start = (
        _opened(_live({"text": "a"}), _live({"text": "b"}))
        if protocol == "google-live"
        else b"".join(_realtime(_rt("output_text", "a")).splitlines(keepends=True)[:-1])  # no response.done
    )
    agg = Counting(protocol)
    agg.feed(start)
    before = list(agg.applied)
    agg.feed(
        _lines(quiet, quiet, _live({"text": "c"}) if protocol == "google-live" else _rt("output_text", "c"))
    )
    assert agg.applied == before
    assert agg.frames == start.count(b"\n") + 3


def test_whole_groups() -> None:
    assert whole_groups([])
    assert whole_groups(["AAAA", "AQID"])
    assert not whole_groups(["AAAA", "AQI="])
    assert not whole_groups(["AAA", "A"])
    assert whole_groups(["A=AA"])  # "=" not at the end: joined as text, as sent
    assert join_base64(["AQI=", "AwQ="]) == "AQIDBA=="
    assert join_base64(["AQID", "BA=="]) == "AQIDBA=="


class Buffers:
    def __init__(self) -> None:
        self.text: list[str] | None = []
        self.args: list[str] = []
        self.summary: dict[int, list[str]] | None = None
        self.audio_data: list[str] | None = None
        self.audio_transcript: list[str] | None = None


class Target:
    """A fold target with one part, ``(0, 0)``."""

    def __init__(self) -> None:
        self.part = Buffers()
        self.consumed: list[Any] = []

    def consume(self, events: list[Any]) -> None:
        self.consumed += events

    def part_buffers(self, message: Any, part: Any) -> Buffers | None:
        return self.part if (message, part) == (0, 0) else None

    def open_part(self, message: Any, close: Any, part: Any, value: Any, done: bool = False) -> None:
        return None

    def open_message(self, start: Any, message: Any, role: Any, part: Any, value: Any) -> None:
        return None

    def end_message(self, start: Any, message: Any, role: Any, parts: Any, usage: Any, done: Any) -> bool:
        return False

    keeps_passthrough = True

    def count_passthrough(self, provider_type: str) -> bool:
        return False


@pytest.mark.parametrize(
    ("pieces", "kept"),
    [
        (["AAAA", "AQID", "AQI="], ["AAAAAQIDAQI="]),  # whole groups then a padded last: one chunk
        (["AQI=", "AAAA"], ["AQI=", "AAAA"]),  # padding inside: kept apart
        (["AAA", "A"], ["AAA", "A"]),
        (["AQI="], ["AQI="]),
    ],
)
def test_fold_deltas_audio(pieces: list[str], kept: list[str]) -> None:
    decoder = google_live.StreamDecoder()
    target = Target()
    decoder._fold_begin(target)
    assert decoder.fold_deltas(0, 0, ["AAAA"], AUDIO)
    assert decoder.fold_deltas(0, 0, pieces, AUDIO)
    assert decoder.fold_deltas(0, 0, ["t", "u"], TRANSCRIPT)
    assert decoder.fold_deltas(0, 0, ["a", "b", "c"], TEXT)
    assert not decoder.fold_deltas(1, 0, ["x"], TEXT)
    decoder._fold_end()
    assert target.part.audio_data == ["AAAA", *kept]
    assert join_base64(target.part.audio_data) == join_base64(["AAAA", *pieces])
    assert target.part.audio_transcript == ["tu"]
    assert target.part.text == ["abc"]


def test_normal_decoded_takes_decoded_lines_and_markers() -> None:
    """Messages decoded already are not decoded again; ``NOT_SERVER`` and ``None`` lines are read."""
    decoder = google_live.StreamDecoder()
    lines = _lines(
        ("client", {"setup": {"model": "models/x"}}), _live({"text": "a"}), _live({"text": "b"})
    ).splitlines()
    wrong = decoder.frame_decoder.decode(_lines(_live({"text": "z"})).strip()).msg
    target = Target()
    decoder._fold_begin(target)
    decoder.normal_decoded([NOT_SERVER, wrong, None], lines)
    decoder._fold_end()
    texts = [e.text for e in target.consumed if isinstance(e, TextDelta)]
    assert texts == ["z", "b"]  # the message handed on stands for its line
    kinds = [type(e) for e in target.consumed]
    assert kinds[:4] == [ResponseStart, UnknownEvent, MessageStart, PartStart]  # the client line read
    assert decoder.frames == 3
    assert not [e for e in target.consumed if isinstance(e, AudioDelta)]


def test_a_text_run_after_a_thought_opens_its_part_directly() -> None:
    """The run's first line opens the text part in the target (``fold_part``): no event applied for it."""
    data = _opened(_live({"text": "plan", "thought": True}), *[_live({"text": f"w{i} "}) for i in range(5)])
    agg = Counting("google-live")
    agg.feed(data)
    assert not [e for e in agg.applied if isinstance(e, TextDelta | PartStart) and e.part == 1]
    assert agg.finish() == ms.aggregate([data[:1], data[1:]], protocol="google-live")
    assert assert_same("google-live", data, [data])[2].messages[0].content[1] == ms.TextPart(
        text="w0 w1 w2 w3 w4 "
    )


TURN_END = ("server", {"serverContent": {"turnComplete": True}})
THOUGHT = {"text": "plan", "thought": True}


@pytest.mark.parametrize(
    "opener",
    [
        [_live(AUDIO_PART), _live(transcript="hi"), _live(PADDED)],  # audio first: the part keeps its format
        [_live(transcript="hi"), _live(AUDIO_PART)],  # the transcript first: no format
        [_live({"text": "a"}), _live({"text": "b"})],  # a text run
        [_live(THOUGHT), _live({"text": "x"})],  # a thought, then text
        [_live(THOUGHT, {"text": "y"})],  # not one delta: the normal way
    ],
)
def test_a_line_that_opens_a_turn_folds_directly(opener: list[tuple[str, Any]]) -> None:
    """The turn's first line opens its response, message and part in the target (``fold_message``).

    The first turn's response is the session's own (open already), the next ones open their
    response: the same session and response as the event path, with fewer events applied.
    """
    data = _opened(*opener, TURN_END, *opener, TURN_END, *opener)
    agg = Counting("google-live")
    agg.feed(data)
    starts = [e for e in agg.applied if isinstance(e, MessageStart)]
    assert len(starts) == (3 if len(opener) == 1 else 0)
    assert agg.finish() == ms.aggregate([data[:1], data[1:]], protocol="google-live")
    for seed in range(3):
        assert_same("google-live", data, chunked(data, seed))
    session = assert_same("google-live", data, [data])[1]
    assert len(session.responses) == 3
    first = session.responses[0].messages[0].content[0]
    if opener[0][1]["serverContent"].get("modelTurn", {}).get("parts") == [AUDIO_PART]:
        assert first == ms.AudioPart(format="audio/pcm;rate=24000", data="AAAAAQI=", transcript="hi")


def test_open_message_is_refused_where_events_are_needed() -> None:
    """Nothing is done for a message that exists, a call without an id, an ended response, or ``emit``."""
    agg = Aggregator("google-live")
    start = ResponseStart(protocol="google-live")
    assert agg.open_message(None, 0, "assistant", 0, ms.TextPart(text="")) is not None
    assert agg.open_message(None, 0, "assistant", 1, ms.TextPart(text="")) is None  # exists
    assert agg.open_message(None, 1, "assistant", 0, ms.ToolCallPart(id="", name="f", arguments="")) is None
    agg.consume([ResponseDone(finish_reason="stop")])
    assert agg.open_message(None, 1, "assistant", 0, ms.TextPart(text="")) is None  # ended: needs a start
    opened = agg.open_message(start, 1, "assistant", 0, ms.TextPart(text=""))
    assert opened is not None
    assert opened.text is None  # made with the first fragment
    opened.text = ["z"]
    assert agg.snapshot().messages[1].content == [ms.TextPart(text="z")]
    assert agg.state.value == "STREAMING"
    assert (
        Aggregator("google-live", emit=True).open_message(start, 0, "assistant", 0, ms.TextPart(text=""))
        is None
    )


def test_turn_ends_and_tool_results_fold_directly() -> None:
    """A turn's calls, its end with usage beside it, and a client's tool results apply no events (``fold_end``).

    Calls that close an open turn and calls that are a turn of their own, tool results that
    open and close a response of their own: the same session and response as the event path.
    """
    head = _opened()
    data = head + _lines(
        _live({"text": "a"}),
        _call("c1"),
        _results("c1"),
        _live({"text": "b"}),
        TURN_END_USAGE,
        _call("c2", "c3"),
        _results("c2", "c3"),
        _call("c4", usageMetadata=USAGE),
    )
    agg = Counting("google-live")
    agg.feed(data)
    before = Counting("google-live")
    before.feed(head)
    assert agg.applied == before.applied  # the session's start only
    assert agg.frames == data.count(b"\n")
    session, response = agg.session(), agg.finish()
    assert (session, response) == assert_same("google-live", data, [data])[1:]
    assert [r.finish_reason for r in session.responses] == ["tool_calls", "stop", "tool_calls", "tool_calls"]
    assert [r.usage is not None for r in session.responses] == [False, True, False, True]
    assert [e.kind for e in session.events if e.kind == "tool_result"] == ["tool_result", "tool_result"]
    calls = session.responses[2].messages[0].content
    assert [(c.id, c.status) for c in calls if isinstance(c, ms.ToolCallPart)] == [
        ("c2", "completed"),
        ("c3", "completed"),
    ]
    for seed in range(3):
        assert_same("google-live", data, chunked(data, seed))


def test_end_message_is_refused_where_events_are_needed() -> None:
    """Nothing is done for a missing, existing or closed message, a known or repeated part key, a
    call without an id, an ended response without a start, or ``emit``."""
    call = ms.ToolCallPart(id="c", name="f", arguments="{}")
    stop = ResponseDone(finish_reason="stop")
    agg = Aggregator("google-live")
    assert agg.open_message(None, 0, "assistant", 0, ms.TextPart(text="")) is not None
    assert not agg.end_message(None, 1, None, [], None, stop)  # no such message
    assert not agg.end_message(None, 0, "assistant", [], None, stop)  # exists: not new
    assert not agg.end_message(None, 0, None, [(0, call)], None, stop)  # part 0 exists
    assert not agg.end_message(None, 0, None, [(1, call), (1, call)], None, stop)
    assert not agg.end_message(
        None, 0, None, [(1, ms.ToolCallPart(id="", name="f", arguments=""))], None, stop
    )
    assert Aggregator("google-live", emit=True).end_message(None, 0, "assistant", [], None, stop) is False
    kept = agg.snapshot().messages[0]
    assert (kept.status, len(kept.content), agg.state.value) == (
        "in_progress",
        1,
        "STREAMING",
    )  # nothing done
    usage = ms.Usage(input_tokens=1)
    assert agg.end_message(None, 0, None, [(1, call)], usage, stop)
    assert agg.state.value == "DONE"
    assert not agg.end_message(None, 0, None, [], None, None)  # closed (and the response ended)
    assert not agg.end_message(None, 1, "tool", [], None, None)  # ended: needs a start
    start = ResponseStart(protocol="google-live")
    assert agg.end_message(start, 1, "tool", [], None, ResponseDone())
    want = Aggregator("google-live")
    want.consume(
        [
            MessageStart(message=0, role="assistant"),
            PartStart(message=0, part=0, value=ms.TextPart(text="")),
            PartStart(message=0, part=1, value=call),
            PartDone(message=0, part=1),
            UsageUpdate(usage=usage),
            MessageDone(message=0),
            stop,
            start,
            MessageStart(message=1, role="tool"),
            MessageDone(message=1),
            ResponseDone(),
        ]
    )
    assert agg.session() == want.session()
    assert agg.finish() == want.finish()
    assert agg.session().responses[0].finish_reason == "tool_calls"
