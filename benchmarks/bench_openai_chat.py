"""Benchmark: OpenAI Chat Completions decode + aggregate, re-encode, SSE framing, memory.

Run: ``python benchmarks/bench_openai_chat.py`` (add ``--quick`` for a fast smoke run).

Everything is measured on the same bytes in one process and reported as ratios:

* events/s of ``ms.aggregate`` vs the bare rate of splitting SSE and ``msgspec.json.decode``-ing
  every payload untyped (budget: >= 0.5x) and vs the openai SDK's ``chat.completions.stream()``
  accumulator (budget: >= 10x; the issue asks 20x);
* re-encoding cost (``ms.convert`` to the same protocol) vs decoding (budget: <= 2x);
* per-event cost on a 2k- vs a 30k-event stream (flat is the budget);
* our SSE decoder vs httpx-sse's decoder on the same bytes (ours is kept only if faster);
* memory per idle in-flight stream (budget: <= 2 KiB) with 10,000 concurrent streams.

``--against DIR`` adds another checkout's ``ms.aggregate`` (``_harness.against``) beside ours.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from typing import TYPE_CHECKING

import httpx2
import msgspec
import openai
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

import maas_stream as ms
from _harness import (
    LARGE,
    SMALL,
    FreshIds,
    against,
    aggregate,
    bare_sse_chunked,
    best_of,
    event_aggregate,
    record,
)
from maas_stream.sse import Decoder

if TYPE_CHECKING:
    from collections.abc import Callable


def synth_stream(n_events: int) -> bytes:
    """A Chat stream of ``n_events`` chunks: text deltas, then one tool call with long arguments."""
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-5.1",
    }
    out = [
        {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
    ]
    text_events = n_events // 2
    for i in range(text_events):
        delta = {"content": f" word{i % 97}"}
        out.append(
            {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
        )
    call = {
        "index": 0,
        "id": "call_bench",
        "type": "function",
        "function": {"name": "write", "arguments": ""},
    }
    out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
    out.append(
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"text": "'}}]},
                    "finish_reason": None,
                }
            ],
        }
    )
    for i in range(n_events - text_events - 4):
        frag = {"index": 0, "function": {"arguments": f"chunk {i} "}}
        out.append(
            {**base, "choices": [{"index": 0, "delta": {"tool_calls": [frag]}, "finish_reason": None}]}
        )
    out.append(
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]},
                    "finish_reason": None,
                }
            ],
        }
    )
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    body = b"".join(b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\n\n" for c in out)
    return body + b"data: [DONE]\n\n"


def chunks_of(data: bytes, size: int = 4096) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def bare(chunks: list[bytes]) -> int:
    """The floor: our fastest SSE split, then an untyped msgspec decode of every payload."""
    decoder = Decoder()
    decode = msgspec.json.decode
    n = 0
    for chunk in chunks:
        for _, data, _, _ in decoder.feed_raw(chunk):
            if data != b"[DONE]":
                decode(data)
            n += 1
    return n


def ours(chunks: list[bytes]) -> int:
    response = ms.aggregate(chunks, protocol="openai-chat")
    assert response.status == "completed"
    return 1


def reencode(chunks: list[bytes]) -> int:
    conv = ms.StreamConverter("openai-chat", protocol="openai-chat")
    for chunk in chunks:
        conv.feed(chunk)
    conv.finish()
    return 1


def sdk(data: bytes) -> Callable[[list[bytes]], int]:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = openai.OpenAI(
        api_key="bench",
        base_url="http://127.0.0.1:9/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )

    def run(chunks: list[bytes]) -> int:
        with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as stream:
            for _ in stream:
                pass
            stream.get_final_completion()
        return 1

    return run


def sse_ours(chunks: list[bytes]) -> int:
    decoder = Decoder()
    n = 0
    for chunk in chunks:
        n += len(decoder.feed(chunk))
    return n


def sse_httpx(chunks: list[bytes]) -> int:
    # httpx-sse's own path: incremental UTF-8 text, its line splitter, its event decoder.
    import codecs

    text = codecs.getincrementaldecoder("utf-8")("replace")
    lines = SSELineDecoder()
    decoder = SSEDecoder()
    n = 0
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            if decoder.decode(line) is not None:
                n += 1
    return n


def idle_stream_memory(count: int) -> float:
    """Bytes per idle in-flight stream: aggregators that have read one chunk and wait."""
    first = synth_stream(4).split(b"\n\n")[0] + b"\n\n"
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    streams = []
    for _ in range(count):
        agg = ms.StreamAggregator("openai-chat")
        agg.feed(first)
        streams.append(agg)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    used = sum(s.size_diff for s in after.compare_to(before, "filename"))
    content = len(first)
    return used / count - content


def main() -> None:
    quick = "--quick" in sys.argv
    other = against()
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, openai {openai.__version__}")
    per_event: dict[int, float] = {}
    for n in (SMALL, LARGE):
        data = synth_stream(n)
        chunks = chunks_of(data)
        events = data.count(b"\n\n")
        fns: dict[str, Callable[[list[bytes]], object]] = {
            "bare": bare,
            "bare_chunked": bare_sse_chunked,
            "ours": ours,
            "events": event_aggregate("openai-chat"),
            "enc": reencode,
            "sse": sse_ours,
            "sse_httpx": sse_httpx,
        }
        if other is not None:
            fns["against"] = aggregate("openai-chat", other)
        t = best_of(fns, FreshIds(data), 3 if quick else (31 if n == SMALL else 9))
        t_bare, t_ours, t_enc, t_sse, t_sse_httpx = t["bare"], t["ours"], t["enc"], t["sse"], t["sse_httpx"]
        t_sdk = best_of({"sdk": sdk(data)}, chunks, 1 if n > 10_000 else 2)["sdk"]
        per_event[n] = t_ours / events
        print(f"\n{n} events ({len(data) / 1e6:.2f} MB):")
        print(f"  bare split+msgspec.decode  {events / t_bare:12,.0f} ev/s")
        print(
            f"  ms.aggregate               {events / t_ours:12,.0f} ev/s   {t_bare / t_ours:5.2f}x bare (>= 1.0)"
        )
        print(f"  bare, chunk split: ms.aggregate is {t['bare_chunked'] / t_ours:5.2f}x this floor")
        if "against" in t:
            print(
                f"  --against's ms.aggregate   {events / t['against']:12,.0f} ev/s   this is {t['against'] / t_ours:5.2f}x as fast"
            )
        print(
            f"  openai SDK stream()        {events / t_sdk:12,.0f} ev/s   ours is {t_sdk / t_ours:5.1f}x faster (>= 10)"
        )
        print(
            f"  ms.convert (re-encode)     {events / t_enc:12,.0f} ev/s   re-encode adds {(t_enc - t_ours) / t_ours:4.2f}x decode,"
            f" the encoder {(t_enc - t['events']) / t['events']:4.2f}x the event decode (<= 1)"
        )
        print(
            f"  SSE framing: ours {events / t_sse:,.0f} ev/s, httpx-sse {events / t_sse_httpx:,.0f} ev/s"
            f" -> ours {t_sse_httpx / t_sse:4.2f}x"
        )
        name = f"openai-chat {events:,} ev"
        record(name, "decode vs bare", t_bare / t_ours, ">= 1.0")
        record(name, "decode vs bare (chunk split)", t["bare_chunked"] / t_ours, "info")
        if "against" in t:
            record(name, "this vs --against", t["against"] / t_ours, "info")
        record(name, "vs SDK", t_sdk / t_ours, ">= 10")
        record(name, "re-encode / decode", (t_enc - t_ours) / t_ours, "info")
        record(name, "encode / event decode", (t_enc - t["events"]) / t["events"], "<= 1")
    flat = per_event[LARGE] / per_event[SMALL]
    print(f"\nper-event cost {LARGE:,} / {SMALL:,}: {flat:.2f} (flat = 1.0)")
    record("openai-chat", f"per-event cost {LARGE:,}/{SMALL:,} ev", flat, "<= 1.1")
    count = 200 if quick else 10_000
    idle = idle_stream_memory(count)
    print(f"memory per idle in-flight stream ({count:,} streams): {idle:,.0f} bytes (<= 2048)")
    record("openai-chat", "idle stream memory (KiB)", idle / 1024, "<= 2")


if __name__ == "__main__":
    main()
