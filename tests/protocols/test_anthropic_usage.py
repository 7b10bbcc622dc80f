"""Anthropic usage in DESIGN's one meaning, read from the wire and written back exactly.

DESIGN: ``input_tokens`` = every prompt token, cache reads and writes included (the cache
counts are subsets of it); ``output_tokens`` includes reasoning. Anthropic's wire
``input_tokens`` leaves the cache reads and writes out, and with ``iterations`` (compaction,
advisor calls) its top level counts the ``message`` iterations only, while every iteration is
billed (anthropic SDK, ``BetaUsage.iterations``: "A `compaction` entry's tokens are not
included in the top-level `usage` fields").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream.protocols import anthropic
from tests.conftest import corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

STREAMS = [*recordings("anthropic"), *corpus("anthropic")]
ITERATED = [p for p in STREAMS if b'"iterations"' in p.read_bytes()]


def _wire_usage(data: bytes) -> dict[str, Any]:
    """The message's usage as the wire tells it: message_start's, overwritten by each delta's."""
    usage: dict[str, Any] = {}
    for line in data.decode().splitlines():
        if not line.startswith("data:"):
            continue
        payload = json.loads(line[5:])
        if payload.get("type") == "message_start":
            usage = dict(payload["message"].get("usage") or {})
        elif payload.get("type") == "message_delta" and payload.get("usage"):
            usage.update(payload["usage"])
    return usage


def _prompt(step: dict[str, Any]) -> int:
    return int(
        step["input_tokens"]
        + (step.get("cache_read_input_tokens") or 0)
        + (step.get("cache_creation_input_tokens") or 0)
    )


def test_the_corpus_has_iterated_usage() -> None:
    assert {p.name for p in ITERATED} >= {"compaction_block.sse", "advisor_tool.sse"}


@pytest.mark.parametrize("path", params(ITERATED))
def test_every_billed_iteration_is_counted(path: Path) -> None:
    data = path.read_bytes()
    wire = _wire_usage(data)
    steps = wire["iterations"]
    usage = ms.aggregate(data).usage
    assert usage is not None
    assert usage.input_tokens == sum(_prompt(s) for s in steps)
    assert usage.output_tokens == sum(s["output_tokens"] for s in steps)
    assert usage.cache_read_tokens == sum(s.get("cache_read_input_tokens") or 0 for s in steps)
    assert usage.cache_write_tokens == sum(s.get("cache_creation_input_tokens") or 0 for s in steps)
    # The top level is the `message` iterations only: a compaction or an advisor call is more.
    messages = [s for s in steps if s["type"] == "message"]
    assert wire["input_tokens"] == sum(s["input_tokens"] for s in messages)
    assert wire["output_tokens"] == sum(s["output_tokens"] for s in messages)
    assert usage.output_tokens > wire["output_tokens"]
    # The raw object keeps the iterations for a same-protocol re-encode.
    assert usage.raw["iterations"] == steps


@pytest.mark.parametrize("path", params(STREAMS))
def test_input_counts_the_cache_reads_and_writes(path: Path) -> None:
    data = path.read_bytes()
    wire = _wire_usage(data)
    usage = ms.aggregate(data).usage
    if "input_tokens" not in wire or "iterations" in wire:
        return
    assert usage is not None
    assert usage.input_tokens == _prompt(wire)
    assert usage.cache_read_tokens == wire.get("cache_read_input_tokens")
    assert usage.cache_write_tokens == wire.get("cache_creation_input_tokens")
    assert usage.output_tokens == wire["output_tokens"]


@pytest.mark.parametrize("path", params(STREAMS))
def test_same_protocol_usage_is_unchanged(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data)
    again = ms.aggregate(ms.convert(data, to="anthropic", protocol="anthropic"))
    assert again.usage == resp.usage
    if resp.usage is not None:
        assert _wire_usage(ms.convert(data, to="anthropic", protocol="anthropic")) == resp.usage.raw
        body = anthropic.encode_response(resp)
        assert body["usage"] == resp.usage.raw
        assert anthropic.decode_response(body).usage == resp.usage


@pytest.mark.parametrize("path", params(STREAMS))
def test_chat_prompt_tokens_include_the_cached_ones(path: Path) -> None:
    data = path.read_bytes()
    usage = ms.aggregate(data).usage
    if usage is None or usage.input_tokens is None:
        return
    out = ms.convert(data, to="openai-chat", protocol="anthropic", fail_closed=False)
    (chunk,) = [
        json.loads(line[5:])
        for line in out.decode().splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]" and json.loads(line[5:]).get("usage")
    ]
    assert chunk["usage"]["prompt_tokens"] == usage.input_tokens
    assert chunk["usage"]["completion_tokens"] == usage.output_tokens
    if usage.cache_read_tokens is not None:
        assert chunk["usage"]["prompt_tokens_details"]["cached_tokens"] == usage.cache_read_tokens


@pytest.mark.parametrize(
    "usage",
    [
        ms.Usage(input_tokens=100, output_tokens=20, cache_read_tokens=60, cache_write_tokens=30),
        ms.Usage(input_tokens=100, output_tokens=20, cache_read_tokens=60),
        ms.Usage(input_tokens=7, output_tokens=3, reasoning_tokens=2),
    ],
)
def test_usage_from_another_protocol_is_written_without_the_cached_tokens(usage: ms.Usage) -> None:
    body = anthropic.encode_response(ms.Response(protocol="openai-chat", status="completed", usage=usage))
    wire = body["usage"]
    cached = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    assert wire["input_tokens"] == (usage.input_tokens or 0) - cached
    back = anthropic.decode_response(body).usage
    assert back is not None
    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    assert [getattr(back, f) for f in fields] == [getattr(usage, f) for f in fields]


def test_a_malformed_iterations_list_is_a_protocol_error() -> None:
    with pytest.raises(ms.RemoteProtocolError):
        anthropic.decode_response(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1, "iterations": [3]},
            }
        )
