"""One canonical usage meaning (docs/usage.md), checked against the official SDKs.

Canonical usage: ``input_tokens`` is every prompt token (cache reads and writes and Gemini's
tool-use prompt included), ``cache_read_tokens``/``cache_write_tokens`` are subsets of it,
``output_tokens`` includes the reasoning (``reasoning_tokens`` a subset), ``total_tokens`` is
input + output.

1. Every corpus stream converted to every protocol: the target SDK's reported counts, restated
   by the target's own documented arithmetic (``tests/oracles.py``, independent of maas-stream),
   equal the canonical counts of the source. Likewise the non-streaming bodies.
2. Each decode and encode mapping with hand-made numbers, including the issue's example
   (Anthropic 412 + cache read 1024 → 1436 input; Chat → Anthropic never counts cached twice).
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream._usage import google_split, known_sum, total_of, usage_of
from maas_stream.protocols.anthropic._blocks import usage_body as anthropic_out
from maas_stream.protocols.anthropic._blocks import usage_from as anthropic_in
from maas_stream.protocols.gemini._meta import usage_from_wire as gemini_in
from maas_stream.protocols.gemini._meta import usage_to_wire as gemini_out
from maas_stream.protocols.google_interactions._steps import usage_from as interactions_in
from maas_stream.protocols.google_interactions._steps import usage_wire as interactions_out
from maas_stream.protocols.google_live._parts import usage_from as live_in
from maas_stream.protocols.google_live._parts import usage_wire as live_out
from maas_stream.protocols.openai_chat._map import usage_from as chat_in
from maas_stream.protocols.openai_chat._map import usage_to_wire as chat_out
from maas_stream.protocols.openai_realtime._items import usage_from as realtime_in
from maas_stream.protocols.openai_realtime._items import usage_wire as realtime_out
from maas_stream.protocols.openai_responses._meta import usage_from as responses_in
from maas_stream.protocols.openai_responses._meta import usage_json as responses_out
from tests.conftest import CORPUS, corpus
from tests.oracles import BODY_USAGE, STREAM_USAGE, UsageSeen

if TYPE_CHECKING:
    from pathlib import Path

SOURCES = [p for name in ms.protocol_names() for p in corpus(name)]
GOOGLE = ("gemini", "google-interactions", "google-live")

KNOWN_GAPS: dict[str, str] = {
    **{
        f"anthropic/{name}->anthropic": "the anthropic SDK's (non-beta) stream accumulator keeps no"
        " usage `iterations`, so it reads the message iterations only; the body read with BetaUsage"
        " agrees"
        for name in ("advisor_tool.sse", "compaction_block.sse")
    },
    "openai-chat/compat_openrouter_error_in_chunk.sse->openai-chat": "the openai SDK raises on the"
    " in-band error chunk before it reads the usage chunk that follows",
    **{
        f"openai-responses/image_generation_partial_image.sse->{target}": "google-genai rejects the"
        " capture's truncated base64 image data (not a usage fault)"
        for target in ("gemini", "google-live")
    },
}
"""Converted-stream cases whose SDK reading differs today, with why (strict xfail)."""


def canonical(usage: ms.Usage | None) -> UsageSeen | None:
    """The canonical counts in the oracle's shape (``None``: the source reported no usage)."""
    if usage is None:
        return None
    return UsageSeen(
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        cached=usage.cache_read_tokens,
        cache_write=usage.cache_write_tokens,
        reasoning=usage.reasoning_tokens,
    )


HAS: dict[str, tuple[str, ...]] = {
    "openai-chat": ("input", "output", "total", "cached", "cache_write", "reasoning"),
    "openai-responses": ("input", "output", "total", "cached", "cache_write", "reasoning"),
    "anthropic": ("input", "output", "total", "cached", "cache_write", "reasoning"),
    "gemini": ("input", "output", "total", "cached", "reasoning"),
    "google-interactions": ("input", "output", "total", "cached", "reasoning"),
    "google-live": ("input", "output", "total", "cached", "reasoning"),
    "openai-realtime": ("input", "output", "total", "cached"),
}
"""The canonical counts each target has a field for."""


def differences(want: UsageSeen | None, got: UsageSeen | None, target: str, *, same: bool) -> dict[str, Any]:
    """Count name → (canonical, SDK) where they differ. An unknown count may be written as 0
    (SDKs require some counts); a known one must arrive unchanged."""
    if want is None:
        zero = got is None or all(not getattr(got, k) for k in HAS[target])
        return {} if zero else {"usage": (None, got)}
    if got is None:
        return {"usage": (want, None)}
    fields = HAS[target]
    if same and target == "google-live":
        # A Live source's own usageMetadata passes through unchanged, its totalTokenCount
        # (which leaves the thoughts out in real captures) included: docs/usage.md.
        fields = tuple(f for f in fields if f != "total")
    if target in GOOGLE and want.reasoning is not None and want.output is not None:
        # The Gemini family has no form for more reasoning than output: the thoughts are capped
        # at the output (docs/usage.md), the output and the total are kept.
        want = dataclasses.replace(want, reasoning=min(want.reasoning, want.output))
    out = {}
    for name in fields:
        a, b = getattr(want, name), getattr(got, name)
        if (a or 0) != (b or 0):
            out[name] = (a, b)
    return out


def _cases() -> list[object]:
    if not SOURCES:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"corpus not found at {CORPUS}"))]
    out: list[object] = []
    for path in SOURCES:
        for target in STREAM_USAGE:
            case = f"{path.parent.name}/{path.name}->{target}"
            reason = KNOWN_GAPS.get(case)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(path, target, id=case, marks=marks))
    return out


SESSIONS = ("google-live", "openai-realtime")


def _written_turn(data: bytes, protocol: str, target: str) -> ms.Usage | None:
    """The usage of the response ``ms.convert`` writes: a session converted to a one-response
    protocol is its FIRST response (docs/sessions.md; ``convert_session`` gives the rest), any
    other conversion the source's (last) response."""
    if protocol in SESSIONS and target not in SESSIONS:
        responses = ms.aggregate_session(data, protocol=protocol).responses
        return responses[0].usage if responses else None
    return ms.aggregate(data, protocol=protocol).usage


@pytest.mark.parametrize(("path", "target"), _cases())
def test_converted_stream_reports_the_canonical_usage(path: Path, target: str) -> None:
    source = path.parent.name
    data = path.read_bytes()
    want = canonical(_written_turn(data, source, target))
    converted = ms.convert(data, protocol=source, to=target, fail_closed=False)
    got = STREAM_USAGE[target](converted)
    assert not differences(want, got, target, same=source == target), (want, got)


def _body_cases() -> list[object]:
    if not SOURCES:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"corpus not found at {CORPUS}"))]
    return [
        pytest.param(
            path,
            target,
            id=f"{path.parent.name}/{path.name}->{target}",
        )
        for path in SOURCES
        if path.parent.name not in SESSIONS
        for target in BODY_USAGE
    ]


@pytest.mark.parametrize(("path", "target"), _body_cases())
def test_converted_body_reports_the_canonical_usage(path: Path, target: str) -> None:
    source = path.parent.name
    response = ms.aggregate(path.read_bytes(), protocol=source)
    body = json.loads(json.dumps(ms.encode_response(response, target)))
    got = BODY_USAGE[target](body)
    assert not differences(canonical(response.usage), got, target, same=source == target), got


def test_the_corpus_exercises_every_mapping() -> None:
    """The matrix above is only meaningful with cache reads, reasoning and tool-use prompts in it."""
    if not SOURCES:
        pytest.skip(f"corpus not found at {CORPUS}")
    usages = {p: ms.aggregate(p.read_bytes(), protocol=p.parent.name).usage for p in SOURCES}
    known = {p: u for p, u in usages.items() if u is not None}
    assert any(u.cache_read_tokens for u in known.values())
    assert any(u.reasoning_tokens for u in known.values())
    # Anthropic cache reads added to its input; Gemini tool-use prompts added to its prompt.
    assert any(p.parent.name == "anthropic" and u.cache_read_tokens for p, u in known.items())
    assert any(
        p.parent.name == "gemini"
        and isinstance(u.raw, dict)
        and (u.input_tokens or 0) > u.raw["promptTokenCount"]
        for p, u in known.items()
    )


# ------------------------------------------------------------------ hand-made numbers: decode


def test_anthropic_input_adds_cache_reads_and_writes() -> None:
    u = anthropic_in(
        {
            "input_tokens": 412,
            "cache_read_input_tokens": 1024,
            "cache_creation_input_tokens": 0,
            "output_tokens": 171,
        }
    )
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (1436, 1024, 0)
    assert (u.output_tokens, u.total_tokens) == (171, 1607)


def test_anthropic_cache_writes_count_as_input() -> None:
    u = anthropic_in({"input_tokens": 10, "cache_creation_input_tokens": 300, "output_tokens": 5})
    assert u is not None
    assert (u.input_tokens, u.cache_write_tokens, u.cache_read_tokens, u.total_tokens) == (
        310,
        300,
        None,
        315,
    )


def test_anthropic_thinking_tokens_are_a_subset_of_output() -> None:
    u = anthropic_in(
        {"input_tokens": 3, "output_tokens": 90, "output_tokens_details": {"thinking_tokens": 60}}
    )
    assert u is not None
    assert (u.output_tokens, u.reasoning_tokens, u.total_tokens) == (90, 60, 93)


def test_chat_prompt_already_includes_cached_and_completion_reasoning() -> None:
    u = chat_in(
        {
            "prompt_tokens": 1436,
            "completion_tokens": 171,
            "total_tokens": 1607,
            "prompt_tokens_details": {"cached_tokens": 1024},
            "completion_tokens_details": {"reasoning_tokens": 96},
        }
    )
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (1436, 1024, 171, 96)
    assert u.total_tokens == 1607


def test_responses_counts_are_canonical_as_they_come() -> None:
    u = responses_in(
        {
            "input_tokens": 88,
            "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 8},
            "output_tokens": 143,
            "output_tokens_details": {"reasoning_tokens": 96},
            "total_tokens": 231,
        }
    )
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (88, 64, 8)
    assert (u.output_tokens, u.reasoning_tokens, u.total_tokens) == (143, 96, 231)


def test_gemini_output_adds_thoughts_and_input_adds_tool_use_prompt() -> None:
    u = gemini_in(
        {
            "promptTokenCount": 52,
            "cachedContentTokenCount": 40,
            "toolUsePromptTokenCount": 7,
            "candidatesTokenCount": 31,
            "thoughtsTokenCount": 96,
            "totalTokenCount": 186,
        }
    )
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens) == (59, 40)
    assert (u.output_tokens, u.reasoning_tokens, u.total_tokens) == (127, 96, 186)


def test_live_counts_as_gemini_does_with_its_own_names() -> None:
    # A real Live capture's numbers: its totalTokenCount (1234) leaves the thoughts out.
    raw = {
        "promptTokenCount": 1197,
        "responseTokenCount": 37,
        "totalTokenCount": 1234,
        "thoughtsTokenCount": 28,
    }
    u = live_in(raw)
    assert u is not None
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens, u.total_tokens) == (1197, 65, 28, 1262)
    assert u.raw == raw
    vertex = live_in({"promptTokenCount": 5, "candidatesTokenCount": 2, "toolUsePromptTokenCount": 3})
    assert vertex is not None
    assert (vertex.input_tokens, vertex.output_tokens, vertex.total_tokens) == (8, 2, 10)


def test_interactions_output_adds_thoughts_and_input_adds_tool_use() -> None:
    u = interactions_in(
        {
            "total_input_tokens": 52,
            "total_tool_use_tokens": 9,
            "total_cached_tokens": 20,
            "total_output_tokens": 31,
            "total_thought_tokens": 96,
            "total_tokens": 188,
        }
    )
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (61, 20, 127, 96)
    assert u.total_tokens == 188


def test_realtime_input_already_includes_cached() -> None:
    u = realtime_in(
        {
            "input_tokens": 122,
            "output_tokens": 97,
            "total_tokens": 219,
            "input_token_details": {"cached_tokens": 64},
        }
    )
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.total_tokens) == (122, 64, 97, 219)


def test_unknown_counts_stay_unknown() -> None:
    u = anthropic_in({"output_tokens": 4})
    assert u is not None
    assert (u.input_tokens, u.cache_read_tokens, u.total_tokens) == (None, None, 4)
    g = gemini_in({"promptTokenCount": 52, "totalTokenCount": 52})
    assert g is not None
    assert (g.output_tokens, g.reasoning_tokens, g.total_tokens) == (None, None, 52)
    assert known_sum(None, None) is None
    assert usage_of(input_tokens=None, output_tokens=None, reported_total=9).total_tokens == 9


# ------------------------------------------------------------------ hand-made numbers: encode

ISSUE = ms.Usage(
    input_tokens=1436, output_tokens=171, total_tokens=1607, cache_read_tokens=1024, cache_write_tokens=0
)
"""The issue's Anthropic example in canonical form."""


def test_anthropic_to_chat_reports_every_prompt_token() -> None:
    body = chat_out(ISSUE, "anthropic")
    assert body["prompt_tokens"] == 1436
    assert body["prompt_tokens_details"]["cached_tokens"] == 1024
    assert body["total_tokens"] == 1607  # the issue saw 412 and 583


def test_chat_to_anthropic_never_counts_cached_twice() -> None:
    usage = chat_in(
        {"prompt_tokens": 1436, "completion_tokens": 171, "prompt_tokens_details": {"cached_tokens": 1024}}
    )
    assert usage is not None
    body = anthropic_out(usage, native=False)
    assert body["input_tokens"] == 412
    assert body["cache_read_input_tokens"] == 1024
    assert body["input_tokens"] + body["cache_read_input_tokens"] == 1436


def test_anthropic_encode_subtracts_reads_and_writes() -> None:
    u = ms.Usage(input_tokens=1000, output_tokens=10, cache_read_tokens=600, cache_write_tokens=300)
    body = anthropic_out(u, native=False)
    assert (body["input_tokens"], body["cache_read_input_tokens"], body["cache_creation_input_tokens"]) == (
        100,
        600,
        300,
    )


def test_responses_encode_keeps_the_counts() -> None:
    body = responses_out(ISSUE, same=False)
    assert body is not None
    assert (body["input_tokens"], body["input_tokens_details"]["cached_tokens"], body["total_tokens"]) == (
        1436,
        1024,
        1607,
    )


def test_gemini_encode_splits_thoughts_and_tool_use_back_out() -> None:
    u = ms.Usage(input_tokens=100, output_tokens=127, reasoning_tokens=96, cache_read_tokens=40)
    body = gemini_out(u, own=False)
    assert body == {
        "promptTokenCount": 100,
        "candidatesTokenCount": 31,
        "thoughtsTokenCount": 96,
        "cachedContentTokenCount": 40,
        "totalTokenCount": 227,
    }
    raw = {
        "promptTokenCount": 52,
        "toolUsePromptTokenCount": 7,
        "candidatesTokenCount": 31,
        "totalTokenCount": 90,
    }
    own = gemini_in(raw)
    assert own is not None
    assert gemini_out(own, own=True) == raw  # a Gemini source reads back the same


def test_reasoning_above_output_keeps_output_and_total() -> None:
    # An OpenAI-compatible server (corpus openai-chat/compat_openrouter_error_in_chunk.sse)
    # reported reasoning 11 of output 10: the Gemini family caps the thoughts at the output.
    u = usage_of(input_tokens=43, output_tokens=10, reasoning_tokens=11)
    counts = google_split(u)
    assert (counts.answer, counts.thoughts, counts.total) == (0, 10, 53)
    back = gemini_in(gemini_out(u, own=False))
    assert back is not None
    assert (back.input_tokens, back.output_tokens, back.total_tokens) == (43, 10, 53)


def test_interactions_encode_splits_back_out() -> None:
    u = ms.Usage(input_tokens=61, output_tokens=127, reasoning_tokens=96, cache_read_tokens=20)
    assert interactions_out(u, same=False) == {
        "total_input_tokens": 61,
        "total_output_tokens": 31,
        "total_thought_tokens": 96,
        "total_cached_tokens": 20,
        "total_tokens": 188,
    }
    raw = {"total_input_tokens": 52, "total_tool_use_tokens": 9, "total_output_tokens": 3, "total_tokens": 64}
    own = interactions_in(raw)
    assert own is not None
    assert interactions_out(own, same=True) == raw


def test_live_encode_never_copies_another_protocols_object() -> None:
    gemini_usage = gemini_in({"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 4})
    assert gemini_usage is not None
    assert live_out(gemini_usage, same=False) == {
        "promptTokenCount": 5,
        "responseTokenCount": 2,
        "thoughtsTokenCount": 4,
        "totalTokenCount": 11,
    }
    raw = {
        "promptTokenCount": 1197,
        "responseTokenCount": 37,
        "totalTokenCount": 1234,
        "thoughtsTokenCount": 28,
    }
    own = live_in(raw)
    assert own is not None
    assert live_out(own, same=True) == raw


def test_realtime_encode_never_copies_another_protocols_object() -> None:
    usage = anthropic_in({"input_tokens": 412, "cache_read_input_tokens": 1024, "output_tokens": 171})
    assert usage is not None
    assert realtime_out(usage, same=False) == {
        "total_tokens": 1607,
        "input_tokens": 1436,
        "output_tokens": 171,
        "input_token_details": {"cached_tokens": 1024},
    }


def test_encoders_write_input_plus_output_when_no_total_is_known() -> None:
    u = ms.Usage(input_tokens=5, output_tokens=7)
    assert total_of(u) == 12
    assert chat_out(u, None)["total_tokens"] == 12
    assert gemini_out(u, own=False)["totalTokenCount"] == 12
    assert total_of(ms.Usage()) is None
