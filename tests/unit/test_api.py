"""The public surface: exported names, registry and detection."""

from __future__ import annotations

import pytest

import maas_stream as ms
from maas_stream import events


def test_all_is_a_sorted_tuple_of_existing_names() -> None:
    assert isinstance(ms.__all__, tuple)
    assert list(ms.__all__) == sorted(ms.__all__)
    for name in ms.__all__:
        assert hasattr(ms, name), name


def test_every_event_type_is_in_the_union() -> None:
    for name in events.__all__:
        assert hasattr(events, name)
    assert len(events.Event.__args__) == len(events.__all__) - 2  # minus Event and Key


def test_registry_lookup_and_errors() -> None:
    assert "openai-chat" in ms.protocol_names()
    spec = ms.get_protocol("openai-chat")
    assert spec.framing == "sse"
    with pytest.raises(ms.LocalProtocolError, match="unknown protocol 'nope'"):
        ms.get_protocol("nope")


def test_detection_needs_a_whole_frame_then_decides() -> None:
    assert ms.detect_protocol(b'data: {"object":"chat.comp') is None
    assert ms.detect_protocol(b'data: {"object":"chat.completion.chunk","choices":[]}\n\n') == "openai-chat"
    with pytest.raises(ms.ProtocolDetectionError):
        ms.detect_protocol(b"data: 42\n\n")
    with pytest.raises(ms.ProtocolDetectionError):
        ms.detect_protocol(b"", final=True)


def test_empty_input_with_a_protocol_is_an_incomplete_response() -> None:
    response = ms.aggregate(b"", protocol="openai-chat")
    assert (response.status, response.messages) == ("incomplete", [])


def test_truncated_last_frame_is_reported_as_a_warning() -> None:
    data = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    response = ms.aggregate(data + b"data: [DONE]")
    assert response.status == "incomplete"
    assert response.warnings == ["the stream ended inside a frame; that partial frame was dropped"]


def test_continuation_keys_are_found_nested_and_ignored_when_empty() -> None:
    from maas_stream._convert import continuation_key

    assert continuation_key({"type": "x", "item": {"content": [{"signature": "abc"}]}}) == "signature"
    assert continuation_key({"type": "future_call", "call_id": "c1"}) == "call_id"
    assert continuation_key({"type": "x", "signature": ""}) is None
    assert continuation_key({"type": "x", "id": "plain ids are not continuation state"}) is None


@pytest.mark.parametrize(
    ("body", "protocol"),
    [
        pytest.param({"messages": [{"role": "user", "content": "hi"}]}, "openai-chat", id="plain-chat"),
        pytest.param(
            {"messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]},
            "openai-chat",
            id="chat-tool",
        ),
        pytest.param(
            {"system": "s", "messages": [{"role": "user", "content": "hi"}]}, "anthropic", id="anthropic"
        ),
        pytest.param(
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}
                ]
            },
            "anthropic",
            id="anthropic-result",
        ),
        pytest.param(
            {"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]},
            "openai-responses",
            id="responses",
        ),
        pytest.param({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "gemini", id="gemini"),
        pytest.param(
            {"input": [{"type": "user_input", "content": "hi"}]}, "google-interactions", id="interactions"
        ),
    ],
)
def test_body_detection(body: object, protocol: str) -> None:
    assert ms.detect_body_protocol(body) == protocol


def test_ambiguous_or_unknown_bodies_name_the_fix() -> None:
    with pytest.raises(ms.ProtocolDetectionError, match="--from"):
        ms.detect_body_protocol({"prompt": "hi"})
