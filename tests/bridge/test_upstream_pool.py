"""The bridge's upstream pool keeps every connection of a burst for the next one.

A burst of concurrent streams larger than a fixed keep-alive cap (httpx's default, 100) must
not connect anew on the next burst: each new connection delays its stream's first byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import anyio.abc
import pytest

from maas_stream.bridge import Timeouts
from maas_stream.bridge._upstream import new_client
from tests.bridge.test_transport import BODY, answer, raw_server

if TYPE_CHECKING:
    import httpx2

pytestmark = pytest.mark.anyio

STREAMS = 120
"""Concurrent streams per burst: more than 100."""


async def test_a_burst_of_streams_reuses_every_connection_of_the_last_burst() -> None:
    arrived = 0
    everyone = anyio.Event()

    async def handler(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        nonlocal arrived
        arrived += 1
        if arrived % STREAMS == 0:
            everyone.set()
        await everyone.wait()  # the burst is whole: every stream holds its connection at once
        await stream.send(answer(BODY[:500]))
        return True

    async def one(c: httpx2.AsyncClient, url: str) -> None:
        async with c.stream("POST", url, json={}) as resp:
            assert b"".join([p async for p in resp.aiter_bytes()]) == BODY[:500]

    async with raw_server(handler) as (url, connections):
        async with new_client(Timeouts(connect=5.0), 1000) as c:
            for burst in range(2):
                everyone = anyio.Event()
                async with anyio.create_task_group() as tg:
                    for _ in range(STREAMS):
                        tg.start_soon(one, c, url)
                assert len(connections) == STREAMS, burst
    assert connections == [2] * STREAMS
