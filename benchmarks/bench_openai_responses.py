"""Benchmark the OpenAI Responses decoder, aggregator and encoder against baselines.

Reports events/s on the same bytes, in one process, for: (a) bare SSE split + untyped
``msgspec.json.decode`` of every payload, (b) ``ms.aggregate``, (c) the openai SDK's own
accumulator (its SSE decoder, ``construct_type`` and ``ResponseStreamState``), (d) re-encode
(``ms.convert`` to the same protocol). Run: ``PYTHONPATH=src python benchmarks/bench_openai_responses.py`` (``--quick``: fewer
runs). CPU time, contenders interleaved, best of several runs (``_harness.py``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import msgspec
import openai
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai._types import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent

from _harness import LARGE, SMALL, bare_sse, flatness, measure

if TYPE_CHECKING:
    from collections.abc import Callable


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


def sdk(data: bytes) -> Callable[[list[bytes]], object]:
    """The openai SDK's accumulator: its SSE decoder, ``construct_type``, ``ResponseStreamState``."""

    def run(chunks: list[bytes]) -> object:
        state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
        for sse in SSEDecoder().iter_bytes(iter(chunks)):
            event = construct_type(type_=ResponseStreamEvent, value=json.loads(sse.data))
            state.handle_event(event)  # type: ignore[arg-type]
        return state._completed_response

    return run


def main() -> None:
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, openai {openai.__version__}")
    runs = []
    for size in (SMALL, LARGE):
        data = synthesize(size)
        runs.append(
            measure(
                "openai-responses", data, bare=bare_sse, sdk=sdk(data), sdk_label="openai SDK accumulator"
            )
        )
    flatness("openai-responses", *runs)


if __name__ == "__main__":
    main()
