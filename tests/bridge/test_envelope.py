"""The request envelope codecs (``spec.envelope``) the bridge reads clients and writes upstreams with.

Each of the five HTTP protocols reads its own envelope fields, reports everything that is
neither envelope nor conversation, and writes a streaming upstream request in its own terms;
reading what it wrote gives the same envelope back.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import maas_stream as ms
from maas_stream._envelope import Envelope, EnvelopeCodec, FunctionTool, Unread
from maas_stream._registry import get_protocol, protocol_specs
from maas_stream.protocols.anthropic._envelope import DEFAULT_MAX_TOKENS

SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}}
ENVELOPED = ["openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions"]


def codec(protocol: str) -> EnvelopeCodec:
    found = get_protocol(protocol).envelope
    assert isinstance(found, EnvelopeCodec)
    return found


def test_the_http_protocols_and_only_they_have_an_envelope() -> None:
    assert sorted(s.name for s in protocol_specs() if s.envelope is not None) == sorted(ENVELOPED)


# Each client body: a limit of 64, temperature 0.5, top_p 0.9, one function tool, one other
# tool, one unknown top-level field.
BODIES: dict[str, Any] = {
    "openai-chat": {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": False},
        "messages": [],
        "max_completion_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "tools": [
            {"type": "function", "function": {"name": "w", "description": "d", "parameters": SCHEMA}},
            {"type": "retrieval"},  # not a Chat tool type (custom tools are read since issue 13)
        ],
        "top_logprobs": 1,  # Chat reads seed as a canonical field
    },
    "openai-responses": {
        "model": "m",
        "stream": True,
        "input": "hi",
        "instructions": "be brief",
        "max_output_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "tools": [
            {"type": "function", "name": "w", "description": "d", "parameters": SCHEMA},
            {"name": "untyped"},  # built-in tools are read (tests/convert/test_request_openai_responses.py)
        ],
        "seed": 1,
    },
    "anthropic": {
        "model": "m",
        "stream": True,
        "system": "be brief",
        "messages": [],
        "max_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "tools": [
            {"name": "w", "description": "d", "input_schema": SCHEMA},
            {"name": "no_schema"},  # server tools are read (NativeTool); this cannot be
        ],
        "seed": 1,
    },
    "gemini": {
        "contents": [],
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "generationConfig": {"maxOutputTokens": 64, "temperature": 0.5, "topP": 0.9},
        "tools": [
            {"functionDeclarations": [{"name": "w", "description": "d", "parametersJsonSchema": SCHEMA}]},
            {"someFutureTool": {}},
        ],
        "seed": 1,
    },
    "google-interactions": {
        "model": "m",
        "stream": True,
        "input": "hi",
        "system_instruction": "be brief",
        "generation_config": {"max_output_tokens": 64, "temperature": 0.5, "top_p": 0.9},
        "tools": [
            {"type": "function", "name": "w", "description": "d", "parameters": SCHEMA},
            {"name": "untyped"},  # built-in tools are read (tests/convert/test_request_interactions.py)
        ],
        "seed": 1,  # Interactions' seed is in generation_config: at the top it is no known field
    },
}
NATIVE = {"openai-chat": "top_logprobs"}
"""Each body's field with no canonical counterpart (``seed`` unless named here)."""


@pytest.mark.parametrize("protocol", ENVELOPED)
def test_read_then_build_then_read(protocol: str) -> None:
    body = BODIES[protocol]
    key = NATIVE.get(protocol, "seed")
    env = codec(protocol).read(body, model="m" if protocol == "gemini" else None, stream=None)
    assert (env.model, env.max_tokens, env.temperature, env.top_p) == ("m", 64, 0.5, 0.9)
    assert env.stream is (protocol != "gemini")  # Gemini's path decides, and none was given
    assert env.tools == [FunctionTool("w", "d", SCHEMA)]
    # A field of the protocol with no canonical counterpart travels natively; an unreadable
    # tool is reported, as changing what the model does.
    assert env.native == {key: 1}
    assert [(d.where, d.affects_output) for d in env.dropped] == [("tools[1]", True)]

    lost: list[Unread] = []
    built = codec(protocol).build({"conversation": 1}, env, lost)
    assert built["conversation"] == 1
    assert built[key] == 1  # written back to the protocol it came from
    assert lost == []
    again = codec(protocol).read(built, model="m" if protocol == "gemini" else None, stream=True)
    assert again.model == "m"
    assert again.stream is True
    assert (again.max_tokens, again.temperature, again.top_p, again.tools) == (64, 0.5, 0.9, env.tools)
    assert again.native == {"conversation": 1, key: 1}


@pytest.mark.parametrize("protocol", ENVELOPED)
def test_native_fields_of_another_protocol_are_reported(protocol: str) -> None:
    other = "gemini" if protocol != "gemini" else "anthropic"
    env = codec(other).read(BODIES[other], model="m")
    lost: list[Unread] = []
    built = codec(protocol).build({}, env, lost)
    assert "seed" not in built
    assert [(u.what, u.field, u.affects_output) for u in lost] == [("request field seed", "seed", False)]


def test_chat_upstream_asks_for_usage_whatever_the_client_said() -> None:
    env = codec("openai-chat").read(BODIES["openai-chat"])
    built = codec("openai-chat").build({"messages": []}, env)
    assert built["stream_options"] == {"include_usage": True}
    assert built["stream"] is True
    assert BODIES["openai-chat"]["stream_options"] == {"include_usage": False}  # not mutated


def test_anthropic_upstream_gets_a_default_limit() -> None:
    built = codec("anthropic").build({"messages": []}, Envelope(model="m"))
    assert built["max_tokens"] == DEFAULT_MAX_TOKENS
    assert ms.validate(built, "anthropic") == []


def test_gemini_keeps_the_model_and_stream_out_of_the_body() -> None:
    built = codec("gemini").build({"contents": []}, Envelope(model="m", stream=True, max_tokens=5))
    assert built == {"contents": [], "generationConfig": {"maxOutputTokens": 5}}


def test_gemini_reads_snake_case_and_reports_other_config() -> None:
    body = {
        "contents": [],
        "generation_config": {
            "max_output_tokens": 9,
            "top_p": 0.1,
            "mediaResolution": "MEDIA_RESOLUTION_LOW",
        },
        "tools": [{"function_declarations": [{"name": "f", "parameters": SCHEMA}, 3]}],
    }
    env = codec("gemini").read(body, stream=True)
    assert (env.max_tokens, env.top_p, env.stream) == (9, 0.1, True)
    assert env.tools == [FunctionTool("f", None, SCHEMA)]
    assert env.native == {"generationConfig.mediaResolution": "MEDIA_RESOLUTION_LOW"}
    assert [(d.what, d.where) for d in env.dropped] == [
        ("a function declaration that is not an object", "tools[0]"),
    ]


def test_a_function_tool_without_schema() -> None:
    tool = FunctionTool("f")
    assert codec("openai-responses").write_tools([tool], [], []) == [
        {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}
    ]
    assert codec("gemini").write_tools([tool], [], []) == [{"functionDeclarations": [{"name": "f"}]}]


@pytest.mark.parametrize(
    ("value", "read"),
    [
        pytest.param(True, None, id="bool_is_no_number"),
        pytest.param("64", None, id="string"),
        pytest.param(64, 64, id="int"),
        pytest.param(64.0, None, id="float_is_no_int"),
    ],
)
def test_a_limit_must_be_an_integer(value: Any, read: int | None) -> None:
    env = codec("anthropic").read({"max_tokens": value, "temperature": 1, "messages": []})
    assert env.max_tokens == read
    assert env.temperature == 1.0


def test_tools_that_are_not_objects_are_reported() -> None:
    env = codec("openai-chat").read({"messages": [], "tools": ["nope", {"type": "function"}]})
    assert env.tools == []
    assert [(d.what, d.where) for d in env.dropped] == [
        ("a tool that is not an object", "tools[0]"),
        ("function tool without a function object", "tools[1]"),
    ]


def test_a_codecs_field_names_follow_a_replaced_codec() -> None:
    """The top-level field names are kept per codec (frozen): a replaced codec has its own."""
    chat = codec("openai-chat")
    renamed = dataclasses.replace(chat, model_field="engine", fixed={})
    body = {"model": "m", "engine": "e", "messages": []}
    assert "engine" in renamed.fields
    assert "engine" not in chat.fields
    assert chat.read(body).native == {"engine": "e"}
    assert renamed.read(body).native == {"model": "m"}
    # No fixed fields: none are written (and none copied).
    assert "stream_options" not in renamed.build({"messages": []}, Envelope(model="m"))
    assert "stream_options" in chat.build({"messages": []}, Envelope(model="m"))
