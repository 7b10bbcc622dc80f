"""Benchmark: memory per in-flight stream, in the library and in the bridge (tracemalloc).

Run: ``python benchmarks/bench_memory.py`` (add ``--quick`` for a fast smoke run).

* idle in-flight stream, library: ``STREAMS`` aggregators (and converters) that have read the
  first frame of their stream and wait, per protocol: bytes allocated per stream beyond the
  frame itself;
* after 500 text deltas: one aggregator's allocations, and one converter's (to Responses and
  to Realtime: the encoder reads the text from the converter's aggregator, so it too holds the
  text once), as a ratio to the text (the content) and as the KiB beyond it (issue 18: the
  content plus a few KiB);
* idle in-flight stream, bridge: ``STREAMS`` concurrent requests served in this process by the
  bridge's ASGI app from an upstream that sent its first frames and stalls; bytes allocated
  per stream once every client has its first byte (the request tasks, the upstream reader,
  the converter, the relay), without and with the upstream's idle and total timeouts (what
  ``maas-stream serve`` sets). The same harness around a bare ASGI app that answers the first
  frame and waits (what the server's own task, its ``receive`` and the stalled upstream cost
  here) is measured too; the difference is the bridge's own share.

Add ``--against DIR`` (a checkout, e.g. ``/work/main``) to measure the bridge rows with that
checkout's ``src`` too, in a subprocess, after this one's (``against`` rows).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

import maas_stream as ms
from _harness import quick, record
from maas_stream.bridge import Limits, Timeouts, create_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping

    App = Callable[
        [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
        Awaitable[None],
    ]

STREAMS = 300 if quick() else 10_000


def sse(event: str | None, body: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


def chat(i: int) -> bytes:
    return sse(
        None,
        {
            "id": "chatcmpl-m",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}],
        },
    )


ANTHROPIC_START = sse(
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_m",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    },
) + sse(
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)


def anthropic(i: int) -> bytes:
    return sse(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"word{i} "}},
    )


def gemini(i: int) -> bytes:
    return sse(
        None, {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": f"word{i} "}]}}]}
    )


CASES: dict[str, tuple[bytes, Callable[[int], bytes]]] = {
    "openai-chat": (b"", chat),
    "anthropic": (ANTHROPIC_START, anthropic),
    "gemini": (b"", gemini),
}


def allocated(build: Callable[[], object], count: int) -> float:
    """Bytes allocated per object built (``count`` of them alive at once)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = [build() for _ in range(count)]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    used = sum(s.size_diff for s in after.compare_to(before, "filename"))
    del kept
    return used / count


def library() -> None:
    for protocol, (start, delta) in CASES.items():
        first = start + delta(0)

        def aggregator(p: str = protocol, f: bytes = first) -> object:
            agg = ms.StreamAggregator(p)
            agg.feed(f)
            return agg

        def converter(p: str = protocol, f: bytes = first) -> object:
            conv = ms.StreamConverter("openai-responses", protocol=p)
            conv.feed(f)
            return conv

        idle = allocated(aggregator, STREAMS) - len(first)
        conv = allocated(converter, STREAMS) - len(first)
        frames = start + b"".join(delta(i) for i in range(500))
        content = sum(len(f"word{i} ") for i in range(500))

        def after_500(p: str = protocol, data: bytes = frames) -> object:
            agg = ms.StreamAggregator(p)
            agg.feed(data)
            return agg

        def converter_500(p: str = protocol, data: bytes = frames, to: str = "openai-responses") -> object:
            conv = ms.StreamConverter(to, protocol=p)
            conv.feed(data)
            return conv

        used = allocated(after_500, 20)  # the frames were allocated before: only what it keeps
        conv_used = allocated(converter_500, 20)
        realtime_used = allocated(lambda: converter_500(to="openai-realtime"), 20)
        print(
            f"{protocol:12} idle aggregator {idle / 1024:6.2f} KiB, idle converter {conv / 1024:6.2f} KiB,"
            f" after 500 deltas {used / 1024:6.2f} KiB (converter {conv_used / 1024:6.2f} KiB,"
            f" to Realtime {realtime_used / 1024:6.2f} KiB) for {content / 1024:.2f} KiB of text"
        )
        record(f"memory {protocol}", "idle aggregator KiB/stream", idle / 1024, "<= 2")
        record(f"memory {protocol}", "idle converter KiB/stream", conv / 1024, "<= 2")
        record(f"memory {protocol}", "after 500 deltas KiB / content KiB", used / content, "info")
        record(
            f"memory {protocol}", "after 500 deltas KiB beyond the content", (used - content) / 1024, "<= 4"
        )
        # A converter keeps the text once: the encoder reads it from the aggregator.
        record(
            f"memory {protocol}", "converter after 500 deltas KiB / content KiB", conv_used / content, "info"
        )
        record(
            f"memory {protocol}",
            "converter after 500 deltas KiB beyond the content",
            (conv_used - content) / 1024,
            "<= 4",
        )
        record(
            f"memory {protocol}",
            "converter to Realtime after 500 deltas KiB beyond the content",
            (realtime_used - content) / 1024,
            "<= 8",
        )


async def frames() -> AsyncIterator[bytes]:
    """The stalled upstream stream: its first frames, then nothing until cancelled."""
    yield ANTHROPIC_START + anthropic(0)
    await anyio.sleep_forever()


class Stalled(contextlib.AbstractAsyncContextManager[Any]):
    """One exchange with the stalled upstream (a slotted context manager, as HTTPUpstream's)."""

    __slots__ = ()

    async def __aenter__(self) -> AsyncIterator[bytes]:
        return frames()

    async def __aexit__(self, *exc: object) -> None:
        return None


class StalledUpstream:
    """An Anthropic upstream that sends its first frames and then waits (until cancelled)."""

    protocol = "anthropic"

    def __init__(self, timeouts: Timeouts | None = None) -> None:
        self.timeouts = timeouts

    def open(self, body: dict[str, Any], *, model: str | None) -> contextlib.AbstractAsyncContextManager[Any]:
        # Sent, not held; a slotted context manager around the exchange (as HTTPUpstream).
        del body
        return Stalled()

    async def aclose(self) -> None:
        return None


async def bare_app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    """The harness's own cost: read the request, answer the first frame, wait for the hang-up."""
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": ANTHROPIC_START, "more_body": True})
    await receive()


CLIENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": (
        "/v1/chat/completions",
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": ("/v1/responses", {"model": "m", "stream": True, "input": "hi"}),
}
"""Each client protocol's endpoint and streaming request (Chat: most SDKs; Responses: Codex CLI)."""


async def bridge_streams(count: int, app: App, client: str = "chat") -> float:
    """Bytes allocated per stream with ``count`` requests to ``app`` in flight, each past its first byte."""
    path, request = CLIENTS[client]
    body = json.dumps(request).encode()
    first_bytes = 0
    target = 1
    started = anyio.Event()

    async def one() -> None:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal first_bytes
            if message["type"] == "http.response.start" and message["status"] != 200:
                raise SystemExit(f"the bridge answered {message['status']}: not an in-flight stream")
            if message["type"] == "http.response.body" and message.get("body"):
                first_bytes += 1
                if first_bytes == target:
                    started.set()

        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "query_string": b"",
            "headers": [(b"content-type", b"application/json"), (b"host", b"127.0.0.1")],
            "client": ("127.0.0.1", 1),
        }
        await app(scope, receive, send)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)  # one first: the modules and caches it loads are not per stream
        await started.wait()
        started, target = anyio.Event(), count + 1
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for _ in range(count):
            tg.start_soon(one)
        await started.wait()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        tg.cancel_scope.cancel()
    used = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return used / count


def bridge(label: str) -> None:
    """The bridge rows: with and without upstream timeouts, and the harness alone."""
    limits = Limits(max_streams=None)
    plain = create_app(upstream=StalledUpstream(), limits=limits)
    timed = create_app(upstream=StalledUpstream(Timeouts()), limits=limits)
    harness = anyio.run(bridge_streams, STREAMS, bare_app)
    suffix = "" if label == "this" else f" ({label})"
    rows = (
        ("chat", "no timeouts", plain),
        ("chat", "serve's timeouts", timed),
        ("responses", "serve's timeouts", timed),
    )
    for client, name, app in rows:
        per = anyio.run(bridge_streams, STREAMS, app, client)
        print(
            f"bridge {label:>7} ({client} client <- anthropic upstream, {name}): {per / 1024:.2f} KiB per idle"
            f" in-flight stream, {(per - harness) / 1024:.2f} KiB of it the bridge's own"
            f" (harness {harness / 1024:.2f} KiB)"
        )
        what = ("" if name == "no timeouts" else ", timeouts") + (
            "" if client == "chat" else f", {client} client"
        )
        record(f"memory bridge{suffix}", f"idle stream KiB{what}", per / 1024, "<= 16")
        record(f"memory bridge{suffix}", f"idle stream KiB{what}, bridge's own", (per - harness) / 1024)


def main() -> None:
    print(f"{STREAMS:,} concurrent streams")
    if "--label" in sys.argv:  # the --against subprocess
        bridge(sys.argv[sys.argv.index("--label") + 1])
        return
    library()
    bridge("this")
    if "--against" in sys.argv:
        src = Path(sys.argv[sys.argv.index("--against") + 1]) / "src"
        env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{Path(__file__).parent}"}
        args = [sys.executable, __file__, "--label", "against", *(["--quick"] if quick() else [])]
        subprocess.run(args, env=env, check=True)


if __name__ == "__main__":
    main()
