"""The per-chunk fast paths of a converter fed one event per chunk: taken, and equal to the general ones."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

import maas_stream as ms
from maas_stream.protocols.openai_responses import StreamDecoder as OpenAIResponsesStreamDecoder
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    import pytest


def frames(data: bytes) -> list[bytes]:
    return [f + b"\n\n" for f in data.split(b"\n\n") if f.strip()]


def test_a_drop_is_logged_once_at_the_chunk_it_happened(caplog: pytest.LogCaptureFixture) -> None:
    data = (RECORDINGS / "anthropic" / "thinking_parallel_tools.sse").read_bytes()
    conv = ms.StreamConverter("openai-chat")
    grew = 0
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        for frame in frames(data):
            before = len(conv.lossy)
            conv.feed(frame)
            records = [r for r in caplog.records if r.name == "maas_stream"]
            assert len(records) == len(conv.lossy)  # each new record logged when it happened
            grew += len(conv.lossy) > before
        conv.finish()
    assert grew >= 1  # drops happened mid-stream (the guarded per-chunk check saw them)
    logged = [r.getMessage() for r in caplog.records if r.name == "maas_stream"]
    assert len(logged) == len(conv.lossy)
    for what in map(str, conv.lossy):
        assert sum(what in line for line in logged) == 1


def test_one_frame_per_chunk_decodes_as_the_whole_stream_with_findings_in_place() -> None:
    data = (RECORDINGS / "openai-responses" / "reasoning_text_parallel_calls.sse").read_bytes()
    parts = frames(data)
    # A sequence gap: the decoder reports it (a StreamWarning) after the frame that shows it.
    gap = parts[:3] + parts[4:]
    whole = OpenAIResponsesStreamDecoder()
    expected = whole.feed(b"".join(gap)) + whole.finish()
    one = OpenAIResponsesStreamDecoder()
    got = [e for frame in gap for e in one.feed(frame)] + one.finish()
    assert msgspec.json.encode(got) == msgspec.json.encode(expected)
    assert any(type(e) is ms.events.StreamWarning for e in got)
    assert one.frames == whole.frames == len(gap)


def test_asking_for_drops_per_chunk_makes_no_drop_log() -> None:
    """An encoder that makes its drop log on first use (Responses) has none after chunks that dropped nothing.

    The converter asks after every chunk whether something new was dropped; asking must not
    make the log (about 130 bytes per idle stream, against the 2 KiB budget).
    """
    data = (RECORDINGS / "openai-chat" / "readme_text_then_parallel_tools.sse").read_bytes()
    conv = ms.StreamConverter("openai-responses", protocol="openai-chat")
    for frame in frames(data)[:3]:
        conv.feed(frame)
    encoder: Any = conv._encoder
    assert encoder.dropped() == 0
    assert encoder._rare is None
