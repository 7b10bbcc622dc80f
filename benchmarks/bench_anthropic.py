"""Anthropic Messages throughput: our decode + aggregate against bare parsing and the SDK.

Run: ``PYTHONPATH=src /work/venv/bin/python benchmarks/bench_anthropic.py``

On the same synthesized bytes (a ~2k-event stream of thinking, text and tool calls, and a
~30k-event stream dominated by one long tool input), it reports events/s of

(a) bare "split SSE + ``msgspec.json.decode`` untyped" of every payload,
(b) ``ms.aggregate`` (our decoder and the aggregator),
(c) the anthropic SDK's own stream accumulator (``client.messages.stream()`` over a mock
    transport, which parses the SSE and runs ``accumulate_event``),
(d) our encoder alone on the canonical events (and the whole ``ms.convert`` pipeline),

and the budget ratios of DESIGN.md: (b) >= 0.5x (a), (b) >= 10x (c), (d) <= 2x (b)'s cost.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import httpx2
import msgspec

import maas_stream as ms
from maas_stream.sse import Decoder


def _frame(body: dict[str, Any]) -> str:
    return f"event: {body['type']}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"


def synth(text_deltas: int, json_deltas: int) -> tuple[bytes, int]:
    """A realistic stream: thinking, text, a long tool input; returns (bytes, event count)."""
    frames = [
        _frame(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4-8",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1200, "output_tokens": 1},
                },
            }
        ),
        _frame(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        ),
    ]
    frames += [
        _frame(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": f"step {i} of the plan; "},
            }
        )
        for i in range(text_deltas // 4)
    ]
    frames.append(
        _frame(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "Eq" + "A" * 300},
            }
        )
    )
    frames.append(_frame({"type": "content_block_stop", "index": 0}))
    frames.append(
        _frame({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    )
    frames += [
        _frame(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": f" word{i} — é"},
            }
        )
        for i in range(text_deltas)
    ]
    frames.append(_frame({"type": "content_block_stop", "index": 1}))
    frames.append(
        _frame(
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": "toolu_b", "name": "write", "input": {}},
            }
        )
    )
    frames.append(
        _frame(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"lines": ["'},
            }
        )
    )
    frames += [
        _frame(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": f"line {i}\\n"},
            }
        )
        for i in range(json_deltas)
    ]
    frames.append(
        _frame(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '"]}'},
            }
        )
    )
    frames.append(_frame({"type": "content_block_stop", "index": 2}))
    frames.append(
        _frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 9000},
            }
        )
    )
    frames.append(_frame({"type": "message_stop"}))
    return "".join(frames).encode(), len(frames)


def bare(data: bytes) -> None:
    """(a) split SSE and decode every payload untyped."""
    dec = Decoder()
    for event in dec.feed(data):
        msgspec.json.decode(event.data)
    dec.finish()


def ours(data: bytes) -> None:
    """(b) decode + aggregate."""
    ms.aggregate(data, protocol="anthropic")


def canonical_events(data: bytes) -> list[Any]:
    """The canonical events an encoder receives for ``data``."""
    agg = ms.StreamAggregator("anthropic", emit=True)
    return agg.feed(data) + agg.finish_events()


def encode_only(events: list[Any]) -> None:
    """(d) our encoder alone, on canonical events."""
    enc = ms.get_protocol("anthropic").encoder()
    for event in events:
        enc.encode(event)
    enc.finish()


def reencode(data: bytes) -> None:
    """(b) + (d) as one pipeline: ``ms.convert`` to the same protocol."""
    ms.convert(data, to="anthropic", protocol="anthropic")


def sdk(data: bytes) -> None:
    """(c) the SDK's stream parser and accumulator."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = anthropic.Anthropic(
        api_key="x", http_client=httpx2.Client(transport=httpx2.MockTransport(handler))
    )
    with client.messages.stream(
        model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        stream.get_final_message()


def best(fn: Any, data: Any, repeat: int) -> float:
    """Best wall time of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    """Run every measurement and print the ratios."""
    for label, (data, n), repeat, sdk_repeat in (
        ("~2k events", synth(1500, 400), 7, 2),
        ("~30k events, long tool input", synth(4000, 26000), 3, 1),
    ):
        a = best(bare, data, repeat)
        b = best(ours, data, repeat)
        c = best(sdk, data, sdk_repeat)
        d = best(encode_only, canonical_events(data), repeat)
        cd = best(reencode, data, repeat)
        print(f"{label}: {n} events, {len(data) / 1e6:.1f} MB")
        print(f"  (a) bare split+decode   {n / a:12,.0f} ev/s")
        print(f"  (b) ours decode+agg     {n / b:12,.0f} ev/s   (b)/(a) = {a / b:.2f}  (budget >= 0.5)")
        print(f"  (c) anthropic SDK       {n / c:12,.0f} ev/s   (b)/(c) = {c / b:.1f}x (budget >= 10x)")
        print(f"  (d) re-encode only      {n / d:12,.0f} ev/s   cost (d)/(b) = {d / b:.2f} (budget <= 2)")
        print(f"      ms.convert pipeline {n / cd:12,.0f} ev/s   = {cd / b:.2f}x the cost of (b)")


if __name__ == "__main__":
    main()
