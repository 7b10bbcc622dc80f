"""Transport faults in ``io/`` become library errors carrying what was received (``.partial``).

Over a loopback HTTP/1.1 server, with httpx and httpx2, on asyncio and trio: a connection reset
mid-body, a refused connection, a server that never answers, a stream that trickles past its
total timeout, a stream that ends before the provider's final event. Each error is a
``ms.StreamIOError`` and also the transport library's own class, so ``except httpx2.TransportError``
keeps working; ``aconvert`` writes the target protocol's in-band error frame before raising.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import maas_stream as ms

from ..conftest import RECORDINGS
from .loopback import Conn, Script, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from types import ModuleType

pytestmark = pytest.mark.anyio

LIMIT = 10.0
DATA = (RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse").read_bytes()
FRAMES = [f + b"\n\n" for f in DATA.split(b"\n\n") if f.strip()]
HEAD = 3
"""Frames sent before a fault: the role chunk and the first text deltas."""
TEXT = ms.aggregate(b"".join(FRAMES[:HEAD]), protocol="openai-chat").messages[0].content[0].text  # type: ignore[union-attr]


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def client(lib: ModuleType) -> Any:
    return lib.AsyncClient(trust_env=False, timeout=lib.Timeout(5.0, read=None))


def head_then(fault: str) -> Script:
    async def script(conn: Conn) -> None:
        await conn.start()
        for frame in FRAMES[:HEAD]:
            await conn.send(frame)
        if fault == "reset":
            return  # no last chunk: the body is cut
        if fault == "trickle":
            while True:
                await conn.send(b": keep-alive\n\n")
                await anyio.sleep(0.05)
        await conn.end()  # "cut": a clean end without finish_reason / [DONE]

    return script


def text_of(response: ms.Response) -> str:
    return "".join(p.text for m in response.messages for p in m.content if isinstance(p, ms.TextPart))


async def drain(frames: AsyncIterator[bytes], out: list[bytes]) -> None:
    async for frame in frames:
        out.append(frame)


async def text_deltas(resp: Any, seen: list[str]) -> None:
    async for event in ms.astream(resp, protocol="openai-chat"):
        if isinstance(event, ms.events.TextDelta):
            seen.append(event.text)


async def test_a_reset_is_a_transport_error_with_the_partial_response(lib: ModuleType) -> None:
    assert TEXT
    async with serve(head_then("reset")) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTransportError) as info:
                await ms.aaggregate(resp, protocol="openai-chat")
    exc = info.value
    assert isinstance(exc, ms.StreamIOError)
    assert isinstance(exc, lib.TransportError)  # the transport's own class too
    assert isinstance(exc.__cause__, lib.RemoteProtocolError)
    assert exc.received == sum(map(len, FRAMES[:HEAD]))
    assert exc.partial is not None
    assert exc.partial.status == "failed"
    assert text_of(exc.partial) == TEXT  # nothing received is lost
    assert exc.partial.error is not None
    assert "connection" in (exc.partial.error.message or "")


async def test_astream_raises_the_same_after_the_events_it_had(lib: ModuleType) -> None:
    seen: list[str] = []
    async with serve(head_then("reset")) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTransportError) as info:
                await text_deltas(resp, seen)
    assert "".join(seen) == TEXT
    assert info.value.partial is not None
    assert text_of(info.value.partial) == TEXT


@pytest.mark.parametrize("to", ["openai-chat", "anthropic", "openai-responses", "gemini"])
async def test_aconvert_ends_with_the_targets_error_frame_then_raises(lib: ModuleType, to: str) -> None:
    out: list[bytes] = []
    async with serve(head_then("reset")) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTransportError) as info:
                await drain(ms.aconvert(resp, protocol="openai-chat", to=to), out)
    exc = info.value
    assert out[-1] == exc.error_frame  # the last frame out is the in-band error...
    assert b"error" in exc.error_frame
    # ... which the target's own decoder reads as the provider failing, after the text.
    result = ms.aggregate(b"".join(out), protocol=to)
    assert result.status == "failed"
    assert text_of(result) == TEXT
    assert result.error is not None
    assert "connection" in (result.error.message or "")


async def test_aconvert_can_leave_the_error_frame_to_the_caller(lib: ModuleType) -> None:
    out: list[bytes] = []
    async with serve(head_then("reset")) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            frames = ms.aconvert(resp, protocol="openai-chat", to="anthropic", yield_error=False)
            with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTransportError) as info:
                await drain(frames, out)
    assert b"event: error" not in b"".join(out)
    assert info.value.error_frame.startswith(b"event: error\n")


async def test_a_clean_cut_is_an_incomplete_result_but_a_failed_conversion(lib: ModuleType) -> None:
    async with serve(head_then("cut")) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            response = await ms.aaggregate(resp, protocol="openai-chat")
        assert response.status == "incomplete"  # a cut stream is a result...
        assert response.finish_reason is None
        assert text_of(response) == TEXT
        out: list[bytes] = []
        async with c.stream("POST", server.url) as resp:
            with pytest.raises(ms.IncompleteStreamError) as info:  # ... but a converted one must say so
                await drain(ms.aconvert(resp, protocol="openai-chat", to="openai-chat"), out)
    assert out[-1] == info.value.error_frame
    assert b'"error"' in out[-1]
    assert b"[DONE]" not in b"".join(out)
    assert info.value.partial is not None
    assert info.value.partial.status == "failed"


async def test_a_whole_stream_converts_without_an_error(lib: ModuleType) -> None:
    async def whole(conn: Conn) -> None:
        await conn.start()
        for frame in FRAMES:
            await conn.send(frame)
        await conn.end()

    async with serve(whole) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            out = b"".join([f async for f in ms.aconvert(resp, protocol="openai-chat", to="anthropic")])
    assert b"event: error" not in out
    assert ms.aggregate(out, protocol="anthropic").status == "completed"


async def test_a_total_timeout_ends_a_trickling_stream(lib: ModuleType) -> None:
    async with serve(head_then("trickle")) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTimeoutError) as info:
                await ms.aaggregate(resp, protocol="openai-chat", idle_timeout=5, total_timeout=0.4)
    exc = info.value
    assert exc.phase == "total"
    assert exc.timeout == 0.4
    assert isinstance(exc, TimeoutError)
    assert isinstance(exc, lib.TimeoutException)
    assert exc.partial is not None
    assert text_of(exc.partial) == TEXT


async def test_an_idle_timeout_is_a_stream_timeout_too(lib: ModuleType) -> None:
    async def stall(conn: Conn) -> None:
        await conn.start()
        await conn.send(FRAMES[0])
        await conn.wait_disconnect()

    async with serve(stall) as server, client(lib) as c:
        async with c.stream("POST", server.url) as resp:
            with anyio.fail_after(LIMIT), pytest.raises(ms.IdleTimeoutError) as info:
                await ms.aaggregate(resp, protocol="openai-chat", idle_timeout=0.2)
    assert isinstance(info.value, ms.StreamTimeoutError)
    assert info.value.phase == "idle"
    assert isinstance(info.value, lib.ReadTimeout)
    assert info.value.partial is not None
    assert info.value.partial.status == "failed"


# ------------------------------------------------------------------- aconnect: before the stream


async def test_aconnect_to_a_closed_port_is_a_transport_error(lib: ModuleType) -> None:
    async with serve(head_then("cut")) as server:
        url = server.url
    async with client(lib) as c:
        with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTransportError) as info:
            async with ms.io.aconnect(c, "POST", url, protocol="openai-chat"):
                pass
    assert not isinstance(info.value, ms.StreamTimeoutError)
    assert isinstance(info.value.__cause__, lib.ConnectError)
    assert isinstance(info.value, lib.TransportError)


async def test_aconnect_without_headers_is_a_first_byte_timeout(lib: ModuleType) -> None:
    async def silent(conn: Conn) -> None:
        await conn.wait_disconnect()

    async with serve(silent) as server, client(lib) as c:
        with anyio.fail_after(LIMIT), pytest.raises(ms.StreamTimeoutError) as info:
            async with ms.io.aconnect(c, "POST", server.url, protocol="openai-chat", first_byte_timeout=0.3):
                pass
        with anyio.fail_after(LIMIT):
            await server.disconnected.wait()  # the request was abandoned, not left open
    assert info.value.phase == "first_byte"
    assert info.value.timeout == 0.3
    assert isinstance(info.value, lib.TimeoutException)


async def test_aconnect_hands_the_rest_of_the_total_timeout_to_the_stream(lib: ModuleType) -> None:
    async with serve(head_then("trickle")) as server, client(lib) as c:
        with anyio.fail_after(LIMIT):
            async with ms.io.aconnect(
                c, "POST", server.url, protocol="openai-chat", total_timeout=0.4
            ) as src:
                left = src.total_timeout
                with pytest.raises(ms.StreamTimeoutError) as info:
                    await src.aaggregate()
    assert left is not None
    assert 0 < left <= 0.4
    assert info.value.phase == "total"


# ------------------------------------------------------------------- bodies of cut responses


def test_encode_response_strict_refuses_a_cut_or_failed_response() -> None:
    cut = ms.aggregate(b"".join(FRAMES[:HEAD]), protocol="openai-chat")
    assert cut.status == "incomplete"
    with pytest.raises(ms.LocalProtocolError, match="no final event"):
        ms.encode_response(cut, "anthropic", strict=True)
    assert ms.encode_response(cut, "anthropic")["type"] == "message"  # asked for: written as it can
    failed = ms.aggregate(
        (RECORDINGS / "openai-chat/error_in_chunk.sse").read_bytes(), protocol="openai-chat"
    )
    assert failed.status == "failed"
    with pytest.raises(ms.LocalProtocolError, match="failed"):
        ms.encode_response(failed, "openai-chat", strict=True)
    done = ms.aggregate(DATA, protocol="openai-chat")
    assert ms.encode_response(done, "anthropic", strict=True)["stop_reason"] == "tool_use"
    limited = ms.aggregate((RECORDINGS / "gemini/max_tokens.sse").read_bytes(), protocol="gemini")
    assert limited.status == "incomplete"  # the provider ended it (length): an honest answer
    assert ms.encode_response(limited, "openai-chat", strict=True)["choices"][0]["finish_reason"] == "length"
