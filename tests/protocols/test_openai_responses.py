"""OpenAI Responses: decoder against the streams' own final snapshots and the openai SDK, encoder
accepted by the SDK, lossless same-protocol re-encode, history codec and validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import openai
import pytest

import maas_stream as ms
from maas_stream import ReasoningPart, TextPart, ToolCallPart
from maas_stream.events import StreamWarning
from maas_stream.protocols.openai_responses import StreamDecoder
from maas_stream.protocols.openai_responses._items import CLIENT_CALLS
from tests.conftest import corpus, need_corpus, params, recordings

PROTO = "openai-responses"
REC = recordings(PROTO)
CHAT = recordings("openai-chat")


def events_of(data: bytes) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in data.decode("utf-8").split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data:"):
                out.append(json.loads(line[5:]))
    return out


def terminal(data: bytes) -> dict[str, Any] | None:
    for ev in reversed(events_of(data)):
        if ev.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            found: dict[str, Any] = ev
            return found
    return None


def sdk_final(body: bytes) -> Any:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = openai.OpenAI(
        api_key="test",
        base_url="http://127.0.0.1/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with client.responses.stream(model="m", input="hi") as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def texts(resp: ms.Response) -> str:
    return "".join(
        p.text
        for m in resp.messages
        if m.type in (None, "message") and not m.choice_index  # one choice reaches Responses
        for p in m.content
        if isinstance(p, TextPart)
    )


def norm(arguments: str) -> Any:
    """Arguments compared as JSON when they are JSON (built-in calls' objects have their own key
    order), else as text."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def calls(resp: ms.Response) -> list[tuple[str, str, Any]]:
    return [
        (p.id, p.name, norm(p.arguments))
        for m in resp.messages
        if not m.choice_index
        for p in m.content
        if isinstance(p, ToolCallPart) and p.kind in ("function", "custom")
    ]


BUILT_IN_ARGS = {
    "apply_patch_call": ("apply_patch", "operation"),
    "shell_call": ("shell", "action"),
    "local_shell_call": ("local_shell", "action"),
    "computer_call": ("computer", "action"),
}
"""Built-in client calls: the tool name and the field the SDK holds their arguments in."""


def sdk_calls(final: Any) -> list[tuple[str, str, Any]]:
    out = []
    for item in final.output:
        if item.type == "function_call":
            out.append((item.call_id, item.name, norm(item.arguments)))
        elif item.type == "custom_tool_call":
            out.append((item.call_id, item.name, norm(item.input)))
        elif item.type in BUILT_IN_ARGS:
            name, field = BUILT_IN_ARGS[item.type]
            out.append((item.call_id, name, getattr(item, field).model_dump(exclude_unset=True)))
    return out


def has_unknown_items(data: bytes) -> bool:
    known = {"message", "function_call", "custom_tool_call", "reasoning", "compaction"}
    return any(
        ev.get("type") == "response.output_item.added"
        and ev["item"]["type"] not in known
        and not ev["item"]["type"].endswith(("_call", "_output", "_tools", "_request"))
        for ev in events_of(data)
    )


# ---------------------------------------------------------------------- corpus vs its own snapshot


@pytest.mark.parametrize("path", need_corpus(PROTO) + params(REC))
def test_aggregate_equals_final_snapshot(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data, protocol=PROTO)
    end = terminal(data)
    if end is None:
        assert resp.status in ("incomplete", "failed")
        return
    snap = end["response"]
    assert resp.id == snap["id"]
    assert (
        resp.status
        == {"completed": "completed", "incomplete": "incomplete", "failed": "failed"}[snap["status"]]
    )
    output = snap.get("output") or []
    assert len(resp.messages) >= len(output)
    for i, item in enumerate(output):
        msg = resp.messages[i]
        assert msg.type == item["type"], i
        assert msg.id == item.get("id"), i
        if isinstance(item.get("status"), str) and item["status"] in (
            "completed",
            "incomplete",
            "in_progress",
        ):
            assert msg.status == item["status"], i
        assert isinstance(msg.content, list)
        kind = item["type"]
        if kind == "message":
            assert msg.phase == item.get("phase")
            assert len(msg.content) == len(item["content"])
            for part, raw in zip(msg.content, item["content"], strict=True):
                if raw["type"] == "output_text":
                    assert isinstance(part, TextPart)
                    assert part.text == raw["text"]
                    assert [c.raw for c in part.annotations or ()] == raw.get("annotations", [])
                    assert (part.logprobs or []) == (raw.get("logprobs") or [])
                else:
                    assert part.text == raw["refusal"]  # type: ignore[union-attr]
        elif kind in ("function_call", "custom_tool_call", "mcp_call"):
            (call,) = [p for p in msg.content if isinstance(p, ToolCallPart)]
            assert call.id == item.get("call_id", item["id"])
            assert call.item_id == item["id"]
            assert call.name == item["name"]
            assert call.arguments == item.get("arguments", item.get("input"))
            assert (
                call.kind
                == {"function_call": "function", "custom_tool_call": "custom", "mcp_call": "mcp"}[kind]
            )
        elif kind == "reasoning":
            (part,) = msg.content
            assert isinstance(part, ReasoningPart)
            assert part.id == item["id"]
            assert (part.summary or []) == [s["text"] for s in item.get("summary", [])]
            # The server re-encrypts per event; the terminal response is the authority.
            assert part.encrypted_content == item.get("encrypted_content")
            if item.get("content"):
                assert part.text == "".join(c["text"] for c in item["content"])
        else:
            # Hosted tools and other items: kept whole.
            assert msg.provider_raw is not None
            calls_in = [p for p in msg.content if isinstance(p, ToolCallPart)]
            if calls_in:
                assert calls_in[0].item_id == item["id"]
                client = kind in CLIENT_CALLS and not (
                    kind == "tool_search_call" and item.get("execution") != "client"
                )
                assert calls_in[0].kind == ("function" if client else ("mcp" if "mcp" in kind else "server"))
    usage = snap.get("usage")
    if usage:
        assert resp.usage is not None
        assert resp.usage.input_tokens == usage["input_tokens"]
        assert resp.usage.output_tokens == usage["output_tokens"]
        assert resp.usage.total_tokens == usage["total_tokens"]
        assert resp.usage.reasoning_tokens == usage["output_tokens_details"]["reasoning_tokens"]
        assert resp.usage.cache_read_tokens == usage["input_tokens_details"]["cached_tokens"]
    if snap["status"] == "failed":
        assert resp.error is not None
        assert resp.error.code == snap["error"]["code"]


def sdk_can_accumulate(path: Path) -> bool:
    """The SDK's accumulator finishes only streams that complete, with item types it knows;
    the others are checked against their own terminal snapshot above."""
    data = path.read_bytes()
    end = terminal(data)
    return end is not None and end["type"] == "response.completed" and not has_unknown_items(data)


@pytest.mark.parametrize("path", params([p for p in [*corpus(PROTO), *REC] if sdk_can_accumulate(p)]))
def test_agrees_with_openai_sdk(path: Path) -> None:
    data = path.read_bytes()
    final = sdk_final(data)
    resp = ms.aggregate(data, protocol=PROTO)
    assert texts(resp) == final.output_text
    assert calls(resp) == sdk_calls(final)
    assert [m.id for m in resp.messages] == [getattr(o, "id", None) for o in final.output]


# ---------------------------------------------------------------------- encoder


def strip(resp: ms.Response) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(resp)
    out.pop("protocol", None)
    return out


def reencrypted(data: bytes) -> set[str]:
    """Ids of the reasoning items whose encrypted_content the terminal response restates with
    other bytes than their output_item.done (the server re-encrypts per event)."""
    done = {
        ev["item"].get("id"): ev["item"]
        for ev in events_of(data)
        if ev.get("type") == "response.output_item.done"
    }
    end = terminal(data)
    output = end["response"].get("output") or [] if end is not None else []
    return {
        item["id"]
        for item in output
        if item.get("id") in done
        and done[item["id"]].get("encrypted_content") != item.get("encrypted_content")
    }


@pytest.mark.parametrize("path", need_corpus(PROTO) + params(REC))
def test_same_protocol_reencode_is_lossless(path: Path) -> None:
    data = path.read_bytes()
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    source = ms.aggregate(data, protocol=PROTO)
    again = ms.aggregate(out, protocol=PROTO)
    assert reencode_view(again, data) == reencode_view(source, data)
    # Usage is written by the one usage mapping: the source's object, with the counts the SDK
    # requires filled in (what a non-streaming body of the same response says).
    assert (again.usage.raw if again.usage else None) == ms.encode_response(source, PROTO)["usage"]
    for msg in again.messages:
        if msg.id in reencrypted(data):
            assert isinstance(msg.content, list)
            (part,) = msg.content
            assert isinstance(part, ReasoningPart)
            assert part.encrypted_content == done_encrypted(data, msg.id)


def reencode_view(resp: ms.Response, source: bytes) -> dict[str, Any]:
    """A response as a same-protocol re-encode of ``source`` must reproduce it.

    Everything, except where the one mapping or the event model decides otherwise:

    * usage as the one usage mapping writes it (the source's object, with the counts the SDK
      requires filled in: what a non-streaming body of the same response says);
    * the encrypted bytes of reasoning the source's terminal event restated with other bytes:
      the terminal event is the provider's final word, which the aggregate keeps but which
      reaches no encoder (each item is written when it ends);
    * the decoder's name (``Message.provider``) on an incomplete message: a cut item has no
      done value to carry it, and a re-encode completes it (as incomplete).
    """
    view: dict[str, Any] = strip(resp)
    view["usage"] = ms.encode_response(resp, PROTO)["usage"]
    changed = reencrypted(source)
    for msg in view.get("messages", []):
        if msg.get("id") in changed:
            for part in msg["content"]:
                part.pop("encrypted_content", None)
            (msg.get("provider_raw") or {}).pop("encrypted_content", None)  # a compaction item
        if msg.get("status") == "incomplete":
            msg.pop("provider", None)
    return view


def done_encrypted(data: bytes, item_id: str) -> str | None:
    for ev in events_of(data):
        if ev.get("type") == "response.output_item.done" and ev["item"].get("id") == item_id:
            found: str | None = ev["item"].get("encrypted_content")
            return found
    return None


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns on item types the SDK lacks
@pytest.mark.parametrize("path", need_corpus(PROTO) + params(REC) + params(CHAT))
def test_encoder_output_accepted_by_sdk(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data)
    out = ms.convert(data, to=PROTO)
    seqs = [ev["sequence_number"] for ev in events_of(out)]
    assert seqs == list(range(len(seqs)))
    types = [ev["type"] for ev in events_of(out)]
    assert types[:2] == ["response.created", "response.in_progress"]
    if source.status != "completed":
        # No terminal success to invent: the SDK must not report a completed response.
        with pytest.raises((RuntimeError, openai.APIError)):
            sdk_final(out)
        return
    final = sdk_final(out)
    assert final.output_text == texts(source)
    assert sdk_calls(final) == calls(source)
    if source.usage is not None and source.usage.output_tokens is not None:
        assert final.usage is not None
        assert final.usage.output_tokens == source.usage.output_tokens


def test_chat_message_splits_into_message_and_call_items() -> None:
    data = (
        Path(__file__).parents[2] / "recordings/openai-chat/readme_text_then_parallel_tools.sse"
    ).read_bytes()
    out = ms.convert(data, to=PROTO)
    items = [ev["item"] for ev in events_of(out) if ev["type"] == "response.output_item.done"]
    assert [i["type"] for i in items] == ["message", "function_call", "function_call"]
    assert items[0]["content"][0]["text"] == "Checking both cities now."
    assert [i["call_id"] for i in items[1:]] == ["call_P1", "call_O2"]
    resp = ms.aggregate(out, protocol=PROTO)
    assert resp.finish_reason == "tool_calls"


def test_foreign_reasoning_is_dropped_and_reported() -> None:
    data = (Path(__file__).parents[2] / "recordings/openai-chat/reasoning_details_signature.sse").read_bytes()
    conv = ms.StreamConverter(PROTO)
    out = conv.feed(data) + conv.finish()
    assert "reasoning" in [r.kind for r in conv.lossy]
    assert any("reasoning" in str(r) for r in conv.lossy)
    assert not any(ev.get("item", {}).get("type") == "reasoning" for ev in events_of(out))


# ---------------------------------------------------------------------- decoder details


def rec(name: str) -> bytes:
    return (Path(__file__).parents[2] / "recordings" / PROTO / f"{name}.sse").read_bytes()


def test_done_value_that_disagrees_wins_and_is_reported() -> None:
    data = rec("interleaved_calls").replace(
        b'"call_id":"call_A","name":"f","arguments":"{\\"x\\":1}"',
        b'"call_id":"call_A","name":"f","arguments":"{\\"x\\":9}"',
    )
    resp = ms.aggregate(data, protocol=PROTO)
    assert calls(resp)[0] == ("call_A", "f", {"x": 9})
    assert resp.warnings is not None
    assert any("call_A" in w for w in resp.warnings)


def test_terminal_response_is_the_authority_on_items() -> None:
    # Only the terminal response's restatement of the call disagrees: it is the final word.
    data = rec("interleaved_calls")
    head, tail = data.split(b"event: response.completed", 1)
    tail = tail.replace(b'"arguments":"{\\"x\\":1}"', b'"arguments":"{\\"x\\":7}"')
    resp = ms.aggregate(head + b"event: response.completed" + tail, protocol=PROTO)
    assert calls(resp)[0] == ("call_A", "f", {"x": 7})
    assert resp.warnings is not None
    assert any("call_A" in w for w in resp.warnings)


def test_text_done_disagreement_is_reported() -> None:
    data = rec("reasoning_text_parallel_calls")
    data = data.replace(b'"text":"Checking both cities now."', b'"text":"Checking both towns now."')
    resp = ms.aggregate(data, protocol=PROTO)
    assert "Checking both towns now." in texts(resp)
    assert resp.warnings is not None


def test_unknown_events_and_items_are_kept_and_counted() -> None:
    resp = ms.aggregate(rec("custom_tool_and_unknown_types"), protocol=PROTO)
    assert resp.unknown == {"response.future_feature.delta": 1, "future_item": 1}
    assert resp.unknown_events is not None
    assert resp.unknown_events[0].raw["delta"] == "?"
    content = resp.messages[1].content
    assert isinstance(content, list)
    (part,) = content
    assert isinstance(part, ms.UnknownPart)
    assert part.raw["payload"] == {"k": [1, 2]}
    calls_content = resp.messages[0].content
    assert isinstance(calls_content, list)
    (call,) = calls_content
    assert isinstance(call, ToolCallPart)
    assert (call.kind, call.arguments) == ("custom", "echo hi")


@pytest.mark.parametrize(
    ("name", "status", "finish", "error"),
    [
        pytest.param("refusal_annotation_incomplete", "incomplete", "length", None, id="incomplete"),
        pytest.param("error_nested_then_failed", "failed", "error", "server_error", id="nested-error"),
        pytest.param("error_flat_documented", "failed", "error", "rate_limit_exceeded", id="flat-error"),
        pytest.param("cut_mid_text", "incomplete", None, None, id="cut"),
        pytest.param("interleaved_calls", "completed", "tool_calls", None, id="calls"),
        pytest.param("background_queued_reasoning_text", "completed", "stop", None, id="stop"),
    ],
)
def test_status_and_finish_reason(name: str, status: str, finish: str | None, error: str | None) -> None:
    resp = ms.aggregate(rec(name), protocol=PROTO)
    assert resp.status == status
    assert resp.finish_reason == finish
    assert (resp.error.code if resp.error else None) == error


def test_failed_keeps_text_received_before_the_error() -> None:
    resp = ms.aggregate(rec("error_nested_then_failed"), protocol=PROTO)
    assert texts(resp) == "Partial answer"


def test_hosted_tools_map_to_server_and_mcp_calls() -> None:
    resp = ms.aggregate(rec("hosted_tools"), protocol=PROTO)
    by_type = {m.type: m for m in resp.messages}
    ci = by_type["code_interpreter_call"].content[0]
    assert isinstance(ci, ToolCallPart)
    assert (ci.kind, ci.arguments) == ("server", "print(1+1)")
    mcp = by_type["mcp_call"].content
    assert isinstance(mcp[0], ToolCallPart)
    assert (mcp[0].kind, mcp[0].server_name, mcp[0].arguments) == ("mcp", "docs", '{"q":"x"}')
    assert isinstance(mcp[1], ms.ToolResultPart)
    assert mcp[1].content == "found"
    image = by_type["image_generation_call"].content[1]
    assert isinstance(image, ms.ImagePart)
    assert image.data == "UklGRgAA"
    shell = by_type["shell_call"].content[0]
    assert isinstance(shell, ToolCallPart)
    assert (shell.kind, shell.name) == ("function", "shell")  # the client runs it
    assert json.loads(shell.arguments)["commands"] == ["ls", "pwd"]
    assert resp.finish_reason == "tool_calls"
    assert by_type["web_search_call"].provider_raw["action"]["query"] == "weather paris"


def test_gap_is_reported() -> None:
    data = rec("reasoning_text_parallel_calls")
    blocks = data.split(b"\n\n")
    gapped = b"\n\n".join(blocks[:6] + blocks[8:])
    decoder = StreamDecoder()
    events = decoder.feed(gapped) + decoder.finish()
    assert [e.text for e in events if isinstance(e, StreamWarning)] == [
        "sequence_number jumped from 5 to 8: events 6..7 are missing"
    ]
    assert decoder.warnings == []  # flushed as events, kept nowhere else
    resp = ms.aggregate(gapped, protocol=PROTO)
    assert resp.warnings is not None
    assert any("sequence_number jumped from 5 to 8" in w for w in resp.warnings)


def test_detection() -> None:
    assert ms.detect_protocol(rec("interleaved_calls")) == PROTO
    assert ms.detect_protocol(rec("error_flat_documented")) == PROTO


# ---------------------------------------------------------------------- history


BODY: dict[str, Any] = {
    "instructions": "Be brief.",
    "input": [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Weather?"},
                {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "s"}],
            "encrypted_content": "ENC+/=",
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "phase": "commentary",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
        {"type": "item_reference", "id": "msg_0"},
    ],
}


def test_history_round_trip() -> None:
    msgs = ms.to_canonical(BODY, PROTO)
    assert msgs[0].role == "system"
    assert msgs[0].content == "Be brief."
    reasoning = msgs[2].content[0]
    assert isinstance(reasoning, ReasoningPart)
    assert reasoning.encrypted_content == "ENC+/="
    assert msgs[3].phase == "commentary"
    tool = msgs[5]
    assert (tool.role, tool.tool_call_id) == ("tool", "call_1")
    assert isinstance(tool.content[0], ms.ToolResultPart)
    back = ms.from_canonical(msgs, PROTO)
    assert back["instructions"] == BODY["instructions"]
    assert back["input"][1:] == BODY["input"][1:]
    assert back["input"][0]["content"] == BODY["input"][0]["content"]
    assert ms.validate(back, PROTO) == []


def test_history_from_chat() -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "t",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "r"},
        ]
    }
    body = ms.convert_history(chat, to=PROTO, protocol="openai-chat")
    assert [i.get("type") for i in body["input"]] == [
        None,
        "message",
        "function_call",
        "function_call_output",
    ]
    assert body["input"][2]["call_id"] == body["input"][3]["call_id"] == "c"
    assert ms.validate(body, PROTO) == []
    back = ms.convert_history(body, to="openai-chat", protocol=PROTO)
    assert back["messages"][-1] == {"role": "tool", "tool_call_id": "c", "content": "r"}


@pytest.mark.parametrize(
    ("items", "fault"),
    [
        pytest.param(
            [{"type": "function_call_output", "call_id": "zz", "output": ""}],
            "input[0]: function_call_output call_id 'zz' answers no earlier call",
            id="orphan",
        ),
        pytest.param(
            [{"role": "robot", "content": "x"}], "input[0]: message with unknown role 'robot'", id="role"
        ),
        pytest.param(
            [
                {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            ],
            "input[1]: call_id 'a' is used twice",
            id="dup-call",
        ),
        pytest.param(
            [
                {"type": "message", "id": "m", "role": "user", "content": "x"},
                {"type": "message", "id": "m", "role": "user", "content": "y"},
            ],
            "input[1]: item id 'm' is used twice",
            id="dup-id",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}],
            "input[0].content[0]: part type 'output_text' is not allowed in a user message",
            id="part",
        ),
    ],
)
def test_validate_names_the_fault(items: list[Any], fault: str) -> None:
    assert fault in ms.validate({"input": items}, PROTO)
