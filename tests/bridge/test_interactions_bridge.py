"""Google Interactions through the bridge, as a client protocol and as an upstream.

The oracles are the official SDKs: google-genai's Interactions client (``client.aio.interactions``,
streaming and not) talks to the bridge in front of an Anthropic and a Chat upstream, and must end
with the text and function calls ``ms.aggregate`` finds in what the upstream sent; the openai SDK's
Chat client talks to the bridge in front of an Interactions upstream. Upstreams are recordings
replayed, or ``httpx.MockTransport`` fakes that see the converted request.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import openai
import pytest
from google import genai
from google.genai import _interactions_errors as interactions_errors
from google.genai import types as genai_types

import maas_stream as ms
from maas_stream.bridge import BridgeApp, HTTPUpstream, RecordingUpstream, create_app
from tests.bridge.test_serve import LIMIT, asgi_client, expected, openai_client
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

ANTHROPIC = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
CHAT = RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse"
INTERACTIONS = RECORDINGS / "google-interactions/parallel_calls_thought_summary.sse"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}

Calls = list[tuple[str, Any]]


def interactions_client(app: BridgeApp) -> genai.Client:
    return genai.Client(
        api_key="client-key",
        http_options=genai_types.HttpOptions(
            base_url="http://bridge/", api_version="v1beta", httpx_async_client=asgi_client(app)
        ),
    )


async def create(client: genai.Client, **body: Any) -> Any:
    """``client.aio.interactions.create(**body)`` (untyped: its overloads want literal model names)."""
    interactions: Any = client.aio.interactions
    return await interactions.create(**body)


def steps_seen(steps: list[Any]) -> tuple[str, Calls]:
    """The text and function calls of an Interaction's steps, as google-genai's models hold them."""
    text: list[str] = []
    calls: Calls = []
    for step in steps:
        if step.type == "model_output":
            text += [c.text for c in step.content or [] if c.type == "text"]
        elif step.type == "function_call":
            calls.append((step.name, step.arguments))
    return "".join(text), calls


async def stream_seen(stream: Any) -> tuple[str, Calls, Any]:
    """The text, function calls and final event of an SDK event stream, assembled by step index."""
    text: list[str] = []
    calls: dict[int, list[Any]] = {}
    final = None
    async for event in stream:
        if event.event_type == "step.start" and event.step.type == "function_call":
            calls[event.index] = [event.step.name, json.dumps(event.step.arguments or {}), True]
        elif event.event_type == "step.delta" and event.delta.type == "text":
            text.append(event.delta.text)
        elif event.event_type == "step.delta" and event.delta.type == "arguments_delta":
            call = calls[event.index]
            call[1] = event.delta.arguments if call[2] else call[1] + event.delta.arguments
            call[2] = False  # the first fragment replaces the start's empty object
        elif event.event_type == "interaction.completed":
            final = event.interaction
    return "".join(text), [(name, json.loads(args)) for name, args, _ in calls.values()], final


# ---------------------------------------------------------------------- Interactions clients


@pytest.mark.parametrize(
    "recording", [pytest.param(ANTHROPIC, id="anthropic"), pytest.param(CHAT, id="chat")]
)
async def test_interactions_sdk_streams_from_another_protocol(recording: Path) -> None:
    app = create_app(upstream=RecordingUpstream(recording))
    client = interactions_client(app)
    with anyio.fail_after(LIMIT):
        stream = await create(client, model="any", input="weather?", tools=[WEATHER], stream=True)
        text, calls, final = await stream_seen(stream)
    assert (text, calls) == expected(recording)
    assert final.status == "requires_action"  # client calls wait for their results
    assert final.usage.total_tokens is not None
    assert app.stats.rejected == 0


@pytest.mark.parametrize(
    "recording", [pytest.param(ANTHROPIC, id="anthropic"), pytest.param(CHAT, id="chat")]
)
async def test_interactions_sdk_without_stream_gets_an_interaction(recording: Path) -> None:
    app = create_app(upstream=RecordingUpstream(recording))
    client = interactions_client(app)
    with anyio.fail_after(LIMIT):
        interaction = await create(client, model="any", input="weather?", tools=[WEATHER])
    assert steps_seen(interaction.steps) == expected(recording)
    assert interaction.status == "requires_action"
    assert interaction.usage.total_tokens is not None


def _fake(protocol: str, recording: Path, seen: list[httpx.Request], *, status: int = 200) -> HTTPUpstream:
    data = recording.read_bytes()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if status != 200:
            return httpx.Response(status, json={"error": {"message": f"upstream says {status}"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return HTTPUpstream(protocol, "https://upstream.test/{model}", api_key="upstream-secret", client=client)


async def test_an_anthropic_upstream_gets_the_whole_request_converted() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=_fake("anthropic", ANTHROPIC, seen))
    client = interactions_client(app)
    history = [
        {"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {"type": "function_call", "id": "call_P", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "function_result", "call_id": "call_P", "name": "get_weather", "result": "18C sunny"},
    ]
    with anyio.fail_after(LIMIT):
        stream = await create(
            client,
            model="claude-sonnet-4-5",
            input=history,
            system_instruction="Be brief.",
            tools=[WEATHER],
            generation_config={
                "max_output_tokens": 321,
                "stop_sequences": ["END"],
                "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["get_weather"]}},
            },
            store=False,
            stream=True,
        )
        text, calls, _ = await stream_seen(stream)
    assert (text, calls) == expected(ANTHROPIC)
    (request,) = seen
    body = json.loads(request.content)
    assert ms.validate(body, "anthropic") == []
    assert request.headers["x-api-key"] == "upstream-secret"
    assert "x-goog-api-key" not in request.headers  # the client's key never goes upstream
    assert (body["model"], body["max_tokens"], body["stream"]) == ("claude-sonnet-4-5", 321, True)
    assert body["system"] == "Be brief."
    assert body["stop_sequences"] == ["END"]
    assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert body["tools"] == [
        {"name": "get_weather", "description": "Current weather", "input_schema": WEATHER["parameters"]}
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"][0]["tool_use_id"] == "call_P"


async def test_a_stored_conversation_is_refused_for_another_upstream_unless_dropped() -> None:
    """previous_interaction_id names turns only the provider holds: another model would answer
    a different conversation (the conversation store will expand it; until then it is refused)."""
    request = {"model": "m", "input": "and tomorrow?", "previous_interaction_id": "v1_prev"}
    refusing = create_app(upstream=RecordingUpstream(CHAT))
    # The SDK's Interactions client raises its own error classes (not google.genai.errors').
    with anyio.fail_after(LIMIT), pytest.raises(interactions_errors.BadRequestError) as info:
        await create(interactions_client(refusing), **request)
    assert info.value.status_code == 400
    assert "previous_interaction_id" in str(info.value)
    assert refusing.upstream.requests == []  # type: ignore[attr-defined]
    dropping = create_app(upstream=RecordingUpstream(CHAT), drop_params=True)
    with anyio.fail_after(LIMIT):
        interaction = await create(interactions_client(dropping), **request)
    assert steps_seen(interaction.steps) == expected(CHAT)
    assert "previous_interaction_id" not in dropping.upstream.requests[0]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- an Interactions upstream


async def test_chat_sdk_streams_from_an_interactions_upstream() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=_fake("google-interactions", INTERACTIONS, seen))
    tool = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
    with anyio.fail_after(LIMIT):
        async with openai_client(app).chat.completions.stream(
            model="gemini-3-flash-preview",
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "weather?"}],
            tools=[tool],  # type: ignore[list-item]
            tool_choice="required",
            max_completion_tokens=222,
            reasoning_effort="low",
        ) as stream:
            final = await stream.get_final_completion()
    message = final.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    assert (message.content or "", calls) == expected(INTERACTIONS)
    assert final.choices[0].finish_reason == "tool_calls"
    (request,) = seen
    body = json.loads(request.content)
    assert request.headers["x-goog-api-key"] == "upstream-secret"
    assert "authorization" not in request.headers
    assert ms.validate(body, "google-interactions") == []
    assert body["model"] == "gemini-3-flash-preview"
    assert (body["stream"], body["store"]) == (True, False)  # nothing stored for a Chat client
    assert body["system_instruction"] == "Be brief."
    assert body["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "weather?"}]}]
    assert body["generation_config"] == {
        "max_output_tokens": 222,
        "thinking_level": "low",
        "tool_choice": "any",
    }
    assert body["tools"] == [WEATHER]


async def test_chat_sdk_without_stream_from_an_interactions_upstream() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=_fake("google-interactions", INTERACTIONS, seen))
    with anyio.fail_after(LIMIT):
        completion = await openai_client(app).chat.completions.create(
            model="gemini-3-flash-preview", messages=[{"role": "user", "content": "weather?"}]
        )
    message = completion.choices[0].message
    calls = [
        (c.function.name, json.loads(c.function.arguments))
        for c in message.tool_calls or []
        if isinstance(c, openai.types.chat.ChatCompletionMessageFunctionToolCall)
    ]
    assert len(calls) == len(message.tool_calls or [])
    assert (message.content or "", calls) == expected(INTERACTIONS)
    assert completion.usage is not None
    assert json.loads(seen[0].content)["stream"] is True  # the upstream always streams


async def test_an_interactions_upstream_error_reaches_the_chat_sdk() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=_fake("google-interactions", INTERACTIONS, seen, status=429))
    with anyio.fail_after(LIMIT), pytest.raises(openai.RateLimitError):
        await openai_client(app).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert len(seen) == 1


async def test_interactions_to_interactions_passes_the_request_through() -> None:
    """The same protocol: the client's body reaches the upstream as sent (stored state included)."""
    seen: list[httpx.Request] = []
    app = create_app(upstream=_fake("google-interactions", INTERACTIONS, seen))
    sent = {
        "model": "gemini-3-flash-preview",
        "input": "and Oslo?",
        "previous_interaction_id": "v1_prev",
        "generation_config": {"thinking_level": "high", "thinking_summaries": "auto"},
        "safety_settings": [{"type": "harassment", "threshold": "block_only_high"}],
        "stream": True,
    }
    with anyio.fail_after(LIMIT):
        stream = await create(interactions_client(app), **sent)
        text, calls, _ = await stream_seen(stream)
    assert (text, calls) == expected(INTERACTIONS)
    assert json.loads(seen[0].content) == sent
    assert app.stats.dropped.get("request_field", 0) == 0
