"""Write recordings/anthropic/*.sse: our own realistic Anthropic Messages streams.

Each stream is built from the event shapes of PROTOCOLS.md §3 (ids, models and texts are ours)
and exercises one feature set of the decoder and encoder. Run from the repository root:

    /work/venv/bin/python scripts/make_anthropic_recordings.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "recordings" / "anthropic"
MODEL = "claude-opus-4-8"


def ev(kind: str, **body: Any) -> tuple[str, dict[str, Any]]:
    """One event: its name and its payload (whose ``type`` is the name)."""
    return kind, {"type": kind, **body}


def start(msg_id: str, usage: dict[str, Any] | None = None, **extra: Any) -> tuple[str, dict[str, Any]]:
    """A ``message_start`` event."""
    message = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 25, "output_tokens": 1},
        **extra,
    }
    return ev("message_start", message=message)


def block(index: int, content_block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A ``content_block_start`` event."""
    return ev("content_block_start", index=index, content_block=content_block)


def delta(index: int, **d: Any) -> tuple[str, dict[str, Any]]:
    """A ``content_block_delta`` event."""
    return ev("content_block_delta", index=index, delta=d)


def stop(index: int) -> tuple[str, dict[str, Any]]:
    """A ``content_block_stop`` event."""
    return ev("content_block_stop", index=index)


def text(index: int, *pieces: str) -> list[tuple[str, dict[str, Any]]]:
    """A whole text block streamed in ``pieces``."""
    out = [block(index, {"type": "text", "text": ""})]
    out += [delta(index, type="text_delta", text=p) for p in pieces]
    return [*out, stop(index)]


def tool(index: int, call_id: str, name: str, *fragments: str, kind: str = "tool_use") -> list[Any]:
    """A whole tool-call block streamed as JSON ``fragments`` (after the usual empty one)."""
    content_block: dict[str, Any] = {"type": kind, "id": call_id, "name": name, "input": {}}
    if kind == "mcp_tool_use":
        content_block["server_name"] = "deepwiki"
    out = [block(index, content_block)]
    out += [delta(index, type="input_json_delta", partial_json=f) for f in ("", *fragments)]
    return [*out, stop(index)]


def end(reason: str, usage: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``message_delta`` with the stop reason and cumulative usage, then ``message_stop``."""
    return [
        ev("message_delta", delta={"stop_reason": reason, "stop_sequence": None}, usage=usage),
        ev("message_stop"),
    ]


PING = ev("ping")

CASES: dict[str, list[Any]] = {
    "text_citations": [
        start("msg_maas_cit01", {"input_tokens": 2048, "cache_read_input_tokens": 0, "output_tokens": 2}),
        block(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="According to the report, "),
        delta(
            0,
            type="citations_delta",
            citation={
                "type": "char_location",
                "cited_text": "Revenue grew 12% year over year.",
                "document_index": 0,
                "document_title": "Annual report",
                "start_char_index": 120,
                "end_char_index": 152,
            },
        ),
        delta(0, type="text_delta", text="revenue grew 12%."),
        stop(0),
        block(1, {"type": "text", "text": ""}),
        delta(
            1,
            type="citations_delta",
            citation={
                "type": "page_location",
                "cited_text": "Margins held at 31%.",
                "document_index": 1,
                "document_title": "Q4 deck",
                "start_page_number": 3,
                "end_page_number": 4,
            },
        ),
        delta(1, type="text_delta", text=" Margins held steady — 31% ✓."),
        stop(1),
        *end("end_turn", {"output_tokens": 41}),
    ],
    "thinking_parallel_tools": [
        start(
            "msg_maas_think01",
            {
                "input_tokens": 412,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 1024,
                "output_tokens": 3,
            },
        ),
        block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        PING,
        delta(0, type="thinking_delta", thinking="Two independent lookups; "),
        delta(0, type="thinking_delta", thinking="request both in parallel."),
        delta(0, type="signature_delta", signature="EqQBCkYIBRgCKkBmaWN0aW9uYWwgc2lnbmF0dXJl=="),
        stop(0),
        *text(1, "Checking both cities now."),
        *tool(2, "toolu_maas_P1", "get_weather", '{"city": "Pa', 'ris"}'),
        *tool(3, "toolu_maas_O2", "get_weather", '{"city": "Oslo", "unit": "c"}'),
        *end(
            "tool_use",
            {
                "input_tokens": 412,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 1024,
                "output_tokens": 171,
            },
        ),
    ],
    "redacted_thinking": [
        start("msg_maas_red01"),
        block(
            0,
            {
                "type": "redacted_thinking",
                "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
            },
        ),
        stop(0),
        block(1, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(1, type="thinking_delta", thinking="The rest is visible."),
        delta(1, type="signature_delta", signature="ErUBCkYIAxgCIkBzZWNvbmQgc2lnbmF0dXJl"),
        stop(1),
        *text(2, "Here is the answer."),
        *end("end_turn", {"output_tokens": 88}),
    ],
    "tool_no_args": [
        start("msg_maas_noargs01"),
        *text(0, "Let me refresh that."),
        PING,
        *tool(1, "toolu_maas_N1", "refresh_cache"),
        *end("tool_use", {"output_tokens": 30}),
    ],
    "server_web_search": [
        start(
            "msg_maas_web01",
            {"input_tokens": 1500, "output_tokens": 2, "server_tool_use": {"web_search_requests": 0}},
        ),
        *tool(0, "srvtoolu_maas_W1", "web_search", '{"query": "maas', ' stream"}', kind="server_tool_use"),
        block(
            1,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_maas_W1",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://example.org/maas",
                        "title": "MaaS streaming",
                        "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                        "page_age": "2 days ago",
                    }
                ],
            },
        ),
        stop(1),
        block(2, {"type": "text", "text": ""}),
        delta(
            2,
            type="citations_delta",
            citation={
                "type": "web_search_result_location",
                "cited_text": "maas-stream converts provider streams",
                "url": "https://example.org/maas",
                "title": "MaaS streaming",
                "encrypted_index": "Eo8BCioIAhgBIiQyYjM4",
            },
        ),
        delta(2, type="text_delta", text="It converts provider streams."),
        stop(2),
        *end("end_turn", {"output_tokens": 210, "server_tool_use": {"web_search_requests": 1}}),
    ],
    "server_tools_misc": [
        start("msg_maas_srv01"),
        *tool(0, "srvtoolu_maas_B1", "bash_code_execution", '{"command": "ls"}', kind="server_tool_use"),
        block(
            1,
            {
                "type": "bash_code_execution_tool_result",
                "tool_use_id": "srvtoolu_maas_B1",
                "content": {
                    "type": "bash_code_execution_result",
                    "stdout": "a.txt\n",
                    "stderr": "",
                    "return_code": 0,
                    "content": [],
                },
            },
        ),
        stop(1),
        *tool(
            2,
            "srvtoolu_maas_T1",
            "text_editor_code_execution",
            '{"command": "view", "path": "/x"}',
            kind="server_tool_use",
        ),
        block(
            3,
            {
                "type": "text_editor_code_execution_tool_result",
                "tool_use_id": "srvtoolu_maas_T1",
                "content": {
                    "type": "text_editor_code_execution_tool_result_error",
                    "error_code": "file_not_found",
                    "error_message": None,
                },
            },
        ),
        stop(3),
        *tool(
            4, "srvtoolu_maas_S1", "tool_search_tool_regex", '{"pattern": "weather"}', kind="server_tool_use"
        ),
        block(
            5,
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_maas_S1",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
                },
            },
        ),
        stop(5),
        block(6, {"type": "container_upload", "file_id": "file_maas_01"}),
        stop(6),
        *text(7, "Done."),
        *end("end_turn", {"output_tokens": 99}),
    ],
    "mcp_tool": [
        start("msg_maas_mcp01"),
        *tool(
            0,
            "mcptoolu_maas_M1",
            "ask_question",
            '{"repo": "maas/stream", ',
            '"question": "what?"}',
            kind="mcp_tool_use",
        ),
        block(
            1,
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_maas_M1",
                "is_error": False,
                "content": [{"type": "text", "text": "It is a streaming library."}],
            },
        ),
        stop(1),
        *text(2, "It is a streaming library."),
        *end("end_turn", {"output_tokens": 64}),
    ],
    "max_tokens_cut_tool": [
        start("msg_maas_max01"),
        *text(0, "Writing the file."),
        block(1, {"type": "tool_use", "id": "toolu_maas_X1", "name": "make_file", "input": {}}),
        delta(1, type="input_json_delta", partial_json=""),
        delta(1, type="input_json_delta", partial_json='{"filename": "notes.txt", "lines": ["one", "tw'),
        *end("max_tokens", {"output_tokens": 128}),
    ],
    "error_midstream": [
        start("msg_maas_err01"),
        block(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Partial answer before the "),
        ev("error", error={"type": "overloaded_error", "message": "Overloaded"}),
    ],
    "cut_without_message_stop": [
        start("msg_maas_cut01"),
        *text(0, "Calling the tool."),
        block(1, {"type": "tool_use", "id": "toolu_maas_C1", "name": "lookup", "input": {}}),
        delta(1, type="input_json_delta", partial_json='{"key": "ab'),
    ],
    "unknown_types": [
        start("msg_maas_unk01", container={"id": "cntr_maas_01", "expires_at": "2026-01-01T00:00:00Z"}),
        ev("message_metadata", trace={"id": "tr_01"}),
        block(0, {"type": "compaction", "content": None}),
        delta(
            0, type="compaction_delta", content="Summary of the earlier turns.", encrypted_content="Ecmp01=="
        ),
        stop(0),
        block(1, {"type": "hologram", "frames": 3, "payload": {"a": [1, 2]}}),
        delta(1, type="hologram_delta", frame={"n": 1}),
        stop(1),
        block(2, {"type": "text", "text": ""}),
        delta(2, type="text_delta", text="Hello"),
        delta(2, type="sparkle_delta", level=2),
        delta(2, type="text_delta", text=" there."),
        stop(2),
        block(
            3,
            {
                "type": "fallback",
                "from": {"model": MODEL},
                "to": {"model": "claude-sonnet-5"},
                "trigger": {"type": "refusal"},
            },
        ),
        stop(3),
        *end("end_turn", {"output_tokens": 12}),
    ],
    # A block type we do not know that carries a signature: the next turn needs it back, so
    # converting to another protocol must fail closed (it passes through to Anthropic).
    "unknown_stateful_block": [
        start("msg_maas_ust01"),
        block(0, {"type": "dream_thinking", "dream": "", "signature": ""}),
        delta(0, type="dream_delta", dream="Weighing the two cities."),
        delta(0, type="signature_delta", signature="EqQBCkYIBRgCKkDreamSig=="),
        stop(0),
        *text(1, "Checking the weather."),
        *tool(2, "toolu_maas_U1", "get_weather", '{"city": ', '"Oslo"}'),
        *end("tool_use", {"output_tokens": 31}),
    ],
    "usage_cumulative_stop_sequence": [
        start(
            "msg_maas_use01",
            {
                "input_tokens": 900,
                "cache_creation_input_tokens": 300,
                "cache_read_input_tokens": 0,
                "output_tokens": 1,
            },
        ),
        *text(0, "One, two, three"),
        ev("message_delta", delta={"stop_reason": None, "stop_sequence": None}, usage={"output_tokens": 5}),
        ev(
            "message_delta",
            delta={"stop_reason": "stop_sequence", "stop_sequence": "four"},
            usage={
                "input_tokens": 900,
                "cache_read_input_tokens": 0,
                "output_tokens": 7,
                "output_tokens_details": {"thinking_tokens": 0},
            },
        ),
        ev("message_stop"),
    ],
    "refusal_stop": [
        start("msg_maas_ref01"),
        *text(0, "I can't help with"),
        ev(
            "message_delta",
            delta={
                "stop_reason": "refusal",
                "stop_sequence": None,
                "stop_details": {"type": "refusal", "category": "cyber"},
            },
            usage={"output_tokens": 6},
        ),
        ev("message_stop"),
    ],
    "context_window_exceeded": [
        start("msg_maas_ctx01"),
        *text(0, "The summary is"),
        *end("model_context_window_exceeded", {"output_tokens": 4}),
    ],
}


def render(events: list[Any]) -> bytes:
    """The SSE bytes of a list of events."""
    out = []
    for kind, body in events:
        out.append(f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


def main() -> None:
    """Write every case."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name, events in CASES.items():
        (OUT / f"{name}.sse").write_bytes(render(events))


if __name__ == "__main__":
    main()
