"""History conversion between every pair of protocols, following the spec's Serialization Rules.

Each protocol has one realistic request body (written here by hand from PROTOCOLS.md): a
system / developer instruction, a user question, an assistant turn with reasoning (carrying
that protocol's replay token), text and two parallel function calls, both results, trailing user
text, and a final answer. Converted to every protocol, the body must pass the target's
``validate`` and keep, read back through the target's own ``to_canonical``: the instruction as a
system message, every user text, every call (name, parsed arguments, id where the target has
ids) answered by a tool-result primitive (never plain user text) with the same output, and the
reasoning replay token only when the target produced it (otherwise dropped and reported).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import maas_stream as ms

ARGS_A = {"city": "Paris"}
ARGS_B = {"city": "Oslo"}
SYSTEM = "Be brief."
ASK = "Weather in Paris and Oslo?"
THEN = "Thanks, and in Fahrenheit?"
RESULT_A = "18C sunny"
RESULT_B = "4C snow"
ANSWER = "64F and 39F."

BODIES: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "model": "gpt-4o",
        "messages": [
            {"role": "developer", "content": SYSTEM},
            {"role": "user", "content": ASK},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    {
                        "id": "call_A",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(ARGS_A)},
                    },
                    {
                        "id": "call_B",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(ARGS_B)},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_A", "content": RESULT_A},
            {"role": "tool", "tool_call_id": "call_B", "content": RESULT_B},
            {"role": "user", "content": THEN},
            {"role": "assistant", "content": ANSWER},
        ],
    },
    "anthropic": {
        "model": "claude-opus-4-8",
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": [
            {"role": "user", "content": ASK},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Two lookups.", "signature": "EqQBAnthropicSig=="},
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": ARGS_A},
                    {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": ARGS_B},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_A", "content": RESULT_A},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_B",
                        "content": [{"type": "text", "text": RESULT_B}],
                    },
                    {"type": "text", "text": THEN},
                ],
            },
            {"role": "assistant", "content": ANSWER},
        ],
    },
    "openai-responses": {
        "model": "gpt-5",
        "instructions": SYSTEM,
        "input": [
            {"role": "user", "content": ASK},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Two lookups."}],
                "encrypted_content": "gAAAAResponsesEnc==",
            },
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_A",
                "name": "get_weather",
                "arguments": json.dumps(ARGS_A),
            },
            {
                "type": "function_call",
                "id": "fc_2",
                "call_id": "call_B",
                "name": "get_weather",
                "arguments": json.dumps(ARGS_B),
            },
            {"type": "function_call_output", "call_id": "call_A", "output": RESULT_A},
            {"type": "function_call_output", "call_id": "call_B", "output": RESULT_B},
            {"role": "user", "content": THEN},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ANSWER}]},
        ],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [
            {"role": "user", "parts": [{"text": ASK}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Two lookups.", "thought": True},
                    {"text": "Checking both."},
                    {
                        "functionCall": {"id": "fc_A", "name": "get_weather", "args": ARGS_A},
                        "thoughtSignature": "R2VtaW5pU2ln",
                    },
                    {"functionCall": {"id": "fc_B", "name": "get_weather", "args": ARGS_B}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "fc_A",
                            "name": "get_weather",
                            "response": {"result": RESULT_A},
                        }
                    },
                    {
                        "functionResponse": {
                            "id": "fc_B",
                            "name": "get_weather",
                            "response": {"result": RESULT_B},
                        }
                    },
                    {"text": THEN},
                ],
            },
            {"role": "model", "parts": [{"text": ANSWER}]},
        ],
    },
}
TOKENS = {
    "anthropic": "EqQBAnthropicSig==",
    "openai-responses": "gAAAAResponsesEnc==",
    "gemini": "R2VtaW5pU2ln",
}
"""Each protocol's reasoning replay token in its body (Chat has none)."""
PROTOCOLS = sorted(BODIES)


def _texts(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    return "".join(p.text for p in parts if isinstance(p, ms.TextPart))


def _result_text(result: ms.ToolResultPart) -> str:
    content = result.content
    text = content if isinstance(content, str) else _texts(content)
    try:  # Gemini wraps a result in an object
        loaded = json.loads(text)
    except json.JSONDecodeError:
        return text
    return str(loaded.get("result", loaded.get("output", text))) if isinstance(loaded, dict) else text


def _all_parts(messages: list[ms.Message]) -> list[tuple[str, ms.Part]]:
    return [(m.role, p) for m in messages if isinstance(m.content, list) for p in m.content]


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", PROTOCOLS)
def test_history_converts_and_validates(source: str, target: str) -> None:
    body = BODIES[source]
    assert ms.validate(body, source) == []
    lossy: list[ms.Dropped] = []
    out = ms.convert_history(body, to=target, protocol=source, lossy=lossy)
    assert ms.validate(out, target) == [], json.dumps(out, indent=1)
    back = ms.to_canonical(out, target)

    # The instruction is a system / developer message (top-level system where the target has one).
    first = back[0]
    assert first.role in ("system", "developer")
    assert SYSTEM in (first.content if isinstance(first.content, str) else _texts(first.content))

    parts = _all_parts(back)
    user_text = [p.text for role, p in parts if role == "user" and isinstance(p, ms.TextPart)] + [
        m.content for m in back if m.role == "user" and isinstance(m.content, str)
    ]
    assert ASK in user_text
    assert THEN in user_text
    # Results are tool results, never plain user text.
    assert not any(RESULT_A in t or RESULT_B in t for t in user_text)

    calls = [p for _, p in parts if isinstance(p, ms.ToolCallPart)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", ARGS_A),
        ("get_weather", ARGS_B),
    ]
    src_ids = [p.id for _, p in _all_parts(ms.to_canonical(body, source)) if isinstance(p, ms.ToolCallPart)]
    assert [c.id for c in calls] == src_ids  # ids carried across (Gemini has optional ids)
    results = [p for _, p in parts if isinstance(p, ms.ToolResultPart)]
    assert [(r.tool_call_id, _result_text(r)) for r in results] == [
        (src_ids[0], RESULT_A),
        (src_ids[1], RESULT_B),
    ]
    answers = [p.text for role, p in parts if role == "assistant" and isinstance(p, ms.TextPart)] + [
        m.content for m in back if m.role == "assistant" and isinstance(m.content, str)
    ]
    assert answers[-1] == ANSWER

    # Replay tokens go back only to the protocol that produced them; elsewhere dropped, reported.
    token = TOKENS.get(source)
    if token is not None:
        assert (token in json.dumps(out)) == (source == target)
        if source != target:
            assert lossy, "a dropped replay token must be reported"
    if source == target:
        assert lossy == []


def test_parallel_chat_results_become_one_anthropic_user_message_results_first() -> None:
    out = ms.convert_history(BODIES["openai-chat"], to="anthropic", protocol="openai-chat")
    assert out["system"] in (SYSTEM, [{"type": "text", "text": SYSTEM}])
    messages = out["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    blocks = messages[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in blocks[:2]] == ["call_A", "call_B"]
    assert blocks[2]["text"] == THEN
    assert ms.validate(out, "anthropic") == []


def test_anthropic_multi_result_message_splits_into_chat_tool_messages_then_user_text() -> None:
    out = ms.convert_history(BODIES["anthropic"], to="openai-chat", protocol="anthropic")
    roles = [(m["role"], m.get("tool_call_id")) for m in out["messages"]]
    assert roles == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("tool", "toolu_A"),
        ("tool", "toolu_B"),
        ("user", None),
        ("assistant", None),
    ]
    assert out["messages"][5]["content"] in (THEN, [{"type": "text", "text": THEN}])
    assert ms.validate(out, "openai-chat") == []


def test_responses_items_become_chat_tool_calls_and_tool_messages() -> None:
    lossy: list[ms.Dropped] = []
    out = ms.convert_history(
        BODIES["openai-responses"], to="openai-chat", protocol="openai-responses", lossy=lossy
    )
    messages = out["messages"]
    calls = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert len(calls) == 1  # text and both calls in one assistant message
    assert [c["id"] for c in calls[0]["tool_calls"]] == ["call_A", "call_B"]
    tools = [m for m in messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [("call_A", RESULT_A), ("call_B", RESULT_B)]
    assert any("encrypted" in line or "reasoning" in line for line in map(str, lossy))
    assert ms.validate(out, "openai-chat") == []


GEMINI_NO_IDS: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": ASK}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": ARGS_A}, "thoughtSignature": "R2VtaW5pU2ln"},
                {"functionCall": {"name": "get_weather", "args": ARGS_B}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": RESULT_A}}},
                {"functionResponse": {"name": "get_weather", "response": {"result": RESULT_B}}},
            ],
        },
    ]
}


@pytest.mark.parametrize("body", [BODIES["gemini"], GEMINI_NO_IDS], ids=["ids", "no-ids"])
def test_gemini_parallel_responses_to_anthropic_and_back(body: dict[str, Any]) -> None:
    anthropic = ms.convert_history(body, to="anthropic", protocol="gemini")
    assert ms.validate(anthropic, "anthropic") == []
    calls = [
        b
        for m in anthropic["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b["type"] == "tool_use"
    ]
    results = [
        b
        for m in anthropic["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b["type"] == "tool_result"
    ]
    assert [c["input"] for c in calls] == [ARGS_A, ARGS_B]
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    assert len({c["id"] for c in calls}) == 2
    # Both results in ONE user message, as Anthropic requires.
    holders = [
        m
        for m in anthropic["messages"]
        if any(isinstance(b, dict) and b["type"] == "tool_result" for b in m["content"])
    ]
    assert len(holders) == 1

    again = ms.convert_history(anthropic, to="gemini", protocol="anthropic")
    assert ms.validate(again, "gemini") == []
    responses = [p for c in again["contents"] for p in c["parts"] if "functionResponse" in p]
    holders_g = [c for c in again["contents"] if any("functionResponse" in p for p in c["parts"])]
    assert len(holders_g) == 1  # parallel results in one Content
    assert [p["functionResponse"]["name"] for p in responses] == ["get_weather", "get_weather"]
    texts = [json.dumps(p["functionResponse"]["response"]) for p in responses]
    assert RESULT_A in texts[0]
    assert RESULT_B in texts[1]
    assert "R2VtaW5pU2ln" not in json.dumps(again)  # Gemini's own signature did not survive Anthropic
