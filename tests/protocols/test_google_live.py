"""Google Live: corpus tool rounds and turns, our recordings, the encoder (google-genai oracle)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from google.genai import types as genai_types

import maas_stream as ms
from maas_stream import (
    AudioPart,
    CodePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)
from maas_stream.protocols import google_live as gl
from tests.conftest import RECORDINGS, corpus, need_corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "google-live"


def frames(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The recorded frames, read with the stdlib (independent of our decoder)."""
    return [(f["dir"], f["msg"]) for f in map(json.loads, path.read_text().splitlines()) if f]


def strip(resp: ms.Response) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(resp)
    for key in ("unknown", "unknown_events", "warnings"):
        out.pop(key, None)
    return out


def calls_and_results(resp: ms.Response) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
    calls, results = [], []
    for i, m in enumerate(resp.messages):
        for p in m.content if isinstance(m.content, list) else []:
            if isinstance(p, ToolCallPart):
                calls.append((i, (p.id, p.name, json.loads(p.arguments))))
            elif isinstance(p, ToolResultPart):
                assert isinstance(p.content, str)
                try:
                    content: Any = json.loads(p.content)
                except json.JSONDecodeError:
                    content = {"output": p.content}  # plain text output (a Realtime source)
                results.append((i, (p.tool_call_id, p.name, content)))
    return calls, results


# ---------------------------------------------------------------- corpus


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_tool_rounds_in_order(path: Path) -> None:
    expected_calls, expected_results = [], []
    for direction, msg in frames(path):
        if direction == "server" and "toolCall" in msg:
            expected_calls += [(c["id"], c["name"], c["args"]) for c in msg["toolCall"]["functionCalls"]]
        body = msg.get("toolResponse") or msg.get("tool_response")
        if direction == "client" and body:
            expected_results += [(r["id"], r["name"], r["response"]) for r in body["functionResponses"]]
    resp = ms.aggregate(path.read_bytes())  # detected
    assert resp.protocol == PROTO
    calls, results = calls_and_results(resp)
    assert [c for _, c in calls] == expected_calls
    assert [r for _, r in results] == expected_results
    call_at = {c[0]: i for i, c in calls}
    for i, (call_id, _, _) in results:
        assert i > call_at[call_id]  # the result comes after its call
        assert resp.messages[i].role == "tool"
    # the model's answer after the results is a message of its own, after them
    if results:
        last_result = max(i for i, _ in results)
        assert any(m.role == "assistant" for m in resp.messages[last_result + 1 :])


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_turns_audio_transcript_and_usage(path: Path) -> None:
    # Fold by hand: per model turn (split at toolCall / toolResponse / turnComplete), the audio
    # data and the output transcription.
    turns: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    usage = None
    for direction, msg in frames(path):
        if direction == "client":
            if "toolResponse" in msg or "tool_response" in msg:
                current = None
            continue
        content = msg.get("serverContent", {})
        for part in content.get("modelTurn", {}).get("parts", []):
            if "inlineData" in part:
                if current is None:
                    current = {"data": "", "t": ""}
                    turns.append(current)
                current["data"] += part["inlineData"]["data"]
        if "outputTranscription" in content:
            if current is None:
                current = {"data": "", "t": ""}
                turns.append(current)
            current["t"] += content["outputTranscription"]["text"]
        if "toolCall" in msg or content.get("turnComplete"):
            current = None
        usage = msg.get("usageMetadata", usage)
    resp = ms.aggregate(path.read_bytes(), protocol=PROTO)
    audio = [
        p for m in resp.messages for p in m.content if isinstance(p, AudioPart) and m.role == "assistant"
    ]
    assert [(a.data or "", a.transcript or "") for a in audio] == [(t["data"], t["t"]) for t in turns]
    assert resp.usage is not None
    assert resp.usage.raw == usage
    # Canonical usage (docs/usage.md): the output counts the thoughts, which Live reports apart
    # (and, in these captures, leaves out of its own totalTokenCount, kept in raw).
    thoughts = usage.get("thoughtsTokenCount", 0)
    assert resp.usage.input_tokens == usage["promptTokenCount"]
    assert resp.usage.output_tokens == usage["responseTokenCount"] + thoughts
    assert resp.usage.reasoning_tokens == usage.get("thoughtsTokenCount")
    assert resp.usage.total_tokens == (resp.usage.input_tokens or 0) + (resp.usage.output_tokens or 0)
    assert resp.status == "completed"
    assert all(m.status == "completed" for m in resp.messages)


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_corpus_same_protocol_reencode_is_lossless(path: Path) -> None:
    data = path.read_bytes()
    conv = ms.StreamConverter(PROTO, protocol=PROTO)
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    assert strip(ms.aggregate(out, protocol=PROTO)) == strip(ms.aggregate(data, protocol=PROTO))
    assert_valid_live(out)


def assert_valid_live(out: bytes) -> int:
    """Every server message validates as google-genai's LiveServerMessage (extra fields forbidden)."""
    n = 0
    for line in out.splitlines():
        frame = json.loads(line)
        if frame["dir"] == "server":
            genai_types.LiveServerMessage.model_validate(frame["msg"])
            n += 1
    return n


@pytest.mark.parametrize("path", params(corpus("openai-realtime")) or need_corpus("openai-realtime"))
def test_encoder_from_realtime_validates_and_keeps_content(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data, protocol="openai-realtime")
    out = ms.convert(data, to=PROTO, protocol="openai-realtime")
    assert assert_valid_live(out) > 0
    back = ms.aggregate(out, protocol=PROTO)
    assert calls_and_results(back)[0] == calls_and_results(source)[0]
    assert [r[1][0] for r in calls_and_results(back)[1]] == [r[1][0] for r in calls_and_results(source)[1]]

    def audio(resp: ms.Response) -> list[tuple[str | None, str | None]]:
        return [
            (p.data, p.transcript)
            for m in resp.messages
            if m.role == "assistant"
            for p in m.content
            if isinstance(p, AudioPart)
        ]

    assert audio(back) == audio(source)
    texts = [p.text for m in source.messages for p in m.content if isinstance(p, TextPart)]
    assert [p.text for m in back.messages for p in m.content if isinstance(p, TextPart)] == texts


# ---------------------------------------------------------------- recordings


@pytest.mark.parametrize("path", params(recordings(PROTO)))
def test_recordings_reencode_and_validate(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data)
    assert resp.protocol == PROTO
    out = ms.convert(data, to=PROTO)
    assert strip(ms.aggregate(out, protocol=PROTO)) == strip(resp)
    assert_valid_live(out)


def _rec(name: str) -> ms.Response:
    return ms.aggregate((RECORDINGS / PROTO / name).read_bytes(), protocol=PROTO)


def test_thought_text_parallel_calls_results_then_answer() -> None:
    resp = _rec("text_thought_parallel_tools.jsonl")
    assert [m.role for m in resp.messages] == ["assistant", "tool", "assistant"]
    first = resp.messages[0].content
    assert first[:2] == [
        ReasoningPart(text="Two lookups; ask for both at once.", signature="TGl2ZVNpZw=="),
        TextPart(text="Checking both cities now."),
    ]
    calls, results = calls_and_results(resp)
    assert [c for _, c in calls] == [
        ("fc-1", "get_weather", {"city": "Paris"}),
        ("fc-2", "get_weather", {"city": "Oslo"}),
    ]
    assert [r for _, r in results] == [
        ("fc-1", "get_weather", {"output": {"temp_c": 18}}),
        ("fc-2", "get_weather", {"output": {"temp_c": 9}}),
    ]
    assert resp.messages[2].content == [TextPart(text="Paris 18°C, Oslo 9°C.")]
    assert resp.usage is not None
    assert (resp.usage.input_tokens, resp.usage.reasoning_tokens) == (61, 40)
    assert resp.unknown == {
        "client.setup": 1,
        "setupComplete": 1,
        "client.clientContent": 1,
        "sessionResumptionUpdate": 1,
    }
    assert resp.model == "models/gemini-live-2.5-flash-preview"


def test_cancelled_call_and_interrupted_turn_are_marked() -> None:
    resp = _rec("interrupted_cancelled_call.jsonl")
    call = resp.messages[0].content[1]
    assert isinstance(call, ToolCallPart)
    assert call.id == "fc-slow"
    assert call.status == "incomplete"  # cancelled by toolCallCancellation
    kept = [u for u in resp.unknown_events or [] if u.provider_type == "toolCallCancellation"]
    assert kept
    assert kept[0].raw == {"toolCallCancellation": {"ids": ["fc-slow"]}}
    assert resp.messages[1].status == "incomplete"  # the interrupted turn
    assert (resp.status, resp.provider_finish_reason) == ("incomplete", "interrupted")
    assert resp.id == "sess-live-7"
    assert resp.unknown["goAway"] == 1
    assert resp.unknown["client.realtimeInput"] == 2
    audio = resp.messages[0].content[0]
    assert audio == AudioPart(
        data="AAAAAP//AQD+/w==", format="audio/pcm;rate=24000", transcript="Let me look"
    )


def test_input_transcription_code_unknown_parts_and_second_turn() -> None:
    resp = _rec("transcripts_code_grounding_two_turns.jsonl")
    user, turn1, turn2 = resp.messages
    assert (user.role, user.type) == ("user", "input_transcription")
    assert user.content == [AudioPart(transcript="What is two to the tenth?")]
    assert turn1.content[:2] == [
        CodePart(language="PYTHON", code="print(2**10)"),
        CodePart(outcome="OUTCOME_OK", output="1024\n"),
    ]
    unknown = [p for p in turn1.content if isinstance(p, UnknownPart)]
    assert [u.provider_type for u in unknown] == ["part", "groundingMetadata"]
    assert turn2.content == [TextPart(text="You're welcome.")]
    assert resp.provider_finish_reason == "NEED_MORE_INPUT"
    assert resp.usage is not None
    assert resp.usage.total_tokens == 24


def test_cut_mid_turn_is_incomplete() -> None:
    resp = _rec("cut_mid_turn.jsonl")
    assert resp.status == "incomplete"
    assert resp.messages[0].status == "incomplete"


def test_bad_messages_give_clear_protocol_errors() -> None:
    with pytest.raises(ms.RemoteProtocolError, match="non-empty JSON object") as info:
        ms.aggregate(b'{"dir":"client","msg":[1,2]}\n', protocol=PROTO)
    assert info.value.frame == 1
    with pytest.raises(ms.RemoteProtocolError, match="invalid google-live message"):
        ms.aggregate(b'{"dir":"server","msg":{"serverContent":{"turnComplete":"yes"}}}\n', protocol=PROTO)
    with pytest.raises(ms.RemoteProtocolError, match="JSON-lines frame"):
        ms.aggregate(b'{"dir":"server"}\n', protocol=PROTO)


# ---------------------------------------------------------------- history


def test_history_round_trip_of_client_content() -> None:
    body = [
        {"setup": {"model": "models/x", "systemInstruction": {"parts": [{"text": "Be brief."}]}}},
        {
            "client_content": {
                "turns": [
                    {"role": "user", "parts": [{"text": "Hi"}]},
                    {
                        "role": "model",
                        "parts": [
                            {"text": "plan", "thought": True, "thoughtSignature": "c2ln"},
                            {"functionCall": {"id": "f1", "name": "go", "args": {"a": 1}}},
                        ],
                    },
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"id": "f1", "name": "go", "response": {"ok": True}}}],
                    },
                ],
                "turnComplete": True,
            }
        },
    ]
    messages = gl.to_canonical(body)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    out = gl.from_canonical(messages)
    assert out["setup"] == {"systemInstruction": {"parts": [{"text": "Be brief."}]}}
    assert out["clientContent"]["turns"] == body[1]["client_content"]["turns"]  # type: ignore[index]
    assert gl.validate(body) == []
    assert gl.validate({"bogus": {}}) == ["message 0: 'bogus' is not a Live client message"]
