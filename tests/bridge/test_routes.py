"""Routing (``bridge/_routes.py``): model name or pattern → upstream, fallbacks, model listings.

The official SDKs talk to one bridge with two upstreams of different protocols and reach the one
their model names; a route that fails before the first byte (429, 5xx, unreachable on loopback)
is replaced by its fallback; ``/v1/models`` lists the routes in each SDK's own shape.
"""

from __future__ import annotations

import json
import logging
import socket
from typing import TYPE_CHECKING, Any

import anthropic
import anyio
import httpx
import openai
import pytest

from maas_stream.bridge import (
    BridgeApp,
    ConfigError,
    HTTPUpstream,
    RecordingUpstream,
    Route,
    Router,
    create_app,
    load_routes,
)
from tests.bridge.test_auth import HI, anthropic_sdk, asgi, genai_sdk, openai_sdk
from tests.bridge.test_serve import LIMIT, expected
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

ANTHROPIC_REC = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
GEMINI_REC = RECORDINGS / "gemini/thoughts_text_parallel_calls.sse"
CHAT_REC = RECORDINGS / "openai-chat/readme_text_then_parallel_tools.sse"


def routes_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "routes.toml"
    path.write_text(text)
    return path


@pytest.fixture
def two_upstreams(tmp_path: Path) -> BridgeApp:
    """``claude-*`` → an Anthropic upstream, ``gemini-*`` → a Gemini one (recordings)."""
    config = routes_file(
        tmp_path,
        f"""
[[routes]]
model = "claude-*"
recording = "{ANTHROPIC_REC}"

[[routes]]
name = "gemini"
model = "gemini-*"
recording = "{GEMINI_REC}"
""",
    )
    return create_app(routes=config)


def calls_of(tool_calls: Any) -> list[tuple[str, Any]]:
    return [(c.function.name, json.loads(c.function.arguments or "{}")) for c in tool_calls or []]


# ---------------------------------------------------------------------- SDKs, two upstreams


async def test_openai_sdk_reaches_the_upstream_its_model_names(two_upstreams: BridgeApp) -> None:
    client = openai_sdk(two_upstreams, "k")
    with anyio.fail_after(LIMIT):
        a = await client.chat.completions.create(model="claude-x", messages=HI)
        async with client.chat.completions.stream(model="gemini-y", messages=HI) as stream:
            g = await stream.get_final_completion()
    assert (a.choices[0].message.content or "", calls_of(a.choices[0].message.tool_calls)) == expected(
        ANTHROPIC_REC
    )
    assert (g.choices[0].message.content or "", calls_of(g.choices[0].message.tool_calls)) == expected(
        GEMINI_REC
    )
    assert [len(r.upstream.requests) for r in two_upstreams.router.routes] == [1, 1]  # type: ignore[attr-defined]
    assert two_upstreams.router.routes[0].upstream.protocol == "anthropic"
    assert two_upstreams.router.routes[1].upstream.protocol == "gemini"


async def test_anthropic_sdk_reaches_the_upstream_its_model_names(two_upstreams: BridgeApp) -> None:
    client = anthropic_sdk(two_upstreams, "k")
    with anyio.fail_after(LIMIT):
        async with client.messages.stream(model="gemini-2", max_tokens=10, messages=HI) as stream:
            g = await stream.get_final_message()
        a = await client.messages.create(model="claude-3", max_tokens=10, messages=HI)
    for message, path in ((g, GEMINI_REC), (a, ANTHROPIC_REC)):
        text = "".join(b.text for b in message.content if b.type == "text")
        assert (text, [(b.name, b.input) for b in message.content if b.type == "tool_use"]) == expected(path)


async def test_genai_sdk_reaches_the_upstream_its_model_names(two_upstreams: BridgeApp) -> None:
    client = genai_sdk(two_upstreams, "k")
    got: dict[str, tuple[str, list[tuple[str, Any]]]] = {}
    with anyio.fail_after(LIMIT):
        for model in ("claude-a", "gemini-b"):
            text: list[str] = []
            calls: list[tuple[str, Any]] = []
            async for chunk in await client.aio.models.generate_content_stream(model=model, contents="hi"):
                for cand in chunk.candidates or []:
                    for part in (cand.content.parts if cand.content else None) or []:
                        if part.text is not None and not part.thought:
                            text.append(part.text)
                        if part.function_call is not None:
                            calls.append((part.function_call.name or "", part.function_call.args or {}))
            got[model] = ("".join(text), calls)
    assert got == {"claude-a": expected(ANTHROPIC_REC), "gemini-b": expected(GEMINI_REC)}


async def test_no_route_is_a_404_in_the_clients_shape(two_upstreams: BridgeApp) -> None:
    with pytest.raises(openai.NotFoundError, match=r"no route serves the model 'gpt-5'") as chat:
        await openai_sdk(two_upstreams, "k").chat.completions.create(model="gpt-5", messages=HI)
    with pytest.raises(anthropic.NotFoundError, match="claude-\\*, gemini-\\*"):
        await anthropic_sdk(two_upstreams, "k").messages.create(model="gpt-5", max_tokens=5, messages=HI)
    assert chat.value.status_code == 404


# ---------------------------------------------------------------------- the router


def test_exact_names_win_over_patterns_patterns_in_order() -> None:
    a, b, c = (RecordingUpstream(CHAT_REC) for _ in range(3))
    router = Router([Route("gpt-*", a), Route("gpt-4o", b), Route("*", c, name="rest")])
    assert router.select("gpt-4o").upstream is b
    assert router.select("gpt-5").upstream is a
    assert router.select("claude").upstream is c
    assert router.select(None).upstream is c  # no model named: only a catch-all serves it
    assert router.models() == ["gpt-*", "gpt-4o", "*"]


def test_a_pattern_match_is_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from maas_stream.bridge import _routes

    a, c = RecordingUpstream(CHAT_REC), RecordingUpstream(CHAT_REC)
    router = Router([Route("gpt-*", a), Route("*", c, name="rest")])
    calls: list[str] = []
    matches = Route.matches

    def counted(self: Route, model: str) -> bool:
        calls.append(model)
        return matches(self, model)

    monkeypatch.setattr(Route, "matches", counted)
    monkeypatch.setattr(_routes, "MATCH_CACHE", 3)
    assert router.select("gpt-5").upstream is a
    tried = len(calls)
    assert [router.select("gpt-5").upstream for _ in range(5)] == [a] * 5
    assert len(calls) == tried  # no pattern tried again for a name seen
    for i in range(10):  # client-chosen names: the memory stays bounded
        assert router.select(f"other-{i}").upstream is c
        assert len(router._matched) <= 3
    assert router.select("gpt-5").upstream is a  # forgotten, found again the same way


def test_fallback_chain_in_order_each_once() -> None:
    up = RecordingUpstream(CHAT_REC)
    router = Router(
        [Route("a", up, fallbacks=("b", "c", "b")), Route("b", up, fallbacks=("a",)), Route("c", up)]
    )
    assert [r.name for r in router.chain(router.select("a"))] == ["a", "b", "c"]
    assert [r.name for r in router.chain(router.select("b"))] == ["b", "a"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        pytest.param('[[routes]]\nprotocol = "openai-chat"\n', "model", id="no_model"),
        pytest.param('[[routes]]\nmodel = "m"\n', "protocol", id="no_protocol"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\nflavour = 1\n', "flavour", id="unknown_field"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "nope"\n', "unknown protocol", id="bad_protocol"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\nfallbacks = ["x"]\n', "'x' names no route", id="bad_fallback"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\n[[routes]]\nmodel = "m"\nprotocol = "anthropic"\n', "two routes", id="duplicate"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\ntimeouts = { nap = 3 }\n', "unknown timeout 'nap'", id="bad_timeout"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\nupstream_model = "../x"\n', "invalid model name", id="bad_rename"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\napi_key = "a"\napi_key_env = "B"\n', "one of", id="two_key_sources"),
        pytest.param('[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\napi_key_file = "missing.key"\n', "missing.key", id="missing_key_file"),
        pytest.param('[server]\nport = 1\n', "unknown top-level", id="unknown_table"),
        pytest.param("routes = 1\n", "no [[routes]]", id="not_tables"),
        pytest.param("[[routes]\n", "not valid TOML", id="bad_toml"),
    ],
)  # fmt: skip
def test_bad_routes_files_name_the_route_and_field(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=r"routes\.toml") as info:
        load_routes(routes_file(tmp_path, text))
    assert needle in str(info.value)


def test_keys_come_from_env_or_file_and_inline_keys_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "anthropic.key").write_text("sk-from-file-123\n")
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-from-env-456")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    config = routes_file(
        tmp_path,
        """
[[routes]]
model = "gpt-*"
protocol = "openai-chat"
api_key_env = "TEAM_OPENAI_KEY"
timeouts = { idle = 12 }
headers = { "x-team" = "research" }

[[routes]]
model = "claude-*"
protocol = "anthropic"
api_key_file = "anthropic.key"
upstream_model = "claude-sonnet-4-5"

[[routes]]
model = "gemini-*"
protocol = "gemini"

[[routes]]
model = "inline"
protocol = "openai-responses"
api_key = "sk-inline-789"
""",
    )
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        router = load_routes(config)
    gpt, claude, gemini, inline = (r.upstream for r in router.routes)
    assert isinstance(gpt, HTTPUpstream)
    assert isinstance(claude, HTTPUpstream)
    assert gpt._headers["authorization"] == "Bearer sk-from-env-456"
    assert gpt._headers["x-team"] == "research"
    assert gpt.timeouts.idle == 12.0
    assert claude._headers["x-api-key"] == "sk-from-file-123"
    assert claude.model == "claude-sonnet-4-5"
    assert claude.url == "https://api.anthropic.com/v1/messages"  # the spec's default
    warnings = [r.getMessage() for r in caplog.records]
    assert any("GEMINI_API_KEY is not set" in w and "gemini-*" in w for w in warnings)
    assert any("'inline'" in w and "written in the routes file" in w for w in warnings)
    assert not any("sk-" in w for w in warnings)  # a warning never shows a key
    assert "authorization" not in gemini._headers  # type: ignore[attr-defined]
    assert inline.protocol == "openai-responses"


# ---------------------------------------------------------------------- rename and fallbacks


def sse_upstream(
    protocol: str,
    recording: Path | None,
    seen: list[httpx.Request],
    *,
    status: int = 200,
    model: str | None = None,
) -> HTTPUpstream:
    data = recording.read_bytes() if recording is not None else b""

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if status != 200:
            return httpx.Response(status, json={"error": {"message": f"upstream says {status}"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return HTTPUpstream(
        protocol, "https://upstream.test/{model}", api_key="sk-route-key", model=model, client=client
    )


async def test_route_renames_the_model_upstream() -> None:
    seen: list[httpx.Request] = []
    up = sse_upstream("anthropic", ANTHROPIC_REC, seen, model="claude-sonnet-4-5")
    app = create_app(routes=[Route("smart", up)])
    await openai_sdk(app, "k").chat.completions.create(model="smart", messages=HI)
    assert json.loads(seen[0].content)["model"] == "claude-sonnet-4-5"
    assert seen[0].url.path == "/claude-sonnet-4-5"


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_fallback_before_the_first_byte(status: int, caplog: pytest.LogCaptureFixture) -> None:
    first: list[httpx.Request] = []
    second: list[httpx.Request] = []
    app = create_app(
        routes=[
            Route("m", sse_upstream("anthropic", None, first, status=status), fallbacks=("backup",)),
            Route("backup-model", sse_upstream("openai-chat", CHAT_REC, second), name="backup"),
        ]
    )
    with caplog.at_level(logging.INFO, logger="maas_stream"):
        async with openai_sdk(app, "k").chat.completions.stream(model="m", messages=HI) as stream:
            final = await stream.get_final_completion()
    assert final.choices[0].message.content == expected(CHAT_REC)[0]
    assert (len(first), len(second)) == (1, 1)
    assert "max_tokens" in json.loads(first[0].content)  # each upstream got its own protocol's body
    assert "messages" in json.loads(second[0].content)
    assert any(f"route 'm' failed before the first byte ({status}" in r.getMessage() for r in caplog.records)
    line = next(r for r in caplog.records if r.name == "maas_stream.bridge.access")
    assert line.exchange["fell_back_from"] == ["m"]  # type: ignore[attr-defined]
    assert line.exchange["route"] == "backup"  # type: ignore[attr-defined]


async def test_the_body_is_decoded_once_and_again_only_for_a_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from maas_stream.bridge import _app
    from maas_stream.bridge._asgi import decode_body as decode

    decoded: list[bytes] = []

    def counted(raw: bytes) -> Any:
        decoded.append(raw)
        return decode(raw)

    monkeypatch.setattr(_app, "decode_body", counted)
    second: list[httpx.Request] = []
    app = create_app(
        routes=[
            Route("m", sse_upstream("anthropic", None, [], status=503), fallbacks=("backup",)),
            Route("once", sse_upstream("openai-chat", CHAT_REC, [])),
            Route("backup-model", sse_upstream("openai-chat", CHAT_REC, second), name="backup"),
        ]
    )
    sdk = openai_sdk(app, "k")
    await sdk.chat.completions.create(model="once", messages=HI)
    assert len(decoded) == 1  # the model read and the request converted from one decode
    # A fallback converts the client's body afresh (the first conversion's may have changed it).
    final = await sdk.chat.completions.create(model="m", messages=HI)
    assert final.choices[0].message.content == expected(CHAT_REC)[0]
    assert len(decoded) == 3
    assert decoded[1] == decoded[2]
    assert json.loads(second[0].content)["messages"][-1]["content"] == HI[-1]["content"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_fallback_when_the_upstream_is_unreachable() -> None:
    dead = HTTPUpstream("anthropic", f"http://127.0.0.1:{closed_port()}/v1/messages", api_key="sk-dead-key")
    second: list[httpx.Request] = []
    app = create_app(
        routes=[
            Route("*", dead, fallbacks=("live",)),
            Route("live", sse_upstream("gemini", GEMINI_REC, second)),
        ]
    )
    with anyio.fail_after(LIMIT):
        reply = await anthropic_sdk(app, "k").messages.create(model="any", max_tokens=5, messages=HI)
    assert "".join(b.text for b in reply.content if b.type == "text") == expected(GEMINI_REC)[0]
    assert len(second) == 1
    await dead.aclose()


async def test_unreachable_without_fallback_is_a_502_in_the_clients_shape() -> None:
    dead = HTTPUpstream("openai-chat", f"http://127.0.0.1:{closed_port()}/v1/chat", api_key="sk-dead-key")
    app = create_app(upstream=dead)
    with anyio.fail_after(LIMIT), pytest.raises(anthropic.InternalServerError) as info:
        await anthropic_sdk(app, "k").messages.create(model="any", max_tokens=5, messages=HI)
    assert info.value.status_code == 502
    await dead.aclose()


async def test_no_fallback_on_a_client_error_or_after_the_last_route() -> None:
    seen: list[httpx.Request] = []
    backup: list[httpx.Request] = []
    app = create_app(
        routes=[
            Route("bad", sse_upstream("openai-chat", None, seen, status=400), fallbacks=("b",)),
            Route("limited", sse_upstream("openai-chat", None, seen, status=429), fallbacks=("c",)),
            Route("b", sse_upstream("openai-chat", CHAT_REC, backup)),
            Route("c", sse_upstream("openai-chat", None, seen, status=500)),
        ]
    )
    client = openai_sdk(app, "k")
    with pytest.raises(openai.BadRequestError, match="upstream says 400"):
        await client.chat.completions.create(model="bad", messages=HI)
    with pytest.raises(openai.InternalServerError, match="upstream says 500"):
        await client.chat.completions.create(model="limited", messages=HI)  # 429, then c's 500: the last word
    assert backup == []
    assert len(seen) == 3


# ---------------------------------------------------------------------- model listings


async def test_model_listings_in_each_sdks_shape(two_upstreams: BridgeApp) -> None:
    with anyio.fail_after(LIMIT):
        oa = [m.id async for m in openai_sdk(two_upstreams, "k").models.list()]
        an = [m.id async for m in anthropic_sdk(two_upstreams, "k").models.list()]
        gm = [m.name async for m in await genai_sdk(two_upstreams, "k").aio.models.list()]
    assert oa == ["claude-*", "gemini-*"]
    assert an == ["claude-*", "gemini-*"]
    assert gm == ["models/claude-*", "models/gemini-*"]


async def test_model_listing_needs_a_bridge_key_when_keys_are_set() -> None:
    from maas_stream.bridge import Guard

    app = create_app(upstream=RecordingUpstream(CHAT_REC), guard=Guard(keys=("bridge-key-123456",)))
    async with asgi(app) as client:
        denied = await client.get("http://bridge/v1/models")
        ok = await client.get(
            "http://bridge/v1/models", headers={"authorization": "Bearer bridge-key-123456"}
        )
        gemini = await client.get(
            "http://bridge/v1beta/models", headers={"x-goog-api-key": "bridge-key-123456"}
        )
    assert denied.status_code == 401
    assert ok.json() == {
        "object": "list",
        "data": [{"id": "*", "object": "model", "created": 0, "owned_by": "maas-stream"}],
    }
    assert gemini.json()["models"][0]["name"] == "models/*"


def test_create_app_takes_upstream_or_routes() -> None:
    up = RecordingUpstream(CHAT_REC)
    assert create_app(upstream=up).router.select("anything").upstream is up
    with pytest.raises(ValueError, match="either"):
        create_app()
    with pytest.raises(ValueError, match="either"):
        create_app(upstream=up, routes=[Route("*", up)])


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param(b"{nope", "not valid JSON", id="bad_json"),
        pytest.param(b"[1]", "JSON object", id="array"),
    ],
)
async def test_a_body_no_route_can_be_read_from_is_a_400(
    two_upstreams: BridgeApp, content: bytes, needle: str
) -> None:
    async with asgi(two_upstreams) as client:
        response = await client.post(
            "http://bridge/v1/messages", content=content, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert needle in response.json()["error"]["message"]


async def test_a_route_sets_its_own_drop_policy_and_model_caps(tmp_path: Path) -> None:
    config = routes_file(
        tmp_path,
        f"""
[[routes]]
model = "strict-*"
recording = "{ANTHROPIC_REC}"

[[routes]]
model = "lenient-*"
recording = "{ANTHROPIC_REC}"
drop_params = true
model_caps = {{ sampling = ["top_p"], max_output = 777 }}
""",
    )
    app = create_app(routes=config)
    sdk = openai_sdk(app, "k")
    # n > 1 changes the answer and Anthropic has no n: refused on the strict route...
    with pytest.raises(openai.BadRequestError, match="request field n"):
        await sdk.chat.completions.create(model="strict-1", messages=HI, n=2, stream=True)
    # ...dropped and reported on the lenient one, whose model takes top_p only.
    stream = await sdk.chat.completions.create(
        model="lenient-1", messages=HI, n=2, temperature=0.3, top_p=0.5, stream=True
    )
    assert [c async for c in stream]
    lenient = app.router.routes[1].upstream
    assert isinstance(lenient, RecordingUpstream)
    sent = lenient.requests[-1]
    assert "temperature" not in sent
    assert sent["top_p"] == 0.5
    assert sent["max_tokens"] == 777  # the route's model maximum, the client named none


@pytest.mark.parametrize(
    ("caps", "needle"),
    [
        ("model_caps = { fast = true }", "unknown field(s) fast"),
        ('model_caps = { sampling = "temperature" }', "list of parameter names"),
        ("model_caps = { max_output = 0 }", "positive integer"),
        ("drop_params = 1", "true or false"),
    ],
)
def test_bad_route_caps_name_the_field(tmp_path: Path, caps: str, needle: str) -> None:
    text = f'[[routes]]\nmodel = "m"\nprotocol = "openai-chat"\n{caps}\n'
    with pytest.raises(ConfigError) as info:
        load_routes(routes_file(tmp_path, text))
    assert needle in str(info.value)
