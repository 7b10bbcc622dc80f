"""OpenAI Responses: honest errors. Provider input of the wrong JSON type raises
``RemoteProtocolError`` (or is read as empty / unknown), never ``TypeError`` / ``KeyError``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream.protocols.openai_responses import decode_response
from tests.conftest import status_both_ways

PROTO = "openai-responses"
CREATED = {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "model": "m"}}


def sse(*payloads: Any) -> bytes:
    return b"".join(b"event: x\ndata: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param({"type": ["response.output_text.delta"]}, id="type-list"),
        pytest.param(
            {"type": "response.output_text.delta", "output_index": "1", "delta": "a"}, id="output-index-str"
        ),
        pytest.param(
            {"type": "response.output_text.delta", "content_index": 1.5, "delta": "a"},
            id="content-index-float",
        ),
        pytest.param(
            {"type": "response.reasoning_summary_text.delta", "summary_index": -1, "delta": "a"},
            id="summary-negative",
        ),
        pytest.param(
            {"type": "response.reasoning_summary_part.added", "summary_index": "0"}, id="summary-str"
        ),
        pytest.param({"type": "response.output_text.delta", "sequence_number": "3"}, id="sequence-str"),
        pytest.param({"type": "response.output_text.delta", "logprobs": {"a": 1}}, id="logprobs-object"),
        pytest.param({"type": "response.shell_call_command.added", "command": 5}, id="command-int"),
        pytest.param([1, 2], id="array"),
        pytest.param("text", id="string"),
    ],
)
def test_wrong_json_types_raise_remote_protocol_error(frame: Any) -> None:
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(sse(CREATED, frame), protocol=PROTO)
    assert info.value.frame == 2


ITEM_ODDITIES = [
    {"type": ["function_call"], "role": "assistant"},
    {"type": "reasoning", "summary": 5, "content": [{"text": 5}, 3]},
    {"type": "reasoning", "summary": "abc", "content": "x", "encrypted_content": 7},
    {
        "type": "message",
        "role": ["assistant"],
        "content": [{"type": "output_text", "text": 1, "annotations": 5, "logprobs": 5}],
    },
    {"type": "message", "content": [{"type": ["output_text"]}, None, 3]},
    {"type": "function_call", "call_id": 5, "name": ["f"], "arguments": {"a": 1}, "status": ["done"]},
    {"type": "shell_call", "action": {"commands": "ls"}},
    {"type": "apply_patch_call", "operation": "diff"},
    {"type": "mcp_call", "output": {"x": 1}, "error": [1]},
    {"type": "function_call_output", "output": [{"type": 5}], "call_id": []},
    {"type": "image_generation_call", "result": 5, "output_format": []},
    {"type": None},
    [],
    "item",
]


@pytest.mark.parametrize("item", ITEM_ODDITIES)
def test_odd_items_are_read_as_empty_or_unknown(item: Any) -> None:
    added = {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item}
    done = {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item}
    terminal = {
        "type": "response.completed",
        "sequence_number": 3,
        "response": {"status": "completed", "output": [item]},
    }
    resp = ms.aggregate(sse(CREATED, added, done, terminal), protocol=PROTO)
    assert resp.status == "completed"
    body = decode_response({"status": "completed", "output": [item]})
    assert len(body.messages) == 1
    ms.encode_response(resp, PROTO)  # and it goes back out without an internal error


@pytest.mark.parametrize(
    "response",
    [
        {"status": ["x"], "output": 5, "usage": {"input_tokens": "5", "input_tokens_details": [1]}},
        {"status": "incomplete", "incomplete_details": "x"},
        {"status": "incomplete", "incomplete_details": {"reason": ["x"]}},
        {"status": "failed", "error": "boom"},
        {"status": "failed", "error": {"code": ["x"], "message": 5}},
        "not an object",
    ],
)
def test_odd_terminal_responses_are_read(response: Any) -> None:
    resp = ms.aggregate(sse(CREATED, {"type": "response.completed", "response": response}), protocol=PROTO)
    assert resp.status in ("completed", "incomplete", "failed")
    body = ms.encode_response(resp, PROTO)
    assert body["status"] == resp.status


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
EVENT_TYPES = [
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.shell_call_command.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_part.added",
    "response.reasoning_text.delta",
    "response.refusal.delta",
    "response.output_text.annotation.added",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_item.added",
    "response.output_item.done",
    "response.image_generation_call.partial_image",
    "response.audio.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.done",
    "error",
]
ITEM_TYPES = [
    "message",
    "function_call",
    "custom_tool_call",
    "reasoning",
    "compaction",
    "mcp_call",
    "shell_call",
    "web_search_call",
    "function_call_output",
    "x",
]
ITEM_KEYS = [
    "id",
    "call_id",
    "name",
    "arguments",
    "input",
    "status",
    "summary",
    "content",
    "role",
    "phase",
    "action",
    "output",
    "error",
    "result",
    "operation",
    "encrypted_content",
]


@st.composite
def items(draw: st.DrawFn) -> Any:
    item = draw(st.dictionaries(st.sampled_from(ITEM_KEYS), JSON, max_size=5))
    item["type"] = draw(st.sampled_from(ITEM_TYPES) | JSON)
    return item


@st.composite
def frames(draw: st.DrawFn) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": draw(st.sampled_from(EVENT_TYPES))}
    for key in (
        "output_index",
        "content_index",
        "item_id",
        "delta",
        "text",
        "annotation",
        "part",
        "error",
        "code",
        "message",
    ):
        if draw(st.booleans()):
            frame[key] = draw(JSON)
    if draw(st.booleans()):
        # The aggregator keeps summaries in a list up to their index (reported): small values here.
        frame["summary_index"] = draw(st.integers(-2, 20) | st.text(max_size=2))
    if draw(st.booleans()):
        frame["item"] = draw(items() | JSON)
    if draw(st.booleans()):
        output = draw(st.lists(items(), max_size=3) | JSON)
        frame["response"] = draw(
            st.dictionaries(
                st.sampled_from(["status", "error", "usage", "incomplete_details", "id"]), JSON, max_size=3
            )
        )
        frame["response"]["output"] = output
    return frame


@settings(max_examples=300, deadline=None)
@given(payloads=st.lists(frames(), min_size=1, max_size=4))
def test_fuzzed_frames_raise_only_remote_protocol_errors(payloads: list[dict[str, Any]]) -> None:
    data = sse(CREATED, *payloads)
    try:
        resp = ms.aggregate(data, protocol=PROTO)
    except ms.RemoteProtocolError:
        return
    assert resp.status in ("in_progress", "completed", "incomplete", "failed")
    ms.encode_response(resp, PROTO)
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    conv.feed(data)
    conv.finish()


@settings(max_examples=200, deadline=None)
@given(
    body=st.dictionaries(
        st.sampled_from(["status", "error", "usage", "incomplete_details", "id", "model"]), JSON, max_size=4
    ),
    output=st.lists(items(), max_size=3),
)
def test_fuzzed_bodies_decode(body: dict[str, Any], output: list[Any]) -> None:
    resp = decode_response({**body, "output": output})
    assert len(resp.messages) == len(output)
    assert resp.status in ("in_progress", "completed", "incomplete", "failed")


@pytest.mark.parametrize(
    "delta",
    [{}, {"delta": ""}, {"delta": "", "item_id": "i"}, {"delta": 5}],
    ids=["missing", "empty", "empty-with-item", "not-text"],
)
def test_an_empty_delta_after_the_end_is_the_same_error_in_both_paths(delta: dict[str, Any]) -> None:
    # The direct fold skipped an empty delta before asking whether the response had ended.
    late = {"type": "response.output_text.delta", **delta}
    both = status_both_ways(sse(CREATED, {"type": "response.completed", "sequence_number": 1}, late), PROTO)
    assert both[0] == both[1]
    assert both[0].startswith("error: ")
    assert "after the provider ended the response" in both[0]


def test_an_empty_delta_while_streaming_changes_nothing_in_either_path() -> None:
    item = {"type": "message", "id": "m", "role": "assistant", "content": []}
    frames = [
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "a"},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": ""},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "b"},
        {"type": "response.completed", "response": {"id": "r", "model": "m", "status": "completed"}},
    ]
    with_empty = ms.aggregate(sse(*frames), protocol=PROTO)
    without = ms.aggregate(sse(*frames[:4], *frames[5:]), protocol=PROTO)
    assert with_empty == without
    assert with_empty.messages[0].content[0].text == "ab"  # type: ignore[union-attr]
