"""The bridge's lean HTTP/1.1 upstream transport: what httpx2's own transport did, byte for byte.

A raw TCP server on 127.0.0.1 answers with exactly the bytes each test writes (chunk sizes split
anywhere, keep-alive, a connection closed mid-body, informational answers), and the client is
the one the bridge builds (``new_client``). The body a response yields must be the bytes the
server framed, whatever the cut between socket reads; a connection must be reused only when its
last answer was read whole; faults must be httpx2's own error classes (what ``_checks`` maps).
"""

from __future__ import annotations

import gzip
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream.bridge import HTTPUpstream, Timeouts
from maas_stream.bridge._http1 import Answer as _Answer
from maas_stream.bridge._transport import LeanTransport
from maas_stream.bridge._upstream import new_client
from tests.io.loopback import Conn, serve

pytestmark = pytest.mark.anyio

Handler = Callable[[anyio.abc.SocketStream, bytes], Awaitable[bool]]
"""Answers one request (its head and body bytes); returns whether to keep the connection open."""


async def read_request(stream: anyio.abc.SocketStream, pending: bytearray) -> bytes | None:
    """One request's bytes (head and content-length body), or ``None`` when the client left."""
    while b"\r\n\r\n" not in pending:
        try:
            pending += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    end = pending.index(b"\r\n\r\n") + 4
    length = 0
    for line in bytes(pending[:end]).split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(pending) < end + length:
        pending += await stream.receive()
    request = bytes(pending[: end + length])
    del pending[: end + length]
    return request


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A server running ``handler`` per request; yields its base URL and the requests per connection."""
    connections: list[int] = []

    async def serve_conn(stream: anyio.abc.SocketStream) -> None:
        index = len(connections)
        connections.append(0)
        pending = bytearray()
        async with stream:
            while (request := await read_request(stream, pending)) is not None:
                connections[index] += 1
                if not await handler(stream, request):
                    return

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve_conn)
        try:
            yield f"http://127.0.0.1:{port}", connections
        finally:
            tg.cancel_scope.cancel()


def chunked(body: bytes, size: int, *, ext: bool = True) -> bytes:
    """``body`` in chunks of ``size`` bytes (with a chunk extension on each size line), a trailer."""
    line = b"%x;ext=1\r\n%s\r\n" if ext else b"%x\r\n%s\r\n"
    out = b"".join(line % (len(p), p) for p in (body[i : i + size] for i in range(0, len(body), size)))
    return out + b"0\r\nx-trailer: y\r\n\r\n"


def answer(body: bytes, *, framing: str = "chunked", extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" + extra
    if framing == "chunked":
        return head + b"transfer-encoding: chunked\r\n\r\n" + chunked(body, 7)
    if framing == "length":
        return head + b"content-length: %d\r\n\r\n" % len(body) + body
    return head + b"connection: close\r\n\r\n" + body


BODY = b"".join(b'data: {"n": %d, "text": "word %d"}\n\n' % (i, i) for i in range(300))


def client() -> httpx2.AsyncClient:
    found: httpx2.AsyncClient = new_client(Timeouts(connect=2.0), 10)
    assert isinstance(found._transport, LeanTransport)
    return found


async def drip(stream: anyio.abc.SocketStream, data: bytes, step: int) -> None:
    """Send ``data`` in pieces of ``step`` bytes, each its own socket write."""
    for i in range(0, len(data), step):
        await stream.send(data[i : i + step])
        await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
@pytest.mark.parametrize("step", [1, 5, 4096])
async def test_the_body_is_the_framed_bytes_whatever_the_cut(framing: str, step: int) -> None:
    data = answer(BODY[:3000] if step == 1 else BODY, framing=framing)

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        assert request.startswith(b"POST /v1/x HTTP/1.1\r\n")
        assert b'{"a":1}' in request
        await drip(stream, data, step)
        return framing != "close"

    async with raw_server(handler) as (url, _), client() as c:
        async with c.stream("POST", url + "/v1/x", json={"a": 1}) as resp:
            got = b"".join([part async for part in resp.aiter_bytes()])
    assert got == (BODY[:3000] if step == 1 else BODY)


async def test_a_burst_arrives_as_one_piece_per_read() -> None:
    """Frames the server wrote together reach the reader as one piece, not one per chunk."""

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(answer(BODY[:2000]))
        return True

    async with raw_server(handler) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            pieces = [part async for part in resp.aiter_raw()]
    assert b"".join(pieces) == BODY[:2000]
    assert len(pieces) < 5  # 2000 bytes in chunks of 7: hundreds of chunks, a few reads


async def test_keep_alive_reuses_a_connection_read_whole_and_not_one_left_early() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        data = answer(BODY)
        await stream.send(data[:100])
        await anyio.sleep(0.05)  # the rest comes in a later read
        await stream.send(data[100:])
        return True

    async with raw_server(handler) as (url, connections), client() as c:
        for _ in range(3):
            async with c.stream("POST", url, json={}) as resp:
                assert b"".join([p async for p in resp.aiter_bytes()]) == BODY
        assert connections == [3]
        async with c.stream("POST", url, json={}) as resp:
            async for _ in resp.aiter_bytes():
                break  # left before the end: that connection must not serve another request
        async with c.stream("POST", url, json={}) as resp:
            assert b"".join([p async for p in resp.aiter_bytes()]) == BODY
        assert connections == [4, 1]


async def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(answer(b"data: {}\n\n", framing="length"))
        return False  # closed after the answer, without saying so

    async with raw_server(handler) as (url, connections), client() as c:
        for _ in range(3):
            resp = await c.post(url, json={})
            assert resp.content == b"data: {}\n\n"
            await anyio.sleep(0.05)  # the server's close reaches the idle connection
        assert connections == [1, 1, 1]


async def test_informational_answers_are_skipped_and_gzip_is_decoded() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n")
        await stream.send(answer(gzip.compress(BODY), framing="length", extra=b"content-encoding: gzip\r\n"))
        return True

    async with raw_server(handler) as (url, _), client() as c:
        resp = await c.post(url, json={})
    assert resp.status_code == 200
    assert resp.content == BODY


async def test_an_error_status_and_headers_reach_the_response() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        body = b'{"error": {"message": "slow down"}}'
        head = b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 7\r\n"
        await stream.send(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        return True

    async with raw_server(handler) as (url, _), client() as c:
        resp = await c.post(url, json={})
    assert resp.status_code == 429
    assert resp.reason_phrase == "Too Many Requests"
    assert resp.headers["retry-after"] == "7"
    assert resp.json() == {"error": {"message": "slow down"}}


async def test_a_body_cut_mid_chunk_is_a_remote_protocol_error_and_a_cut_stream() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        data = answer(BODY)
        await stream.send(data[: len(data) // 2])
        return False

    async with raw_server(handler) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
                async for _ in resp.aiter_bytes():
                    pass
        async with c.stream("POST", url, json={}) as resp:
            with pytest.raises(ms.StreamTransportError) as info:
                await ms.aaggregate(resp, protocol="openai-chat")
    assert isinstance(info.value.__cause__, httpx2.RemoteProtocolError)


async def test_no_answer_at_all_is_a_remote_protocol_error() -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        return False

    async with raw_server(handler) as (url, _), client() as c:
        with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
            await c.post(url, json={})


async def test_an_unreachable_host_is_a_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with client() as c:
        with pytest.raises(httpx2.ConnectError):
            await c.post(f"http://127.0.0.1:{port}/", json={})


async def test_requests_beyond_max_connections_wait_then_time_out_as_pool_timeouts() -> None:
    gate = anyio.Event()

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await gate.wait()
        await stream.send(answer(b"data: {}\n\n", framing="length"))
        return True

    c = httpx2.AsyncClient(
        transport=LeanTransport(max_connections=1, max_keepalive=1, keepalive_expiry=4.0),
        timeout=httpx2.Timeout(2.0, pool=0.2),
    )
    async with raw_server(handler) as (url, _), c:
        async with anyio.create_task_group() as tg:
            tg.start_soon(c.post, url)
            await anyio.sleep(0.05)
            with pytest.raises(httpx2.PoolTimeout):
                await c.post(url, json={})
            gate.set()
        assert (await c.post(url, json={})).status_code == 200  # the slot was given back


async def test_the_bridge_streams_through_it() -> None:
    """HTTPUpstream's own client: a Chat stream over the lean transport, aggregated."""
    chat = b"".join(
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"w%d "},"finish_reason":null}]}\n\n' % i
        for i in range(50)
    )
    chat += b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    chat += b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        assert b"authorization: Bearer sk-test-key" in request
        await drip(stream, answer(chat), 100)
        return True

    async with raw_server(handler) as (url, _):
        upstream = HTTPUpstream("openai-chat", url + "/v1/chat/completions", api_key="sk-test-key")
        try:
            async with upstream.open({"model": "m", "messages": []}, model="m") as resp:
                response = await ms.aaggregate(resp, protocol="openai-chat")
        finally:
            await upstream.aclose()
    assert response.status == "completed"
    assert response.messages[0].content[0].text == "".join(f"w{i} " for i in range(50))  # type: ignore[union-attr]


def parse(data: bytes, cuts: list[int]) -> tuple[_Answer, list[bytes]]:
    """``data`` fed to a fresh answer in the reads ``cuts`` makes; the body piece of each read."""
    answer = _Answer(head_only=False)
    pieces = []
    last = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        answer.feed(data[last:cut])
        pieces.append(answer.take())
        last = cut
    return answer, pieces


HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


@settings(max_examples=200, deadline=None)
@given(
    body=st.binary(max_size=300),
    size=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 2000), max_size=12),
    ext=st.booleans(),
    tail=st.sampled_from([b"", b"\r\n", b"HTTP/1.1 200 OK\r\n", b"junk"]),
)
def test_dechunking_is_independent_of_where_the_reads_split(
    body: bytes, size: int, cuts: list[int], ext: bool, tail: bytes
) -> None:
    answer, pieces = parse(HEAD + chunked(body, size, ext=ext) + tail, cuts)
    assert answer.complete
    assert answer.ended
    assert b"".join(pieces) == body
    # Bytes after the end (an answer nobody asked for, junk): the connection is not reused.
    # A stray CRLF between answers is skipped (llhttp's rule), as a new answer would skip it.
    assert answer.extra == (tail not in (b"", b"\r\n"))


@pytest.mark.parametrize(
    "bad",
    [b"zz\r\nabc\r\n0\r\n\r\n", b"3\r\nabcXY0\r\n\r\n", b"-3\r\nabc\r\n0\r\n\r\n", b"1" * 5000],
    ids=["size-not-hex", "no-crlf-after-data", "negative-size", "endless-size-line"],
)
def test_a_broken_chunk_framing_is_a_remote_protocol_error(bad: bytes) -> None:
    with pytest.raises(httpx2.RemoteProtocolError, match="invalid response body"):
        _Answer(head_only=False).feed(HEAD + bad)


def serve_each(*answers: bytes, close: bool = False) -> Handler:
    """A handler sending ``answers`` in turn, one per request, each in one write."""
    pending = list(answers)

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(pending.pop(0))
        return not close

    return handler


async def test_informational_answers_chunk_extensions_and_trailers_byte_by_byte() -> None:
    """Every byte its own read: the 1xx heads, odd chunk extensions, trailers; then reuse."""
    body = b"data: {}\n\n" * 3
    framed = b'4;a=1;b\r\ndata\r\n6 ;q="x;y\\""\r\n: {}\n\n\r\n14\r\n' + body[10:] + b"\r\n"
    data = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nx-padded:  v \t\r\ntransfer-encoding: chunked\r\n\r\n"
        + framed
        + b"0;last\r\nx-checksum: 1\r\nx-more: 2\r\n\r\n"
    )

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await drip(stream, data, 1)
        return True

    async with raw_server(handler) as (url, connections), client() as c:
        for _ in range(2):
            async with c.stream("POST", url, json={}) as resp:
                got = b"".join([p async for p in resp.aiter_bytes()])
            assert resp.status_code == 200
            assert resp.headers["x-padded"] == "v"
            assert "x-checksum" not in resp.headers  # trailers are dropped, as httpcore does
            assert got == body
        assert connections == [2]


async def test_several_answers_written_at_once_are_read_in_turn() -> None:
    """The first answer ends mid-read, the next request's answer comes later: the pool reuses it."""
    first = answer(BODY[:500], framing="length")
    second = answer(BODY[:900])
    async with raw_server(serve_each(first, second)) as (url, connections), client() as c:
        assert (await c.post(url, json={})).content == BODY[:500]
        assert (await c.post(url, json={})).content == BODY[:900]
    assert connections == [2]


async def test_bytes_after_the_answer_keep_its_connection_out_of_the_pool() -> None:
    extra = answer(b"data: {}\n\n", framing="length") + b"HTTP/1.1 200 OK\r\n"
    plain = answer(b"data: {}\n\n", framing="length")
    async with raw_server(serve_each(extra, plain)) as (url, connections), client() as c:
        for _ in range(2):
            assert (await c.post(url, json={})).content == b"data: {}\n\n"
    assert connections == [1, 1]


@pytest.mark.parametrize(
    ("head", "reused"),
    [
        (b"HTTP/1.1 200 OK\r\nconnection: close\r\n", False),
        (b"HTTP/1.0 200 OK\r\n", False),
        (b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\n", True),
        (b"HTTP/1.1 200 OK\r\n", True),
    ],
    ids=["close", "http-1.0", "http-1.0-keep-alive", "http-1.1"],
)
async def test_keep_alive_follows_the_answer(head: bytes, reused: bool) -> None:
    data = head + b"content-length: 10\r\n\r\ndata: {}\n\n"

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(data)
        return reused

    async with raw_server(handler) as (url, connections), client() as c:
        for _ in range(2):
            assert (await c.post(url, json={})).content == b"data: {}\n\n"
    assert connections == ([2] if reused else [1, 1])


async def test_a_request_saying_close_does_not_reuse_its_connection() -> None:
    data = answer(b"data: {}\n\n", framing="length")
    async with raw_server(serve_each(data, data)) as (url, connections), client() as c:
        for _ in range(2):
            resp = await c.post(url, json={}, headers={"connection": "close"})
            assert resp.content == b"data: {}\n\n"
    assert connections == [1, 1]


@pytest.mark.parametrize("status", [204, 304])
async def test_204_and_304_have_no_body_whatever_their_headers_say(status: int) -> None:
    data = b"HTTP/1.1 %d X\r\ncontent-length: 20\r\n\r\n" % status
    after = answer(b"data: {}\n\n", framing="length")
    async with raw_server(serve_each(data, after)) as (url, connections), client() as c:
        resp = await c.post(url, json={})
        assert (resp.status_code, resp.content) == (status, b"")
        assert (await c.post(url, json={})).content == b"data: {}\n\n"
    assert connections == [2]


async def test_an_answer_to_head_ends_with_its_head() -> None:
    """llhttp would wait for the body the content-length names: the transport ends it at the head."""
    sized = b"HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n"
    empty = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
    after = answer(b"data: {}\n\n", framing="length")
    handler = serve_each(sized, after, empty, after)
    async with raw_server(handler) as (url, connections), client() as c:
        with anyio.fail_after(5):
            resp = await c.head(url)
        assert (resp.status_code, resp.headers["content-length"], resp.content) == (200, "5000", b"")
        assert (await c.post(url, json={})).content == b"data: {}\n\n"
        assert connections == [1, 1]  # not reused: llhttp has not seen that answer's end
        assert (await c.head(url)).content == b""
        assert (await c.post(url, json={})).content == b"data: {}\n\n"
    assert connections == [1, 3]  # a HEAD answer without a body to skip: its connection is reused


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (answer(BODY)[:200], "incomplete chunked read"),  # cut inside a chunk's data
        (answer(BODY)[: answer(BODY).index(b"\r\n7", 200) + 2], "incomplete chunked read"),  # mid size line
        (answer(BODY, framing="length")[:1000], rf"received \d+ bytes, expected {len(BODY)}"),
    ],
    ids=["mid-chunk", "mid-size-line", "content-length-short"],
)
async def test_a_body_cut_by_a_close_is_a_remote_protocol_error(data: bytes, message: str) -> None:
    async with raw_server(serve_each(data, close=True)) as (url, _), client() as c:
        got: list[bytes] = []
        async with c.stream("POST", url, json={}) as resp:
            with pytest.raises(httpx2.RemoteProtocolError, match=message):
                await read_into(resp, got)
    assert got
    assert BODY.startswith(b"".join(got))  # what came before the cut was passed on


async def read_into(resp: httpx2.Response, out: list[bytes]) -> None:
    """Append each body piece of ``resp`` to ``out`` (what was read stays there when it raises)."""
    async for part in resp.aiter_bytes():
        out.append(part)


async def test_a_content_length_short_reports_what_arrived() -> None:
    data = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n" + b"x" * 50
    async with raw_server(serve_each(data, close=True)) as (url, _), client() as c:
        with pytest.raises(httpx2.RemoteProtocolError, match="received 50 bytes, expected 100"):
            await c.post(url, json={})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"HTTP/1.1 200 OK\r\nx: " + b"v" * 70_000 + b"\r\n\r\n", "head is too large"),
        (b"HTTP/1.1 20 OK\r\n\r\n", "invalid response head"),
        (b"HTTP/1.1 200 OK\r\n bad: y\r\n\r\n", "invalid response head"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 1x\r\n\r\n", "invalid response head"),
        (b"HTTP/2.0 200 OK\r\ncontent-length: 0\r\n\r\n", "invalid status line"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;" + b"e" * 10_000, "line is too long"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcXY", "invalid response body"),
    ],
    ids=["huge-head", "status", "header", "content-length", "http-2", "endless-extension", "chunk-crlf"],
)
async def test_an_answer_that_is_not_http_1_1_is_a_remote_protocol_error(data: bytes, message: str) -> None:
    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await drip(stream, data, 4096)
        await anyio.sleep(5)  # no close: the fault alone must end the read
        return False

    async with raw_server(handler) as (url, _), client() as c:
        with anyio.fail_after(4), pytest.raises(httpx2.RemoteProtocolError, match=message):
            await c.post(url, json={})


def test_without_httptools_the_bridge_uses_httpx2s_own_transport() -> None:
    """httptools not importable: the upstream client is httpx2's, and it still streams."""
    script = (
        "import sys; sys.modules['httptools'] = None\n"
        "from maas_stream.bridge import Timeouts\n"
        "from maas_stream.bridge import _http1\n"
        "from maas_stream.bridge._upstream import new_client\n"
        "c = new_client(Timeouts(), 10)\n"
        "print(_http1.AVAILABLE, type(c._transport).__name__)\n"
    )
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["False", "AsyncHTTPTransport"]


async def test_an_upstream_cookie_for_one_request_is_not_sent_on_the_next() -> None:
    # The bridge serves many users on one client: a Set-Cookie meant for user A's exchange
    # must never go out with user B's request (the prepared head carries no cookie jar).
    async def script(conn: Conn) -> None:
        first = len(conn.server.requests) == 1
        await conn.start(headers={"set-cookie": "session=user-a-secret; Path=/"} if first else {})
        await conn.send(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
        await conn.end()

    with anyio.fail_after(10):
        async with serve(script) as server:
            upstream = HTTPUpstream("anthropic", f"{server.url}/v1/messages", api_key="k")
            try:
                for user in ("a", "b"):
                    async with upstream.open({"model": "m", "messages": [user]}, model="m") as source:
                        async for _ in source.aiter_bytes():
                            pass
            finally:
                await upstream.aclose()
    assert [r.body for r in server.requests] == [
        b'{"model":"m","messages":["a"]}',
        b'{"model":"m","messages":["b"]}',
    ]
    assert "cookie" not in server.requests[1].headers
    assert server.requests[1].headers["x-api-key"] == "k"
