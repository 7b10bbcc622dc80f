"""OpenAI Responses: one mapping for the stream, the body and the history.

* ``decode_response`` reads a ``response`` object as the stream decoder reads a stream:
  ``decode_response(encode_response(aggregate(x)))`` and, where the stream ends with
  ``response.completed``, ``decode_response(<that response>)`` agree with ``aggregate(x)``.
* The stream encoder's terminal event and ``encode_response`` write the same response for the
  same source: usage (one function), status, ``incomplete_details``, error and output items.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream.protocols.openai_responses import decode_response
from tests.conftest import corpus, need_corpus, params, recordings
from tests.protocols.test_openai_responses import reencrypted

if TYPE_CHECKING:
    from pathlib import Path

PROTO = "openai-responses"
SSE = ("openai-chat", "openai-responses", "anthropic", "gemini")


def events_of(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for block in data.decode("utf-8").split("\n\n")
        for line in block.splitlines()
        if line.startswith("data:") and line[5:].strip().startswith("{")
    ]


def terminal(data: bytes) -> dict[str, Any] | None:
    for ev in reversed(events_of(data)):
        if ev.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            found: dict[str, Any] = ev
            return found
    return None


def view(resp: ms.Response) -> dict[str, Any]:
    """What a client reads from a response: text, client calls, reasoning, finish, usage."""
    messages = [m for m in resp.messages if not m.choice_index and isinstance(m.content, list)]
    parts = [p for m in messages if m.role in ("assistant", "model") for p in m.content]
    usage = resp.usage
    return {
        "text": "".join(p.text for p in parts if isinstance(p, ms.TextPart)),
        "calls": [
            (p.id, p.name, p.arguments)
            for p in parts
            if isinstance(p, ms.ToolCallPart) and p.kind in ("function", "custom")
        ],
        "reasoning": [
            (p.id, p.summary, p.text, p.encrypted_content) for p in parts if isinstance(p, ms.ReasoningPart)
        ],
        "status": resp.status,
        "finish": resp.finish_reason,
        "usage": None
        if usage is None
        else (
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
            usage.reasoning_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens or 0,  # the SDK requires the count: absent is written as 0
        ),
        "error": resp.error.code if resp.error is not None else None,
    }


@pytest.mark.parametrize("path", need_corpus(PROTO) + params(recordings(PROTO)))
def test_decode_of_encode_agrees_with_the_aggregate(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol=PROTO)
    body = ms.encode_response(resp, PROTO)
    decoded = decode_response(json.loads(json.dumps(body)))
    want = view(resp)
    if body["error"] is not None:  # Responses error codes are a closed set (the drop is recorded)
        want["error"] = body["error"]["code"]
    assert view(decoded) == want
    assert decoded.protocol == PROTO
    assert decoded.id == resp.id
    assert ms.encode_response(decoded, PROTO)["usage"] == body["usage"]


COMPLETED = [
    p
    for p in recordings(PROTO) + corpus(PROTO)
    if (terminal(p.read_bytes()) or {}).get("type") == "response.completed"
]


@pytest.mark.parametrize("path", params(COMPLETED))
def test_terminal_response_decodes_like_the_stream(path: Path) -> None:
    data = path.read_bytes()
    end = terminal(data)
    assert end is not None
    decoded = decode_response(end["response"])
    resp = ms.aggregate(data, protocol=PROTO)
    assert view(decoded) == view(resp)
    assert [m.type for m in decoded.messages] == [m.type for m in resp.messages if m.type is not None]
    assert decoded.unknown == {k: v for k, v in resp.unknown.items() if not k.startswith("response.")}


def test_decode_response_maps_status_finish_usage_and_error() -> None:
    base = {"id": "resp_1", "object": "response", "model": "m"}
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c1",
        "name": "f",
        "arguments": "{}",
        "status": "completed",
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 13,
    }
    done = decode_response({**base, "status": "completed", "output": [call], "usage": usage})
    assert (done.status, done.finish_reason) == ("completed", "tool_calls")
    assert done.usage == ms.Usage(
        input_tokens=10, output_tokens=3, total_tokens=13, reasoning_tokens=2, cache_read_tokens=4, raw=usage
    )
    assert done.messages[0].provider == PROTO
    cut = decode_response(
        {**base, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    )
    assert (cut.status, cut.finish_reason, cut.provider_finish_reason) == (
        "incomplete",
        "length",
        "max_output_tokens",
    )
    failed = decode_response(
        {**base, "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    )
    assert (failed.status, failed.finish_reason) == ("failed", "error")
    assert failed.error == ms.StreamError(
        type="server_error",
        message="boom",
        code="server_error",
        raw={"code": "server_error", "message": "boom"},
    )
    odd = decode_response({**base, "status": "completed", "output": [{"type": "future_item", "x": 1}]})
    assert odd.unknown == {"future_item": 1}
    assert odd.finish_reason == "stop"


@pytest.mark.parametrize("body", [[], "x", None, {"output": {"type": "message"}}, {"output": "x"}])
def test_decode_response_rejects_what_is_no_response(body: Any) -> None:
    with pytest.raises(ms.RemoteProtocolError):
        decode_response(body)


def test_registry_has_decode_response() -> None:
    assert ms.get_protocol(PROTO).decode_response is decode_response


# ---------------------------------------------------------------------- stream and body agree


def output_view(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            out.append(
                (kind, item.get("id"), item.get("status"), item.get("phase"), json.dumps(item["content"]))
            )
        elif kind in ("function_call", "custom_tool_call"):
            out.append(
                (
                    kind,
                    item.get("id"),
                    item["call_id"],
                    item["name"],
                    item.get("arguments", item.get("input")),
                )
            )
        else:
            out.append((kind, item.get("id"), json.dumps(item, sort_keys=True)))
    return out


def sources() -> list[Any]:
    return [
        pytest.param(src, p, id=f"{src}/{p.parent.parent.name[:3]}/{p.name}")
        for src in SSE
        for p in recordings(src) + corpus(src)
    ]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("source", "path"), sources())
def test_stream_terminal_and_body_write_the_same_response(source: str, path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data, protocol=source)
    body_drops: list[ms.Dropped] = []
    body = ms.encode_response(resp, PROTO, lossy=body_drops)
    conv = ms.StreamConverter(PROTO, protocol=source, fail_closed=False)
    out = conv.feed(data) + conv.finish()
    end = terminal(out)
    if end is None:
        # A source that was cut stays cut on the wire: no terminal event carries its usage.
        assert resp.status == "incomplete"
        assert resp.finish_reason is None
        return
    streamed = end["response"]
    assert end["type"] == f"response.{body['status']}"
    # The encoder writes each item's value as the item ended; where the source's terminal event
    # restated reasoning with other encrypted bytes, only the aggregate (the body) has those.
    for item_id in reencrypted(data) if source == PROTO else ():
        for item in streamed["output"] + body["output"]:
            if item.get("id") == item_id:
                item.pop("encrypted_content")
    for key in ("status", "usage", "incomplete_details", "error"):
        assert streamed[key] == body[key], key
    assert output_view(streamed["output"]) == output_view(body["output"])
    # The same things are dropped, with the same kinds (the stream alone also drops frames of
    # unknown types; the body alone cannot carry audio, which Responses streams outside items).
    stream_kinds = {(r.kind, r.what): r.count for r in conv.lossy if not stream_only(r)}
    body_kinds = {(r.kind, r.what): r.count for r in body_drops if not body_only(r)}
    assert stream_kinds == body_kinds


def stream_only(record: ms.Dropped) -> bool:
    return record.kind == "unknown" and "frame" in record.what


def body_only(record: ms.Dropped) -> bool:
    return (record.kind == "media" and "audio" in record.what) or (
        record.kind == "field" and "error code" in record.what
    )
