"""Failure is always visible: upstream faults over loopback, judged by the official SDKs.

The upstream is a raw HTTP/1.1 server on 127.0.0.1 (``tests/io/loopback.py``) that sends the
first frames of a real Anthropic stream (thinking, text, the start of a tool call) and then
fails: the connection is reset, the stream ends early (cleanly), a frame is malformed, the
provider reports an error in-band, or it stalls. The bridge reaches it through ``HTTPUpstream``
(its own pooled httpx2 client); each client SDK talks to the bridge through
``httpx2.ASGITransport``. Every SDK must raise (never return a truncated answer as a success),
and the text that arrived before the fault must have reached the client.

Faults before the first byte (unreachable, no headers, empty body, 429/500) must be HTTP errors
in the client's error shape: 502/504 or the upstream's status, never a 200 or a plain-text 500.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anthropic
import anyio
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from maas_stream.bridge import BridgeApp, HTTPUpstream, Timeouts, create_app
from tests.conftest import RECORDINGS
from tests.io.loopback import Conn, Script, serve

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

pytestmark = pytest.mark.anyio

LIMIT = 10.0
"""No single test may take longer (a stall fails instead of hanging)."""

FAST = Timeouts(connect=2.0, first_byte=0.5, idle=0.5, total=5.0)
"""Short limits, so a stalled upstream is detected within the test."""


def sse_frames(data: bytes) -> list[bytes]:
    return [f + b"\n\n" for f in data.split(b"\n\n") if f.strip()]


FRAMES = sse_frames((RECORDINGS / "anthropic/thinking_parallel_tools.sse").read_bytes())
CUT = next(i for i, f in enumerate(FRAMES) if b'"input_json_delta"' in f) + 1
"""The frames sent before a fault: thinking, the text, a tool call with half its arguments."""
TEXT = "Checking both cities now."
assert TEXT.encode() in b"".join(FRAMES[:CUT])

MALFORMED = b"event: content_block_delta\ndata: {this is not json\n\n"
PROVIDER_ERROR = (
    b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
)

FAULTS = {
    # fault: (what the upstream does after the first frames, words the client's error must hold)
    "reset": ("close the socket mid-body (no last chunk)", "connection"),
    "cut": ("end the body cleanly without message_stop", "cut"),
    "malformed": ("send a frame that is not JSON", "invalid stream"),
    "provider_error": ("send Anthropic's own event: error", "Overloaded"),
    "stall": ("send nothing more", "idle timeout"),
}


def upstream_script(fault: str) -> Script:
    async def script(conn: Conn) -> None:
        await conn.start()
        for frame in FRAMES[:CUT]:
            await conn.send(frame)
        if fault == "reset":
            return  # the server closes the socket: the chunked body never ends
        if fault == "malformed":
            await conn.send(MALFORMED)
        elif fault == "provider_error":
            await conn.send(PROVIDER_ERROR)
        elif fault == "stall":
            await conn.wait_disconnect()  # until the bridge gives up and hangs up
            return
        await conn.end()

    return script


def bridge(url: str, timeouts: Timeouts = FAST) -> BridgeApp:
    upstream = HTTPUpstream("anthropic", url + "/v1/messages", api_key="upstream-secret", timeouts=timeouts)
    return create_app(upstream=upstream)


def asgi(app: BridgeApp) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))


def openai_client(app: BridgeApp) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="k", base_url="http://bridge/v1", http_client=asgi(app), max_retries=0)


def anthropic_client(app: BridgeApp) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="k", base_url="http://bridge", http_client=asgi(app), max_retries=0
    )


def genai_client(app: BridgeApp) -> genai.Client:
    options = genai_types.HttpOptions(
        base_url="http://bridge/", api_version="v1beta", httpx_async_client=asgi(app)
    )
    return genai.Client(api_key="k", http_options=options)


MESSAGES: Any = [{"role": "user", "content": "Weather in Paris and Oslo?"}]


# ------------------------------------------------------------------- each SDK, streaming


async def chat_stream(app: BridgeApp, text: list[str]) -> None:
    stream = await openai_client(app).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    async for chunk in stream:
        text += [c.delta.content for c in chunk.choices if c.delta.content]


async def anthropic_stream(app: BridgeApp, text: list[str]) -> None:
    async with anthropic_client(app).messages.stream(model="m", max_tokens=100, messages=MESSAGES) as stream:
        async for event in stream:
            if event.type == "text":
                text.append(event.text)


async def gemini_stream(app: BridgeApp, text: list[str]) -> None:
    async for chunk in await genai_client(app).aio.models.generate_content_stream(model="m", contents="hi"):
        for cand in chunk.candidates or []:
            text += [
                p.text
                for p in (cand.content.parts if cand.content else None) or []
                if p.text and not p.thought
            ]


SDKS: dict[str, tuple[Callable[[BridgeApp, list[str]], Awaitable[None]], type[BaseException]]] = {
    "openai-chat": (chat_stream, openai.APIError),
    "anthropic": (anthropic_stream, anthropic.APIError),
    "gemini": (gemini_stream, genai_errors.APIError),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("sdk", list(SDKS))
async def test_a_mid_stream_fault_makes_each_sdk_raise(sdk: str, fault: str) -> None:
    consume, error = SDKS[sdk]
    words = FAULTS[fault][1]
    text: list[str] = []
    async with serve(upstream_script(fault)) as upstream:
        app = bridge(upstream.url)
        with anyio.fail_after(LIMIT), pytest.raises(error) as info:
            await consume(app, text)
    assert "".join(text) == TEXT  # what came before the fault reached the client
    assert words in str(info.value)
    assert "upstream-secret" not in str(info.value)
    if fault == "provider_error":
        assert app.stats.stream_errors == 0  # the provider's own error, passed on in-band
    else:
        assert app.stats.stream_errors == 1
    assert app.stats.streams == (1 if fault == "provider_error" else 0)
    assert upstream.errors == []


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_mid_stream_fault_fails_the_responses_stream(fault: str) -> None:
    async with serve(upstream_script(fault)) as upstream:
        app = bridge(upstream.url)
        with anyio.fail_after(LIMIT):
            stream = await openai_client(app).responses.create(model="m", input="hi", stream=True)
            events = [event async for event in stream]
            with pytest.raises(RuntimeError, match=r"response\.completed"):
                async with openai_client(app).responses.stream(model="m", input="hi") as helper:
                    await helper.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[-2:] == ["error", "response.failed"]
    assert "response.completed" not in kinds
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == TEXT
    failed = events[-1]
    assert failed.type == "response.failed"
    assert failed.response.error is not None
    assert FAULTS[fault][1] in failed.response.error.message


# ------------------------------------------------------------------- not streaming


@pytest.mark.parametrize("fault", ["reset", "cut", "malformed", "provider_error", "stall", "empty"])
async def test_a_broken_upstream_is_never_a_200_body(fault: str) -> None:
    async def empty(conn: Conn) -> None:
        await conn.start()
        await conn.end()

    script = empty if fault == "empty" else upstream_script(fault)
    async with serve(script) as upstream:
        app = bridge(upstream.url)
        with anyio.fail_after(LIMIT):
            with pytest.raises(openai.APIStatusError) as chat:
                await openai_client(app).chat.completions.create(model="m", messages=MESSAGES)
            with pytest.raises(anthropic.APIStatusError) as claude:
                await anthropic_client(app).messages.create(model="m", max_tokens=10, messages=MESSAGES)
            with pytest.raises(genai_errors.APIError) as gemini:
                await genai_client(app).aio.models.generate_content(model="m", contents="hi")
    expected = 504 if fault == "stall" else 502
    assert chat.value.status_code == expected
    assert claude.value.status_code == expected
    assert gemini.value.code == expected
    assert app.stats.streams == 0
    assert app.stats.rejected == 3


# ------------------------------------------------------------------- before the first byte


async def test_an_unreachable_upstream_is_502_in_the_client_shape() -> None:
    async with serve(upstream_script("cut")) as upstream:
        url = upstream.url  # the server stops at the end of the block: the port is closed after
    app = bridge(url)
    with anyio.fail_after(LIMIT):
        with pytest.raises(openai.APIStatusError) as chat:
            await openai_client(app).chat.completions.create(model="m", messages=MESSAGES, stream=True)
        with pytest.raises(anthropic.APIStatusError) as claude:
            await anthropic_client(app).messages.create(
                model="m", max_tokens=10, messages=MESSAGES, stream=True
            )
    assert chat.value.status_code == 502
    assert isinstance(chat.value.body, dict)
    assert "connection failed" in chat.value.message
    assert claude.value.status_code == 502
    assert claude.value.body["type"] == "error"  # type: ignore[index]


async def test_an_upstream_that_never_answers_is_504() -> None:
    async def silent(conn: Conn) -> None:
        await conn.wait_disconnect()  # reads the request, never sends a status line

    async with serve(silent) as upstream:
        app = bridge(upstream.url)
        with anyio.fail_after(LIMIT), pytest.raises(openai.APIStatusError) as info:
            await openai_client(app).chat.completions.create(model="m", messages=MESSAGES, stream=True)
        with anyio.fail_after(LIMIT):
            await upstream.disconnected.wait()  # the bridge hung up on it
    assert info.value.status_code == 504
    assert "first byte" in info.value.message


@pytest.mark.parametrize(
    ("status", "sdk_error"),
    [
        pytest.param(429, openai.RateLimitError, id="429"),
        pytest.param(500, openai.InternalServerError, id="500"),
    ],
)
async def test_an_upstream_error_status_is_passed_on_in_the_client_shape(
    status: int, sdk_error: type[openai.APIStatusError]
) -> None:
    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": "upstream said no"}})

    async def refuse(conn: Conn) -> None:
        await conn.start(status, {"content-type": "application/json", "retry-after": "7"})
        await conn.send(body.encode())
        await conn.end()

    async with serve(refuse) as upstream:
        app = bridge(upstream.url)
        with anyio.fail_after(LIMIT), pytest.raises(sdk_error) as info:
            await openai_client(app).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert info.value.status_code == status
    assert "upstream said no" in info.value.message
    assert info.value.response.headers["retry-after"] == "7"


async def test_a_total_timeout_ends_a_trickling_stream_in_band() -> None:
    async def trickle(conn: Conn) -> None:
        await conn.start()
        for frame in FRAMES[:CUT]:
            await conn.send(frame)
        while True:  # pings forever: never idle, never done
            await conn.send(b"event: ping\ndata: {}\n\n")
            await anyio.sleep(0.05)

    async with serve(trickle) as upstream:
        app = bridge(upstream.url, Timeouts(connect=2.0, first_byte=2.0, idle=2.0, total=0.6))
        text: list[str] = []
        with anyio.fail_after(LIMIT), pytest.raises(openai.APIError) as info:
            await chat_stream(app, text)
    assert "".join(text) == TEXT
    assert "total timeout" in str(info.value)
