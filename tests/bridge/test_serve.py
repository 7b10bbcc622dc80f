"""The bridge (``maas_stream.bridge``) driven by the official SDKs, against recordings and a fake upstream.

The SDKs are the oracles: each talks to the ASGI app through ``httpx2.ASGITransport`` (no server)
as if it were its own provider, and must end with the text and function calls that
``ms.aggregate`` finds in the recording the bridge replayed. The fake HTTP upstream is an
``httpx.MockTransport`` inside the bridge's upstream client; it sees the converted request. The
streaming test drives the app with raw ASGI callables (``ASGITransport`` buffers whole bodies), and
one test runs the app under uvicorn on 127.0.0.1 with the SDK over a real socket.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import anthropic
import anyio
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

import maas_stream as ms
from maas_stream.bridge import BridgeApp, HTTPUpstream, RecordingUpstream, create_app
from tests.conftest import RECORDINGS, parts

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, MutableMapping
    from pathlib import Path

pytestmark = pytest.mark.anyio

LIMIT = 10.0
"""No single test step may take longer (a stall fails instead of hanging)."""

Calls = list[tuple[str, Any]]


def expected(path: Path) -> tuple[str, Calls]:
    """The recording's assistant text and function calls, per ``ms.aggregate`` (the reference)."""
    response = ms.aggregate(path.read_bytes())
    text: list[str] = []
    calls: Calls = []
    for message in response.messages:
        if message.role != "assistant" or isinstance(message.content, str):
            continue
        for part in message.content:
            if isinstance(part, ms.TextPart):
                text.append(part.text)
            elif isinstance(part, ms.ToolCallPart) and part.kind == "function":
                calls.append((part.name, json.loads(part.arguments or "{}")))
    return "".join(text), calls


def asgi_client(app: BridgeApp) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))


def openai_client(app: BridgeApp) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="client-key", base_url="http://bridge/v1", http_client=asgi_client(app), max_retries=0
    )


def anthropic_client(app: BridgeApp) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="client-key", base_url="http://bridge", http_client=asgi_client(app), max_retries=0
    )


def genai_client(app: BridgeApp) -> genai.Client:
    return genai.Client(
        api_key="client-key",
        http_options=genai_types.HttpOptions(
            base_url="http://bridge/", api_version="v1beta", httpx_async_client=asgi_client(app)
        ),
    )


def served(name: str) -> tuple[BridgeApp, Path]:
    path = RECORDINGS / name
    return create_app(upstream=RecordingUpstream(path)), path


# ---------------------------------------------------------------------- SDKs against recordings


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("anthropic/thinking_parallel_tools.sse", id="thinking_parallel_tools"),
        pytest.param("anthropic/text_citations.sse", id="text_citations"),
        pytest.param("anthropic/tool_no_args.sse", id="tool_no_args"),
    ],
)
async def test_openai_chat_sdk_from_anthropic_recording(name: str) -> None:
    app, path = served(name)
    with anyio.fail_after(LIMIT):
        async with openai_client(app).chat.completions.stream(
            model="any", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            final = await stream.get_final_completion()
    message = final.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments or "{}")) for c in message.tool_calls or []]
    assert (message.content or "", calls) == expected(path)
    assert app.stats.streams == 1
    assert app.stats.rejected == 0


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("openai-chat/readme_text_then_parallel_tools.sse", id="readme_text_then_parallel_tools"),
        pytest.param("openai-chat/interleaved_three_calls.sse", id="interleaved_three_calls"),
        pytest.param("openai-chat/tool_call_no_arguments.sse", id="tool_call_no_arguments"),
    ],
)
async def test_anthropic_sdk_from_openai_chat_recording(name: str) -> None:
    app, path = served(name)
    with anyio.fail_after(LIMIT):
        async with anthropic_client(app).messages.stream(
            model="any", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            final = await stream.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    calls = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    assert (text, calls) == expected(path)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("gemini/thoughts_text_parallel_calls.sse", id="thoughts_text_parallel_calls"),
        pytest.param("gemini/parallel_same_name_no_ids.sse", id="parallel_same_name_no_ids"),
        pytest.param("gemini/vertex_streamed_args.sse", id="vertex_streamed_args"),
    ],
)
async def test_openai_responses_sdk_from_gemini_recording(name: str) -> None:
    app, path = served(name)
    with anyio.fail_after(LIMIT):
        async with openai_client(app).responses.stream(model="any", input="hi") as stream:
            final = await stream.get_final_response()
    calls = [(i.name, json.loads(i.arguments or "{}")) for i in final.output if i.type == "function_call"]
    assert (final.output_text, calls) == expected(path)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            "openai-responses/reasoning_text_parallel_calls.sse", id="reasoning_text_parallel_calls"
        ),
        pytest.param("openai-responses/interleaved_calls.sse", id="interleaved_calls"),
    ],
)
async def test_genai_sdk_from_openai_responses_recording(name: str) -> None:
    app, path = served(name)
    text: list[str] = []
    calls: Calls = []
    with anyio.fail_after(LIMIT):
        async for chunk in await genai_client(app).aio.models.generate_content_stream(
            model="any-model", contents="hi"
        ):
            for cand in chunk.candidates or []:
                for part in (cand.content.parts if cand.content else None) or []:
                    if part.text is not None and not part.thought:
                        text.append(part.text)
                    if part.function_call is not None:
                        calls.append((part.function_call.name or "", part.function_call.args or {}))
    assert ("".join(text), calls) == expected(path)


# ---------------------------------------------------------------------- non-streaming requests


async def test_openai_chat_sdk_non_streaming_from_anthropic_recording() -> None:
    app, path = served("anthropic/thinking_parallel_tools.sse")
    with anyio.fail_after(LIMIT):
        final = await openai_client(app).chat.completions.create(
            model="any", messages=[{"role": "user", "content": "hi"}], stream=False
        )
    message = final.choices[0].message
    assert all(c.type == "function" for c in message.tool_calls or [])
    calls = [
        (c.function.name, json.loads(c.function.arguments or "{}"))
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    assert (message.content or "", calls) == expected(path)
    assert final.choices[0].finish_reason == "tool_calls"
    assert app.stats.streams == 1
    assert app.stats.rejected == 0


async def test_anthropic_sdk_non_streaming_from_openai_chat_recording() -> None:
    app, path = served("openai-chat/interleaved_three_calls.sse")
    with anyio.fail_after(LIMIT):
        final = await anthropic_client(app).messages.create(
            model="any", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    text = "".join(b.text for b in final.content if b.type == "text")
    calls = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    assert (text, calls) == expected(path)
    assert final.stop_reason == "tool_use"


async def test_openai_responses_sdk_non_streaming_from_gemini_recording() -> None:
    app, path = served("gemini/thoughts_text_parallel_calls.sse")
    with anyio.fail_after(LIMIT):
        final = await openai_client(app).responses.create(model="any", input="hi")
    calls = [(i.name, json.loads(i.arguments or "{}")) for i in final.output if i.type == "function_call"]
    assert (final.output_text, calls) == expected(path)
    assert final.status == "completed"


async def test_genai_sdk_non_streaming_from_openai_responses_recording() -> None:
    app, path = served("openai-responses/reasoning_text_parallel_calls.sse")
    with anyio.fail_after(LIMIT):
        final = await genai_client(app).aio.models.generate_content(model="any-model", contents="hi")
    parts = (
        final.candidates[0].content.parts if final.candidates and final.candidates[0].content else None
    ) or []
    text = "".join(p.text for p in parts if p.text is not None and not p.thought)
    calls = [(p.function_call.name or "", p.function_call.args or {}) for p in parts if p.function_call]
    assert (text, calls) == expected(path)


async def test_non_streaming_request_still_streams_from_the_upstream() -> None:
    recording = RECORDINGS / "anthropic/tool_no_args.sse"
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=recording.read_bytes()
        )

    app = create_app(upstream=fake_upstream("anthropic", handler, model="claude-test"))
    async with asgi_client(app) as client:
        response = await client.post(
            "http://bridge/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["object"] == "chat.completion"
    assert json.loads(seen[0].content)["stream"] is True


async def test_non_streaming_request_of_a_failed_stream_is_an_error() -> None:
    app, _ = served("anthropic/error_midstream.sse")
    async with asgi_client(app) as client:
        response = await client.post(
            "http://bridge/v1/messages",
            json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]},
        )
    assert response.status_code == 502
    assert response.json()["type"] == "error"
    assert app.stats.rejected == 1


async def test_lossy_stream_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    # Anthropic thinking has no place in a Chat Completions stream: dropped, logged, counted.
    app, path = served("anthropic/thinking_parallel_tools.sse")
    assert any(
        isinstance(p, ms.ReasoningPart) for m in ms.aggregate(path.read_bytes()).messages for p in parts(m)
    )
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        async with openai_client(app).chat.completions.stream(
            model="any", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            await stream.get_final_completion()
    assert app.stats.dropped["reasoning"] >= 1  # counted by kind, not by a line per call
    assert any("reasoning" in r.getMessage() and r.name == "maas_stream" for r in caplog.records)


# ---------------------------------------------------------------------- fake HTTP upstream

CHAT_WITH_TOOLS: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris and Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_P",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "call_O",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_P", "content": "18C sunny"},
    {"role": "tool", "tool_call_id": "call_O", "content": "4C rain"},
]
WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def fake_upstream(
    protocol: str, handler: Any, *, model: str | None = None, url: str = "https://upstream.test/stream"
) -> HTTPUpstream:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return HTTPUpstream(protocol, url, api_key="upstream-secret", model=model, client=client)


async def test_http_upstream_receives_converted_request() -> None:
    recording = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=recording.read_bytes()
        )

    app = create_app(upstream=fake_upstream("anthropic", handler, model="claude-test"))
    async with openai_client(app).chat.completions.stream(
        model="gpt-whatever", messages=CHAT_WITH_TOOLS, tools=[WEATHER_TOOL], max_tokens=321
    ) as stream:
        final = await stream.get_final_completion()

    assert len(seen) == 1
    request = seen[0]
    body = json.loads(request.content)
    assert ms.validate(body, "anthropic") == []
    assert request.headers["x-api-key"] == "upstream-secret"
    assert request.headers["anthropic-version"]
    assert "authorization" not in request.headers  # the client's key never goes upstream
    assert body["model"] == "claude-test"
    assert body["stream"] is True
    assert body["max_tokens"] == 321
    assert body["system"] == "Be brief."
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather",
            "input_schema": WEATHER_TOOL["function"]["parameters"],
        }
    ]
    # Chat's two tool messages arrive as ONE Anthropic user message of tool_result blocks.
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert [(b["type"], b["tool_use_id"], b["content"]) for b in last["content"]] == [
        ("tool_result", "call_P", "18C sunny"),
        ("tool_result", "call_O", "4C rain"),
    ]
    assert [b["id"] for b in body["messages"][-2]["content"]] == ["call_P", "call_O"]
    # ... and the answer comes back as the recording said.
    message = final.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    assert (message.content or "", calls) == expected(recording)


async def test_gemini_upstream_url_gets_the_model() -> None:
    recording = RECORDINGS / "gemini/thoughts_text_parallel_calls.sse"
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=recording.read_bytes()
        )

    url = "https://gemini.test/v1beta/models/{model}:streamGenerateContent?alt=sse"
    app = create_app(upstream=fake_upstream("gemini", handler, url=url))
    async with anthropic_client(app).messages.stream(
        model="gemini-x", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        final = await stream.get_final_message()
    assert seen[0].url.path == "/v1beta/models/gemini-x:streamGenerateContent"
    assert seen[0].headers["x-goog-api-key"] == "upstream-secret"
    body = json.loads(seen[0].content)
    assert ms.validate(body, "gemini") == []
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["generationConfig"] == {"maxOutputTokens": 50}
    text = "".join(b.text for b in final.content if b.type == "text")
    assert text == expected(recording)[0]


def rate_limited(body: Any) -> Any:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"retry-after": "7"}, json=body)

    return handler


ANTHROPIC_429 = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down, 50 rpm max"}}
OPENAI_429 = {
    "error": {"message": "Rate limit reached for gpt-x", "type": "requests", "code": "rate_limit_exceeded"}
}


async def test_upstream_429_reaches_openai_sdk_as_rate_limit_error() -> None:
    app = create_app(upstream=fake_upstream("anthropic", rate_limited(ANTHROPIC_429)))
    with pytest.raises(openai.RateLimitError, match="Slow down, 50 rpm max") as info:
        async with openai_client(app).chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            await stream.get_final_completion()
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "7"
    assert app.stats.rejected == 1


async def test_upstream_429_reaches_anthropic_sdk_as_rate_limit_error() -> None:
    app = create_app(upstream=fake_upstream("openai-chat", rate_limited(OPENAI_429)))
    with pytest.raises(anthropic.RateLimitError, match="Rate limit reached for gpt-x"):
        async with anthropic_client(app).messages.stream(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            await stream.get_final_message()


async def test_upstream_429_reaches_genai_sdk_as_resource_exhausted() -> None:
    app = create_app(upstream=fake_upstream("anthropic", rate_limited(ANTHROPIC_429)))
    with pytest.raises(genai_errors.ClientError, match="Slow down, 50 rpm max") as info:
        async for _ in await genai_client(app).aio.models.generate_content_stream(model="m", contents="hi"):
            pass
    assert info.value.code == 429
    assert info.value.status == "RESOURCE_EXHAUSTED"


# ---------------------------------------------------------------------- streaming as it arrives


def sse_frames(data: bytes) -> list[bytes]:
    return [f + b"\n\n" for f in data.replace(b"\r\n", b"\n").split(b"\n\n") if f.strip()]


async def test_first_frame_reaches_client_while_upstream_stalls() -> None:
    frames = sse_frames((RECORDINGS / "anthropic/thinking_parallel_tools.sse").read_bytes())
    first_text = next(i for i, f in enumerate(frames) if b'"text_delta"' in f)
    first_text_delta = json.loads(frames[first_text].split(b"data: ", 1)[1])["delta"]["text"]
    needle = json.dumps(first_text_delta)[1:-1].encode()
    gate = anyio.Event()

    async def body() -> AsyncIterator[bytes]:
        for frame in frames[: first_text + 1]:
            yield frame
        await gate.wait()  # the upstream stalls here until the client saw the converted text
        for frame in frames[first_text + 1 :]:
            yield frame

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    app = create_app(upstream=fake_upstream("anthropic", handler))
    request = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    received: list[bytes] = []
    starts: list[int] = []
    text_seen = anyio.Event()
    done = anyio.Event()
    sent_request = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent_request
        if not sent_request:
            sent_request = True
            return {"type": "http.request", "body": request, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            starts.append(message["status"])
        elif message["type"] == "http.response.body":
            received.append(message.get("body", b""))
            if needle in b"".join(received) and not gate.is_set():
                text_seen.set()
            if not message.get("more_body"):
                done.set()

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(app, scope, receive, send)
            await text_seen.wait()
            # The gate is still shut: everything so far was produced from the first frames alone.
            assert not gate.is_set()
            assert starts == [200]
            early = b"".join(received)
            gate.set()
    chat = ms.aggregate(early, protocol="openai-chat")
    assert chat.status == "incomplete"  # no end yet: the rest was still behind the gate
    assert "".join(p.text for p in parts(chat.messages[0]) if isinstance(p, ms.TextPart)) == first_text_delta
    whole = ms.aggregate(b"".join(received), protocol="openai-chat")
    assert whole.status == "completed"
    assert app.stats.streams == 1


# ---------------------------------------------------------------------- faults before the stream


async def test_request_the_upstream_rejects_gets_400_naming_the_fault() -> None:
    app, _ = served("anthropic/thinking_parallel_tools.sse")
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "well?"},  # call_9 never answered
    ]
    with pytest.raises(openai.BadRequestError, match="call_9") as info:
        async with openai_client(app).chat.completions.stream(model="m", messages=messages) as stream:
            await stream.get_final_completion()
    assert info.value.status_code == 400
    # Named in the client's own terms, before any conversion.
    assert "messages[1]: tool call 'call_9' has no tool message answering it" in str(info.value)
    assert app.stats.rejected == 1
    assert app.stats.streams == 0


async def test_invalid_request_for_anthropic_client_is_anthropic_shaped() -> None:
    app, _ = served("gemini/thoughts_text_parallel_calls.sse")
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": "no result"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="toolu_1") as info:
        async with anthropic_client(app).messages.stream(
            model="m", max_tokens=5, messages=messages
        ) as stream:
            await stream.get_final_message()
    body: Any = info.value.body
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert "tool_use 'toolu_1' has no tool_result" in body["error"]["message"]  # the client's terms


@pytest.mark.parametrize(
    ("path", "body", "status", "needle"),
    [
        pytest.param(
            "/v1beta/models/m:streamGenerateContent", {"contents": []}, 400, "alt=sse", id="gemini_no_alt_sse"
        ),
        pytest.param("/v1/chat/completions", [1, 2], 400, "JSON object", id="not_an_object"),
        pytest.param("/v1/nothing", {}, 404, "no bridge endpoint", id="unknown_path"),
    ],
)
async def test_rejections(path: str, body: Any, status: int, needle: str) -> None:
    app, _ = served("openai-chat/readme_text_then_parallel_tools.sse")
    async with asgi_client(app) as client:
        response = await client.post(f"http://bridge{path}", json=body)
    assert response.status_code == status
    payload = response.json()
    assert "error" in payload
    assert needle in json.dumps(payload)


async def test_bad_json_and_wrong_method() -> None:
    app, _ = served("openai-chat/readme_text_then_parallel_tools.sse")
    async with asgi_client(app) as client:
        bad = await client.post(
            "http://bridge/v1/messages", content=b"{nope", headers={"content-type": "application/json"}
        )
        get = await client.get("http://bridge/v1/messages")
    assert bad.status_code == 400
    assert bad.json()["type"] == "error"  # Anthropic-shaped for an Anthropic path
    assert "not valid JSON" in bad.json()["error"]["message"]
    assert get.status_code == 405
    assert get.headers["allow"] == "POST"


async def test_recorded_error_status_is_served_as_error(tmp_path: Path) -> None:
    rec = tmp_path / "limited.sse"
    rec.write_bytes(json.dumps(ANTHROPIC_429).encode())
    (tmp_path / "limited.meta.json").write_text(json.dumps({"protocol": "anthropic", "status": 429}))
    app = create_app(upstream=RecordingUpstream(rec))
    with pytest.raises(openai.RateLimitError, match="Slow down"):
        async with openai_client(app).chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            await stream.get_final_completion()


async def test_request_fields_not_forwarded_are_counted() -> None:
    app, _ = served("anthropic/thinking_parallel_tools.sse")
    async with openai_client(app).chat.completions.stream(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        seed=7,
    ) as stream:
        await stream.get_final_completion()
    assert app.stats.dropped["request_field"] == 1  # `seed`
    recorded = app.upstream.requests[-1]  # type: ignore[attr-defined]
    assert "seed" not in recorded


@pytest.mark.parametrize("include_usage", [None, False, True])
async def test_chat_usage_chunk_only_when_the_client_asks(include_usage: bool | None) -> None:
    app, _ = served("anthropic/thinking_parallel_tools.sse")
    extra: Any = {} if include_usage is None else {"stream_options": {"include_usage": include_usage}}
    stream = await openai_client(app).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True, **extra
    )
    chunks = [chunk async for chunk in stream]
    empty = [c for c in chunks if not c.choices]
    # The OpenAI quickstart loop reads chunk.choices[0] on every chunk: it must not fail
    # unless the client asked for the usage chunk.
    assert len(empty) == (1 if include_usage else 0)
    if include_usage:
        assert empty[0].usage is not None
        assert empty[0].usage.completion_tokens > 0


async def test_a_field_that_changes_the_answer_is_refused_unless_dropped() -> None:
    app, _ = served("anthropic/thinking_parallel_tools.sse")
    # Several answers (``n``): Anthropic has no such field (Chat custom tools are carried
    # since issue 13, so they no longer serve as the example).
    with pytest.raises(openai.BadRequestError) as caught:
        await openai_client(app).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], n=2, stream=True
        )
    assert "request field n " in str(caught.value)
    assert app.upstream.requests == []  # type: ignore[attr-defined]
    app.drop_params = True
    async with openai_client(app).chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "hi"}], n=2
    ) as stream:
        await stream.get_final_completion()
    assert "n" not in app.upstream.requests[-1]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- a real server on loopback


@pytest.mark.parametrize("impl", ["httptools", "h11"])
async def test_uvicorn_loopback_streams_to_openai_sdk_as_it_arrives(impl: str) -> None:
    # Served as ``serve`` serves: the bridge's subclass of uvicorn's HTTP protocol (_uvicorn_http).
    uvicorn = pytest.importorskip("uvicorn")
    if impl == "httptools":
        pytest.importorskip("httptools")
    from maas_stream.bridge._ahead import AHEAD
    from maas_stream.bridge._uvicorn_http import http_protocol

    recording = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
    frames = sse_frames(recording.read_bytes())
    first_text = next(i for i, f in enumerate(frames) if b'"text_delta"' in f)
    gate = anyio.Event()

    async def body() -> AsyncIterator[bytes]:
        for frame in frames[: first_text + 1]:
            yield frame
        await gate.wait()
        for frame in frames[first_text + 1 :]:
            yield frame

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    app = create_app(upstream=fake_upstream("anthropic", handler))
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", http=http_protocol(impl)
    )
    server = uvicorn.Server(config)
    text: list[str] = []
    calls: dict[int, list[str]] = {}
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
                await anyio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            client = openai.AsyncOpenAI(
                api_key="k",
                base_url=f"http://127.0.0.1:{port}/v1",
                http_client=httpx2.AsyncClient(trust_env=False),
                max_retries=0,
            )
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async for chunk in stream:
                for choice in chunk.choices:
                    if choice.delta.content:
                        text.append(choice.delta.content)
                        gate.set()  # only the first frames were sent upstream when the text arrived
                    for call in choice.delta.tool_calls or []:
                        entry = calls.setdefault(call.index, ["", ""])
                        if call.function and call.function.name:
                            entry[0] = call.function.name
                        if call.function and call.function.arguments:
                            entry[1] += call.function.arguments
            await client.close()
            server.should_exit = True
    assert gate.is_set()
    assert AHEAD.waiting == 0  # (each request's count released once its first step ran)
    got = [(name, json.loads(args or "{}")) for name, args in calls.values()]
    assert ("".join(text), got) == expected(recording)


def test_cli_serve_builds_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    ran: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append((app, kw)))
    path = RECORDINGS / "gemini/thoughts_text_parallel_calls.sse"
    assert main(["serve", "--recording", str(path), "--port", "8123", "--speed", "2"]) == 0
    app, kw = ran[0]
    assert isinstance(app, BridgeApp)
    assert isinstance(app.upstream, RecordingUpstream)
    assert app.upstream.protocol == "gemini"
    assert app.upstream.speed == 2.0
    assert kw["host"] == "127.0.0.1"
    assert kw["port"] == 8123

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert main(["serve", "--upstream-protocol", "anthropic", "--upstream-model", "claude-x"]) == 0
    upstream = ran[1][0].upstream
    assert isinstance(upstream, HTTPUpstream)
    assert upstream.url == "https://api.anthropic.com/v1/messages"
    assert upstream.model == "claude-x"


def test_cli_serve_needs_one_source() -> None:
    from maas_stream._cli import main

    with pytest.raises(SystemExit) as info:
        main(["serve"])
    assert info.value.code == 2


@pytest.mark.parametrize("content", [5, {"text": "hi"}, True], ids=["number", "object", "bool"])
async def test_content_of_the_wrong_type_is_refused_not_dropped(content: object) -> None:
    app, _ = served("anthropic/thinking_parallel_tools.sse")
    with pytest.raises(openai.BadRequestError, match=r"messages\[0\]") as info:
        await openai_client(app).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": content}],  # type: ignore[list-item, misc]
        )
    assert info.value.status_code == 400
    assert app.stats.streams == 0
    assert app.upstream.requests == []  # type: ignore[attr-defined]
