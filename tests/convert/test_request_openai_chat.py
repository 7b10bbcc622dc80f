"""The Chat Completions request envelope codec, both ways (docs/requests/openai-chat.md).

Read: every documented field of a full request (request_bodies/openai_chat.json) lands in its
canonical field with the client's own path in ``sources``, or travels natively. Write: envelopes
as the other protocols read them (built here directly) become Chat bodies the ``openai`` SDK's
request type accepts whole, with what Chat cannot carry reported. Round trip: a Chat envelope
written back to Chat is the client's envelope. Refusals: what changes the answer and cannot be
carried is refused, named in the client's terms, unless drops are allowed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import maas_stream as ms
from maas_stream._envelope import (
    Envelope,
    FunctionTool,
    NativeTool,
    OutputFormat,
    Reasoning,
    ToolChoice,
    Unread,
    budget_effort,
)
from maas_stream.protocols.openai_chat._envelope import AFFECTS_OUTPUT, ENVELOPE, MAX_STOP, encoder_options
from tests.oracles import chat_request

BODY: dict[str, Any] = json.loads((Path(__file__).parent / "request_bodies" / "openai_chat.json").read_text())
SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CONVERSATION: Any = {"messages": [{"role": "user", "content": "hi"}]}


def build(env: Envelope) -> tuple[dict[str, Any], list[Unread]]:
    lost: list[Unread] = []
    body = ENVELOPE.build(copy.deepcopy(CONVERSATION), env, lost)
    return body, lost


def accepted(body: dict[str, Any]) -> None:
    """The SDK's request type takes the body whole: every key known, every value valid."""
    assert chat_request(body) == body


def lost_fields(lost: list[Unread]) -> list[tuple[str | None, bool]]:
    return [(u.field, u.affects_output) for u in lost]


# ---------------------------------------------------------------------- reading


def test_the_full_body_is_one_the_sdk_accepts_whole() -> None:
    assert chat_request(BODY) == BODY  # every key known to the SDK, every value valid


def test_every_field_of_the_full_body_is_read_or_travels_natively() -> None:
    env = ENVELOPE.read(BODY)
    assert (env.model, env.stream, env.max_tokens, env.temperature, env.top_p) == (
        "gpt-4o-2024-08-06",
        True,
        1024,
        0.4,
        0.9,
    )
    assert (env.n, env.seed, env.presence_penalty, env.frequency_penalty) == (1, 42, 0.1, 0.2)
    assert env.stop == ["\n\nUser:", "END"]
    assert [(t.name, t.kind, t.strict) for t in env.tools] == [
        ("get_weather", "function", True),
        ("run_sql", "custom", None),
    ]
    assert env.tools[1].format == BODY["tools"][1]["custom"]["format"]
    assert env.native_tools == [NativeTool("openai-chat", BODY["web_search_options"], "web_search")]
    assert env.tool_choice == ToolChoice("auto", ("get_weather", "run_sql"))
    assert env.parallel_tool_calls is True
    assert env.reasoning == Reasoning(enabled=True, effort="low")
    schema = BODY["response_format"]["json_schema"]
    assert env.output == OutputFormat(
        "json_schema", schema["schema"], "travel_answer", "The answer to a travel question.", True
    )
    assert (env.include_usage, env.store, env.metadata) == (
        True,
        False,
        {"session": "trip-42", "team": "travel"},
    )
    assert (env.user, env.service_tier) == ("user-hash-1234", "flex")
    assert env.dropped == []
    # Chat's own fields; the deprecated pair travels natively because its successors are set.
    assert set(env.native) == {
        "audio",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_tokens",  # the limit's second name: max_completion_tokens is read, this one kept
        "modalities",
        "moderation",
        "prediction",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "top_logprobs",
        "user",  # safety_identifier is the end-user id; user (a cache hint now) goes as it is
        "verbosity",
    }
    assert env.native_affects_output == {
        "audio",
        "function_call",
        "functions",
        "logit_bias",
        "modalities",
        "moderation",
        "prediction",
        "verbosity",
    }


def test_sources_name_the_clients_own_fields() -> None:
    env = ENVELOPE.read(BODY)
    assert env.sources == {
        "max_tokens": "max_completion_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "tools": "tools",
        "native_tools": "web_search_options",
        "tool_choice": "tool_choice",
        "parallel_tool_calls": "parallel_tool_calls",
        "reasoning": "reasoning_effort",
        "output": "response_format",
        "stop": "stop",
        "n": "n",
        "seed": "seed",
        "presence_penalty": "presence_penalty",
        "frequency_penalty": "frequency_penalty",
        "store": "store",
        "metadata": "metadata",
        "user": "safety_identifier",
        "service_tier": "service_tier",
        "include_usage": "stream_options.include_usage",
    }


@pytest.mark.parametrize(
    ("raw", "choice"),
    [
        pytest.param("auto", ToolChoice("auto"), id="auto"),
        pytest.param("none", ToolChoice("none"), id="none"),
        pytest.param("required", ToolChoice("required"), id="required"),
        pytest.param(
            {"type": "function", "function": {"name": "w"}}, ToolChoice("required", ("w",)), id="named"
        ),
        pytest.param(
            {"type": "custom", "custom": {"name": "g"}}, ToolChoice("required", ("g",)), id="custom"
        ),
        pytest.param(
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [{"type": "function", "function": {"name": "w"}}],
                },
            },
            ToolChoice("required", ("w",)),
            id="allowed",
        ),
    ],
)
def test_tool_choice_reads(raw: Any, choice: ToolChoice) -> None:
    env = ENVELOPE.read({"messages": [], "tool_choice": raw})
    assert env.tool_choice == choice
    assert "tool_choice" not in env.native


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"type": "telepathy"}, id="unknown-type"),
        pytest.param({"type": {"nested": 1}}, id="odd-type"),
        pytest.param(
            {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": []}]}}, id="odd"
        ),
    ],
)
def test_an_unreadable_tool_choice_travels_natively_and_counts_as_answer_changing(raw: Any) -> None:
    env = ENVELOPE.read({"messages": [], "tool_choice": raw})
    assert env.tool_choice is None
    assert env.native == {"tool_choice": raw}
    assert env.native_affects_output == {"tool_choice"}


@pytest.mark.parametrize("raw", [{"x": 1}, ["low"], "extreme", 3])
def test_an_unreadable_effort_travels_natively(raw: Any) -> None:
    env = ENVELOPE.read({"messages": [], "reasoning_effort": raw})
    assert env.reasoning is None
    assert env.native == {"reasoning_effort": raw}


def test_the_deprecated_functions_are_tools_when_alone() -> None:
    env = ENVELOPE.read(
        {"messages": [], "functions": [{"name": "f", "parameters": SCHEMA}], "function_call": {"name": "f"}}
    )
    assert env.tools == [FunctionTool("f", None, SCHEMA)]
    assert env.tool_choice == ToolChoice("required", ("f",))
    assert (env.source("tools"), env.source("tool_choice")) == ("functions", "function_call")
    assert env.native == {}
    body, lost = build(env)
    assert body["tools"] == [{"type": "function", "function": {"name": "f", "parameters": SCHEMA}}]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert lost == []


@pytest.mark.parametrize(
    ("raw", "stop"),
    [pytest.param("END", ["END"], id="string"), pytest.param(["a", "b"], ["a", "b"], id="list")],
)
def test_stop_is_a_list(raw: Any, stop: list[str]) -> None:
    assert ENVELOPE.read({"messages": [], "stop": raw}).stop == stop


def test_effort_max_reads_as_the_top_canonical_level() -> None:
    assert ENVELOPE.read({"messages": [], "reasoning_effort": "max"}).reasoning == Reasoning(True, "xhigh")
    assert ENVELOPE.read({"messages": [], "reasoning_effort": "none"}).reasoning == Reasoning(False, "none")


def test_user_alone_is_the_end_user_id() -> None:
    env = ENVELOPE.read({"messages": [], "user": "u"})
    assert (env.user, env.source("user"), env.native) == ("u", "user", {})


# ---------------------------------------------------------------------- own round trip


def test_own_envelope_written_back_is_the_clients_envelope() -> None:
    env = ENVELOPE.read(BODY)
    body, lost = build(env)
    assert lost == []
    accepted(body)
    again = ENVELOPE.read(body)
    for name in (
        "model",
        "max_tokens",
        "temperature",
        "top_p",
        "n",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "tools",
        "native_tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "output",
        "store",
        "metadata",
        "user",
        "service_tier",
        "native",
    ):
        assert getattr(again, name) == getattr(env, name), name
    # Every envelope field comes back byte-exact (the limit's second name travels natively)
    # but one: the upstream always asks for usage.
    differ = {k for k in BODY if k != "messages" and body.get(k) != BODY[k]}
    assert differ == {"stream_options"}
    assert body["stream_options"] == {"include_usage": True}


def test_the_client_usage_switch_goes_to_the_encoder() -> None:
    env = ENVELOPE.read({**BODY, "stream_options": {"include_usage": False}})
    assert encoder_options(env) == {"include_usage": False}
    assert build(env)[0]["stream_options"] == {"include_usage": True}


# ---------------------------------------------------------------------- from the other protocols


def anthropic_envelope() -> Envelope:
    """An Anthropic request as its reader gives it: cache breakpoints, thinking budget, web search."""
    return Envelope(
        model="claude-sonnet-4-5",
        stream=True,
        max_tokens=2048,
        temperature=0.3,
        top_k=40,
        stop=["###", "END", "STOP", "Human:", "Q:"],
        tools=[FunctionTool("get_weather", "Weather.", SCHEMA, cache_control={"type": "ephemeral"})],
        native_tools=[
            NativeTool(
                "anthropic",
                {
                    "type": "web_search_20250305",
                    "name": "web_search",
                    "max_uses": 3,
                    "user_location": {"type": "approximate", "city": "Paris", "country": "FR"},
                },
                "web_search",
            )
        ],
        tool_choice=ToolChoice("required", ("get_weather",)),
        parallel_tool_calls=False,
        reasoning=Reasoning(enabled=True, budget_tokens=3000, summary="auto"),
        user="user-1",
        service_tier="standard_only",
        origin="anthropic",
        native={"container": "c-1"},
        sources={"stop": "stop_sequences", "tool_choice": "tool_choice", "reasoning": "thinking"},
    )


def test_from_anthropic() -> None:
    body, lost = build(anthropic_envelope())
    accepted(body)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather.", "parameters": SCHEMA},
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == budget_effort(3000) == "high"
    assert body["stop"] == ["###", "END", "STOP", "Human:"]
    assert body["web_search_options"] == {
        "user_location": {"type": "approximate", "approximate": {"city": "Paris", "country": "FR"}}
    }
    assert (body["safety_identifier"], body["service_tier"]) == ("user-1", "default")
    assert (body["max_completion_tokens"], body["temperature"]) == (2048, 0.3)
    assert "top_k" not in body
    assert "container" not in body
    assert lost_fields(lost) == [
        ("tools.cache_control", False),
        ("native_tools", True),  # max_uses
        ("reasoning.summary", False),  # Chat returns no thinking text; the answer is the same
        ("stop", True),  # the fifth sequence
        ("top_k", False),
        ("container", False),
    ]
    assert lost[3].where == "stop_sequences"  # the client's own field


def responses_envelope() -> Envelope:
    """A Responses request: a flat grammar custom tool, file search, allowed tools, a schema."""
    return Envelope(
        model="gpt-5",
        stream=True,
        max_tokens=4000,
        tools=[
            FunctionTool("lookup", None, SCHEMA, strict=False),
            FunctionTool(
                "sql",
                "Run SQL.",
                kind="custom",
                format={"type": "grammar", "syntax": "regex", "definition": "SELECT .*"},
            ),
        ],
        native_tools=[
            NativeTool("openai-responses", {"type": "file_search", "vector_store_ids": ["vs"]}, "file_search")
        ],
        tool_choice=ToolChoice("required", ("lookup", "sql")),
        reasoning=Reasoning(effort="medium", summary="detailed", include_encrypted=True),
        output=OutputFormat("json_schema", SCHEMA, "answer", None, True),
        store=False,
        metadata={"k": "v"},
        service_tier="priority",
        origin="openai-responses",
    )


def test_from_responses() -> None:
    body, lost = build(responses_envelope())
    accepted(body)
    assert body["tools"] == [
        {"type": "function", "function": {"name": "lookup", "parameters": SCHEMA, "strict": False}},
        {
            "type": "custom",
            "custom": {
                "name": "sql",
                "description": "Run SQL.",
                "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": "SELECT .*"}},
            },
        },
    ]
    assert body["tool_choice"] == {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [
                {"type": "function", "function": {"name": "lookup"}},
                {"type": "custom", "custom": {"name": "sql"}},
            ],
        },
    }
    assert body["reasoning_effort"] == "medium"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
    }
    assert (body["store"], body["metadata"], body["service_tier"]) == (False, {"k": "v"}, "priority")
    assert "web_search_options" not in body
    assert lost_fields(lost) == [
        ("native_tools", True),  # file search
        ("reasoning.summary", False),
        ("reasoning.include_encrypted", False),
    ]


def gemini_envelope() -> Envelope:
    """A Gemini request: validated tool choice, dynamic thinking, candidates, Google Search."""
    return Envelope(
        model="gemini-2.5-flash",
        stream=True,
        max_tokens=512,
        top_p=0.8,
        top_k=20,
        seed=7,
        n=2,
        presence_penalty=0.5,
        stop=["END"],
        tools=[FunctionTool("w", "d", SCHEMA)],
        native_tools=[
            NativeTool("gemini", {"googleSearch": {}}, "web_search"),
            NativeTool("gemini", {"codeExecution": {}}, "code_execution"),
        ],
        tool_choice=ToolChoice("validated"),
        reasoning=Reasoning(enabled=True, budget_tokens=-1, summary="auto"),
        output=OutputFormat("json_object"),
        origin="gemini",
        native={"safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}]},
        native_affects_output=frozenset({"safetySettings"}),
    )


def test_from_gemini() -> None:
    body, lost = build(gemini_envelope())
    accepted(body)
    assert body["tool_choice"] == "auto"  # Chat's nearest to VALIDATED, reported
    assert body["reasoning_effort"] == "medium"  # the dynamic budget
    assert (body["n"], body["seed"], body["presence_penalty"], body["stop"]) == (2, 7, 0.5, ["END"])
    assert body["response_format"] == {"type": "json_object"}
    assert body["web_search_options"] == {}
    assert lost_fields(lost) == [
        ("native_tools", True),  # code execution
        ("tool_choice", True),
        ("reasoning.summary", False),
        ("top_k", False),
        ("safetySettings", True),
    ]


def test_thinking_switched_off_is_effort_none() -> None:
    body, lost = build(Envelope(reasoning=Reasoning(enabled=False, summary="auto")))
    assert body["reasoning_effort"] == "none"
    assert lost == []  # no thinking, so no summary to miss


def test_a_schema_without_a_name_gets_one_chat_requires() -> None:
    body, _ = build(Envelope(model="m", output=OutputFormat("json_schema", SCHEMA)))
    accepted(body)
    assert body["response_format"]["json_schema"] == {"name": "response", "schema": SCHEMA}


def test_a_choice_without_tools_is_reported_not_sent() -> None:
    body, lost = build(Envelope(tool_choice=ToolChoice("none"), parallel_tool_calls=True))
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    # OpenAI refuses both without tools, and they mean nothing then: cosmetic drops.
    assert [(u.what, u.affects_output) for u in lost] == [
        ("request field tool_choice (no tools to choose from)", False),
        ("request field parallel_tool_calls (no tools to call)", False),
    ]


def test_an_unknown_service_tier_is_reported() -> None:
    body, lost = build(Envelope(service_tier="batch"))
    assert "service_tier" not in body
    assert lost_fields(lost) == [("service_tier", False)]


# ---------------------------------------------------------------------- through convert_request


def test_same_protocol_keeps_strict_and_tool_choice_byte_exact() -> None:
    # The model table knows every sampling and reasoning field fits (the sample's gpt-4o takes
    # no reasoning_effort: that is a model rule, tested in test_convert_request.py).
    caps = {"*": ms.ModelCaps()}
    out = ms.convert_request(copy.deepcopy(BODY), protocol="openai-chat", to="openai-chat", caps=caps)
    assert out.body == BODY
    assert out.body["tools"] == BODY["tools"]
    assert out.body["tool_choice"] == BODY["tool_choice"]
    assert out.body["response_format"] == BODY["response_format"]
    assert out.dropped == []


@pytest.mark.parametrize("field", sorted(AFFECTS_OUTPUT - {"tool_choice", "function_call", "functions", "n"}))
def test_an_answer_changing_chat_field_is_refused_elsewhere_unless_dropped(field: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], field: {"x": 1}}
    with pytest.raises(ms.UnsupportedParamsError) as caught:
        ms.convert_request(body, protocol="openai-chat", to="anthropic")
    assert caught.value.fields == [field]
    out = ms.convert_request(body, protocol="openai-chat", to="anthropic", drop_params=True)
    assert field not in out.body
    assert [(d.kind, d.what) for d in out.dropped] == [("request_field", f"request field {field}")]


def test_several_answers_are_refused_where_the_target_has_none_but_one_is_harmless() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}
    with pytest.raises(ms.UnsupportedParamsError) as caught:
        ms.convert_request(body, protocol="openai-chat", to="anthropic")
    assert "request field n " in str(caught.value)
    one = ms.convert_request({**body, "n": 1}, protocol="openai-chat", to="anthropic")
    assert [d.what for d in one.dropped] == ["request field n"]


def test_to_chat_refuses_what_chat_cannot_carry_naming_the_clients_field() -> None:
    env = anthropic_envelope()
    lost: list[Unread] = []
    ENVELOPE.build({}, env, lost)
    refused = [u for u in lost if u.affects_output]
    assert [(u.field, u.where) for u in refused] == [("native_tools", None), ("stop", "stop_sequences")]
    assert MAX_STOP == 4
