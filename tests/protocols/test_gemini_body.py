"""Gemini non-streaming bodies: ``decode_response`` and ``encode_response`` against the stream.

For every Gemini recording and corpus stream x, ``decode_response(encode_response(aggregate(x)))``
must give back what ``aggregate(x)`` holds (text, thoughts, calls with ids, arguments and
signatures, finish reasons, usage), google-genai's client must accept the body, and the usage a
body carries must be exactly the usage the stream encoder writes for the same response.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream.protocols import gemini
from tests.conftest import corpus, params, recordings
from tests.protocols.gemini_oracle import sdk_response

if TYPE_CHECKING:
    from pathlib import Path

GEMINI = [*corpus("gemini"), *recordings("gemini")]
SESSIONS = ("google-live", "openai-realtime")  # several responses per connection: another issue
SSE_SOURCES = [
    p
    for name in ("openai-chat", "openai-responses", "anthropic", "gemini", "google-interactions")
    for p in [*recordings(name), *corpus(name)]
]


def _finish(reason: str | None, content: Any) -> str | None:
    """A finish reason as the aggregator normalizes it: ``stop`` with client calls is ``tool_calls``.

    ``decode_response`` is a provider mapping and does not see the aggregator; the comparison is
    modulo that one cross-protocol rule.
    """
    calls = any(
        isinstance(p, ms.ToolCallPart) and p.kind in ("function", "custom") and p.status != "incomplete"
        for p in (content if isinstance(content, list) else ())
    )
    return "tool_calls" if reason == "stop" and calls else reason


def _comparable(resp: ms.Response) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(resp)
    for key in ("warnings", "unknown_events", "error"):
        out.pop(key, None)
    if out["status"] == "failed":
        # A body holds what came before the error; the error itself is the HTTP error answer.
        out["status"] = "incomplete"
    if "usage" in out:
        out["usage"].pop("raw")
    every = [p for m in resp.messages for p in m.content if not isinstance(m.content, str)]
    out["finish_reason"] = _finish(resp.finish_reason, every)
    for msg, raw in zip(resp.messages, out.get("messages", []), strict=True):
        raw["finish_reason"] = _finish(msg.finish_reason, msg.content)
        cut = msg.status == "incomplete" and msg.finish_reason not in ("length", "content_filter")
        if cut:
            raw["finish_reason"] = None  # a cut candidate has no finishReason in a body either
        raw["content"] = [p for p in raw.get("content", []) if p.get("status") != "incomplete"]
        for part in raw["content"]:
            part.pop("status", None)
    if resp.status != "completed" and not any(
        m.finish_reason for m in resp.messages if m.status == "completed"
    ):
        out.pop("finish_reason", None)
        out.pop("provider_finish_reason", None)
    return out


@pytest.mark.parametrize("path", params(GEMINI))
def test_body_round_trip_agrees_with_the_aggregate(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol="gemini")
    drops = ms.DropLog("gemini", "gemini")
    body = gemini.encode_response(resp, drops=drops)
    assert all(r.kind == "field" and "cut before it completed" in r.what for r in drops.records)
    sdk = sdk_response(json.loads(json.dumps(body)))  # the SDK's own path: model_validate
    back = gemini.decode_response(body)
    assert back.protocol == "gemini"
    assert _comparable(back) == _comparable(resp)
    texts = {
        m.choice_index: "".join(p.text for p in m.content if isinstance(p, ms.TextPart))
        for m in back.messages
    }
    for cand in sdk.candidates or ():
        parts = cand.content.parts or [] if cand.content is not None else []
        assert "".join(p.text or "" for p in parts if not p.thought) == texts[cand.index or 0]
    if resp.status == "completed":
        assert back.status == "completed"


_FREE = ("args", "response", "partMetadata", "searchEntryPoint", "customMetadata")
"""Free-form objects (user data): their keys are not field names and stay as they are."""


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v if k in _FREE else _snake(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_snake(v) for v in value]
    return value


@pytest.mark.parametrize("path", params(GEMINI))
def test_body_decodes_from_bytes_and_snake_case_alike(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes(), protocol="gemini")
    body = gemini.encode_response(resp)
    want = gemini.decode_response(body)
    assert gemini.decode_response(msgspec.json.encode(body)) == want
    assert gemini.decode_response(msgspec.json.encode(body).decode()) == want
    snake = _snake(body)
    assert "usage_metadata" in snake or "usageMetadata" not in body
    assert gemini.decode_response(snake) == want


def _last_usage(stream: bytes) -> Any:
    usage = None
    for line in stream.split(b"\r\n\r\n"):
        if line.startswith(b"data: "):
            usage = json.loads(line[6:]).get("usageMetadata", usage)
    return usage


@pytest.mark.parametrize("path", params(SSE_SOURCES))
def test_body_and_stream_write_the_same_usage(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data)
    body = gemini.encode_response(resp)
    stream = ms.convert(data, to="gemini", fail_closed=False)
    assert body.get("usageMetadata") == _last_usage(stream)
    if resp.usage is not None and resp.usage.output_tokens is not None:
        assert body["usageMetadata"].get("candidatesTokenCount", 0) >= 0


# ---------------------------------------------------------------------- decode_response details


def _body(*candidates: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"candidates": list(candidates), "responseId": "r9", "modelVersion": "gemini-x", **top}


def test_candidates_become_messages_with_their_own_finish() -> None:
    body = _body(
        {"content": {"role": "model", "parts": [{"text": "a"}]}, "finishReason": "STOP", "index": 0},
        {"content": {"role": "model", "parts": [{"text": "b"}]}, "finishReason": "MAX_TOKENS", "index": 1},
        usageMetadata={
            "promptTokenCount": 3,
            "candidatesTokenCount": 4,
            "thoughtsTokenCount": 5,
            "totalTokenCount": 12,
        },
    )
    resp = gemini.decode_response(body)
    assert [(m.choice_index, m.content, m.finish_reason, m.status) for m in resp.messages] == [
        (0, [ms.TextPart(text="a")], "stop", "completed"),
        (1, [ms.TextPart(text="b")], "length", "incomplete"),
    ]
    assert (resp.status, resp.finish_reason, resp.provider_finish_reason) == ("completed", "stop", "STOP")
    assert (resp.id, resp.model) == ("r9", "gemini-x")
    assert resp.usage is not None
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.reasoning_tokens) == (3, 9, 5)
    assert all(m.provider == "gemini" for m in resp.messages)


def test_calls_signatures_and_unknown_parts() -> None:
    parts = [
        {"text": "plan", "thought": True, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "c2lnMg=="},
        {"functionCall": {"id": "c2", "name": "g", "args": {}}},
        {"executableCode": {"code": "1+1", "language": "PYTHON"}, "thoughtSignature": "c2lnMw=="},
        {"hologram": {"frames": 3}},
    ]
    resp = gemini.decode_response(
        _body({"content": {"role": "model", "parts": parts}, "finishReason": "STOP"})
    )
    assert resp.messages[0].content == [
        ms.ReasoningPart(text="plan", signature="c2ln"),
        ms.ToolCallPart(id="maas_gc_r9_0_1", name="f", arguments='{"a":1}', signature="c2lnMg=="),
        ms.ToolCallPart(id="c2", name="g", arguments="{}"),
        ms.UnknownPart(provider_type=gemini.SIGNATURE_TYPE, raw={"thoughtSignature": "c2lnMw=="}),
        ms.CodePart(language="PYTHON", code="1+1"),
        ms.UnknownPart(provider_type="part.hologram", raw={"hologram": {"frames": 3}}),
    ]
    assert resp.unknown == {gemini.SIGNATURE_TYPE: 1, "part.hologram": 1}
    again = gemini.encode_response(resp)["candidates"][0]["content"]["parts"]
    assert again == [
        *parts[:2],
        {"functionCall": {"id": "c2", "name": "g", "args": {}}},
        {"executableCode": {"language": "PYTHON", "code": "1+1"}, "thoughtSignature": "c2lnMw=="},
        {"hologram": {"frames": 3}},
    ]


def test_blocked_prompt_is_content_filter() -> None:
    resp = gemini.decode_response(
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "responseId": "r"}
    )
    assert (resp.status, resp.finish_reason, resp.provider_finish_reason) == (
        "incomplete",
        "content_filter",
        "PROHIBITED_CONTENT",
    )
    assert resp.messages == []
    assert resp.provider_raw == {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}
    assert gemini.encode_response(resp)["promptFeedback"] == {"blockReason": "PROHIBITED_CONTENT"}


def test_error_body_is_failed() -> None:
    resp = gemini.decode_response(
        {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    )
    assert resp.status == "failed"
    assert resp.finish_reason == "error"
    assert resp.error is not None
    assert (resp.error.type, resp.error.code, resp.error.message) == (
        "RESOURCE_EXHAUSTED",
        "429",
        "slow down",
    )


def test_candidate_without_finish_is_incomplete() -> None:
    resp = gemini.decode_response(_body({"content": {"role": "model", "parts": [{"text": "a"}]}}))
    assert resp.status == "incomplete"
    assert resp.messages[0].status == "incomplete"


def test_citations_land_on_the_last_text_part() -> None:
    cand = {
        "content": {"role": "model", "parts": [{"text": "a"}, {"text": "b"}]},
        "finishReason": "STOP",
        "citationMetadata": {"citationSources": [{"uri": "https://x.test", "startIndex": 0, "endIndex": 1}]},
    }
    resp = gemini.decode_response(_body(cand))
    content = resp.messages[0].content
    assert isinstance(content, list)
    first, last = content
    assert isinstance(first, ms.TextPart)
    assert isinstance(last, ms.TextPart)
    assert first.annotations is None
    assert last.annotations is not None
    assert [(c.kind, c.url, c.start, c.end) for c in last.annotations] == [
        ("citation_source", "https://x.test", 0, 1)
    ]
    assert resp.messages[0].provider_raw == {"citationMetadata": cand["citationMetadata"]}


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{nope", id="not-json"),
        pytest.param({"candidates": {"a": 1}}, id="candidates-object"),
        pytest.param(_body({"index": "zero"}), id="index-string"),
        pytest.param(_body({"content": {"parts": [{"text": 5}]}}), id="text-number"),
        pytest.param(
            _body({"content": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}}), id="args-list"
        ),
        pytest.param(_body({"content": {"parts": [{"functionResponse": "x"}]}}), id="response-string"),
        pytest.param({"promptFeedback": "blocked"}, id="feedback-string"),
        pytest.param(
            b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":"\xff"}}}]}}]}',
            id="args-utf8",
        ),
        pytest.param(b"[" * 5000 + b"]" * 5000, id="deep"),
    ],
)
def test_bad_bodies_raise_remote_protocol_error(body: Any) -> None:
    with pytest.raises(ms.RemoteProtocolError):
        gemini.decode_response(body)
