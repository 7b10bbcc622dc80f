"""OpenAI Chat Completions properties: bad provider input is a RemoteProtocolError and nothing
else (never a TypeError or KeyError from inside the decoder), for streams and for bodies."""

from __future__ import annotations

import json
from typing import Any

import hypothesis
import hypothesis.strategies as st
import pytest

import maas_stream as ms
from maas_stream.protocols import openai_chat

PROTOCOL = "openai-chat"
SETTINGS = hypothesis.settings(max_examples=80, deadline=None)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
"""Any JSON value."""


def shaped(keys: list[str], value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with (some of) the protocol's own keys, each holding any JSON value or ``value``."""
    return st.dictionaries(st.sampled_from(keys), value | JSON, max_size=len(keys))


TOOL_CALL = shaped(
    ["index", "id", "type", "function", "custom"], shaped(["name", "arguments", "input"], JSON)
)
DETAIL = shaped(["type", "index", "text", "summary", "signature", "data", "id", "format"], JSON)
DELTA = shaped(
    [
        "role",
        "content",
        "refusal",
        "tool_calls",
        "function_call",
        "audio",
        "reasoning_content",
        "reasoning",
        "reasoning_details",
        "annotations",
    ],
    st.lists(TOOL_CALL, max_size=2)
    | st.lists(DETAIL, max_size=2)
    | shaped(["id", "data", "transcript", "expires_at", "name", "arguments"], JSON),
)
CHOICE = shaped(["index", "delta", "message", "finish_reason", "logprobs"], DELTA)
CHUNK = shaped(
    ["id", "object", "created", "model", "choices", "usage", "error", "prompt_filter_results"],
    st.lists(CHOICE, max_size=2),
)


def outcome(fn: Any, *args: Any, **kwargs: Any) -> ms.Response | ms.RemoteProtocolError:
    """The function's result, or the only exception bad provider input deserves."""
    try:
        result: ms.Response = fn(*args, **kwargs)
    except ms.RemoteProtocolError as exc:
        return exc
    return result


@SETTINGS
@hypothesis.given(st.lists(CHUNK, min_size=1, max_size=3))
def test_any_chunks_aggregate_or_raise_remote_protocol_error(chunks: list[dict[str, Any]]) -> None:
    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    result = outcome(ms.aggregate, data, protocol=PROTOCOL)
    if isinstance(result, ms.RemoteProtocolError):
        assert result.protocol == PROTOCOL
        assert result.frame is not None
    else:
        assert result.status in ("completed", "incomplete", "failed")


@SETTINGS
@hypothesis.given(
    shaped(["id", "choices", "usage", "error", "created", "model"], st.lists(CHOICE, max_size=2))
)
def test_any_body_decodes_or_raises_remote_protocol_error(body: dict[str, Any]) -> None:
    result = outcome(openai_chat.decode_response, body)
    assert result.protocol == PROTOCOL
    if isinstance(result, ms.Response) and len({m.choice_index for m in result.messages}) == len(
        result.messages
    ):
        # What decodes encodes again and decodes to the same content (choices sorted by index).
        again = openai_chat.decode_response(openai_chat.encode_response(result))
        want = sorted(result.messages, key=lambda m: m.choice_index or 0)
        assert [content(m) for m in again.messages] == [content(m) for m in want] or not want


def content(message: ms.Message) -> list[Any]:
    return [p for p in message.content if not isinstance(p, ms.TextPart | ms.RefusalPart) or p.text]


@SETTINGS
@hypothesis.given(st.binary(max_size=64))
def test_random_bytes_aggregate_or_raise_remote_protocol_error(noise: bytes) -> None:
    result = outcome(ms.aggregate, b"data: " + noise + b"\n\n", protocol=PROTOCOL)
    assert result.protocol == PROTOCOL


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param({"choices": [{"index": "0", "delta": {"content": "x"}}]}, id="index-a-string"),
        pytest.param({"choices": [{"delta": {"tool_calls": [{"type": 1}]}}]}, id="type-a-number"),
        pytest.param({"choices": [{"delta": {"tool_calls": {"index": 0}}}]}, id="tool-calls-an-object"),
        pytest.param({"choices": [{"delta": {"reasoning_details": [{"index": "a"}]}}]}, id="detail-index"),
        pytest.param({"choices": [{"delta": "text"}]}, id="delta-a-string"),
        pytest.param({"choices": {"0": {}}}, id="choices-an-object"),
    ],
)
def test_wrong_json_types_in_a_chunk_are_remote_protocol_errors(chunk: dict[str, Any]) -> None:
    with pytest.raises(ms.RemoteProtocolError, match="invalid openai-chat frame") as info:
        ms.aggregate(b"data: " + json.dumps(chunk).encode() + b"\n\n", protocol=PROTOCOL)
    assert info.value.frame == 1
