"""Benchmark: what the bridge adds over talking to the upstream directly, at 1, 50 and 200 streams.

Run: ``python benchmarks/bench_bridge.py`` (add ``--quick`` for a fast smoke run). Linux only
(CPU time is read from ``/proc/<pid>/stat``).

Three processes on 127.0.0.1: a fake Anthropic upstream (uvicorn, a pure ASGI app sending a
stream of ``EVENTS`` SSE frames, each as its own chunk), the bridge (``maas-stream serve
--upstream-protocol anthropic``, a Chat Completions client in front, so every frame is decoded,
aggregated and re-encoded), and this process as the clients (httpx2). For each server flavour
(uvicorn on plain asyncio + h11, and uvicorn's ``standard`` uvloop + httptools when installed)
and each concurrency C:

* streaming: time to first byte (TTFB) from sending the request to the first body chunk, p50
  and p99 over the C streams, directly from the upstream and through the bridge; the
  difference is what the bridge adds;
* non-streaming (``"stream": false``: the bridge aggregates and answers one JSON body): the
  time to the whole answer, p50, against reading the whole upstream stream directly;
* CPU per event: the bridge process's CPU time (user + system) over the run divided by the
  events it forwarded, against the upstream process's CPU per event it served;
* flatness, per server flavour: the bridge's CPU per streamed event at C streams over its CPU
  per event at 1 stream (a bridge whose cost per event does not grow with the streams: ~1);
* per request: the bridge's CPU per request on ``SEQUENTIAL`` streams without deltas
  (``"model": "empty"``), one after another, against the upstream's CPU per request (a bare
  uvicorn app: the floor of serving a request at all). What a request costs around its events
  (routing, checks, the request's conversion, the upstream exchange, the response's start and
  end), which every event of a short stream and every first byte carry; and again with a
  ``LONG`` chat history (~100 KB: what a request's size adds, per KB);
* TTFB under load: C - 1 streams paced like a model's tokens (``"model": "paced"``: the upstream
  spreads their frames over ``PACED_SECONDS``) keep the servers busy while ``PROBES`` streams
  are opened one after another, each timed to its first byte, directly and through the bridge
  (p50 and p90 over the probes, each the best of the repetitions on its own). A probe is a
  stream without deltas (its first read a few frames, as a model's answer begins; not a burst
  of hundreds converted before the first write), and there are enough of them for a p90 that
  holds from run to run (the 6th slowest of 60, not the 2nd of 20). The probes come
  from an httpx2 client in a process of its own; the paced streams are read by a bare asyncio
  protocol here (:class:`_Drain`), so the load's client neither queues the probes behind its
  own frames nor takes the CPU the servers share (httpx2 reading 200 paced streams took ~90% of
  a core of this benchmark's 2). Unlike the C streams opened at once, whose TTFB is mostly the
  client's and the upstream's queue (it differs by several ms between two identical bridges),
  this is what one more stream waits for in a busy bridge: its setup, its upstream exchange,
  its first frame behind the other streams' frames. The bridge's CPU per event under this load is
  reported beside (``paced``: one frame per read, as a model's tokens come), measured in a run of
  its own with the C paced streams alone (the probes' own cost is per request). A bare TCP relay
  (:data:`RELAY`) in front of the upstream is measured the same way: the floor of one more hop.

With ``--inside`` (always with ``--quick``), the ``this`` bridge also times each probe from inside
(:data:`INSIDE`): its own time to the first byte (work and queue, the upstream's wait taken out),
split before and after the upstream's answer, and the upstream's wait itself.

The machine is shared, so the figures are ratios from one run, not absolute budgets. To compare
two versions of the bridge in ONE run, add ``--against DIR`` (a checkout, e.g. ``/work/main``): a
second bridge runs that checkout's ``src`` on the same upstream, and every measurement alternates
between the two (rows ``this`` and ``against``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2

from _harness import quick, record

EVENTS = 20 if quick() else 200
"""Text deltas per stream (plus the message start and end frames)."""
LEVELS = (2,) if quick() else (1, 50, 200)
REPEATS = 1 if quick() else 3
FLAVOURS = {"plain": ("asyncio", "h11"), "standard": ("uvloop", "httptools")}
"""uvicorn's ``loop`` and ``http`` per server flavour."""

BRIDGE = textwrap.dedent(
    """
    import functools, sys, uvicorn
    from maas_stream import _cli_serve
    from maas_stream._cli import main
    # The serve command calls uvicorn.run; pin the flavour's event loop, and its HTTP parser with
    # serve --http (a checkout from before that flag, --against: uvicorn's class, as it served).
    args = sys.argv[3:]
    if "http" in _cli_serve._SERVER_FLAGS:
        args += ["--http", sys.argv[2]]
    else:
        uvicorn.run = functools.partial(uvicorn.run, http=sys.argv[2])
    uvicorn.run = functools.partial(uvicorn.run, loop=sys.argv[1])
    sys.exit(main(args))
    """
)

INSIDE = textwrap.dedent(
    """
    # --inside: where a request's time in the bridge goes (timestamps, written on SIGUSR2).
    import asyncio, json, os, signal, time
    from maas_stream.bridge import _aiosock, _answer
    from uvicorn.protocols.http import h11_impl

    ARRIVED, READS, SENT, ANSWERED, ROWS = {}, {}, {}, {}, []

    def stamp_arrival(cls):
        received = cls.data_received
        def data_received(self, data):
            ARRIVED.setdefault(self.transport, time.perf_counter())  # a request's first bytes
            READS[self.transport] = READS.get(self.transport, 0) + 1
            return received(self, data)
        cls.data_received = data_received
    stamp_arrival(h11_impl.H11Protocol)
    try:
        from uvicorn.protocols.http import httptools_impl
    except ImportError:  # (httptools not installed: only the plain flavour runs)
        pass
    else:
        stamp_arrival(httptools_impl.HttpToolsProtocol)

    upstream_send = _aiosock.AioConnection.send
    async def send(self, data, seconds):
        SENT[asyncio.current_task()] = (time.perf_counter(), id(self))
        ANSWERED[id(self)] = None
        return await upstream_send(self, data, seconds)
    _aiosock.AioConnection.send = send

    upstream_data = _aiosock.AioConnection.data_received
    def data_received(self, data):
        if id(self) in ANSWERED and ANSWERED[id(self)] is None:
            ANSWERED[id(self)] = time.perf_counter()  # the upstream's first bytes
        return upstream_data(self, data)
    _aiosock.AioConnection.data_received = data_received

    first_write = _answer.start_with_piece
    async def start_with_piece(cycle, start, data):
        now = time.perf_counter()
        arrived = ARRIVED.pop(cycle.transport, None)
        reads = READS.pop(cycle.transport, 0)
        sent = SENT.pop(asyncio.current_task(), None)
        if arrived is not None and sent is not None:
            answered = ANSWERED.pop(sent[1], None) or sent[0]
            ROWS.append((arrived, sent[0], answered, now, reads))
        return await first_write(cycle, start, data)
    _answer.start_with_piece = start_with_piece

    def dump(*_):
        with open(os.environ["MAAS_BENCH_INSIDE"], "w") as f:
            json.dump(ROWS, f)
        ROWS.clear()
    signal.signal(signal.SIGUSR2, dump)
    signal.signal(signal.SIGUSR1, lambda *_: ROWS.clear())
    """
)
"""``--inside``: instrumentation put before :data:`BRIDGE` (the ``this`` bridge only). Each
request's arrival (its first bytes read), its upstream request sent, the upstream's first bytes
and the bridge's first write, and how many reads its request took (under load a client's head
and body often come in two: each read wakes the request once more). Under load the probes' rows
split the bridge's added time into its own work and queue (to the upstream request, from the
upstream's first byte to the first write) and the wait for the upstream. It wraps private names of uvicorn and the bridge: a profiling
aid, run by the quick benchmark in CI so that it keeps working. The wrappers cost CPU per read
(~2 µs per paced event): with ``--inside`` the bridge's own rows read high; take the headline
figures from a run without it."""


UPSTREAM = textwrap.dedent(
    """
    import asyncio, json, sys, uvicorn

    N = int(sys.argv[2])
    PACE = float(sys.argv[3]) / (N + 5)  # seconds between two frames of a "paced" stream
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
    EMPTY = FRAMES[:2] + FRAMES[-3:]  # "model": "empty": a stream without deltas

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        more, body = True, b""
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        model = json.loads(body).get("model")
        paced = model == "paced"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for f in (EMPTY if model == "empty" else FRAMES):
            await send({"type": "http.response.body", "body": f, "more_body": True})
            if paced:
                await asyncio.sleep(PACE)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=4096,
                timeout_keep_alive=60)
    """
)

CHAT_BODY = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_BODY = {**CHAT_BODY, "max_tokens": 100}
CHAT_WHOLE = {**CHAT_BODY, "stream": False}
PACED = {"chat": {**CHAT_BODY, "model": "paced"}, "anthropic": {**ANTHROPIC_BODY, "model": "paced"}}
"""The load of the TTFB-under-load measure: streams whose frames the upstream spreads out."""
EMPTY = {"chat": {**CHAT_BODY, "model": "empty"}, "anthropic": {**ANTHROPIC_BODY, "model": "empty"}}
"""Streams without deltas (only the envelope's five frames): the per-request measure, the probes."""
LONG = {
    **EMPTY["chat"],
    "messages": [
        {"role": role, "content": f"{role} turn {i}: " + "lorem ipsum dolor sit amet " * 18}
        for i in range(100)
        for role in ("user", "assistant")
    ]
    + [{"role": "user", "content": "hi"}],
}
"""The per-request measure of a long conversation: ~100 KB of chat history (201 turns)."""
SEQUENTIAL = 30 if quick() else 400
"""Requests of the per-request measure, one after another."""
PACED_SECONDS = 0.5 if quick() else 1.5
"""How long the upstream takes over a paced stream."""
PROBES = 3 if quick() else 60
"""Streams timed to their first byte, one after another, under the load of the paced ones."""


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


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Sample:
    ttfb: list[float]
    whole: list[float]
    bridge_cpu: float
    upstream_cpu: float


async def one(client: httpx2.AsyncClient, url: str, body: dict[str, object]) -> tuple[float, float]:
    """(time to first body byte, time to the whole body) of one request."""
    t0 = time.perf_counter()
    first = 0.0
    async with client.stream("POST", url, json=body) as resp:
        resp.raise_for_status()
        async for _ in resp.aiter_bytes():
            if not first:
                first = time.perf_counter() - t0
    return first, time.perf_counter() - t0


MIN_STREAMS = 40
"""Streams served per measurement at least: a low concurrency runs several rounds in a row, so its
CPU time spans many clock ticks (``/proc`` counts in 10 ms ticks)."""


def rounds(streams: int) -> int:
    """Rounds of C concurrent streams (and a warm-up each) per measurement."""
    return 1 if quick() else max(1, MIN_STREAMS // (streams + 1))


async def run(url: str, body: dict[str, object], streams: int, times: int = 1) -> list[tuple[float, float]]:
    limits = httpx2.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    async with httpx2.AsyncClient(limits=limits, timeout=120, trust_env=False) as client:
        found: list[tuple[float, float]] = []
        for _ in range(times):
            await one(client, url, body)  # warm the connection pools
            found += await asyncio.gather(*(one(client, url, body) for _ in range(streams)))
        return found


def measure(url: str, body: dict[str, object], streams: int, pids: tuple[int, int]) -> Sample:
    """One run of C concurrent requests, with both servers' CPU per event."""
    times = rounds(streams)
    before = [cpu_seconds(p) for p in pids]
    results = asyncio.run(run(url, body, streams, times))
    after = [cpu_seconds(p) for p in pids]
    served = times * (streams + 1) * (EVENTS + 5)  # every stream of the run, its warm-ups included
    return Sample(
        [r[0] for r in results],
        [r[1] for r in results],
        (after[0] - before[0]) / served,
        (after[1] - before[1]) / served,
    )


def better(best: Sample | None, sample: Sample) -> Sample:
    """The better of two runs (by median TTFB; the lower CPU per event is kept either way)."""
    if best is None:
        return sample
    cpu = min(best.bridge_cpu, sample.bridge_cpu)
    if pct(sample.ttfb, 0.5) < pct(best.ttfb, 0.5):
        best = sample
    return Sample(best.ttfb, best.whole, cpu, best.upstream_cpu)


PROBE = textwrap.dedent(
    """
    import asyncio, json, sys, time
    import anyio, httpx2

    URL, BODY, PROBES, GAP = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])

    async def one(client):
        t0 = time.perf_counter()
        async with client.stream("POST", URL, json=BODY) as resp:
            resp.raise_for_status()
            first = 0.0
            async for _ in resp.aiter_bytes():
                first = first or time.perf_counter() - t0
        return first

    async def main():
        async with httpx2.AsyncClient(timeout=120, trust_env=False) as client:
            await one(client)  # warm the connection
            print("ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
            found = []
            for _ in range(PROBES):
                found.append(await one(client))
                await anyio.sleep(GAP)
            print(json.dumps(found), flush=True)

    asyncio.run(main())
    """
)
"""The probes' client: its own process, so a probe waits for the servers, not behind the load's frames
in the load client's event loop (at 200 paced streams that loop's queue is ~20 ms, and it swings)."""

RELAY = textwrap.dedent(
    """
    import asyncio, sys

    class Side(asyncio.Protocol):
        # One side of a relayed connection: what it reads is written to the other side.
        def __init__(self, peer=None):
            self.peer, self.held, self.transport = peer, [], None
        def connection_made(self, transport):
            self.transport = transport
            if self.peer is None:  # the client's side: connect to the upstream
                asyncio.get_running_loop().create_task(self.connect())
        async def connect(self):
            loop = asyncio.get_running_loop()
            upstream = Side(self.transport)
            await loop.create_connection(lambda: upstream, "127.0.0.1", int(sys.argv[2]))
            self.peer = upstream.transport
            for data in self.held:
                self.peer.write(data)
            self.held = None
        def data_received(self, data):
            if self.peer is None:
                self.held.append(data)
            else:
                self.peer.write(data)
        def connection_lost(self, exc):
            if self.peer is not None:
                self.peer.close()

    async def main():
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Side, "127.0.0.1", int(sys.argv[1]), backlog=4096)
        await server.serve_forever()

    if sys.argv[3] == "uvloop":
        import uvloop
        uvloop.run(main())
    else:
        asyncio.run(main())
    """
)
"""A bare TCP relay in front of the upstream (``tcp relay``, TTFB under load only): the bytes copied
each way as they come, on the flavour's event loop. What one more hop costs at all: the floor of
any proxy's added time to first byte and CPU per paced event on this machine."""


class _Drain(asyncio.Protocol):
    """One paced stream of the load, read and dropped (``paced``): its bytes are only checked.

    The load's client must not take the machine the servers share: httpx2 reading 200 paced
    streams took ~90% of a core (of 2), so the servers waited for the CPU rather than for each
    other. This costs ~10%.
    """

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done
        self.head = b""
        self.tail = b""

    def data_received(self, data: bytes) -> None:
        if self.done.done():
            return
        if len(self.head) < 12:
            self.head += data[: 12 - len(self.head)]
            if len(self.head) == 12 and self.head != b"HTTP/1.1 200":
                self.done.set_exception(SystemExit(f"a paced stream was answered {data[:200]!r}"))
                return
        self.tail = (self.tail + data)[-5:]
        if self.tail == b"0\r\n\r\n":  # the chunked body's end
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(exc or ConnectionError("the stream ended before its last chunk"))


async def paced(url: str, body: dict[str, object]) -> None:
    """One stream of the load on a connection of its own: a 200 answer, read to its last chunk."""
    target = httpx2.URL(url)
    port = target.port or 80
    data = json.dumps(body).encode()
    head = f"POST {target.raw_path.decode()} HTTP/1.1\r\nhost: {target.host}:{port}\r\n"
    head += f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    transport, _ = await loop.create_connection(lambda: _Drain(done), target.host, port)
    try:
        transport.write(head.encode() + data)
        await done
    finally:
        transport.close()


def paced_cpu(url: str, load: dict[str, object], streams: int, pid: int) -> float:
    """The CPU seconds per event of process ``pid`` serving ``streams`` paced streams (alone)."""
    before = cpu_seconds(pid)
    asyncio.run(_all_paced(url, load, streams))
    return (cpu_seconds(pid) - before) / (streams * (EVENTS + 5))


async def _all_paced(url: str, load: dict[str, object], streams: int) -> None:
    await asyncio.gather(*(paced(url, load) for _ in range(streams)))


async def probed(url: str, load: dict[str, object], body: dict[str, object], streams: int) -> list[float]:
    """The TTFB of ``PROBES`` streams opened one by one while ``streams - 1`` paced ones run.

    The probes come from a client process of their own (:data:`PROBE`, httpx2), as a new user's
    request would; the paced streams from this one, each read by a :class:`_Drain`.
    """
    args = [url, json.dumps(body), str(PROBES), str(PACED_SECONDS / 2 / PROBES)]
    prober = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBE, *args, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert prober.stdin is not None
    assert prober.stdout is not None
    try:
        if await prober.stdout.readline() != b"ready\n":
            raise SystemExit("the probe client failed")
        busy = asyncio.gather(*(paced(url, load) for _ in range(streams - 1)))
        await anyio.sleep(PACED_SECONDS / 5)  # every paced stream is under way
        prober.stdin.write(b"go\n")
        found: list[float] = json.loads(await prober.stdout.readline())
        await busy
        return found
    finally:
        if prober.returncode is None:
            prober.kill()
        await prober.wait()


async def sequential(url: str, body: dict[str, object]) -> None:
    """``SEQUENTIAL`` requests, one after another, on one kept-alive connection (after a warm-up)."""
    async with httpx2.AsyncClient(timeout=120, trust_env=False) as client:
        for _ in range(SEQUENTIAL):
            await one(client, url, body)


def per_request(
    flavour: str, direct_url: str, urls: dict[str, str], pids: dict[str, int], up_pid: int
) -> None:
    """Each bridge's CPU per request against the upstream's, on streams without deltas.

    What a request costs before and after its events (routing, checks, the request's
    conversion, the upstream exchange, the response's start and end), which every event of a
    short stream and every first byte carry. The upstream (a bare uvicorn app) is the floor of
    serving one request at all.
    """
    up_cpu = []
    for _ in range(REPEATS):
        asyncio.run(sequential(direct_url, ANTHROPIC_BODY))  # warm
        before = cpu_seconds(up_pid)
        asyncio.run(sequential(direct_url, EMPTY["anthropic"]))
        up_cpu.append((cpu_seconds(up_pid) - before) / SEQUENTIAL)
    upstream = min(up_cpu)
    size = len(json.dumps(LONG)) / 1000
    for label, url in urls.items():
        cpu = bridge_cpu(url, pids[label], EMPTY["chat"])
        ratio = cpu / upstream if upstream else float("nan")  # (--quick: too few clock ticks)
        print(
            f"per request {label:>8}: bridge CPU {cpu * 1e6:7.1f}µs, the upstream's {upstream * 1e6:6.1f}µs "
            f"({ratio:.2f}x), a stream without deltas, {SEQUENTIAL} one after another"
        )
        long = bridge_cpu(url, pids[label], LONG)
        print(
            f"per request {label:>8}: bridge CPU {long * 1e6:7.1f}µs with a {size:.0f} KB chat history "
            f"({(long - cpu) * 1e6 / size:.2f}µs per KB more)"
        )
        name = f"bridge {flavour} x1" + ("" if label == "this" else f" ({label})")
        record(name, "bridge CPU µs/request (no deltas)", cpu * 1e6, "info")
        record(name, f"bridge CPU µs/request ({size:.0f} KB history)", long * 1e6, "info")
        if upstream:
            record(name, "bridge CPU per request / upstream's", ratio, "info")


def bridge_cpu(url: str, pid: int, body: dict[str, object]) -> float:
    """The bridge's CPU seconds per request of ``body`` (streams without deltas), best of ``REPEATS``."""
    found = []
    for _ in range(REPEATS):
        asyncio.run(sequential(url, CHAT_BODY))  # warm
        before = cpu_seconds(pid)
        asyncio.run(sequential(url, body))
        found.append((cpu_seconds(pid) - before) / SEQUENTIAL)
    return min(found)


def under_load(
    flavour: str,
    streams: int,
    direct_url: str,
    contenders: dict[str, tuple[str, dict[str, object], dict[str, object], int]],
) -> None:
    """The TTFB-under-load rows of one level: probes directly and through each contender, alternated.

    ``contenders``: label -> (URL, a paced stream's body, a probe's body, the process's pid):
    each bridge, and the bare TCP relay. With each one's CPU per event of the run: a paced
    stream's frames come one per read, so this is the cost per event a model's token stream has
    (the streams above come in bursts).
    """
    # Each percentile is the best of the repetitions on its own (as the realtime benchmark's):
    # which repetition loses at the 90th percentile changes from run to run.
    direct: list[tuple[float, float]] = []
    via: dict[str, list[tuple[float, float]]] = {label: [] for label in contenders}
    cpu: dict[str, float] = {}
    order = list(contenders.items())
    own: list[list[float]] = []  # --inside: the probes' timestamps in the bridge
    for _ in range(REPEATS):
        found = asyncio.run(probed(direct_url, PACED["anthropic"], EMPTY["anthropic"], streams))
        direct.append((pct(found, 0.5), pct(found, 0.9)))
        order = order[1:] + order[:1]
        for label, (url, load, body, pid) in order:
            timed = label == "this" and inside()
            if timed:
                inside_rows(pid)  # (what came before this run: dropped)
            found = asyncio.run(probed(url, load, body, streams))
            via[label].append((pct(found, 0.5), pct(found, 0.9)))
            if timed:
                own += inside_rows(pid)[-PROBES:]  # the probes come last (after the paced streams' starts)
            used = paced_cpu(url, load, streams, pid)
            cpu[label] = min(cpu.get(label, used), used)
    d50, d90 = min(p[0] for p in direct), min(p[1] for p in direct)
    for label, runs in via.items():
        v50, v90 = min(p[0] for p in runs), min(p[1] for p in runs)
        print(
            f"{streams:>8} {label:>9} {d50 * 1e3:>12.2f}ms {v50 * 1e3:>7.2f}ms {(v50 - d50) * 1e3:>6.2f}ms"
            f" {d90 * 1e3:>9.2f}ms {v90 * 1e3:>7.2f}ms {(v90 - d90) * 1e3:>6.2f}ms {cpu[label] * 1e6:>12.1f}µs"
        )
        name = f"bridge {flavour} x{streams}" + ("" if label == "this" else f" ({label})")
        goal = "info" if label == RELAY_LABEL else "<= 2"
        record(name, "TTFB p50 added under load (ms)", (v50 - d50) * 1e3, goal)
        record(name, "TTFB p90 added under load (ms)", (v90 - d90) * 1e3, goal)
        if label == RELAY_LABEL:
            record(name, "relay CPU µs/event (paced)", cpu[label] * 1e6, "info")
        else:
            record(name, "bridge CPU µs/event (paced)", cpu[label] * 1e6, "<= 25")
    if own:
        report_inside(flavour, streams, own)


RELAY_LABEL = "tcp relay"


def inside() -> bool:
    """Whether to time the ``this`` bridge from inside (``--inside``; always in ``--quick``, to keep it working)."""
    return "--inside" in sys.argv or quick()


INSIDE_FILE = Path(tempfile.gettempdir()) / f"maas-bench-inside-{os.getpid()}.json"


def inside_rows(pid: int) -> list[list[float]]:
    """The ``this`` bridge's timestamps since the last call (see :data:`INSIDE`), oldest first."""
    INSIDE_FILE.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 10
    while not INSIDE_FILE.exists() or not INSIDE_FILE.stat().st_size:
        if time.monotonic() > deadline:
            raise SystemExit("the bridge wrote no --inside timings")
        time.sleep(0.02)
    time.sleep(0.05)  # (written whole by then: a few KB)
    rows: list[list[float]] = json.loads(INSIDE_FILE.read_text())
    INSIDE_FILE.unlink()
    return rows


def report_inside(flavour: str, streams: int, rows: list[list[float]]) -> None:
    """The probes' time in the bridge: its own (work and queue) and the wait for the upstream."""
    own = [(w - a) - (u - s) for a, s, u, w, _ in rows]
    to_upstream = [s - a for a, s, _, _, _ in rows]
    to_write = [w - u for _, _, u, w, _ in rows]
    waited = [u - s for _, s, u, _, _ in rows]
    split = sum(1 for *_, reads in rows if reads > 1)

    def two(values: list[float]) -> str:
        return f"{pct(values, 0.5) * 1e3:.2f}/{pct(values, 0.9) * 1e3:.2f}"

    print(
        f"{streams:>8}    inside: own p50/p90 {two(own)}ms (to the upstream request {two(to_upstream)},"
        f" its first byte to the first write {two(to_write)}), the upstream {two(waited)}ms;"
        f" {len(rows)} probes, {split} of them read in two reads or more"
    )
    name = f"bridge {flavour} x{streams}"
    record(name, "own time to first byte under load p50 (ms)", pct(own, 0.5) * 1e3, "info")
    record(name, "own time to first byte under load p90 (ms)", pct(own, 0.9) * 1e3, "info")


def against() -> str | None:
    """The checkout given with ``--against DIR`` (its ``src`` is the second bridge's code), or ``None``."""
    if "--against" not in sys.argv:
        return None
    return sys.argv[sys.argv.index("--against") + 1]


def start_servers(
    flavour: str,
) -> tuple[subprocess.Popen[bytes], dict[str, subprocess.Popen[bytes]], int, dict[str, int]]:
    """The upstream and one bridge per contender (``this``, and ``against`` with ``--against``)."""
    loop, http = FLAVOURS[flavour]
    up_port = free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, str(up_port), str(EVENTS), str(PACED_SECONDS)]
    )
    contenders = {"this": os.environ.get("PYTHONPATH", "")}
    other = against()
    if other is not None:
        contenders["against"] = str(Path(other) / "src")
    bridges: dict[str, subprocess.Popen[bytes]] = {}
    ports: dict[str, int] = {}
    for label, path in contenders.items():
        env = {**os.environ, "ANTHROPIC_API_KEY": "bench-key", "PYTHONPATH": path}
        ports[label] = port = free_port()
        args = ["serve", "--upstream-protocol", "anthropic", "--upstream-url"]
        args += [f"http://127.0.0.1:{up_port}/v1/messages", "--port", str(port)]
        args += ["--log-level", "warning", "--backlog", "4096"]
        code = BRIDGE
        if label == "this" and inside():
            code = INSIDE + BRIDGE
            env["MAAS_BENCH_INSIDE"] = str(INSIDE_FILE)
        bridges[label] = subprocess.Popen([sys.executable, "-c", code, loop, http, *args], env=env)
    wait_port(up_port, upstream)
    for label, proc in bridges.items():
        wait_port(ports[label], proc)
    return upstream, bridges, up_port, ports


def bench_flavour(flavour: str) -> None:
    upstream, bridges, up_port, ports = start_servers(flavour)
    relay: subprocess.Popen[bytes] | None = None
    try:
        direct_url = f"http://127.0.0.1:{up_port}/v1/messages"
        loop, http = FLAVOURS[flavour]
        print(
            f"\nuvicorn {loop} + {http}: anthropic upstream -> chat client, {EVENTS} deltas, best of {REPEATS}"
        )
        print(
            f"{'streams':>8} {'bridge':>8} {'TTFB p50 direct':>15} {'bridge':>9} {'added':>8} {'p99 direct':>11}"
            f" {'bridge':>9} {'CPU/ev bridge':>14} {'upstream':>9} {'whole':>9} {'whole p50 direct':>17} {'bridge':>9}"
        )
        urls = {label: f"http://127.0.0.1:{port}/v1/chat/completions" for label, port in ports.items()}
        for url in urls.values():
            asyncio.run(run(url, CHAT_BODY, 4))  # the bridge's first request loads its modules
        per_event: dict[str, dict[int, float]] = {label: {} for label in urls}
        for streams in LEVELS:
            # Contenders alternate within each level (and the direct figures are shared), so
            # the load of the shared machine hits them alike.
            direct: Sample | None = None
            via: dict[str, Sample | None] = dict.fromkeys(urls)
            whole: dict[str, Sample | None] = dict.fromkeys(urls)
            order = list(urls.items())
            for _ in range(REPEATS):
                direct = better(
                    direct, measure(direct_url, ANTHROPIC_BODY, streams, (upstream.pid, upstream.pid))
                )
                # The contender measured first in a repetition tends to look worse: the order
                # turns each repetition.
                order = order[1:] + order[:1]
                for label, url in order:
                    pids = (bridges[label].pid, upstream.pid)
                    via[label] = better(via[label], measure(url, CHAT_BODY, streams, pids))
                    whole[label] = better(whole[label], measure(url, CHAT_WHOLE, streams, pids))
            assert direct is not None
            results = {label: (via[label], whole[label]) for label in urls}
            for label, (streamed, answered) in results.items():
                assert streamed is not None
                assert answered is not None
                report(flavour, streams, label, direct, streamed, answered)
                per_event[label][streams] = streamed.bridge_cpu
        for label, cpu in per_event.items():
            flatness(flavour, label, cpu)
        bridge_pids = {label: proc.pid for label, proc in bridges.items()}
        per_request(flavour, direct_url, urls, bridge_pids, upstream.pid)
        relay_port = free_port()
        relay = subprocess.Popen([sys.executable, "-c", RELAY, str(relay_port), str(up_port), loop])
        wait_port(relay_port, relay)
        contenders = {
            label: (url, PACED["chat"], EMPTY["chat"], bridge_pids[label]) for label, url in urls.items()
        }
        relay_url = f"http://127.0.0.1:{relay_port}/v1/messages"
        contenders[RELAY_LABEL] = (relay_url, PACED["anthropic"], EMPTY["anthropic"], relay.pid)
        print(
            f"TTFB under load: N - 1 paced streams, {PROBES} probes one by one (tcp relay: the floor of a hop)\n"
            f"{'streams':>8} {'via':>9} {'TTFB p50 direct':>14} {'via':>9} {'added':>8}"
            f" {'p90 direct':>11} {'via':>9} {'added':>8} {'CPU/ev via':>14}"
        )
        for streams in LEVELS:
            if streams > 1:
                under_load(flavour, streams, direct_url, contenders)
    finally:
        if relay is not None:
            bridges[RELAY_LABEL] = relay
        for proc in (*bridges.values(), upstream):
            proc.terminate()
            proc.wait(timeout=30)


def report(flavour: str, streams: int, label: str, direct: Sample, via: Sample, whole: Sample) -> None:
    """One row of the table, and its ratios for ``run_all.py`` (the ``against`` rows are so named)."""
    d50, v50 = pct(direct.ttfb, 0.5), pct(via.ttfb, 0.5)
    d99, v99 = pct(direct.ttfb, 0.99), pct(via.ttfb, 0.99)
    w_direct, w_via = pct(direct.whole, 0.5), pct(whole.whole, 0.5)
    up = via.upstream_cpu or direct.upstream_cpu
    print(
        f"{streams:>8} {label:>8} {d50 * 1e3:>13.2f}ms {v50 * 1e3:>7.2f}ms {(v50 - d50) * 1e3:>6.2f}ms"
        f" {d99 * 1e3:>9.2f}ms {v99 * 1e3:>7.2f}ms {via.bridge_cpu * 1e6:>12.1f}µs {up * 1e6:>7.1f}µs"
        f" {whole.bridge_cpu * 1e6:>7.1f}µs {w_direct * 1e3:>15.2f}ms {w_via * 1e3:>7.2f}ms"
    )
    name = f"bridge {flavour} x{streams}" + ("" if label == "this" else f" ({label})")
    record(name, "bridge CPU µs/event (stream)", via.bridge_cpu * 1e6, "<= 25")
    record(name, "bridge CPU µs/event (whole)", whole.bridge_cpu * 1e6, "<= 25")
    record(name, "TTFB p50 bridge/direct", v50 / d50, "~1")
    record(name, "TTFB p50 added (ms)", (v50 - d50) * 1e3, "<= 2")
    record(name, "TTFB p99 bridge/direct", v99 / d99, "~1")
    record(name, "whole answer p50 bridge/direct", w_via / w_direct, "~1")


def flatness(flavour: str, label: str, cpu: dict[int, float]) -> None:
    """The bridge's CPU per event at N streams over its CPU per event at 1 stream (flat: ~1)."""
    if 1 not in cpu or not cpu[1]:
        return
    ratios = {streams: cpu[streams] / cpu[1] for streams in cpu if streams != 1}
    shown = ", ".join(f"{streams} streams {ratio:.2f}" for streams, ratio in ratios.items())
    print(f"flatness {label:>8} (CPU per event at N streams / at 1 stream): {shown}")
    for streams, ratio in ratios.items():
        name = f"bridge {flavour} x{streams}" + ("" if label == "this" else f" ({label})")
        record(name, "flatness (CPU/event at N / at 1)", ratio, "~1")


def main() -> None:
    if not Path("/proc/self/stat").exists():
        raise SystemExit("bench_bridge.py reads CPU times from /proc (Linux)")
    flavours = ["plain"]
    if importlib.util.find_spec("uvloop") and importlib.util.find_spec("httptools"):
        flavours.append("standard")
    else:
        print("uvloop/httptools not installed: only uvicorn's plain asyncio + h11 is measured")
    for flavour in flavours:
        bench_flavour(flavour)


if __name__ == "__main__":
    main()
