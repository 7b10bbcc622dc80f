"""Benchmark: reading a stream end to end over loopback HTTP, with httpx2 and httpx.

Run: ``python benchmarks/bench_e2e.py`` (add ``--quick`` for a fast smoke run).

A uvicorn process on 127.0.0.1 serves one Chat Completions stream of ``EVENTS`` chunks (each
frame its own HTTP chunk, as providers send them). This process reads it, for each client
library, three ways, interleaved, best CPU time (``time.process_time``: the server's CPU is not
counted) of several rounds:

* ``aiter_bytes``: merely reading the response's bytes (the transport floor);
* ``aiter_raw``: reading them without httpx's content-decoding layer (what the library reads
  a response sent without a content encoding with);
* split + untyped decode: our SSE split and ``msgspec.json.decode`` of every payload (a bare
  reader that builds nothing);
* ``ms.aaggregate``: the whole library (decode, aggregate, final response), also with an idle
  timeout (one watchdog per stream);
* ``ms.astream`` (canonical events) and ``ms.aconvert`` (to Anthropic SSE): the per-read
  paths, which feed the pipeline chunk by chunk.

Ratios are rates against ``aiter_bytes`` (1.0 = as fast as reading the bytes).

To compare two versions of the library in ONE run, add ``--against DIR`` (a checkout, e.g.
``/work/main``): a worker process runs that checkout's ``src`` on the same server, and each
measurement alternates between this process and the worker (rows ``this`` and ``against``, each
with its own ``aiter_bytes`` floor).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
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


async def raw_only(resp: Any) -> None:
    async for _ in resp.aiter_raw():
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


async def events(resp: Any) -> None:
    async for _ in ms.astream(resp, protocol="openai-chat"):
        pass


async def convert(resp: Any) -> None:
    async for _ in ms.aconvert(resp, to="anthropic", protocol="openai-chat"):
        pass


READERS = {
    "aiter_bytes": bytes_only,
    "aiter_raw": raw_only,
    "split+decode": split_decode,
    "aaggregate": aggregate,
    "aaggregate+timeouts": aggregate_idle,
    "astream": events,
    "aconvert": convert,
}


LIBS = {"httpx2": httpx2, "httpx": httpx}


async def timed(client: Any, url: str, reader: str) -> float:
    """CPU seconds of this process for one stream read by ``reader``."""
    gc.collect()
    start = time.process_time()
    async with client.stream("POST", url, json={}) as resp:
        await READERS[reader](resp)
    return time.process_time() - start


class Against:
    """The worker running another checkout's ``src`` (``--against DIR``): one measurement per request."""

    def __init__(self, checkout: str, url: str) -> None:
        src = Path(checkout) / "src"
        env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{Path(__file__).parent}"}
        args = [sys.executable, __file__, "--worker", url, *(["--quick"] if quick() else [])]
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, lib: str, reader: str) -> float:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(f"{lib} {reader}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the --against worker exited")
        return float(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


async def worker(url: str) -> None:
    """The ``--against`` side: read ``LIB READER`` lines, answer each with the CPU seconds taken."""
    clients = {name: lib.AsyncClient(timeout=60, trust_env=False) for name, lib in LIBS.items()}
    try:
        while line := await anyio.to_thread.run_sync(sys.stdin.readline):
            lib, reader = line.split()
            print(await timed(clients[lib], url, reader), flush=True)
    finally:
        for client in clients.values():
            await client.aclose()


async def measure(lib: str, url: str, other: Against | None) -> dict[str, dict[str, float]]:
    """Best CPU time per reader, for this process and the ``--against`` worker, interleaved."""
    labels = ["this"] + ([] if other is None else ["against"])
    best = {label: dict.fromkeys(READERS, float("inf")) for label in labels}
    async with LIBS[lib].AsyncClient(timeout=60, trust_env=False) as client:
        for _ in range(ROUNDS):
            for name in READERS:
                best["this"][name] = min(best["this"][name], await timed(client, url, name))
                if other is not None:
                    took = await anyio.to_thread.run_sync(other.ask, lib, name)
                    best["against"][name] = min(best["against"][name], took)
    return best


def report(lib: str, label: str, t: dict[str, float]) -> None:
    floor = t["aiter_bytes"]
    version = LIBS[lib].__version__
    print(f"\n{lib} {version}" + ("" if label == "this" else f" ({label})"))
    for name, took in t.items():
        print(f"  {name:20} {took / EVENTS * 1e6:7.2f} µs/event   {floor / took:5.2f}x aiter_bytes rate")
    bench = f"e2e {lib}" + ("" if label == "this" else f" ({label})")
    record(bench, "aaggregate vs aiter_bytes", floor / t["aaggregate"], ">= 0.8")
    record(bench, "aaggregate vs split+decode", t["split+decode"] / t["aaggregate"], ">= 1.0")
    record(bench, "aaggregate+timeouts vs aaggregate", t["aaggregate"] / t["aaggregate+timeouts"], "~1")
    record(bench, "astream vs aiter_bytes", floor / t["astream"])
    record(bench, "aconvert vs aiter_bytes", floor / t["aconvert"])


def main() -> None:
    if "--worker" in sys.argv:
        anyio.run(worker, sys.argv[sys.argv.index("--worker") + 1])
        return
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(EVENTS)])
    other: Against | None = None
    try:
        wait_port(port, server)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        if "--against" in sys.argv:
            other = Against(sys.argv[sys.argv.index("--against") + 1], url)
        print(f"end to end over loopback: one Chat stream of {EVENTS:,} chunks, best of {ROUNDS}")
        for lib in LIBS:
            for label, t in anyio.run(measure, lib, url, other).items():
                report(lib, label, t)
    finally:
        if other is not None:
            other.close()
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
