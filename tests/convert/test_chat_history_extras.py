"""Two Chat history rules of issue 13: media of tool results move, compatible reasoning replays.

* Chat tool messages carry text only: an image (audio, file) a tool returned (Claude Code
  ``Read``, Codex ``view_image``) travels in a user message right after the run of tool
  messages, named by the call id, and the tool message says so. Never an empty tool message,
  never a silent loss.
* OpenAI-compatible servers (DeepSeek ``reasoning_content``, OpenRouter ``reasoning_details``)
  require their reasoning back on tool-call turns: read as reasoning of provider
  ``openai-chat``, written back to Chat only (the replay rule), and kept by the stream decoder.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import maas_stream as ms
from maas_stream.protocols import openai_chat
from tests.conftest import CORPUS, chat_chunk, parts
from tests.oracles import chat_request

PNG = "iVBORw0KGgoAAAANSUhEUg=="


def sdk_accepts(body: dict[str, Any]) -> None:
    """The openai SDK's request type reads every message (types, roles, parts)."""
    request = {"model": "m", "stream": True, **body}
    kept = chat_request(request)
    assert len(kept["messages"]) == len(body["messages"])


# ---------------------------------------------------------------------- media in tool results

ANTHROPIC_BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "messages": [
        {"role": "user", "content": "Read both files."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.png"}},
                {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"path": "b.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [
                        {"type": "text", "text": "a.png (1 KB)"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                        },
                    ],
                },
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "hello"},
                {"type": "text", "text": "Describe the image."},
            ],
        },
    ],
}


def test_an_image_a_tool_returned_moves_to_a_user_message_after_the_tool_run() -> None:
    lossy: list[ms.Dropped] = []
    body = ms.convert_history(ANTHROPIC_BODY, to="openai-chat", protocol="anthropic", lossy=lossy)
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user", "user"]
    first, second, moved, text = messages[2:]
    assert first["tool_call_id"] == "toolu_1"
    assert first["content"] == [
        {"type": "text", "text": "a.png (1 KB)"},
        {"type": "text", "text": "[image output of this tool call follows in the next user message]"},
    ]
    assert second == {"role": "tool", "tool_call_id": "toolu_2", "content": "hello"}
    assert moved["content"] == [
        {"type": "text", "text": "Output of tool call toolu_1 (image):"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
    assert text == {"role": "user", "content": "Describe the image."}
    assert lossy == []  # moved, not lost
    assert ms.validate(body, "openai-chat") == []
    sdk_accepts(body)


def result_message(call: str, *content: ms.Part) -> ms.Message:
    return ms.Message(
        role="tool", tool_call_id=call, content=[ms.ToolResultPart(tool_call_id=call, content=list(content))]
    )


def test_media_wait_for_the_end_of_a_run_of_separate_tool_messages() -> None:
    """Responses ``function_call_output`` items are one canonical message each: the run stays whole."""
    messages = [
        ms.Message(
            role="assistant",
            content=[
                ms.ToolCallPart(id="c1", name="view_image", arguments="{}"),
                ms.ToolCallPart(id="c2", name="listen", arguments="{}"),
                ms.ToolCallPart(id="c3", name="fetch", arguments="{}"),
            ],
        ),
        result_message("c1", ms.ImagePart(url="https://example.com/a.png", detail="high")),
        result_message("c2", ms.AudioPart(data="UklGRg==", format="wav")),
        result_message("c3", ms.FilePart(data="JVBERi0=", filename="r.pdf"), ms.TextPart(text="report")),
    ]
    drops = ms.DropLog("openai-chat")
    body = openai_chat.from_canonical(messages, drops=drops)
    out = body["messages"]
    assert [m["role"] for m in out] == ["assistant", "tool", "tool", "tool", "user"]
    assert out[1]["content"] == [
        {"type": "text", "text": "[image output of this tool call follows in the next user message]"}
    ]
    assert out[3]["content"][0] == {"type": "text", "text": "report"}
    assert out[4]["content"] == [
        {"type": "text", "text": "Output of tool call c1 (image):"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
        {"type": "text", "text": "Output of tool call c2 (audio):"},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "text", "text": "Output of tool call c3 (file):"},
        {"type": "file", "file": {"file_data": "JVBERi0=", "filename": "r.pdf"}},
    ]
    assert drops.records == []
    assert ms.validate(body, "openai-chat") == []
    sdk_accepts(body)


def test_a_medium_with_no_place_anywhere_is_reported_and_the_tool_message_says_nothing_of_it() -> None:
    drops = ms.DropLog("openai-chat", "openai-responses")
    messages = [
        ms.Message(role="assistant", content=[ms.ToolCallPart(id="c1", name="f", arguments="{}")]),
        result_message("c1", ms.TextPart(text="done"), ms.ImagePart(file_id="file-1")),
        ms.Message(role="user", content="next"),
    ]
    body = openai_chat.from_canonical(messages, drops=drops)
    assert body["messages"][1]["content"] == [{"type": "text", "text": "done"}]
    assert [m["role"] for m in body["messages"]] == ["assistant", "tool", "user"]
    assert [(r.kind, r.where) for r in drops.records] == [("media", ("messages[1]",))]


def test_media_of_the_last_results_close_the_conversation() -> None:
    messages = [
        ms.Message(role="assistant", content=[ms.ToolCallPart(id="c1", name="f", arguments="{}")]),
        result_message("c1", ms.ImagePart(data=PNG, media_type="image/png")),
    ]
    out = openai_chat.from_canonical(messages)["messages"]
    assert [m["role"] for m in out] == ["assistant", "tool", "user"]
    assert out[-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }


# ---------------------------------------------------------------------- compatible reasoning

DEEPSEEK_BODY: dict[str, Any] = {
    "model": "deepseek-reasoner",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "The user wants the weather; call the tool.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
    ],
}


def test_reasoning_content_is_read_as_chat_reasoning() -> None:
    messages = ms.to_canonical(DEEPSEEK_BODY, "openai-chat")
    assistant = messages[1]
    assert assistant.provider == "openai-chat"
    assert parts(assistant)[0] == ms.ReasoningPart(
        text="The user wants the weather; call the tool.", origin_field="reasoning_content"
    )
    assert [type(p) for p in parts(assistant)] == [ms.ReasoningPart, ms.TextPart, ms.ToolCallPart]
    assert {m.provider for m in messages} == {"openai-chat"}


def test_reasoning_content_goes_back_to_a_chat_upstream_on_the_tool_call_turn() -> None:
    lossy: list[ms.Dropped] = []
    body = ms.convert_history(
        copy.deepcopy(DEEPSEEK_BODY), to="openai-chat", protocol="openai-chat", lossy=lossy
    )
    assistant = body["messages"][1]
    assert assistant["reasoning_content"] == "The user wants the weather; call the tool."
    assert assistant["tool_calls"] == DEEPSEEK_BODY["messages"][1]["tool_calls"]
    assert lossy == []
    assert ms.validate(body, "openai-chat") == []


def test_chat_reasoning_is_not_sent_to_another_protocol_as_its_own() -> None:
    lossy: list[ms.Dropped] = []
    body = ms.convert_history(
        copy.deepcopy(DEEPSEEK_BODY), to="anthropic", protocol="openai-chat", lossy=lossy
    )
    assert "thinking" not in json.dumps(body)
    assert "reasoning" in {d.kind for d in lossy}


def test_other_protocols_reasoning_is_not_written_as_reasoning_content() -> None:
    anthropic = {
        "model": "c",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        ],
    }
    lossy: list[ms.Dropped] = []
    body = ms.convert_history(anthropic, to="openai-chat", protocol="anthropic", lossy=lossy)
    assistant = body["messages"][1]
    assert not {"reasoning_content", "reasoning", "reasoning_details"} & set(assistant)
    assert {"reasoning", "signature"} <= {d.kind for d in lossy}


def test_openrouter_reasoning_details_with_encrypted_entries_replay_unchanged() -> None:
    details = [
        {
            "type": "reasoning.text",
            "index": 0,
            "format": "anthropic-claude-v1",
            "text": "think",
            "signature": "s1",
        },
        {"type": "reasoning.encrypted", "index": 1, "format": "anthropic-claude-v1", "data": "opaque"},
    ]
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "reasoning_details": details,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
    }
    lossy: list[ms.Dropped] = []
    out = ms.convert_history(copy.deepcopy(body), to="openai-chat", protocol="openai-chat", lossy=lossy)
    assert out["messages"][1]["reasoning_details"] == details
    assert lossy == []


def test_a_malformed_reasoning_field_is_kept_as_unknown_not_lost() -> None:
    body = {"messages": [{"role": "assistant", "content": "x", "reasoning_content": 5}]}
    message = ms.to_canonical(body, "openai-chat")[0]
    assert parts(message)[0] == ms.UnknownPart(provider_type="reasoning_content", raw=5)


def test_reasoning_alone_cannot_make_an_assistant_message_and_is_reported() -> None:
    messages = [
        ms.Message(role="user", content="hi"),
        ms.Message(
            role="assistant",
            provider="openai-chat",
            content=[ms.ReasoningPart(text="hmm", origin_field="reasoning_content")],
        ),
    ]
    drops = ms.DropLog("openai-chat")
    out = openai_chat.from_canonical(messages, drops=drops)
    assert [m["role"] for m in out["messages"]] == ["user"]
    assert [(r.kind, r.where) for r in drops.records] == [("reasoning", ("messages[1]",))]


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return chat_chunk(delta, finish, model="deepseek-reasoner")


def test_a_streamed_reasoning_content_is_kept_and_replayed_on_the_next_request() -> None:
    """The bridge's second request of a tool loop: the aggregated turn goes back with its reasoning."""
    call = {"index": 0, "id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    stream = b"".join(
        [
            chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
            chunk({"reasoning_content": "Need "}),
            chunk({"reasoning_content": "the tool."}),
            chunk({"tool_calls": [call]}),
            chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )
    response = ms.aggregate(stream, protocol="openai-chat")
    message = response.messages[0]
    reasoning = parts(message)[0]
    assert isinstance(reasoning, ms.ReasoningPart)
    assert (reasoning.text, reasoning.origin_field) == ("Need the tool.", "reasoning_content")
    history = [
        ms.Message(role="user", content="go"),
        message,
        ms.Message(
            role="tool",
            tool_call_id="call_9",
            content=[ms.ToolResultPart(tool_call_id="call_9", content="ok")],
        ),
    ]
    body = openai_chat.from_canonical(history)
    assert body["messages"][1]["reasoning_content"] == "Need the tool."
    assert body["messages"][1]["tool_calls"][0]["id"] == "call_9"
    assert ms.validate(body, "openai-chat") == []


@pytest.mark.skipif(not (CORPUS / "openai-chat").is_dir(), reason=f"corpus not found at {CORPUS}")
def test_the_real_deepseek_stream_keeps_its_reasoning_for_replay() -> None:
    data = (CORPUS / "openai-chat" / "compat_deepseek_reasoning_content.sse").read_bytes()
    message = ms.aggregate(data, protocol="openai-chat").messages[0]
    streamed = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("reasoning_content") or ""
        for line in data.decode().splitlines()
        if line.startswith("data: {") and json.loads(line[6:])["choices"]
    )
    assert streamed
    body = openai_chat.from_canonical([ms.Message(role="user", content="q"), message])
    assert body["messages"][1]["reasoning_content"] == streamed
