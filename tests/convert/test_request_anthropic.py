"""The Anthropic Messages request envelope, both ways (``protocols/anthropic/_envelope.py``).

Read: every field of the full request body (``request_bodies/anthropic.json``) lands in canonical
terms with the client's own field path in ``env.sources``, or travels natively. Write: envelopes
as the other protocols' readers produce them (built here directly) become Anthropic bodies that
the installed anthropic SDK's request types accept (``tests.oracles.anthropic_request``), with
every loss reported and flagged when it changes the answer. Round trip: own → canonical → own.
The oracle is the SDK; the mapping rules are docs/requests/anthropic.md.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from maas_stream._envelope import (
    AFFECTS_OUTPUT,
    Envelope,
    FunctionTool,
    NativeTool,
    OutputFormat,
    Reasoning,
    ToolChoice,
    Unread,
    effort_budget,
)
from maas_stream._models import ModelCaps
from maas_stream._registry import get_protocol
from maas_stream._request import UnsupportedParamsError, convert_request
from maas_stream.protocols.anthropic._envelope import DEFAULT_MAX_TOKENS, ENVELOPE, MIN_THINKING_BUDGET
from tests import oracles

BODY: dict[str, Any] = json.loads((Path(__file__).parent / "request_bodies" / "anthropic.json").read_text())
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = FunctionTool("get_weather", "Weather for a city.", SCHEMA)
CONVERSATION: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}


def build(env: Envelope) -> tuple[dict[str, Any], list[Unread]]:
    """An Anthropic body for ``env``, checked by the SDK's request types, and what was lost."""
    lost: list[Unread] = []
    body = ENVELOPE.build(
        CONVERSATION, dataclasses.replace(env, model=env.model or "claude-sonnet-4-5"), lost
    )
    assert oracles.anthropic_request(body) == []
    return body, lost


def losses(lost: list[Unread]) -> list[tuple[str | None, bool]]:
    return [(u.field, u.affects_output) for u in lost]


# ------------------------------------------------------------------------------ the oracle


def test_the_full_body_is_a_request_the_sdk_accepts() -> None:
    assert oracles.anthropic_request(BODY) == []


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"tools": [{"name": "f", "input_schema": SCHEMA, "bogus": 1}]}, id="unknown_tool_key"),
        pytest.param({"thinking": {"type": "enabled"}}, id="budget_missing"),
        pytest.param({"max_tokens": "1"}, id="string_limit"),
        pytest.param({"temperature": "hot"}, id="sampling_type"),
        pytest.param({"seed": 1}, id="unknown_field"),
        pytest.param({"thinking": {"type": "enabled", "budget_tokens": 2048, "bogus": 1}}, id="nested_key"),
        pytest.param(
            {
                "tools": [
                    {
                        "type": "web_search_20250305",
                        "name": "web_search",
                        "user_location": {"type": "approximate", "zip": "1"},
                    }
                ]
            },
            id="deep_tool_key",
        ),
    ],
)
def test_the_oracle_refuses_what_the_sdk_does_not_declare(bad: dict[str, Any]) -> None:
    body = {"model": "m", "max_tokens": 5, "stream": True, **CONVERSATION, **bad}
    assert oracles.anthropic_request(body) != []


# ------------------------------------------------------------------------------ read


def test_every_field_of_the_full_body_is_read_or_travels_natively() -> None:
    env = ENVELOPE.read(BODY)
    read = {path.split(".")[0] for path in env.sources.values()}
    native = {path.split(".")[0] for path in env.native}
    assert set(BODY) - ENVELOPE.conversation - {"model", "stream"} == read | native
    assert env.dropped == []


def test_the_full_body_in_canonical_terms() -> None:
    env = ENVELOPE.read(BODY)
    assert (env.model, env.stream, env.max_tokens) == ("claude-sonnet-4-5", True, 16000)
    assert (env.temperature, env.top_p, env.top_k) == (1.0, 0.95, 40)
    assert env.stop == ["\n\nHuman:", "END_OF_ANSWER"]
    weather, hotel = env.tools
    assert (weather.name, weather.strict, weather.cache_control) == (
        "get_weather",
        True,
        {"type": "ephemeral", "ttl": "5m"},
    )
    assert weather.parameters == BODY["tools"][0]["input_schema"]
    assert (hotel.name, hotel.strict, hotel.cache_control) == ("book_hotel", None, None)
    assert [(t.protocol, t.category) for t in env.native_tools] == [
        ("anthropic", "web_search"),
        ("anthropic", "url_context"),
        ("anthropic", "code_execution"),
        ("anthropic", "shell"),
        ("anthropic", "text_editor"),
        ("anthropic", "memory"),
        ("anthropic", "tool_search"),
    ]
    assert env.native_tools[0].decl == BODY["tools"][2]
    assert (env.tool_choice, env.parallel_tool_calls) == (ToolChoice("auto"), False)
    assert env.reasoning == Reasoning(enabled=True, effort="high", budget_tokens=8000, summary="auto")
    assert env.output == OutputFormat("json_schema", BODY["output_config"]["format"]["schema"])
    assert (env.user, env.service_tier, env.metadata) == (BODY["metadata"]["user_id"], "auto", None)
    assert env.sources == {
        "max_tokens": "max_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "stop": "stop_sequences",
        "tools": "tools",
        "tool_choice": "tool_choice",
        "parallel_tool_calls": "tool_choice.disable_parallel_tool_use",
        "reasoning": "thinking",
        "output": "output_config.format",
        "user": "metadata.user_id",
        "service_tier": "service_tier",
    }
    assert env.native["output_config.task_budget"] == {"type": "tokens", "total": 50000}
    assert env.native["tools.input_examples"] == {"get_weather": [{"city": "Paris", "unit": "celsius"}]}
    assert env.native["tools.defer_loading"] == {"book_hotel": True}
    assert env.native_affects_output == {
        "container",
        "mcp_servers",
        "output_config.task_budget",
        "tools.input_examples",
        "tools.allowed_callers",
        "tools.defer_loading",
    }
    assert {"cache_control", "inference_geo", "speed", "diagnostics"} <= set(env.native)


@pytest.mark.parametrize(
    ("thinking", "reasoning"),
    [
        pytest.param(
            {"type": "enabled", "budget_tokens": 2048},
            Reasoning(enabled=True, budget_tokens=2048, summary="auto"),
            id="enabled",
        ),
        pytest.param(
            {"type": "enabled", "budget_tokens": 2048, "display": "omitted"},
            Reasoning(enabled=True, budget_tokens=2048),
            id="enabled_omitted",
        ),
        pytest.param(
            {"type": "adaptive"}, Reasoning(enabled=True, budget_tokens=-1, summary="auto"), id="adaptive"
        ),
        pytest.param({"type": "disabled"}, Reasoning(enabled=False), id="disabled"),
    ],
)
def test_thinking_is_read_as_reasoning(thinking: dict[str, Any], reasoning: Reasoning) -> None:
    env = ENVELOPE.read({**CONVERSATION, "thinking": thinking})
    assert env.reasoning == reasoning
    assert env.sources["reasoning"] == "thinking"
    assert "thinking" not in env.native


@pytest.mark.parametrize(
    "thinking",
    [
        pytest.param({"type": "between_tools"}, id="between_tools"),
        pytest.param({"type": "enabled", "budget_tokens": "many"}, id="bad_budget"),
        pytest.param({"type": "adaptive", "future": 1}, id="unknown_key"),
    ],
)
def test_thinking_not_understood_travels_whole_and_changes_the_answer(thinking: dict[str, Any]) -> None:
    env = ENVELOPE.read({**CONVERSATION, "thinking": thinking})
    assert env.reasoning is None
    assert env.native == {"thinking": thinking}
    assert env.native_affects_output == {"thinking"}
    lost: list[Unread] = []
    get_protocol("openai-chat").envelope.build({}, env, lost)  # type: ignore[union-attr]
    assert ("thinking", True) in losses(lost)


@pytest.mark.parametrize(
    ("effort", "read"),
    [("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "xhigh"), ("max", "xhigh")],
)
def test_output_config_effort_is_the_reasoning_effort(effort: str, read: str) -> None:
    env = ENVELOPE.read({**CONVERSATION, "output_config": {"effort": effort}})
    assert env.reasoning == Reasoning(effort=read)  # type: ignore[arg-type]
    assert env.sources["reasoning"] == "output_config.effort"


def test_an_effort_not_understood_travels_natively() -> None:
    env = ENVELOPE.read({**CONVERSATION, "output_config": {"effort": "ludicrous"}})
    assert env.reasoning is None
    assert env.native == {"output_config.effort": "ludicrous"}
    assert env.native_affects_output == {"output_config.effort"}


@pytest.mark.parametrize(
    ("choice", "read", "parallel"),
    [
        pytest.param({"type": "auto"}, ToolChoice("auto"), None, id="auto"),
        pytest.param(
            {"type": "any", "disable_parallel_tool_use": True}, ToolChoice("required"), False, id="any"
        ),
        pytest.param(
            {"type": "tool", "name": "f", "disable_parallel_tool_use": False},
            ToolChoice("required", ("f",)),
            True,
            id="tool",
        ),
        pytest.param({"type": "none"}, ToolChoice("none"), None, id="none"),
    ],
)
def test_tool_choice_is_read(choice: dict[str, Any], read: ToolChoice, parallel: bool | None) -> None:
    env = ENVELOPE.read({**CONVERSATION, "tool_choice": choice})
    assert (env.tool_choice, env.parallel_tool_calls) == (read, parallel)
    assert env.native == {}


@pytest.mark.parametrize(
    "choice",
    [
        pytest.param({"type": "tool"}, id="no_name"),
        pytest.param({"type": "auto", "disable_parallel_tool_use": "yes"}, id="bad_parallel"),
        pytest.param({"type": "auto", "future": True}, id="unknown_key"),
    ],
)
def test_a_tool_choice_not_understood_travels_whole(choice: dict[str, Any]) -> None:
    env = ENVELOPE.read({**CONVERSATION, "tool_choice": choice})
    assert (env.tool_choice, env.parallel_tool_calls) == (None, None)
    assert env.native == {"tool_choice": choice}
    assert env.native_affects_output == {"tool_choice"}


def test_metadata_user_id_is_the_user_and_other_keys_travel_natively() -> None:
    env = ENVELOPE.read({**CONVERSATION, "metadata": {"user_id": "u1", "team": "x"}})
    assert (env.user, env.sources["user"], env.metadata) == ("u1", "metadata.user_id", None)
    assert env.native == {"metadata.team": "x"}
    assert ENVELOPE.read({**CONVERSATION, "metadata": {"user_id": None}}).native == {}


def test_a_client_tool_without_schema_is_reported_and_a_new_server_tool_is_read() -> None:
    env = ENVELOPE.read(
        {**CONVERSATION, "tools": [{"name": "f"}, {"type": "hologram_20990101", "name": "h"}, 3]}
    )
    assert env.tools == []
    assert [(t.category, t.decl["name"]) for t in env.native_tools] == [("hologram_20990101", "h")]
    assert [(d.where, d.affects_output) for d in env.dropped] == [("tools[0]", True), ("tools[2]", True)]


# ------------------------------------------------------------------------------ round trips


def test_own_canonical_own_gives_the_body_back() -> None:
    env = ENVELOPE.read(BODY)
    lost: list[Unread] = []
    conversation = {k: BODY[k] for k in ENVELOPE.conversation}
    built = ENVELOPE.build(conversation, env, lost)
    # Thinking takes no top_k (Anthropic extended-thinking docs): the one loss.
    assert [(u.field, u.what) for u in lost] == [
        ("top_k", "request field top_k (Anthropic thinking does not take it)")
    ]
    expected = copy.deepcopy(BODY)
    del expected["top_k"]
    del expected["tools"][0]["type"]  # "custom" is the default type of a client tool
    assert built == expected
    assert oracles.anthropic_request(built) == []


@pytest.mark.parametrize(
    "env",
    [
        pytest.param(
            Envelope(
                max_tokens=100,
                tools=[WEATHER],
                tool_choice=ToolChoice("required", ("get_weather",)),
                parallel_tool_calls=True,
                stop=["x"],
                top_k=3,
                user="u",
            ),
            id="named_tool",
        ),
        pytest.param(
            Envelope(max_tokens=100, reasoning=Reasoning(enabled=True, budget_tokens=2048)), id="budget"
        ),
        pytest.param(
            Envelope(max_tokens=100, reasoning=Reasoning(enabled=True, budget_tokens=-1, summary="auto")),
            id="adaptive",
        ),
        pytest.param(Envelope(max_tokens=100, output=OutputFormat("json_schema", SCHEMA)), id="schema"),
        pytest.param(Envelope(max_tokens=100, service_tier="standard_only"), id="tier"),
    ],
)
def test_canonical_own_canonical_keeps_the_canonical_fields(env: Envelope) -> None:
    body, lost = build(env)
    assert lost == []
    again = ENVELOPE.read(body)
    for name in (
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stop",
        "top_k",
        "user",
        "output",
        "service_tier",
    ):
        assert getattr(again, name) == getattr(env, name), name
    if env.reasoning is not None:
        assert again.reasoning is not None
        assert (again.reasoning.enabled, again.reasoning.budget_tokens) == (True, env.reasoning.budget_tokens)


# ------------------------------------------------------------------------------ write from others


def test_a_chat_request_envelope() -> None:
    env = Envelope(
        model="claude-sonnet-4-5",
        stream=True,
        max_tokens=1000,
        tools=[FunctionTool("get_weather", "Weather.", SCHEMA, strict=True)],
        tool_choice=ToolChoice("auto"),
        parallel_tool_calls=False,
        reasoning=Reasoning(effort="high"),
        output=OutputFormat("json_schema", SCHEMA, name="weather", strict=True),
        stop=["END"],
        seed=7,
        n=1,
        include_usage=True,
        store=False,
        user="user-1",
        metadata={"team": "a"},
        service_tier="default",
        origin="openai-chat",
        sources={"reasoning": "reasoning_effort", "output": "response_format", "metadata": "metadata"},
    )
    body, lost = build(env)
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather.", "input_schema": SCHEMA, "strict": True}
    ]
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    # effort -> budget only through effort_budget; the limit grows to keep the answer's room.
    assert body["thinking"] == {"type": "enabled", "budget_tokens": effort_budget("high")}
    assert body["max_tokens"] == effort_budget("high") + 1000
    assert "output_config" in body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "user-1"}
    assert body["service_tier"] == "standard_only"
    assert {"seed", "n", "store", "stream_options"}.isdisjoint(body)
    assert [(u.field, u.what, u.affects_output) for u in lost] == [
        ("seed", "request field seed", False),
        ("n", "request field n", True),
        ("metadata", "request field metadata", False),
    ]


def test_a_responses_request_envelope() -> None:
    env = Envelope(
        max_tokens=50000,
        tools=[WEATHER, FunctionTool("patch", "Apply a patch.", kind="custom", format={"type": "grammar"})],
        native_tools=[
            NativeTool(
                "openai-responses",
                {
                    "type": "web_search",
                    "user_location": {"type": "approximate", "city": "Paris", "country": "FR"},
                    "filters": {"allowed_domains": ["example.com"]},
                    "search_context_size": "high",
                },
                "web_search",
            ),
            NativeTool(
                "openai-responses",
                {"type": "code_interpreter", "container": {"type": "auto"}},
                "code_execution",
            ),
            NativeTool(
                "openai-responses", {"type": "file_search", "vector_store_ids": ["vs"]}, "file_search"
            ),
        ],
        tool_choice=ToolChoice("auto", ("get_weather",)),
        reasoning=Reasoning(effort="medium", summary="detailed", include_encrypted=True),
        store=True,
        service_tier="flex",
        origin="openai-responses",
        sources={"tool_choice": "tool_choice", "store": "store", "service_tier": "service_tier"},
    )
    body, lost = build(env)
    assert [t.get("name") for t in body["tools"]] == ["get_weather", "web_search", "code_execution"]
    assert body["tools"][1] == {
        "type": "web_search_20250305",
        "name": "web_search",
        "user_location": {"type": "approximate", "city": "Paris", "country": "FR"},
        "allowed_domains": ["example.com"],
    }
    assert body["tools"][2] == {"type": "code_execution_20250825", "name": "code_execution"}
    assert body["tool_choice"] == {"type": "auto"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}
    assert body["max_tokens"] == 50000
    assert "service_tier" not in body
    assert losses(lost) == [
        ("tools.custom", True),
        ("native_tools.options", False),
        ("native_tools", True),
        ("tool_choice", True),
        ("service_tier", False),
        ("store", False),
    ]
    assert "search_context_size" in lost[1].what


def test_a_gemini_request_envelope() -> None:
    env = Envelope(
        max_tokens=1000,
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        tools=[WEATHER],
        native_tools=[
            NativeTool("gemini", {"googleSearch": {}}, "web_search"),
            NativeTool("gemini", {"urlContext": {}}, "url_context"),
        ],
        tool_choice=ToolChoice("validated"),
        reasoning=Reasoning(budget_tokens=8192, summary="auto"),
        output=OutputFormat("json_object"),
        origin="gemini",
        sources={
            "temperature": "generationConfig.temperature",
            "top_p": "generationConfig.topP",
            "top_k": "generationConfig.topK",
            "tool_choice": "toolConfig.functionCallingConfig",
            "output": "generationConfig.responseMimeType",
        },
    )
    body, lost = build(env)
    assert body["tools"][1:] == [
        {"type": "web_search_20250305", "name": "web_search"},
        {"type": "web_fetch_20250910", "name": "web_fetch"},
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert body["max_tokens"] == 8192 + 1000  # the budget must stay below max_tokens
    assert body["tool_choice"] == {"type": "auto"}
    # Thinking takes no temperature / top_k change and top_p only from 0.95.
    assert {"temperature", "top_p", "top_k", "output_config"}.isdisjoint(body)
    assert [(u.what, u.affects_output) for u in lost] == [
        ("request field toolConfig.functionCallingConfig (validated mode)", True),
        ("request field generationConfig.temperature (Anthropic thinking does not take it)", False),
        ("request field generationConfig.topK (Anthropic thinking does not take it)", False),
        ("request field generationConfig.topP (Anthropic thinking does not take it)", False),
        (
            "request field generationConfig.responseMimeType (any JSON object: Anthropic needs a JSON schema)",
            True,
        ),
    ]


@pytest.mark.parametrize(
    ("reasoning", "limit", "thinking", "written_limit"),
    [
        pytest.param(Reasoning(effort="none"), 100, {"type": "disabled"}, 100, id="effort_none"),
        pytest.param(Reasoning(enabled=False, effort="high"), 100, {"type": "disabled"}, 100, id="off"),
        pytest.param(Reasoning(budget_tokens=0), 100, {"type": "disabled"}, 100, id="budget_0"),
        pytest.param(
            Reasoning(effort="minimal"),
            4096,
            {"type": "enabled", "budget_tokens": effort_budget("minimal")},
            4096,
            id="minimal",
        ),
        pytest.param(
            Reasoning(effort="xhigh"),
            64000,
            {"type": "enabled", "budget_tokens": effort_budget("xhigh")},
            64000,
            id="xhigh_fits",
        ),
        pytest.param(
            Reasoning(budget_tokens=512),
            4096,
            {"type": "enabled", "budget_tokens": MIN_THINKING_BUDGET},
            4096,
            id="below_minimum",
        ),
        pytest.param(
            Reasoning(budget_tokens=4096),
            4096,
            {"type": "enabled", "budget_tokens": 4096},
            8192,
            id="budget_equals_limit",
        ),
        pytest.param(Reasoning(budget_tokens=-1), 100, {"type": "adaptive"}, 100, id="dynamic"),
        pytest.param(Reasoning(enabled=True), 100, {"type": "adaptive"}, 100, id="on_no_budget"),
        pytest.param(
            Reasoning(summary="concise"),
            100,
            {"type": "adaptive", "display": "summarized"},
            100,
            id="summary_only",
        ),
    ],
)
def test_reasoning_to_thinking(
    reasoning: Reasoning, limit: int, thinking: dict[str, Any], written_limit: int
) -> None:
    body, lost = build(Envelope(max_tokens=limit, reasoning=reasoning))
    assert (body["thinking"], body["max_tokens"]) == (thinking, written_limit)
    assert body["thinking"].get("budget_tokens", 0) < body["max_tokens"]
    assert lost == []


def test_effort_goes_to_output_config_only_beside_a_budget_or_adaptive_thinking() -> None:
    body, _ = build(Envelope(max_tokens=100, reasoning=Reasoning(budget_tokens=-1, effort="low")))
    assert (body["thinking"], body["output_config"]) == ({"type": "adaptive"}, {"effort": "low"})
    body, _ = build(Envelope(max_tokens=9000, reasoning=Reasoning(budget_tokens=2000, effort="xhigh")))
    assert body["output_config"] == {"effort": "xhigh"}
    body, _ = build(Envelope(max_tokens=9000, reasoning=Reasoning(effort="low")))
    assert "output_config" not in body  # the budget stands for it


def test_include_encrypted_alone_needs_nothing() -> None:
    body, lost = build(Envelope(max_tokens=5, reasoning=Reasoning(include_encrypted=True)))
    assert ("thinking" not in body, lost) == (True, [])


def test_thinking_is_refused_with_a_forced_tool_choice() -> None:
    env = Envelope(
        max_tokens=100,
        tools=[WEATHER],
        tool_choice=ToolChoice("required"),
        reasoning=Reasoning(effort="low"),
        sources={"reasoning": "reasoning_effort"},
    )
    body, lost = build(env)
    assert body["tool_choice"] == {"type": "any"}
    assert "thinking" not in body
    assert [(u.what, u.field, u.affects_output) for u in lost] == [
        (
            "request field reasoning_effort (Anthropic thinks only with tool_choice auto or none)",
            "reasoning",
            True,
        )
    ]


def test_top_p_from_095_stays_under_thinking() -> None:
    body, lost = build(
        Envelope(max_tokens=9000, temperature=1.0, top_p=0.97, reasoning=Reasoning(effort="low"))
    )
    assert (body["temperature"], body["top_p"], lost) == (1.0, 0.97, [])


@pytest.mark.parametrize(
    ("choice", "parallel", "written", "lost_fields"),
    [
        pytest.param(
            None, False, {"type": "auto", "disable_parallel_tool_use": True}, [], id="parallel_only"
        ),
        pytest.param(ToolChoice("none"), False, {"type": "none"}, [], id="none"),
        pytest.param(
            ToolChoice("required", ("get_weather",)),
            False,
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
            [],
            id="named",
        ),
        pytest.param(
            ToolChoice("required", ("a", "b")), None, {"type": "any"}, ["tool_choice"], id="allowed_required"
        ),
        pytest.param(ToolChoice("auto", ("a",)), None, {"type": "auto"}, ["tool_choice"], id="allowed_auto"),
    ],
)
def test_tool_choice_and_parallel_calls(
    choice: ToolChoice | None, parallel: bool | None, written: dict[str, Any], lost_fields: list[str]
) -> None:
    body, lost = build(
        Envelope(max_tokens=5, tools=[WEATHER], tool_choice=choice, parallel_tool_calls=parallel)
    )
    assert body["tool_choice"] == written
    assert [u.field for u in lost] == lost_fields
    assert all(u.affects_output for u in lost)


def test_no_tool_choice_without_tools() -> None:
    body, lost = build(Envelope(max_tokens=5, tool_choice=ToolChoice("auto"), parallel_tool_calls=False))
    assert ("tool_choice" not in body, lost) == (True, [])


def test_a_schema_that_is_not_an_object_and_a_described_format() -> None:
    _, lost = build(Envelope(max_tokens=5, output=OutputFormat("json_schema", None)))
    assert losses(lost) == [("output", True)]
    body, lost = build(Envelope(max_tokens=5, output=OutputFormat("json_schema", SCHEMA, description="d")))
    assert body["output_config"]["format"]["schema"] == SCHEMA
    assert losses(lost) == [("output.description", False)]
    body, lost = build(Envelope(max_tokens=5, output=OutputFormat("text")))
    assert ("output_config" not in body, lost) == (True, [])


def test_anthropic_only_fields_are_reported_to_other_protocols() -> None:
    env = ENVELOPE.read(BODY)
    lost: list[Unread] = []
    get_protocol("gemini").envelope.build({}, env, lost)  # type: ignore[union-attr]
    reported = {u.field: u.affects_output for u in lost}
    for path in (
        "container",
        "mcp_servers",
        "tools.input_examples",
        "output_config.task_budget",
    ):
        assert reported[path] is True, path
    # context_management edits the provider's copy of earlier turns: reported, not refused.
    for path in ("cache_control", "inference_geo", "tools.eager_input_streaming", "context_management"):
        assert reported[path] is False, path


def test_fields_that_change_the_answer_are_canonical_or_listed() -> None:
    assert {"tools.custom", "native_tools", "tool_choice", "reasoning", "output", "stop"} <= AFFECTS_OUTPUT
    assert {"thinking", "container", "mcp_servers", "thread", "compaction"} <= ENVELOPE.affects_output


# ------------------------------------------------------------------------------ convert_request


@pytest.mark.parametrize(
    ("model", "limit"),
    [
        pytest.param("claude-sonnet-4-5-20250929", 64000, id="sonnet_4_5"),
        pytest.param("claude-opus-4-1", 32000, id="opus_4_1"),
        pytest.param("claude-3-5-haiku-latest", 8192, id="haiku_3_5"),
        pytest.param("my-own-model", DEFAULT_MAX_TOKENS, id="unknown"),
    ],
)
def test_the_default_limit_is_the_models_own_maximum(model: str, limit: int) -> None:
    chat = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    out = convert_request(chat, protocol="openai-chat", to="anthropic")
    assert out.body["max_tokens"] == limit
    assert oracles.anthropic_request(out.body) == []


def test_a_named_limit_and_a_route_override_win() -> None:
    chat = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 77}
    assert convert_request(chat, protocol="openai-chat", to="anthropic").body["max_tokens"] == 77
    del chat["max_tokens"]
    caps = {"claude-sonnet-4-5*": ModelCaps(max_output=1234)}
    assert convert_request(chat, protocol="openai-chat", to="anthropic", caps=caps).body["max_tokens"] == 1234


def test_same_protocol_passes_the_body_through() -> None:
    out = convert_request(BODY, protocol="anthropic", to="anthropic", model="claude-opus-4-5")
    # Byte-exact (cache_control, strict, server tools, thinking...) but for the model and top_p:
    # Opus 4.5 takes temperature or top_p, not both.
    expected = {k: v for k, v in BODY.items() if k != "top_p"}
    assert out.body == {**expected, "model": "claude-opus-4-5"}
    assert [d.kind for d in out.dropped] == ["request_field"]


def test_anthropic_only_fields_are_refused_elsewhere_unless_dropped() -> None:
    body = {**CONVERSATION, "model": "gpt-4o", "max_tokens": 10, "container": "container_01"}
    with pytest.raises(UnsupportedParamsError) as refused:
        convert_request(body, protocol="anthropic", to="openai-chat")
    assert refused.value.fields == ["container"]
    out = convert_request(body, protocol="anthropic", to="openai-chat", drop_params=True)
    assert "container" not in out.body
    assert any("container" in d.what for d in out.dropped if d.kind == "request_field")
