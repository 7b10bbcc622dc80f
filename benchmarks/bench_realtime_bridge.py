"""Benchmark: what the bridge adds to realtime sessions, against a raw websocket relay, at 1, 50 and 200 sessions.

Run: ``python benchmarks/bench_realtime_bridge.py`` (add ``--quick`` for a fast smoke run). Linux
only (CPU time and memory are read from ``/proc``).

Separate processes on 127.0.0.1: a fake OpenAI Realtime upstream (a ``websockets`` server), and
between it and the clients (this process, ``websockets``) one of

* ``direct``: no relay (the clients talk to the upstream);
* ``raw relay``: a plain ``websockets`` forwarder (two tasks copying messages both ways, nothing
  else), on the same event loop as the bridge (uvloop when installed);
* ``this``: the bridge of this checkout, as ``maas-stream serve --upstream-protocol
  openai-realtime`` runs it (uvicorn, guard, routing, the upstream's key, the session relay that
  reads every message for its record and metrics);
* ``against``: with ``--against DIR``, the bridge of another checkout (``DIR/src``), on the same
  upstream, measured in the same run, interleaved with ``this``.

For each concurrency C (C sessions open at once), contenders interleaved per repetition, best of
a few:

* throughput: every session asks for one response (``response.create``) of ``TOTAL / C``
  ``response.output_text.delta`` events and reads them all; messages/s over all sessions, and
  the relay process's CPU time (user + system, ``/proc``) per message relayed;
* latency: every session sends ``conversation.item.create`` messages the upstream answers at
  once (``conversation.item.added``), paced so that the whole offers about :data:`RATE`
  messages/s; the round trip's p50 and p99 over all sessions, each the best of the repetitions on
  its own. "added" is the bridge's round trip minus the raw relay's (both minus ``direct`` are
  printed too). The relay process's CPU per message of these sparse round trips is mostly the
  event loop waking and the socket (the raw relay pays ~100 µs a message too), so it is
  judged as a ratio to the raw relay's, not against the 25 µs of a streamed message;
* idle memory (first, before any load): :data:`IDLE` sessions opened and left idle; the relay
  process's resident memory grown, per session (its upstream connection included).

To profile the bridge under load, ``--py-spy FILE`` records ``this`` bridge with py-spy (raw
folded stacks, 500 samples/s) for the whole run; ``--levels 1,50`` measures these concurrencies
instead of :data:`LEVELS`; ``--no-idle`` skips the idle memory; ``--only stream`` or ``--only ping`` measures one of the two;
``--this-args "ARGS"``: more ``serve`` arguments for ``this`` (e.g. ``--ws websockets``, to compare
uvicorn's websocket implementations against ``--against`` the same checkout); ``--deflate``: the clients ask for permessage-deflate, as browsers and google-genai do (``serve``
declines it by default: ``--ws-per-message-deflate``).

Figures are ratios from one run on a shared machine, not budgets.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

import maas_stream
from _harness import quick, record

LEVELS = (1, 4) if quick() else (1, 50, 200)
"""Sessions open at once, per measurement (``--levels 1,50``: these instead)."""
TOTAL = 4_000 if quick() else 40_000
"""Deltas per throughput measurement, shared by the sessions (``TOTAL / C`` each)."""
PINGS = 300 if quick() else 3_000
"""Round trips per latency measurement, shared by the sessions (at least 10 each)."""
RATE = 2_000
"""Messages per second the latency measurement offers, all sessions together."""
IDLE = 100 if quick() else 1_000
REPEATS = 1 if quick() else 3
KEY = "sk-bench-upstream-0123456789"
BRIDGE_KEY = "bench-bridge-key-0123"

UPSTREAM = textwrap.dedent(
    """
    import asyncio, json, sys
    from websockets.asyncio.server import serve

    def event(n, body):
        return json.dumps({"event_id": f"event_{n}", **body})

    BASE = {"response_id": "resp_1", "item_id": "item_1", "output_index": 0, "content_index": 0}
    DELTAS = [event(i, {"type": "response.output_text.delta", **BASE, "delta": f"word{i} "})
              for i in range(100_000)]
    ITEM = {"id": "item_1", "type": "message", "role": "assistant", "status": "in_progress",
            "content": []}

    async def session(ws):
        await ws.send(event(0, {"type": "session.created",
                                "session": {"type": "realtime", "id": "s"}}))
        async for raw in ws:
            msg = json.loads(raw)
            if msg["type"] == "conversation.item.create":
                await ws.send(event(1, {"type": "conversation.item.added",
                                        "previous_item_id": None, "item": msg["item"]}))
            elif msg["type"] == "response.create":
                n = int(msg["response"]["metadata"]["deltas"])
                response = {"object": "realtime.response", "id": "resp_1",
                            "status": "in_progress", "output": []}
                await ws.send(event(1, {"type": "response.created", "response": response}))
                await ws.send(event(2, {"type": "response.output_item.added",
                                        "response_id": "resp_1", "output_index": 0, "item": ITEM}))
                await ws.send(event(3, {"type": "response.content_part.added", **BASE,
                                        "part": {"type": "text", "text": ""}}))
                for d in DELTAS[:n]:
                    await ws.send(d)
                done = {**response, "status": "completed",
                        "usage": {"input_tokens": 5, "output_tokens": n, "total_tokens": n + 5}}
                await ws.send(event(4, {"type": "response.done", "response": done}))

    async def main():
        async with serve(session, "127.0.0.1", int(sys.argv[1]), compression=None,
                         max_size=None, backlog=4096):
            await asyncio.Future()

    try:
        import uvloop
        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
    """
)

RELAY = textwrap.dedent(
    """
    import asyncio, sys
    from websockets.asyncio.client import connect
    from websockets.asyncio.server import serve

    UP = sys.argv[2]
    KEY = sys.argv[3]

    async def relay(client):
        async with connect(UP, additional_headers={"authorization": f"Bearer {KEY}"},
                           compression=None, max_size=None) as up:
            async def pump(src, dst):
                async for message in src:
                    await dst.send(message)

            tasks = [asyncio.ensure_future(pump(client, up)), asyncio.ensure_future(pump(up, client))]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()

    async def main():
        async with serve(relay, "127.0.0.1", int(sys.argv[1]), compression=None,
                         max_size=None, backlog=4096):
            await asyncio.Future()

    try:
        import uvloop
        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
    """
)

BRIDGE = textwrap.dedent(
    """
    import sys
    from maas_stream._cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    """Resident memory of a process (KiB), from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


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


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Target:
    """One contender: where the clients connect, and the process to measure (none for direct)."""

    url: str
    headers: dict[str, str]
    pid: int | None


@dataclass
class Result:
    """The best of the repetitions of one contender at one concurrency."""

    rate: float = 0.0
    cpu_stream: float = float("inf")
    """CPU seconds per message relayed, throughput run."""
    cpu_ping: float = float("inf")
    """CPU seconds per message relayed, latency run."""
    p50: float = float("inf")
    """The best (lowest) round-trip median of the repetitions, latency run."""
    p99: float = float("inf")
    """The best (lowest) round-trip 99th percentile of the repetitions, latency run: each quantile is
    a best of the repetitions on its own, like the rate and the CPU, so one repetition disturbed by the
    shared machine (the clients, the upstream and the relay share its cores) does not decide it."""


async def open_sessions(target: Target, n: int) -> list[Any]:
    """``n`` sessions to ``target``, each past its ``session.created``."""

    async def one() -> Any:
        ws = await connect(
            target.url,
            additional_headers=target.headers,
            compression="deflate" if "--deflate" in sys.argv else None,
            max_size=None,
            open_timeout=60,
        )
        await ws.recv()  # session.created
        return ws

    opened: list[Any] = []
    for i in range(0, n, 50):  # in batches: the listen backlog and the handshakes stay sane
        opened += await asyncio.gather(*(one() for _ in range(min(50, n - i))))
    return opened


async def close_all(sessions: list[Any]) -> None:
    await asyncio.gather(*(ws.close() for ws in sessions))


async def stream_one(ws: Any, n: int) -> int:
    """One response of ``n`` deltas read in full; the messages relayed (both ways)."""
    await ws.send(json.dumps({"type": "response.create", "response": {"metadata": {"deltas": str(n)}}}))
    for _ in range(n + 3):  # response.created, the item, the part, the deltas
        await ws.recv()
    last = await ws.recv()
    if '"response.done"' not in last:
        raise SystemExit(f"expected response.done, got {last[:200]!r}")
    return n + 5


async def ping_one(ws: Any, pings: int, interval: float) -> list[float]:
    """``pings`` round trips, one every ``interval`` seconds (after a random start)."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ping"}]}
    message = json.dumps({"type": "conversation.item.create", "item": item})
    times = []
    await asyncio.sleep(random.random() * interval)  # noqa: TID251
    for _ in range(pings):
        started = time.perf_counter()
        await ws.send(message)
        await ws.recv()
        took = time.perf_counter() - started
        times.append(took)
        await asyncio.sleep(max(0.0, interval - took))  # noqa: TID251
    return times


async def stream_all(target: Target, opened: list[Any], result: Result) -> None:
    """Every session reads one response of ``TOTAL / C`` deltas; the best rate and CPU kept in ``result``."""
    sessions = len(opened)
    per = max(50, TOTAL // sessions)
    before = cpu_seconds(target.pid) if target.pid else 0.0
    started = time.perf_counter()
    relayed = sum(await asyncio.gather(*(stream_one(ws, per) for ws in opened)))
    took = time.perf_counter() - started
    if target.pid:
        used = (cpu_seconds(target.pid) - before) / relayed
        result.cpu_stream = min(result.cpu_stream, used)
    result.rate = max(result.rate, (relayed - sessions) / took)  # server -> client messages


async def measure(target: Target, sessions: int, result: Result) -> None:
    """One throughput run and one latency run of ``sessions`` sessions; the best kept in ``result``."""
    opened = await open_sessions(target, sessions)
    only = option("--only")
    try:
        if only == "ping":
            result.rate = 1.0
        else:
            await stream_all(target, opened, result)
        if only == "stream":
            result.p50 = result.p99 = 0.0
            return
        pings = max(10, PINGS // sessions)
        interval = max(0.002, sessions / RATE)
        before = cpu_seconds(target.pid) if target.pid else 0.0
        rtts = [
            t for ts in await asyncio.gather(*(ping_one(ws, pings, interval) for ws in opened)) for t in ts
        ]
        if target.pid:
            used = (cpu_seconds(target.pid) - before) / (2 * len(rtts))
            result.cpu_ping = min(result.cpu_ping, used)
        result.p50 = min(result.p50, pct(rtts, 0.5))
        result.p99 = min(result.p99, pct(rtts, 0.99))
    finally:
        await close_all(opened)


async def idle_memory(target: Target) -> float:
    """KiB of resident memory per idle session (its upstream connection included)."""
    assert target.pid is not None
    warm = await open_sessions(target, 20)  # modules, pools and buffers of a first session
    await close_all(warm)
    await asyncio.sleep(0.5)  # noqa: TID251
    before = rss_kib(target.pid)
    opened = await open_sessions(target, IDLE)
    await asyncio.sleep(1.0)  # noqa: TID251
    grown = rss_kib(target.pid) - before
    await close_all(opened)
    return grown / IDLE


def against() -> str | None:
    """The checkout given with ``--against DIR`` (its ``src`` is the second bridge's code), or ``None``."""
    if "--against" not in sys.argv:
        return None
    return sys.argv[sys.argv.index("--against") + 1]


def option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def start() -> tuple[list[subprocess.Popen[bytes]], dict[str, Target]]:
    """The upstream, the raw relay and one bridge per contender; the targets to measure."""
    procs: list[subprocess.Popen[bytes]] = []
    up_port = free_port()
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(up_port)])
    procs.append(upstream)
    wait_port(up_port, upstream)
    up_url = f"ws://127.0.0.1:{up_port}/v1/realtime?model={{model}}"
    relay_port = free_port()
    relay = subprocess.Popen(
        [sys.executable, "-c", RELAY, str(relay_port), up_url.format(model="bench"), KEY]
    )
    procs.append(relay)
    targets = {
        "direct": Target(up_url.format(model="bench"), {"authorization": f"Bearer {KEY}"}, None),
        "raw relay": Target(f"ws://127.0.0.1:{relay_port}/v1/realtime?model=bench", {}, relay.pid),
    }
    # ``this`` is the maas_stream this script imports (whatever PYTHONPATH or the venv gave it).
    contenders = {"this": str(Path(maas_stream.__file__).parent.parent)}
    other = against()
    if other is not None:
        contenders["against"] = str(Path(other) / "src")
    ports = {"raw relay": (relay_port, relay)}
    for label, path in contenders.items():
        env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": path}
        port = free_port()
        args = ["serve", "--upstream-protocol", "openai-realtime", "--upstream-url", up_url]
        args += ["--port", str(port), "--log-level", "warning", "--backlog", "4096"]
        args += ["--bridge-key", BRIDGE_KEY]
        if label == "this":
            args += (option("--this-args") or "").split()
        proc = subprocess.Popen([sys.executable, "-c", BRIDGE, *args], env=env)
        procs.append(proc)
        ports[label] = (port, proc)
        targets[label] = Target(
            f"ws://127.0.0.1:{port}/v1/realtime?model=bench",
            {"authorization": f"Bearer {BRIDGE_KEY}"},
            proc.pid,
        )
    for port, proc in ports.values():
        wait_port(port, proc)
    return procs, targets


async def idle(targets: dict[str, Target], bridges: list[str]) -> None:
    """Idle KiB per session of each relay process (first: resident memory does not shrink after a load)."""
    print(f"idle sessions: {IDLE:,} open at once, resident memory grown per session")
    for name, target in targets.items():
        if target.pid is None:
            continue
        kib = await idle_memory(target)  # once: a second run would reuse the first's memory
        print(f"{name:>19} {kib:8.1f} KiB/session")
        if name in bridges:
            record(
                f"realtime bridge idle x{IDLE}" + ("" if name == "this" else f" ({name})"), "KiB/session", kib
            )
        else:
            record(f"raw relay idle x{IDLE}", "KiB/session", kib, "floor")


async def bench(targets: dict[str, Target]) -> None:
    for target in targets.values():  # the first session loads the bridge's modules
        await close_all(await open_sessions(target, 2))
    bridges = [name for name in targets if name not in ("direct", "raw relay")]
    if "--no-idle" not in sys.argv:
        await idle(targets, bridges)
    print()
    print(
        f"realtime bridge vs raw relay: {TOTAL:,} deltas and {PINGS:,} round trips per level, best of {REPEATS}"
    )
    print(
        f"{'sessions':>8} {'':>10} {'messages/s':>11} {'vs relay':>9} {'CPU/msg':>9} {'CPU/ping':>9}"
        f" {'rtt p50':>9} {'p99':>9} {'added p50':>10} {'p99':>9}"
    )
    levels = option("--levels")
    for sessions in [int(n) for n in levels.split(",")] if levels else LEVELS:
        results = {name: Result() for name in targets}
        for _ in range(REPEATS):
            for name, target in targets.items():
                await measure(target, sessions, results[name])
        relay = results["raw relay"]
        r50, r99 = relay.p50, relay.p99
        for name, res in results.items():
            p50, p99 = res.p50, res.p99
            cpu = f"{res.cpu_stream * 1e6:7.1f}µs" if res.cpu_stream < float("inf") else ""
            ping = f"{res.cpu_ping * 1e6:7.1f}µs" if res.cpu_ping < float("inf") else ""
            print(
                f"{sessions:>8} {name:>10} {res.rate:>11,.0f} {res.rate / relay.rate:>9.2f} {cpu:>9} {ping:>9}"
                f" {p50 * 1e3:>7.2f}ms {p99 * 1e3:>7.2f}ms {(p50 - r50) * 1e3:>8.2f}ms {(p99 - r99) * 1e3:>7.2f}ms"
            )
        for name in bridges:
            res = results[name]
            label = f"realtime bridge x{sessions}" + ("" if name == "this" else f" ({name})")
            record(label, "messages/s bridge / raw relay", res.rate / relay.rate, "~1")
            record(label, "bridge CPU µs/message (stream)", res.cpu_stream * 1e6, "<= 25")
            record(label, "raw relay CPU µs/message (stream)", relay.cpu_stream * 1e6, "floor")
            if res.cpu_ping < float("inf") and relay.cpu_ping < float("inf"):
                # A lone round trip wakes the event loop per message: its CPU is mostly the loop's
                # and the socket's, which the raw relay pays too, so it is judged against that floor.
                record(label, "bridge CPU µs/message (ping)", res.cpu_ping * 1e6, "info")
                record(label, "raw relay CPU µs/message (ping)", relay.cpu_ping * 1e6, "floor")
                record(label, "CPU per ping bridge / raw relay", res.cpu_ping / relay.cpu_ping, "~1")
            record(label, "added latency p50 vs raw relay (ms)", (res.p50 - r50) * 1e3, "<= 2")
            record(label, "added latency p99 vs raw relay (ms)", (res.p99 - r99) * 1e3, "<= 2")


def main() -> None:
    if not Path("/proc/self/stat").exists():
        raise SystemExit("bench_realtime_bridge.py reads CPU times and memory from /proc (Linux)")
    procs, targets = start()
    spy: subprocess.Popen[bytes] | None = None
    out = option("--py-spy")
    if out is not None:
        pid = targets["this"].pid
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "-o",
                out,
                "-f",
                "raw",
                "-r",
                "500",
                "--pid",
                str(pid),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
        )
    try:
        try:
            import uvloop  # type: ignore[import-not-found, unused-ignore]  # optional (uvicorn[standard])
        except ImportError:
            asyncio.run(bench(targets))
        else:
            uvloop.run(bench(targets))
    finally:
        if spy is not None:
            spy.send_signal(2)
            spy.wait(timeout=60)
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
