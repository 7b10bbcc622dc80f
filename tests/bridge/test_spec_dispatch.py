"""The bridge dispatches on the protocols' specs: routes, auth, URLs, envelopes and error bodies.

A fake protocol is registered for a test (openai-chat's codecs under another name, with its own
endpoint, credential header, default URL, envelope field names and error body shape), and the
bridge must serve it, call it and shape its errors without knowing it; then it is unregistered.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from typing import TYPE_CHECKING, Any

import httpx
import httpx2
import pytest

import maas_stream as ms
from maas_stream import _registry
from maas_stream._envelope import EnvelopeCodec, FunctionTool, NativeTool, Unread
from maas_stream._registry import Auth, Endpoint, ProtocolSpec, get_protocol, protocol_specs
from maas_stream.bridge import BridgeApp, HTTPUpstream, RecordingUpstream, auth_headers, create_app
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import Mapping

pytestmark = pytest.mark.anyio

CHAT_RECORDING = RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse"
GEMINI_THOUGHTS = RECORDINGS / "gemini/thoughts_text_parallel_calls.sse"


def _fake_error(status: int, message: str) -> dict[str, Any]:
    return {"fault": {"status": status, "text": message}}


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    if tool.get("kind") == "fn":
        return [FunctionTool.of(tool, "schema")], []
    return [], [f"tool of kind {tool.get('kind')!r}"]


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    return [{"kind": "fn", **t.declaration("schema")} for t in tools]


FAKE_ENVELOPE = EnvelopeCodec(
    conversation=frozenset({"messages"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("limit",),
    model_field="engine",
    fixed={"x_mode": "fast"},
)


def fake_spec(
    name: str = "fake-proto", *, envelope: Any = FAKE_ENVELOPE, path: str = "/fake/v9/talk"
) -> ProtocolSpec:
    """openai-chat's codecs under another name, with everything the bridge reads made up."""
    return dataclasses.replace(
        get_protocol("openai-chat"),
        name=name,
        endpoints=(Endpoint(path),),
        auth=Auth("FAKE_PROTO_KEY", "x-fake-key", "Key {}", fixed={"x-fake-version": "9"}),
        url="https://fake.test/{model}/stream",
        error_body=_fake_error,
        envelope=envelope,
        detect=lambda event, payload: False,
        detect_body=None,
    )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ProtocolSpec:
    """The fake protocol, registered for one test only."""
    protocol_specs()  # load the real ones first
    spec = fake_spec()
    monkeypatch.setitem(_registry._REGISTRY, spec.name, spec)
    return spec


def asgi(app: BridgeApp) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))


def test_fake_protocol_is_unregistered_after_its_test() -> None:
    assert "fake-proto" not in ms.protocol_names()
    assert _registry.match_endpoint("/fake/v9/talk") is None


# ---------------------------------------------------------------------- the client side


async def test_bridge_serves_a_protocol_it_does_not_know_by_its_spec(fake: ProtocolSpec) -> None:
    # drop_params: the unknown `web` tool would change the answer; dropped and reported here.
    app = create_app(upstream=RecordingUpstream(CHAT_RECORDING), drop_params=True)
    request = {
        "engine": "m-7",
        "stream": True,
        "limit": 55,
        "x_mode": "slow",  # a fixed field: read (and ignored), not reported
        "tools": [{"kind": "fn", "name": "f", "schema": {"type": "object"}}, {"kind": "web"}],
        "messages": [{"role": "user", "content": "hi"}],
        "weird": 1,
    }
    async with asgi(app) as client:
        response = await client.post("http://bridge/fake/v9/talk", json=request)
    assert response.status_code == 200
    assert response.headers["content-type"] == fake.media_type
    assert response.headers["x-maas-stream-request-dropped"] == "2"
    served = ms.aggregate(response.content, protocol="openai-chat")
    assert served.status == "completed"
    # The fake envelope was read: its model, limit and tools reached the (Chat) upstream.
    upstream = app.upstream.requests[-1]  # type: ignore[attr-defined]
    assert upstream["model"] == "m-7"
    assert upstream["max_completion_tokens"] == 55
    assert upstream["tools"] == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ]
    assert "weird" not in upstream
    assert app.stats.dropped["request_field"] == 2  # `weird` and the `web` tool


@pytest.mark.parametrize(
    ("method", "content", "status"),
    [
        pytest.param("POST", b"{nope", 400, id="bad_json"),
        pytest.param("GET", b"", 405, id="wrong_method"),
    ],
)
async def test_errors_take_the_client_specs_shape(
    fake: ProtocolSpec, method: str, content: bytes, status: int
) -> None:
    app = create_app(upstream=RecordingUpstream(CHAT_RECORDING))
    async with asgi(app) as client:
        response = await client.request(
            method,
            "http://bridge/fake/v9/talk",
            content=content,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"fault"}
    assert body == _fake_error(status, body["fault"]["text"])


async def test_unknown_path_has_the_default_openai_shape() -> None:
    app = create_app(upstream=RecordingUpstream(CHAT_RECORDING))
    async with asgi(app) as client:
        response = await client.post("http://bridge/nowhere", json={})
    assert response.status_code == 404
    assert response.json() == get_protocol("openai-chat").error_body(404, "no bridge endpoint at /nowhere")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("path", "protocol"),
    [
        pytest.param("/v1/chat/completions", "openai-chat", id="openai-chat"),
        pytest.param("/v1/responses", "openai-responses", id="openai-responses"),
        pytest.param("/v1/messages", "anthropic", id="anthropic"),
        pytest.param("/v1beta/models/m:generateContent", "gemini", id="gemini"),
    ],
)
async def test_real_endpoints_and_error_bodies_come_from_the_specs(path: str, protocol: str) -> None:
    spec = get_protocol(protocol)
    match = _registry.match_endpoint(path)
    assert match is not None
    assert match.spec is spec
    app = create_app(upstream=RecordingUpstream(CHAT_RECORDING))
    async with asgi(app) as client:
        response = await client.get(f"http://bridge{path}")
    assert response.status_code == 405
    assert spec.error_body is not None
    assert response.json() == spec.error_body(405, f"{path} takes POST, not GET")


async def test_endpoint_query_comes_from_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    protocol_specs()
    spec = dataclasses.replace(
        fake_spec("fake-query"), endpoints=(Endpoint("/fake/q", stream=True, query="mode=sse"),)
    )
    monkeypatch.setitem(_registry._REGISTRY, spec.name, spec)
    app = create_app(upstream=RecordingUpstream(CHAT_RECORDING))
    body = {"messages": [{"role": "user", "content": "hi"}]}
    async with asgi(app) as client:
        refused = await client.post("http://bridge/fake/q", json=body)
        served = await client.post("http://bridge/fake/q?mode=sse", json=body)
    assert refused.status_code == 400
    assert "mode=sse" in refused.json()["fault"]["text"]
    assert served.status_code == 200
    assert ms.aggregate(served.content, protocol="openai-chat").status == "completed"


async def test_a_spec_without_envelope_is_not_servable(monkeypatch: pytest.MonkeyPatch) -> None:
    protocol_specs()
    spec = fake_spec("fake-noenv", envelope=None, path="/fake/noenv")
    monkeypatch.setitem(_registry._REGISTRY, spec.name, spec)
    app = create_app(upstream=RecordingUpstream(CHAT_RECORDING))
    async with asgi(app) as client:
        response = await client.post(
            "http://bridge/fake/noenv", json={"messages": [{"role": "user", "content": "hi"}]}
        )
    assert response.status_code == 501
    assert "fake-noenv" in response.json()["fault"]["text"]
    assert "envelope" in response.json()["fault"]["text"]
    assert app.upstream.requests == []  # type: ignore[attr-defined]
    with pytest.raises(ms.LocalProtocolError, match="fake-noenv cannot be an HTTP upstream"):
        HTTPUpstream("fake-noenv")


@pytest.mark.parametrize("protocol", ["google-live", "openai-realtime"])
def test_protocols_without_envelope_cannot_be_http_upstreams(protocol: str) -> None:
    assert get_protocol(protocol).envelope is None
    with pytest.raises(ms.LocalProtocolError, match="no request envelope codec"):
        HTTPUpstream(protocol, "https://upstream.test/")


async def test_recording_of_a_protocol_without_envelope_is_served_with_the_envelope_dropped() -> None:
    app = create_app(upstream=RecordingUpstream(RECORDINGS / "google-live/text_thought_parallel_tools.jsonl"))
    async with asgi(app) as client:
        response = await client.post(
            "http://bridge/v1/chat/completions",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
        )
    assert response.status_code == 200
    assert ms.aggregate(response.content, protocol="openai-chat").messages
    sent = app.upstream.requests[-1]  # type: ignore[attr-defined]
    assert "model" not in sent  # no envelope was invented for it
    assert "stream" not in sent
    assert app.stats.dropped["request_field"] == 1


# ---------------------------------------------------------------------- the upstream side


async def test_http_upstream_url_auth_and_envelope_come_from_the_spec(
    fake: ProtocolSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROTO_KEY", "sekrit")
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=CHAT_RECORDING.read_bytes()
        )

    upstream = HTTPUpstream("fake-proto", client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    assert upstream.url == fake.url
    app = create_app(upstream=upstream)
    weather = {"type": "object", "properties": {"city": {"type": "string"}}}
    request = {
        "model": "m1",
        "max_tokens": 77,
        "stream": True,
        "tools": [{"name": "get_weather", "input_schema": weather}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with asgi(app) as client:
        response = await client.post("http://bridge/v1/messages", json=request)
    assert response.status_code == 200
    sent = seen[0]
    assert str(sent.url) == "https://fake.test/m1/stream"
    assert sent.headers["x-fake-key"] == "Key sekrit"
    assert sent.headers["x-fake-version"] == "9"
    assert "x-api-key" not in sent.headers
    body = json.loads(sent.content)
    assert body["engine"] == "m1"
    assert body["limit"] == 77
    assert body["x_mode"] == "fast"
    assert body["stream"] is True
    assert body["tools"] == [{"kind": "fn", "name": "get_weather", "schema": weather}]
    assert "model" not in body
    assert "max_tokens" not in body


async def test_upstream_error_is_shaped_by_the_client_spec(fake: ProtocolSpec) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": {"message": "slow down", "type": "rate_limit"}})

    upstream = HTTPUpstream(
        "anthropic", "https://up.test/", client=httpx.AsyncClient(transport=httpx.MockTransport(handler))
    )
    app = create_app(upstream=upstream)
    async with asgi(app) as client:
        response = await client.post(
            "http://bridge/fake/v9/talk",
            json={"stream": True, "messages": [{"role": "user", "content": "hi"}]},
        )
    assert response.status_code == 429
    body = response.json()
    assert body == _fake_error(429, body["fault"]["text"])
    assert body["fault"]["text"].startswith("upstream anthropic: ")
    assert "slow down" in body["fault"]["text"]


@pytest.mark.parametrize("protocol", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_auth_headers_are_the_specs(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    auth = get_protocol(protocol).auth
    assert auth is not None
    monkeypatch.setenv(auth.env, "k-123")
    upstream = HTTPUpstream(protocol, "https://up.test/{model}")
    assert auth_headers(protocol, "k-123") == auth.headers("k-123")
    assert upstream._headers == {"content-type": "application/json", **auth.headers("k-123")}


# ---------------------------------------------------------------------- drops, logged once


async def test_each_drop_is_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    # Request side: `seed` goes nowhere (the bridge's record) and the client's Anthropic
    # thinking cannot be replayed to Gemini (convert_history's record); stream side: what the
    # Gemini recording holds that Anthropic cannot carry (aconvert's records).
    app = create_app(upstream=RecordingUpstream(GEMINI_THOUGHTS))
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "yo"},
            ],
        },
        {"role": "user", "content": "again"},
    ]
    request = {"model": "m", "max_tokens": 5, "stream": True, "seed": 7, "messages": history}
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        async with asgi(app) as client:
            response = await client.post("http://bridge/v1/messages", json=request)
    assert response.status_code == 200
    warnings = [
        r.getMessage() for r in caplog.records if r.name == "maas_stream" and r.levelno == logging.WARNING
    ]
    assert len([w for w in warnings if "request field seed" in w]) == 1
    assert len([w for w in warnings if "history" in w and "reasoning" in w]) == 1
    # Logged once: no drop's text appears under two prefixes.
    texts = [re.split(r"dropped |not forwarded: ", w, maxsplit=1)[-1] for w in warnings]
    assert len(texts) == len(set(texts))
    stream_side = len(warnings) - 2
    assert stream_side >= 1
    assert app.stats.dropped["request_field"] == 1
    assert app.stats.dropped["reasoning"] >= 1
    assert sum(app.stats.dropped.values()) >= len(warnings)


def test_cli_serve_refuses_an_upstream_without_envelope(monkeypatch: pytest.MonkeyPatch) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("must not serve"))
    protocol_specs()  # every real protocol is HTTP or a websocket session now: a fake has neither
    spec = fake_spec("fake-noenv", envelope=None, path="/fake/noenv")
    monkeypatch.setitem(_registry._REGISTRY, spec.name, spec)
    with pytest.raises(SystemExit, match="fake-noenv cannot be an HTTP upstream"):
        main(["serve", "--upstream-protocol", "fake-noenv", "--upstream-url", "https://x.test/"])
