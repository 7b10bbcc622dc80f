"""Non-streaming response bodies (``ms.encode_response``), judged by the official SDKs' models
(read through :data:`tests.oracles.BODIES`; this module imports no SDK).

Every recording and corpus stream of the four SSE protocols is aggregated and encoded as each
of the four non-streaming bodies. The target SDK's response model must accept the body, and it
must carry the same text and client function calls (names, parsed arguments, ids where the target
has ids) as the aggregate, restricted to what the target can carry (as in ``test_matrix``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pydantic
import pytest

import maas_stream as ms
from maas_stream.sse import Decoder
from tests.conftest import corpus, recordings
from tests.oracles import BODIES as SEEN
from tests.oracles import BodySeen as Seen
from tests.oracles import Call, parsed, pruned
from tests.oracles import responses_output as _responses_output

if TYPE_CHECKING:
    from pathlib import Path

PROTOCOLS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
SINGLE_CHOICE = {"anthropic", "openai-responses"}
SYNTH_ID = "maas_gc_"


def cases() -> list[Any]:
    return [
        pytest.param(src, path, tgt, id=f"{src}/{path.parent.parent.name[:3]}/{path.name}->{tgt}")
        for src in PROTOCOLS
        for path in recordings(src) + corpus(src)
        for tgt in PROTOCOLS
    ]


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
            (ms.TextPart, ms.RefusalPart) if target in ("anthropic", "gemini") else (ms.TextPart,)
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
