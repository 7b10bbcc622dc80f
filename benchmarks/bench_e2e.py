"""Benchmark: reading a stream end to end over loopback HTTP, with httpx2 and httpx.

Run: ``python benchmarks/bench_e2e.py`` (add ``--quick`` for a fast smoke run).

A uvicorn process on 127.0.0.1 serves one Chat Completions stream of ``EVENTS`` chunks (each
frame its own HTTP chunk, as providers send them). This process reads it, for each client
library, three ways, interleaved, best CPU time (``time.process_time``: the server's CPU is not
counted) of several rounds:

* ``aiter_bytes``: merely reading the response's bytes (the transport floor);
* split + untyped decode: our SSE split and ``msgspec.json.decode`` of every payload (a bare
  reader that builds nothing);
* ``ms.aaggregate``: the whole library (decode, aggregate, final response), also with an idle
  timeout (one watchdog per stream).

Ratios are rates against ``aiter_bytes`` (1.0 = as fast as reading the bytes).
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
from typing import Any

import anyio
import httpx
import httpx2
import msgspec

import maas_stream as ms
from _harness import quick, record
from bench_bridge import free_port, wait_port
from maas_stream.sse import Decoder

EVENTS = 200 if quick() else 4000
ROUNDS = 1 if quick() else 7

SERVER = textwrap.dedent(
    """
    import json, sys, uvicorn

    N = int(sys.argv[2])
    def chunk(delta, finish=None):
        body = {"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1, "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\\n\\n".encode()
    FRAMES = [chunk({"role": "assistant", "content": ""})]
    FRAMES += [chunk({"content": f"word{i} "}) for i in range(N)]
    FRAMES += [chunk({}, "stop"), b"data: [DONE]\\n\\n"]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for f in FRAMES:
            await send({"type": "http.response.body", "body": f, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


async def bytes_only(resp: Any) -> None:
    async for _ in resp.aiter_bytes():
        pass


async def split_decode(resp: Any) -> None:
    decoder, decode = Decoder(), msgspec.json.decode
    async for chunk in resp.aiter_bytes():
        for _, data, _, _ in decoder.feed_raw(chunk):
            if data and data != b"[DONE]":
                decode(data)


async def aggregate(resp: Any) -> None:
    assert (await ms.aaggregate(resp, protocol="openai-chat")).status == "completed"


async def aggregate_idle(resp: Any) -> None:
    response = await ms.aaggregate(resp, protocol="openai-chat", idle_timeout=60, total_timeout=600)
    assert response.status == "completed"


READERS = {
    "aiter_bytes": bytes_only,
    "split+decode": split_decode,
    "aaggregate": aggregate,
    "aaggregate+timeouts": aggregate_idle,
}


async def measure(lib: Any, url: str) -> dict[str, float]:
    best = dict.fromkeys(READERS, float("inf"))
    async with lib.AsyncClient(timeout=60, trust_env=False) as client:
        for _ in range(ROUNDS):
            for name, reader in READERS.items():
                gc.collect()
                start = time.process_time()
                async with client.stream("POST", url, json={}) as resp:
                    await reader(resp)
                best[name] = min(best[name], time.process_time() - start)
    return best


def main() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(EVENTS)])
    try:
        wait_port(port, server)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        print(f"end to end over loopback: one Chat stream of {EVENTS:,} chunks, best of {ROUNDS}")
        for lib in (httpx2, httpx):
            t = anyio.run(measure, lib, url)
            floor = t["aiter_bytes"]
            print(f"\n{lib.__name__} {lib.__version__}")
            for name, took in t.items():
                print(
                    f"  {name:20} {took / EVENTS * 1e6:7.2f} µs/event   {floor / took:5.2f}x aiter_bytes rate"
                )
            record(f"e2e {lib.__name__}", "aaggregate vs aiter_bytes", floor / t["aaggregate"], ">= 0.8")
            record(
                f"e2e {lib.__name__}",
                "aaggregate vs split+decode",
                t["split+decode"] / t["aaggregate"],
                ">= 1.0",
            )
            record(
                f"e2e {lib.__name__}",
                "aaggregate+timeouts vs aaggregate",
                t["aaggregate"] / t["aaggregate+timeouts"],
                "~1",
            )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
