"""Gemini stream decoder and encoder, checked against google-genai's own stream parser."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream import ReasoningPart, TextPart, ToolCallPart
from tests.conftest import corpus, need_corpus, params, recordings
from tests.protocols.gemini_oracle import Oracle, oracle

if TYPE_CHECKING:
    from pathlib import Path

GEMINI = [*corpus("gemini"), *recordings("gemini")]
SDK_CASES = [p for p in GEMINI if p.name != "snake_case_fields.sse"]  # the SDK reads camelCase only


def _norm_sig(sig: str | None) -> str | None:
    return None if sig is None else base64.b64encode(base64.b64decode(sig)).decode()


def ours_by_candidate(resp: ms.Response) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for msg in resp.messages:
        entry = out.setdefault(msg.choice_index or 0, {"text": "", "thought": "", "calls": []})
        assert not isinstance(msg.content, str)
        for part in msg.content:
            if isinstance(part, TextPart):
                entry["text"] += part.text
            elif isinstance(part, ReasoningPart):
                entry["thought"] += part.text or ""
            elif isinstance(part, ToolCallPart) and part.kind == "function":
                entry["calls"].append(part)
    return out


def assert_matches_oracle(resp: ms.Response, expected: Oracle, *, signatures: bool = True) -> None:
    ours = ours_by_candidate(resp)
    got = {i: c for i, c in ours.items() if c["text"] or c["thought"] or c["calls"]}
    want = {i: c for i, c in expected.candidates.items() if "".join(c.text) or "".join(c.thought) or c.calls}
    assert sorted(got) == sorted(want)
    for index, cand in want.items():
        mine = got[index]
        assert mine["text"] == "".join(cand.text)
        assert mine["thought"] == "".join(cand.thought)
        assert [c.name for c in mine["calls"]] == [c["name"] for c in cand.calls]
        for call, ref in zip(mine["calls"], cand.calls, strict=True):
            if call.status == "incomplete":
                assert cand.open_call, "we cut a call the SDK saw closed"
                continue
            assert json.loads(call.arguments) == ref["args"]
            if ref["id"]:
                assert call.id == ref["id"]
            if signatures:
                assert _norm_sig(call.signature) == ref["signature"]


# ---------------------------------------------------------------------- decoder vs SDK


@pytest.mark.parametrize("path", params(SDK_CASES))
def test_decode_matches_google_genai(path: Path) -> None:
    data = path.read_bytes()
    expected = oracle(data)
    resp = ms.aggregate(data, protocol="gemini")
    assert_matches_oracle(resp, expected)
    assert (resp.error is not None) == (expected.error is not None)
    open_at_end = any(c.open_call for c in expected.candidates.values())
    if open_at_end:
        assert resp.status == "incomplete"
        cut = [
            p
            for m in resp.messages
            for p in m.content
            if isinstance(p, ToolCallPart) and p.status == "incomplete"
        ]
        assert cut, "a call still open at the end must be reported incomplete"
    elif (
        expected.error is None and all(c.finish for c in expected.candidates.values()) and expected.candidates
    ):
        finishes = {c.finish for c in expected.candidates.values()}
        if finishes <= {"STOP", "MALFORMED_FUNCTION_CALL"}:
            assert resp.status == "completed"
    if expected.block_reason is not None:
        assert resp.finish_reason == "content_filter"
        assert resp.provider_finish_reason == expected.block_reason


@pytest.mark.parametrize("path", need_corpus("gemini"))
def test_corpus_detected_as_gemini(path: Path) -> None:
    assert ms.detect_protocol(path.read_bytes()) == "gemini"


def test_missing_terminal_call_is_incomplete() -> None:
    path = next((p for p in corpus("gemini") if p.name == "array_args_missing_terminal_call.sse"), None)
    if path is None:
        pytest.skip("corpus not found")
    resp = ms.aggregate(path.read_bytes(), protocol="gemini")
    assert resp.status == "incomplete"
    call = resp.messages[0].content[0]
    assert isinstance(call, ToolCallPart)
    assert call.status == "incomplete"
    assert call.name == "writeItems"
    assert call.signature is not None
    assert resp.messages[0].status == "incomplete"


def test_parallel_same_name_calls_stay_two_with_signature_on_first() -> None:
    data = (ms_recording("parallel_same_name_no_ids.sse")).read_bytes()
    resp = ms.aggregate(data, protocol="gemini")
    calls = [p for p in resp.messages[0].content if isinstance(p, ToolCallPart)]
    assert [c.name for c in calls] == ["lookup_order", "lookup_order"]
    assert [json.loads(c.arguments) for c in calls] == [{"order": "A-17"}, {"order": "B-22"}]
    assert calls[0].signature is not None
    assert calls[1].signature is None
    assert calls[0].id != calls[1].id
    again = ms.aggregate([data[i : i + 7] for i in range(0, len(data), 7)], protocol="gemini")
    assert [p.id for p in again.messages[0].content if isinstance(p, ToolCallPart)] == [c.id for c in calls]
    assert resp.finish_reason == "tool_calls"


def test_parallel_calls_in_one_chunk_keep_ids_and_signature() -> None:
    resp = ms.aggregate(ms_recording("thoughts_text_parallel_calls.sse").read_bytes(), protocol="gemini")
    calls = [p for p in resp.messages[0].content if isinstance(p, ToolCallPart)]
    assert [(c.id, c.signature is not None) for c in calls] == [("fc_p1", True), ("fc_o2", False)]


def ms_recording(name: str) -> Path:
    found = [p for p in recordings("gemini") if p.name == name]
    assert found, f"recording {name} missing"
    return found[0]


# ---------------------------------------------------------------------- decoder details


def _sse(*chunks: dict[str, Any], sep: bytes = b"\r\n\r\n") -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + sep for c in chunks)


def _cand(parts: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"index": 0, **extra}
    if parts is not None:
        body["content"] = {"role": "model", "parts": parts}
    return {"candidates": [body], "responseId": "r1", "modelVersion": "gemini-x"}


@pytest.mark.parametrize(
    ("raw", "reason", "status"),
    [
        ("STOP", "stop", "completed"),
        ("MAX_TOKENS", "length", "incomplete"),
        ("SAFETY", "content_filter", "incomplete"),
        ("RECITATION", "content_filter", "incomplete"),
        ("BLOCKLIST", "content_filter", "incomplete"),
        ("PROHIBITED_CONTENT", "content_filter", "incomplete"),
        ("SPII", "content_filter", "incomplete"),
        ("IMAGE_SAFETY", "content_filter", "incomplete"),
        ("MALFORMED_FUNCTION_CALL", "other", "completed"),
        ("OTHER", "other", "completed"),
    ],
)
def test_finish_reasons(raw: str, reason: str, status: str) -> None:
    resp = ms.aggregate(_sse(_cand([{"text": "hi"}]), _cand(finishReason=raw)), protocol="gemini")
    assert (resp.finish_reason, resp.provider_finish_reason, resp.status) == (reason, raw, status)


def test_no_finish_reason_means_incomplete() -> None:
    resp = ms.aggregate(_sse(_cand([{"text": "hi"}])), protocol="gemini")
    assert resp.status == "incomplete"
    assert resp.messages[0].content == [TextPart(text="hi")]


def test_usage_last_chunk_authoritative() -> None:
    first = _cand([{"text": "a"}]) | {"usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5}}
    last = _cand([{"text": "b"}], finishReason="STOP") | {
        "usageMetadata": {
            "promptTokenCount": 7,
            "candidatesTokenCount": 3,
            "thoughtsTokenCount": 11,
            "cachedContentTokenCount": 2,
            "totalTokenCount": 21,
        }
    }
    resp = ms.aggregate(_sse(first, last), protocol="gemini")
    assert resp.usage is not None
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == (7, 14, 21)
    assert (resp.usage.reasoning_tokens, resp.usage.cache_read_tokens) == (11, 2)


def test_in_stream_error_fails_and_keeps_text() -> None:
    err = {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}
    resp = ms.aggregate(_sse(_cand([{"text": "partial"}]), err), protocol="gemini")
    assert resp.status == "failed"
    assert resp.error is not None
    assert (resp.error.type, resp.error.code, resp.error.message) == (
        "RESOURCE_EXHAUSTED",
        "429",
        "Resource exhausted",
    )
    assert resp.messages[0].content == [TextPart(text="partial")]


def test_prompt_block_has_no_candidates() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "responseId": "r"}
    resp = ms.aggregate(_sse(body), protocol="gemini")
    assert resp.messages == []
    assert (resp.finish_reason, resp.provider_finish_reason, resp.status) == (
        "content_filter",
        "SAFETY",
        "incomplete",
    )
    assert resp.provider_raw == {"promptFeedback": {"blockReason": "SAFETY"}}


def test_signature_on_text_run_and_second_signature_starts_new_part() -> None:
    resp = ms.aggregate(
        _sse(
            _cand([{"text": "A", "thoughtSignature": "c2lnMQ=="}]),
            _cand([{"text": "B"}]),
            _cand([{"text": "C", "thoughtSignature": "c2lnMg=="}], finishReason="STOP"),
        ),
        protocol="gemini",
    )
    assert resp.messages[0].content == [
        TextPart(text="AB", signature="c2lnMQ=="),
        TextPart(text="C", signature="c2lnMg=="),
    ]


def test_thought_and_answer_runs_are_separate() -> None:
    resp = ms.aggregate(
        _sse(
            _cand([{"text": "t1", "thought": True}, {"text": "t2", "thought": True}]),
            _cand([{"text": "a1"}]),
            _cand([{"text": "t3", "thought": True, "thoughtSignature": "c2ln"}], finishReason="STOP"),
        ),
        protocol="gemini",
    )
    assert resp.messages[0].content == [
        ReasoningPart(text="t1t2"),
        TextPart(text="a1"),
        ReasoningPart(text="t3", signature="c2ln"),
    ]


def test_snake_case_equals_camel_case() -> None:
    snake = ms_recording("snake_case_fields.sse").read_bytes()
    camel = snake
    for a, b in [
        (b'"function_call"', b'"functionCall"'),
        (b'"thought_signature"', b'"thoughtSignature"'),
        (b'"finish_reason"', b'"finishReason"'),
        (b'"usage_metadata"', b'"usageMetadata"'),
        (b'"prompt_token_count"', b'"promptTokenCount"'),
        (b'"candidates_token_count"', b'"candidatesTokenCount"'),
        (b'"thoughts_token_count"', b'"thoughtsTokenCount"'),
        (b'"total_token_count"', b'"totalTokenCount"'),
        (b'"model_version"', b'"modelVersion"'),
        (b'"response_id"', b'"responseId"'),
    ]:
        camel = camel.replace(a, b)
    assert b"_count" not in camel
    a = msgspec.to_builtins(ms.aggregate(snake, protocol="gemini"))
    b_ = msgspec.to_builtins(ms.aggregate(camel, protocol="gemini"))
    a["usage"].pop("raw")
    b_["usage"].pop("raw")
    assert a == b_
    call = a["messages"][0]["content"][1]
    assert json.loads(call["arguments"]) == {"wake_time": "07:00", "snooze_min": 5}  # user keys untouched


def test_media_parts_by_mime_type() -> None:
    resp = ms.aggregate(ms_recording("media_parts.sse").read_bytes(), protocol="gemini")
    content = resp.messages[0].content
    assert not isinstance(content, str)
    kinds = [type(p).__name__ for p in content]
    assert kinds == ["TextPart", "UnknownPart", "ImagePart", "AudioPart", "FilePart"]
    image, audio, file = content[2:]
    assert isinstance(image, ms.ImagePart)
    assert image.media_type == "image/png"
    assert image.data
    assert isinstance(audio, ms.AudioPart)
    assert audio.format == "audio/L16;codec=pcm;rate=24000"
    assert isinstance(file, ms.FilePart)
    assert file.url
    assert file.media_type == "application/pdf"


def test_unknown_part_kept() -> None:
    resp = ms.aggregate(ms_recording("unknown_part_and_malformed_call.sse").read_bytes(), protocol="gemini")
    unknown = resp.messages[0].content[1]
    assert isinstance(unknown, ms.UnknownPart)
    assert unknown.provider_type == "part.hologram"
    assert unknown.raw == {"hologram": {"uri": "holo://scene/1", "frames": 3}}
    assert resp.unknown == {"part.hologram": 1}
    assert resp.messages[0].provider_raw == {"finishMessage": "Malformed function call: call_tool("}


def test_grounding_and_citations_become_annotations() -> None:
    resp = ms.aggregate(ms_recording("server_tools_grounding.sse").read_bytes(), protocol="gemini")
    text = next(p for p in resp.messages[0].content if isinstance(p, TextPart))
    assert text.annotations is not None
    urls = [(c.kind, c.url) for c in text.annotations]
    assert ("citation_source", "https://example.org/azabudai") in urls
    assert ("grounding_chunk", "https://example.com/skyline") in urls
    server = resp.messages[0].content[0]
    assert isinstance(server, ToolCallPart)
    assert server.kind == "server"
    assert server.id == "st_1"
    assert resp.finish_reason == "stop"  # server-side calls are not client tool calls
    raw = resp.messages[0].provider_raw
    assert isinstance(raw, dict)
    assert "safetyRatings" in raw
    assert "groundingMetadata" in raw


def test_streamed_args_nested_numbers_bools_null() -> None:
    resp = ms.aggregate(ms_recording("vertex_streamed_args.sse").read_bytes(), protocol="gemini")
    calls = [p for p in resp.messages[0].content if isinstance(p, ToolCallPart)]
    assert json.loads(calls[0].arguments) == {
        "trip": {
            "city": 'Kyoto "old" town',
            "days": 4,
            "stops": [{"name": "Fushimi Inari", "paid": False}, {"name": "Kinkaku-ji", "paid": True}],
        },
        "notes": None,
    }
    assert json.loads(calls[1].arguments) == {"tz": "Asia/Tokyo"}
    assert resp.warnings is None


def test_out_of_order_partial_args_use_the_value() -> None:
    def fc(**kw: Any) -> dict[str, Any]:
        return _cand([{"functionCall": kw}])

    data = _sse(
        fc(name="f", willContinue=True),
        fc(partialArgs=[{"jsonPath": "$.a.x", "numberValue": 1}], willContinue=True),
        fc(partialArgs=[{"jsonPath": "$.b", "stringValue": "s"}], willContinue=True),
        fc(partialArgs=[{"jsonPath": "$.a.y", "numberValue": 2}], willContinue=True),
        _cand([{"functionCall": {}}], finishReason="STOP"),
    )
    resp = ms.aggregate(data, protocol="gemini")
    call = resp.messages[0].content[0]
    assert isinstance(call, ToolCallPart)
    assert json.loads(call.arguments) == {"a": {"x": 1, "y": 2}, "b": "s"}


def test_bad_json_path_raises_remote_protocol_error() -> None:
    data = _sse(
        _cand([{"functionCall": {"name": "f", "willContinue": True}}]),
        _cand([{"functionCall": {"partialArgs": [{"jsonPath": "a.b", "stringValue": "x"}]}}]),
    )
    with pytest.raises(ms.RemoteProtocolError, match="jsonPath"):
        ms.aggregate(data, protocol="gemini")


def test_not_json_raises_remote_protocol_error_with_frame() -> None:
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(_sse(_cand([{"text": "a"}])) + b"data: {nope\r\n\r\n", protocol="gemini")
    assert info.value.frame == 2


# ---------------------------------------------------------------------- encoder accepted by the SDK


def _lines_ok(out: bytes) -> None:
    for line in out.replace(b"\r\n", b"\n").split(b"\n"):
        assert not line or line.startswith(b"data: "), line[:80]


def _expected_after_encoding(resp: ms.Response) -> dict[int, dict[str, Any]]:
    """What a Gemini client should see: text, thought text, and the completed client calls."""
    out: dict[int, dict[str, Any]] = {}
    for index, entry in ours_by_candidate(resp).items():
        calls = [c for c in entry["calls"] if c.status != "incomplete"]
        calls = [c for c in calls if isinstance(_obj(c.arguments), dict)]
        out[index] = {"text": entry["text"], "thought": entry["thought"], "calls": calls}
    for msg in resp.messages:
        assert not isinstance(msg.content, str)
        for part in msg.content:
            if isinstance(part, ReasoningPart) and part.text is None and part.summary:
                out[msg.choice_index or 0]["thought"] += "".join(part.summary)
    return out


def _obj(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return None


ENCODE_CASES = [*GEMINI, *recordings("openai-chat")]


@pytest.mark.parametrize("path", params(ENCODE_CASES))
def test_encoder_output_accepted_by_google_genai(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data)
    out = ms.convert(data, to="gemini")
    _lines_ok(out)
    expected = oracle(out)
    assert (expected.error is not None) == (source.error is not None)
    want = _expected_after_encoding(source)
    got = dict(expected.candidates.items())
    for index, entry in want.items():
        if not (entry["text"] or entry["thought"] or entry["calls"]):
            continue
        cand = got[index]
        assert "".join(cand.text) == entry["text"]
        assert "".join(cand.thought) == entry["thought"]
        assert [c["name"] for c in cand.calls] == [c.name for c in entry["calls"]]
        for ref, call in zip(cand.calls, entry["calls"], strict=True):
            assert ref["args"] == _obj(call.arguments)
            if source.protocol == "gemini":
                assert ref["signature"] == _norm_sig(call.signature)
            else:
                assert ref["signature"] is None


@pytest.mark.parametrize("path", params(GEMINI))
def test_same_protocol_reencode_is_lossless(path: Path) -> None:
    data = path.read_bytes()
    conv = ms.StreamConverter("gemini", protocol="gemini")
    out = conv.feed(data) + conv.finish()
    assert all(r.kind == "field" and "cut before it completed" in r.what for r in conv.lossy)
    before = msgspec.to_builtins(ms.aggregate(data, protocol="gemini"))
    after = msgspec.to_builtins(ms.aggregate(out, protocol="gemini"))
    if before["status"] == "incomplete" and before.get("finish_reason") not in ("length", "content_filter"):
        # A cut call cannot be written as a Gemini part: it is dropped (reported) and the
        # output stays incomplete, as its source was.
        assert after["status"] == "incomplete"
        strip = [m["content"] for m in before.get("messages", [])]
        for content in strip:
            content[:] = [p for p in content if p.get("status") != "incomplete"]
        for m in before.get("messages", []) + after.get("messages", []):
            m.pop("status", None)
            m.pop("finish_reason", None)
        for resp in (before, after):
            resp["messages"] = [m for m in resp.get("messages", []) if m["content"]]
        for key in ("finish_reason", "provider_finish_reason"):
            before.pop(key, None)
            after.pop(key, None)
    for resp in (before, after):
        if "usage" in resp:
            resp["usage"].pop("raw")  # the aggregator merges raw usage objects over the stream
    assert after == before


def test_reencode_from_chat_drops_nothing_silently() -> None:
    path = next(p for p in recordings("openai-chat") if p.name == "reasoning_details_signature.sse")
    conv = ms.StreamConverter("gemini", protocol="openai-chat")
    out = conv.feed(path.read_bytes()) + conv.finish()
    assert [(r.kind, r.source) for r in conv.lossy if "signature" in r.what] == [("signature", "openai-chat")]
    assert b"thoughtSignature" not in out


def test_first_frame_written_before_second_input_frame() -> None:
    data = ms_recording("thoughts_text_parallel_calls.sse").read_bytes()
    frames = [f + b"\r\n\r\n" for f in data.split(b"\r\n\r\n") if f]
    conv = ms.StreamConverter("gemini", protocol="gemini")
    first = conv.feed(frames[0])
    assert first.startswith(b"data: ")
    assert b'"thought":true' in first
