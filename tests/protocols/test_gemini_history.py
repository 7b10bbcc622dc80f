"""Gemini history codec (contents + systemInstruction ↔ canonical) and request validation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import maas_stream as ms
from maas_stream import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from maas_stream.protocols import gemini, openai_chat
from tests.conftest import recordings

SIG = "EpwICpkIAXLI2nxlU6gsWZaZ"
SIG2 = "CiIB0e2Kb6rT0Ypq"

BODY: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "You are a concise travel assistant."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "**Plan** two lookups", "thought": True},
                {"text": "Checking both."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIG},
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": {"temp_c": 18}}}},
                {"functionResponse": {"name": "get_weather", "response": {"output": {"temp_c": 9}}}},
            ],
        },
        {
            "role": "model",
            "parts": [{"text": "Paris 18°C, Oslo 9°C."}, {"text": "", "thoughtSignature": SIG2}],
        },
        {"role": "user", "parts": [{"text": "Thanks!"}]},
    ],
    "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "OBJECT"}}]}],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
}


def test_round_trip_is_exact() -> None:
    body = copy.deepcopy(BODY)
    messages = gemini.to_canonical(body)
    drops = ms.DropLog("gemini")
    back = gemini.from_canonical(messages, drops=drops, extras=gemini.request_extras(body))
    assert back == BODY
    assert drops.records == []
    assert {m.provider for m in messages if m.role == "assistant"} == {"gemini"}
    assert gemini.validate(back) == []


def test_canonical_shape_links_results_by_order_and_name() -> None:
    messages = gemini.to_canonical(BODY)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    model = messages[2].content
    assert not isinstance(model, str)
    calls = [p for p in model if isinstance(p, ToolCallPart)]
    assert [c.signature for c in calls] == [SIG, None]
    assert calls[0].id != calls[1].id
    assert isinstance(model[0], ReasoningPart)
    assert model[0].text == "**Plan** two lookups"
    results = [messages[3], messages[4]]
    assert [r.tool_call_id for r in results] == [calls[0].id, calls[1].id]
    first = results[0].content[0]
    assert isinstance(first, ToolResultPart)
    assert json.loads(first.content if isinstance(first.content, str) else "") == {"output": {"temp_c": 18}}
    assert messages[5].content == [TextPart(text="Paris 18°C, Oslo 9°C."), TextPart(text="", signature=SIG2)]


def test_results_link_by_id_and_by_name_out_of_order() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "c1", "name": "a", "args": {}}},
                    {"functionCall": {"name": "b", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "b", "response": {"r": 2}}},
                    {"functionResponse": {"id": "c1", "name": "a", "response": {"r": 1}}},
                ],
            },
        ]
    }
    messages = gemini.to_canonical(body)
    model = messages[1].content
    assert not isinstance(model, str)
    call_b = model[1]
    assert isinstance(call_b, ToolCallPart)
    assert [m.tool_call_id for m in messages[2:]] == [call_b.id, "c1"]


def test_chat_history_to_gemini_merges_parallel_results() -> None:
    chat = {
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": '{"temp_c": 18}'},
            {"role": "tool", "tool_call_id": "call_b", "content": "9 degrees"},
            {"role": "assistant", "content": "Paris 18, Oslo 9."},
        ]
    }
    drops = ms.DropLog("gemini")
    body = gemini.from_canonical(openai_chat.to_canonical(chat), drops=drops)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user", "model"]
    calls = body["contents"][1]["parts"]
    assert calls[0] == {
        "functionCall": {"id": "call_a", "name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": gemini.PLACEHOLDER_SIGNATURE,
    }
    assert calls[1] == {"functionCall": {"id": "call_b", "name": "get_weather", "args": {"city": "Oslo"}}}
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"id": "call_a", "name": "get_weather", "response": {"temp_c": 18}}},
        {"functionResponse": {"id": "call_b", "name": "get_weather", "response": {"output": "9 degrees"}}},
    ]
    assert gemini.validate(body) == []
    assert drops.records == []


def test_foreign_signatures_dropped_and_reported_real_ones_kept() -> None:
    foreign = Message(
        role="assistant",
        provider="anthropic",
        content=[
            ReasoningPart(text="thinking", signature="anthropic-sig"),
            ToolCallPart(id="toolu_1", name="f", arguments="{}", signature="anthropic-sig"),
        ],
    )
    google = Message(
        role="assistant",
        provider="gemini",
        content=[ToolCallPart(id="fc_1", name="f", arguments="{}", signature=SIG)],
    )
    drops = ms.DropLog("gemini", "anthropic")
    body = gemini.from_canonical([Message(role="user", content="hi"), foreign, google], drops=drops)
    assert body["contents"][1]["parts"] == [
        {
            "functionCall": {"id": "toolu_1", "name": "f", "args": {}},
            "thoughtSignature": gemini.PLACEHOLDER_SIGNATURE,
        }
    ]
    assert body["contents"][2]["parts"][0]["thoughtSignature"] == SIG
    kinds = {(r.kind, r.where) for r in drops.records}
    assert kinds == {("reasoning", ("messages[1]",)), ("signature", ("messages[1]",))}
    assert all("toolu_1" not in r.what and "anthropic-sig" not in r.what for r in drops.records)


def test_placeholder_can_be_turned_off() -> None:
    msg = Message(role="assistant", content=[ToolCallPart(id="x", name="f", arguments="{}")])
    body = gemini.from_canonical([msg], signature_placeholder=False)
    assert "thoughtSignature" not in body["contents"][0]["parts"][0]


def test_stream_aggregate_replays_signatures_where_they_were() -> None:
    path = next(p for p in recordings("gemini") if p.name == "thoughts_text_parallel_calls.sse")
    resp = ms.aggregate(path.read_bytes(), protocol="gemini")
    body = gemini.from_canonical(resp.messages)
    parts = body["contents"][0]["parts"]
    assert parts[0]["thought"] is True
    calls = [p for p in parts if "functionCall" in p]
    assert [c["functionCall"]["id"] for c in calls] == ["fc_p1", "fc_o2"]
    assert "thoughtSignature" in calls[0]
    assert "thoughtSignature" not in calls[1]


def test_signature_on_code_part_replayed_on_that_part() -> None:
    path = next(p for p in recordings("gemini") if p.name == "code_execution.sse")
    resp = ms.aggregate(path.read_bytes(), protocol="gemini")
    parts = gemini.from_canonical(resp.messages)["contents"][0]["parts"]
    assert "executableCode" in parts[0]
    assert "thoughtSignature" in parts[0]
    assert "codeExecutionResult" in parts[1]
    assert "thoughtSignature" not in parts[1]


def test_snake_case_body_accepted() -> None:
    body = {
        "system_instruction": {"parts": [{"text": "sys"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "x"}]},
            {
                "role": "model",
                "parts": [
                    {"function_call": {"name": "f", "args": {"snake_key": 1}}, "thought_signature": SIG}
                ],
            },
        ],
    }
    messages = gemini.to_canonical(body)
    call = messages[2].content[0]
    assert isinstance(call, ToolCallPart)
    assert (call.signature, json.loads(call.arguments)) == (SIG, {"snake_key": 1})


@pytest.mark.parametrize(
    ("contents", "needle"),
    [
        (
            [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "a", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "zz", "name": "a", "response": {}}}]},
            ],
            "contents[2]: functionResponse with id 'zz' answers no functionCall",
        ),
        (
            [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "a", "args": {}}}]},
                {"role": "user", "parts": [{"text": "never mind"}]},
            ],
            "contents[1]: functionCall 'c1' (a) has no functionResponse",
        ),
        ([{"role": "assistant", "parts": [{"text": "hi"}]}], "contents[0]: role 'assistant'"),
        (
            [{"role": "user", "parts": [{"functionCall": {"name": "a", "args": {}}}]}],
            "contents[0]: functionCall in a user content",
        ),
        ([{"role": "user", "parts": []}], "contents[0]: no parts"),
        (
            [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {}}}]},
            ],
            "contents[2]: functionResponse with name 'b' answers no functionCall",
        ),
    ],
)
def test_validate_names_content_and_id(contents: list[dict[str, Any]], needle: str) -> None:
    faults = gemini.validate({"contents": contents})
    assert any(needle in f for f in faults), faults


def test_validate_via_registry_and_bad_body() -> None:
    assert ms.validate(BODY, "gemini") == []
    assert gemini.validate({"nope": 1}) == ["the body has no 'contents' list"]
    with pytest.raises(ms.ValidationError):
        gemini.to_canonical("not a body")
