"""Benchmark: cross-protocol conversion (``ms.convert`` from each protocol to every other one).

Run: ``PYTHONPATH=src python benchmarks/bench_convert.py [--quick] [source ...]``.

The per-protocol benchmarks measure re-encoding to the same protocol; a bridge converts across
protocols (an Anthropic upstream to a Chat client, Chat to Responses...), so this one measures
every pair on the per-protocol benchmarks' own synthesized streams (~2k events each). For each
pair, in one run with the contenders interleaved (``_harness.best_of``):

* ``re-encode / decode`` = (t(convert to the target) - t(aggregate)) / t(aggregate): what
  the emit path and the target's encoder add to decoding the source (information: it counts
  making the events too, which the direct fold skips);
* ``encode / event decode`` = (t(convert) - t(events)) / t(events), where ``events`` decodes
  and aggregates with every event made (``StreamAggregator(emit=True)``, what a conversion
  decodes through): the target's encoder alone against the decode it is fed by (issue 18's
  goal: re-encoding <= 1x the decode cost);
* the whole conversion's CPU time per source event, in µs (decode + aggregate + encode: the
  library's share of a bridge's per-event cost, whose budget is 25 µs in all).

``fail_closed=False``: what a target cannot carry is dropped and listed, as a bridge allows. Each
run reads the stream with ids of its own (``_harness.FreshIds``), as each user's stream has: an
encoder's templates that carry an id are not found again from an earlier run.

``--against DIR`` measures another checkout's library too, in the same run and interleaved (see
``_harness.against``): each pair then also prints that library's ``encode / event decode``, for a
change's before and after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bench_anthropic
import bench_gemini
import bench_openai_chat
import bench_openai_responses
import bench_realtime
import maas_stream as ms
from _harness import (
    SMALL,
    FreshIds,
    against,
    bare_jsonl,
    bare_sse,
    best_of,
    chunks_of,
    event_aggregate,
    names,
    quick,
    record,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType


def streams(n: int) -> dict[str, tuple[bytes, Callable[[list[bytes]], int]]]:
    """Each protocol's benchmark stream of about ``n`` events, and how to count its events."""
    return {
        "openai-chat": (bench_openai_chat.synth_stream(n), bare_sse),
        "openai-responses": (bench_openai_responses.synthesize(n), bare_sse),
        "anthropic": (bench_anthropic.synth(n * 3 // 4, n // 5)[0], bare_sse),
        "gemini": (bench_gemini.synth(n), bare_sse),
        "openai-realtime": (bench_realtime.realtime_stream(n), bare_jsonl),
        "google-live": (bench_realtime.live_stream(n), bare_jsonl),
        "google-interactions": (bench_realtime.interactions_stream(n), bare_sse),
    }


def converter(source: str, target: str, lib: ModuleType = ms) -> Callable[[list[bytes]], object]:
    """``ms.convert`` of the chunks from ``source`` to ``target`` (drops allowed); ``lib``'s if given."""

    def run(chunks: list[bytes]) -> object:
        return lib.convert(chunks, to=target, protocol=source, fail_closed=False)

    return run


def aggregator(source: str) -> Callable[[list[bytes]], object]:
    """``ms.aggregate`` of the chunks (the decode cost the ratios divide by)."""

    def run(chunks: list[bytes]) -> object:
        return ms.aggregate(chunks, protocol=source)

    return run


def main() -> None:
    """Measure every (source, target) pair and record its ratios."""
    all_streams = streams(SMALL)
    chosen = names()
    sources = [s for s in all_streams if not chosen or s in chosen]
    repeat = 1 if quick() else 5
    print(f"cross-protocol conversion, ~{SMALL:,} events per source stream (CPU time, best of {repeat})")
    for source in sources:
        data, count = all_streams[source]
        chunks = chunks_of(data)
        events = count(chunks)
        targets = [t for t in all_streams if t != source]
        fns = {
            "aggregate": aggregator(source),
            "events": event_aggregate(source),
            **{t: converter(source, t) for t in targets},
        }
        other = against()
        if other is not None:
            fns["events --against"] = event_aggregate(source, other)
            fns.update({f"{t} --against": converter(source, t, other) for t in targets})
        t = best_of(fns, FreshIds(data), repeat)  # (each run its own ids, as each user stream)
        decode, with_events = t["aggregate"], t["events"]
        print(
            f"\n{source}: {events:,} events, aggregate {decode / events * 1e6:.2f} µs/event, "
            f"with events {with_events / events * 1e6:.2f} µs/event"
        )
        for target in targets:
            ratio = (t[target] - decode) / decode
            encode = (t[target] - with_events) / with_events
            per_event = t[target] / events * 1e6
            print(
                f"  -> {target:20} re-encode adds {ratio:4.2f}x decode "
                f"(encoder {encode:4.2f}x event decode), convert {per_event:5.2f} µs/event"
            )
            if other is not None:
                theirs = (t[f"{target} --against"] - t["events --against"]) / t["events --against"]
                print(f"     {'':20} --against: encoder {theirs:4.2f}x its event decode")
                record(f"convert {source} -> {target}", "encode / event decode of --against", theirs, "info")
            name = f"convert {source} -> {target}"
            record(name, "re-encode / decode", ratio, "info")
            record(name, "encode / event decode", encode, "<= 1")
            record(name, "convert µs/event", per_event, "library share of <= 25")


if __name__ == "__main__":
    main()
