"""astream / aaggregate / aconvert / aconnect over a real loopback HTTP server, with httpx and httpx2."""

from __future__ import annotations

import contextlib
import gzip
import importlib
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import httpx_sse
import pytest

import maas_stream as ms

from ..conftest import params, recordings
from .loopback import Conn, odd_chunks, send_recording, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path
    from types import ModuleType

pytestmark = pytest.mark.anyio

CHAT = recordings("openai-chat")
DATA = {p: p.read_bytes() for p in CHAT}
TOOLS = next(p for p in CHAT if p.name == "readme_text_then_parallel_tools.sse")


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def client(lib: ModuleType) -> Any:
    return lib.AsyncClient(trust_env=False, timeout=10)


async def collect(events: AsyncIterator[object]) -> list[object]:
    return [ev async for ev in events]


def frames(data: bytes) -> list[bytes]:
    """The recording cut after each blank line (whole SSE events, LF framing)."""
    parts = data.split(b"\n\n")
    return [p + b"\n\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@pytest.mark.parametrize("path", params(CHAT))
async def test_aaggregate_over_loopback_equals_sans_io(path: Path, lib: ModuleType) -> None:
    data = DATA[path]
    try:
        expected: ms.Response | Exception = ms.aggregate(data, protocol="openai-chat")
    except ms.RemoteProtocolError as exc:
        expected = exc
    async with serve(send_recording(data)) as server, client(lib) as c:
        async with c.stream("POST", server.url + "/v1/chat/completions", json={"stream": True}) as resp:
            if isinstance(expected, Exception):
                with pytest.raises(type(expected)) as info:
                    await ms.aaggregate(resp, protocol="openai-chat")
                assert str(info.value) == str(expected)
            else:
                got = await ms.aaggregate(resp, protocol="openai-chat")
                assert got == expected
    assert server.errors == []
    assert server.requests[0].method == "POST"


async def test_aaggregate_detects_protocol_and_sdk_raw_response_shape(lib: ModuleType) -> None:
    data = DATA[TOOLS]

    class RawResponse:  # the shape of openai's with_streaming_response objects
        def __init__(self, http_response: Any) -> None:
            self.http_response = http_response

    async with serve(send_recording(data)) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            got = await ms.aaggregate(RawResponse(resp))
            assert resp.is_closed
    assert got == ms.aggregate(data)
    assert got.protocol == "openai-chat"


async def test_astream_events_equal_sans_io_events(lib: ModuleType) -> None:
    data = DATA[TOOLS]
    agg = ms.StreamAggregator("openai-chat", emit=True)
    expected = agg.feed(data) + agg.finish_events()
    async with serve(send_recording(data)) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            got = [ev async for ev in ms.astream(resp, protocol="openai-chat")]
    assert got == expected


async def test_aconvert_yields_while_the_server_is_still_sending(lib: ModuleType) -> None:
    data = DATA[TOOLS]
    parts = frames(data)
    gate = anyio.Event()
    sent_before_gate: list[int] = []

    async def script(conn: Conn) -> None:
        await conn.start()
        for chunk in parts[:3]:
            await conn.send(chunk)
        sent_before_gate.append(conn.sent)
        await gate.wait()  # only set by the client once output arrived
        for chunk in parts[3:]:
            await conn.send(chunk)
        await conn.end()

    outputs: list[bytes] = []
    async with serve(script) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(5):  # a buffering converter would deadlock here
                async for out in ms.aconvert(resp, protocol="openai-chat", to="openai-chat"):
                    if not outputs:
                        assert not gate.is_set()
                        gate.set()
                    outputs.append(out)
    assert sent_before_gate[0] < len(data)
    assert len(outputs) > 1
    assert b"".join(outputs) == ms.convert(data, to="openai-chat", protocol="openai-chat")


def encoded(data: bytes, encoding: str) -> Any:
    """A script that sends ``data`` with ``content-encoding: encoding`` (gzip: compressed)."""
    body = gzip.compress(data) if "gzip" in encoding else data

    async def script(conn: Conn) -> None:
        await conn.start(headers={"content-encoding": encoding})
        for chunk in odd_chunks(body):
            await conn.send(chunk)
        await conn.end()

    return script


@pytest.mark.parametrize("encoding", ["gzip", "identity", "gzip, identity"])
async def test_content_encoded_body_is_decoded(lib: ModuleType, encoding: str) -> None:
    # A body without an encoding is read raw (no httpx decoder layer); any other is decoded.
    data = DATA[TOOLS]
    agg = ms.StreamAggregator("openai-chat", emit=True)
    expected = agg.feed(data) + agg.finish_events()
    async with serve(encoded(data, encoding)) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            assert await ms.aaggregate(resp, protocol="openai-chat") == ms.aggregate(data)
            assert resp.is_closed
        async with c.stream("POST", server.url) as resp:
            assert [ev async for ev in ms.astream(resp, protocol="openai-chat")] == expected


async def test_a_response_already_read_is_read_from_its_content(lib: ModuleType) -> None:
    data = DATA[TOOLS]
    async with serve(send_recording(data, pause=0)) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            await resp.aread()
            assert await ms.aaggregate(resp, protocol="openai-chat") == ms.aggregate(data)


def stall_after(parts: list[bytes]) -> Any:
    async def script(conn: Conn) -> None:
        await conn.start()
        for chunk in parts:
            await conn.send(chunk)
        await conn.wait_disconnect()

    return script


@pytest.mark.parametrize(
    "how",
    [
        "aclosing",
        # Without aclosing() the generator is closed when collected; trio warns about that by design.
        pytest.param("break", marks=pytest.mark.filterwarnings("ignore:Async generator:ResourceWarning")),
    ],
)
async def test_breaking_out_closes_the_connection(lib: ModuleType, how: str) -> None:
    parts = frames(DATA[TOOLS])
    async with serve(stall_after(parts[:3])) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            if how == "aclosing":
                async with contextlib.aclosing(ms.astream(resp, protocol="openai-chat")) as events:
                    async for event in events:
                        assert isinstance(event, ms.events.ResponseStart)
                        break
            else:
                async for event in ms.astream(resp, protocol="openai-chat"):
                    assert isinstance(event, ms.events.ResponseStart)
                    break
            # Still inside client.stream(): only our generator can have hung up.
            with anyio.fail_after(5):
                await server.disconnected.wait()
            assert resp.is_closed


async def test_cancelling_the_consumer_closes_the_connection(lib: ModuleType) -> None:
    parts = frames(DATA[TOOLS])
    seen: list[object] = []
    async with serve(stall_after(parts[:3])) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.move_on_after(0.3) as scope:
                async for event in ms.astream(resp, protocol="openai-chat"):
                    seen.append(event)
            assert scope.cancelled_caught
            with anyio.fail_after(5):
                await server.disconnected.wait()
            assert resp.is_closed
    assert seen  # it was reading when cancelled


async def test_stalled_server_hits_the_idle_timeout(lib: ModuleType) -> None:
    parts = frames(DATA[TOOLS])
    async with serve(stall_after(parts[:2])) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(5), pytest.raises(ms.IdleTimeoutError) as info:
                await ms.aaggregate(resp, protocol="openai-chat", idle_timeout=0.2)
            with anyio.fail_after(5):
                await server.disconnected.wait()
    err = info.value
    assert "idle timeout" in str(err)
    assert "0.2s" in str(err)
    assert err.timeout == 0.2
    assert err.received == len(parts[0]) + len(parts[1])
    assert isinstance(err, TimeoutError)
    assert isinstance(err, lib.ReadTimeout)  # the transport's own timeout class
    assert isinstance(err, ms.StreamIOError)


ERRORS = [
    pytest.param(
        429,
        "application/json",
        b'{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit"}}',
        {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": "rate_limit"}},
        "Rate limit reached",
        id="429-json",
    ),
    pytest.param(
        400,
        "application/json",
        b'{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}',
        {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: required"}},
        "max_tokens: required",
        id="400-anthropic-shape",
    ),
    pytest.param(
        502, "text/html", b"<h1>Bad gateway</h1>", "<h1>Bad gateway</h1>", "Bad gateway", id="502-text"
    ),
]


def answer(status: int, content_type: str, body: bytes) -> Any:
    async def script(conn: Conn) -> None:
        await conn.start(status, {"content-type": content_type})
        await conn.send(body)
        await conn.end()

    return script


@pytest.mark.parametrize(("status", "ctype", "raw", "body", "text"), ERRORS)
async def test_error_status_raises_with_the_provider_body(
    lib: ModuleType, status: int, ctype: str, raw: bytes, body: object, text: str
) -> None:
    async with serve(answer(status, ctype, raw)) as server, client(lib) as c:
        async with c.stream("POST", server.url + "/v1/chat/completions") as resp:
            with pytest.raises(ms.ProviderHTTPError) as info:
                await collect(ms.astream(resp, protocol="openai-chat"))
            assert resp.is_closed
        with pytest.raises(lib.HTTPStatusError) as info2:
            async with ms.io.aconnect(c, "POST", server.url + "/v1/chat/completions", protocol="openai-chat"):
                pytest.fail("aconnect must not hand over an error answer")
    for err in (info.value, info2.value):
        assert isinstance(err, ms.ProviderHTTPError)
        assert err.status == status
        assert err.body == body
        assert err.content == raw
        assert text in str(err)
        assert str(status) in str(err)
        assert err.response.status_code == status
        assert str(err.request.url).endswith("/v1/chat/completions")


async def test_aconnect_refuses_a_non_stream_answer(lib: ModuleType) -> None:
    raw = b'{"id":"chatcmpl-1","object":"chat.completion","choices":[]}'
    async with serve(answer(200, "application/json", raw)) as server, client(lib) as c:
        with pytest.raises(ms.UnexpectedContentTypeError) as info:
            async with ms.io.aconnect(c, "POST", server.url, protocol="openai-chat"):
                pytest.fail("not a stream")
        async with c.stream("POST", server.url) as resp:
            with pytest.raises(ms.UnexpectedContentTypeError):
                await ms.aaggregate(resp, protocol="openai-chat")
    err = info.value
    assert err.content_type == "application/json"
    assert err.body == {"id": "chatcmpl-1", "object": "chat.completion", "choices": []}
    assert isinstance(err, httpx_sse.SSEError if lib is httpx else lib.SSEError)


async def test_aconnect_streams_and_sends_accept_header(lib: ModuleType) -> None:
    data = DATA[TOOLS]
    async with serve(send_recording(data)) as server, client(lib) as c:
        async with ms.io.aconnect(
            c, "POST", server.url + "/v1/chat/completions", protocol="openai-chat", json={"stream": True}
        ) as source:
            assert source.response.status_code == 200
            got = await source.aaggregate()
    assert got == ms.aggregate(data, protocol="openai-chat")
    assert server.requests[0].headers["accept"] == "text/event-stream"
    assert server.requests[0].body == b'{"stream":true}'


@pytest.mark.parametrize("encoding", ["gzip", "identity", None])
def test_sync_readers_decode_a_content_encoded_body(lib: ModuleType, encoding: str | None) -> None:
    data = DATA[TOOLS]
    agg = ms.StreamAggregator("openai-chat", emit=True)
    expected = agg.feed(data) + agg.finish_events()
    body = gzip.compress(data) if encoding == "gzip" else data
    headers = {"content-type": "text/event-stream"} | ({"content-encoding": encoding} if encoding else {})

    def handler(request: Any) -> Any:
        return lib.Response(200, headers=headers, content=iter(odd_chunks(body)))  # not read ahead

    with lib.Client(transport=lib.MockTransport(handler)) as c:
        with c.stream("POST", "http://test/") as resp:
            assert list(ms.stream(resp, protocol="openai-chat")) == expected
            assert resp.is_closed
        with c.stream("POST", "http://test/") as resp:
            resp.read()
            assert list(ms.stream(resp, protocol="openai-chat")) == expected
