"""The bridge's front door (``bridge/_guard.py``), tried the way a client and an attacker would.

Bridge keys are shown in each client protocol's own credential header (the official SDKs send
them as they would to their provider), a wrong or missing key is a 401 in the SDK's own error
shape, bodies must be JSON, Host and Origin are checked, CORS is opt-in, a model name never
reaches another path of the provider, and no secret shows in a log line, an error or the banner.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

import anthropic
import anyio
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from maas_stream.bridge import (
    BridgeApp,
    Guard,
    HTTPUpstream,
    RecordingUpstream,
    ServeSettings,
    build_app,
    create_app,
    load_bridge_keys,
)
from maas_stream.bridge._guard import check_model, is_loopback
from maas_stream.bridge._request import Rejected
from tests.bridge.test_serve import LIMIT, expected
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

KEY = "bridge-key-0123456789"
OTHER = "bridge-key-abcdefghij"
CHAT_REC = RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse"
HI: Any = [{"role": "user", "content": "hi"}]


def keyed_app(*keys: str, **guard: Any) -> BridgeApp:
    return create_app(upstream=RecordingUpstream(CHAT_REC), guard=Guard(keys=keys or (KEY,), **guard))


def asgi(app: BridgeApp, **kw: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), **kw)


def openai_sdk(app: BridgeApp, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=key, base_url="http://bridge/v1", http_client=asgi(app), max_retries=0)


def anthropic_sdk(app: BridgeApp, key: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key=key, base_url="http://bridge", http_client=asgi(app), max_retries=0
    )


def genai_sdk(app: BridgeApp, key: str) -> genai.Client:
    return genai.Client(
        api_key=key,
        http_options=genai_types.HttpOptions(
            base_url="http://bridge/", api_version="v1beta", httpx_async_client=asgi(app)
        ),
    )


# ---------------------------------------------------------------------- bridge keys, per SDK


async def test_each_sdk_authenticates_with_its_own_header() -> None:
    app = keyed_app(OTHER, KEY)
    text, _ = expected(CHAT_REC)
    with anyio.fail_after(LIMIT):
        chat = await openai_sdk(app, KEY).chat.completions.create(model="m", messages=HI)
        resp = await openai_sdk(app, KEY).responses.create(model="m", input="hi")
        msg = await anthropic_sdk(app, KEY).messages.create(model="m", max_tokens=10, messages=HI)
        gem = await genai_sdk(app, KEY).aio.models.generate_content(model="m", contents="hi")
    assert chat.choices[0].message.content == text
    assert resp.output_text == text
    assert "".join(b.text for b in msg.content if b.type == "text") == text
    assert gem.text == text
    assert app.stats.rejected == 0
    assert app.stats.streams == 4


async def test_wrong_key_is_each_sdks_authentication_error() -> None:
    app = keyed_app()
    with anyio.fail_after(LIMIT):
        with pytest.raises(openai.AuthenticationError, match="invalid bridge key") as chat:
            await openai_sdk(app, "wrong-key-123").chat.completions.create(model="m", messages=HI)
        with pytest.raises(anthropic.AuthenticationError, match="invalid bridge key") as msg:
            await anthropic_sdk(app, "wrong-key-123").messages.create(model="m", max_tokens=10, messages=HI)
        with pytest.raises(genai_errors.ClientError) as gem:
            await genai_sdk(app, "wrong-key-123").aio.models.generate_content(model="m", contents="hi")
    assert chat.value.status_code == 401
    assert msg.value.status_code == 401
    assert (gem.value.code, gem.value.status) == (401, "UNAUTHENTICATED")
    assert app.stats.streams == 0
    assert app.upstream.requests == []  # type: ignore[attr-defined]  # nothing was spent


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        pytest.param("/v1/chat/completions", {}, id="none"),
        pytest.param("/v1/chat/completions", {"x-api-key": KEY}, id="foreign_header"),
        pytest.param("/v1/chat/completions", {"authorization": KEY}, id="no_bearer_prefix"),
        pytest.param(
            "/v1beta/models/m:generateContent", {"authorization": f"Bearer {KEY}"}, id="bearer_on_gemini"
        ),
        pytest.param("/v1/messages", {"authorization": KEY}, id="messages_no_bearer_prefix"),
        pytest.param("/v1/chat/completions", {"authorization": f"Bearer {KEY}x"}, id="longer"),
        pytest.param("/v1/chat/completions", {"authorization": f"Bearer {KEY[:-1]}"}, id="prefix_of_key"),
    ],
)
async def test_requests_without_the_key_in_the_clients_header_are_refused(
    path: str, headers: dict[str, str]
) -> None:
    app = keyed_app()
    async with asgi(app) as client:
        response = await client.post(
            f"http://bridge{path}", json={"model": "m", "max_tokens": 5, "messages": HI}, headers=headers
        )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert KEY not in response.text
    assert app.upstream.requests == []  # type: ignore[attr-defined]


async def test_anthropic_clients_may_send_either_header() -> None:
    # The spec's alternatives: x-api-key (older SDKs, curl) and Bearer (the SDK today).
    app = keyed_app()
    body = {"model": "m", "max_tokens": 5, "messages": HI}
    async with asgi(app) as client:
        x_api_key = await client.post("http://bridge/v1/messages", json=body, headers={"x-api-key": KEY})
        bearer = await client.post(
            "http://bridge/v1/messages", json=body, headers={"authorization": f"Bearer {KEY}"}
        )
    assert (x_api_key.status_code, bearer.status_code) == (200, 200)


async def test_query_key_where_the_spec_allows_it() -> None:
    app = keyed_app()
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    async with asgi(app) as client:
        ok = await client.post(f"http://bridge/v1beta/models/m:generateContent?key={KEY}", json=body)
        bad = await client.post("http://bridge/v1beta/models/m:generateContent?key=nope-nope-nope", json=body)
        chat = await client.post(
            f"http://bridge/v1/chat/completions?key={KEY}", json={"model": "m", "messages": HI}
        )
    assert ok.status_code == 200
    assert bad.status_code == 401
    assert bad.json()["error"]["status"] == "UNAUTHENTICATED"
    assert chat.status_code == 401  # the Chat spec names no query parameter


async def test_no_keys_means_no_check() -> None:
    app = create_app(upstream=RecordingUpstream(CHAT_REC))
    chat = await openai_sdk(app, "anything").chat.completions.create(model="m", messages=HI)
    assert chat.choices[0].message.content == expected(CHAT_REC)[0]


async def test_every_key_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    guard = Guard(keys=(KEY, OTHER, "third-key-xyz"))
    guard.authenticate(None, {"authorization": f"Bearer {KEY}"}, b"")  # the first key matches
    assert len(calls) == 3  # ... and still every key was compared
    assert all(len(a) == len(b) == 32 for a, b in calls)  # digests: the length of the key does not show
    calls.clear()
    with pytest.raises(Rejected):
        guard.authenticate(None, {"authorization": "Bearer x"}, b"")
    assert len(calls) == 3


def test_bridge_keys_from_flags_env_and_files(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# team keys\nfile-key-0001\n\nfile-key-0002\n")
    env = {"MAAS_STREAM_BRIDGE_KEYS": "env-key-00001, env-key-00002"}
    found = load_bridge_keys(["flag-key-0001"], env=env, files=[keys])
    assert found == ("flag-key-0001", "env-key-00001", "env-key-00002", "file-key-0001", "file-key-0002")
    with pytest.raises(ValueError, match="shorter than 8"):
        load_bridge_keys(["short"], env={})


# ---------------------------------------------------------------------- binding without keys


def test_serve_refuses_a_public_address_without_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAAS_STREAM_BRIDGE_KEYS", raising=False)
    settings = ServeSettings(recording=str(CHAT_REC), host="0.0.0.0")
    with pytest.raises(ValueError, match="without bridge keys"):
        build_app(settings)
    assert build_app(settings, keys=[KEY]).guard.auth
    opened = build_app(ServeSettings(recording=str(CHAT_REC), host="0.0.0.0", no_auth=True))
    assert not opened.guard.auth
    assert opened.guard.allowed_hosts is None  # a public bind serves any Host name
    local = build_app(ServeSettings(recording=str(CHAT_REC), host="127.0.0.1"))
    assert not local.guard.auth
    assert local.guard.allowed_hosts == frozenset({"localhost", "127.0.0.1", "::1"})


def test_cli_serve_refuses_a_public_address_without_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    monkeypatch.delenv("MAAS_STREAM_BRIDGE_KEYS", raising=False)
    ran: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append((app, kw)))
    with pytest.raises(SystemExit, match=r"refusing to serve 0\.0\.0\.0 without bridge keys"):
        main(["serve", "--host", "0.0.0.0", "--recording", str(CHAT_REC)])
    assert ran == []
    assert main(["serve", "--host", "0.0.0.0", "--recording", str(CHAT_REC), "--bridge-key", KEY]) == 0
    assert main(["serve", "--host", "0.0.0.0", "--recording", str(CHAT_REC), "--no-auth"]) == 0
    assert ran[0][0].guard.auth
    assert not ran[1][0].guard.auth
    assert KEY not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True), ("127.0.0.2", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("bridge.example", False)],
)  # fmt: skip
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


# ---------------------------------------------------------------------- content type


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        pytest.param(None, 415, id="none"),
        pytest.param("text/plain", 415, id="text_plain"),
        pytest.param("application/x-www-form-urlencoded", 415, id="form"),
        pytest.param("multipart/form-data; boundary=x", 415, id="multipart"),
        pytest.param("application/json", 200, id="json"),
        pytest.param("application/json; charset=utf-8", 200, id="json_charset"),
        pytest.param("Application/JSON", 200, id="json_case"),
    ],
)
async def test_post_bodies_must_be_json(content_type: str | None, status: int) -> None:
    app = create_app(upstream=RecordingUpstream(CHAT_REC))
    headers = {"content-type": content_type} if content_type else {}
    async with asgi(app) as client:
        response = await client.post(
            "http://bridge/v1/chat/completions",
            content=json.dumps({"model": "m", "messages": HI}).encode(),
            headers=headers,
        )
    assert response.status_code == status
    if status == 415:
        assert "application/json" in response.json()["error"]["message"]
        assert app.upstream.requests == []  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- Host, Origin, CORS


@pytest.mark.parametrize(
    ("host", "status"),
    [
        pytest.param("127.0.0.1:8000", 200, id="ipv4_port"),
        pytest.param("localhost", 200, id="localhost"),
        pytest.param("LOCALHOST:1234", 200, id="case"),
        pytest.param("[::1]:8000", 200, id="ipv6"),
        pytest.param("attacker.example", 421, id="rebinding"),
        pytest.param("attacker.example:8000", 421, id="rebinding_port"),
        pytest.param("127.0.0.1.attacker.example", 421, id="lookalike"),
    ],
)
async def test_host_allow_list_defeats_dns_rebinding(host: str, status: int) -> None:
    app = create_app(
        upstream=RecordingUpstream(CHAT_REC),
        guard=Guard(allowed_hosts=frozenset({"localhost", "127.0.0.1", "::1"})),
    )
    async with asgi(app) as client:
        response = await client.post(
            "http://bridge/v1/chat/completions", json={"model": "m", "messages": HI}, headers={"host": host}
        )
    assert response.status_code == status
    if status == 421:
        assert app.upstream.requests == []  # type: ignore[attr-defined]


async def test_foreign_origin_is_refused_same_origin_and_cors_origins_pass() -> None:
    guard = Guard(cors_origins=frozenset({"https://ui.example"}))
    app = create_app(upstream=RecordingUpstream(CHAT_REC), guard=guard)
    body = {"model": "m", "messages": HI}
    async with asgi(app) as client:
        evil = await client.post(
            "http://bridge/v1/chat/completions", json=body, headers={"origin": "https://evil.example"}
        )
        same = await client.post(
            "http://127.0.0.1:8000/v1/chat/completions",
            json=body,
            headers={"origin": "http://127.0.0.1:8000"},
        )
        cors = await client.post(
            "http://bridge/v1/chat/completions", json=body, headers={"origin": "https://ui.example"}
        )
        plain = await client.post("http://bridge/v1/chat/completions", json=body)
    assert evil.status_code == 403
    assert "origin" in evil.json()["error"]["message"]
    assert "access-control-allow-origin" not in evil.headers
    assert same.status_code == 200
    assert "access-control-allow-origin" not in same.headers
    assert cors.status_code == 200
    assert cors.headers["access-control-allow-origin"] == "https://ui.example"
    assert "x-maas-stream-upstream" in cors.headers["access-control-expose-headers"]
    assert plain.status_code == 200  # no Origin: not a browser
    assert len(app.upstream.requests) == 3  # type: ignore[attr-defined]


async def test_cors_preflight_is_answered_only_for_allowed_origins() -> None:
    asked = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }
    on = create_app(
        upstream=RecordingUpstream(CHAT_REC), guard=Guard(cors_origins=frozenset({"https://ui.example"}))
    )
    off = create_app(upstream=RecordingUpstream(CHAT_REC))
    async with asgi(on) as a, asgi(off) as b:
        ok = await a.options(
            "http://bridge/v1/chat/completions", headers={"origin": "https://ui.example", **asked}
        )
        other = await a.options(
            "http://bridge/v1/chat/completions", headers={"origin": "https://x.example", **asked}
        )
        closed = await b.options(
            "http://bridge/v1/chat/completions", headers={"origin": "https://ui.example", **asked}
        )
    assert ok.status_code == 204
    assert ok.headers["access-control-allow-origin"] == "https://ui.example"
    assert "POST" in ok.headers["access-control-allow-methods"]
    assert ok.headers["access-control-allow-headers"] == "authorization, content-type"
    assert other.status_code == 403
    assert closed.status_code == 403
    assert "access-control-allow-origin" not in closed.headers


# ---------------------------------------------------------------------- model names and the URL


@pytest.mark.parametrize(
    "model",
    [
        "../../../v1/files?x=",
        "gpt-4o/../../admin",
        "..",
        "m?key=x",
        "m#frag",
        "m%2e%2e",
        "m with space",
        "/abs",
        "a//b",
        "x" * 300,
    ],
)
async def test_path_injection_through_the_model_is_refused(model: str) -> None:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    url = "https://upstream.test/v1beta/models/{model}:streamGenerateContent?alt=sse"
    app = create_app(upstream=HTTPUpstream("gemini", url, api_key="upstream-secret-key", client=client))
    async with asgi(app) as http:
        response = await http.post("http://bridge/v1/chat/completions", json={"model": model, "messages": HI})
    assert response.status_code == 400
    assert "invalid model name" in response.json()["error"]["message"]
    assert seen == []  # nothing was sent anywhere with the key


async def test_model_named_in_the_path_is_checked_too() -> None:
    app = create_app(upstream=RecordingUpstream(CHAT_REC))
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    async with asgi(app) as client:
        dots = await client.post("http://bridge/v1beta/models/..:generateContent", json=body)
        quoted = await client.post("http://bridge/v1beta/models/m%3Fkey=1:generateContent", json=body)
    assert dots.status_code == 400
    assert quoted.status_code == 400
    assert dots.json()["error"]["status"] == "INVALID_ARGUMENT"


async def test_a_valid_model_is_quoted_into_the_upstream_url() -> None:
    seen: list[httpx.Request] = []
    recording = (RECORDINGS / "gemini/max_tokens.sse").read_bytes()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=recording)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    url = "https://upstream.test/v1beta/models/{model}:streamGenerateContent?alt=sse"
    app = create_app(upstream=HTTPUpstream("gemini", url, api_key="k" * 10, client=client))
    async with asgi(app) as http:
        response = await http.post(
            "http://bridge/v1/chat/completions", json={"model": "tuned/m-1@2", "messages": HI}
        )
    assert response.status_code == 200
    assert seen[0].url.raw_path == b"/v1beta/models/tuned%2Fm-1@2:streamGenerateContent?alt=sse"


@pytest.mark.parametrize(
    "model",
    [
        "gpt-4o",
        "claude-sonnet-4@20250514",
        "models/gemini-2.5-pro",
        "meta-llama/Llama-3-8b",
        "a.b:c+d_e",
        None,
    ],
)
def test_real_model_names_pass(model: str | None) -> None:
    check_model(model)  # raises on a refusal
    assert model is None or model.isprintable()


# ---------------------------------------------------------------------- secrets never shown


async def test_no_secret_in_error_bodies_or_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    upstream_key = "sk-upstream-secret-000111"

    async def handler(request: httpx.Request) -> httpx.Response:
        # A provider that echoes the key it was sent back in its error (it happens).
        return httpx.Response(500, json={"error": {"message": f"bad key {upstream_key} for {request.url}"}})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    url = f"https://upstream.test/v1beta/models/{{model}}:streamGenerateContent?alt=sse&key={upstream_key}"
    app = create_app(
        upstream=HTTPUpstream("gemini", url, api_key=upstream_key, client=client), guard=Guard(keys=(KEY,))
    )
    with caplog.at_level(logging.DEBUG, logger="maas_stream"):
        async with asgi(app) as http:
            failed = await http.post(
                "http://bridge/v1/chat/completions",
                json={"model": "m", "messages": HI},
                headers={"authorization": f"Bearer {KEY}"},
            )
            denied = await http.post(
                "http://bridge/v1/chat/completions",
                json={"model": "m", "messages": HI},
                headers={"authorization": f"Bearer {KEY}-wrong"},
            )
    assert failed.status_code == 500
    assert denied.status_code == 401
    for text in (failed.text, denied.text, *(r.getMessage() for r in caplog.records)):
        assert upstream_key not in text
        assert KEY not in text
    assert "[REDACTED]" in failed.text
    assert any(r.name == "maas_stream.bridge.access" for r in caplog.records)


async def test_provider_http_error_message_redacts_the_query_key() -> None:
    from maas_stream.io import ProviderHTTPError, aconnect

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"error": {"message": "denied"}})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    url = "https://upstream.test/v1beta/models/m:streamGenerateContent?alt=sse&key=AIzaSECRET42"
    with pytest.raises(ProviderHTTPError) as info:
        async with aconnect(client, "POST", url, protocol="gemini", json={}):
            pass
    assert "AIzaSECRET42" not in str(info.value)
    assert "key=%5BREDACTED%5D" in str(info.value) or "key=[REDACTED]" in str(info.value)


def test_serve_banner_redacts_the_upstream_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    url = "https://g.example/v1beta/models/{model}:streamGenerateContent?alt=sse&key=AIzaBANNER99"
    assert main(["serve", "--upstream-protocol", "gemini", "--upstream-url", url, "--bridge-key", KEY]) == 0
    err = capsys.readouterr().err
    assert "AIzaBANNER99" not in err
    assert KEY not in err
    assert "g.example" in err
    assert "1 bridge key(s)" in err
