"""Anthropic non-streaming bodies: ``decode_response`` against the aggregate, the SDK's model as
oracle, and one rendering: the body and the stream encoder write the same blocks, usage, stop
reason and drops for the same response."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
import msgspec
import pydantic
import pytest
from anthropic.lib.streaming._beta_messages import accumulate_event

import maas_stream as ms
from maas_stream._drops import DROP_KINDS, DropLog
from maas_stream.protocols.anthropic import StreamEncoder, decode_response, encode_response, from_canonical
from maas_stream.sse import Decoder
from tests.conftest import corpus, need_corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

ANTHROPIC = params(recordings("anthropic")) + need_corpus("anthropic")
SSE_SOURCES = [
    pytest.param(path, id=f"{proto}/{path.parent.parent.name[:3]}/{path.name}")
    for proto in ("anthropic", "openai-chat", "openai-responses", "gemini", "google-interactions")
    for path in recordings(proto) + corpus(proto)
]


def _payloads(data: bytes) -> list[tuple[str, Any]]:
    dec = Decoder()
    return [(e.event, json.loads(e.data)) for e in dec.feed(data) + dec.finish() if e.data.strip()]


def _parts(resp: ms.Response) -> list[ms.Part]:
    return [
        p
        for m in resp.messages
        if m.role == "assistant" and m.choice_index in (None, 0) and isinstance(m.content, list)
        for p in m.content
    ]


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments  # custom tools and some server calls: free text


def _calls(resp: ms.Response) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for p in _parts(resp):
        if isinstance(p, ms.ToolCallPart):
            args: Any = _parsed(p.arguments) if p.status == "completed" else None
            out.append((p.id, p.name, p.kind, p.status, args))
    return out


def _thinking(resp: ms.Response) -> list[tuple[Any, ...]]:
    return [
        (p.text or "", p.signature, bool(p.redacted), p.data)
        for p in _parts(resp)
        if isinstance(p, ms.ReasoningPart)
    ]


def _usage(resp: ms.Response) -> tuple[Any, ...] | None:
    u = resp.usage
    if u is None:
        return None
    return (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens)


# ---------------------------------------------------------------------- decode_response


@pytest.mark.parametrize("path", ANTHROPIC)
def test_decode_response_reads_back_the_aggregate(path: Path) -> None:
    source = ms.aggregate(path.read_bytes(), protocol="anthropic")
    body = encode_response(source)
    back = decode_response(body)
    if source.status == "failed":
        # A failed response has no message body: the API answers with an error body instead.
        assert source.error is not None
        failed = decode_response({"type": "error", "error": {"type": source.error.type, "message": "x"}})
        assert (failed.status, failed.finish_reason) == ("failed", "error")
        assert failed.error is not None
        assert failed.error.type == source.error.type
        return
    text = "".join(p.text for p in _parts(source) if isinstance(p, ms.TextPart))
    assert "".join(p.text for p in _parts(back) if isinstance(p, ms.TextPart)) == text
    assert _calls(back) == _calls(source)
    assert _thinking(back) == _thinking(source)
    assert (back.finish_reason, back.provider_finish_reason) == (
        source.finish_reason,
        source.provider_finish_reason,
    )
    assert back.status == source.status
    assert _usage(back) == _usage(source)
    assert (back.id, back.model) == (source.id, source.model)
    blocks = {  # unknown block types (unknown deltas and events have no place in a body)
        p.provider_type
        for p in _parts(source)
        if isinstance(p, ms.UnknownPart) and isinstance(p.raw, dict) and p.raw.get("type") == p.provider_type
    }
    assert back.unknown == {k: v for k, v in source.unknown.items() if k in blocks}
    (message,) = back.messages
    assert message.provider == "anthropic"  # its signatures may be replayed to Anthropic


def _sdk_message(body: dict[str, Any], source: ms.Response) -> Any:
    """The SDK's model of the body, less what the installed SDK has no model for yet (blocks of
    unknown type and a verbatim usage object newer than the SDK), which must be nothing a
    client acts on."""
    block = pydantic.TypeAdapter(anthropic.types.beta.BetaContentBlock)
    content = []
    for b in body["content"]:
        try:
            block.validate_python(b)
        except pydantic.ValidationError:
            assert b["type"] in source.unknown, b["type"]
            continue
        content.append(b)
    try:
        return anthropic.types.beta.BetaMessage.model_validate({**body, "content": content})
    except pydantic.ValidationError:
        assert source.protocol == "anthropic"  # verbatim provider usage
        usage = {k: body["usage"][k] for k in ("input_tokens", "output_tokens")}
        return anthropic.types.beta.BetaMessage.model_validate({**body, "content": content, "usage": usage})


@pytest.mark.parametrize("path", SSE_SOURCES)
def test_body_is_accepted_by_the_sdk_model(path: Path) -> None:
    source = ms.aggregate(path.read_bytes())
    body = encode_response(source)
    model = _sdk_message(body, source)
    assert model.stop_reason == body["stop_reason"]
    assert [b.id for b in model.content if b.type == "tool_use"] == [
        c[0] for c in _calls(source) if c[2] == "function"
    ]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        pytest.param(b"{not json", "not JSON", id="not-json"),
        pytest.param([], "must be an object", id="not-object"),
        pytest.param({"type": "completion"}, "expected 'message'", id="other-type"),
        pytest.param({"type": "message", "content": {}}, "'content' must be a list", id="content-object"),
        pytest.param({"type": "message", "content": [5]}, "must be an object", id="block-not-object"),
        pytest.param({"type": "message", "content": [{"type": 3}]}, "type must be a string", id="block-type"),
        pytest.param(
            {"type": "message", "content": [{"type": "text", "text": ["a"]}]}, "'text' must be", id="text"
        ),
        pytest.param({"type": "message", "id": 7}, "'id' must be a string", id="id"),
        pytest.param({"type": "message", "stop_reason": 1}, "'stop_reason' must be", id="stop-reason"),
        pytest.param({"type": "message", "usage": {"input_tokens": "3"}}, "integer", id="usage-count"),
        pytest.param({"type": "message", "usage": []}, "usage must be an object", id="usage-list"),
    ],
)
def test_decode_response_rejects_bad_bodies_with_remote_protocol_error(body: Any, needle: str) -> None:
    with pytest.raises(ms.RemoteProtocolError, match=needle) as info:
        decode_response(body)
    assert info.value.protocol == "anthropic"


def test_decode_response_cut_by_max_tokens_in_a_tool_call() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
            {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}},
        ],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 2},
    }
    resp = decode_response(msgspec.json.encode(body))
    assert (resp.status, resp.finish_reason, resp.provider_finish_reason) == (
        "incomplete",
        "length",
        "max_tokens",
    )
    assert [c[3] for c in _calls(resp)] == ["completed", "incomplete"]  # the trailing one may be cut
    assert _usage(resp) == (5 + 2, 7, 2, None, None)  # the prompt counts the cache read
    assert encode_response(resp)["content"] == body["content"]


# ---------------------------------------------------------------------- one rendering


def _sdk_accumulate(data: bytes) -> Any:
    snapshot: Any = None
    bufs: dict[int, bytes] = {}
    for name, payload in _payloads(data):
        if name not in ("ping", "error"):
            snapshot = accumulate_event(
                event=payload, current_snapshot=snapshot, json_bufs=bufs, request_headers=httpx2.Headers()
            )
    return snapshot


def _last(data: bytes) -> tuple[Any, Any]:
    """The usage and stop reason a client of the stream ends up with (last written)."""
    usage: Any = None
    stop: Any = None
    for name, payload in _payloads(data):
        if name == "message_start":
            usage = payload["message"]["usage"]
        elif name == "message_delta":
            usage, stop = payload["usage"], payload["delta"]["stop_reason"]
    return usage, stop


_BODY_ONLY = ("(only a stream has deltas)", "(a message body has no events)", "(sent as {})")
"""Drops only a body makes: it has no deltas or events, and a cut call's partial JSON is no object."""


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("path", SSE_SOURCES)
def test_stream_and_body_write_the_same_response(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data)
    body_drops = DropLog("anthropic", source.protocol)
    body = encode_response(source, drops=body_drops)
    conv = ms.StreamConverter("anthropic", fail_closed=False)
    out = conv.feed(data) + conv.finish()
    # Usage and stop reason: one function each, so the same values.
    usage, stop = _last(out)
    assert usage == body["usage"]
    assert stop == body["stop_reason"]
    # Blocks: what the SDK accumulates from the stream is the body's content.
    snapshot = _sdk_accumulate(out)
    streamed = [b.to_dict() for b in snapshot.content] if snapshot is not None else []
    cut = {c[0] for c in _calls(source) if c[3] == "incomplete"}
    assert len(streamed) == len(body["content"])
    for got, want in zip(streamed, body["content"], strict=True):
        if want.get("id") in cut:  # partial JSON: the stream has a prefix, the body none
            assert (got["id"], got["name"]) == (want["id"], want["name"])
        else:
            assert got == want
    # Drops: the same records, bar what only one of the two forms lacks.
    stream_keys = {(r.kind, r.what) for r in conv.lossy}
    body_keys = {(r.kind, r.what) for r in body_drops.records if not r.what.endswith(_BODY_ONLY)}
    assert stream_keys == body_keys


def _ids(resp: ms.Response) -> set[str]:
    found = {resp.id} if resp.id else set()
    for m in resp.messages:
        found |= {m.id} if m.id else set()
        for p in m.content if isinstance(m.content, list) else ():
            for name in ("id", "item_id", "tool_call_id"):
                value = getattr(p, name, None)
                if isinstance(value, str) and len(value) > 3:
                    found.add(value)
    return found


@pytest.mark.parametrize("path", SSE_SOURCES)
def test_drops_have_stable_kinds_and_no_ids(path: Path) -> None:
    data = path.read_bytes()
    source = ms.aggregate(data)
    drops = DropLog("anthropic", source.protocol)
    encode_response(source, drops=drops)
    conv = ms.StreamConverter("anthropic", fail_closed=False)
    conv.feed(data)
    conv.finish()
    ids = _ids(source)
    for rec in [*drops.records, *conv.lossy]:
        assert rec.kind in DROP_KINDS
        assert rec.target == "anthropic"
        assert rec.source == source.protocol
        assert not [i for i in ids if i in rec.what], rec
    assert len({(r.kind, r.what) for r in conv.lossy}) == len(conv.lossy)  # once per kind and what


# ---------------------------------------------------------------------- replay of continuation state


def _signed() -> list[ms.Part]:
    return [
        ms.ReasoningPart(text="plan", signature="EqQBsig=="),
        ms.ReasoningPart(redacted=True, data="EmwKredacted"),
        ms.TextPart(text="answer"),
    ]


@pytest.mark.parametrize(("origin", "kept"), [("anthropic", True), ("gemini", False), ("openai-chat", False)])
def test_body_replays_signatures_only_to_their_maker(origin: str, kept: bool) -> None:
    resp = ms.Response(
        protocol=origin, status="completed", messages=[ms.Message(role="assistant", content=_signed())]
    )
    drops = DropLog("anthropic", origin)
    body = encode_response(resp, drops=drops)
    dumped = json.dumps(body)
    assert ("EqQBsig==" in dumped, "EmwKredacted" in dumped) == (kept, kept)
    assert {r.kind for r in drops.records} == (set() if kept else {"signature", "encrypted_reasoning"})
    assert body["content"][0]["thinking"] == "plan"  # the text stays thinking, never text
    assert body["stop_reason"] == "end_turn"


@pytest.mark.parametrize(("provider", "kept"), [("anthropic", True), ("gemini", False), (None, False)])
def test_history_replays_thinking_only_to_its_maker(provider: str | None, kept: bool) -> None:
    messages = [
        ms.Message(role="user", content="hi"),
        ms.Message(role="assistant", provider=provider, content=_signed()),
    ]
    drops = DropLog("anthropic")
    body = from_canonical(messages, drops=drops)
    types = [b["type"] for b in body["messages"][1]["content"]]
    assert types == (["thinking", "redacted_thinking", "text"] if kept else ["text"])
    assert all(r.where == ("messages[1]",) for r in drops.records)
    assert bool(drops) != kept


def test_stream_replays_signatures_by_its_source_protocol() -> None:
    from maas_stream import events as ev

    def run(protocol: str) -> tuple[bytes, list[ms.Dropped]]:
        enc = StreamEncoder()
        stream: list[ev.Event] = [
            ev.ResponseStart(protocol=protocol, id="r", model="m"),
            ev.MessageStart(message=0),
            ev.PartStart(message=0, part=0, value=ms.ReasoningPart(text="")),
            ev.ReasoningDelta(message=0, part=0, text="plan"),
            ev.SignatureDelta(message=0, part=0, signature="EqQBsig=="),
            ev.PartDone(message=0, part=0, value=ms.ReasoningPart(text="plan", signature="EqQBsig==")),
            ev.MessageDone(message=0, finish_reason="stop"),
            ev.ResponseDone(),
        ]
        return b"".join(enc.encode(e) for e in stream) + enc.finish(), enc.lossy

    same, none = run("anthropic")
    assert b"EqQBsig==" in same
    assert none == []
    other, dropped = run("gemini")
    assert b"EqQBsig==" not in other
    assert b'"thinking":"plan"' in other
    assert [(r.kind, r.count, r.source) for r in dropped] == [("signature", 1, "gemini")]
