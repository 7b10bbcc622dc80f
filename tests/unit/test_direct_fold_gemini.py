"""Gemini's direct fold leaves what the event path leaves: same snapshots, responses, errors and warnings.

``StreamAggregator(emit=False)`` folds Gemini chunks of common parts straight into the
aggregator (``protocols/gemini/_decode.py``: lean ``FoldChunk`` decode, run switches and whole
calls through ``open_part``, all or nothing per chunk); ``emit=True`` takes the event path. Both
are fed the same chunks (recordings, the corpus read in place, and random streams: run switches,
signatures, whole and streamed calls, several candidates, camelCase and snake_case names, unknown
fields, errors mid-stream) and compared after every chunk.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream._registry import get_protocol
from tests.conftest import corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

_OPAQUE = frozenset({"args", "response", "partMetadata", "searchEntryPoint", "customMetadata"})


def snake(value: Any) -> Any:
    """A chunk with snake_case names (the SDK's), free-form objects left alone."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = "".join("_" + ch.lower() if ch.isupper() else ch for ch in key)
            out[name] = item if key in _OPAQUE else snake(item)
        return out
    if isinstance(value, list):
        return [snake(v) for v in value]
    return value


def sse(chunks: list[Any]) -> bytes:
    """Chunks (JSON values, or raw payload bytes) as a Gemini SSE body."""
    out = []
    for chunk in chunks:
        payload = chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()
        out.append(b"data: " + payload + b"\r\n\r\n")
    return b"".join(out)


def cut(data: bytes, rng: random.Random) -> list[bytes]:
    """``data`` in random pieces (a byte, a few, a chunk's worth, many chunks)."""
    out = []
    i = 0
    while i < len(data):
        size = rng.choice([1, 3, 17, 100, 700, 4096, 1 << 20])
        out.append(data[i : i + size])
        i += size
    return out or [b""]


def run(pieces: list[bytes], emit: bool) -> tuple[list[Any], Any]:
    """Snapshots after each piece, then the final response (or the error's type, frame, text, partial)."""
    agg = ms.StreamAggregator("gemini", emit=emit)
    seen: list[Any] = []
    try:
        for piece in pieces:
            agg.feed(piece)
            seen.append(agg.snapshot())
        return seen, agg.finish()
    except ms.ProtocolError as exc:
        return seen, (type(exc).__name__, getattr(exc, "frame", None), str(exc), exc.partial)


def assert_same(pieces: list[bytes]) -> Any:
    """The direct fold and the event path agree on every snapshot and the end; the end."""
    direct = run(pieces, emit=False)
    events = run(pieces, emit=True)
    assert direct[0] == events[0]
    assert direct[1] == events[1]
    return direct[1]


# ---------------------------------------------------------------------- recordings and corpus


def _streams() -> list[Any]:
    return params(recordings("gemini") + corpus("gemini"))


@pytest.mark.parametrize("path", _streams())
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recordings_fold_the_same_in_random_pieces(path: Path, seed: int) -> None:
    data = path.read_bytes()
    assert_same(cut(data, random.Random(seed)))


def _payloads(data: bytes) -> list[bytes]:
    return [line[5:].strip() for line in data.splitlines() if line.startswith(b"data:")]


@pytest.mark.parametrize("path", _streams())
def test_recordings_in_snake_case_fold_the_same(path: Path) -> None:
    chunks: list[Any] = []
    for payload in _payloads(path.read_bytes()):
        try:
            chunks.append(snake(json.loads(payload)))
        except ValueError:
            chunks.append(payload)  # a malformed frame stays as it was
    data = sse(chunks)
    snake_end = assert_same(cut(data, random.Random(7)))
    camel_end = run([path.read_bytes()], emit=True)[1]
    if isinstance(camel_end, ms.Response):
        assert snake_end == camel_end  # the names do not change the result


# ---------------------------------------------------------------------- random streams

SIG = "c2lnbmF0dXJl"


def _part(rng: random.Random, n: int) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.55:
        part: dict[str, Any] = {"text": rng.choice(["", f"w{n} ", "é ", "x_y: "])}
        if rng.random() < 0.4:
            part["thought"] = rng.random() < 0.8
        if rng.random() < 0.15:
            part["thoughtSignature"] = rng.choice([SIG, ""])
        return part
    if roll < 0.75:
        call: dict[str, Any] = {"name": rng.choice(["f", "g"])}
        args = rng.choice([{"a": n}, {}, None, "missing", "missing", "bad"])
        if args == "bad":
            call["args"] = rng.choice([[1], "x", 3])
        elif args != "missing":
            call["args"] = args
        if rng.random() < 0.2:
            call["id"] = f"id{n}"
        part = {"functionCall": call}
        if rng.random() < 0.3:
            part["thoughtSignature"] = SIG
        return part
    if roll < 0.88:
        # A streamed call's piece (Vertex): its start, arguments, keep-going and terminal markers.
        kind = rng.choice(["start", "more", "more", "end"])
        arg = {"jsonPath": f"$.k{n % 3}", "stringValue": f"v{n}"}
        if kind == "start":
            return {"functionCall": {"name": "s", "partialArgs": [arg], "willContinue": True}}
        if kind == "more":
            return {"functionCall": {"partialArgs": [arg], "willContinue": True}}
        return {"functionCall": {}}
    if roll < 0.93:
        return {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}
    if roll < 0.97:
        return {"text": f"t{n}", "videoMetadata": {}}  # an unknown part field
    return {"hologram": {"x": 1}}  # a part of no known kind


def _chunk(rng: random.Random, n: int, cands: int) -> dict[str, Any]:
    candidates = []
    for index in sorted(rng.sample(range(cands), rng.choice([1, 1, 1, cands]))):
        parts = [_part(rng, n * 10 + k) for k in range(rng.choice([1, 1, 1, 1, 2, 3]))]
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if index or rng.random() < 0.5:
            cand["index"] = index
        roll = rng.random()
        if roll < 0.03:
            cand["finishReason"] = "STOP"
        elif roll < 0.06:
            cand["safetyRatings"] = [{"category": "HARM", "probability": "LOW"}]
        elif roll < 0.08:
            cand["tokenCount"] = n
        candidates.append(cand)
    body: dict[str, Any] = {"candidates": candidates, "modelVersion": "g", "responseId": "r"}
    if rng.random() < 0.7:
        body["usageMetadata"] = {"promptTokenCount": 3, "candidatesTokenCount": n, "totalTokenCount": 3 + n}
    if rng.random() < 0.2:
        body["createTime"] = "2026-01-01T00:00:00Z"
    if rng.random() < 0.02:
        body["somethingNew"] = 1
    return body


def random_stream(seed: int) -> bytes:
    """A random Gemini stream: mostly text runs, with everything else now and then."""
    rng = random.Random(seed)
    cands = rng.choice([1, 1, 2, 3])
    chunks: list[Any] = []
    for n in range(rng.randint(5, 60)):
        chunk = _chunk(rng, n, cands)
        roll = rng.random()
        if roll < 0.01:
            chunk = {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}
        elif roll < 0.015:
            chunks.append(b"{not json")
        elif roll < 0.03:
            chunk = snake(chunk)
        chunks.append(chunk)
    if rng.random() < 0.7:
        end = [
            {"content": {"parts": [{"text": ""}]}, "index": i, "finishReason": "STOP"} for i in range(cands)
        ]
        chunks.append({"candidates": end, "usageMetadata": {"totalTokenCount": 99}})
    if rng.random() < 0.2:
        chunks = [snake(c) if isinstance(c, dict) else c for c in chunks]
    return sse(chunks)


@pytest.mark.parametrize("seed", range(60))
def test_random_streams_fold_the_same(seed: int) -> None:
    data = random_stream(seed)
    assert_same(cut(data, random.Random(seed)))
    assert_same([data])


# ---------------------------------------------------------------------- cases by name


def _cand(*parts: dict[str, Any], index: int = 0, **fields: Any) -> dict[str, Any]:
    return {"content": {"role": "model", "parts": list(parts)}, "index": index, **fields}


def _chunks(*cands: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"candidates": list(cands), "usageMetadata": {"totalTokenCount": 1}, "responseId": "r", **fields}


def _text(text: str, thought: bool = False, **more: Any) -> dict[str, Any]:
    return {"text": text, **({"thought": True} if thought else {}), **more}


_CALL = {"functionCall": {"name": "f", "args": {"a": 1}}}
_END = _chunks(_cand(_text(""), finishReason="STOP"))

CASES: dict[str, list[Any]] = {
    "runs switching, one part a chunk": [
        _chunks(_cand(_text(f"p{i} ", thought=(i // 3) % 2 == 0))) for i in range(20)
    ]
    + [_END],
    "runs switching inside one chunk": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b", thought=True), _text("c"), _text("d", thought=True), _text("e"))),
        _END,
    ],
    "signed runs: a new run per signature": [
        _chunks(_cand(_text("a", thought=True, thoughtSignature=SIG))),
        _chunks(_cand(_text("b", thought=True))),
        _chunks(_cand(_text("c", thought=True, thoughtSignature=SIG))),
        _chunks(_cand(_text("", thoughtSignature=SIG))),
        _END,
    ],
    "a signature for the open unsigned run": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b", thoughtSignature=SIG))),
        _chunks(_cand(_text("c"), _text("d", thoughtSignature=SIG))),
        _END,
    ],
    "whole calls, signed, in runs and back to back": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand({**_CALL, "thoughtSignature": SIG})),
        _chunks(_cand(_CALL, _CALL, _text("b"), _CALL)),
        _chunks(_cand({"functionCall": {"name": "g"}})),
        _chunks(_cand({"functionCall": {"id": "mine", "name": "h", "args": None}})),
        _chunks(_cand({"functionCall": {}})),
        _END,
    ],
    "a whole call given as partialArgs without willContinue": [
        _chunks(_cand(_text("a"))),
        _chunks(
            _cand({"functionCall": {"name": "f", "partialArgs": [{"jsonPath": "$.a", "numberValue": 2}]}})
        ),
        _END,
    ],
    "bad arguments after folded chunks": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b", thought=True))),
        _chunks(_cand(_text("c"), {"functionCall": {"name": "f", "args": [1, 2]}})),
        _END,
    ],
    "bad partialArgs path in a whole call": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand({"functionCall": {"name": "f", "partialArgs": [{"jsonPath": "a]["}]}})),
        _END,
    ],
    "streamed call, text cuts it, more text": [
        _chunks(_cand(_text("a"))),
        _chunks(
            _cand(
                {
                    "functionCall": {
                        "name": "s",
                        "partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}],
                        "willContinue": True,
                    }
                }
            )
        ),
        _chunks(
            _cand(
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.a", "stringValue": "y"}],
                        "willContinue": True,
                    }
                }
            )
        ),
        _chunks(_cand(_text("b"))),
        _chunks(_cand(_text("c", thought=True))),
        _END,
    ],
    "several candidates, runs switching apart": [
        _chunks(_cand(_text("a")), _cand(_text("x", thought=True), index=1)),
        _chunks(_cand(_text("b")), _cand(_text("y"), index=1)),
        _chunks(_cand(_text("c", thought=True), index=1)),
        _chunks(_cand(_CALL, index=1), _cand(_text("d", thought=True))),
        _chunks(_cand(_text("e")), _cand(_text("f"), index=2)),
        _chunks(_cand(_text("g"), index=2), _cand(_text("h"), index=2)),
        _chunks(_cand(_text("i"), index=1), _cand(_text("j"), index=1)),
        _END,
    ],
    "snake_case chunks among camelCase ones": [
        _chunks(_cand(_text("a"))),
        snake(_chunks(_cand(_text("b", thought=True, thoughtSignature=SIG)))),
        snake(_chunks(_cand(_text("c", thought=True)))),
        _chunks(_cand(_text("d"))),
        snake(_chunks(_cand({**_CALL, "thoughtSignature": SIG}))),
        snake(_END),
    ],
    "snake_case names among camelCase ones in one chunk": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand({"functionCall": {"name": "s", "will_continue": True}})),
        _chunks(
            _cand({"functionCall": {"name": "s", "partialArgs": [{"json_path": "$.a", "stringValue": "x"}]}})
        ),
        _chunks(_cand(_text("b", thought_signature=SIG))),
        {**_chunks(_cand(_text("c"))), "usageMetadata": {"prompt_token_count": 4, "total_token_count": 9}},
        _END,
    ],
    "unknown fields on the chunk, candidate, part and call": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b")), promptFeedback={"safetyRatings": []}),
        _chunks(_cand(_text("c"), groundingMetadata={"webSearchQueries": ["q"]})),
        _chunks(_cand(_text("d", partMetadata={"k": 1}))),
        _chunks(_cand({"functionCall": {"name": "f", "args": {}, "extra": 1}})),
        _chunks(_cand(_text("e")), surprise=True),
        _END,
    ],
    "parts of other kinds between runs": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand({"inlineData": {"mimeType": "image/png", "data": "AAAA"}, "thoughtSignature": SIG})),
        _chunks(_cand(_text("b"))),
        _chunks(_cand({"hologram": {}})),
        _chunks(_cand({"thought": True})),
        _chunks(_cand(_text("c"))),
        _END,
    ],
    "an error mid-stream, then more chunks": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b", thought=True))),
        {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}},
        _chunks(_cand(_text("c"))),
        _chunks(_cand(_text("d", thought=True))),
        _chunks(_cand(_CALL)),
    ],
    "a malformed chunk mid-stream": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b", thought=True))),
        b'{"candidates": [',
        _chunks(_cand(_text("c"))),
    ],
    "wrong types where the fold reads": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b")), modelVersion=3),
    ],
    "wrong type of a text": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand({"text": 5})),
    ],
    "nested too deep": [
        _chunks(_cand(_text("a"))),
        b'{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": '
        + b'{"a": ' * 2000
        + b"1"
        + b"}" * 2000
        + b"}}]}}]}",
    ],
    "blank keep-alives and empty chunks": [
        _chunks(_cand(_text("a"))),
        b" ",
        {"candidates": []},
        _chunks(),
        _chunks(_cand()),
        {"candidates": [{"index": 0}]},
        _chunks(_cand(_text("b", thought=True))),
        _END,
    ],
    "text after the finish": [
        _chunks(_cand(_text("a"))),
        _END,
        _chunks(_cand(_text("b"))),
        _chunks(_cand(_CALL)),
    ],
    "citations go on the last text run the fold opened": [
        _chunks(_cand(_text("a"))),
        _chunks(_cand(_text("b", thought=True))),
        _chunks(_cand(_text("c"))),
        _chunks(_cand(_text("d", thought=True))),
        _chunks(
            _cand(
                _text(""),
                finishReason="STOP",
                citationMetadata={"citations": [{"startIndex": 0, "endIndex": 1, "uri": "https://e.x"}]},
            )
        ),
    ],
    "the first chunk switches runs": [
        _chunks(_cand(_text("a", thought=True), _text("b"), _CALL)),
        _chunks(_cand(_text("c", thought=True))),
        _END,
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [None, 0, 1])
def test_cases_fold_the_same(name: str, seed: int | None) -> None:
    data = sse(CASES[name])
    assert_same([data] if seed is None else cut(data, random.Random(seed)))


def test_bad_arguments_fail_at_their_frame_either_way() -> None:
    end = assert_same([sse(CASES["bad arguments after folded chunks"])])
    assert end[0] == "RemoteProtocolError"
    assert end[1] == 3
    assert "not a JSON object" in end[2]
    assert end[3].messages[0].content[1].text == "b"  # what came before is kept


# ---------------------------------------------------------------------- the fast path is taken


class Counting(ms.StreamAggregator):
    """Counts the events applied the normal way."""

    applied = 0

    def consume(self, events: list[Any]) -> None:
        self.applied += len(events)
        super().consume(events)


@pytest.mark.parametrize("names", ["camel", "snake"])
def test_run_switches_and_whole_calls_fold_without_events(names: str) -> None:
    chunks = [
        _chunks(
            _cand(_text(f"p{i}", thought=i % 4 == 0, **({"thoughtSignature": SIG} if i % 8 == 0 else {})))
        )
        if i % 5
        else _chunks(_cand({**_CALL, "thoughtSignature": SIG}))
        for i in range(1, 200)
    ]
    chunks = [_chunks(_cand(_text("a"))), *chunks]
    if names == "snake":
        chunks = [snake(c) for c in chunks]
    data = sse(chunks)
    agg = Counting("gemini")
    agg.feed(data)
    response = agg.finish()
    assert response == run([data], emit=True)[1]
    assert agg.applied <= 6  # the first chunk's start, message and part; the end's closing events
    assert len(response.messages[0].content) > 100


class Refusing(ms.StreamAggregator):
    """A target that never lets a delta or a part go straight in: every chunk goes the normal way."""

    def part_buffers(self, message: Any, part: Any) -> None:
        return None

    def open_part(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.mark.parametrize(
    "name", ["runs switching inside one chunk", "whole calls, signed, in runs and back to back"]
)
def test_a_refusing_target_gets_every_chunk_the_normal_way(name: str) -> None:
    data = sse(CASES[name])
    agg = Refusing("gemini")
    agg.feed(data)
    assert agg.finish() == run([data], emit=True)[1]


def test_open_part_leaves_what_the_events_leave() -> None:
    from maas_stream import events as ev
    from maas_stream._aggregate import Aggregator

    start: list[ev.Event] = [
        ev.ResponseStart(protocol="gemini"),
        ev.MessageStart(message=0, role="assistant"),
    ]
    text = ms.TextPart(text="")
    call = ms.ToolCallPart(id="c1", name="f", arguments="{}")
    direct, events = Aggregator("gemini"), Aggregator("gemini")
    for agg in (direct, events):
        agg.consume(
            [*start, ev.PartStart(message=0, part=0, value=text), ev.TextDelta(message=0, part=0, text="a")]
        )
    assert direct.open_part(0, 0, 1, call, done=True) is not None
    events.consume([ev.PartDone(message=0, part=0), ev.PartStart(message=0, part=1, value=call)])
    events.consume([ev.PartDone(message=0, part=1)])
    assert direct.snapshot() == events.snapshot()
    assert direct.open_part(0, None, 1, text) is None  # the part exists: nothing done
    assert direct.open_part(1, None, 0, text) is None  # no such message
    assert direct.open_part(0, None, 2, ms.ToolCallPart(id="", name="g", arguments="{}")) is None
    assert direct.snapshot() == events.snapshot()
    assert Aggregator("gemini", emit=True).open_part(0, None, 0, text) is None


# ---------------------------------------------------------------------- the event path's run deltas


def _events(data: bytes, pieces: list[bytes]) -> tuple[list[Any], Any]:
    """Every event the decoder gives (fed piece by piece), then its end (or the error)."""
    dec = get_protocol("gemini").decoder()
    seen: list[Any] = []
    try:
        for piece in pieces:
            seen += dec.feed(piece)
        seen += dec.finish()
    except ms.ProtocolError as exc:
        return seen, (type(exc).__name__, str(exc))
    return seen, None


def _all_streams() -> list[Any]:
    named = [pytest.param(p.read_bytes(), id=p.name) for p in recordings("gemini") + corpus("gemini")]
    named += [pytest.param(sse(CASES[name]), id=name) for name in sorted(CASES)]
    return named + [pytest.param(random_stream(seed), id=f"random-{seed}") for seed in range(40)]


@pytest.mark.parametrize("data", _all_streams())
def test_run_deltas_are_the_events_the_full_reading_gives(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``StreamDecoder._run_delta`` (a run's continuing chunk read lean) changes no event.

    The event path (a converter's, a bridge's) reads a chunk that only continues a text or
    thought run with the lean ``FoldChunk``; with that lane closed every chunk is read in full.
    Both give the same events and the same error, whole and in random pieces.
    """
    from maas_stream.protocols.gemini._decode import StreamDecoder

    for pieces in ([data], cut(data, random.Random(len(data)))):
        lean = _events(data, pieces)
        with monkeypatch.context() as patched:
            patched.setattr(StreamDecoder, "_run_delta", lambda self, payload: None)
            full = _events(data, pieces)
        assert lean == full


def test_run_deltas_are_taken_on_a_plain_text_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane is used: every chunk after a text run's first is read lean."""
    from maas_stream.protocols.gemini._decode import StreamDecoder

    taken = 0
    original = StreamDecoder._run_delta

    def counted(self: StreamDecoder, payload: bytes | str) -> list[Any] | None:
        nonlocal taken
        out = original(self, payload)
        taken += out is not None
        return out

    monkeypatch.setattr(StreamDecoder, "_run_delta", counted)
    chunks = [_chunks(_cand(_text(f"piece {n} "))) for n in range(20)]
    events = get_protocol("gemini").decoder().feed(sse(chunks))
    deltas = [e for e in events if isinstance(e, ms.events.TextDelta)]
    assert "".join(d.text for d in deltas) == "".join(f"piece {n} " for n in range(20))
    assert taken == 19
