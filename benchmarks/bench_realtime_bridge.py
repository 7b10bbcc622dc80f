"""Benchmark: what the bridge adds to a realtime session, against a raw websocket relay.

Run: ``python benchmarks/bench_realtime_bridge.py`` (add ``--quick`` for a fast smoke run).

One process, one event loop, on 127.0.0.1: a fake OpenAI Realtime upstream (a ``websockets``
server), a client (``websockets``), and between them one of

* ``direct``: no relay (the client talks to the upstream);
* ``raw relay``: a 20-line ``websockets`` forwarder (:func:`raw_relay`): two tasks copying
  messages both ways, nothing else;
* ``bridge``: ``maas-stream``'s ASGI app under uvicorn (guard, routing, the upstream's key, the
  session relay decoding every message for its usage and metrics).

Two measures, each the best of a few runs, interleaved so that load on the shared machine hits
all alike:

* messages/s: the client asks for one response of :data:`DELTAS` ``response.output_text.delta``
  events and reads them all (server → client throughput);
* added latency per message: a client message answered at once by the upstream
  (``conversation.item.create`` → ``conversation.item.added``), round-trip median over
  :data:`PINGS` messages; the bridge's and the raw relay's extra time over ``direct``.

Figures are ratios from one run on a shared machine, not budgets.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

import uvicorn
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

from _harness import record
from maas_stream.bridge import Guard, Route, create_app
from maas_stream.bridge._ws import WebSocketUpstream

QUICK = "--quick" in sys.argv
DELTAS = 2000 if QUICK else 10000
PINGS = 200 if QUICK else 1000
RUNS = 2 if QUICK else 3
KEY = "sk-bench-upstream-0123456789"
BRIDGE_KEY = "bench-bridge-key-0123"


def _event(n: int, body: dict[str, Any]) -> str:
    return json.dumps({"event_id": f"event_{n}", **body})


async def upstream(ws: Any) -> None:
    """The fake Realtime upstream: ``session.created``, then answers by message type."""
    await ws.send(_event(0, {"type": "session.created", "session": {"type": "realtime", "id": "s"}}))
    base = {"response_id": "resp_1", "item_id": "item_1", "output_index": 0, "content_index": 0}
    deltas = [
        _event(i, {"type": "response.output_text.delta", **base, "delta": f"word{i} "}) for i in range(DELTAS)
    ]
    item = {"id": "item_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    async for raw in ws:
        msg = json.loads(raw)
        if msg["type"] == "conversation.item.create":
            await ws.send(
                _event(1, {"type": "conversation.item.added", "previous_item_id": None, "item": msg["item"]})
            )
        elif msg["type"] == "response.create":
            response = {"object": "realtime.response", "id": "resp_1", "status": "in_progress", "output": []}
            await ws.send(_event(1, {"type": "response.created", "response": response}))
            await ws.send(
                _event(
                    2,
                    {
                        "type": "response.output_item.added",
                        "response_id": "resp_1",
                        "output_index": 0,
                        "item": item,
                    },
                )
            )
            await ws.send(
                _event(
                    3, {"type": "response.content_part.added", **base, "part": {"type": "text", "text": ""}}
                )
            )
            for d in deltas:
                await ws.send(d)
            done = {
                **response,
                "status": "completed",
                "usage": {"input_tokens": 5, "output_tokens": DELTAS, "total_tokens": DELTAS + 5},
            }
            await ws.send(_event(4, {"type": "response.done", "response": done}))


async def raw_relay(client: Any, upstream_url: str) -> None:
    """A plain websocket forwarder: the floor any relay pays."""
    async with connect(
        upstream_url, additional_headers={"authorization": f"Bearer {KEY}"}, compression=None, max_size=None
    ) as up:

        async def pump(src: Any, dst: Any) -> None:
            async for message in src:
                await dst.send(message)

        tasks = [asyncio.ensure_future(pump(client, up)), asyncio.ensure_future(pump(up, client))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()


async def throughput(url: str, headers: dict[str, str]) -> float:
    """Server → client messages per second for one response of ``DELTAS`` deltas."""
    async with connect(url, additional_headers=headers, compression=None, max_size=None) as ws:
        await ws.recv()  # session.created
        started = time.perf_counter()
        await ws.send(json.dumps({"type": "response.create"}))
        n = 0
        while True:
            n += 1
            if json.loads(await ws.recv())["type"] == "response.done":
                break
        return n / (time.perf_counter() - started)


async def latency(url: str, headers: dict[str, str]) -> float:
    """Median round trip (seconds) of a client message answered at once by the upstream."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ping"}]}
    message = json.dumps({"type": "conversation.item.create", "item": item})
    times = []
    async with connect(url, additional_headers=headers, compression=None, max_size=None) as ws:
        await ws.recv()
        for _ in range(PINGS):
            started = time.perf_counter()
            await ws.send(message)
            await ws.recv()
            times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main() -> None:
    async def checked(ws: Any) -> None:
        await upstream(ws)

    up = await serve(checked, "127.0.0.1", 0, compression=None, max_size=None)
    up_port = up.sockets[0].getsockname()[1]
    up_url = f"ws://127.0.0.1:{up_port}/v1/realtime?model={{model}}"

    relay = await serve(
        lambda ws: raw_relay(ws, up_url.replace("{model}", "bench")),
        "127.0.0.1",
        0,
        compression=None,
        max_size=None,
    )
    relay_port = relay.sockets[0].getsockname()[1]

    app = create_app(
        routes=[Route("*", WebSocketUpstream("openai-realtime", up_url, api_key=KEY))],
        guard=Guard(keys=(BRIDGE_KEY,)),
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws_max_size=2**24)
    )
    task = asyncio.ensure_future(server.serve())
    while not server.started:  # noqa: ASYNC110
        await asyncio.sleep(0.01)  # noqa: TID251
    bridge_port = server.servers[0].sockets[0].getsockname()[1]

    targets = {
        "direct": (up_url.replace("{model}", "bench"), {"authorization": f"Bearer {KEY}"}),
        "raw relay": (f"ws://127.0.0.1:{relay_port}/v1/realtime?model=bench", {}),
        "bridge": (
            f"ws://127.0.0.1:{bridge_port}/v1/realtime?model=bench",
            {"authorization": f"Bearer {BRIDGE_KEY}"},
        ),
    }
    rates: dict[str, list[float]] = {k: [] for k in targets}
    rtts: dict[str, list[float]] = {k: [] for k in targets}
    for _ in range(RUNS):
        for name, (url, headers) in targets.items():
            rates[name].append(await throughput(url, headers))
            rtts[name].append(await latency(url, headers))
    best_rate = {k: max(v) for k, v in rates.items()}
    best_rtt = {k: min(v) for k, v in rtts.items()}

    print(f"realtime bridge, {DELTAS} deltas per response, {PINGS} round trips, best of {RUNS}")
    print(f"{'':12} {'messages/s':>12} {'round trip':>12} {'added':>10}")
    for name in targets:
        added = (best_rtt[name] - best_rtt["direct"]) * 1e6
        print(f"{name:12} {best_rate[name]:12,.0f} {best_rtt[name] * 1e6:10.0f}us {added:8.0f}us")
    relay_added = best_rtt["raw relay"] - best_rtt["direct"]
    bridge_added = best_rtt["bridge"] - best_rtt["direct"]
    print(f"throughput: bridge / raw relay = {best_rate['bridge'] / best_rate['raw relay']:.2f}")
    record(
        "realtime bridge",
        "messages/s vs raw relay",
        best_rate["bridge"] / best_rate["raw relay"],
        "measured (issue 14)",
    )
    if relay_added > 0:
        record(
            "realtime bridge", "added latency vs raw relay", bridge_added / relay_added, "measured (issue 14)"
        )
    print(
        f"added latency per message: bridge / raw relay = {bridge_added / relay_added:.2f}"
        if relay_added > 0
        else ""
    )

    server.should_exit = True
    await task
    relay.close()
    up.close()


if __name__ == "__main__":
    asyncio.run(main())
