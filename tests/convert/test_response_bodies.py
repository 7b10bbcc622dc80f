"""Non-streaming response bodies (``ms.encode_response``), judged by the official SDKs' models.

Every recording and corpus stream of the four SSE protocols is aggregated and encoded as each
of the four non-streaming bodies. The target SDK's response model must accept the body, and it
must carry the same text and client function calls (names, parsed arguments, ids where the target
has ids) as the aggregate, restricted to what the target can carry (as in ``test_matrix``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anthropic.types
import anthropic.types.beta
import msgspec
import openai.types.chat
import openai.types.responses
import pydantic
import pytest
from google.genai import types as genai

import maas_stream as ms
from maas_stream.sse import Decoder
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTOCOLS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
SINGLE_CHOICE = {"anthropic", "openai-responses"}
SYNTH_ID = "maas_gc_"
BETA_BLOCKS = {"mcp_tool_use", "mcp_tool_result", "compaction"}

Call = tuple[str | None, str, Any]
Seen = tuple[dict[int, str], list[Call]]


def cases() -> list[Any]:
    return [
        pytest.param(src, path, tgt, id=f"{src}/{path.parent.parent.name[:3]}/{path.name}->{tgt}")
        for src in PROTOCOLS
        for path in recordings(src) + corpus(src)
        for tgt in PROTOCOLS
    ]


def parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments


# ---------------------------------------------------------------------- what the SDK model sees


def seen_chat(body: dict[str, Any]) -> Seen:
    model = openai.types.chat.ChatCompletion.model_validate(body)
    texts: dict[int, str] = {}
    calls: list[Call] = []
    for choice in model.choices:
        texts[choice.index] = choice.message.content or ""
        legacy = choice.message.function_call
        if legacy is not None:
            calls.append((None, legacy.name, parsed(legacy.arguments)))
        for call in choice.message.tool_calls or ():
            if call.type == "function":
                calls.append((call.id, call.function.name, parsed(call.function.arguments)))
            else:
                calls.append((call.id, call.custom.name, call.custom.input))
    return texts, calls


def seen_responses(body: dict[str, Any]) -> Seen:
    model = openai.types.responses.Response.model_validate(body)
    return _responses_output([item.model_dump() for item in model.output])


def _responses_output(items: list[dict[str, Any]]) -> Seen:
    text: list[str] = []
    calls: list[Call] = []
    for item in items:
        if item["type"] == "message":
            text += [c["text"] for c in item["content"] if c["type"] == "output_text"]
        elif item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], parsed(item["arguments"])))
        elif item["type"] == "custom_tool_call":
            calls.append((item["call_id"], item["name"], item["input"]))
    return {0: "".join(text)}, calls


def seen_anthropic(body: dict[str, Any]) -> Seen:
    kinds = {b["type"] for b in body["content"]}
    # MCP blocks exist only under the MCP beta: the SDK models them in BetaMessage.
    cls: Any = anthropic.types.beta.BetaMessage if kinds & BETA_BLOCKS else anthropic.types.Message
    model = cls.model_validate(body)
    text = "".join(b.text for b in model.content if b.type == "text")
    calls: list[Call] = [(b.id, b.name, b.input) for b in model.content if b.type == "tool_use"]
    return {0: text}, calls


def seen_gemini(body: dict[str, Any]) -> Seen:
    model = genai.GenerateContentResponse.model_validate(body)
    texts: dict[int, str] = {}
    calls: list[Call] = []
    for i, cand in enumerate(model.candidates or ()):
        index = cand.index if cand.index is not None else i
        parts = cand.content.parts or [] if cand.content is not None else []
        texts[index] = "".join(p.text for p in parts if p.text is not None and not p.thought)
        for p in parts:
            if p.function_call is not None:
                calls.append((p.function_call.id, p.function_call.name or "", p.function_call.args or {}))
    return texts, calls


SEEN = {
    "openai-chat": seen_chat,
    "openai-responses": seen_responses,
    "anthropic": seen_anthropic,
    "gemini": seen_gemini,
}


# ---------------------------------------------------------------------- what the target can carry


def expected(resp: ms.Response, source: str, target: str) -> Seen:
    texts: dict[int, str] = {}
    calls: list[Call] = []
    for m in resp.messages:
        if m.role != "assistant" or not isinstance(m.content, list):
            continue
        index = m.choice_index or 0
        if index and target in SINGLE_CHOICE:
            continue
        kinds: tuple[type[Any], ...] = (
            (ms.TextPart, ms.RefusalPart) if target == "anthropic" else (ms.TextPart,)
        )
        text = "".join(p.text for p in m.content if isinstance(p, kinds))
        texts[index] = texts.get(index, "") + text
        for p in m.content:
            if not isinstance(p, ms.ToolCallPart) or p.kind not in ("function", "custom"):
                continue
            args = parsed(p.arguments)
            if target == "gemini" and not isinstance(args, dict):
                continue  # Gemini takes a JSON object: the call is dropped (reported)
            if target == "anthropic" and p.kind == "custom":
                continue
            if target == "anthropic" and not isinstance(args, dict):
                args = {}  # reported in lossy: Anthropic's tool input is an object
            call_id = None if target == "gemini" and p.id.startswith(SYNTH_ID) else p.id
            if p.item_id == "function_call" and source == target == "openai-chat":
                call_id = None  # a legacy function_call has no id
            calls.append((call_id, p.name, args if p.kind == "function" else p.arguments))
    return texts, calls


CLIENT_ENTRIES = {"text", "tool_use", "thinking", "message", "function_call", "custom_tool_call"}


def _fits(adapter: pydantic.TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except pydantic.ValidationError:
        return False
    return True


def pruned(body: dict[str, Any], target: str) -> dict[str, Any]:
    """A same-protocol body less what the installed SDK has no model for yet (verbatim provider
    blocks, items, parts or usage keys newer than the SDK). Nothing the client acts on may go."""
    body = dict(body)
    if target == "anthropic":
        beta = {b["type"] for b in body["content"]} & BETA_BLOCKS
        block: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(
            anthropic.types.beta.BetaContentBlock if beta else anthropic.types.ContentBlock
        )
        kept = [b for b in body["content"] if _fits(block, b)]
        assert all(b["type"] not in CLIENT_ENTRIES for b in body["content"] if b not in kept)
        body["content"] = kept
        usage = body["usage"]
        body["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}
    elif target == "openai-responses":
        item = pydantic.TypeAdapter(openai.types.responses.ResponseOutputItem)
        kept = [i for i in body["output"] if _fits(item, i)]
        assert all(i["type"] not in CLIENT_ENTRIES for i in body["output"] if i not in kept)
        body["output"] = kept
    elif target == "gemini":
        part = pydantic.TypeAdapter(genai.Part)
        candidates = []
        for cand in body["candidates"]:
            parts = cand["content"]["parts"]
            kept = [p for p in parts if _fits(part, p)]
            assert all("text" not in p and "functionCall" not in p for p in parts if p not in kept)
            candidates.append({**cand, "content": {**cand["content"], "parts": kept}})
        body["candidates"] = candidates
        if "usageMetadata" in body:
            fields = genai.GenerateContentResponseUsageMetadata.model_fields
            known = {f.alias or n for n, f in fields.items()} | set(fields)
            body["usageMetadata"] = {k: v for k, v in body["usageMetadata"].items() if k in known}
    return body


def seen_of(body: dict[str, Any], resp: ms.Response, target: str) -> Seen:
    try:
        return SEEN[target](body)
    except pydantic.ValidationError:
        if resp.protocol != target:
            raise
    return SEEN[target](pruned(body, target))


def bad_media(resp: ms.Response) -> bool:
    """A media part whose base64 the corpus recorder truncated (``...`` in the middle)."""
    return any(
        isinstance(p, ms.ImagePart | ms.AudioPart) and "..." in (p.data or "")
        for m in resp.messages
        for p in (m.content if isinstance(m.content, list) else ())
    )


def same_texts(seen: dict[int, str], want: dict[int, str], target: str) -> None:
    if target in SINGLE_CHOICE or not want:
        assert "".join(seen.values()) == "".join(want.values())
    else:
        assert {k: v for k, v in seen.items() if v} == {k: v for k, v in want.items() if v}


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns on item types an SDK lacks
@pytest.mark.parametrize(("source", "path", "target"), cases())
def test_body_validates_and_carries_the_aggregate(source: str, path: Path, target: str) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol=source)
    lossy: list[ms.Dropped] = []
    body = ms.encode_response(resp, target, lossy=lossy)
    msgspec.json.encode(body)  # plain JSON
    if target == "gemini" and bad_media(resp):
        with pytest.raises(pydantic.ValidationError):
            SEEN[target](body)
        return
    texts, calls = seen_of(body, resp, target)
    want_texts, want_calls = expected(resp, source, target)
    same_texts(texts, want_texts, target)
    assert [c[1:] for c in calls] == [c[1:] for c in want_calls]
    assert [c[0] for c in calls] == [c[0] for c in want_calls]
    if target != source and any(
        isinstance(p, ms.ToolCallPart) and p.kind == "server"
        for m in resp.messages
        for p in (m.content if isinstance(m.content, list) else ())
    ):
        assert any("tool call" in line for line in map(str, lossy))
    if target == "openai-chat" and source != target:
        if any(isinstance(p, ms.ReasoningPart) for m in resp.messages for p in m.content):
            assert any("reasoning" in line for line in map(str, lossy))


def completed_output(path: Path) -> list[dict[str, Any]] | None:
    decoder = Decoder()
    for event in decoder.feed(path.read_bytes() + b"\n\n"):
        if event.data.startswith("{"):
            payload = json.loads(event.data)
            if payload.get("type") == "response.completed":
                output: list[dict[str, Any]] = payload["response"]["output"]
                return output
    return None


SNAPSHOTS = [p for p in recordings("openai-responses") + corpus("openai-responses") if completed_output(p)]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in SNAPSHOTS])
def test_responses_body_agrees_with_the_completed_snapshot(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol="openai-responses")
    body = ms.encode_response(resp, "openai-responses")
    snapshot = completed_output(path)
    assert snapshot is not None
    assert snapshot
    assert _responses_output(body["output"]) == _responses_output(snapshot)
    assert [(i["type"], i.get("id")) for i in body["output"]] == [(i["type"], i.get("id")) for i in snapshot]


def test_websocket_protocols_have_no_body() -> None:
    with pytest.raises(ms.LocalProtocolError, match="non-streaming"):
        ms.encode_response(ms.Response(protocol="google-live", status="completed"), "google-live")


def test_registry_wires_the_four_sse_protocols() -> None:
    for name in PROTOCOLS:
        assert ms.get_protocol(name).encode_response is not None


SECRET = "private chain of thought 7f3a"


@pytest.mark.parametrize("target", PROTOCOLS)
def test_foreign_reasoning_and_server_calls_are_dropped_and_reported(target: str) -> None:
    source = "gemini" if target != "gemini" else "openai-chat"
    resp = ms.Response(
        protocol=source,
        status="completed",
        finish_reason="stop",
        messages=[
            ms.Message(
                role="assistant",
                content=[
                    ms.ReasoningPart(text=SECRET, signature="sig-from-elsewhere"),
                    ms.ToolCallPart(id="srv_1", name="web_search", arguments="{}", kind="server"),
                    ms.TextPart(text="answer"),
                    ms.ToolCallPart(id="call_1", name="f", arguments='{"a": 1}'),
                ],
            )
        ],
    )
    lossy: list[ms.Dropped] = []
    body = ms.encode_response(resp, target, lossy=lossy)
    texts, calls = SEEN[target](body)
    assert "".join(texts.values()) == "answer"  # reasoning never becomes text
    assert [c[1:] for c in calls] == [("f", {"a": 1})]  # the server call is no client call
    assert any("server tool call 'web_search'" in line for line in map(str, lossy))
    assert any("signature" in line or "reasoning" in line for line in map(str, lossy))
    if target in ("openai-chat", "openai-responses"):
        assert SECRET not in json.dumps(body)
