"""Count-tokens endpoints through the bridge: each SDK's own count call, answered by the
upstream protocol's count endpoint (converted both ways) or, where it has none, a marked estimate.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

import maas_stream as ms
from maas_stream.bridge import create_app
from tests.bridge.test_serve import anthropic_client, fake_upstream, genai_client, openai_client, served

pytestmark = pytest.mark.anyio

HI: Any = [{"role": "user", "content": "how many tokens is this?"}]


def counting_upstream(protocol: str, answer: dict[str, Any], seen: list[httpx.Request]) -> Any:
    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=answer)

    return fake_upstream(protocol, handler, url=ms.get_protocol(protocol).url or "")


async def test_anthropic_sdk_counts_on_a_gemini_upstream() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=counting_upstream("gemini", {"totalTokens": 17}, seen))
    counted = await anthropic_client(app).messages.count_tokens(
        model="gemini-2.5-flash", messages=HI, system="be brief"
    )
    assert counted.input_tokens == 17
    (request,) = seen
    assert request.url.path == "/v1beta/models/gemini-2.5-flash:countTokens"
    sent = json.loads(request.content)
    inner = sent["generateContentRequest"]
    assert inner["model"] == "models/gemini-2.5-flash"
    assert inner["contents"] == [{"role": "user", "parts": [{"text": "how many tokens is this?"}]}]
    assert inner["systemInstruction"]["parts"] == [{"text": "be brief"}]


async def test_openai_responses_sdk_counts_on_an_anthropic_upstream() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=counting_upstream("anthropic", {"input_tokens": 23}, seen))
    counted = await openai_client(app).responses.input_tokens.count(
        model="claude-sonnet-4-5", input="how many tokens is this?", instructions="be brief"
    )
    assert counted.input_tokens == 23
    (request,) = seen
    assert request.url.path == "/v1/messages/count_tokens"
    sent = json.loads(request.content)
    # count_tokens refuses what only a generation takes (max_tokens, stream, sampling).
    assert set(sent) <= {"model", "messages", "system", "tools", "tool_choice", "thinking"}
    assert sent["system"] == "be brief"


async def test_genai_sdk_counts_on_a_responses_upstream() -> None:
    seen: list[httpx.Request] = []
    app = create_app(
        upstream=counting_upstream(
            "openai-responses", {"object": "response.input_tokens", "input_tokens": 9}, seen
        )
    )
    counted = await genai_client(app).aio.models.count_tokens(model="gpt-5", contents="how many?")
    assert counted.total_tokens == 9
    assert seen[0].url.path == "/v1/responses/input_tokens"
    assert "stream" not in json.loads(seen[0].content)


async def test_an_upstream_without_a_count_endpoint_gives_a_marked_estimate() -> None:
    seen: list[httpx.Request] = []
    app = create_app(upstream=counting_upstream("openai-chat", {}, seen))
    raw = await anthropic_client(app).messages.with_raw_response.count_tokens(model="gpt-4o", messages=HI)
    assert raw.headers["x-maas-stream-token-count"] == "estimate"
    assert (await raw.parse()).input_tokens > 0
    assert seen == []  # Chat has no count endpoint: nothing was sent upstream
    recorded, _ = served("anthropic/thinking_parallel_tools.sse")
    again = await anthropic_client(recorded).messages.with_raw_response.count_tokens(model="m", messages=HI)
    assert again.headers["x-maas-stream-token-count"] == "estimate"


async def test_an_upstream_count_error_reaches_the_client_in_its_shape() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": {"type": "rate_limit_error", "message": "slow down"}})

    app = create_app(upstream=fake_upstream("anthropic", handler, url=ms.get_protocol("anthropic").url or ""))
    with pytest.raises(openai.RateLimitError, match="slow down"):
        await openai_client(app).responses.input_tokens.count(model="claude-x", input="hi")
