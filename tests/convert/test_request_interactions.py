"""The Interactions request envelope codec: every field read into canonical terms, written from every protocol.

Bodies written for Interactions are checked by google-genai's own request model
(``CreateModelInteraction``, the type ``client.interactions.create`` sends). Its models allow
extra fields and unknown tool variants and its enums take any string, so the check walks the
validated model and refuses each of those: an unknown name or value fails. The full body
(request_bodies/google_interactions.json) sets every documented request field of a model
interaction.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pydantic
import pytest
from google import genai
from google.genai import types as genai_types
from google.genai._gaos.types import UnrecognizedStr
from google.genai._gaos.types.interactions import CreateModelInteraction

import maas_stream as ms
from maas_stream._envelope import (
    Envelope,
    FunctionTool,
    NativeTool,
    OutputFormat,
    Reasoning,
    ToolChoice,
    Unread,
)
from maas_stream.protocols.google_interactions import ENVELOPE
from tests import oracles
from tests.convert.test_request_gemini import sdk_check as gemini_check

BODIES = Path(__file__).parent / "request_bodies"
FULL: dict[str, Any] = json.loads((BODIES / "google_interactions.json").read_text())
CONVERSATION: dict[str, Any] = {
    "input": [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}]
}
ANY_MODEL = {"*": ms.ModelCaps()}
"""The protocols' table, not a model's: every model accepts every parameter."""


def sdk_faults(body: dict[str, Any]) -> list[str]:
    """What google-genai's ``CreateModelInteraction`` does not know in ``body`` (empty: all known)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            model = CreateModelInteraction.model_validate(body)
        except pydantic.ValidationError as exc:
            return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    return _unknown(model, "")


def _unknown(value: Any, path: str) -> list[str]:
    if isinstance(value, pydantic.BaseModel):
        # __dict__, not getattr: reading a deprecated field (temperature) would warn.
        fields = value.__dict__
        faults = [f"{path}{k}: not declared by the SDK" for k in value.model_extra or {}]
        if fields.get("is_unknown") is True:
            faults.append(f"{path.rstrip('.')}: an unknown variant ({fields.get('raw')})")
        for k, v in fields.items():
            if k != "raw":
                faults += _unknown(v, f"{path}{k}.")
        return faults
    if isinstance(value, list):
        return [f for i, v in enumerate(value) for f in _unknown(v, f"{path}{i}.")]
    if isinstance(value, UnrecognizedStr) and path != "model.":  # model names are open-ended
        return [f"{path.rstrip('.')}: {value!r} is no value the SDK knows"]
    return []


def sdk_check(body: dict[str, Any]) -> None:
    """google-genai's request model knows every field and value of ``body``."""
    assert sdk_faults(body) == []


def build(env: Envelope) -> tuple[dict[str, Any], list[Unread]]:
    lost: list[Unread] = []
    body = ENVELOPE.build(CONVERSATION, env, lost)
    sdk_check(body)
    return body, lost


def fields(lost: list[Unread]) -> list[str | None]:
    return [u.field for u in lost]


# ---------------------------------------------------------------------- the oracle


def test_the_full_body_is_a_request_the_sdk_accepts() -> None:
    sdk_check(FULL)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"bogus": 1}, id="unknown_field"),
        pytest.param({"generation_config": {"bogus": 1}}, id="unknown_setting"),
        pytest.param({"generation_config": {"thinking_level": "LOW"}}, id="unknown_level"),
        pytest.param({"tools": [{"type": "bogus"}]}, id="unknown_tool"),
        pytest.param({"tools": [{"type": "function", "name": "f", "strict": True}]}, id="strict"),
        pytest.param({"generation_config": {"max_output_tokens": "many"}}, id="string_limit"),
    ],
)
def test_the_oracle_refuses_what_the_sdk_does_not_declare(bad: dict[str, Any]) -> None:
    assert sdk_faults({"model": "m", "input": "hi", **bad}) != []


# ---------------------------------------------------------------------- read


def test_full_body_is_read_into_canonical_terms() -> None:
    env = ENVELOPE.read(FULL)
    assert (env.model, env.stream, env.max_tokens, env.temperature, env.top_p) == (
        "gemini-3-flash-preview",
        True,
        2048,
        0.4,
        0.95,
    )
    assert (env.seed, env.stop) == (1234, ["\n\nEND"])
    assert env.reasoning == Reasoning(enabled=True, effort="medium", summary="auto")
    assert env.tool_choice == ToolChoice("required", ("get_weather", "get_forecast"))
    assert env.output == OutputFormat("json_schema", FULL["response_format"]["schema"])
    assert [t.name for t in env.tools] == ["get_weather", "get_forecast"]
    assert [(t.category, t.decl["type"]) for t in env.native_tools] == [
        ("web_search", "google_search"),
        ("code_execution", "code_execution"),
        ("url_context", "url_context"),
        ("mcp", "mcp_server"),
    ]
    assert (env.store, env.service_tier, env.metadata) == (True, "flex", {"team": "weather", "env": "prod"})
    assert env.dropped == []
    assert env.sources == {
        "max_tokens": "generation_config.max_output_tokens",
        "temperature": "generation_config.temperature",
        "top_p": "generation_config.top_p",
        "seed": "generation_config.seed",
        "stop": "generation_config.stop_sequences",
        "reasoning": "generation_config.thinking_level",
        "reasoning.summary": "generation_config.thinking_summaries",
        "tool_choice": "generation_config.tool_choice",
        "output": "response_format",
        "store": "store",
        "service_tier": "service_tier",
        "metadata": "labels",
        "tools": "tools",
    }
    # background: false is the default and read as such; the rest travels natively.
    assert env.native == {
        "safety_settings": FULL["safety_settings"],
        "previous_interaction_id": FULL["previous_interaction_id"],
        "generation_config.speech_config": FULL["generation_config"]["speech_config"],
    }
    assert env.native_affects_output == set(env.native)


def test_what_google_genai_sends_is_what_is_read() -> None:
    """The body ``client.interactions.create(**FULL)`` puts on the wire reads the same."""
    seen: list[dict[str, Any]] = []

    def capture(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json={"id": "v1_x", "status": "completed", "steps": []})

    http = httpx2.Client(transport=httpx2.MockTransport(capture))
    options = genai_types.HttpOptions(base_url="http://sdk/", api_version="v1beta", httpx_client=http)
    client = genai.Client(api_key="k", http_options=options)
    sent = {k: v for k, v in FULL.items() if k != "stream"}
    client.interactions.create(**sent)
    (wire,) = seen
    assert wire == sent
    assert ENVELOPE.read(wire) == ENVELOPE.read(sent)


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        pytest.param("auto", ToolChoice("auto"), id="auto"),
        pytest.param("any", ToolChoice("required"), id="any"),
        pytest.param("none", ToolChoice("none"), id="none"),
        pytest.param("validated", ToolChoice("validated"), id="validated"),
        pytest.param(
            {"allowed_tools": {"mode": "any", "tools": ["f"]}}, ToolChoice("required", ("f",)), id="named"
        ),
        pytest.param(
            {"allowed_tools": {"tools": ["f", "g"]}}, ToolChoice("auto", ("f", "g")), id="mode_default"
        ),
        pytest.param("ANY", None, id="wrong_case_native"),
        pytest.param({"allowed_tools": {"mode": "any", "tools": [1]}}, None, id="bad_names_native"),
    ],
)
def test_tool_choice_is_read(raw: Any, read: ToolChoice | None) -> None:
    env = ENVELOPE.read({"model": "m", "input": "hi", "generation_config": {"tool_choice": raw}})
    assert env.tool_choice == read
    if read is None:  # kept whole, and refused elsewhere
        assert env.native == {"generation_config.tool_choice": raw}
        assert env.native_affects_output == {"generation_config.tool_choice"}


@pytest.mark.parametrize(
    ("body", "output", "native"),
    [
        pytest.param(
            {"response_format": {"type": "text", "mime_type": "application/json"}},
            OutputFormat("json_object"),
            {},
            id="json_object",
        ),
        pytest.param(
            {"response_format": [{"type": "text", "mime_type": "text/plain"}]},
            OutputFormat("text"),
            {},
            id="one_in_a_list",
        ),
        pytest.param(
            {"response_format": {"type": "object"}, "response_mime_type": "application/json"},
            OutputFormat("json_schema", {"type": "object"}),
            {},
            id="legacy_bare_schema",
        ),
        pytest.param(
            {
                "response_format": {
                    "type": "text",
                    "mime_type": "application/json",
                    "schema": {"type": "object"},
                },
                "response_mime_type": "application/json",
            },
            OutputFormat("json_schema", {"type": "object"}),
            {},
            id="both_spellings",
        ),
        pytest.param(
            {"response_mime_type": "application/json"}, OutputFormat("json_object"), {}, id="mime_only"
        ),
        pytest.param(
            {"response_format": {"type": "audio", "mime_type": "audio/wav"}},
            None,
            {"response_format": {"type": "audio", "mime_type": "audio/wav"}},
            id="audio_native",
        ),
    ],
)
def test_output_formats_are_read(
    body: dict[str, Any], output: OutputFormat | None, native: dict[str, Any]
) -> None:
    env = ENVELOPE.read({"model": "m", "input": "hi", **body})
    assert env.output == output
    assert env.native == native


def test_reasoning_fields_are_read_together_or_kept() -> None:
    def read(settings: dict[str, Any]) -> Envelope:
        return ENVELOPE.read({"model": "m", "input": "hi", "generation_config": settings})

    assert read({"thinking_level": "xhigh"}).reasoning == Reasoning(enabled=True, effort="xhigh")
    assert read({"thinking_summaries": "auto"}).reasoning == Reasoning(summary="auto")
    env = read({"thinking_level": "low", "thinking_summaries": "none"})
    assert (env.reasoning, env.native) == (Reasoning(enabled=True, effort="low"), {})
    env = read({"thinking_summaries": "none"})  # nothing said about thinking: native, reported elsewhere
    assert (env.reasoning, env.native) == (None, {"generation_config.thinking_summaries": "none"})
    env = read({"thinking_level": "extreme"})
    assert env.native_affects_output == {"generation_config.thinking_level"}


def test_tool_extras_and_bad_tools_are_reported() -> None:
    env = ENVELOPE.read(
        {
            "model": "m",
            "input": "hi",
            "tools": [{"type": "function", "name": "f", "defer_loading": True}, {"name": "no type"}, 3],
        }
    )
    assert [t.name for t in env.tools] == ["f"]
    assert [(d.what, d.where, d.affects_output) for d in env.dropped] == [
        ("tool field defer_loading", "tools[0]", False),
        ("tool of type None", "tools[1]", True),
        ("a tool that is not an object", "tools[2]", True),
    ]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            {"generation_config": {"tool_choice": {"allowed_tools": {"mode": ["any"]}}}}, id="list_mode"
        ),
        pytest.param(
            {"response_format": {"type": ["text"]}, "response_mime_type": "text/plain"}, id="list_type"
        ),
        pytest.param({"response_format": {"type": {}}, "response_mime_type": {}}, id="object_type"),
        pytest.param({"generation_config": {"thinking_level": [], "thinking_summaries": {}}}, id="levels"),
        pytest.param({"tools": [{"type": []}], "labels": {"a": 1}, "service_tier": 3}, id="tools_labels"),
    ],
)
def test_values_of_the_wrong_type_are_kept_not_fatal(body: dict[str, Any]) -> None:
    env = ENVELOPE.read({"model": "m", "input": "hi", **body})
    assert (env.tool_choice, env.output, env.reasoning, env.metadata) == (None, None, None, None)
    assert env.native or env.dropped  # nothing vanished


def test_nulls_are_the_defaults() -> None:
    env = ENVELOPE.read(
        {"model": "m", "input": "hi", "store": None, "tools": None, "generation_config": {"seed": None}}
    )
    assert (env.store, env.seed, env.native, env.dropped) == (None, None, {}, [])


# ---------------------------------------------------------------------- write


def test_full_body_round_trips() -> None:
    """Read, then written back for Interactions: the same body (background: false is the default)."""
    env = ENVELOPE.read(FULL)
    conversation = ms.from_canonical(ms.to_canonical(FULL, "google-interactions"), "google-interactions")
    body = ENVELOPE.build(conversation, env)
    assert body == {k: v for k, v in FULL.items() if k != "background"}
    sdk_check(body)


@pytest.mark.parametrize(
    ("choice", "strict", "written"),
    [
        pytest.param(ToolChoice("auto"), False, "auto", id="auto"),
        pytest.param(ToolChoice("required"), False, "any", id="required"),
        pytest.param(ToolChoice("none"), False, "none", id="none"),
        pytest.param(ToolChoice("validated"), False, "validated", id="validated"),
        pytest.param(
            ToolChoice("required", ("f",)),
            False,
            {"allowed_tools": {"mode": "any", "tools": ["f"]}},
            id="named",
        ),
        pytest.param(
            ToolChoice("auto", ("f", "g")),
            False,
            {"allowed_tools": {"mode": "auto", "tools": ["f", "g"]}},
            id="allowed",
        ),
        pytest.param(None, True, "validated", id="strict_alone"),
        pytest.param(ToolChoice("auto"), True, "validated", id="strict_auto"),
        pytest.param(ToolChoice("required"), True, "any", id="strict_required"),
    ],
)
def test_tool_choice_is_written(choice: ToolChoice | None, strict: bool, written: Any) -> None:
    tools = [FunctionTool("f", parameters={"type": "object"}, strict=strict or None), FunctionTool("g")]
    body, lost = build(Envelope(model="m", tools=tools, tool_choice=choice, origin="openai-chat"))
    assert body["generation_config"]["tool_choice"] == written
    assert lost == []
    assert body["tools"] == [
        {"type": "function", "name": "f", "parameters": {"type": "object"}},
        {"type": "function", "name": "g"},
    ]


def test_names_with_mode_none_are_reported() -> None:
    body, lost = build(Envelope(model="m", tools=[FunctionTool("f")], tool_choice=ToolChoice("none", ("f",))))
    assert body["generation_config"]["tool_choice"] == "none"
    assert fields(lost) == ["tool_choice"]


@pytest.mark.parametrize(
    ("reasoning", "written"),
    [
        pytest.param(Reasoning(effort="high"), {"thinking_level": "high"}, id="effort"),
        pytest.param(
            Reasoning(enabled=True, budget_tokens=2048, summary="auto"),
            {"thinking_level": "medium", "thinking_summaries": "auto"},
            id="budget",
        ),
        pytest.param(Reasoning(budget_tokens=-1), {"thinking_level": "medium"}, id="dynamic_budget"),
        pytest.param(Reasoning(enabled=False), {"thinking_level": "minimal"}, id="off_is_minimal"),
        pytest.param(
            Reasoning(effort="none", summary="auto"), {"thinking_level": "minimal"}, id="none_no_summary"
        ),
        pytest.param(Reasoning(summary="detailed"), {"thinking_summaries": "auto"}, id="summary_only"),
    ],
)
def test_reasoning_is_written(reasoning: Reasoning, written: dict[str, Any]) -> None:
    body, lost = build(Envelope(model="m", reasoning=reasoning, origin="anthropic"))
    assert body["generation_config"] == written
    assert lost == []


@pytest.mark.parametrize(
    ("output", "written"),
    [
        pytest.param(
            OutputFormat("json_schema", {"type": "object"}, "answer", strict=True),
            {"type": "text", "mime_type": "application/json", "schema": {"type": "object"}},
            id="schema",
        ),
        pytest.param(
            OutputFormat("json_schema"), {"type": "text", "mime_type": "application/json"}, id="schemaless"
        ),
        pytest.param(
            OutputFormat("json_object"), {"type": "text", "mime_type": "application/json"}, id="json_object"
        ),
        pytest.param(OutputFormat("text"), {"type": "text", "mime_type": "text/plain"}, id="text"),
    ],
)
def test_output_is_written(output: OutputFormat, written: dict[str, Any]) -> None:
    body, lost = build(Envelope(model="m", output=output))
    assert body["response_format"] == written
    assert lost == []


def test_fields_without_a_place_are_reported() -> None:
    env = Envelope(
        model="m",
        top_k=5,
        n=2,
        presence_penalty=0.1,
        frequency_penalty=0.2,
        user="u-1",
        parallel_tool_calls=False,
        service_tier="scale",
        metadata={"Team": "Weather Ops"},
        tools=[FunctionTool("sql", kind="custom"), FunctionTool("f", cache_control={"type": "ephemeral"})],
        origin="openai-responses",
    )
    body, lost = build(env)
    assert sorted(f for f in fields(lost) if f is not None) == sorted(
        [
            "top_k",
            "n",
            "presence_penalty",
            "frequency_penalty",
            "user",
            "parallel_tool_calls",
            "service_tier",
            "metadata",
            "tools.custom",
            "tools.cache_control",
        ]
    )
    assert body["tools"] == [{"type": "function", "name": "f"}]
    assert "labels" not in body
    assert "service_tier" not in body


def test_parallel_calls_allowed_is_the_default_and_labels_that_fit_are_kept() -> None:
    env = Envelope(
        model="m",
        parallel_tool_calls=True,
        metadata={"team": "wx"},
        service_tier="default",
        origin="openai-chat",
    )
    body, lost = build(env)
    assert lost == []
    assert (body["labels"], body["service_tier"]) == ({"team": "wx"}, "standard")


def test_store_is_off_unless_the_client_said() -> None:
    assert build(Envelope(model="m", origin="anthropic"))[0]["store"] is False
    assert build(Envelope(model="m", store=True, origin="openai-responses"))[0]["store"] is True
    assert "store" not in build(Envelope(model="m", origin="google-interactions"))[0]


@pytest.mark.parametrize(
    ("tool", "written", "lost"),
    [
        pytest.param(
            NativeTool(
                "openai-responses",
                {"type": "web_search", "filters": {"allowed_domains": ["a.b"]}},
                "web_search",
            ),
            {"type": "google_search"},
            ["tools.options"],
            id="responses_web_search",
        ),
        pytest.param(
            NativeTool(
                "anthropic", {"type": "code_execution_20250825", "name": "code_execution"}, "code_execution"
            ),
            {"type": "code_execution"},
            [],
            id="anthropic_code_execution",
        ),
        pytest.param(
            NativeTool("anthropic", {"type": "web_fetch_20250910", "name": "web_fetch"}, "url_context"),
            {"type": "url_context"},
            [],
            id="anthropic_web_fetch",
        ),
        pytest.param(
            NativeTool("gemini", {"fileSearch": {"fileSearchStoreNames": ["s"], "topK": 3}}, "file_search"),
            {"type": "file_search", "file_search_store_names": ["s"], "top_k": 3},
            [],
            id="gemini_file_search_same_stores",
        ),
        pytest.param(
            NativeTool("gemini", {"googleSearch": {"timeRangeFilter": {}}}, "web_search"),
            {"type": "google_search"},
            ["tools.options"],
            id="gemini_search_option",
        ),
        pytest.param(
            NativeTool("openai-responses", {"type": "file_search", "vector_store_ids": ["v"]}, "file_search"),
            None,
            ["native_tools"],
            id="openai_vector_store",
        ),
        pytest.param(
            NativeTool("openai-responses", {"type": "mcp", "server_label": "x"}, "mcp"),
            None,
            ["native_tools"],
            id="mcp",
        ),
    ],
)
def test_built_in_tools_of_other_protocols(
    tool: NativeTool, written: dict[str, Any] | None, lost: list[str]
) -> None:
    body, unread = build(Envelope(model="m", native_tools=[tool], origin=tool.protocol))
    assert body.get("tools") == ([written] if written is not None else None)
    assert fields(unread) == lost


# ---------------------------------------------------------------------- across protocols

OTHERS = ["openai-chat", "openai-responses", "anthropic", "gemini"]


def _full(protocol: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((BODIES / f"{protocol.replace('-', '_')}.json").read_text())
    return body


@pytest.mark.parametrize("client", OTHERS)
def test_every_protocols_full_body_becomes_a_body_the_sdk_accepts(client: str) -> None:
    body = _full(client)
    converted = ms.convert_request(
        body,
        protocol=client,
        to="google-interactions",
        path_model="gemini-3-flash-preview" if client == "gemini" else None,
        drop_params=True,
        caps=ANY_MODEL,
    )
    out = converted.body
    sdk_check(out)
    assert ms.validate(out, "google-interactions") == []
    env = converted.envelope
    # Each canonical setting of the client's body is in the Interactions body, or reported.
    back = ENVELOPE.read(out)
    lost = {f.path for f in converted.lost_fields}
    for name in ("max_tokens", "temperature", "top_p", "seed", "stop", "tool_choice", "output", "reasoning"):
        if getattr(env, name) is not None and env.source(name) not in lost:
            assert getattr(back, name) is not None, name
    assert [t.name for t in back.tools] == [t.name for t in env.tools if t.kind == "function"]
    assert out["store"] is (env.store if env.store is not None else False)


@pytest.mark.parametrize("target", OTHERS)
def test_the_full_body_becomes_a_body_each_target_sdk_accepts(target: str) -> None:
    converted = ms.convert_request(
        FULL, protocol="google-interactions", to=target, drop_params=True, caps=ANY_MODEL
    )
    out = converted.body
    assert ms.validate(out, target) == []
    if target == "openai-chat":
        assert oracles.chat_request(out) == out
    elif target == "openai-responses":
        assert oracles.responses_request(out) == out
    elif target == "anthropic":
        assert oracles.anthropic_request(out) == []
    else:
        gemini_check(out)
    # What changes the answer and cannot go is named in the client's own terms.
    refused = {f.path for f in converted.lost_fields if f.affects_output}
    assert {"previous_interaction_id", "safety_settings", "generation_config.speech_config"} <= refused


def test_what_changes_the_answer_is_refused_naming_the_clients_field() -> None:
    body = {"model": "m", "input": "hi", "previous_interaction_id": "v1_x", "background": True}
    with pytest.raises(ms.UnsupportedParamsError) as info:
        ms.convert_request(body, protocol="google-interactions", to="anthropic")
    assert sorted(info.value.fields) == ["background", "previous_interaction_id"]


def test_the_same_protocol_passes_through_untouched() -> None:
    converted = ms.convert_request(
        FULL, protocol="google-interactions", to="google-interactions", model="other"
    )
    assert converted.body == {**FULL, "model": "other"}
    assert converted.dropped == []


@pytest.mark.parametrize(
    ("client", "body", "expected"),
    [
        pytest.param(
            "openai-chat",
            {
                "model": "gpt-5",
                "messages": [{"role": "user", "content": "hi"}],
                "reasoning_effort": "low",
                "tool_choice": {"type": "function", "function": {"name": "f"}},
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
                "response_format": {"type": "json_object"},
                "stop": ["x"],
                "max_completion_tokens": 10,
            },
            {
                "max_output_tokens": 10,
                "stop_sequences": ["x"],
                "thinking_level": "low",
                "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["f"]}},
            },
            id="chat",
        ),
        pytest.param(
            "anthropic",
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 100,
                "messages": [{"role": "user", "content": "hi"}],
                "thinking": {"type": "enabled", "budget_tokens": 4096},
                "tool_choice": {"type": "any"},
                "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            },
            {
                "max_output_tokens": 100,
                "thinking_level": "high",
                "thinking_summaries": "auto",
                "tool_choice": "any",
            },
            id="anthropic",
        ),
    ],
)
def test_other_clients_settings_land_in_generation_config(
    client: str, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    out = ms.convert_request(body, protocol=client, to="google-interactions", caps=ANY_MODEL).body
    sdk_check(out)
    assert out["generation_config"] == expected
    assert out["input"][0]["type"] == "user_input"
