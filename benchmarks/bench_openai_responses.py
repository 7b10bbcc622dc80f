"""Benchmark the OpenAI Responses decoder, aggregator and encoder against baselines.

Reports events/s on the same bytes, in one process, for: (a) bare SSE split + untyped
``msgspec.json.decode`` of every payload, (b) ``ms.aggregate``, (c) the openai SDK's own
accumulator (its SSE decoder, ``construct_type`` and ``ResponseStreamState``), (d) re-encode
(``ms.convert`` to the same protocol). Run: ``PYTHONPATH=src python benchmarks/bench_openai_responses.py``.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import msgspec
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai._types import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent

import maas_stream as ms

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def synthesize(n_events: int) -> bytes:
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    resp = {
        "id": "resp_b",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "gpt-5.1",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    add("response.created", response=resp)
    add("response.in_progress", response=resp)
    add("response.output_item.added", output_index=0, item={"id": "rs_1", "type": "reasoning", "summary": []})
    add(
        "response.reasoning_summary_part.added",
        item_id="rs_1",
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": ""},
    )
    summary = []
    for i in range(n_events // 10):
        summary.append(f"think {i} ")
        add(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta=summary[-1],
        )
    rs = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "".join(summary)}],
        "encrypted_content": "gAAAA" * 40,
    }
    add("response.output_item.done", output_index=0, item=rs)
    add(
        "response.output_item.added",
        output_index=1,
        item={"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []},
    )
    add(
        "response.content_part.added",
        item_id="msg_1",
        output_index=1,
        content_index=0,
        part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
    )
    text = []
    while len(events) < n_events - 12:
        text.append(f"word{len(events)} ")
        add(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            delta=text[-1],
            logprobs=[],
            obfuscation="abc",
        )
    full = "".join(text)
    part = {"type": "output_text", "text": full, "annotations": [], "logprobs": []}
    add("response.output_text.done", item_id="msg_1", output_index=1, content_index=0, text=full, logprobs=[])
    add("response.content_part.done", item_id="msg_1", output_index=1, content_index=0, part=part)
    msg = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    add("response.output_item.done", output_index=1, item=msg)
    fc = {
        "id": "fc_1",
        "type": "function_call",
        "status": "in_progress",
        "call_id": "call_1",
        "name": "f",
        "arguments": "",
    }
    add("response.output_item.added", output_index=2, item=fc)
    for chunk in ['{"a":', "1}"]:
        add("response.function_call_arguments.delta", item_id="fc_1", output_index=2, delta=chunk)
    add(
        "response.function_call_arguments.done", item_id="fc_1", output_index=2, name="f", arguments='{"a":1}'
    )
    fc_done = {**fc, "status": "completed", "arguments": '{"a":1}'}
    add("response.output_item.done", output_index=2, item=fc_done)
    add(
        "response.completed",
        response={
            **resp,
            "status": "completed",
            "output": [rs, msg, fc_done],
            "usage": {
                "input_tokens": 1,
                "output_tokens": 2,
                "total_tokens": 3,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 1},
            },
        },
    )
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def bare(data: bytes) -> int:
    decode = msgspec.json.decode
    n = 0
    for block in data.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                decode(line[6:])
                n += 1
    return n


def ours(data: bytes) -> ms.Response:
    return ms.aggregate(data, protocol="openai-responses")


def sdk(data: bytes) -> Any:
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    for sse in SSEDecoder().iter_bytes(iter([data])):
        event = construct_type(type_=ResponseStreamEvent, value=json.loads(sse.data))
        state.handle_event(event)  # type: ignore[arg-type]
    return state._completed_response


def reencode(data: bytes) -> bytes:
    return ms.convert(data, to="openai-responses", protocol="openai-responses")


def measure(fns: Mapping[str, Callable[[bytes], Any]], data: bytes, repeat: int) -> dict[str, float]:
    """Best time of each function; runs are interleaved so machine load hits all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(data)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    for size in (2_000, 30_000):
        data = synthesize(size)
        n = bare(data)
        fast = {"a": bare, "b": ours, "d": reencode}
        t = measure(fast, data, 9 if size < 10_000 else 5)
        t.update(measure({"c": sdk}, data, 3 if size < 10_000 else 1))
        a, b, c, d = t["a"], t["b"], t["c"], t["d"]
        print(f"{n} events ({len(data) / 1e6:.1f} MB)")
        print(f"  (a) split + msgspec untyped : {n / a:12,.0f} ev/s")
        print(
            f"  (b) ms.aggregate            : {n / b:12,.0f} ev/s   (b)/(a) = {a / b:.2f}x  (budget >= 0.5)"
        )
        print(f"  (c) openai SDK accumulator  : {n / c:12,.0f} ev/s   (b)/(c) = {c / b:.1f}x  (budget >= 10)")
        print(
            f"  (d) re-encode (convert)     : {n / d:12,.0f} ev/s   cost (d-b)/b = {(d - b) / b:.2f}x  (budget <= 2)"
        )


if __name__ == "__main__":
    main()
