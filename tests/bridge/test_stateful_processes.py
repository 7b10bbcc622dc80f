"""Two ``maas-stream serve`` processes sharing one conversation store (SQLite file, Redis).

A background response is started on the first process, its stream cut by the client mid-way;
the openai SDK then resumes it with ``starting_after`` on the SECOND process, which has never
seen the request: it must give exactly the remaining events, read from the shared store while
the first process's background task is still writing them. The upstream is a loopback fake
Anthropic server that holds the rest of its stream until the client has gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import openai
import pytest

from tests.bridge._stores import KINDS, redis_url
from tests.bridge.test_ops import free_port
from tests.bridge.test_stateful import anthropic_stream, events_of
from tests.io.loopback import Conn, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytest.importorskip("uvicorn")
pytestmark = pytest.mark.anyio

__all__ = ["redis_url"]  # fixtures

KEY = "bridge-key-processes-0123"
TEXTS = tuple(f"part{i} " for i in range(10))


class _Bridge:
    def __init__(self, store: str, upstream: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cmd = [
            sys.executable,
            "-m",
            "maas_stream",
            "serve",
            "--upstream-protocol",
            "anthropic",
            "--upstream-url",
            upstream,
            "--store",
            store,
            "--bridge-key",
            KEY,
            "--port",
            str(self.port),
            "--log-level",
            "warning",
        ]
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-upstream", "NO_PROXY": "127.0.0.1"}
        with log.open("wb") as err:
            self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)

    async def started(self, http: httpx2.AsyncClient) -> None:
        with anyio.fail_after(30):  # an interpreter with the SDKs imported
            while True:
                try:
                    if (await http.get(f"{self.url}/health")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                assert self.proc.poll() is None, self.log.read_text()
                await anyio.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(params=KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        return url
    return f"sqlite:{tmp_path / 'shared.sqlite3'}"


async def _cut_after(http: httpx2.AsyncClient, url: str, n: int) -> list[dict[str, Any]]:
    """Start a background stream on ``url`` and hang up after ``n`` events."""
    body = {"model": "claude-x", "input": "count", "background": True, "stream": True}
    got = b""
    async with http.stream(
        "POST", f"{url}/v1/responses", json=body, headers={"authorization": f"Bearer {KEY}"}
    ) as resp:
        assert resp.status_code == 200, await resp.aread()
        async for chunk in resp.aiter_bytes():
            got += chunk
            if len(events_of(got)) >= n:
                break
    return events_of(got)


@pytest.fixture
async def bridges(store_url: str, tmp_path: Path) -> AsyncIterator[tuple[_Bridge, _Bridge, anyio.Event]]:
    gate = anyio.Event()
    frames = anthropic_stream(texts=TEXTS)
    half = len(frames) // 2

    async def upstream(conn: Conn) -> None:
        await conn.start(200)
        for frame in frames[:half]:
            await conn.send(frame)
        await gate.wait()  # the rest only once the client has gone
        for frame in frames[half:]:
            await conn.send(frame)
        await conn.end()

    async with serve(upstream) as fake:
        first = _Bridge(store_url, f"{fake.url}/v1/messages", tmp_path / "first.log")
        second = _Bridge(store_url, f"{fake.url}/v1/messages", tmp_path / "second.log")
        try:
            yield first, second, gate
        finally:
            gate.set()
            first.stop()
            second.stop()
        assert fake.errors == []


async def test_a_background_stream_cut_on_one_process_resumes_on_another(
    bridges: tuple[_Bridge, _Bridge, anyio.Event],
) -> None:
    first, second, gate = bridges
    async with httpx2.AsyncClient(trust_env=False, timeout=30) as http:
        await first.started(http)
        await second.started(http)
        before = await _cut_after(http, first.url, 4)
        rid = before[0]["response"]["id"]
        last = before[-1]["sequence_number"]
        assert [e["sequence_number"] for e in before] == list(range(last + 1))
        gate.set()  # the upstream goes on; the first process's background task keeps writing
        client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{second.url}/v1", http_client=http, max_retries=0)
        with anyio.fail_after(30):
            resumed = await client.responses.retrieve(rid, stream=True, starting_after=last)
            after = [event async for event in resumed]
            done = await client.responses.retrieve(rid)
    numbers = [e.sequence_number for e in after]
    assert numbers == list(range(last + 1, last + 1 + len(numbers)))  # exactly the rest, no gap
    assert after[-1].type == "response.completed"
    text = "".join(e["delta"] for e in before if e["type"] == "response.output_text.delta")
    text += "".join(e.delta for e in after if e.type == "response.output_text.delta")
    assert text == "".join(TEXTS)
    assert (done.status, done.output_text, done.background) == ("completed", "".join(TEXTS), True)
