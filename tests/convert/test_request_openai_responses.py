"""The Responses request envelope codec: reading every request field, writing from any protocol.

Reads: each documented field of ``POST /v1/responses`` becomes a canonical field (with the
client's own field path in ``sources``) or a native one. Writes: envelopes of the other
protocols (built here as :class:`Envelope` objects) become Responses fields, and what Responses
cannot carry is reported with its canonical name. Every body the writer produces is accepted,
key for key, by the openai SDK's ``ResponseCreateParamsStreaming`` (``tests.oracles``).
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
)
from maas_stream.protocols.openai_responses._envelope import AFFECTS_OUTPUT, ENVELOPE
from tests.oracles import responses_request

NAME = "openai-responses"
BODY_FILE = Path(__file__).parent / "request_bodies" / "openai_responses.json"
SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CONVERSATION: Any = {"input": "hi"}
GRAMMAR: Any = {"type": "grammar", "syntax": "regex", "definition": "[0-9]+"}


def full_body() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(BODY_FILE.read_text(encoding="utf-8"))
    return body


def read(body: dict[str, Any]) -> Envelope:
    return ENVELOPE.read({"model": "m", "input": "hi", **body})


def build(env: Envelope) -> tuple[dict[str, Any], list[Unread]]:
    """A body written from ``env``, checked against the SDK's request type, and what was lost."""
    lost: list[Unread] = []
    body = ENVELOPE.build(CONVERSATION, env, lost)
    assert responses_request(body) == body, "the SDK request type left keys out or rejected it"
    return body, lost


def lost_fields(lost: list[Unread]) -> list[tuple[str | None, bool]]:
    return [(u.field, u.affects_output) for u in lost]


# ------------------------------------------------------------------------------------ read


def test_the_full_body_is_a_valid_sdk_request() -> None:
    body = full_body()
    assert responses_request(body) == body


def test_the_full_body_reads_every_field() -> None:
    body = full_body()
    env = ENVELOPE.read(body)
    assert (env.model, env.stream, env.max_tokens, env.temperature, env.top_p) == (
        "gpt-5.5",
        True,
        4096,
        0.7,
        0.9,
    )
    assert [(t.name, t.kind, t.strict) for t in env.tools] == [
        ("get_weather", "function", True),
        ("book_hotel", "function", False),
        ("sql", "custom", None),
    ]
    assert env.tools[2].format == body["tools"][2]["format"]
    assert [t.category for t in env.native_tools] == [
        "web_search",
        "file_search",
        "code_execution",
        "computer_use",
        "mcp",
        "image_generation",
        "shell",
        "apply_patch",
        "tool_search",
        "namespace",
    ]
    assert env.tool_choice == ToolChoice("auto", ("get_weather", "sql"))
    assert env.parallel_tool_calls is True
    assert env.reasoning == Reasoning(enabled=True, effort="high", summary="auto", include_encrypted=True)
    assert env.output == OutputFormat(
        "json_schema", body["text"]["format"]["schema"], "packing_list", "What to pack.", True
    )
    assert (env.store, env.metadata, env.user, env.service_tier) == (
        False,
        {"session": "s-42", "app": "trip-planner"},
        "user-7f3a9c",
        "flex",
    )
    assert env.sources == {
        "max_tokens": "max_output_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "tools": "tools",
        "tool_choice": "tool_choice",
        "parallel_tool_calls": "parallel_tool_calls",
        "reasoning": "reasoning",
        "output": "text.format",
        "store": "store",
        "metadata": "metadata",
        "user": "safety_identifier",
        "service_tier": "service_tier",
    }
    assert set(env.native) == {
        "access_programs",
        "background",
        "background_options",
        "context_management",
        "conversation",
        "image",
        "include",
        "max_tool_calls",
        "moderation",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning.context",
        "reasoning.mode",
        "stream_options",
        "text.verbosity",
        "top_logprobs",
        "truncation",
        "user",
    }
    assert env.native_affects_output == {
        "previous_response_id",
        "conversation",
        "prompt",
        "moderation",
        "reasoning.mode",
    }
    # Tool fields no other protocol has are reported, as not changing the answer.
    assert [(u.field, u.affects_output) for u in env.dropped] == [
        ("tools[1].defer_loading", False),
        ("tools[1].output_schema", False),
    ]


@pytest.mark.parametrize(
    ("tool", "strict"),
    [
        pytest.param({}, None, id="absent_is_the_api_default"),
        pytest.param({"strict": None}, None, id="null_is_the_api_default"),
        pytest.param({"strict": True}, True, id="true"),
        pytest.param({"strict": False}, False, id="false"),
    ],
)
def test_function_tool_strict(tool: dict[str, Any], strict: bool | None) -> None:
    env = read({"tools": [{"type": "function", "name": "w", "parameters": SCHEMA, **tool}]})
    assert env.tools == [FunctionTool("w", None, SCHEMA, strict)]


def test_custom_tool_with_a_grammar() -> None:
    env = read({"tools": [{"type": "custom", "name": "n", "description": "digits", "format": GRAMMAR}]})
    assert env.tools == [FunctionTool("n", "digits", kind="custom", format=GRAMMAR)]


@pytest.mark.parametrize(
    ("decl", "category"),
    [
        pytest.param({"type": "web_search"}, "web_search", id="web_search"),
        pytest.param({"type": "web_search_2025_08_26"}, "web_search", id="web_search_dated"),
        pytest.param({"type": "web_search_preview"}, "web_search", id="web_search_preview"),
        pytest.param({"type": "file_search", "vector_store_ids": ["vs"]}, "file_search", id="file_search"),
        pytest.param({"type": "code_interpreter", "container": "cntr_1"}, "code_execution", id="code"),
        pytest.param({"type": "computer"}, "computer_use", id="computer"),
        pytest.param(
            {"type": "computer_use_preview", "display_width": 1, "display_height": 1, "environment": "linux"},
            "computer_use",
            id="computer_use_preview",
        ),
        pytest.param({"type": "mcp", "server_label": "s", "server_url": "https://x"}, "mcp", id="mcp"),
        pytest.param({"type": "image_generation"}, "image_generation", id="image_generation"),
        pytest.param({"type": "local_shell"}, "local_shell", id="local_shell"),
        pytest.param({"type": "programmatic_tool_calling"}, "programmatic_tool_calling", id="programmatic"),
    ],
)
def test_built_in_tools_are_native_with_a_category(decl: dict[str, Any], category: str) -> None:
    env = read({"tools": [decl]})
    assert env.native_tools == [NativeTool(NAME, decl, category)]
    assert env.dropped == []


def test_a_tool_without_a_type_is_reported() -> None:
    env = read({"tools": [{"name": "x"}]})
    assert (env.tools, env.native_tools) == ([], [])
    assert [(u.where, u.affects_output) for u in env.dropped] == [("tools[0]", True)]


@pytest.mark.parametrize(
    ("choice", "canonical"),
    [
        pytest.param("auto", ToolChoice("auto"), id="auto"),
        pytest.param("none", ToolChoice("none"), id="none"),
        pytest.param("required", ToolChoice("required"), id="required"),
        pytest.param({"type": "function", "name": "w"}, ToolChoice("required", ("w",)), id="function"),
        pytest.param({"type": "custom", "name": "n"}, ToolChoice("required", ("n",)), id="custom"),
        pytest.param(
            {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "w"}]},
            ToolChoice("required", ("w",)),
            id="allowed_tools",
        ),
    ],
)
def test_tool_choice_shapes(choice: Any, canonical: ToolChoice) -> None:
    env = read({"tool_choice": choice})
    assert env.tool_choice == canonical
    assert env.sources["tool_choice"] == "tool_choice"
    assert "tool_choice" not in env.native


@pytest.mark.parametrize(
    "choice",
    [
        pytest.param({"type": "web_search_preview"}, id="hosted"),
        pytest.param({"type": "mcp", "server_label": "s"}, id="mcp"),
        pytest.param({"type": "shell"}, id="shell"),
        pytest.param({"type": "apply_patch"}, id="apply_patch"),
        pytest.param(
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": "w"}, {"type": "mcp"}],
            },
            id="allowed_built_in",
        ),
        pytest.param("sometimes", id="unknown"),
    ],
)
def test_tool_choice_of_built_ins_stays_native_and_changes_the_answer(choice: Any) -> None:
    env = read({"tool_choice": choice})
    assert env.tool_choice is None
    assert env.native == {"tool_choice": choice}
    assert env.native_affects_output == {"tool_choice"}


@pytest.mark.parametrize(
    ("body", "reasoning", "source"),
    [
        pytest.param(
            {"reasoning": {"effort": "low"}}, Reasoning(enabled=True, effort="low"), "reasoning", id="effort"
        ),
        pytest.param(
            {"reasoning": {"effort": "none"}}, Reasoning(enabled=False, effort="none"), "reasoning", id="none"
        ),
        pytest.param(
            {"reasoning": {"effort": "max"}}, Reasoning(enabled=True, effort="xhigh"), "reasoning", id="max"
        ),
        pytest.param(
            {"reasoning": {"generate_summary": "concise"}},
            Reasoning(summary="concise"),
            "reasoning",
            id="legacy",
        ),
        pytest.param(
            {"include": ["reasoning.encrypted_content"]},
            Reasoning(include_encrypted=True),
            "include",
            id="include",
        ),
    ],
)
def test_reasoning(body: dict[str, Any], reasoning: Reasoning, source: str) -> None:
    env = read(body)
    assert env.reasoning == reasoning
    assert env.sources["reasoning"] == source
    assert env.native == {}


def test_unknown_reasoning_values_stay_native_and_change_the_answer() -> None:
    env = read({"reasoning": {"effort": "extreme", "summary": "verbose", "context": "auto"}})
    assert env.reasoning is None
    assert env.native == {
        "reasoning.effort": "extreme",
        "reasoning.summary": "verbose",
        "reasoning.context": "auto",
    }
    assert env.native_affects_output == {"reasoning.effort", "reasoning.summary"}


@pytest.mark.parametrize(
    ("fmt", "output"),
    [
        pytest.param({"type": "text"}, OutputFormat("text"), id="text"),
        pytest.param({"type": "json_object"}, OutputFormat("json_object"), id="json_object"),
        pytest.param(
            {"type": "json_schema", "name": "x", "schema": SCHEMA},
            OutputFormat("json_schema", SCHEMA, "x"),
            id="json_schema",
        ),
    ],
)
def test_text_format(fmt: dict[str, Any], output: OutputFormat) -> None:
    env = read({"text": {"format": fmt, "verbosity": "high"}})
    assert env.output == output
    assert env.native == {"text.verbosity": "high"}
    assert env.native_affects_output == frozenset()  # verbosity is a style hint, like sampling


def test_a_format_without_schema_stays_native() -> None:
    env = read({"text": {"format": {"type": "json_schema", "name": "x"}}})
    assert env.output is None
    assert env.native_affects_output == {"text.format"}


@pytest.mark.parametrize(
    ("body", "user", "source", "native"),
    [
        pytest.param({"safety_identifier": "s"}, "s", "safety_identifier", {}, id="safety_identifier"),
        pytest.param({"user": "u"}, "u", "user", {}, id="user"),
        pytest.param(
            {"safety_identifier": "s", "user": "u"}, "s", "safety_identifier", {"user": "u"}, id="both"
        ),
    ],
)
def test_the_end_user_id(body: dict[str, Any], user: str, source: str, native: dict[str, Any]) -> None:
    env = read(body)
    assert (env.user, env.sources["user"], env.native) == (user, source, native)


def test_nulls_are_the_api_defaults() -> None:
    fields = ["tool_choice", "parallel_tool_calls", "reasoning", "include", "text", "store", "metadata"]
    env = read(dict.fromkeys([*fields, "user", "service_tier", "max_output_tokens"]))
    assert env.native == {}
    assert (env.tool_choice, env.reasoning, env.output, env.store, env.max_tokens) == (None,) * 5


def test_stateful_fields_are_native_and_change_the_answer() -> None:
    assert {"previous_response_id", "conversation", "prompt"} <= AFFECTS_OUTPUT
    env = read({"previous_response_id": "resp_1", "conversation": "conv_1"})
    assert env.native == {"previous_response_id": "resp_1", "conversation": "conv_1"}
    assert env.native_affects_output == {"previous_response_id", "conversation"}


# ---------------------------------------------------------------- write from other protocols


@pytest.mark.parametrize(
    ("origin", "strict", "written"),
    [
        pytest.param("openai-chat", True, True, id="chat_strict_true_is_explicit"),
        pytest.param("openai-chat", None, False, id="chat_default_is_not_strict"),
        pytest.param("anthropic", None, False, id="anthropic_default_is_not_strict"),
        pytest.param("gemini", None, False, id="gemini_default_is_not_strict"),
        pytest.param("openai-chat", False, False, id="chat_strict_false"),
    ],
)
def test_strict_is_always_explicit_from_another_protocol(
    origin: str, strict: bool | None, written: bool
) -> None:
    body, lost = build(Envelope(model="m", origin=origin, tools=[FunctionTool("w", "d", SCHEMA, strict)]))
    assert body["tools"] == [
        {"type": "function", "name": "w", "description": "d", "parameters": SCHEMA, "strict": written}
    ]
    assert lost == []


def test_responses_own_default_strict_is_left_to_the_api() -> None:
    lost: list[Unread] = []
    body = ENVELOPE.build(CONVERSATION, Envelope(origin=NAME, tools=[FunctionTool("w", None, SCHEMA)]), lost)
    assert body["tools"] == [{"type": "function", "name": "w", "parameters": SCHEMA}]
    assert "store" not in body
    assert lost == []


@pytest.mark.parametrize(
    ("origin", "store", "written"),
    [
        pytest.param("openai-chat", None, False, id="chat_default_no_storage"),
        pytest.param("anthropic", None, False, id="anthropic_no_storage"),
        pytest.param("gemini", None, False, id="gemini_no_storage"),
        pytest.param("openai-chat", True, True, id="chat_store_true"),
        pytest.param("openai-chat", False, False, id="chat_store_false"),
        pytest.param(NAME, False, False, id="responses_store_false"),
    ],
)
def test_store(origin: str, store: bool | None, written: bool) -> None:
    body, lost = build(Envelope(model="m", origin=origin, store=store))
    assert body["store"] is written
    assert lost == []


def test_custom_tools_and_cache_breakpoints() -> None:
    tools = [
        FunctionTool("n", "digits", kind="custom", format=GRAMMAR),
        FunctionTool("w", None, SCHEMA, cache_control={"type": "ephemeral"}),
    ]
    body, lost = build(Envelope(model="m", origin="anthropic", tools=tools))
    assert body["tools"] == [
        {"type": "custom", "name": "n", "description": "digits", "format": GRAMMAR},
        {"type": "function", "name": "w", "parameters": SCHEMA, "strict": False},
    ]
    assert lost_fields(lost) == [("tools.cache_control", False)]


@pytest.mark.parametrize(
    ("tool", "written", "lost"),
    [
        pytest.param(
            NativeTool(
                "anthropic",
                {
                    "type": "web_search_20250305",
                    "name": "web_search",
                    "allowed_domains": ["a.example"],
                    "user_location": {"type": "approximate", "city": "Paris"},
                    "max_uses": 3,
                },
                "web_search",
            ),
            {
                "type": "web_search",
                "filters": {"allowed_domains": ["a.example"]},
                "user_location": {"type": "approximate", "city": "Paris"},
            },
            [("native_tools", True)],
            id="anthropic_web_search",
        ),
        pytest.param(
            NativeTool("gemini", {"googleSearch": {}}, "web_search"),
            {"type": "web_search"},
            [],
            id="gemini_search",
        ),
        pytest.param(
            NativeTool(
                "anthropic", {"type": "code_execution_20250825", "name": "code_execution"}, "code_execution"
            ),
            {"type": "code_interpreter", "container": {"type": "auto"}},
            [],
            id="anthropic_code",
        ),
        pytest.param(
            NativeTool("gemini", {"codeExecution": {}}, "code_execution"),
            {"type": "code_interpreter", "container": {"type": "auto"}},
            [],
            id="gemini_code",
        ),
        pytest.param(
            NativeTool("gemini", {"urlContext": {}}, "url_context"), None, [("native_tools", True)], id="url"
        ),
        pytest.param(
            NativeTool(NAME, {"type": "file_search", "vector_store_ids": ["vs"]}, "file_search"),
            {"type": "file_search", "vector_store_ids": ["vs"]},
            [],
            id="own_as_declared",
        ),
    ],
)
def test_built_in_tools_from_other_protocols(
    tool: NativeTool, written: dict[str, Any] | None, lost: list[tuple[str, bool]]
) -> None:
    body, got = build(Envelope(model="m", origin=tool.protocol, native_tools=[tool]))
    assert body.get("tools") == ([written] if written else None)
    assert lost_fields(got) == lost


@pytest.mark.parametrize(
    ("choice", "written"),
    [
        pytest.param(ToolChoice("auto"), "auto", id="auto"),
        pytest.param(ToolChoice("none", ("w",)), "none", id="none"),
        pytest.param(ToolChoice("required"), "required", id="required"),
        pytest.param(ToolChoice("required", ("w",)), {"type": "function", "name": "w"}, id="named_function"),
        pytest.param(ToolChoice("required", ("n",)), {"type": "custom", "name": "n"}, id="named_custom"),
        pytest.param(
            ToolChoice("auto", ("w",)),
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "w"}]},
            id="allowed_auto",
        ),
        pytest.param(
            ToolChoice("required", ("w", "n")),
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "w"}, {"type": "custom", "name": "n"}],
            },
            id="allowed_required",
        ),
    ],
)
def test_tool_choice(choice: ToolChoice, written: Any) -> None:
    tools = [FunctionTool("w", None, SCHEMA), FunctionTool("n", kind="custom")]
    body, lost = build(Envelope(model="m", origin="openai-chat", tools=tools, tool_choice=choice))
    assert body["tool_choice"] == written
    assert lost == []


def test_validated_tool_choice_is_refused() -> None:
    env = Envelope(model="m", origin="gemini", tool_choice=ToolChoice("validated"))
    env.sources["tool_choice"] = "toolConfig.functionCallingConfig"
    body, lost = build(env)
    assert "tool_choice" not in body
    assert [(u.what, u.field, u.affects_output) for u in lost] == [
        ("request field toolConfig.functionCallingConfig (validated)", "tool_choice", True)
    ]


@pytest.mark.parametrize(
    ("reasoning", "written", "include"),
    [
        pytest.param(
            Reasoning(enabled=True, budget_tokens=3000), {"effort": "high"}, None, id="anthropic_budget"
        ),
        pytest.param(
            Reasoning(enabled=True, budget_tokens=-1), {"effort": "medium"}, None, id="gemini_dynamic"
        ),
        pytest.param(Reasoning(enabled=False), {"effort": "none"}, None, id="disabled"),
        pytest.param(
            Reasoning(effort="low", summary="auto"), {"effort": "low", "summary": "auto"}, None, id="chat"
        ),
        pytest.param(
            Reasoning(enabled=True, summary="auto", include_encrypted=True),
            {"summary": "auto"},
            ["reasoning.encrypted_content"],
            id="thoughts_and_encrypted",
        ),
    ],
)
def test_reasoning_from_other_protocols(
    reasoning: Reasoning, written: Any, include: list[str] | None
) -> None:
    body, lost = build(Envelope(model="m", origin="anthropic", reasoning=reasoning))
    assert body["reasoning"] == written
    assert body.get("include") == include
    assert lost == []


def test_an_unknown_reasoning_summary_is_refused() -> None:
    body, lost = build(Envelope(model="m", origin="gemini", reasoning=Reasoning(summary="everything")))
    assert "reasoning" not in body
    assert lost_fields(lost) == [("reasoning", True)]


@pytest.mark.parametrize(
    ("output", "written"),
    [
        pytest.param(OutputFormat("text"), {"type": "text"}, id="text"),
        pytest.param(OutputFormat("json_object"), {"type": "json_object"}, id="json_object"),
        pytest.param(
            OutputFormat("json_schema", SCHEMA),
            {"type": "json_schema", "name": "response", "schema": SCHEMA},
            id="unnamed_schema",
        ),
        pytest.param(
            OutputFormat("json_schema", SCHEMA, "city", "A city.", True),
            {
                "type": "json_schema",
                "name": "city",
                "schema": SCHEMA,
                "description": "A city.",
                "strict": True,
            },
            id="named_strict_schema",
        ),
        pytest.param(OutputFormat("json_schema"), {"type": "json_object"}, id="schema_less"),
    ],
)
def test_output_format(output: OutputFormat, written: Any) -> None:
    body, lost = build(Envelope(model="m", origin="openai-chat", output=output))
    assert body["text"] == {"format": written}
    assert lost == []


def test_settings_and_identity() -> None:
    env = Envelope(
        model="m",
        origin="anthropic",
        max_tokens=100,
        temperature=0.2,
        top_p=0.5,
        parallel_tool_calls=False,
        metadata={"k": "v"},
        user="u-1",
        service_tier="standard_only",
        include_usage=True,
    )
    body, lost = build(env)
    assert body == {
        "input": "hi",
        "model": "m",
        "stream": True,
        "max_output_tokens": 100,
        "temperature": 0.2,
        "top_p": 0.5,
        "parallel_tool_calls": False,
        "metadata": {"k": "v"},
        "safety_identifier": "u-1",
        "service_tier": "default",
        "store": False,
    }
    assert lost == []


def test_an_unknown_service_tier_is_reported() -> None:
    body, lost = build(Envelope(model="m", origin="gemini", service_tier="PRIORITY_PLUS"))
    assert "service_tier" not in body
    assert lost_fields(lost) == [("service_tier", False)]


def test_what_responses_has_not_is_reported() -> None:
    env = Envelope(
        model="m",
        origin="openai-chat",
        stop=["\n"],
        n=2,
        seed=1,
        top_k=5,
        presence_penalty=0.1,
        frequency_penalty=0.2,
    )
    env.sources["stop"] = "stop"
    body, lost = build(env)
    for key in ("stop", "n", "seed", "top_k", "presence_penalty", "frequency_penalty"):
        assert key not in body
    assert sorted(lost_fields(lost), key=str) == sorted(
        [
            ("stop", True),
            ("n", True),
            ("seed", False),
            ("top_k", False),
            ("presence_penalty", False),
            ("frequency_penalty", False),
        ],
        key=str,
    )


# ------------------------------------------------------------------------------ round trip


def test_round_trip_own_canonical_own() -> None:
    body = full_body()
    env = ENVELOPE.read(body)
    conversation = {k: body[k] for k in ("input", "instructions")}
    lost: list[Unread] = []
    built = ENVELOPE.build(conversation, env, lost)
    assert lost == []
    expected = copy.deepcopy(body)
    for key in ("defer_loading", "output_schema"):  # reported when read: no canonical slot
        del expected["tools"][1][key]
    assert built == expected
    again = ENVELOPE.read(built)
    assert (again.tools, again.native_tools, again.native) == (env.tools, env.native_tools, env.native)
    assert again.sources == env.sources
    for name in ("tool_choice", "reasoning", "output", "store", "metadata", "user", "service_tier"):
        assert getattr(again, name) == getattr(env, name)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"user": "u"}, id="user_goes_back_to_user"),
        pytest.param({"include": ["reasoning.encrypted_content"]}, id="include_alone"),
        pytest.param({"reasoning": {"summary": "auto"}, "text": {"verbosity": "low"}}, id="partial_objects"),
        pytest.param(
            {"tools": [{"type": "function", "name": "w", "parameters": SCHEMA}]}, id="strict_absent"
        ),
    ],
)
def test_small_round_trips(body: dict[str, Any]) -> None:
    full = {"model": "m", "stream": True, "input": "hi", **body}
    assert ENVELOPE.build({"input": "hi"}, ENVELOPE.read(full)) == full


# --------------------------------------------------------------------- the drop policy


@pytest.mark.parametrize(
    "field",
    [
        pytest.param({"previous_response_id": "resp_1"}, id="previous_response_id"),
        pytest.param({"conversation": {"id": "conv_1"}}, id="conversation"),
        pytest.param({"prompt": {"id": "pmpt_1"}}, id="prompt"),
        pytest.param({"tool_choice": {"type": "file_search"}}, id="hosted_tool_choice"),
    ],
)
def test_stateful_and_hosted_fields_are_refused_across_protocols(field: dict[str, Any]) -> None:
    body = {"model": "m", "input": "hi", "stream": True, **field}
    with pytest.raises(ms.UnsupportedParamsError) as raised:
        ms.convert_request(body, protocol=NAME, to="anthropic")
    assert raised.value.fields == list(field)
    converted = ms.convert_request(body, protocol=NAME, to="anthropic", drop_params=True)
    assert next(iter(field)) not in converted.body
    assert [d.what for d in converted.dropped] == [f"request field {next(iter(field))}"]


def test_cosmetic_native_fields_drop_with_a_report() -> None:
    body = {
        "model": "m",
        "input": "hi",
        "truncation": "auto",
        "max_tool_calls": 2,
        "text": {"verbosity": "low"},
    }
    converted = ms.convert_request(body, protocol=NAME, to="anthropic")
    assert sorted(d.what for d in converted.dropped) == [
        "request field max_tool_calls",
        "request field text.verbosity",
        "request field truncation",
    ]


def test_same_protocol_passes_stateful_fields_through() -> None:
    body = full_body()
    body["model"] = "my-own-model"  # not in the capability table: nothing refused by the model
    converted = ms.convert_request(body, protocol=NAME, to=NAME)
    assert converted.body == body
