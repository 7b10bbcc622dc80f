"""Benchmark: what the conversation store adds to a Responses turn through the bridge.

Run: ``python benchmarks/bench_store.py`` (``--quick`` for a smoke run). The Redis case starts
a private ``redis-server`` on a free loopback port, and is left out when the binary is missing.

One process: the bridge app driven over ASGI (``httpx2.ASGITransport``, no sockets) in front of a
fake Anthropic upstream (``httpx.MockTransport``) streaming ``EVENTS`` text deltas. A
conversation of ``TURNS`` streamed turns is run three ways:

* no store: the client keeps the conversation and sends it whole each turn (its earlier inputs
  and the output items of each ``response.completed``): the baseline;
* SQLite (a file in a temporary folder, WAL) and Redis: each turn is stored (record, canonical
  answer, every event) and the next one names it in ``previous_response_id``, so the bridge
  also reads the chain and expands the history.

Printed: the median time per turn for each, the store's overhead per turn, and that overhead
as a ratio of the baseline turn. The machine is shared: read the ratios, not the times.
"""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2

from _harness import record
from maas_stream.bridge import HTTPUpstream, create_app, open_store

QUICK = "--quick" in sys.argv
EVENTS = 50
TURNS = 5 if QUICK else 30
REPEATS = 1 if QUICK else 5


def _stream() -> bytes:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "bench",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    frames: list[tuple[str, dict[str, Any]]] = [("message_start", start)]
    frames.append(
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    )
    frames += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"w{i} "}},
        )
        for i in range(EVENTS)
    ]
    frames += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": EVENTS},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in frames)


STREAM = _stream()


async def _upstream(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=STREAM)


async def conversation(store: Any) -> list[float]:
    """Seconds per turn of one conversation of TURNS streamed turns."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(_upstream))
    app = create_app(upstream=HTTPUpstream("anthropic", None, api_key="k" * 12, client=client), store=store)
    bridge = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://bridge")
    headers = {"authorization": "Bearer bench-key"}
    times: list[float] = []
    previous: str | None = None
    history: list[Any] = []
    for turn in range(TURNS):
        said = {"role": "user", "content": f"turn {turn}"}
        body: dict[str, Any] = {"model": "m", "input": [said], "stream": True}
        if store is None:
            body["input"] = history = [*history, said]
        elif previous is not None:
            body["previous_response_id"] = previous
        started = time.perf_counter()
        answer = await bridge.post("/v1/responses", json=body, headers=headers)
        times.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text
        last = json.loads(answer.content.rstrip().rsplit(b"\n\n", 1)[-1].split(b"data: ", 1)[1])
        previous = last["response"]["id"]
        history += [{k: v for k, v in item.items() if k != "id"} for item in last["response"]["output"]]
    await bridge.aclose()
    if store is not None:
        await store.aclose()
    return times


def _redis() -> tuple[subprocess.Popen[bytes], str] | None:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.02)
    proc.terminate()
    return None


async def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-store-"))
    redis = _redis()
    results: dict[str, list[float]] = {"none": [], "sqlite": []}
    if redis is not None:
        results["redis"] = []
    try:
        for r in range(REPEATS):
            results["none"] += await conversation(None)
            results["sqlite"] += await conversation(open_store(f"sqlite:{folder / f'{r}.sqlite3'}"))
            if redis is not None:
                results["redis"] += await conversation(open_store(redis[1], prefix=f"bench{r}"))
    finally:
        if redis is not None:
            redis[0].terminate()
        shutil.rmtree(folder, ignore_errors=True)
    base = statistics.median(results["none"])
    print(f"{TURNS} streamed turns x {REPEATS}, {EVENTS} text deltas each (median per turn)")
    print(f"  no store: {base * 1000:7.2f} ms")
    for name in ("sqlite", "redis"):
        if name not in results:
            print(f"  {name}: skipped (redis-server not installed)")
            continue
        t = statistics.median(results[name])
        print(
            f"  {name:>8}: {t * 1000:7.2f} ms  overhead {(t - base) * 1000:6.2f} ms/turn = {t / base - 1:5.1%} of a turn"
        )
        record("store", f"{name} turn / no-store turn", t / base, "overhead per stored turn")


if __name__ == "__main__":
    anyio.run(main)
