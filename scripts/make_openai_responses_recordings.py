"""Write the hand-made OpenAI Responses recordings in this folder (run from the repo root).

Each case is a realistic event sequence (PROTOCOLS.md §2) written by this project, numbered
from 0 like real streams. Run: ``python recordings/openai-responses/make_recordings.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent / "recordings" / "openai-responses"
RID = "resp_rec01"


def response(status: str, output: list[Any], usage: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": RID,
        "object": "response",
        "created_at": 1767225600,
        "status": status,
        "model": "gpt-5.1",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": usage,
        **extra,
    }


USAGE = {
    "input_tokens": 88,
    "input_tokens_details": {"cached_tokens": 16, "cache_write_tokens": 0},
    "output_tokens": 143,
    "output_tokens_details": {"reasoning_tokens": 96},
    "total_tokens": 231,
}


class Stream:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> None:
        self.events.append({"type": kind, "sequence_number": len(self.events), **fields})

    def start(self) -> None:
        self.add("response.created", response=response("in_progress", []))
        self.add("response.in_progress", response=response("in_progress", []))

    def text_item(
        self, index: int, item_id: str, chunks: list[str], phase: str | None = None, **part: Any
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        if phase:
            item["phase"] = phase
        self.add("response.output_item.added", output_index=index, item=item)
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self.add(
            "response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=empty
        )
        for chunk in chunks:
            self.add(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=chunk,
                logprobs=[],
                obfuscation="x9",
            )
        text = "".join(chunks)
        annotations = part.get("annotations", [])
        for n, annotation in enumerate(annotations):
            self.add(
                "response.output_text.annotation.added",
                item_id=item_id,
                output_index=index,
                content_index=0,
                annotation_index=n,
                annotation=annotation,
            )
        self.add(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        final = {"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}
        self.add(
            "response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=final
        )
        done = {**item, "status": "completed", "content": [final]}
        self.add("response.output_item.done", output_index=index, item=done)
        return done

    def call_item(
        self, index: int, item_id: str, call_id: str, name: str, chunks: list[str]
    ) -> dict[str, Any]:
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        self.add("response.output_item.added", output_index=index, item=item)
        for chunk in chunks:
            self.add(
                "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=chunk
            )
        args = "".join(chunks)
        self.add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            name=name,
            arguments=args,
        )
        done = {**item, "status": "completed", "arguments": args}
        self.add("response.output_item.done", output_index=index, item=done)
        return done

    def reasoning_item(
        self, index: int, item_id: str, summaries: list[list[str]], enc: str
    ) -> dict[str, Any]:
        self.add(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        for s, chunks in enumerate(summaries):
            common = {"item_id": item_id, "output_index": index, "summary_index": s}
            self.add(
                "response.reasoning_summary_part.added", **common, part={"type": "summary_text", "text": ""}
            )
            for chunk in chunks:
                self.add("response.reasoning_summary_text.delta", **common, delta=chunk)
            text = "".join(chunks)
            self.add("response.reasoning_summary_text.done", **common, text=text)
            self.add(
                "response.reasoning_summary_part.done", **common, part={"type": "summary_text", "text": text}
            )
        done = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "".join(c)} for c in summaries],
            "encrypted_content": enc,
        }
        self.add("response.output_item.done", output_index=index, item=done)
        return done

    def write(self, name: str) -> None:
        lines = [
            f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False, separators=(',', ':'))}\n\n"
            for e in self.events
        ]
        (HERE / f"{name}.sse").write_text("".join(lines), encoding="utf-8")


def reasoning_text_tools() -> None:
    s = Stream()
    s.start()
    out = [
        s.reasoning_item(
            0, "rs_01", [["Two independent ", "lookups; "], ["call both ", "at once."]], "gAAAAB-opaque+/=="
        ),
        s.text_item(1, "msg_01", ["Checking both ", "cities now."], phase="commentary"),
        s.call_item(2, "fc_01", "call_P1", "get_weather", ['{"city":', '"Paris"}']),
        s.call_item(3, "fc_02", "call_O2", "get_weather", ['{"city":"Oslo"}']),
    ]
    s.add("response.completed", response=response("completed", out, USAGE))
    s.write("reasoning_text_parallel_calls")


def interleaved_calls() -> None:
    # Two calls whose argument deltas interleave by output_index (legal: events are keyed).
    s = Stream()
    s.start()
    a = {
        "id": "fc_a",
        "type": "function_call",
        "status": "in_progress",
        "call_id": "call_A",
        "name": "f",
        "arguments": "",
    }
    b = {
        "id": "fc_b",
        "type": "function_call",
        "status": "in_progress",
        "call_id": "call_B",
        "name": "g",
        "arguments": "",
    }
    s.add("response.output_item.added", output_index=0, item=a)
    s.add("response.output_item.added", output_index=1, item=b)
    s.add("response.function_call_arguments.delta", item_id="fc_a", output_index=0, delta='{"x":')
    s.add("response.function_call_arguments.delta", item_id="fc_b", output_index=1, delta='{"y":')
    s.add("response.function_call_arguments.delta", item_id="fc_a", output_index=0, delta="1}")
    s.add("response.function_call_arguments.delta", item_id="fc_b", output_index=1, delta="2}")
    s.add(
        "response.function_call_arguments.done", item_id="fc_a", output_index=0, name="f", arguments='{"x":1}'
    )
    s.add(
        "response.function_call_arguments.done", item_id="fc_b", output_index=1, name="g", arguments='{"y":2}'
    )
    da = {**a, "status": "completed", "arguments": '{"x":1}'}
    db = {**b, "status": "completed", "arguments": '{"y":2}'}
    s.add("response.output_item.done", output_index=0, item=da)
    s.add("response.output_item.done", output_index=1, item=db)
    s.add("response.completed", response=response("completed", [da, db], USAGE))
    s.write("interleaved_calls")


def refusal_annotations_incomplete() -> None:
    s = Stream()
    s.start()
    cite = {
        "type": "url_citation",
        "url": "https://example.com/a",
        "title": "A",
        "start_index": 0,
        "end_index": 5,
    }
    first = s.text_item(0, "msg_a", ["Hello", " world"], phase="final_answer", annotations=[cite])
    item = {"id": "msg_r", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    s.add("response.output_item.added", output_index=1, item=item)
    s.add(
        "response.content_part.added",
        item_id="msg_r",
        output_index=1,
        content_index=0,
        part={"type": "refusal", "refusal": ""},
    )
    s.add("response.refusal.delta", item_id="msg_r", output_index=1, content_index=0, delta="I can't ")
    s.add("response.refusal.delta", item_id="msg_r", output_index=1, content_index=0, delta="help.")
    s.add("response.refusal.done", item_id="msg_r", output_index=1, content_index=0, refusal="I can't help.")
    part = {"type": "refusal", "refusal": "I can't help."}
    s.add("response.content_part.done", item_id="msg_r", output_index=1, content_index=0, part=part)
    done = {**item, "status": "incomplete", "content": [part]}
    s.add("response.output_item.done", output_index=1, item=done)
    final = response("incomplete", [first, done], USAGE, incomplete_details={"reason": "max_output_tokens"})
    s.add("response.incomplete", response=final)
    s.write("refusal_annotation_incomplete")


def hosted_tools() -> None:
    s = Stream()
    s.start()
    ws = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    s.add("response.output_item.added", output_index=0, item=ws)
    for phase in ("in_progress", "searching", "completed"):
        s.add(f"response.web_search_call.{phase}", output_index=0, item_id="ws_1")
    ws_done = {**ws, "status": "completed", "action": {"type": "search", "query": "weather paris"}}
    s.add("response.output_item.done", output_index=0, item=ws_done)
    ci = {
        "id": "ci_1",
        "type": "code_interpreter_call",
        "status": "in_progress",
        "code": "",
        "container_id": "cntr_1",
        "outputs": None,
    }
    s.add("response.output_item.added", output_index=1, item=ci)
    s.add("response.code_interpreter_call.in_progress", output_index=1, item_id="ci_1")
    for chunk in ["print(", "1+1)"]:
        s.add("response.code_interpreter_call_code.delta", output_index=1, item_id="ci_1", delta=chunk)
    s.add("response.code_interpreter_call_code.done", output_index=1, item_id="ci_1", code="print(1+1)")
    s.add("response.code_interpreter_call.interpreting", output_index=1, item_id="ci_1")
    s.add("response.code_interpreter_call.completed", output_index=1, item_id="ci_1")
    ci_done = {
        **ci,
        "status": "completed",
        "code": "print(1+1)",
        "outputs": [{"type": "logs", "logs": "2\n"}],
    }
    s.add("response.output_item.done", output_index=1, item=ci_done)
    mcp = {
        "id": "mcp_1",
        "type": "mcp_call",
        "status": "in_progress",
        "name": "search",
        "server_label": "docs",
        "arguments": "",
    }
    s.add("response.output_item.added", output_index=2, item=mcp)
    s.add("response.mcp_call.in_progress", output_index=2, item_id="mcp_1")
    s.add("response.mcp_call_arguments.delta", output_index=2, item_id="mcp_1", delta='{"q":"x"}')
    s.add("response.mcp_call_arguments.done", output_index=2, item_id="mcp_1", arguments='{"q":"x"}')
    s.add("response.mcp_call.completed", output_index=2, item_id="mcp_1")
    mcp_done = {**mcp, "status": "completed", "arguments": '{"q":"x"}', "output": "found", "error": None}
    s.add("response.output_item.done", output_index=2, item=mcp_done)
    ig = {"id": "ig_1", "type": "image_generation_call", "status": "in_progress"}
    s.add("response.output_item.added", output_index=3, item=ig)
    s.add("response.image_generation_call.in_progress", output_index=3, item_id="ig_1")
    s.add("response.image_generation_call.generating", output_index=3, item_id="ig_1")
    s.add(
        "response.image_generation_call.partial_image",
        output_index=3,
        item_id="ig_1",
        partial_image_index=0,
        partial_image_b64="UklGRg==",
        output_format="webp",
    )
    s.add("response.image_generation_call.completed", output_index=3, item_id="ig_1")
    ig_done = {**ig, "status": "completed", "output_format": "webp", "result": "UklGRgAA"}
    s.add("response.output_item.done", output_index=3, item=ig_done)
    sh = {
        "id": "sh_1",
        "type": "shell_call",
        "status": "in_progress",
        "call_id": "call_sh",
        "action": {"commands": []},
    }
    s.add("response.output_item.added", output_index=4, item=sh)
    s.add("response.shell_call_command.added", output_index=4, command_index=0, command="")
    s.add("response.shell_call_command.delta", output_index=4, command_index=0, delta="ls")
    s.add("response.shell_call_command.done", output_index=4, command_index=0, command="ls")
    s.add("response.shell_call_command.added", output_index=4, command_index=1, command="")
    s.add("response.shell_call_command.delta", output_index=4, command_index=1, delta="pwd")
    s.add("response.shell_call_command.done", output_index=4, command_index=1, command="pwd")
    sh_done = {**sh, "status": "completed", "action": {"commands": ["ls", "pwd"]}}
    s.add("response.output_item.done", output_index=4, item=sh_done)
    out = [ws_done, ci_done, mcp_done, ig_done, sh_done]
    s.add("response.completed", response=response("completed", out, USAGE))
    s.write("hosted_tools")


def custom_tool_and_unknown() -> None:
    s = Stream()
    s.start()
    item = {
        "id": "ctc_1",
        "type": "custom_tool_call",
        "status": "in_progress",
        "call_id": "call_c",
        "name": "run",
        "input": "",
    }
    s.add("response.output_item.added", output_index=0, item=item)
    for chunk in ["echo ", "hi"]:
        s.add("response.custom_tool_call_input.delta", output_index=0, item_id="ctc_1", delta=chunk)
    s.add("response.custom_tool_call_input.done", output_index=0, item_id="ctc_1", input="echo hi")
    done = {**item, "status": "completed", "input": "echo hi"}
    s.add("response.output_item.done", output_index=0, item=done)
    s.add("response.future_feature.delta", output_index=1, item_id="zz_1", delta="?")
    weird = {"id": "zz_1", "type": "future_item", "payload": {"k": [1, 2]}}
    s.add("response.output_item.added", output_index=1, item=weird)
    s.add("response.output_item.done", output_index=1, item=weird)
    s.add("response.completed", response=response("completed", [done, weird], USAGE))
    s.write("custom_tool_and_unknown_types")


def error_nested_and_failed() -> None:
    s = Stream()
    s.start()
    s.text_item(0, "msg_e", ["Partial ", "answer"])
    s.add(
        "error",
        error={
            "type": "server_error",
            "code": "server_error",
            "message": "The server had an error.",
            "param": None,
        },
    )
    failed = response("failed", [], None)
    failed["error"] = {"code": "server_error", "message": "The server had an error."}
    s.add("response.failed", response=failed)
    s.write("error_nested_then_failed")


def error_flat() -> None:
    s = Stream()
    s.start()
    s.add("error", code="rate_limit_exceeded", message="Slow down.", param=None)
    s.write("error_flat_documented")


def cut_mid_text() -> None:
    s = Stream()
    s.start()
    item = {"id": "msg_cut", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    s.add("response.output_item.added", output_index=0, item=item)
    empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    s.add("response.content_part.added", item_id="msg_cut", output_index=0, content_index=0, part=empty)
    s.add(
        "response.output_text.delta",
        item_id="msg_cut",
        output_index=0,
        content_index=0,
        delta="Cut he",
        logprobs=[],
    )
    s.write("cut_mid_text")


def queued_background_reasoning_text() -> None:
    s = Stream()
    s.add("response.created", response=response("queued", [], background=True))
    s.add("response.queued", response=response("queued", [], background=True))
    s.add("response.in_progress", response=response("in_progress", [], background=True))
    s.add(
        "response.output_item.added", output_index=0, item={"id": "rs_t", "type": "reasoning", "summary": []}
    )
    s.add(
        "response.content_part.added",
        item_id="rs_t",
        output_index=0,
        content_index=0,
        part={"type": "reasoning_text", "text": ""},
    )
    for chunk in ["Let me ", "think."]:
        s.add("response.reasoning_text.delta", item_id="rs_t", output_index=0, content_index=0, delta=chunk)
    s.add(
        "response.reasoning_text.done", item_id="rs_t", output_index=0, content_index=0, text="Let me think."
    )
    part = {"type": "reasoning_text", "text": "Let me think."}
    s.add("response.content_part.done", item_id="rs_t", output_index=0, content_index=0, part=part)
    rs = {"id": "rs_t", "type": "reasoning", "summary": [], "content": [part]}
    s.add("response.output_item.done", output_index=0, item=rs)
    msg = s.text_item(1, "msg_t", ["Done ", "thinking ✓"])
    s.add("response.completed", response=response("completed", [rs, msg], USAGE, background=True))
    s.write("background_queued_reasoning_text")


if __name__ == "__main__":
    reasoning_text_tools()
    interleaved_calls()
    refusal_annotations_incomplete()
    hosted_tools()
    custom_tool_and_unknown()
    error_nested_and_failed()
    error_flat()
    cut_mid_text()
    queued_background_reasoning_text()
