"""Google Interactions non-streaming bodies: ``encode_response`` / ``decode_response``.

Both run on the package's one mapping, so a body says what the stream says: for every
recording and corpus stream, ``decode_response(encode_response(aggregate(x)))`` agrees with
``aggregate(x)``; the corpus ``.final.json`` bodies (separate non-streaming calls) read back as
their own JSON says and look like the stream of the same request; and for a source of any SSE
protocol, the body and the stream encoder write the same usage, status, steps and drops.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream import ReasoningPart, TextPart, ToolCallPart, UnknownPart
from maas_stream.protocols import google_interactions as gi
from maas_stream.sse import Decoder
from tests.conftest import corpus, need_corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "google-interactions"
OWN = recordings(PROTO) + corpus(PROTO)
SSE_SOURCES = [
    pytest.param(proto, path, id=f"{proto}/{path.parent.parent.name[:3]}/{path.name}")
    for proto in ms.protocol_names()
    if ms.get_protocol(proto).framing == "sse"
    for path in recordings(proto) + corpus(proto)
]


def view(resp: ms.Response) -> dict[str, Any]:
    """What a body must agree on: text, thoughts (with signatures), calls, finish, status, usage."""
    texts, thoughts, calls, others = [], [], [], []
    for m in resp.messages:
        for p in m.content if isinstance(m.content, list) else [TextPart(text=m.content)]:
            if isinstance(p, TextPart):
                texts.append((m.type, p.text, [c.raw or msgspec.to_builtins(c) for c in p.annotations or ()]))
            elif isinstance(p, ReasoningPart):
                thoughts.append((p.summary, p.text, p.signature))
            elif isinstance(p, ToolCallPart):
                calls.append((p.id, p.name, p.kind, p.arguments, p.signature, p.server_name, p.status))
            else:
                others.append(msgspec.to_builtins(p))
    return {
        "texts": texts,
        "thoughts": thoughts,
        "calls": calls,
        "others": others,
        "status": resp.status,
        "usage": resp.usage,
        "error": resp.error,
        "id": resp.id,
        "model": resp.model,
    }


@pytest.mark.parametrize("path", params(OWN))
def test_decode_of_encode_agrees_with_the_aggregate(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol=PROTO)
    drops = ms.DropLog(PROTO, PROTO)
    body = gi.encode_response(resp, drops=drops)
    assert drops.records == []  # its own protocol: nothing is lost
    text = json.dumps(body)  # plain JSON
    back = gi.decode_response(json.loads(text))
    assert back == gi.decode_response(text.encode())  # the JSON text reads the same
    assert view(back) == view(resp)
    assert [m.type for m in back.messages] == [m.type for m in resp.messages]
    assert back.provider_finish_reason == resp.provider_finish_reason or (
        resp.provider_finish_reason is None and back.provider_finish_reason == body["status"]
    )
    if resp.finish_reason is not None:
        assert back.finish_reason == resp.finish_reason
    else:
        # A cut stream: a body cannot say "cut"; "incomplete" is the nearest it has.
        assert (body["status"], back.finish_reason) == ("incomplete", "length")
    assert back.unknown == resp.unknown
    assert back.provider_raw == resp.provider_raw
    # and the body is what the stream encoder writes at its end
    assert gi.encode_response(back) == body


def completed_of(stream: bytes) -> dict[str, Any] | None:
    """The last ``interaction.completed`` interaction of an SSE stream (stdlib JSON)."""
    last = None
    for event in Decoder().feed(stream + b"\n\n"):
        if event.data.startswith("{"):
            payload = json.loads(event.data)
            if payload.get("event_type") == "interaction.completed":
                last = payload["interaction"]
    return last


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("source", "path"), SSE_SOURCES)
def test_body_and_stream_encoder_write_the_same(source: str, path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data, protocol=source)
    drops = ms.DropLog(PROTO, source)
    body = gi.encode_response(resp, drops=drops)
    conv = ms.StreamConverter(PROTO, protocol=source, fail_closed=False)
    stream = conv.feed(data) + conv.finish()
    assert {(r.kind, r.what) for r in drops.records} == {(r.kind, r.what) for r in conv.lossy}
    assert all(r.source == source for r in drops.records)
    completed = completed_of(stream)
    if completed is not None:  # (a cut source stays cut: no interaction.completed, no usage)
        assert completed.get("usage") == body.get("usage")
        assert completed["status"] == body["status"]
    assert loose(gi.decode_response(body), cut=completed is None) == loose(
        ms.aggregate(stream, protocol=PROTO), cut=completed is None
    )


def loose(resp: ms.Response, *, cut: bool) -> dict[str, Any]:
    """What a stream and a body of the same response must share, whatever the source.

    A stream joins adjacent text parts and a thought's summary items (its deltas do not mark
    where one ends), and a body holds arguments as an object (so JSON text is normalized).
    """
    mine = view(resp)
    texts = [(kind, text) for kind, text, _ in mine["texts"]]
    return {
        "text": "".join(text for _, text in texts),
        "kinds": sorted({kind for kind, _ in texts}),
        "annotations": [a for _, _, annotations in mine["texts"] for a in annotations],
        "thoughts": [("".join(s or ()) + (t or ""), sig) for s, t, sig in mine["thoughts"]],
        "calls": [(i, n, k, parsed(a), sig, srv) for i, n, k, a, sig, srv, _ in mine["calls"]],
        "usage": None if cut else mine["usage"],
        "id": mine["id"],
        "model": mine["model"],
    }


def parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments


# ---------------------------------------------------------------- the corpus final bodies


def _shape(resp: ms.Response) -> list[tuple[Any, ...]]:
    return [
        (m.type, m.role, [(type(p).__name__, getattr(p, "name", None)) for p in m.content])
        for m in resp.messages
        if isinstance(m.content, list)
    ]


@pytest.mark.parametrize("path", need_corpus(PROTO))
def test_final_json_reads_as_its_json_says_and_like_its_stream(path: Path) -> None:
    final = json.loads(path.with_suffix("").with_suffix(".final.json").read_text())
    resp = gi.decode_response(final)
    # Read independently of our mapping, with the stdlib.
    assert (resp.id, resp.model, resp.provider_finish_reason) == (
        final.get("id"),
        final["model"],
        final["status"],
    )
    assert [m.type for m in resp.messages] == [s["type"] for s in final["steps"]]
    usage = final["usage"]
    assert resp.usage == ms.Usage(
        input_tokens=usage["total_input_tokens"] + usage["total_tool_use_tokens"],
        output_tokens=usage["total_output_tokens"] + usage["total_thought_tokens"],
        total_tokens=usage["total_tokens"],
        reasoning_tokens=usage["total_thought_tokens"],
        cache_read_tokens=usage["total_cached_tokens"],
        raw=usage,
    )
    for message, step in zip(resp.messages, final["steps"], strict=True):
        if step["type"] == "thought":
            assert message.content == [ReasoningPart(signature=step["signature"])]
        elif step["type"] == "model_output":
            assert [p.text for p in message.content if isinstance(p, TextPart)] == [
                c["text"] for c in step["content"]
            ]
        elif step["type"] == "function_call":
            call = message.content[0]
            assert isinstance(call, ToolCallPart)
            assert (call.id, call.name, json.loads(call.arguments)) == (
                step["id"],
                step["name"],
                step["arguments"],
            )
            assert call.status == "completed"
        else:
            assert isinstance(message.content[0], UnknownPart | ToolCallPart)
    # The stream of the same request (a separate call: another id, other words).
    streamed = ms.aggregate(path.read_bytes(), protocol=PROTO)
    if resp.id is not None and streamed.id == resp.id:
        assert view(resp) == view(streamed)
    assert _shape(resp) == _shape(streamed)
    assert (resp.status, resp.finish_reason) == (streamed.status, streamed.finish_reason)
    assert resp.usage is not None
    assert streamed.usage is not None
    assert set(resp.usage.raw) - {"tool_use_tokens_by_modality"} <= set(streamed.usage.raw) | {
        "tool_use_tokens_by_modality"
    }
    # and what its signatures say goes back unchanged
    assert gi.encode_response(resp)["steps"] == final["steps"]


# ---------------------------------------------------------------- shapes a stream does not show


def test_failed_and_legacy_bodies() -> None:
    failed = gi.decode_response(
        {"id": "v1_f", "status": "failed", "errors": [{"code": "INTERNAL", "message": "boom"}], "steps": []}
    )
    assert (failed.status, failed.finish_reason) == ("failed", "error")
    assert failed.error == ms.StreamError(
        type="INTERNAL", code="INTERNAL", message="boom", raw={"code": "INTERNAL", "message": "boom"}
    )
    assert gi.encode_response(failed)["errors"] == [{"code": "INTERNAL", "message": "boom"}]
    legacy = gi.decode_response(
        {
            "id": "v1_l",
            "status": "requires_action",
            "outputs": [
                {"type": "thought", "signature": "Sig=="},
                {"type": "text", "text": "Saving."},
                {"type": "function_call", "id": "fc_1", "name": "save", "arguments": {"a": 1}},
            ],
        }
    )
    assert [m.type for m in legacy.messages] == ["thought", "model_output", "function_call"]
    assert legacy.finish_reason == "tool_calls"
    assert legacy.messages[2].content == [
        ToolCallPart(id="fc_1", name="save", arguments='{"a":1}', status="completed")
    ]


def test_incomplete_body_never_reports_its_last_call_completed() -> None:
    resp = gi.decode_response(
        {
            "status": "incomplete",
            "steps": [
                {"type": "function_call", "id": "a", "name": "f", "arguments": {}},
                {"type": "function_call", "id": "b", "name": "f", "arguments": '{"x": '},
            ],
        }
    )
    assert (resp.status, resp.finish_reason) == ("incomplete", "length")
    assert [m.content[0].status for m in resp.messages] == ["completed", "incomplete"]  # type: ignore[union-attr]
    assert [m.status for m in resp.messages] == ["completed", "incomplete"]


def test_foreign_response_body_drops_are_records_without_ids() -> None:
    resp = ms.Response(
        protocol="anthropic",
        status="completed",
        finish_reason="stop",
        messages=[
            ms.Message(role="user", content="hi"),
            ms.Message(
                role="assistant",
                content=[
                    ReasoningPart(text="hmm", signature="ant-sig-1", encrypted_content=None),
                    ReasoningPart(data="redacted-blob", redacted=True),
                    ms.ToolCallPart(id="srvtoolu_01", name="web_search", arguments="{}", kind="server"),
                    TextPart(text="ok"),
                    ms.RefusalPart(text="no"),
                    ms.ToolCallPart(id="toolu_01", name="f", arguments='{"a": 1}', signature="ant-sig-2"),
                ],
            ),
        ],
        usage=ms.Usage(input_tokens=10, output_tokens=7, reasoning_tokens=3, total_tokens=17),
    )
    drops = ms.DropLog(PROTO, "anthropic")
    body = gi.encode_response(resp, drops=drops)
    assert [s["type"] for s in body["steps"]] == ["thought", "thought", "model_output", "function_call"]
    assert "ant-sig" not in json.dumps(body)
    assert body["status"] == "completed"
    assert body["usage"] == {
        "total_input_tokens": 10,
        "total_output_tokens": 4,  # thoughts are counted apart on this wire
        "total_thought_tokens": 3,
        "total_tokens": 17,
    }
    assert gi.decode_response(body).usage == ms.Usage(
        input_tokens=10, output_tokens=7, reasoning_tokens=3, total_tokens=17, raw=body["usage"]
    )
    kinds = {r.kind: r for r in drops.records}
    assert set(kinds) == {"message", "signature", "encrypted_reasoning", "server_call", "refusal"}
    assert kinds["signature"].count == 2
    assert kinds["server_call"].where == ("messages[1]",)
    assert "web_search" in kinds["server_call"].what
    for rec in drops.records:
        assert "toolu" not in rec.what
        assert "srvtoolu" not in rec.what


@pytest.mark.parametrize(
    ("body", "match"),
    [
        pytest.param([], "JSON object", id="list"),
        pytest.param(b"{not json", "not JSON", id="bytes"),
        pytest.param({"status": 3}, "invalid", id="status-type"),
        pytest.param({"steps": ["x"]}, "invalid", id="step-type"),
        pytest.param({"steps": [{"type": "function_call", "id": 7}]}, "invalid", id="id-type"),
        pytest.param({"steps": [{"type": "thought", "signature": ["s"]}]}, "invalid", id="sig-type"),
        pytest.param({"usage": {"total_tokens": "9"}}, "invalid", id="usage-type"),
        pytest.param({"steps": [{"type": "x", "v": json.loads("[" * 100 + "]" * 100)}]}, "deeper", id="deep"),
        pytest.param(b'{"steps": ' + b"[" * 5000 + b"]" * 5000 + b"}", "deep", id="deeper-than-msgspec"),
    ],
)
def test_bad_bodies_raise_remote_protocol_errors(body: Any, match: str) -> None:
    with pytest.raises(ms.RemoteProtocolError, match=match) as info:
        gi.decode_response(body)
    assert info.value.protocol == PROTO
