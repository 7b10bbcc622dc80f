"""The Gemini request envelope codec: every field read into canonical terms, written from every protocol.

Bodies written for Gemini are checked by google-genai's own request models
(``GenerateContentConfig`` / ``Content``, ``extra="forbid"``, camelCase aliases): a field name
or value the SDK would not send fails there. The full body (request_bodies/gemini.json) sets
every documented request field.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import types as genai_types

import maas_stream as ms
from maas_stream._envelope import (
    Envelope,
    FunctionTool,
    NativeTool,
    OutputFormat,
    Reasoning,
    ToolChoice,
    Unread,
    effort_budget,
)
from maas_stream.protocols.gemini import ENVELOPE

FULL: dict[str, Any] = json.loads((Path(__file__).parent / "request_bodies" / "gemini.json").read_text())
CONVERSATION = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
TOP_LEVEL = ("tools", "toolConfig", "safetySettings", "cachedContent", "labels", "serviceTier", "store")


def sdk_check(body: dict[str, Any]) -> None:
    """google-genai's request models accept ``body`` (the oracle: unknown fields fail).

    The SDK only warns on an unknown enum value (``mode: "REQUIRED"``): that fails too.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _sdk_check(body)


def _sdk_check(body: dict[str, Any]) -> None:
    for content in body["contents"]:
        genai_types.Content.model_validate(content)
    config = dict(body.get("generationConfig", {}))
    config.update({k: body[k] for k in TOP_LEVEL if k in body})
    if "systemInstruction" in body:
        config["systemInstruction"] = body["systemInstruction"]
    extra = set(body) - {"contents", "generationConfig", "systemInstruction", *TOP_LEVEL}
    assert not extra, f"fields outside the SDK's request: {extra}"
    genai_types.GenerateContentConfig.model_validate(config)


def build(env: Envelope) -> tuple[dict[str, Any], list[Unread]]:
    lost: list[Unread] = []
    body = ENVELOPE.build(CONVERSATION, env, lost)
    sdk_check(body)
    return body, lost


def fields(lost: list[Unread]) -> list[str | None]:
    return [u.field for u in lost]


# ---------------------------------------------------------------------- read


def test_full_body_is_read_into_canonical_terms() -> None:
    env = ENVELOPE.read(FULL, model="gemini-2.5-flash")
    assert (env.max_tokens, env.temperature, env.top_p, env.top_k) == (2048, 0.4, 0.95, 40)
    assert (env.seed, env.n, env.stop) == (1234, 1, ["\n\nEND"])
    assert (env.presence_penalty, env.frequency_penalty) == (0.1, 0.2)
    assert env.output == OutputFormat("json_schema", FULL["generationConfig"]["responseJsonSchema"])
    assert env.reasoning == Reasoning(enabled=True, budget_tokens=2048, summary="auto")
    assert env.tool_choice == ToolChoice("required", ("get_weather", "get_forecast"))
    assert [t.name for t in env.tools] == ["get_weather", "get_forecast"]
    assert [(t.category, dict(t.decl)) for t in env.native_tools] == [
        ("web_search", {"googleSearch": {}}),
        ("code_execution", {"codeExecution": {}}),
        ("url_context", {"urlContext": {}}),
    ]
    assert (env.service_tier, env.store, env.metadata) == ("flex", False, {"team": "weather", "env": "prod"})
    assert env.dropped == []
    assert env.sources == {
        "max_tokens": "generationConfig.maxOutputTokens",
        "temperature": "generationConfig.temperature",
        "top_p": "generationConfig.topP",
        "top_k": "generationConfig.topK",
        "seed": "generationConfig.seed",
        "n": "generationConfig.candidateCount",
        "stop": "generationConfig.stopSequences",
        "presence_penalty": "generationConfig.presencePenalty",
        "frequency_penalty": "generationConfig.frequencyPenalty",
        "output": "generationConfig.responseJsonSchema",
        "reasoning": "generationConfig.thinkingConfig",
        "tool_choice": "toolConfig.functionCallingConfig",
        "service_tier": "serviceTier",
        "store": "store",
        "metadata": "labels",
        "tools": "tools",
    }
    assert set(env.native) == {
        "safetySettings",
        "cachedContent",
        "generationConfig.responseLogprobs",
        "generationConfig.logprobs",
        "generationConfig.responseModalities",
        "generationConfig.mediaResolution",
        "generationConfig.speechConfig",
        "generationConfig.imageConfig",
        "generationConfig.enableEnhancedCivicAnswers",
    }
    assert env.native_affects_output == {
        "safetySettings",
        "cachedContent",
        "generationConfig.responseModalities",
        "generationConfig.speechConfig",
        "generationConfig.imageConfig",
    }


def test_full_body_is_what_the_sdk_accepts() -> None:
    sdk_check(FULL)


def test_openapi_parameters_are_read_as_json_schema() -> None:
    env = ENVELOPE.read(FULL)
    assert env.tools[1].parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
        "required": ["city"],
    }


_SEEN: list[dict[str, Any]] = []


def _capture(request: httpx2.Request) -> httpx2.Response:
    _SEEN.append(json.loads(request.content))
    done = {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
    return httpx2.Response(200, json={"candidates": [done]})


def test_what_google_genai_sends_is_read_snake_case_inside() -> None:
    """The SDK writes nested objects in snake_case on the wire (``thinking_budget``, ...)."""
    http = httpx2.Client(transport=httpx2.MockTransport(_capture))
    options = genai_types.HttpOptions(base_url="http://sdk/", api_version="v1beta", httpx_client=http)
    client = genai.Client(api_key="k", http_options=options)
    config = genai_types.GenerateContentConfig(
        thinking_config=genai_types.ThinkingConfig(
            thinking_level=genai_types.ThinkingLevel.LOW, include_thoughts=True
        ),
        tools=[
            genai_types.Tool(
                function_declarations=[
                    genai_types.FunctionDeclaration(name="f", parameters_json_schema={"type": "object"})
                ]
            )
        ],
        tool_config=genai_types.ToolConfig(
            function_calling_config=genai_types.FunctionCallingConfig(
                mode=genai_types.FunctionCallingConfigMode.VALIDATED
            )
        ),
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
        top_k=20,
    )
    _SEEN.clear()
    client.models.generate_content(model="gemini-3-flash", contents="hi", config=config)
    (body,) = _SEEN
    assert body["generationConfig"]["thinkingConfig"] == {"include_thoughts": True, "thinking_level": "LOW"}
    assert "parameters_json_schema" in body["tools"][0]["functionDeclarations"][0]
    env = ENVELOPE.read(body)
    assert env.reasoning == Reasoning(enabled=True, effort="low", summary="auto")
    assert env.tools[0].parameters == {"type": "object"}
    assert env.tool_choice == ToolChoice("validated")
    assert env.top_k == 20  # sent as 20.0
    assert env.native == {}


def test_snake_case_everywhere_is_read() -> None:
    body = {
        "contents": [],
        "generation_config": {
            "max_output_tokens": 10,
            "stop_sequences": ["x"],
            "candidate_count": 2,
            "response_mime_type": "application/json",
            "response_schema": {"type": "OBJECT"},
            "thinking_config": {"thinking_budget": 0},
        },
        "tool_config": {"function_calling_config": {"mode": "none"}},
        "tools": [{"google_search": {}, "function_declarations": [{"name": "g"}]}],
        "safety_settings": [],
        "service_tier": "PRIORITY",
    }
    env = ENVELOPE.read(body)
    assert (env.max_tokens, env.stop, env.n) == (10, ["x"], 2)
    assert env.output == OutputFormat("json_schema", {"type": "object"})
    assert env.reasoning == Reasoning(enabled=False, budget_tokens=0)
    assert env.tool_choice == ToolChoice("none")
    assert [t.name for t in env.tools] == ["g"]
    assert [t.decl for t in env.native_tools] == [{"googleSearch": {}}]
    assert env.service_tier == "priority"
    assert env.sources["reasoning"] == "generation_config.thinking_config"
    assert env.sources["tool_choice"] == "tool_config.function_calling_config"
    assert env.native == {"safety_settings": []}
    assert env.native_affects_output == {"safety_settings"}


@pytest.mark.parametrize(
    ("settings", "output"),
    [
        pytest.param({"responseMimeType": "application/json"}, OutputFormat("json_object"), id="json_object"),
        pytest.param({"responseMimeType": "text/plain"}, OutputFormat("text"), id="text"),
        pytest.param(
            {"responseJsonSchema": {"type": "string"}},
            OutputFormat("json_schema", {"type": "string"}),
            id="schema-only",
        ),
    ],
)
def test_output_formats_are_read(settings: dict[str, Any], output: OutputFormat) -> None:
    env = ENVELOPE.read({"contents": [], "generationConfig": settings})
    assert env.output == output
    assert env.native == {}


def test_enum_output_stays_native_and_changes_the_answer() -> None:
    settings = {"responseMimeType": "text/x.enum", "responseSchema": {"type": "STRING", "enum": ["a", "b"]}}
    env = ENVELOPE.read({"contents": [], "generationConfig": settings})
    assert env.output is None
    assert env.native_affects_output == {
        "generationConfig.responseMimeType",
        "generationConfig.responseSchema",
    }


def test_tool_config_with_more_than_the_calling_mode_stays_native_too() -> None:
    config = {"functionCallingConfig": {"mode": "AUTO"}, "retrievalConfig": {"languageCode": "fr"}}
    env = ENVELOPE.read({"contents": [], "toolConfig": config})
    assert env.tool_choice == ToolChoice("auto")
    assert env.native == {"toolConfig": config}
    body, lost = build(env)
    assert lost == []
    assert body["toolConfig"] == config  # written back whole to Gemini


def test_unknown_tool_is_reported_by_the_reader() -> None:
    env = ENVELOPE.read({"contents": [], "tools": [{"someFutureTool": {}}]})
    assert [(u.where, u.affects_output) for u in env.dropped] == [("tools[0]", True)]


# ---------------------------------------------------------------------- round trip


def test_round_trip_own_canonical_own() -> None:
    env = ENVELOPE.read(FULL, model="gemini-2.5-flash")
    body, lost = build(env)
    assert lost == []
    expected = json.loads(json.dumps(FULL))
    # Gemini's OpenAPI `parameters` come back as the equivalent JSON Schema.
    forecast = expected["tools"][0]["functionDeclarations"][1]
    forecast["parametersJsonSchema"] = env.tools[1].parameters
    del forecast["parameters"]
    assert body["contents"] == CONVERSATION["contents"]
    assert {k: v for k, v in body.items() if k != "contents"} == {
        k: v for k, v in expected.items() if k not in ("contents", "systemInstruction")
    }


@pytest.mark.parametrize(
    "thinking",
    [
        {"thinkingLevel": "MINIMAL"},
        {"thinkingLevel": "HIGH", "includeThoughts": True},
        {"thinkingBudget": -1},
        {"thinkingBudget": 0},
        {"includeThoughts": True},
    ],
)
def test_thinking_round_trips(thinking: dict[str, Any]) -> None:
    env = ENVELOPE.read({"contents": [], "generationConfig": {"thinkingConfig": thinking}})
    body, lost = build(env)
    assert body["generationConfig"]["thinkingConfig"] == thinking
    assert lost == []


@pytest.mark.parametrize(
    "config",
    [
        {"mode": "AUTO"},
        {"mode": "NONE"},
        {"mode": "ANY"},
        {"mode": "ANY", "allowedFunctionNames": ["f"]},
        {"mode": "VALIDATED", "allowedFunctionNames": ["f", "g"]},
    ],
)
def test_tool_config_round_trips(config: dict[str, Any]) -> None:
    env = ENVELOPE.read({"contents": [], "toolConfig": {"functionCallingConfig": config}})
    body, _ = build(env)
    assert body["toolConfig"] == {"functionCallingConfig": config}


# ---------------------------------------------------------------------- written from other protocols


def env_from(origin: str, **kw: Any) -> Envelope:
    return Envelope(origin=origin, **kw)


@pytest.mark.parametrize(
    ("choice", "strict", "expected"),
    [
        pytest.param(ToolChoice("auto"), None, {"mode": "AUTO"}, id="auto"),
        pytest.param(ToolChoice("none"), None, {"mode": "NONE"}, id="none"),
        pytest.param(ToolChoice("required"), None, {"mode": "ANY"}, id="required"),
        pytest.param(
            ToolChoice("required", ("f",)), None, {"mode": "ANY", "allowedFunctionNames": ["f"]}, id="named"
        ),
        pytest.param(
            ToolChoice("auto", ("f", "g")),
            None,
            {"mode": "VALIDATED", "allowedFunctionNames": ["f", "g"]},
            id="allowed",
        ),
        pytest.param(ToolChoice("validated"), None, {"mode": "VALIDATED"}, id="validated"),
        pytest.param(None, True, {"mode": "VALIDATED"}, id="strict"),
        pytest.param(ToolChoice("auto"), True, {"mode": "VALIDATED"}, id="strict-auto"),
        pytest.param(ToolChoice("required"), True, {"mode": "ANY"}, id="strict-required"),
        pytest.param(None, False, None, id="not-strict"),
    ],
)
def test_tool_choice_from_chat(
    choice: ToolChoice | None, strict: bool | None, expected: dict[str, Any] | None
) -> None:
    tools = [FunctionTool("f", "d", {"type": "object"}, strict), FunctionTool("g", None, None, strict)]
    body, lost = build(env_from("openai-chat", tools=tools, tool_choice=choice))
    assert body.get("toolConfig") == ({"functionCallingConfig": expected} if expected else None)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "f", "description": "d", "parametersJsonSchema": {"type": "object"}},
                {"name": "g"},
            ]
        }
    ]
    assert lost == []


def test_names_with_mode_none_are_reported() -> None:
    _, lost = build(env_from("openai-responses", tool_choice=ToolChoice("none", ("f",))))
    assert fields(lost) == ["tool_choice"]


@pytest.mark.parametrize(
    ("reasoning", "model", "thinking"),
    [
        pytest.param(
            Reasoning(effort="low"),
            "gemini-2.5-flash",
            {"thinkingBudget": effort_budget("low")},
            id="effort-2.5",
        ),
        pytest.param(
            Reasoning(effort="high", summary="detailed"),
            "gemini-3-pro",
            {"thinkingLevel": "HIGH", "includeThoughts": True},
            id="effort-3",
        ),
        pytest.param(Reasoning(effort="none"), "gemini-3-pro", {"thinkingBudget": 0}, id="none"),
        pytest.param(
            Reasoning(enabled=True, budget_tokens=5000, summary="auto"),
            None,
            {"thinkingBudget": 5000, "includeThoughts": True},
            id="anthropic-budget",
        ),
        pytest.param(Reasoning(enabled=False), None, {"thinkingBudget": 0}, id="disabled"),
        pytest.param(Reasoning(enabled=True), None, {"thinkingBudget": -1}, id="enabled-dynamic"),
        pytest.param(
            Reasoning(effort="medium", include_encrypted=True),
            "gemini-2.5-pro",
            {"thinkingBudget": 2048},
            id="encrypted",
        ),
    ],
)
def test_reasoning_from_other_protocols(
    reasoning: Reasoning, model: str | None, thinking: dict[str, Any]
) -> None:
    body, lost = build(env_from("openai-responses", model=model, reasoning=reasoning))
    assert body["generationConfig"]["thinkingConfig"] == thinking
    assert lost == []


@pytest.mark.parametrize(
    ("output", "settings"),
    [
        pytest.param(
            OutputFormat("json_schema", {"type": "object"}, name="answer", strict=True),
            {"responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}},
            id="json_schema",
        ),
        pytest.param(OutputFormat("json_object"), {"responseMimeType": "application/json"}, id="json_object"),
        pytest.param(OutputFormat("text"), {"responseMimeType": "text/plain"}, id="text"),
    ],
)
def test_output_from_chat(output: OutputFormat, settings: dict[str, Any]) -> None:
    body, lost = build(env_from("openai-chat", output=output))
    assert body["generationConfig"] == settings
    assert lost == []


def test_generation_settings_from_chat() -> None:
    env = env_from(
        "openai-chat",
        max_tokens=50,
        temperature=0.3,
        top_p=0.8,
        top_k=5,
        seed=9,
        n=3,
        stop=["a", "b"],
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        include_usage=True,
    )
    body, lost = build(env)
    assert body["generationConfig"] == {
        "maxOutputTokens": 50,
        "temperature": 0.3,
        "topP": 0.8,
        "topK": 5,
        "seed": 9,
        "candidateCount": 3,
        "stopSequences": ["a", "b"],
        "presencePenalty": 0.5,
        "frequencyPenalty": -0.5,
    }
    assert lost == []  # include_usage: Gemini always reports usage


def test_built_in_tools_from_anthropic_and_responses() -> None:
    native = [
        NativeTool(
            "anthropic",
            {"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["a.b"]},
            "web_search",
        ),
        NativeTool(
            "openai-responses", {"type": "code_interpreter", "container": {"type": "auto"}}, "code_execution"
        ),
        NativeTool("anthropic", {"type": "web_fetch_20250910", "name": "web_fetch"}, "url_context"),
        NativeTool("openai-responses", {"type": "file_search", "vector_store_ids": ["vs"]}, "file_search"),
        NativeTool("anthropic", {"type": "computer_20250124", "name": "computer"}, "computer_use"),
        NativeTool("openai-responses", {"type": "mcp", "server_label": "x"}, "mcp"),
    ]
    body, lost = build(env_from("anthropic", native_tools=native))
    assert body["tools"] == [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}]
    assert fields(lost) == ["tools.options", "tools.options", "native_tools", "native_tools", "native_tools"]
    assert "allowed_domains" in lost[0].what


def test_what_gemini_cannot_carry_is_reported() -> None:
    tools = [
        FunctionTool("f", None, {"type": "object"}, cache_control={"type": "ephemeral"}),
        FunctionTool("patch", "apply a patch", kind="custom", format={"type": "grammar"}),
    ]
    env = env_from(
        "openai-responses",
        tools=tools,
        parallel_tool_calls=False,
        user="u-1",
        metadata={"Session": "A B"},
        service_tier="scale",
    )
    body, lost = build(env)
    assert [t["name"] for t in body["tools"][0]["functionDeclarations"]] == ["f"]
    assert sorted(str(f) for f in fields(lost)) == [
        "metadata",
        "parallel_tool_calls",
        "service_tier",
        "tools.cache_control",
        "tools.custom",
        "user",
    ]
    assert {u.field for u in lost if u.affects_output} == {"tools.custom", "parallel_tool_calls"}


@pytest.mark.parametrize(
    ("tier", "written"),
    [
        ("auto", None),
        ("default", "standard"),
        ("standard_only", "standard"),
        ("flex", "flex"),
        ("priority", "priority"),
    ],
)
def test_service_tier(tier: str, written: str | None) -> None:
    body, lost = build(env_from("openai-chat", service_tier=tier))
    assert body.get("serviceTier") == written
    assert lost == []


def test_store_and_label_metadata() -> None:
    body, lost = build(env_from("openai-responses", store=False, metadata={"team": "a-1", "run_id": "x_2"}))
    assert (body["store"], body["labels"]) == (False, {"team": "a-1", "run_id": "x_2"})
    assert lost == []


def test_parallel_tool_calls_allowed_is_gemini_default() -> None:
    _, lost = build(env_from("openai-chat", parallel_tool_calls=True))
    assert lost == []


# ---------------------------------------------------------------------- convert_request


def test_gemini_fields_that_change_the_answer_are_refused_elsewhere() -> None:
    with pytest.raises(ms.UnsupportedParamsError) as info:
        ms.convert_request(FULL, protocol="gemini", to="openai-chat", path_model="gemini-2.5-flash")
    assert set(info.value.fields) >= {
        "safetySettings",
        "cachedContent",
        "generationConfig.responseModalities",
        "generationConfig.speechConfig",
        "generationConfig.imageConfig",
    }


def test_dropped_with_drop_params_and_reported() -> None:
    out = ms.convert_request(
        FULL, protocol="gemini", to="anthropic", path_model="claude-sonnet-4-5", drop_params=True
    )
    whats = " ".join(d.what for d in out.dropped if d.kind == "request_field")
    for name in (
        "safetySettings",
        "cachedContent",
        "generationConfig.mediaResolution",
        "generationConfig.logprobs",
    ):
        assert name in whats


def test_same_protocol_is_passed_through() -> None:
    out = ms.convert_request(FULL, protocol="gemini", to="gemini", path_model="gemini-2.5-flash")
    assert out.body == FULL
    assert [d for d in out.dropped if d.kind == "request_field"] == []
