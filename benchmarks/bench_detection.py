"""Benchmark: protocol detection is linear in the bytes before the first frame.

Run: ``python benchmarks/bench_detection.py`` (``--quick`` for a smoke run).

A stream whose protocol is not named is detected from its first frames. A provider (or an
attacker) may send a lot before the first frame: SSE comments, keep-alive blank lines. Each
byte must be scanned once, so the cost per megabyte of such a prefix stays flat as the prefix
grows, whatever the chunking. Reported as CPU time per MiB for prefixes of 128 KiB to 1 MiB fed
in 4 KiB and 64 KiB chunks; the budget is flat (the 1 MiB / 128 KiB ratio near 1.0; it was
quadratic before: 1 MiB of comments took 22.7 s).
"""

from __future__ import annotations

import time
from pathlib import Path

import maas_stream as ms
from _harness import chunks_of, quick, record

STREAM = (
    Path(__file__).parent.parent / "recordings/openai-chat/readme_text_then_parallel_tools.sse"
).read_bytes()
LINE = b": keep-alive comment\n"


def detect_cost(prefix_size: int, chunk: int) -> float:
    """CPU seconds to detect and aggregate a stream behind ``prefix_size`` bytes of comments."""
    data = LINE * (prefix_size // len(LINE)) + STREAM
    parts = chunks_of(data, chunk)
    best = float("inf")
    for _ in range(2 if quick() else 5):
        start = time.process_time()
        agg = ms.StreamAggregator()
        for part in parts:
            agg.feed(part)
        assert agg.finish().status == "completed"
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    sizes = [32 * 1024, 64 * 1024] if quick() else [128 * 1024, 256 * 1024, 512 * 1024, 1000 * 1024]
    for chunk in (4096, 65536):
        costs = {size: detect_cost(size, chunk) for size in sizes}
        print(f"chunks of {chunk} bytes:")
        for size, cost in costs.items():
            print(
                f"  {size // 1024:5d} KiB prefix: {cost * 1000:7.1f} ms   {cost / (size / 2**20) * 1000:6.1f} ms/MiB"
            )
        ratio = (costs[sizes[-1]] / sizes[-1]) / (costs[sizes[0]] / sizes[0])
        print(f"  per-MiB cost, largest / smallest prefix: {ratio:.2f} (flat = 1.0)")
        record(f"detection, {chunk} B chunks", "per-MiB cost largest/smallest", ratio, "~1.0")


if __name__ == "__main__":
    main()
