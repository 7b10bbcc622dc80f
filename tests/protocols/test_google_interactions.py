"""Google Interactions: corpus aggregation, our recordings, both schemas, encoder and history."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from maas_stream.protocols import google_interactions as gi
from tests.conftest import RECORDINGS, need_corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "google-interactions"


def sse_payloads(path: Path) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE file, read with the stdlib (independent of our decoder)."""
    out = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        data = "\n".join(line[6:] for line in block.splitlines() if line.startswith("data: "))
        if data and data != "[DONE]":
            out.append(json.loads(data))
    return out


def expected_steps(payloads: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Fold the step events by hand: per step index, its type, text, signature and arguments."""
    steps: dict[int, dict[str, Any]] = {}
    for p in payloads:
        kind = p["event_type"]
        if kind == "step.start":
            step = p["step"]
            steps[p["index"]] = {
                "type": step["type"],
                "text": "",
                "signature": step.get("signature"),
                "args": None,
                "start_args": step.get("arguments"),
                "id": step.get("id"),
                "name": step.get("name"),
            }
        elif kind == "step.delta":
            acc, delta = steps[p["index"]], p["delta"]
            if delta["type"] == "text":
                acc["text"] += delta["text"]
            elif delta["type"] == "thought_signature":
                acc["signature"] = delta["signature"]
            elif delta["type"] == "arguments_delta":
                acc["args"] = (acc["args"] or "") + delta["arguments"]
            elif delta["type"].endswith("_call"):
                acc["start_args"] = delta.get("arguments")
    return steps


def strip(resp: ms.Response) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(resp)
    for key in ("unknown", "unknown_events", "warnings"):
        out.pop(key, None)
    return out


# ---------------------------------------------------------------- corpus


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_status_usage_and_steps(path: Path) -> None:
    payloads = sse_payloads(path)
    completed = next(p for p in payloads if p["event_type"] == "interaction.completed")["interaction"]
    resp = ms.aggregate(path.read_bytes())  # detected, not told
    assert resp.protocol == PROTO
    assert resp.id == (completed.get("id") or None)
    assert resp.model == completed["model"]
    assert resp.usage is not None
    wire = completed["usage"]
    assert resp.usage.raw == wire
    # One meaning of usage everywhere: input counts tool-use prompt tokens, output counts
    # thoughts, and total = input + output (the wire's total says so too).
    assert resp.usage.input_tokens == wire["total_input_tokens"] + wire.get("total_tool_use_tokens", 0)
    assert resp.usage.output_tokens == wire["total_output_tokens"] + wire["total_thought_tokens"]
    assert resp.usage.reasoning_tokens == wire["total_thought_tokens"]
    assert resp.usage.cache_read_tokens == wire["total_cached_tokens"]
    assert resp.usage.total_tokens == wire["total_tokens"]
    assert (resp.usage.input_tokens or 0) + (resp.usage.output_tokens or 0) == wire["total_tokens"]
    assert resp.provider_finish_reason == completed["status"]
    if completed["status"] == "requires_action":
        assert (resp.status, resp.finish_reason) == ("completed", "tool_calls")
    else:
        assert (resp.status, resp.finish_reason) == ("completed", "stop")
    steps = expected_steps(payloads)
    assert [m.type for m in resp.messages] == [steps[i]["type"] for i in sorted(steps)]
    for message, index in zip(resp.messages, sorted(steps), strict=True):
        exp = steps[index]
        assert isinstance(message.content, list)
        part = message.content[0]
        if exp["type"] == "thought":
            assert isinstance(part, ReasoningPart)
            assert part.signature == exp["signature"]  # byte-exact
        elif exp["type"] == "model_output":
            texts = [p.text for p in message.content if isinstance(p, TextPart)]
            assert "".join(texts) == exp["text"]
        elif exp["type"] == "function_call":
            assert isinstance(part, ToolCallPart)
            assert (part.id, part.name, part.kind) == (exp["id"], exp["name"], "function")
            assert part.arguments == (
                exp["args"] if exp["args"] is not None else json.dumps(exp["start_args"])
            )
            assert part.signature == exp["signature"]
        elif exp["type"].endswith("_call"):
            assert isinstance(part, ToolCallPart)
            assert part.kind == "server"
            assert part.id == exp["id"]
            assert json.loads(part.arguments) == exp["start_args"]
        else:
            assert isinstance(part, UnknownPart)
            assert part.provider_type == exp["type"]


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_item_shapes_match_final_json(path: Path) -> None:
    final = json.loads(path.with_suffix("").with_suffix(".final.json").read_text())
    resp = ms.aggregate(path.read_bytes(), protocol=PROTO)
    assert [m.type for m in resp.messages] == [s["type"] for s in final["steps"]]
    assert resp.usage is not None
    assert isinstance(resp.usage.raw, dict)
    assert set(resp.usage.raw) <= set(final["usage"]) | {"tool_use_tokens_by_modality"}
    for message, step in zip(resp.messages, final["steps"], strict=True):
        assert isinstance(message.content, list)
        part = message.content[0]
        if step["type"] == "thought":
            assert isinstance(part, ReasoningPart)
            assert isinstance(part.signature, str)
        elif step["type"] == "function_call":
            assert isinstance(part, ToolCallPart)
            assert set(json.loads(part.arguments)) == set(step["arguments"])
        elif step["type"] == "model_output":
            annotated = any(c.get("annotations") for c in step["content"])
            ours = [p for p in message.content if isinstance(p, TextPart)]
            assert ours
            assert all(isinstance(p.text, str) for p in ours)
            assert annotated == any(p.annotations for p in ours)


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_same_protocol_reencode_is_lossless(path: Path) -> None:
    data = path.read_bytes()
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    assert strip(ms.aggregate(out, protocol=PROTO)) == strip(ms.aggregate(data, protocol=PROTO))


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_history_replays_thought_and_signatures(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol=PROTO)
    body = gi.from_canonical(resp.messages, source=resp.protocol)
    payloads = sse_payloads(path)
    steps = expected_steps(payloads)
    assert [s["type"] for s in body["input"]] == [steps[i]["type"] for i in sorted(steps)]
    for step, index in zip(body["input"], sorted(steps), strict=True):
        if step["type"] in ("thought", "function_call"):
            assert step.get("signature") == steps[index]["signature"]
    # and back: the canonical messages survive byte for byte
    assert gi.to_canonical(body) == [_plain(m) for m in resp.messages]


def _plain(m: Message) -> Message:
    """The message as a history codec sees it (no stream status, parts without stream status)."""
    content = m.content
    assert isinstance(content, list)
    parts = [msgspec.structs.replace(p, status=None) if isinstance(p, ToolCallPart) else p for p in content]
    return Message(role=m.role, type=m.type, content=parts, provider=PROTO)


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_history_of_unknown_origin_keeps_no_signature(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol=PROTO)
    drops = ms.DropLog(PROTO)
    # Aggregated messages name their protocol; stripped of it, their origin is unknown.
    assert {m.provider for m in resp.messages} == {PROTO}
    anonymous = [msgspec.structs.replace(m, provider=None) for m in resp.messages]
    body = gi.from_canonical(anonymous, drops=drops)  # origin unknown: never replayed
    assert not any("signature" in step for step in body["input"])
    kept = [m.type for m in resp.messages if isinstance(m.content[0], UnknownPart)]
    assert [r.kind for r in drops.records] == ["signature"] + (["unknown"] if kept else [])
    signatures = drops.records[0]
    assert signatures.count == sum(
        1 for m in resp.messages for p in m.content if getattr(p, "signature", None) is not None
    )
    assert "messages[0]" in signatures.where
    # a whole step of unknown origin is not replayed either
    assert [s["type"] for s in body["input"]] == [m.type for m in resp.messages if m.type not in kept]


# ---------------------------------------------------------------- recordings


@pytest.mark.parametrize("path", params(recordings(PROTO)))
def test_recordings_detected_and_reencoded(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data)
    assert resp.protocol == PROTO
    out = ms.convert(data, to=PROTO)
    assert strip(ms.aggregate(out, protocol=PROTO)) == strip(resp)


def _rec(name: str) -> ms.Response:
    return ms.aggregate((RECORDINGS / PROTO / name).read_bytes(), protocol=PROTO)


def test_parallel_calls_both_argument_forms() -> None:
    resp = _rec("parallel_calls_thought_summary.sse")
    thought, text, call1, call2 = (m.content[0] for m in resp.messages)
    assert thought == ReasoningPart(
        summary=["Two lookups; run them together."], signature="EpQBCkQopaque+/=="
    )
    assert text == TextPart(text="Checking both cities now. é✓")
    assert isinstance(call1, ToolCallPart)
    assert isinstance(call2, ToolCallPart)
    assert (call1.id, call1.arguments) == ("call_p1", '{"city":"Paris"}')  # streamed fragments
    assert (call2.id, call2.arguments) == ("call_o2", '{"city":"Oslo"}')  # complete at start
    assert (resp.finish_reason, resp.provider_finish_reason) == ("tool_calls", "requires_action")


def test_legacy_schema_is_detected_and_mapped_to_steps() -> None:
    data = (RECORDINGS / PROTO / "legacy_schema.sse").read_bytes()
    resp = ms.aggregate(data)
    assert resp.protocol == PROTO
    assert [m.type for m in resp.messages] == ["thought", "model_output", "function_call"]
    call = resp.messages[2].content[0]
    assert call == ToolCallPart(
        id="fc_9", name="save_poem", arguments='{"title":"Wind"}', signature="FcSig==", status="completed"
    )
    assert resp.messages[0].content[0] == ReasoningPart(
        summary=["User wants a haiku."], signature="Cq0BLegacySig=="
    )
    assert resp.messages[1].content == [TextPart(text="Autumn wind rises — leaves answer.")]


def test_builtin_steps_annotations_and_media() -> None:
    resp = _rec("builtin_tools_annotations_image.sse")
    types = [m.type for m in resp.messages]
    assert types == [
        "code_execution_call",
        "code_execution_result",
        "url_context_call",
        "url_context_result",
        "model_output",
        "brand_new_step",
    ]
    call = resp.messages[0].content[0]
    assert isinstance(call, ToolCallPart)
    assert call.kind == "server"
    assert call.name == "code_execution"
    assert json.loads(call.arguments) == {"code": "print(2**10)", "language": "python"}
    result = resp.messages[1].content[0]
    assert isinstance(result, UnknownPart)
    assert result.raw["result"] == "1024\n"
    assert result.raw["call_id"] == "ce_1"
    output = resp.messages[4].content
    assert isinstance(output, list)
    kinds = [type(p).__name__ for p in output]
    assert kinds == ["TextPart", "ImagePart", "TextPart"]
    first = output[0]
    assert isinstance(first, TextPart)
    assert first.annotations is not None
    assert [(c.kind, c.url or c.title, c.start, c.end) for c in first.annotations] == [
        ("url_citation", "https://example.com/a", 0, 12),
        ("file_citation", "files/abc", 13, 30),
    ]
    assert resp.unknown == {"code_execution_result": 1, "url_context_result": 1, "brand_new_step": 1}


def test_error_and_cut_streams() -> None:
    err = _rec("error_midstream.sse")
    assert err.status == "failed"
    assert err.error is not None
    assert err.error.message == "quota exceeded"
    assert err.messages[0].content == [TextPart(text="Partial answer")]
    cut = _rec("cut_mid_arguments.sse")
    assert cut.status == "incomplete"
    call = cut.messages[0].content[0]
    assert isinstance(call, ToolCallPart)
    assert call.status == "incomplete"
    assert call.arguments == '{"term": "hal'
    failed = _rec("failed_status.sse")
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.code == "INTERNAL"
    assert failed.messages[0].content == [ReasoningPart(signature="StartSig==")]


def test_random_frame_gives_clear_protocol_error() -> None:
    bad = b'event: step.delta\ndata: {"event_type":"step.delta","delta":{"type":"text","text":"x"}}\n\n'
    with pytest.raises(ms.RemoteProtocolError, match="without an index") as info:
        ms.aggregate(bad, protocol=PROTO)
    assert info.value.frame == 1
    with pytest.raises(ms.RemoteProtocolError, match="invalid google-interactions frame"):
        ms.aggregate(b'event: step.start\ndata: {"index": "zero"}\n\n', protocol=PROTO)


# ---------------------------------------------------------------- encoder from other sources


def test_encoder_keeps_foreign_signatures_out_and_reports() -> None:
    from maas_stream.events import (
        Event,
        PartDone,
        PartStart,
        ReasoningDelta,
        ResponseDone,
        ResponseStart,
        SignatureDelta,
    )

    enc = gi.StreamEncoder()
    events: list[Event] = [
        ResponseStart(protocol="anthropic", id="msg_1"),
        PartStart(message=0, part=0, value=ReasoningPart()),
        ReasoningDelta(message=0, part=0, text="thinking"),
        SignatureDelta(message=0, part=0, signature="anthropic-sig"),
        PartDone(message=0, part=0, value=ReasoningPart(text="thinking", signature="anthropic-sig")),
        ResponseDone(finish_reason="stop"),
    ]
    out = b"".join(enc.encode(e) for e in events)
    assert b"anthropic-sig" not in out
    assert [(r.kind, r.source, r.target, r.count) for r in enc.lossy] == [
        ("signature", "anthropic", PROTO, 1)
    ]
    assert "another or unknown origin" in str(enc.lossy[0])
    resp = ms.aggregate(out, protocol=PROTO)
    assert resp.messages[0].content == [ReasoningPart(summary=["thinking"])]


# ---------------------------------------------------------------- history


STATELESS = {
    "model": "gemini-3.5-flash",
    "store": False,
    "system_instruction": "Be brief.",
    "input": [
        {"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
        {
            "type": "thought",
            "signature": "EpQBCkQopaque+/==",
            "summary": [{"type": "text", "text": "Two lookups."}],
        },
        {"type": "model_output", "content": [{"type": "text", "text": "Checking both cities now."}]},
        {"type": "function_call", "id": "call_p1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {
            "type": "function_call",
            "id": "call_o2",
            "name": "get_weather",
            "arguments": {"city": "Oslo"},
            "signature": "",
        },
        {"type": "thought", "signature": "U2Vjb25kU2ln"},
        {
            "type": "function_result",
            "call_id": "call_p1",
            "name": "get_weather",
            "result": [{"type": "text", "text": "18C"}],
        },
        {"type": "function_result", "call_id": "call_o2", "name": "get_weather", "result": "9C"},
        {"type": "google_search_result", "call_id": "gs_1", "result": [{"search_suggestions": "<div/>"}]},
    ],
}


def test_stateless_history_round_trip_is_byte_exact() -> None:
    messages = gi.to_canonical(STATELESS)
    assert messages[0] == Message(role="system", content=[TextPart(text="Be brief.")], provider=PROTO)
    assert {m.provider for m in messages} == {PROTO}
    body = gi.from_canonical(messages)
    assert body["system_instruction"] == "Be brief."
    assert json.dumps(body["input"], sort_keys=True) == json.dumps(STATELESS["input"], sort_keys=True)
    thoughts = [p for m in messages for p in m.content if isinstance(p, ReasoningPart)]
    assert [t.signature for t in thoughts] == ["EpQBCkQopaque+/==", "U2Vjb25kU2ln"]
    results = [p for m in messages for p in m.content if isinstance(p, ToolResultPart)]
    assert [r.tool_call_id for r in results] == ["call_p1", "call_o2"]
    assert gi.validate(STATELESS) == []


def test_previous_interaction_id_is_kept_for_stateful_use() -> None:
    body = {
        "model": "m",
        "previous_interaction_id": "v1_abc",
        "input": [{"type": "function_result", "call_id": "call_p1", "name": "get_weather", "result": "18C"}],
    }
    messages = gi.to_canonical(body)
    assert gi.from_canonical(messages)["previous_interaction_id"] == "v1_abc"
    assert gi.validate(body) == []  # a stored interaction made the call
    assert (
        gi.from_canonical(messages, previous_interaction_id="v1_new")["previous_interaction_id"] == "v1_new"
    )


def test_validate_names_faults() -> None:
    body = {
        "store": False,
        "previous_interaction_id": "v1_x",
        "input": [{"type": "function_call", "id": "", "name": "f", "arguments": {}}],
    }
    faults = gi.validate(body)
    assert any("store: false" in f for f in faults)
    assert any("messages[0]" in f and "no id" in f for f in faults)
    orphan = {"input": [{"type": "function_result", "call_id": "call_zz", "result": "x"}]}
    assert gi.validate(orphan) == [
        "messages[0]: function_result call_id call_zz answers no earlier function_call"
    ]
    assert gi.validate({"no": "input"}) == ["the body has no 'input'"]


def test_history_accepts_string_content_and_turns() -> None:
    assert gi.to_canonical({"input": "hi"}) == [
        Message(role="user", content=[TextPart(text="hi")], provider=PROTO)
    ]
    turns = gi.to_canonical(
        {
            "input": [
                {"role": "user", "content": "a"},
                {"role": "model", "content": [{"type": "text", "text": "b"}]},
            ]
        }
    )
    assert [(m.role, m.content) for m in turns] == [
        ("user", [TextPart(text="a")]),
        ("assistant", [TextPart(text="b")]),
    ]


def test_history_from_another_protocol_drops_and_reports() -> None:
    messages = [
        Message(role="user", content="Weather?"),
        Message(
            role="assistant",
            provider="anthropic",
            content=[
                ReasoningPart(text="Two lookups.", signature="ant-sig"),
                ToolCallPart(id="srvtoolu_1", name="web_search", arguments="{}", kind="server"),
                TextPart(text="Checking."),
                ToolCallPart(id="toolu_1", name="get_weather", arguments='{"city": "Paris"}', signature="s2"),
            ],
        ),
        Message(
            role="tool",
            provider="anthropic",
            content=[
                ToolResultPart(
                    tool_call_id="toolu_1", content=[TextPart(text="18C"), ReasoningPart(text="x")]
                )
            ],
        ),
    ]
    drops = ms.DropLog(PROTO, "anthropic")
    body = gi.from_canonical(messages, drops=drops)
    assert body["input"] == [
        {"type": "user_input", "content": [{"type": "text", "text": "Weather?"}]},
        {"type": "thought", "summary": [{"type": "text", "text": "Two lookups."}]},
        {"type": "model_output", "content": [{"type": "text", "text": "Checking."}]},
        {"type": "function_call", "id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "function_result", "call_id": "toolu_1", "result": [{"type": "text", "text": "18C"}]},
    ]
    assert {r.kind: (r.count, r.where) for r in drops.records} == {
        "signature": (2, ("messages[1]",)),
        "server_call": (1, ("messages[1]",)),
        "tool_result": (1, ("messages[2]",)),
    }
    assert all("toolu" not in r.what for r in drops.records)
    assert gi.validate(body) == []


def test_history_fields_of_the_wrong_type_are_faults() -> None:
    faults = gi.validate({"input": [{"type": "function_call", "id": 5, "name": "f", "arguments": {}}]})
    assert len(faults) == 1
    assert faults[0].startswith("input[0]: Expected `str | null`, got `int`")
    with pytest.raises(ms.ValidationError, match=r"input\[1\]"):
        gi.to_canonical({"input": [{"type": "thought"}, {"type": "thought", "summary": "not a list"}]})


def test_history_keeps_step_fields_with_no_canonical_home() -> None:
    step = {"type": "google_search_call", "id": "gs_1", "arguments": {"queries": ["q"]}, "search_type": "web"}
    error = {"type": "model_output", "content": [], "error": {"code": "x", "message": "y"}}
    body = {"previous_interaction_id": "v1_a", "input": [step, error]}
    messages = gi.to_canonical(body)
    assert messages[0].provider_raw == {"search_type": "web", "previous_interaction_id": "v1_a"}
    assert gi.from_canonical(messages) == body
