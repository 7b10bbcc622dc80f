"""OpenAI Responses properties: resumption and duplicate replay are idempotent, random bytes after
a valid start and odd JSON raise only ``RemoteProtocolError``. Chunking invariance and the
same-protocol round trip are covered for every protocol in ``test_chunking.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import invariants as inv
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "openai-responses"
STREAMS = [p for p in recordings(PROTO) + corpus(PROTO) if p.stat().st_size < 120_000]
CASES = [pytest.param(p, id=p.name) for p in STREAMS]
# Resumption relies on sequence_number; one 2025 capture predates it (no number, no dedupe).
NUMBERED = [pytest.param(p, id=p.name) for p in STREAMS if b'"sequence_number"' in p.read_bytes()]


def blocks(data: bytes) -> list[bytes]:
    """The stream's SSE events, each with its terminating blank line."""
    return [b + b"\n\n" for b in data.split(b"\n\n") if b.strip()]


def result(data: bytes) -> Any:
    return inv.canonical(data, PROTO)


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


@settings(max_examples=50, deadline=None)
@given(noise=st.binary(max_size=300), prefix=st.booleans())
def test_random_bytes_decode_or_raise_remote_protocol_error(noise: bytes, prefix: bool) -> None:
    head = b'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"r"}}\n\n'
    data = (head if prefix else b"") + noise
    inv.assert_decodes_or_remote_error(data, PROTO)


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
def test_odd_json_decodes_or_raises_remote_protocol_error(payload: Any) -> None:
    data = b"event: x\ndata: " + msgspec.json.encode(payload) + b"\n\n"
    inv.assert_decodes_or_remote_error(data, PROTO)
