"""The ``maas_replay`` pytest fixture drives the official openai SDK (and plain httpx) against recordings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import openai
import pytest

import maas_stream as ms
from maas_stream.io import Recorder

from ..conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

    from maas_stream.testing import ReplayServer

pytestmark = [
    pytest.mark.anyio,
    # The SDK stops at [DONE] (or raises mid-stream) without closing its own generators, nor
    # httpx2's under them; trio warns when they are collected. Our own closing is tested,
    # without this filter, in test_http.py.
    pytest.mark.filterwarnings(r"ignore:Async generator '(openai|httpx2)\.:ResourceWarning"),
]

MESSAGES: Any = [{"role": "user", "content": "hi"}]

# Recordings on which the SDK's own accumulator is a fair oracle. Left out, on purpose:
# error_in_chunk / event_error_frame (the SDK raises: tested below), legacy_function_call (the
# SDK's helper ignores the legacy function_call), same_index_new_id (the SDK merges two calls
# into one: the bug this library avoids), two_choices_usage (the helper refuses length-cut
# choices: tested below with raw chunks).
AGREED = [
    "annotations_url_citation",
    "audio_output",
    "cut_mid_arguments",
    "framing_crlf_comments_bom",
    "interleaved_three_calls",
    "readme_text_then_parallel_tools",
    "reasoning_content_compat",
    "reasoning_details_signature",
    "refusal_with_logprobs",
    "tool_call_no_arguments",
]


def ours(resp: ms.Response) -> list[tuple[int | None, str | None, list[tuple[str, str, str]]]]:
    out = []
    for m in resp.messages:
        assert isinstance(m.content, list)
        text = "".join(p.text for p in m.content if isinstance(p, ms.TextPart))
        calls = [(p.id, p.name, p.arguments) for p in m.content if isinstance(p, ms.ToolCallPart)]
        out.append((m.choice_index, text or None, calls))
    return out


def aggregate_file(name: str) -> ms.Response:
    return ms.aggregate((RECORDINGS / "openai-chat" / f"{name}.sse").read_bytes(), protocol="openai-chat")


def async_openai(maas_replay: ReplayServer, *names: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="test-key",
        base_url="http://replay.test/v1",
        max_retries=0,
        http_client=maas_replay.async_client(*[f"openai-chat/{n}" for n in names]),
    )


@pytest.mark.parametrize("name", AGREED)
async def test_openai_sdk_accumulator_agrees_with_aggregate(maas_replay: ReplayServer, name: str) -> None:
    client = async_openai(maas_replay, name)
    async with client.chat.completions.stream(model="gpt-5.1", messages=MESSAGES) as stream:
        final = await stream.get_final_completion()
    sdk = [
        (
            c.index,
            c.message.content,
            [
                (t.id, t.function.name, t.function.arguments)
                for t in (c.message.tool_calls or [])
                if t.type == "function"
            ],
        )
        for c in final.choices
    ]
    assert sdk == ours(aggregate_file(name))
    request = maas_replay.requests[0]
    assert request.method == "POST"
    assert request.url.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"


async def test_sdk_raw_streaming_response_feeds_aaggregate(maas_replay: ReplayServer) -> None:
    name = "readme_text_then_parallel_tools"
    client = async_openai(maas_replay, name)
    async with client.chat.completions.with_streaming_response.create(
        model="gpt-5.1", messages=MESSAGES, stream=True
    ) as raw:
        got = await ms.aaggregate(raw, protocol="openai-chat")
        assert raw.http_response.is_closed
    assert got == aggregate_file(name)


def test_sync_sdk_client_and_sync_stream(maas_replay: ReplayServer) -> None:
    name = "two_choices_usage"
    client = openai.OpenAI(
        api_key="k",
        base_url="http://replay.test/v1",
        max_retries=0,
        http_client=maas_replay.client(f"openai-chat/{name}"),
    )
    texts: dict[int, str] = {}
    for chunk in client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
    expected = aggregate_file(name)
    assert [(i, t) for i, t in sorted(texts.items())] == [
        (m.choice_index, text) for m, (_, text, _) in zip(expected.messages, ours(expected), strict=True)
    ]

    with client.chat.completions.with_streaming_response.create(
        model="m", messages=MESSAGES, stream=True
    ) as raw:
        events = list(ms.stream(raw, protocol="openai-chat"))
    agg = ms.StreamAggregator("openai-chat", emit=True)
    data = (RECORDINGS / "openai-chat" / f"{name}.sse").read_bytes()
    assert events == agg.feed(data) + agg.finish_events()


@pytest.mark.parametrize("name", ["error_in_chunk", "event_error_frame"])
async def test_in_band_errors_reach_the_sdk_and_our_response(maas_replay: ReplayServer, name: str) -> None:
    client = async_openai(maas_replay, name)
    with pytest.raises(openai.APIError) as info:
        async for _ in await client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
            pass
    resp = aggregate_file(name)
    assert resp.status == "failed"
    assert resp.error is not None
    assert resp.error.message == info.value.message


async def test_recorded_error_status_is_replayed_to_the_sdk(
    maas_replay: ReplayServer, tmp_path: Path
) -> None:
    rec = Recorder(tmp_path / "openai-chat" / "limited.sse", protocol="openai-chat")
    rec.start(429, {"content-type": "application/json", "retry-after": "1"})
    rec.feed(
        b'{"error":{"message":"Rate limit reached for gpt-5.1","type":"requests","code":"rate_limit_exceeded"}}'
    )
    rec.save()
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://replay.test/v1",
        max_retries=0,
        http_client=maas_replay.async_client(tmp_path / "openai-chat" / "limited"),
    )
    with pytest.raises(openai.RateLimitError) as info:
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert info.value.status_code == 429
    assert "Rate limit reached for gpt-5.1" in info.value.message


async def test_recordings_are_served_in_order_then_the_last_repeats(maas_replay: ReplayServer) -> None:
    first, second = "tool_call_no_arguments", "interleaved_three_calls"
    async with maas_replay.async_client(
        f"openai-chat/{first}", f"openai-chat/{second}.sse", library="httpx"
    ) as c:
        assert isinstance(c, httpx.AsyncClient)
        got = []
        for _ in range(3):
            async with c.stream("POST", "http://replay.test/v1/chat/completions") as resp:
                got.append(await ms.aaggregate(resp, protocol="openai-chat"))
    assert got == [aggregate_file(first), aggregate_file(second), aggregate_file(second)]
    assert len(maas_replay.requests) == 3


def test_unknown_recording_name_is_a_clear_error(maas_replay: ReplayServer) -> None:
    with pytest.raises(FileNotFoundError, match="no recording 'openai-chat/nope'"):
        maas_replay.transport("openai-chat/nope")
