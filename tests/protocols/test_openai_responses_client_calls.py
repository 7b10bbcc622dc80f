"""OpenAI Responses built-in tools the client executes (shell, local shell, apply_patch, computer,
client tool search) are client calls everywhere; programmatic tool calling items are provider
calls; the terminal output is matched to the streamed items by id.

Oracles: the official SDKs (``tests/oracles.py``) read every conversion.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream import ReasoningPart, ToolCallPart, ToolResultPart
from maas_stream.events import ArgumentsDelta, StreamWarning
from maas_stream.protocols.openai_responses import StreamDecoder
from tests.conftest import corpus
from tests.oracles import ORACLES

PROTO = "openai-responses"
TARGETS = ("openai-chat", "anthropic", "gemini")


def sse(events: list[dict[str, Any]]) -> bytes:
    """A Responses stream of ``events`` (numbered from 0 in order, unless they carry a number)."""
    out = b""
    for n, ev in enumerate(events):
        body = {"sequence_number": n, **ev}
        out += b"event: " + ev["type"].encode() + b"\ndata: " + json.dumps(body).encode() + b"\n\n"
    return out


def response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    usage = None
    if status != "in_progress":
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "gpt-5.1",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def stream(added: dict[str, Any], middle: list[dict[str, Any]], done: dict[str, Any]) -> bytes:
    return sse(
        [
            {"type": "response.created", "response": response("in_progress", [])},
            {"type": "response.in_progress", "response": response("in_progress", [])},
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            *middle,
            {"type": "response.output_item.done", "output_index": 0, "item": done},
            {"type": "response.completed", "response": response("completed", [done])},
        ]
    )


# ---------------------------------------------------------------------- the cases

DIFF = '+## List\n+- "milk" \\ eggs\n+- ünïcode\t✓\n'
PATCH_DONE: dict[str, Any] = {
    "id": "apc_1",
    "type": "apply_patch_call",
    "status": "completed",
    "call_id": "call_patch",
    "operation": {"type": "create_file", "diff": DIFF, "path": "list.md"},
}
PATCH = stream(
    {
        **PATCH_DONE,
        "status": "in_progress",
        "operation": {"type": "create_file", "diff": "", "path": "list.md"},
    },
    [
        {
            "type": "response.apply_patch_call_operation_diff.delta",
            "item_id": "apc_1",
            "output_index": 0,
            "delta": DIFF[i : i + 5],
        }
        for i in range(0, len(DIFF), 5)
    ]
    + [
        {
            "type": "response.apply_patch_call_operation_diff.done",
            "item_id": "apc_1",
            "output_index": 0,
            "diff": DIFF,
        }
    ],
    PATCH_DONE,
)

COMMANDS = ['ls -a "~/My Desktop"', "echo \\n done"]
SHELL_DONE: dict[str, Any] = {
    "id": "sh_1",
    "type": "shell_call",
    "status": "completed",
    "action": {"commands": COMMANDS, "max_output_length": 8912, "timeout_ms": None},
    "call_id": "call_shell",
}


def _shell_events() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, command in enumerate(COMMANDS):
        common = {"output_index": 0, "command_index": n}
        out.append({"type": "response.shell_call_command.added", **common, "command": ""})
        out += [
            {"type": "response.shell_call_command.delta", **common, "delta": command[i : i + 4]}
            for i in range(0, len(command), 4)
        ]
        out.append({"type": "response.shell_call_command.done", **common, "command": command})
    return out


SHELL = stream(
    {
        **SHELL_DONE,
        "status": "in_progress",
        "action": {"commands": [], "max_output_length": None, "timeout_ms": None},
    },
    _shell_events(),
    SHELL_DONE,
)

LOCAL_DONE: dict[str, Any] = {
    "id": "lsh_1",
    "type": "local_shell_call",
    "status": "completed",
    "call_id": "call_local",
    "action": {"type": "exec", "command": ["ls", "-la"], "env": {"HOME": "/root"}, "timeout_ms": 1000},
}
LOCAL = stream({**LOCAL_DONE, "status": "in_progress"}, [], LOCAL_DONE)

COMPUTER_DONE: dict[str, Any] = {
    "id": "cu_1",
    "type": "computer_call",
    "status": "completed",
    "call_id": "call_computer",
    "pending_safety_checks": [],
    "action": {"type": "click", "button": "left", "x": 10, "y": 20},
}
COMPUTER = stream({**COMPUTER_DONE, "status": "in_progress"}, [], COMPUTER_DONE)

SEARCH_DONE: dict[str, Any] = {
    "id": "tsc_1",
    "type": "tool_search_call",
    "status": "completed",
    "arguments": {"query": "weather tools"},
    "call_id": "call_search",
    "execution": "client",
}
SEARCH = stream({**SEARCH_DONE, "status": "in_progress"}, [], SEARCH_DONE)

CASES: dict[str, tuple[bytes, dict[str, Any], str, Any]] = {
    "apply_patch_call": (
        PATCH,
        PATCH_DONE,
        "apply_patch",
        {"type": "create_file", "path": "list.md", "diff": DIFF},
    ),
    "shell_call": (SHELL, SHELL_DONE, "shell", SHELL_DONE["action"]),
    "local_shell_call": (LOCAL, LOCAL_DONE, "local_shell", LOCAL_DONE["action"]),
    "computer_call": (COMPUTER, COMPUTER_DONE, "computer", COMPUTER_DONE["action"]),
    "tool_search_call": (SEARCH, SEARCH_DONE, "tool_search", SEARCH_DONE["arguments"]),
}
"""Item type → (stream, final item, canonical tool name, canonical arguments)."""

OUTPUTS: dict[str, dict[str, Any]] = {
    "apply_patch_call": {
        "type": "apply_patch_call_output",
        "call_id": "call_patch",
        "status": "completed",
        "output": "Created list.md",
    },
    "shell_call": {
        "type": "shell_call_output",
        "call_id": "call_shell",
        "output": [
            {"stdout": "a\nb\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
            {"stdout": "", "stderr": "oops", "outcome": {"type": "timeout"}},
        ],
    },
    "local_shell_call": {"type": "local_shell_call_output", "id": "call_local", "output": '{"stdout":"x"}'},
    "computer_call": {
        "type": "computer_call_output",
        "call_id": "call_computer",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    },
    "tool_search_call": {
        "type": "tool_search_output",
        "call_id": "call_search",
        "execution": "client",
        "status": "completed",
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    },
}
"""The client's answer to each call, as the next request's input item."""

TYPES = list(CASES)


def the_call(resp: ms.Response) -> ToolCallPart:
    (msg,) = resp.messages
    assert isinstance(msg.content, list)
    (call,) = msg.content
    assert isinstance(call, ToolCallPart)
    return call


# ---------------------------------------------------------------------- aggregate


@pytest.mark.parametrize("kind", TYPES)
def test_client_call_aggregates_as_a_function_call_finishing_tool_calls(kind: str) -> None:
    data, done, name, arguments = CASES[kind]
    resp = ms.aggregate(data, protocol=PROTO)
    assert resp.warnings is None  # the streamed JSON pieces are a prefix of the final arguments
    call = the_call(resp)
    assert (call.kind, call.name, call.id, call.item_id) == ("function", name, done["call_id"], done["id"])
    assert json.loads(call.arguments) == arguments
    assert resp.finish_reason == "tool_calls"
    assert resp.messages[0].type == kind
    assert resp.messages[0].provider_raw == done  # kept whole for a same-protocol re-encode


@pytest.mark.parametrize("kind", ["apply_patch_call", "shell_call"])
def test_streamed_input_arrives_as_growing_json(kind: str) -> None:
    data, _, _, arguments = CASES[kind]
    decoder = StreamDecoder()
    events = decoder.feed(data) + decoder.finish()
    deltas = [e.delta for e in events if isinstance(e, ArgumentsDelta)]
    assert len(deltas) > 3  # streamed piece by piece, not once at the end
    assert json.loads("".join(deltas)) == arguments


def test_server_tool_search_and_hosted_shell_stay_server_calls() -> None:
    server_search = {**SEARCH_DONE, "execution": "server", "call_id": None}
    hosted_shell = {**SHELL_DONE, "environment": {"type": "container_reference", "container_id": "cntr_1"}}
    for item in (server_search, hosted_shell):
        resp = ms.aggregate(stream({**item, "status": "in_progress"}, [], item), protocol=PROTO)
        assert the_call(resp).kind == "server"
        assert resp.finish_reason == "stop"


def test_corpus_streams_are_client_calls() -> None:
    found = {p.name: p for p in corpus(PROTO)}
    for name, tool in (
        ("shell_call_command_delta.sse", "shell"),
        ("apply_patch_diff_delta.sse", "apply_patch"),
    ):
        if name not in found:
            pytest.skip("corpus not available")
        resp = ms.aggregate(found[name].read_bytes(), protocol=PROTO)
        assert resp.warnings is None
        calls = [p for m in resp.messages for p in m.content if isinstance(p, ToolCallPart)]
        assert [(c.kind, c.name) for c in calls] == [("function", tool)]
        assert isinstance(json.loads(calls[0].arguments), dict)
        assert resp.finish_reason == "tool_calls"


# ---------------------------------------------------------------------- conversions


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", TYPES)
def test_conversion_presents_a_function_call_the_sdk_accepts(kind: str, target: str) -> None:
    data, done, name, arguments = CASES[kind]
    conv = ms.StreamConverter(target, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    seen = ORACLES[target](out)
    assert seen.error is None
    assert [(n, a) for _, n, a in seen.calls] == [(name, arguments)]
    if target != "gemini":  # Gemini calls carry no id on the wire here
        assert seen.calls[0][0] == done["call_id"]
    assert seen.finish in ({"openai-chat": "tool_calls", "anthropic": "tool_use"}.get(target, "STOP"),)
    assert ms.aggregate(out, protocol=target).finish_reason == "tool_calls"


@pytest.mark.parametrize("kind", TYPES)
def test_same_protocol_round_trip_is_unchanged(kind: str) -> None:
    data, done, _, _ = CASES[kind]
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    assert ORACLES[PROTO](out).error is None
    source, again = ms.aggregate(data, protocol=PROTO), ms.aggregate(out, protocol=PROTO)
    # The items and the finish (the envelope of this minimal source is filled in by the encoder).
    assert msgspec.to_builtins(again.messages) == msgspec.to_builtins(source.messages)
    assert (again.status, again.finish_reason, again.warnings) == ("completed", "tool_calls", None)
    events = [json.loads(line[5:]) for line in out.decode().splitlines() if line.startswith("data:")]
    (end,) = [e for e in events if e["type"] == "response.completed"]
    assert end["response"]["output"] == [done]  # the item as it came, every field
    source_types = [
        json.loads(line[5:])["type"] for line in data.decode().splitlines() if line.startswith("data:")
    ]
    out_types = [e["type"] for e in events]
    # The input events of the item type are written again (one delta carries the whole piece).
    assert {t for t in source_types if "_call_" in t} == {t for t in out_types if "_call_" in t}


# ---------------------------------------------------------------------- history


@pytest.mark.parametrize("kind", TYPES)
def test_history_round_trip_with_the_output(kind: str) -> None:
    _, done, name, _ = CASES[kind]
    items = [{"role": "user", "content": "go"}, done, OUTPUTS[kind]]
    assert ms.validate({"input": items}, PROTO) == []
    msgs = ms.to_canonical({"input": items}, PROTO)
    call_msg, result_msg = msgs[1], msgs[2]
    assert isinstance(call_msg.content, list)
    assert isinstance(result_msg.content, list)
    (call,) = call_msg.content
    assert isinstance(call, ToolCallPart)
    assert (call.kind, call.name) == ("function", name)
    (result,) = result_msg.content
    assert isinstance(result, ToolResultPart)
    assert result.tool_call_id == call.id == result_msg.tool_call_id
    lossy: list[ms.Dropped] = []
    back = ms.from_canonical(msgs, PROTO, lossy=lossy)
    assert back["input"] == items
    assert lossy == []


def other_result(target: str, call_id: str, text: str) -> list[ms.Message]:
    """The client's answer to a call as another protocol's history says it."""
    if target == "openai-chat":
        body: Any = {"messages": [{"role": "tool", "tool_call_id": call_id, "content": text}]}
    elif target == "anthropic":
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        body = {"messages": [{"role": "user", "content": [block]}]}
    else:
        response = {"name": "x", "id": call_id, "response": {"output": text}}
        body = {"contents": [{"role": "user", "parts": [{"functionResponse": response}]}]}
    return ms.to_canonical(body, target)


RESULT_TEXT = {
    "apply_patch_call": "Created list.md",
    "shell_call": "a\nb\n",
    "local_shell_call": '{"stdout":"x"}',
    "computer_call": None,  # a screenshot: an image, below
    "tool_search_call": '[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]',
}


@pytest.mark.parametrize("source", ["openai-chat", "anthropic"])
@pytest.mark.parametrize("kind", TYPES)
def test_another_protocols_result_becomes_the_calls_own_output_item(kind: str, source: str) -> None:
    _, done, _, _ = CASES[kind]
    history = ms.to_canonical({"input": [{"role": "user", "content": "go"}, done]}, PROTO)
    text = RESULT_TEXT[kind]
    if text is None:
        shot = ms.ImagePart(url="data:image/png;base64,iVBORw0KGgo=")
        result: list[ms.Message] = [
            ms.Message(role="tool", content=[ToolResultPart(tool_call_id=done["call_id"], content=[shot])])
        ]
    else:
        result = other_result(source, done["call_id"], text)
    lossy: list[ms.Dropped] = []
    body = ms.from_canonical(history + result, PROTO, lossy=lossy)
    assert lossy == []
    items = body["input"]
    assert items[1] == done
    expected_type = OUTPUTS[kind]["type"]
    assert items[-1]["type"] == expected_type
    assert ms.validate(body, PROTO) == []
    if kind == "shell_call":
        assert items[-1]["output"][0]["stdout"] == text
    if kind == "tool_search_call":
        assert items[-1]["tools"] == OUTPUTS[kind]["tools"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", TYPES)
def test_history_through_another_protocol_is_function_calls(kind: str, target: str) -> None:
    _, done, name, arguments = CASES[kind]
    items = [{"role": "user", "content": "go"}, done, OUTPUTS[kind]]
    lossy: list[ms.Dropped] = []
    other = ms.convert_history({"input": items}, to=target, protocol=PROTO, lossy=lossy)
    calls = [m for m in ms.to_canonical(other, target) for p in m.content if isinstance(p, ToolCallPart)]
    (msg,) = calls
    assert isinstance(msg.content, list)
    (call,) = [p for p in msg.content if isinstance(p, ToolCallPart)]
    assert (call.name, json.loads(call.arguments)) == (name, arguments)
    results = [
        p
        for m in ms.to_canonical(other, target)
        if isinstance(m.content, list)
        for p in m.content
        if isinstance(p, ToolResultPart)
    ]
    assert len(results) == 1
    back = ms.convert_history(other, to=PROTO, protocol=target)
    assert ms.validate(back, PROTO) == []  # a function_call answered by a function_call_output


# ---------------------------------------------------------------------- programmatic tool calling

PROGRAM: dict[str, Any] = {
    "id": "prg_1",
    "type": "program",
    "call_id": "call_prog",
    "code": "const r = await tools.get_weather({city: 'Paris'}); return r;",
    "fingerprint": "fp_opaque_bytes==",
}
PROGRAM_OUTPUT: dict[str, Any] = {
    "id": "pro_1",
    "type": "program_output",
    "call_id": "call_prog",
    "result": "18C",
    "status": "completed",
}
MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "It is 18C.", "annotations": []}],
}


def program_stream() -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response("in_progress", [])},
    ]
    output = [PROGRAM, PROGRAM_OUTPUT, MESSAGE]
    for i, item in enumerate(output):
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append({"type": "response.completed", "response": response("completed", output)})
    return sse(events)


def test_program_items_are_provider_calls_with_their_output() -> None:
    data = program_stream()
    resp = ms.aggregate(data, protocol=PROTO)
    assert [m.type for m in resp.messages] == ["program", "program_output", "message"]
    program = resp.messages[0].content
    assert isinstance(program, list)
    (call,) = program
    assert isinstance(call, ToolCallPart)
    assert (call.kind, call.name, call.id, call.arguments) == (
        "server",
        "program",
        "call_prog",
        PROGRAM["code"],
    )
    output = resp.messages[1].content
    assert isinstance(output, list)
    assert output == [ToolResultPart(tool_call_id="call_prog", content="18C")]
    assert resp.finish_reason == "stop"  # the provider ran it
    assert resp.unknown == {}


@pytest.mark.parametrize("target", TARGETS)
def test_program_converts_without_failing_closed(target: str) -> None:
    data = program_stream()
    conv = ms.StreamConverter(target, protocol=PROTO)
    out = conv.feed(data) + conv.finish()  # no ConversionError: nothing unknown
    seen = ORACLES[target](out)
    assert seen.error is None
    assert seen.text == "It is 18C."
    assert seen.calls == []
    assert any(d.kind == "server_call" for d in conv.lossy)  # the provider's call: recorded


def test_program_round_trips_with_its_fingerprint() -> None:
    data = program_stream()
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    events = [json.loads(line[5:]) for line in out.decode().splitlines() if line.startswith("data:")]
    (end,) = [e for e in events if e["type"] == "response.completed"]
    assert end["response"]["output"] == [PROGRAM, PROGRAM_OUTPUT, MESSAGE]
    items = [PROGRAM, PROGRAM_OUTPUT]
    assert ms.validate({"input": items}, PROTO) == []
    assert ms.from_canonical(ms.to_canonical({"input": items}, PROTO), PROTO)["input"] == items


# ---------------------------------------------------------------------- terminal output by id

REASONING: dict[str, Any] = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Think."}],
    "encrypted_content": "ENC_AT_DONE",
}


def gapped_stream(*, shifted: bool) -> bytes:
    """Reasoning, then a message; the stream loses events (a sequence gap) and the terminal
    response restates both items, the reasoning re-encrypted. With ``shifted``, the stream's
    output indexes are not the positions in the final list (a compatible server's numbering)."""
    base = 1 if shifted else 0
    text = MESSAGE["content"][0]["text"]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response("in_progress", [])},
        {"type": "response.output_item.added", "output_index": base, "item": {**REASONING, "summary": []}},
        {"type": "response.output_item.done", "output_index": base, "item": REASONING},
        {
            "type": "response.output_item.added",
            "output_index": base + 1,
            "item": {**MESSAGE, "content": [], "status": "in_progress"},
        },
        {
            "type": "response.content_part.added",
            "output_index": base + 1,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        {
            "type": "response.output_text.delta",
            "output_index": base + 1,
            "content_index": 0,
            "delta": text[:5],
        },
        # lost in the gap: the rest of the text, content_part.done, output_item.done
        {
            "type": "response.output_text.delta",
            "output_index": base + 1,
            "content_index": 0,
            "delta": text[5:],
        },
        {
            "type": "response.content_part.done",
            "output_index": base + 1,
            "content_index": 0,
            "part": MESSAGE["content"][0],
        },
        {"type": "response.output_item.done", "output_index": base + 1, "item": MESSAGE},
        {
            "type": "response.completed",
            "response": response("completed", [{**REASONING, "encrypted_content": "ENC_FINAL"}, MESSAGE]),
        },
    ]
    numbered = [{**ev, "sequence_number": n} for n, ev in enumerate(events)]
    del numbered[6:9]  # the gap
    return sse(numbered)


@pytest.mark.parametrize("shifted", [False, True], ids=["gap", "gap-shifted-indexes"])
def test_terminal_output_is_matched_by_item_id(shifted: bool) -> None:
    data = gapped_stream(shifted=shifted)
    decoder = StreamDecoder()
    warnings = [e.text for e in decoder.feed(data) + decoder.finish() if isinstance(e, StreamWarning)]
    assert warnings == ["sequence_number jumped from 5 to 9: events 6..8 are missing"]
    resp = ms.aggregate(data, protocol=PROTO)
    assert [m.id for m in resp.messages] == ["rs_1", "msg_1"]  # each item once
    reasoning, message = resp.messages
    assert isinstance(reasoning.content, list)
    assert isinstance(message.content, list)
    (part,) = reasoning.content
    assert isinstance(part, ReasoningPart)
    assert part.encrypted_content == "ENC_FINAL"  # the terminal response's value is final
    assert [p.text for p in message.content] == ["It is 18C."]  # type: ignore[union-attr]
    assert message.status == "completed"
    assert resp.status == "completed"
