"""Shared measuring code for ``benchmarks/bench_*.py`` (imported from the script's own folder).

Measures the way ``bench_openai_chat.py`` does: CPU time (``time.process_time``, the machine is
shared), contenders interleaved per repetition so load hits all alike, best of several runs. The
"bare" floor is a framing plus an untyped ``msgspec.json.decode`` of every payload: for SSE the
per-event split ``maas_stream.sse.Decoder.feed_raw`` (the floor issue 18's goals were set
against), for JSON lines a newline split. The direct fold now splits a chunk of common-shape
events whole (``Decoder.feed_payloads``), so a second SSE floor with that split is reported
beside it (``decode vs bare (chunk split)``): the floor as our own fastest framing would set it.

Every run reads the stream with its ids renamed (:class:`FreshIds`): the encoders keep templates of
the frames they write (bounded, shared by every stream), and a template with a stream's id in it is
found again only when the same stream is encoded again. A production stream's ids are its own, so a
benchmark repeating one stream would measure warm templates no user gets.

``--against DIR`` loads another checkout's ``src/maas_stream`` too, as the module
``maas_stream_against`` (both in one process, measured interleaved): :func:`measure` then adds
its ``ms.aggregate`` beside ours (``this vs --against``), for a change's before and after.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import json
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

import maas_stream as ms
from maas_stream.sse import Decoder

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import ModuleType


def quick() -> bool:
    """True when the script was run with ``--quick`` (fewer repetitions, for a smoke run)."""
    return "--quick" in sys.argv


def _against_dir() -> str | None:
    """The DIR of ``--against DIR`` (or ``--against=DIR``), if given."""
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg.startswith("--against="):
            return arg.removeprefix("--against=")
        if arg == "--against" and i + 1 < len(args):
            return args[i + 1]
    return None


def names() -> list[str]:
    """The command line's positional arguments (what to measure), without ``--against``'s DIR."""
    args = sys.argv[1:]
    return [
        a for i, a in enumerate(args) if not a.startswith("--") and not (i and args[i - 1] == "--against")
    ]


_AGAINST: list[ModuleType | None] = []


def against() -> ModuleType | None:
    """The library of the checkout given with ``--against DIR`` (``None`` without it).

    Loaded from ``DIR/src/maas_stream`` as the module ``maas_stream_against``: a distinct name,
    so both libraries run in one process (their relative imports stay inside each).
    """
    if not _AGAINST:
        where = _against_dir()
        module = None
        if where is not None:
            init = Path(where).resolve() / "src" / "maas_stream" / "__init__.py"
            spec = importlib.util.spec_from_file_location(
                "maas_stream_against", init, submodule_search_locations=[str(init.parent)]
            )
            if spec is None or spec.loader is None:
                raise SystemExit(f"--against {where}: no maas_stream package at {init.parent}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        _AGAINST.append(module)
    return _AGAINST[0]


SMALL, LARGE = (100, 300) if quick() else (2_000, 30_000)
"""The stream sizes (events) the per-protocol benchmarks measure; tiny with ``--quick``."""

RATIO_MARK = "@ratio "
"""Prefix of the machine-readable lines ``benchmarks/run_all.py`` gathers into its table."""


def record(bench: str, metric: str, value: float, goal: str = "") -> None:
    """Print one ratio for the summary table of ``benchmarks/run_all.py`` (one JSON line)."""
    print(RATIO_MARK + json.dumps({"bench": bench, "metric": metric, "value": value, "goal": goal}))


def chunks_of(data: bytes, size: int = 4096) -> list[bytes]:
    """``data`` cut into network-sized chunks, as a client would receive it."""
    return [data[i : i + size] for i in range(0, len(data), size)]


_ID_VALUE = re.compile(rb'("(?:\w+_)?id": ?"|"\w+Id": ?")')
"""Where a string id's value starts: ``"id"``, ``"..._id"`` (``item_id``, ``call_id``...), ``"...Id"``
(``responseId``)."""

_RUN = itertools.count()


class FreshIds:
    """A stream's chunks, its ids renamed for each run (the same shape and sizes, other ids).

    Each call prefixes every string id (:data:`_ID_VALUE`) with a tag no earlier call used, in the
    whole stream alike (a call's id and its result's stay one), and cuts it with :func:`chunks_of`.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __call__(self) -> list[bytes]:
        tag = b"r%d_" % next(_RUN)
        return chunks_of(_ID_VALUE.sub(lambda m: m.group(1) + tag, self.data))


def bare_sse(chunks: list[bytes]) -> int:
    """The SSE floor: our fastest SSE split, then an untyped decode of every payload."""
    decoder = Decoder()
    decode = msgspec.json.decode
    n = 0
    for chunk in chunks:
        for _, data, _, _ in decoder.feed_raw(chunk):
            if data and data != b"[DONE]":
                decode(data)
            n += 1
    return n


def bare_sse_chunked(chunks: list[bytes]) -> int:
    """The SSE floor with our chunk split (``feed_payloads``, ``feed_raw`` where it declines)."""
    decoder = Decoder()
    decode = msgspec.json.decode
    n = 0
    for chunk in chunks:
        got = decoder.feed_payloads(chunk)
        payloads = got[0] if got is not None else [frame[1] for frame in decoder.feed_raw(chunk)]
        for data in payloads:
            if data and data != b"[DONE]":
                decode(data)
            n += 1
    return n


def bare_jsonl(chunks: list[bytes]) -> int:
    """The JSON-lines floor: split lines across chunks, untyped decode of every line."""
    decode = msgspec.json.decode
    pending = b""
    n = 0
    for chunk in chunks:
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line:
                decode(line)
                n += 1
    if pending:
        decode(pending)
        n += 1
    return n


def aggregate(protocol: str, lib: ModuleType = ms) -> Callable[[list[bytes]], object]:
    """``ms.aggregate`` of the chunks (decode + aggregate); ``lib``'s (:func:`against`) if given."""

    def run(chunks: list[bytes]) -> object:
        return lib.aggregate(chunks, protocol=protocol)

    return run


def event_aggregate(protocol: str, lib: ModuleType = ms) -> Callable[[list[bytes]], object]:
    """Decode and aggregate with every event made (``StreamAggregator(emit=True)``); ``lib``'s if given.

    What a conversion decodes through: the fair divisor of an encoder's own cost
    (``encode / event decode``), where ``ms.aggregate``'s direct fold makes no events.
    """

    def run(chunks: list[bytes]) -> object:
        agg = lib.StreamAggregator(protocol, emit=True)
        for chunk in chunks:
            agg.feed(chunk)
        agg.finish_events()
        return agg.finish()

    return run


def reencode(protocol: str) -> Callable[[list[bytes]], object]:
    """``ms.convert`` of the chunks to the same protocol (decode + aggregate + encode)."""

    def run(chunks: list[bytes]) -> object:
        return ms.convert(chunks, to=protocol, protocol=protocol)

    return run


_STREAMS: dict[str, list[tuple[list[bytes], int]]] = {}
"""The chunks and event count of each stream :func:`measure` was given, by protocol (for :func:`flatness`)."""


def per_event_pair(protocol: str, small: tuple[list[bytes], int], large: tuple[list[bytes], int]) -> float:
    """``ms.aggregate``'s CPU per event on the ``large`` stream over the ``small`` one, measured alike.

    Each sample aggregates the small stream as many times as it takes to match the large one's
    events, so both sizes run equally long samples, equally often (best of the same number) and
    interleaved, their order alternating: load and clock drift hit both alike. (Taken from two
    :func:`measure` calls instead, the ratio was a best of 5 over a best of 31, seconds apart:
    it swung 1.00-1.17 for a per-event instruction count flat within 1%.)
    """
    (chunks_s, events_s), (chunks_l, events_l) = small, large
    times = max(1, round(events_l / events_s))
    run = aggregate(protocol)

    def small_batch(chunks: list[bytes]) -> object:
        for _ in range(times):
            run(chunks)
        return None

    rounds = 1 if quick() else 21
    best = {"small": float("inf"), "large": float("inf")}
    gc.collect()
    gc.freeze()
    try:
        for round_ in range(rounds):
            pair = [("small", small_batch, chunks_s), ("large", run, chunks_l)]
            for name, fn, chunks in pair if round_ % 2 else pair[::-1]:
                start = time.process_time()
                fn(chunks)
                best[name] = min(best[name], time.process_time() - start)
    finally:
        gc.unfreeze()
    return (best["large"] / events_l) / (best["small"] / (times * events_s))


def flatness(protocol: str, small: dict[str, float], large: dict[str, float]) -> float:
    """Print and record the per-event cost of the large stream over the small one (flat = 1.0).

    The recorded ratio is :func:`per_event_pair`'s, on the last two streams :func:`measure` was
    given for ``protocol``; the ratio of the two runs' own ``per_event`` is printed beside it.
    """
    apart = large["per_event"] / small["per_event"]
    flat = per_event_pair(protocol, *_STREAMS[protocol][-2:])
    print(
        f"\n{protocol}: per-event cost {LARGE:,} / {SMALL:,} events: {flat:.2f} (flat = 1.0;"
        f" measured interleaved, equal samples; from the two runs above: {apart:.2f})"
    )
    record(protocol, f"per-event cost {LARGE:,}/{SMALL:,} ev", flat, "<= 1.1")
    return flat


def best_of(
    fns: Mapping[str, Callable[[list[bytes]], object]],
    chunks: list[bytes] | Callable[[], list[bytes]],
    repeat: int,
) -> dict[str, float]:
    """Best CPU time (process_time) of each function, runs interleaved so load hits all alike.

    ``chunks`` is the input of every run, or what makes each run's (:class:`FreshIds`: made before
    the run's clock starts).

    The heap is frozen once (``gc.freeze``: collections then skip what is already there) rather
    than collected before every run, which flushes the CPU caches; the contenders' order rotates
    each round (in a fixed order whichever ran second was favoured).
    """
    best = dict.fromkeys(fns, float("inf"))
    order = list(fns.items())
    gc.collect()
    gc.freeze()
    try:
        for round_ in range(repeat):
            shift = round_ % len(order)
            for name, fn in order[shift:] + order[:shift]:
                given = chunks() if callable(chunks) else chunks
                start = time.process_time()
                fn(given)
                best[name] = min(best[name], time.process_time() - start)
    finally:
        gc.unfreeze()
    return best


def measure(
    protocol: str,
    data: bytes,
    *,
    bare: Callable[[list[bytes]], int],
    sdk: Callable[[list[bytes]], object],
    sdk_label: str,
    label: str = "",
) -> dict[str, float]:
    """Measure bare, ms.aggregate, ms.convert and the SDK on ``data``; print rates and ratios.

    Returns the ratios (``decode_vs_bare``, ``vs_sdk``, ``reencode``) for a summary table, and
    ``per_event``: the CPU seconds of ``ms.aggregate`` per event (for :func:`flatness`).
    """
    chunks = chunks_of(data)
    events = bare(chunks)
    _STREAMS.setdefault(protocol, []).append((chunks, events))
    big = events > 10_000
    repeat = 1 if quick() else (5 if big else 31)
    fns = {
        "bare": bare,
        "ours": aggregate(protocol),
        "events": event_aggregate(protocol),
        "enc": reencode(protocol),
    }
    if bare is bare_sse:
        fns["bare_chunked"] = bare_sse_chunked
    other = against()
    if other is not None:
        fns["against"] = aggregate(protocol, other)
    t = best_of(fns, FreshIds(data), repeat)
    t_sdk = best_of({"sdk": sdk}, chunks, 1 if big or quick() else 2)["sdk"]
    t_bare, t_ours, t_enc = t["bare"], t["ours"], t["enc"]
    ratios = {
        "decode_vs_bare": t_bare / t_ours,
        "vs_sdk": t_sdk / t_ours,
        "reencode": (t_enc - t_ours) / t_ours,
        "encode": (t_enc - t["events"]) / t["events"],
        "per_event": t_ours / events,
    }
    print(f"\n{protocol} {label}".rstrip() + f": {events:,} events ({len(data) / 1e6:.2f} MB)")
    print(f"  bare split+msgspec.decode  {events / t_bare:12,.0f} ev/s")
    # Issue 18's goals: the SSE protocols at the untyped bare limit, the JSON-lines (realtime) ones at half of it.
    goal = ">= 0.5" if bare is bare_jsonl else ">= 1.0"
    print(
        f"  ms.aggregate               {events / t_ours:12,.0f} ev/s   {ratios['decode_vs_bare']:5.2f}x bare ({goal})"
    )
    if "bare_chunked" in t:
        ratios["decode_vs_bare_chunked"] = t["bare_chunked"] / t_ours
        print(
            f"  bare, chunk split          {events / t['bare_chunked']:12,.0f} ev/s   ms.aggregate is"
            f" {ratios['decode_vs_bare_chunked']:5.2f}x this floor"
        )
    if "against" in t:
        ratios["vs_against"] = t["against"] / t_ours
        print(
            f"  ms.aggregate of --against  {events / t['against']:12,.0f} ev/s   this is"
            f" {ratios['vs_against']:5.2f}x as fast"
        )
    print(f"  {sdk_label:26} {events / t_sdk:12,.0f} ev/s   ours is {ratios['vs_sdk']:5.1f}x faster (>= 10)")
    print(
        f"  ms.convert (re-encode)     {events / t_enc:12,.0f} ev/s   re-encode adds {ratios['reencode']:4.2f}x decode,"
        f" the encoder {ratios['encode']:4.2f}x the event decode (<= 1)"
    )
    name = f"{protocol} {events:,} ev"
    record(name, "decode vs bare", ratios["decode_vs_bare"], goal)
    if "decode_vs_bare_chunked" in ratios:
        record(name, "decode vs bare (chunk split)", ratios["decode_vs_bare_chunked"], "info")
    if "vs_against" in ratios:
        record(name, "this vs --against", ratios["vs_against"], "info")
    record(name, "vs SDK", ratios["vs_sdk"], ">= 10")
    # What a conversion adds over the direct fold: making the events too, so information; the goal
    # (re-encoding <= 1x the decode it runs on) is the next row's.
    record(name, "re-encode / decode", ratios["reencode"], "info")
    record(name, "encode / event decode", ratios["encode"], "<= 1")
    return ratios
