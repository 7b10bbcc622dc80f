"""The hand-over seen from the relay (``io._relay``) and the bridge: the same bytes, errors and timeouts.

``aconvert_into`` with ``write_now`` over a paced loopback upstream (the connection's and the
body's side: ``test_push``), each case against the same upstream without the hand-over; then
the bridge end to end, read by the openai SDK's oracle.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx2
import pytest
from anyio.streams.tls import TLSListener

import maas_stream as ms
from maas_stream.bridge import HTTPUpstream, create_app
from maas_stream.bridge._transport import LeanTransport
from maas_stream.io import _relay
from maas_stream.io._kinds import chunk_pusher
from maas_stream.io._stream import aconvert_into
from tests import oracles
from tests.bridge.realtime_fakes import serving, tls_files
from tests.bridge.test_push import (
    HEAD,
    anyio_backend,  # noqa: F401 (the fixture: asyncio and uvloop)
    chunk,
    paced,
)
from tests.bridge.test_serve import expected, sse_frames
from tests.bridge.test_transport import raw_server, read_request
from tests.bridge.test_transport_loops import client
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.anyio

LIMIT = 10.0
SLACK = 2
"""Frames a busy machine may deliver with the answer's head (in the read the exchange makes)."""
RECORDING = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
FRAMES = sse_frames(RECORDING.read_bytes())
"""The recording's SSE frames: the paced upstream sends one per chunk, one chunk per write."""
PACED = [HEAD, *(chunk(f) for f in FRAMES), b"0\r\n\r\n"]


class Took(list[tuple[bool, int]]):
    """What each ``_relay._Push.take`` returned, with the SSE frames of its chunk.

    Counted in frames, not reads: a busy machine may deliver two of the paced writes in one read.
    """

    def frames(self, taken: bool | None = True) -> int:
        """The frames of the chunks taken (``True``), left to the relay (``False``), or all (``None``)."""
        return sum(n for result, n in self if taken is None or result is taken)

    def results(self) -> list[bool]:
        return [result for result, _ in self]


@pytest.fixture
def took(monkeypatch: pytest.MonkeyPatch) -> Took:
    """The hand-overs' results (``True``: a chunk fed and written without the relay's task)."""
    results = Took()
    take = _relay._Push.take

    def counted(self: Any, data: bytes) -> bool:
        result = take(self, data)
        results.append((result, data.count(b"\n\n")))
        return result

    monkeypatch.setattr(_relay._Push, "take", counted)
    return results


# ---------------------------------------------------------------------- the relay (library)


class Out:
    """Where a relay under test writes (``write`` and ``write_now``): the pieces in order, and how.

    ``now(n)``, if given, decides whether ``write_now`` takes a piece when ``n`` are out.
    """

    def __init__(self, now: Callable[[int], bool] | None = None) -> None:
        self.pieces: list[bytes] = []
        self.ways = {"write": 0, "now": 0}
        self._now = now

    async def write(self, data: bytes) -> None:
        self.ways["write"] += 1
        self.pieces.append(data)

    def write_now(self, data: bytes) -> bool:
        if self._now is not None and not self._now(len(self.pieces)):
            return False
        self.ways["now"] += 1
        self.pieces.append(data)
        return True


async def relayed(
    pieces: list[bytes], *, push: bool, now: Callable[[int], bool] | None = None, **kw: Any
) -> Any:
    """``aconvert_into`` (Anthropic to Chat) of a paced upstream: the output, its error, the writes."""
    out = Out(now)
    error = None
    async with raw_server(paced(pieces, pause=kw.pop("pause", 0.003))) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            try:
                await aconvert_into(
                    resp,
                    out.write,
                    to="openai-chat",
                    protocol="anthropic",
                    write_now=out.write_now if push else None,
                    **kw,
                )
            except ms.MaasStreamError as exc:
                error = (type(exc), str(exc))
            pusher = chunk_pusher(resp)
            assert pusher is not None
            assert pusher.__self__._push is None  # type: ignore[attr-defined]  # (no cycle left)
    return b"".join(out.pieces), error, out.ways


async def test_the_relay_writes_the_same_bytes_with_the_hand_over(took: Took) -> None:
    reference, error, ways = await relayed(PACED, push=False)
    assert error is None
    assert (ways["now"], took) == (0, [])
    got, error, ways = await relayed(PACED, push=True)
    assert error is None
    assert got == reference
    assert took.frames() >= len(FRAMES) - SLACK  # every frame but those read with the head
    chat = ms.aggregate(got, protocol="openai-chat")
    assert chat.status == "completed"


async def test_output_the_callback_cannot_write_is_written_by_the_relay_in_order(took: Took) -> None:
    reference, _, _ = await relayed(PACED, push=False)
    # write_now declines until three pieces are out (the bridge's first piece goes with the
    # response's start, through ``write``), and then every third time.
    got, error, ways = await relayed(PACED, push=True, now=lambda n: n >= 3 and n % 3 != 0)
    assert error is None
    assert got == reference
    assert ways["write"] >= 2
    assert ways["now"] >= 2
    # Each output write_now declined was left, and written by the relay; so was the first, which
    # the relay writes itself (nothing is handed over before it: see the next test).
    assert took.results().count(False) == ways["write"] - 1


async def test_nothing_is_handed_over_before_the_relay_wrote_its_first_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The client's first byte goes out with the answer's start, from the relay's task: the chunks
    # up to its output are never handed over (the callback could not write it), those after it
    # are. (A ping first: a chunk without output, read by the task too.)
    order: list[str] = []
    take = _relay._Push.take

    def counted(self: Any, data: bytes) -> bool:
        order.append("take")
        return take(self, data)

    monkeypatch.setattr(_relay._Push, "take", counted)
    out = Out()
    write = out.write

    async def first_write(data: bytes) -> None:
        order.append("write")
        await write(data)

    out.write = first_write  # type: ignore[method-assign]
    ping = chunk(b'event: ping\ndata: {"type": "ping"}\n\n')
    pieces = [HEAD, ping, *PACED[1:]]
    async with raw_server(paced(pieces)) as (url, _), client() as c:
        async with c.stream("POST", url, json={}) as resp:
            await aconvert_into(
                resp, out.write, to="openai-chat", protocol="anthropic", write_now=out.write_now
            )
    assert order[0] == "write"
    assert order.count("take") >= len(FRAMES) - SLACK - 1  # every frame after the first output's
    reference, _, _ = await relayed(pieces, push=False)
    assert b"".join(out.pieces) == reference


async def test_a_bad_frame_in_a_read_handed_over_fails_as_without_it(took: Took) -> None:
    bad = chunk(
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": [}\n\n'
    )
    at = len(PACED) // 2
    pieces = [*PACED[:at], bad, *PACED[at:]]
    reference = await relayed(pieces, push=False)
    got = await relayed(pieces, push=True)
    assert reference[1] is not None
    assert reference[1][0] is ms.RemoteProtocolError
    assert got[:2] == reference[:2]
    assert took.frames(None) >= at - SLACK  # every frame up to the bad one
    assert took.results()[-1] is False  # the bad frame's read: left for the relay to raise


async def test_reads_handed_over_keep_the_idle_timer_fed_and_a_stall_still_times_out(
    took: Took,
) -> None:
    frames = [HEAD, *(chunk(f) for f in FRAMES[:12])]
    _, error, _ = await relayed([*frames, *PACED[13:]], push=True, pause=0.03, idle_timeout=0.2)
    assert error is None  # 0.4 s or more of frames 30 ms apart, taken in the callback: no idle timeout
    assert took.frames() > 10
    took.clear()

    async def stall(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        for piece in frames:
            await stream.send(piece)
            await anyio.sleep(0.03)
        await anyio.sleep(1.0)  # then stops sending
        return False

    with anyio.fail_after(LIMIT):
        async with raw_server(stall) as (url, _), client() as c:
            async with c.stream("POST", url, json={}) as resp:
                written = Out()
                with pytest.raises(ms.IdleTimeoutError):
                    await aconvert_into(
                        resp,
                        written.write,
                        to="openai-chat",
                        protocol="anthropic",
                        write_now=written.write_now,
                        idle_timeout=0.2,
                    )
    assert written.pieces
    assert took.frames() >= 12 - SLACK  # every frame before the stall


async def test_the_total_timeout_ends_a_stream_handed_over(took: Took) -> None:
    _, error, _ = await relayed(PACED, push=True, pause=0.02, total_timeout=0.15)
    assert error is not None
    assert error[0] is ms.StreamTimeoutError
    assert took.frames() > 2


async def test_reads_over_tls_are_handed_over_too(took: Took, tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    cert, key, client_context = tls_files(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)

    async def serve_conn(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            if await read_request(stream, bytearray()) is not None:  # type: ignore[arg-type]
                for piece in PACED:
                    await stream.send(piece)
                    await anyio.sleep(0.003)

    reference, _, _ = await relayed(PACED, push=False)
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    transport = LeanTransport(
        max_connections=4, max_keepalive=4, keepalive_expiry=4.0, ssl_context=client_context
    )
    out = Out()
    timeout = httpx2.Timeout(5.0, read=None)  # (as the bridge's client: its readers time the stream)
    async with TLSListener(tcp, server_context, standard_compatible=False) as listener:
        async with (
            anyio.create_task_group() as tg,
            httpx2.AsyncClient(transport=transport, timeout=timeout) as c,
        ):
            tg.start_soon(listener.serve, serve_conn)
            async with c.stream("POST", f"https://127.0.0.1:{port}/v1/messages", json={}) as resp:
                await aconvert_into(
                    resp, out.write, to="openai-chat", protocol="anthropic", write_now=out.write_now
                )
            tg.cancel_scope.cancel()
    assert b"".join(out.pieces) == reference
    assert took.frames() >= len(FRAMES) - SLACK


# ---------------------------------------------------------------------- the bridge, end to end


async def test_the_bridge_hands_a_paced_upstream_over_and_the_openai_sdk_reads_it_whole(
    took: Took,
) -> None:
    pytest.importorskip("uvicorn")
    request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    async with raw_server(paced(PACED)) as (url, _):
        app = create_app(upstream=HTTPUpstream("anthropic", url=f"{url}/v1/messages", api_key="k"))
        with anyio.fail_after(LIMIT):
            async with serving(app) as port, httpx2.AsyncClient(trust_env=False) as http:
                bridge = f"http://127.0.0.1:{port}/v1/chat/completions"
                async with http.stream("POST", bridge, json=request) as resp:
                    assert resp.status_code == 200
                    data = b"".join([piece async for piece in resp.aiter_bytes()])
    seen = oracles.chat(data)  # the openai SDK's own reading of what the bridge wrote
    assert seen.error is None
    assert (seen.text, [(name, args) for _, name, args in seen.calls]) == expected(RECORDING)
    # The first piece goes through the relay's write (with the response's start), never handed
    # over; every other was converted and written in the hand-over.
    assert False not in took.results()
    assert took.frames() >= len(FRAMES) - 1 - SLACK
    assert app.stats.streams == 1
