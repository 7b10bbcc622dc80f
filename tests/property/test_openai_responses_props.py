"""OpenAI Responses properties: resumption and duplicate replay are idempotent, any chunking gives
the same result, decode(encode(x)) == x, random bytes raise only ProtocolError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maas_stream as ms
from tests.conftest import corpus, recordings

PROTO = "openai-responses"
STREAMS = [p for p in recordings(PROTO) + corpus(PROTO) if p.stat().st_size < 120_000]
CASES = [pytest.param(p, id=p.name) for p in STREAMS]
# Resumption relies on sequence_number; one 2025 capture predates it (no number, no dedupe).
NUMBERED = [pytest.param(p, id=p.name) for p in STREAMS if b'"sequence_number"' in p.read_bytes()]


def blocks(data: bytes) -> list[bytes]:
    """The stream's SSE events, each with its terminating blank line."""
    return [b + b"\n\n" for b in data.split(b"\n\n") if b.strip()]


def result(data: bytes | list[bytes]) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(ms.aggregate(data, protocol=PROTO))
    return out


@pytest.mark.parametrize("path", NUMBERED)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_resumed_stream_aggregates_like_the_original(path: Path, data: st.DataObject) -> None:
    raw = path.read_bytes()
    events = blocks(raw)
    drop = data.draw(st.integers(1, len(events)), label="drop after")
    resume = data.draw(st.integers(0, drop), label="resume from")
    # The connection dropped after `drop` events; the client re-attached with an earlier
    # starting_after, so the server replays the tail from `resume` on.
    resumed = b"".join(events[:drop] + events[resume:])
    assert result(resumed) == result(raw)


@pytest.mark.parametrize("path", NUMBERED)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_duplicated_block_is_ignored(path: Path, data: st.DataObject) -> None:
    raw = path.read_bytes()
    events = blocks(raw)
    end = data.draw(st.integers(1, len(events)), label="block end")
    start = data.draw(st.integers(0, end - 1), label="block start")
    at = data.draw(st.integers(end, len(events)), label="inserted at")
    doubled = b"".join(events[:at] + events[start:end] + events[at:])
    assert result(doubled) == result(raw)


@pytest.mark.parametrize("path", CASES)
@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(0, 10**9), max_size=40))
def test_any_chunking_gives_the_same_result(path: Path, cuts: list[int]) -> None:
    raw = path.read_bytes()
    points = sorted({c % (len(raw) + 1) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert result(chunks) == result(raw)


def test_one_byte_chunks_and_crlf() -> None:
    raw = (
        Path(__file__).parents[2] / "recordings" / PROTO / "reasoning_text_parallel_calls.sse"
    ).read_bytes()
    expected = result(raw)
    assert result([raw[i : i + 1] for i in range(len(raw))]) == expected
    crlf = raw.replace(b"\n", b"\r\n")
    assert result([crlf[i : i + 1] for i in range(len(crlf))]) == expected


@pytest.mark.parametrize("path", CASES)
def test_decode_encode_decode(path: Path) -> None:
    raw = path.read_bytes()
    once = ms.convert(raw, to=PROTO, protocol=PROTO)
    twice = ms.convert(once, to=PROTO, protocol=PROTO)
    assert once == twice
    assert result(once) == result(raw)


@settings(max_examples=50, deadline=None)
@given(noise=st.binary(max_size=300), prefix=st.booleans())
def test_random_bytes_raise_only_protocol_errors(noise: bytes, prefix: bool) -> None:
    head = b'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"r"}}\n\n'
    data = (head if prefix else b"") + noise
    try:
        resp = ms.aggregate(data, protocol=PROTO)
    except ms.ProtocolError:
        return
    assert resp.status in ("incomplete", "failed", "completed", "in_progress")


@settings(max_examples=50, deadline=None)
@given(
    payload=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["type", "item", "delta", "output_index", "part", "response", "sequence_number", "error"]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=10,
    )
)
def test_odd_json_raises_only_protocol_errors(payload: Any) -> None:
    data = b"event: x\ndata: " + msgspec.json.encode(payload) + b"\n\n"
    try:
        ms.aggregate(data, protocol=PROTO)
    except ms.ProtocolError:
        pass
