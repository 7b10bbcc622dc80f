"""Benchmark: what the bridge adds over talking to the upstream directly, at 1, 50 and 200 streams.

Run: ``python benchmarks/bench_bridge.py`` (add ``--quick`` for a fast smoke run). Linux only
(CPU time is read from ``/proc/<pid>/stat``).

Three processes on 127.0.0.1: a fake Anthropic upstream (uvicorn, a pure ASGI app sending a
stream of ``EVENTS`` SSE frames, each as its own chunk), the bridge (``maas-stream serve
--upstream-protocol anthropic``, a Chat Completions client in front, so every frame is decoded,
aggregated and re-encoded), and this process as the clients (httpx2). For each concurrency C:

* time to first byte (TTFB): from sending the request to the first body chunk, median over the
  C streams, directly from the upstream and through the bridge; the difference is what the
  bridge adds, also shown as a ratio;
* CPU per event: the bridge process's CPU time (user + system) over the run divided by the
  events it forwarded, against the upstream process's CPU per event it served (a ratio: the
  bridge's cost in units of a minimal ASGI SSE server's cost).

The machine is shared, so the figures are ratios from one run, not absolute budgets.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2

EVENTS = 200
"""Text deltas per stream (plus the message start and end frames)."""
LEVELS = (1, 50, 200)
REPEATS = 1 if "--quick" in sys.argv else 3

UPSTREAM = textwrap.dedent(
    """
    import json, sys, uvicorn

    N = int(sys.argv[2])
    start = {"type": "message_start", "message": {"id": "msg_bench", "type": "message",
             "role": "assistant", "model": "bench", "content": [], "stop_reason": None,
             "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}
    def frame(event, data):
        return f"event: {event}\\ndata: {json.dumps(data)}\\n\\n".encode()
    FRAMES = [frame("message_start", start),
              frame("content_block_start", {"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})]
    FRAMES += [frame("content_block_delta", {"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": f"word{i} "}}) for i in range(N)]
    FRAMES += [frame("content_block_stop", {"type": "content_block_stop", "index": 0}),
               frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                     "stop_sequence": None}, "usage": {"output_tokens": N}}),
               frame("message_stop", {"type": "message_stop"})]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for f in FRAMES:
            await send({"type": "http.response.body", "body": f, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=4096,
                timeout_keep_alive=60)
    """
)

CHAT_BODY = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_BODY = {**CHAT_BODY, "max_tokens": 100}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"a server process exited early ({proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


@dataclass
class Run:
    ttfb: list[float]
    events: int


async def one(client: httpx2.AsyncClient, url: str, body: dict[str, object]) -> tuple[float, int]:
    t0 = time.perf_counter()
    first = 0.0
    frames = 0
    async with client.stream("POST", url, json=body) as resp:
        resp.raise_for_status()
        async for chunk in resp.aiter_bytes():
            if not first:
                first = time.perf_counter() - t0
            frames += chunk.count(b"\n\n")
    return first, frames


async def run(url: str, body: dict[str, object], streams: int) -> Run:
    limits = httpx2.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    async with httpx2.AsyncClient(limits=limits, timeout=120, trust_env=False) as client:
        await one(client, url, body)  # warm the connection pools
        results = await asyncio.gather(*(one(client, url, body) for _ in range(streams)))
    return Run([r[0] for r in results], sum(r[1] for r in results))


def measure(
    url: str, body: dict[str, object], streams: int, pids: tuple[int, int]
) -> tuple[float, float, float]:
    """Best-of-REPEATS: (median TTFB s, bridge CPU s per event, upstream CPU s per event)."""
    best: tuple[float, float, float] | None = None
    for _ in range(REPEATS):
        before = [cpu_seconds(p) for p in pids]
        result = asyncio.run(run(url, body, streams))
        after = [cpu_seconds(p) for p in pids]
        n = EVENTS + 5
        served = (streams + 1) * n  # every stream of the run, its warm-up included
        sample = (
            statistics.median(result.ttfb),
            (after[0] - before[0]) / served,
            (after[1] - before[1]) / served,
        )
        best = sample if best is None or sample[0] < best[0] else best
    assert best is not None
    return best


def main() -> None:
    if not Path("/proc/self/stat").exists():
        raise SystemExit("bench_bridge.py reads CPU times from /proc (Linux)")
    up_port, br_port = free_port(), free_port()
    env = {**os.environ, "ANTHROPIC_API_KEY": "bench-key"}
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(up_port), str(EVENTS)])
    bridge = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "maas_stream",
            "serve",
            "--upstream-protocol",
            "anthropic",
            "--upstream-url",
            f"http://127.0.0.1:{up_port}/v1/messages",
            "--port",
            str(br_port),
            "--log-level",
            "warning",
            "--backlog",
            "4096",
        ],
        env=env,
    )
    try:
        wait_port(up_port, upstream)
        wait_port(br_port, bridge)
        direct_url = f"http://127.0.0.1:{up_port}/v1/messages"
        bridge_url = f"http://127.0.0.1:{br_port}/v1/chat/completions"
        print(
            f"bridge (anthropic upstream -> chat client), {EVENTS} text deltas per stream, best of {REPEATS}"
        )
        print(
            f"{'streams':>8} {'TTFB direct':>12} {'TTFB bridge':>12} {'added':>9} {'ratio':>6}"
            f" {'bridge CPU/event':>17} {'upstream CPU/event':>19} {'ratio':>6}"
        )
        pids = (bridge.pid, upstream.pid)
        asyncio.run(run(bridge_url, CHAT_BODY, 4))  # the bridge's first request loads its modules
        for streams in LEVELS:
            direct, _, up_direct = measure(direct_url, ANTHROPIC_BODY, streams, pids)
            via, br_cpu, up_cpu = measure(bridge_url, CHAT_BODY, streams, pids)
            up = up_cpu or up_direct
            print(
                f"{streams:>8} {direct * 1e3:>10.2f}ms {via * 1e3:>10.2f}ms {(via - direct) * 1e3:>7.2f}ms"
                f" {via / direct:>5.1f}x {br_cpu * 1e6:>14.1f}µs {up * 1e6:>16.1f}µs"
                f" {br_cpu / up if up else float('nan'):>5.1f}x"
            )
    finally:
        for proc in (bridge, upstream):
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
