"""The library's reader on a lean-transport response: the body's own iterator, equal to ``aiter_raw``.

``AsyncReader`` reads a response of the bridge's upstream transport through its body's
``maas_chunks`` (one generator per read, not httpx2's ``aiter_raw`` around the body's). Each
case is read both ways (the old one by taking ``maas_chunks`` away) on asyncio, uvloop and
trio: the pieces, the errors (httpx2's, carrying the request, mapped to the library's), the
response left consumed and closed, its byte count and the connection's reuse must be the same.
"""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2
import pytest

from maas_stream.bridge._aiosock import AioConnection
from maas_stream.bridge._body import Body as _Body
from maas_stream.bridge._transport import LeanPoster, LeanTransport
from maas_stream.io._kinds import response_chunks
from maas_stream.io._source import AsyncReader
from tests.bridge.test_transport import BODY, answer, drip, raw_server
from tests.bridge.test_transport_loops import anyio_backend, client  # noqa: F401 - each loop

pytestmark = pytest.mark.anyio

CASES = {
    "chunked": answer(BODY),
    "length": answer(BODY, framing="length"),
    "close": answer(BODY, framing="close"),
    "cut": answer(BODY, framing="length")[:-100],
    "bad-chunk": answer(BODY[:2000])[: -len(b"0\r\nx-trailer: y\r\n\r\n")] + b"zz\r\n",
}


async def read_twice(data: bytes, *, keep: bool = True, stop: int | None = None) -> dict[str, Any]:
    """Two requests answered with ``data``, each read by an ``AsyncReader``: what it saw of the first.

    The server closes the connection after the answer unless ``keep``.
    """

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        try:
            await drip(stream, data, 500)
        except anyio.BrokenResourceError:  # the client left early
            return False
        return keep

    seen: dict[str, Any] = {}
    async with raw_server(handler) as (url, connections), client() as c:
        for _ in range(2):
            async with c.stream("POST", url, json={}) as resp:
                reader = AsyncReader(resp)
                pieces: list[bytes] = []
                try:
                    while (item := await reader.read()) is not None:
                        pieces.append(item)  # type: ignore[arg-type]
                        if len(pieces) == stop:
                            break
                except Exception as exc:
                    cause = exc.__cause__
                    seen.setdefault("error", (type(exc), str(exc), type(cause), str(cause)))
                    seen.setdefault("request", getattr(cause, "_request", None) is resp.request)
                finally:
                    await reader.aclose()
                seen.setdefault("body", b"".join(pieces))
                seen.setdefault("received", reader.received)
                seen.setdefault(
                    "response", (resp.is_stream_consumed, resp.is_closed, resp.num_bytes_downloaded)
                )
            await anyio.sleep(0.01)  # a close by the server reaches the idle connection
        seen["connections"] = list(connections)
    return seen


@pytest.mark.parametrize("case", list(CASES))
async def test_the_body_read_by_its_own_iterator_is_what_aiter_raw_gives(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = case in ("chunked", "length")
    with monkeypatch.context() as m:  # the old path, as httpx2's aiter_raw reads it
        m.delattr(_Body, "maas_chunks")
        old = await read_twice(CASES[case], keep=keep)

    def refused(*args: object) -> None:
        raise AssertionError("aiter_raw is not the reader's path on this transport")

    monkeypatch.setattr(httpx2.Response, "aiter_raw", refused)
    new = await read_twice(CASES[case], keep=keep)
    assert new == old
    if case in ("chunked", "length", "close"):
        assert new["body"] == BODY
        assert new["response"] == (True, True, len(BODY))
        assert new["received"] == len(BODY)
        assert new["connections"] == ([2] if keep else [1, 1])
    else:
        assert new["request"] is True  # the httpx2 error carries its request
        assert new["connections"] == [1, 1]


async def test_a_body_left_early_closes_its_connection_and_response(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.delattr(_Body, "maas_chunks")
        old = await read_twice(CASES["chunked"], stop=1)
    new = await read_twice(CASES["chunked"], stop=1)
    assert new == old
    assert new["connections"] == [1, 1]  # not read whole: not reused
    consumed, closed, _ = new["response"]
    assert consumed
    assert closed


async def test_the_bridges_own_response_is_read_by_its_body_and_refused_once_read_or_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(answer(BODY))
        return True

    def refused(*args: object) -> None:
        raise AssertionError("aiter_raw is not the reader's path on this transport")

    monkeypatch.setattr(httpx2.Response, "aiter_raw", refused)
    async with raw_server(handler) as (url, connections), client() as c:
        assert isinstance(c._transport, LeanTransport)
        poster = LeanPoster(c, c._transport)  # (what the bridge sends with: no client wrapper)
        async with poster.stream("POST", url, headers={}, content=b"{}") as resp:
            body = resp.stream
            assert isinstance(body, _Body)
            assert b"".join([p async for p in response_chunks(resp)]) == BODY
            assert (resp.is_stream_consumed, resp.is_closed, resp.num_bytes_downloaded) == (
                True,
                True,
                len(BODY),
            )
            with pytest.raises(httpx2.StreamConsumed):
                await anext(body.maas_chunks(resp))
        async with poster.stream("POST", url, headers={}, content=b"{}") as resp:
            await resp.aclose()
            assert isinstance(resp.stream, _Body)
            with pytest.raises(httpx2.StreamClosed):
                await anext(resp.stream.maas_chunks(resp))
        assert connections == [2]  # read whole: reused
        assert c._transport._idle_count == 0  # closed unread: not kept


async def test_a_compressed_body_is_still_decoded_by_aiter_bytes() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(answer(gzip.compress(BODY), framing="length", extra=b"content-encoding: gzip\r\n"))
        return True

    async with raw_server(handler) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            reader = AsyncReader(resp)
            pieces = []
            while (item := await reader.read()) is not None:
                pieces.append(item)
            await reader.aclose()
    assert b"".join(pieces) == BODY  # type: ignore[arg-type]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_asyncio_connections_wait_is_woken_by_data_and_its_timer_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    conn = AioConnection(loop, (b"http", b"h", 80))
    timers: list[asyncio.TimerHandle] = []
    call_later = loop.call_later

    def spy(*args: Any) -> asyncio.TimerHandle:
        timers.append(call_later(*args))
        return timers[-1]

    monkeypatch.setattr(loop, "call_later", spy)
    assert conn.take() is None  # nothing yet
    waiter = conn.wait(30.0)
    loop.call_soon(conn.data_received, b"ab")
    loop.call_soon(conn.data_received, b"cd")
    await waiter
    await anyio.lowlevel.checkpoint()  # (the future's done callbacks run)
    assert [t.cancelled() for t in timers] == [True]
    assert conn.take() == b"abcd"
    with pytest.raises(TimeoutError):
        await conn.wait(0.01)
    conn.eof_received()
    assert conn.take() == b""  # the end
    assert await conn.receive(None) == b""
