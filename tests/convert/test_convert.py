"""Streaming conversion behaviour: latency, fail-closed unknown types, lossy reports and logs,
unknown-type counters, id and finish mapping across protocols."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream import events as ev
from tests.conftest import RECORDINGS, corpus
from tests.convert.test_matrix import PROTOCOLS, choice0

if TYPE_CHECKING:
    from collections.abc import Iterator

# A recording per source protocol whose first text delta comes before more content.
TEXT_FIRST = {
    "openai-chat": "readme_text_then_parallel_tools.sse",
    "anthropic": "thinking_parallel_tools.sse",
    "openai-responses": "reasoning_text_parallel_calls.sse",
    "gemini": "thoughts_text_parallel_calls.sse",
}
STATEFUL = RECORDINGS / "anthropic" / "unknown_stateful_block.sse"


def frames(data: bytes) -> list[bytes]:
    """The SSE events of a stream, each with its blank-line terminator."""
    return [f + b"\n\n" for f in data.replace(b"\r\n", b"\n").split(b"\n\n") if f.strip()]


def first_text(data: bytes, protocol: str) -> tuple[int, str]:
    """Index of the frame carrying the first non-empty text delta, and that delta's text."""
    agg = ms.StreamAggregator(protocol, emit=True)
    for i, frame in enumerate(frames(data)):
        for event in agg.feed(frame):
            if isinstance(event, ev.TextDelta) and event.text:
                return i, event.text
    raise AssertionError("no text delta")


def text_of(data: bytes, protocol: str) -> str:
    agg = ms.StreamAggregator(protocol)
    agg.feed(data)
    return "".join(p.text for p in choice0(agg.snapshot()) if isinstance(p, ms.TextPart))


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", sorted(TEXT_FIRST))
def test_first_text_is_out_before_the_source_sends_more(source: str, target: str) -> None:
    data = (RECORDINGS / source / TEXT_FIRST[source]).read_bytes()
    at, text = first_text(data, source)
    conv = ms.StreamConverter(target, protocol=source)
    got: list[bytes] = []
    checked: list[bool] = []

    def slow_source() -> Iterator[bytes]:
        all_frames = frames(data)
        yield from all_frames[: at + 1]
        # The source blocks here; the consumer must already hold the converted text.
        assert text in text_of(b"".join(got), target)
        checked.append(True)
        yield from all_frames[at + 1 :]

    for chunk in slow_source():
        got.append(conv.feed(chunk))
    got.append(conv.finish())
    assert checked == [True]
    assert text_of(b"".join(got), target) == text_of(data, source)


# ---------------------------------------------------------------------- fail closed


@pytest.mark.parametrize("target", [p for p in PROTOCOLS if p != "anthropic"])
def test_unknown_type_with_a_signature_fails_closed(target: str) -> None:
    data = STATEFUL.read_bytes()
    with pytest.raises(ms.ConversionError, match=r"'signature_delta' carries 'signature'") as info:
        ms.convert(data, to=target)
    assert info.value.protocol == "anthropic"
    assert info.value.event_type == "signature_delta"
    # Asked to, it drops the unknown block and says so; the client call still goes across.
    conv = ms.StreamConverter(target, fail_closed=False)
    out = conv.feed(data) + conv.finish()
    assert any("signature_delta" in line for line in map(str, conv.lossy))
    calls = [p for p in choice0(ms.aggregate(out)) if isinstance(p, ms.ToolCallPart)]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("toolu_maas_U1", "get_weather", {"city": "Oslo"})
    ]


def test_unknown_type_with_a_signature_passes_through_to_its_own_protocol() -> None:
    data = STATEFUL.read_bytes()
    conv = ms.StreamConverter("anthropic")
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    assert b'"signature":"EqQBCkYIBRgCKkDreamSig=="' in out
    assert ms.aggregate(out) == ms.aggregate(data)


@pytest.mark.parametrize("target", [p for p in PROTOCOLS if p != "gemini"])
def test_gemini_signature_on_a_code_part_is_dropped_and_reported_not_failed(target: str) -> None:
    data = (RECORDINGS / "gemini" / "code_execution.sse").read_bytes()
    assert ms.aggregate(data).unknown.get("gemini.thought_signature")
    conv = ms.StreamConverter(target)
    out = conv.feed(data) + conv.finish()
    assert any("gemini.thought_signature" in line or "unknown part" in line for line in map(str, conv.lossy))
    assert b"thoughtSignature" not in out


def test_lossy_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    data = (RECORDINGS / "anthropic" / "thinking_parallel_tools.sse").read_bytes()
    conv = ms.StreamConverter("openai-chat")
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        conv.feed(data)
        conv.finish()
    assert conv.lossy
    logged = [r.getMessage() for r in caplog.records if r.name == "maas_stream"]
    for what in map(str, conv.lossy):
        assert any(what in line and "anthropic -> openai-chat" in line for line in logged)


def test_unknown_counts_by_protocol_model_and_type() -> None:
    data = (RECORDINGS / "anthropic" / "unknown_types.sse").read_bytes()
    agg = ms.StreamAggregator()
    for i in range(0, len(data), 97):
        agg.feed(data[i : i + 97])
    agg.finish()
    counts = agg.aggregator.unknown_counts
    # Independent count: the event and block/delta types our own generator wrote that no
    # Anthropic SDK type knows.
    expected = {
        ("anthropic", "claude-opus-4-8", t): 1 for t in ("message_metadata", "hologram", "hologram_delta")
    }
    expected[("anthropic", "claude-opus-4-8", "sparkle_delta")] = 1
    assert counts == expected


def test_unknown_counts_read_through_the_converter_source() -> None:
    data = (RECORDINGS / "openai-responses" / "custom_tool_and_unknown_types.sse").read_bytes()
    conv = ms.StreamConverter("openai-responses")
    conv.feed(data)
    conv.finish()
    assert conv.response is not None
    assert set(conv.response.unknown) == {"response.future_feature.delta", "future_item"}


# ---------------------------------------------------------------------- ids and finish


def _calls(resp: ms.Response) -> list[tuple[str, str]]:
    return [(p.id, p.name) for p in choice0(resp) if isinstance(p, ms.ToolCallPart) and p.kind == "function"]


@pytest.mark.parametrize("target", PROTOCOLS)
def test_synthesized_gemini_ids_are_stable_across_protocols(target: str) -> None:
    data = (RECORDINGS / "gemini" / "parallel_same_name_no_ids.sse").read_bytes()
    source = ms.aggregate(data)
    ids = [i for i, _ in _calls(source)]
    assert len(ids) == len(set(ids)) >= 2
    assert all(i.startswith("maas_gc_") for i in ids)
    there = ms.convert(data, to=target)
    assert _calls(ms.aggregate(there)) == _calls(source)
    assert _calls(ms.aggregate(ms.convert(there, to="gemini"))) == _calls(source)


FINISH_CASES: list[Any] = [
    ("openai-chat", "readme_text_then_parallel_tools.sse", "tool_calls"),
    ("anthropic", "max_tokens_cut_tool.sse", "length"),
    ("gemini", "safety_finish.sse", "content_filter"),
    ("openai-responses", "refusal_annotation_incomplete.sse", "length"),
]


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize(("source", "name", "finish"), FINISH_CASES)
def test_finish_reason_and_usage_cross(source: str, name: str, finish: str, target: str) -> None:
    data = (RECORDINGS / source / name).read_bytes()
    original = ms.aggregate(data)
    assert original.finish_reason == finish
    again = ms.aggregate(ms.convert(data, to=target))
    if (target, finish) == ("anthropic", "content_filter"):
        # Anthropic has no content filter stop reason: `refusal` (a completed turn) is its word.
        assert again.finish_reason == "refusal"
    else:
        assert again.finish_reason == finish
        assert again.status == original.status
    assert original.usage is not None
    assert again.usage is not None
    assert again.usage.output_tokens == original.usage.output_tokens


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", PROTOCOLS)
def test_errors_cross_as_errors(source: str, target: str) -> None:
    failing = list(corpus(source) + sorted((RECORDINGS / source).glob("*error*.sse")))
    assert failing
    data = failing[-1].read_bytes()
    original = ms.aggregate(data)
    assert original.status == "failed"
    assert original.error is not None
    again = ms.aggregate(ms.convert(data, to=target))
    assert again.status == "failed"
    assert again.error is not None
    assert again.error.message == original.error.message
