"""Anthropic Messages throughput: our decode + aggregate against bare parsing and the SDK.

Run: ``PYTHONPATH=src /work/venv/bin/python benchmarks/bench_anthropic.py`` (``--quick``: fewer runs)

On the same synthesized bytes (a ~2k-event stream of thinking, text and tool calls, and a
~30k-event stream dominated by one long tool input), it reports events/s of

(a) bare "split SSE + ``msgspec.json.decode`` untyped" of every payload,
(b) ``ms.aggregate`` (our decoder and the aggregator),
(c) the anthropic SDK's own stream accumulator (``client.messages.stream()`` over a mock
    transport, which parses the SSE and runs ``accumulate_event``),
(d) ``ms.convert`` to the same protocol (re-encode cost = its CPU time minus (b)'s),

measured as CPU time, interleaved, best of several runs (``_harness.py``), and the budget
ratios of DESIGN.md: (b) >= 0.5x (a), (b) >= 10x (c), (d) <= 2x (b)'s cost.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
import msgspec

from _harness import bare_sse, flatness, measure, quick

if TYPE_CHECKING:
    from collections.abc import Callable


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


def sdk(data: bytes) -> Callable[[list[bytes]], object]:
    """The SDK's stream parser and accumulator (``messages.stream()`` over a mock transport)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = anthropic.Anthropic(
        api_key="x", http_client=httpx2.Client(transport=httpx2.MockTransport(handler))
    )

    def run(chunks: list[bytes]) -> object:
        with client.messages.stream(
            model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}]
        ) as stream:
            return stream.get_final_message()

    return run


def main() -> None:
    """Run every measurement and print the ratios."""
    print(
        f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, anthropic {anthropic.__version__}"
    )
    cases = (
        (("~300 events", synth(60, 20)), ("~300 events, long tool input", synth(100, 200)))
        if quick()
        else (("~2k events", synth(1500, 400)), ("~30k events, long tool input", synth(4000, 26000)))
    )
    runs = [
        measure(
            "anthropic", data, bare=bare_sse, sdk=sdk(data), sdk_label="anthropic SDK stream()", label=label
        )
        for label, (data, _) in cases
    ]
    flatness("anthropic", *runs)


if __name__ == "__main__":
    main()
