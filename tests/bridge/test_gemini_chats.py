"""google-genai's chat helper (``client.aio.chats``) keeps its history through the bridge, on every upstream.

The helper keeps a turn in the history it sends next only when every streamed chunk carries
``candidates[0].content`` with parts and the turn ended with a finish reason; it records each
chunk as its own ``model`` content. So the bridge must write ``content`` on every Gemini chunk
(the finish chunk included, and no candidate-less usage chunk after it), and must read
consecutive ``model`` contents as one turn. Each test plays two turns against a recording of
each HTTP protocol (a replayed upstream) and checks the SDK's curated history and the second
request the upstream received.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from google.genai import types as genai

import maas_stream as ms
from maas_stream import events as ev
from maas_stream.bridge import RecordingUpstream, create_app
from maas_stream.protocols import gemini
from tests.bridge.test_serve import LIMIT, genai_client
from tests.conftest import CORPUS, RECORDINGS, corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

UPSTREAMS = [
    pytest.param(RECORDINGS / "gemini/thoughts_text_parallel_calls.sse", id="gemini-thoughts-calls"),
    pytest.param(RECORDINGS / "gemini/text_trailing_signature.sse", id="gemini-trailing-signature"),
    pytest.param(RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse", id="chat-text-calls-usage"),
    pytest.param(
        CORPUS / "openai-chat/text_usage_gpt4o.sse",
        id="chat-text-usage-only-chunk",
        marks=pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not mounted"),
    ),
    pytest.param(RECORDINGS / "anthropic/thinking_parallel_tools.sse", id="anthropic-thinking-calls"),
    pytest.param(RECORDINGS / "anthropic/text_citations.sse", id="anthropic-text"),
    pytest.param(
        RECORDINGS / "openai-responses/reasoning_text_parallel_calls.sse", id="responses-reasoning-calls"
    ),
    pytest.param(RECORDINGS / "openai-responses/interleaved_calls.sse", id="responses-calls"),
]


def _turn(path: Path) -> tuple[str, list[tuple[str, Any]]]:
    """The recording's answer: its text and its function calls (name, arguments), per ms.aggregate."""
    text: list[str] = []
    calls: list[tuple[str, Any]] = []
    for message in ms.aggregate(path.read_bytes()).messages:
        for part in message.content if not isinstance(message.content, str) else []:
            if isinstance(part, ms.TextPart):
                text.append(part.text)
            elif isinstance(part, ms.ToolCallPart) and part.kind == "function":
                calls.append((part.name, json.loads(part.arguments or "{}")))
    return "".join(text), calls


def _roles(history: list[Any]) -> list[str]:
    """The roles of a history, consecutive equal roles counted once (one turn)."""
    out: list[str] = []
    for content in history:
        if not out or out[-1] != content.role:
            out.append(content.role)
    return out


def _answers(calls: list[tuple[str, Any]]) -> list[Any] | str:
    """The second user message: a function response per call of the first turn, else text."""
    if not calls:
        return "and then?"
    return [genai.Part.from_function_response(name=name, response={"ok": True}) for name, _ in calls]


@pytest.mark.parametrize("path", UPSTREAMS)
async def test_chat_helper_keeps_history_across_two_turns(path: Path) -> None:
    upstream = RecordingUpstream(path)
    app = create_app(upstream=upstream)
    chat = genai_client(app).aio.chats.create(model="any-model")
    text, calls = _turn(path)
    with anyio.fail_after(LIMIT):
        async for _ in await chat.send_message_stream("hi"):
            pass
        first = list(chat.get_history(curated=True))
        async for _ in await chat.send_message_stream(_answers(calls)):
            pass
    # The SDK kept both turns (it leaves out a turn with a content-less chunk).
    assert _roles(first) == ["user", "model"]
    assert _roles(chat.get_history(curated=True)) == ["user", "model", "user", "model"]
    assert app.stats.rejected == 0
    # The upstream's second request holds the first turn as ONE assistant turn with its answer.
    assert len(upstream.requests) == 2
    sent = ms.to_canonical(upstream.requests[1], upstream.protocol)
    # One turn: consecutive assistant messages (a Responses turn is one message per item).
    assert [r for r in _roles(sent) if r != "system"][:2] == ["user", "assistant"]
    assert _roles(sent).count("assistant") == 1
    parts = [p for m in sent if m.role == "assistant" for p in _content(m)]
    assert "".join(p.text for p in parts if isinstance(p, ms.TextPart)) == text
    sent_calls = [(p.name, json.loads(p.arguments or "{}")) for p in parts if isinstance(p, ms.ToolCallPart)]
    assert sent_calls == calls
    results = [p for m in sent for p in _content(m) if isinstance(p, ms.ToolResultPart)]
    assert len(results) == len(calls)


def _content(message: ms.Message) -> list[ms.Part]:
    content = message.content
    return [ms.TextPart(text=content)] if isinstance(content, str) else list(content)


# ---------------------------------------------------------------------- every stream, every chunk

SOURCES = [
    pytest.param(p, id=f"{name}/{p.name}")
    for name in ("openai-chat", "openai-responses", "anthropic", "gemini")
    for p in [*recordings(name), *corpus(name)]
]


@pytest.mark.parametrize("path", SOURCES)
def test_every_candidate_chunk_carries_content(path: Path) -> None:
    """Every chunk the Gemini encoder writes for a candidate has content with parts; a chunk
    without candidates comes only when no candidate was ever written (a blocked prompt) or the
    stream ended without a finish (cut, error)."""
    try:
        out = ms.convert(path.read_bytes(), to="gemini")
    except ms.MaasStreamError:
        pytest.skip("not convertible to gemini")
    chunks = [json.loads(f[6:]) for f in out.split(b"\r\n\r\n") if f.startswith(b"data: ")]
    finished = False
    for chunk in chunks:
        for cand in chunk.get("candidates", []):
            assert cand.get("content", {}).get("parts"), chunk
            finished = finished or "finishReason" in cand
        if "candidates" not in chunk and "error" not in chunk and finished:
            # Usage after the finish rides on the finish chunk, never on a chunk of its own.
            raise AssertionError(f"candidate-less chunk after the finish: {chunk}")


def test_usage_after_the_finish_rides_on_the_finish_chunk() -> None:
    """A Chat stream's usage-only chunk (after the finish_reason chunk) is no Gemini chunk of its own."""
    enc = gemini.StreamEncoder()
    agg = ms.Aggregator("openai-chat", emit=True)
    source: list[ev.Event] = [
        ev.ResponseStart(protocol="openai-chat", id="r"),
        ev.MessageStart(message=0, role="assistant", choice_index=0),
        ev.PartStart(message=0, part=0, value=ms.TextPart(text="")),
        ev.TextDelta(message=0, part=0, text="hi"),
        ev.PartDone(message=0, part=0),
        ev.MessageDone(message=0, finish_reason="stop"),
        ev.UsageUpdate(usage=ms.Usage(input_tokens=3, output_tokens=1)),
        ev.ResponseDone(finish_reason="stop"),
    ]
    out = b"".join(enc.encode(c) for e in source for c in agg.feed(e))
    out += b"".join(enc.encode(c) for c in agg.finish_events()) + enc.finish()
    chunks = [json.loads(f[6:]) for f in out.split(b"\r\n\r\n") if f.startswith(b"data: ")]
    assert [c["candidates"][0]["content"]["parts"] for c in chunks] == [[{"text": "hi"}], [{"text": ""}]]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] == 3
