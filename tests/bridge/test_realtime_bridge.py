"""Realtime sessions through the bridge: the official SDKs' realtime clients over loopback.

The bridge runs under uvicorn; openai's ``client.realtime.connect`` (and
``client.beta.realtime.connect``) and google-genai's ``client.aio.live.connect`` talk to it as
they would to their provider, with a bridge key. Behind it, fake upstreams written from the docs
(``realtime_fakes``) check the operator's key. Every server event the openai client receives is
validated against the SDK's own event union (GA or beta); google-genai parses each Live message
into its ``LiveServerMessage``.

Same-protocol sessions run with the bridge's relay, the cross-protocol ones through the session
translator (``maas_stream._session_bridge``; more of them in ``test_realtime_cross``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter
from websockets.exceptions import ConnectionClosed, InvalidStatus

from maas_stream.bridge import Guard, Limits, Route, create_app, load_routes
from maas_stream.bridge._session_limits import SessionLimits
from maas_stream.bridge._ws import WebSocketUpstream, sendable
from tests.bridge.realtime_fakes import (
    ANSWER,
    AUDIO_OUT,
    BRIDGE_KEY,
    TOOL_ANSWER,
    UPSTREAM_KEY,
    FakeLive,
    FakeRealtime,
    serving,
    tls_files,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from maas_stream.bridge import BridgeApp

pytestmark = pytest.mark.anyio

LIMIT = 20
GA_EVENT: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
BETA_EVENT: TypeAdapter[Any] = TypeAdapter(BetaServerEvent)
LIVE_MODEL = "gemini-live-2.5-flash"


def bridge(upstream: WebSocketUpstream, **kw: Any) -> BridgeApp:
    return create_app(
        routes=[Route("*", upstream)],
        guard=Guard(keys=(BRIDGE_KEY,), allowed_hosts=frozenset({"127.0.0.1", "localhost"})),
        **kw,
    )


def realtime_upstream(fake: FakeRealtime) -> WebSocketUpstream:
    return WebSocketUpstream("openai-realtime", fake.url, api_key=UPSTREAM_KEY)


def live_upstream(fake: FakeLive) -> WebSocketUpstream:
    return WebSocketUpstream("google-live", fake.url, api_key=UPSTREAM_KEY)


def openai_client(port: int, key: str = BRIDGE_KEY) -> openai.AsyncOpenAI:
    # websocket_base_url: the beta client would otherwise connect with wss whatever base_url says
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=f"http://127.0.0.1:{port}/v1",
        websocket_base_url=f"ws://127.0.0.1:{port}/v1",
        max_retries=0,
    )


async def settled(app: BridgeApp, sessions: int = 1) -> None:
    """Wait until ``sessions`` sessions were recorded (the bridge records after both sides closed)."""
    with anyio.fail_after(LIMIT):
        while app.stats.streams + app.stats.stream_errors + app.stats.rejected < sessions:  # noqa: ASYNC110
            await anyio.sleep(0.01)


def user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


class Events:
    """A realtime connection's server events, each validated by the SDK's event union."""

    def __init__(self, connection: Any, adapter: TypeAdapter[Any] = GA_EVENT) -> None:
        self.connection = connection
        self.adapter = adapter
        self.seen: list[Any] = []

    async def until(self, *types: str) -> list[Any]:
        """Events up to (and including) the first of ``types``."""
        out = []
        while True:
            raw = await self.connection.recv_bytes()
            event = self.adapter.validate_json(raw)
            self.seen.append(event)
            out.append(event)
            if event.type in types:
                return out


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type in ("response.output_text.delta", "response.text.delta"))


# ---------------------------------------------------------------------------------- OpenAI Realtime


@pytest.fixture
async def realtime() -> AsyncIterator[tuple[FakeRealtime, int, BridgeApp]]:
    async with FakeRealtime() as fake:
        app = bridge(realtime_upstream(fake))
        async with serving(app) as port:
            yield fake, port, app


async def test_openai_text_turn(realtime: tuple[FakeRealtime, int, BridgeApp]) -> None:
    fake, port, app = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            created = await events.until("session.created")
            await conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            await events.until("session.updated")
            await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
            await conn.response.create()
            turn = await events.until("response.done")
        closes = await fake.ended()
    await settled(app)
    assert created[0].session.model == "gpt-realtime"
    assert text_of(turn) == ANSWER
    assert turn[-1].response.status == "completed"
    assert fake.seen.paths == ["/v1/realtime?model=gpt-realtime"]
    assert fake.seen.headers[0]["authorization"] == f"Bearer {UPSTREAM_KEY}"  # the operator's key
    assert BRIDGE_KEY not in json.dumps(fake.seen.headers)  # the bridge key stays at the bridge
    assert [m["type"] for m in fake.seen.messages] == [
        "session.update",
        "conversation.item.create",
        "response.create",
    ]
    assert closes == [(1000, "")]  # the client's close reached the upstream
    assert app.stats.streams == 1


async def test_openai_tool_round_trip(realtime: tuple[FakeRealtime, int, BridgeApp]) -> None:
    fake, port, _ = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.conversation.item.create(item=user_text("weather in Paris?"))  # type: ignore[arg-type]
            await conn.response.create()
            first = await events.until("response.done")
            call = first[-1].response.output[0]
            await conn.conversation.item.create(
                item={"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 18}'}
            )
            await conn.response.create()
            second = await events.until("response.done")
    assert (call.type, call.name, json.loads(call.arguments)) == (
        "function_call",
        "get_weather",
        {"city": "Paris"},
    )
    assert text_of(second) == TOOL_ANSWER
    outputs = [m["item"] for m in fake.seen.messages if m["type"] == "conversation.item.create"]
    assert outputs[1] == {"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 18}'}


async def test_openai_cancelled_call(realtime: tuple[FakeRealtime, int, BridgeApp]) -> None:
    _, port, app = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.conversation.item.create(item=user_text("slow weather"))  # type: ignore[arg-type]
            await conn.response.create()
            await events.until("response.function_call_arguments.delta")
            await conn.response.cancel()
            done = (await events.until("response.done"))[-1]
    await settled(app)
    assert done.response.status == "cancelled"
    assert done.response.output[0].status == "incomplete"
    assert done.response.output[0].arguments == '{"city'
    assert app.stats.stream_errors == 0


async def test_openai_recoverable_error_keeps_the_session(
    realtime: tuple[FakeRealtime, int, BridgeApp],
) -> None:
    _, port, app = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.response.cancel()  # nothing active: a recoverable error
            error = (await events.until("error"))[-1]
            await conn.conversation.item.create(item=user_text("still there?"))  # type: ignore[arg-type]
            await conn.response.create()
            turn = await events.until("response.done")
    await settled(app)
    assert error.error.code == "response_cancel_not_active"
    assert text_of(turn) == ANSWER
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


async def test_openai_beta_client(realtime: tuple[FakeRealtime, int, BridgeApp]) -> None:
    fake, port, _ = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).beta.realtime.connect(model="gpt-4o-realtime-preview") as conn:
            events = Events(conn, BETA_EVENT)
            await events.until("session.created")
            await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
            await conn.response.create()
            turn = await events.until("response.done")
    assert fake.seen.headers[0]["openai-beta"] == "realtime=v1"  # beta event names upstream too
    assert any(e.type == "response.text.delta" for e in turn)
    assert text_of(turn) == ANSWER


@pytest.mark.parametrize(
    ("trigger", "code", "says"),
    [
        pytest.param("cut", 1011, "connection was lost", id="cut"),
        pytest.param("fail", 1011, "the model is overloaded", id="closed-with-error"),
    ],
)
async def test_openai_upstream_failure_is_an_error_event_then_close(
    realtime: tuple[FakeRealtime, int, BridgeApp], trigger: str, code: int, says: str
) -> None:
    _, port, app = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.conversation.item.create(item=user_text(trigger))  # type: ignore[arg-type]
            await conn.response.create()
            error = (await events.until("error"))[-1]
            with pytest.raises(ConnectionClosed) as closed:
                await conn.recv_bytes()
    await settled(app)
    assert error.error.type == "server_error"
    assert says in (error.error.message or "")
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == code
    assert (app.stats.streams, app.stats.stream_errors) == (0, 1)


async def test_openai_wrong_bridge_key_is_refused_before_accepting(
    realtime: tuple[FakeRealtime, int, BridgeApp],
) -> None:
    fake, port, app = realtime
    with anyio.fail_after(LIMIT), pytest.raises(InvalidStatus) as refused:
        async with openai_client(port, key="not-the-bridge-key").realtime.connect(model="gpt-realtime"):
            pass
    await settled(app)
    assert refused.value.response.status_code == 401
    body = json.loads(refused.value.response.body or b"{}")
    assert "invalid bridge key" in body["error"]["message"]  # OpenAI's error shape
    assert fake.seen.paths == []  # nothing reached the upstream
    assert app.stats.rejected == 1


async def test_browser_key_subprotocol_and_origin(realtime: tuple[FakeRealtime, int, BridgeApp]) -> None:
    from websockets.asyncio.client import connect

    _, port, _ = realtime
    url = f"ws://127.0.0.1:{port}/v1/realtime?model=gpt-realtime"
    offered: Any = ["realtime", f"openai-insecure-api-key.{BRIDGE_KEY}"]
    with anyio.fail_after(LIMIT):
        async with connect(url, subprotocols=offered, origin=f"http://127.0.0.1:{port}") as ws:  # type: ignore[arg-type]
            first = json.loads(await ws.recv())
            chosen = ws.subprotocol
        with pytest.raises(InvalidStatus) as foreign:
            async with connect(url, subprotocols=offered, origin="https://evil.example"):  # type: ignore[arg-type]
                pass
    assert first["type"] == "session.created"
    assert chosen == "realtime"
    assert foreign.value.response.status_code == 403


async def test_upstream_refusing_the_key_is_the_clients_http_error() -> None:
    async with FakeRealtime() as fake:
        app = bridge(WebSocketUpstream("openai-realtime", fake.url, api_key="sk-wrong-operator-key"))
        async with serving(app) as port:
            with anyio.fail_after(LIMIT), pytest.raises(InvalidStatus) as refused:
                async with openai_client(port).realtime.connect(model="gpt-realtime"):
                    pass
    assert refused.value.response.status_code == 401
    message = json.loads(refused.value.response.body or b"{}")["error"]["message"]
    assert "upstream openai-realtime refused the session: HTTP 401" in message
    assert "sk-wrong-operator-key" not in message


async def test_sessions_count_with_streams_and_idle_and_size_limits() -> None:
    async with FakeRealtime() as fake:
        app = bridge(realtime_upstream(fake), limits=Limits(max_streams=1))
        app.session_limits = SessionLimits(idle_timeout=0.3, max_message=4096)
        async with serving(app) as port:
            with anyio.fail_after(LIMIT):
                async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
                    events = Events(conn)
                    await events.until("session.created")
                    with pytest.raises(InvalidStatus) as busy:
                        async with openai_client(port).realtime.connect(model="gpt-realtime"):
                            pass
                    idle = (await events.until("error"))[-1]
                    with pytest.raises(ConnectionClosed) as closed:
                        await conn.recv_bytes()
                async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
                    events = Events(conn)
                    await events.until("session.created")
                    await conn.conversation.item.create(item=user_text("x" * 5000))  # type: ignore[arg-type]
                    too_big = (await events.until("error"))[-1]
                    with pytest.raises(ConnectionClosed) as big_closed:
                        await conn.recv_bytes()
    assert busy.value.response.status_code == 503
    assert busy.value.response.headers["retry-after"] == "1"
    assert "idle limit" in (idle.error.message or "")
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert "larger than the limit of 4096 bytes" in (too_big.error.message or "")
    assert big_closed.value.rcvd is not None
    assert big_closed.value.rcvd.code == 1009
    assert app._active == 0


@pytest.mark.parametrize("side", ["pass_client", "pass_upstream"])
async def test_a_bug_on_either_side_of_the_relay_ends_the_session_as_an_internal_error(
    realtime: tuple[FakeRealtime, int, BridgeApp], monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    # Either relay side failing stops the other one (no session left waiting) and is told.
    _, port, app = realtime
    from maas_stream._session_bridge import SessionBridge

    def broken(self: SessionBridge, message: str | bytes) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(SessionBridge, side, broken)
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            if side == "pass_client":
                await events.until("session.created")
                await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
            error = (await events.until("error"))[-1]
            with pytest.raises(ConnectionClosed) as closed:
                await conn.recv_bytes()
    assert "internal error in the bridge (RuntimeError)" in (error.error.message or "")
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1011
    with anyio.fail_after(LIMIT):
        while app._active:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    assert app.stats.internal_errors == 1


async def test_one_log_line_per_session_without_secrets(
    realtime: tuple[FakeRealtime, int, BridgeApp], caplog: pytest.LogCaptureFixture
) -> None:
    _, port, app = realtime
    caplog.set_level(logging.INFO, logger="maas_stream.bridge.access")
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
            await conn.response.create()
            await events.until("response.done")
    await settled(app)
    lines = [r for r in caplog.records if r.getMessage().startswith("bridge session")]
    assert len(lines) == 1
    fields = lines[0].exchange  # type: ignore[attr-defined]
    assert fields["client"] == fields["upstream"] == "openai-realtime"
    assert (fields["status"], fields["ended_by"], fields["close_code"]) == (101, "client", 1000)
    assert (fields["messages_in"], fields["responses"]) == (2, 1)
    assert fields["messages_out"] == fields["upstream_messages"] >= 10
    assert (fields["tokens_in"], fields["tokens_out"]) == (20, 10)
    text = caplog.text
    assert BRIDGE_KEY not in text
    assert UPSTREAM_KEY not in text
    if app.metrics.enabled:
        body, _ = app.metrics.render()
        assert b'maas_stream_requests_total{client="openai-realtime",route="*",status="101"} 1.0' in body
        assert b'maas_stream_tokens_total{direction="in",route="*"} 20.0' in body


async def test_routes_file_and_http_requests_to_a_session_upstream(tmp_path: Path) -> None:
    async with FakeRealtime() as fake:
        routes = tmp_path / "routes.toml"
        routes.write_text(
            f'[[routes]]\nmodel = "gpt-realtime*"\nprotocol = "openai-realtime"\nurl = "{fake.url}"\n'
            f'api_key_env = "FAKE_RT_KEY"\nupstream_model = "gpt-realtime-2025"\n'
        )
        import os

        os.environ["FAKE_RT_KEY"] = UPSTREAM_KEY
        try:
            router = load_routes(routes)
        finally:
            del os.environ["FAKE_RT_KEY"]
        app = create_app(routes=router, guard=Guard(keys=(BRIDGE_KEY,)))
        async with serving(app) as port:
            with anyio.fail_after(LIMIT):
                async with openai_client(port).realtime.connect(model="gpt-realtime-mini") as conn:
                    first = await Events(conn).until("session.created")
                async with httpx.AsyncClient(trust_env=False) as raw:
                    http = await raw.post(
                        f"http://127.0.0.1:{port}/v1/chat/completions",
                        json={"model": "gpt-realtime", "messages": [{"role": "user", "content": "hi"}]},
                        headers={"authorization": f"Bearer {BRIDGE_KEY}"},
                    )
    assert first[0].type == "session.created"
    assert fake.seen.paths == ["/v1/realtime?model=gpt-realtime-2025"]  # the route's rename
    assert http.status_code == 400
    assert "websocket session protocol" in http.json()["error"]["message"]


# ---------------------------------------------------------------------------------- Gemini Live


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[tuple[FakeLive, genai.Client, BridgeApp]]:
    cert, key, context = tls_files(tmp_path)
    async with FakeLive() as fake:
        app = bridge(live_upstream(fake))
        async with serving(app, tls=(cert, key)) as port:
            client = genai.Client(
                api_key=BRIDGE_KEY,
                http_options={"base_url": f"https://127.0.0.1:{port}", "async_client_args": {"ssl": context}},
            )
            yield fake, client, app


TEXT_CONFIG: Any = {"response_modalities": ["TEXT"]}
AUDIO_CONFIG: Any = {"response_modalities": ["AUDIO"]}


async def test_live_text_turn(live: tuple[FakeLive, genai.Client, BridgeApp]) -> None:
    fake, client, app = live
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "hi"}]})
            messages = [m async for m in session.receive()]
    text = "".join(m.text or "" for m in messages)
    await settled(app)
    assert text == ANSWER
    assert messages[-1].server_content is not None
    assert messages[-1].server_content.turn_complete
    assert messages[-1].usage_metadata is not None
    assert fake.seen.headers[0]["x-goog-api-key"] == UPSTREAM_KEY
    assert BRIDGE_KEY not in json.dumps(fake.seen.headers)
    assert fake.seen.messages[0]["setup"]["model"] == f"models/{LIVE_MODEL}"
    assert app.stats.streams == 1


async def test_live_tool_round_trip(live: tuple[FakeLive, genai.Client, BridgeApp]) -> None:
    fake, client, _ = live
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "weather?"}]})
            async for message in session.receive():  # a call does not end the turn: stop at it
                if message.tool_call is not None:
                    break
            assert message.tool_call is not None
            assert message.tool_call.function_calls is not None
            call = message.tool_call.function_calls[0]
            await session.send_tool_response(
                function_responses=[
                    genai_types.FunctionResponse(id=call.id, name=call.name, response={"temp_c": 18})
                ]
            )
            answer = [m async for m in session.receive()]
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
    assert "".join(m.text or "" for m in answer) == TOOL_ANSWER
    sent = fake.seen.messages[-1]
    response = sent.get("toolResponse") or sent.get("tool_response")
    assert response["functionResponses"][0]["id"] == "fc-1"


async def test_live_cancelled_call(live: tuple[FakeLive, genai.Client, BridgeApp]) -> None:
    _, client, _ = live
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "slow weather"}]})
            got = []
            async for message in session.receive():
                got.append(message)
                if message.tool_call_cancellation is not None:
                    break
    assert got[0].tool_call is not None
    assert got[-1].tool_call_cancellation is not None
    assert got[-1].tool_call_cancellation.ids == ["fc-1"]


@pytest.mark.parametrize(
    ("trigger", "says"),
    [pytest.param("cut", "connection was lost", id="cut"), pytest.param("fail", "overloaded", id="closed")],
)
async def test_live_upstream_failure_closes_with_the_error(
    live: tuple[FakeLive, genai.Client, BridgeApp], trigger: str, says: str
) -> None:
    _, client, app = live
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": trigger}]})
            with pytest.raises(genai_errors.APIError) as failed:
                async for _ in session.receive():
                    pass
    await settled(app)
    assert failed.value.code == 1011
    assert says in str(failed.value)
    assert app.stats.stream_errors == 1


async def test_live_wrong_bridge_key_is_refused(live: tuple[FakeLive, genai.Client, BridgeApp]) -> None:
    fake, client, app = live
    http_options = client.aio._api_client._http_options
    wrong = genai.Client(
        api_key="not-the-bridge-key",
        http_options={"base_url": http_options.base_url, "async_client_args": http_options.async_client_args},
    )
    with anyio.fail_after(LIMIT), pytest.raises(InvalidStatus) as refused:
        async with wrong.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG):
            pass
    await settled(app)
    assert refused.value.response.status_code == 401
    assert "invalid bridge key" in json.loads(refused.value.response.body or b"{}")["error"]["message"]
    assert fake.seen.paths == []
    assert app.stats.rejected == 1


async def test_live_model_without_a_route_is_a_close_naming_it(tmp_path: Path) -> None:
    cert, key, context = tls_files(tmp_path)
    async with FakeLive() as fake:
        app = create_app(routes=[Route("gpt-*", live_upstream(fake))], guard=Guard(keys=(BRIDGE_KEY,)))
        async with serving(app, tls=(cert, key)) as port:
            client = genai.Client(
                api_key=BRIDGE_KEY,
                http_options={"base_url": f"https://127.0.0.1:{port}", "async_client_args": {"ssl": context}},
            )
            with anyio.fail_after(LIMIT), pytest.raises(genai_errors.APIError) as refused:
                async with client.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG):
                    pass
    assert refused.value.code == 1008
    assert f"no route serves the model '{LIVE_MODEL}'" in str(refused.value)
    assert fake.seen.paths == []
    await settled(app)
    assert app.stats.stream_errors == 1


async def test_live_key_in_the_query(live: tuple[FakeLive, genai.Client, BridgeApp]) -> None:
    from websockets.asyncio.client import connect

    fake, client, _ = live
    base = client.aio._api_client._http_options.base_url
    assert base is not None
    context = client.aio._api_client._websocket_ssl_ctx["ssl"]
    url = f"{base.replace('https', 'wss')}/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent?key={BRIDGE_KEY}"
    with anyio.fail_after(LIMIT):
        async with connect(url, ssl=context) as ws:
            await ws.send(json.dumps({"setup": {"model": f"models/{LIVE_MODEL}"}}))
            first = json.loads(await ws.recv())
    assert first == {"setupComplete": {}}
    assert fake.seen.messages == [{"setup": {"model": f"models/{LIVE_MODEL}"}}]


# ---------------------------------------------------------------------------------- cross-protocol


async def test_openai_client_over_a_live_upstream() -> None:
    async with FakeLive() as fake:
        app = bridge(live_upstream(fake))
        async with serving(app) as port:
            with anyio.fail_after(LIMIT):
                async with openai_client(port).realtime.connect(model=LIVE_MODEL) as conn:
                    events = Events(conn)
                    await conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
                    await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
                    await conn.response.create()
                    turn = await events.until("response.done")
    assert text_of(turn) == ANSWER
    assert "setup" in fake.seen.messages[0]


async def test_openai_audio_turn_over_a_live_upstream_is_resampled() -> None:
    import base64

    samples = 4800  # 0.2 s of PCM16 at 24 kHz, Realtime's rate; Live takes 16 kHz
    audio = bytes(2 * samples)
    async with FakeLive() as fake:
        app = bridge(live_upstream(fake))
        async with serving(app) as port:
            with anyio.fail_after(LIMIT):
                async with openai_client(port).realtime.connect(model=LIVE_MODEL) as conn:
                    events = Events(conn)
                    await events.until("session.created")
                    await conn.session.update(
                        session={
                            "type": "realtime",
                            "output_modalities": ["audio"],
                            "audio": {
                                "input": {
                                    "format": {"type": "audio/pcm", "rate": 24000},
                                    "turn_detection": None,
                                }
                            },
                        }
                    )
                    for i in range(0, len(audio), 1920):
                        await conn.input_audio_buffer.append(
                            audio=base64.b64encode(audio[i : i + 1920]).decode()
                        )
                    await conn.input_audio_buffer.commit()
                    await conn.response.create()
                    turn = await events.until("response.done")
    out = b"".join(base64.b64decode(e.delta) for e in turn if e.type == "response.output_audio.delta")
    assert fake.messages_setup_modalities() == ["AUDIO"]
    assert abs(len(fake.audio_in) - 2 * samples * 2 // 3) <= 64  # resampled 24 -> 16 kHz
    assert len(out) == len(AUDIO_OUT)  # Live's 24 kHz output is Realtime's rate: same length


async def test_live_client_over_a_realtime_upstream(tmp_path: Path) -> None:
    cert, key, context = tls_files(tmp_path)
    async with FakeRealtime() as fake:
        app = bridge(realtime_upstream(fake))
        async with serving(app, tls=(cert, key)) as port:
            client = genai.Client(
                api_key=BRIDGE_KEY,
                http_options={"base_url": f"https://127.0.0.1:{port}", "async_client_args": {"ssl": context}},
            )
            with anyio.fail_after(LIMIT):
                async with client.aio.live.connect(model="gpt-realtime", config=TEXT_CONFIG) as session:
                    await session.send_client_content(turns={"role": "user", "parts": [{"text": "hi"}]})
                    messages = [m async for m in session.receive()]
    assert "".join(m.text or "" for m in messages) == ANSWER
    assert fake.seen.paths == ["/v1/realtime?model=gpt-realtime"]


# ---------------------------------------------------------------------------------- close codes


@pytest.mark.parametrize(
    ("received", "sent"),
    [
        (None, 1000),
        (1000, 1000),
        (1001, 1001),
        (1005, 1000),
        (1006, 1011),
        (1008, 1008),
        (1015, 1011),
        (4001, 4001),
        (2000, 1011),
    ],
)
def test_close_codes_are_mapped_to_sendable_ones(received: int | None, sent: int) -> None:
    assert sendable(received) == sent


def test_the_upstream_proxy_is_the_environments_read_once_per_host(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ws_proxy", "http_proxy", "https_proxy", "all_proxy", "socks_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    proxied = WebSocketUpstream("openai-realtime", "ws://upstream.example:8080/v1/realtime?model={model}")
    monkeypatch.setenv("ws_proxy", "http://proxy.example:3128")
    assert proxied.connect("m1").opening.proxy == "http://proxy.example:3128"
    monkeypatch.delenv("ws_proxy")  # read once: the next session to that host goes the same way
    assert proxied.connect("m2").opening.proxy == "http://proxy.example:3128"
    direct = WebSocketUpstream("openai-realtime", "ws://upstream.example:8080/v1/realtime?model={model}")
    assert direct.connect("m1").opening.proxy is None  # no proxy: said, not read again per session
    monkeypatch.setenv("ws_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "upstream.example")
    bypassed = WebSocketUpstream("openai-realtime", "ws://upstream.example:8080/v1/realtime?model={model}")
    assert bypassed.connect("m1").opening.proxy is None


# ---------------------------------------------------------------------------------- recordings and routes


async def test_a_session_recording_replays_as_the_upstream() -> None:
    from maas_stream.bridge import RecordingUpstream
    from tests.conftest import RECORDINGS

    app = create_app(
        upstream=RecordingUpstream(RECORDINGS / "openai-realtime" / "ga_text_then_parallel_calls.jsonl"),
        guard=Guard(keys=(BRIDGE_KEY,)),
    )
    async with serving(app) as port:
        with anyio.fail_after(LIMIT):
            async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
                events = Events(conn)
                await events.until("session.created")
                await conn.session.update(session={"type": "realtime"})
                await conn.conversation.item.create(item=user_text("Paris and Oslo?"))  # type: ignore[arg-type]
                await conn.response.create()
                first = (await events.until("response.done"))[-1]
                for call in first.response.output[1:]:
                    await conn.conversation.item.create(
                        item={"type": "function_call_output", "call_id": call.call_id, "output": "18C"}
                    )
                await conn.response.create()
                second = await events.until("response.done")
                with pytest.raises(ConnectionClosed) as closed:  # the recording ended
                    await conn.recv_bytes()
    assert [c.call_id for c in first.response.output[1:]] == ["call_A", "call_B"]
    assert text_of(second) == "Paris 18C, Oslo 9C."
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1000
    await settled(app)
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


async def test_openai_client_over_an_http_upstream_turn_by_turn() -> None:
    import maas_stream as ms
    from maas_stream.bridge import RecordingUpstream
    from tests.conftest import RECORDINGS

    recording = RECORDINGS / "anthropic" / "text_citations.sse"
    upstream = RecordingUpstream(recording)
    want = "".join(
        p.text
        for m in ms.aggregate(recording.read_bytes()).messages
        if isinstance(m.content, list)
        for p in m.content
        if isinstance(p, ms.TextPart)
    )
    app = create_app(upstream=upstream, guard=Guard(keys=(BRIDGE_KEY,)))
    async with serving(app) as port:
        with anyio.fail_after(LIMIT):
            async with openai_client(port).realtime.connect(model="claude-x") as conn:
                events = Events(conn)
                await events.until("session.created")
                await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
                await conn.response.create()
                first = await events.until("response.done")
                await conn.conversation.item.create(item=user_text("again"))  # type: ignore[arg-type]
                await conn.response.create()
                second = await events.until("response.done")
    assert text_of(first) == text_of(second) == want
    assert len(upstream.requests) == 2  # one streaming request per turn
    assert upstream.requests[1]["messages"][0]["content"][0]["text"] == "hi"  # the history goes along
    await settled(app)
    assert app.stats.streams == 1


async def test_live_route_rename_is_written_into_the_setup(tmp_path: Path) -> None:
    cert, key, context = tls_files(tmp_path)
    async with FakeLive() as fake:
        upstream = WebSocketUpstream(
            "google-live", fake.url, api_key=UPSTREAM_KEY, model="gemini-live-renamed"
        )
        app = bridge(upstream)
        async with serving(app, tls=(cert, key)) as port:
            client = genai.Client(
                api_key=BRIDGE_KEY,
                http_options={"base_url": f"https://127.0.0.1:{port}", "async_client_args": {"ssl": context}},
            )
            with anyio.fail_after(LIMIT):
                async with client.aio.live.connect(model=LIVE_MODEL, config=TEXT_CONFIG) as session:
                    await session.send_client_content(turns={"role": "user", "parts": [{"text": "hi"}]})
                    messages = [m async for m in session.receive()]
    assert "".join(m.text or "" for m in messages) == ANSWER
    assert fake.seen.messages[0]["setup"]["model"] == "models/gemini-live-renamed"
    assert fake.seen.messages[0]["setup"]["generationConfig"] == {"responseModalities": ["TEXT"]}


def test_serve_session_flags_reach_the_app_and_uvicorn() -> None:
    import contextlib
    import io

    from maas_stream import _cli as cli
    from maas_stream.bridge import ServeSettings, build_app

    args = cli.build_parser().parse_args(
        [
            "serve",
            "--upstream-protocol",
            "openai-realtime",
            "--session-idle-timeout",
            "30",
            "--session-max-message",
            "65536",
        ]
    )
    _, _, options, server = cli.serve_options(args)
    app = build_app(
        ServeSettings(upstream_protocol="openai-realtime", session_limits=options["session_limits"])
    )
    assert app.session_limits == SessionLimits(idle_timeout=30.0, max_message=65536)
    assert server["ws_max_size"] == 65536  # uvicorn's own limit follows
    with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
        cli.build_parser().parse_args(["serve", "--help"])
    text = " ".join(out.getvalue().split("timeouts and limits", 1)[1].split())
    defaults = SessionLimits()
    for flag, value in [
        ("--session-idle-timeout", defaults.idle_timeout),
        ("--session-max-message", defaults.max_message),
    ]:
        assert f"(default {value:.15g})" in text.split(flag, 1)[1].split(" --", 1)[0], flag


async def test_live_client_asking_audio_of_a_text_upstream_is_closed_naming_it(tmp_path: Path) -> None:
    from maas_stream.bridge import RecordingUpstream
    from tests.conftest import RECORDINGS

    cert, key, context = tls_files(tmp_path)
    app = create_app(
        upstream=RecordingUpstream(RECORDINGS / "anthropic" / "text_citations.sse"),
        guard=Guard(keys=(BRIDGE_KEY,)),
    )
    async with serving(app, tls=(cert, key)) as port:
        client = genai.Client(
            api_key=BRIDGE_KEY,
            http_options={"base_url": f"https://127.0.0.1:{port}", "async_client_args": {"ssl": context}},
        )
        with anyio.fail_after(LIMIT), pytest.raises(genai_errors.APIError) as closed:
            async with client.aio.live.connect(model="claude-x", config=AUDIO_CONFIG):
                pass
    assert closed.value.code == 1007  # the translator's refusal: never a healthy-looking silent session
    assert "setup.generationConfig.responseModalities" in str(closed.value)  # the client's own field
    await settled(app)
    assert app.stats.stream_errors == 1


def test_a_route_to_a_protocol_with_neither_bodies_nor_sessions_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maas_stream import _registry
    from maas_stream.bridge import ConfigError
    from tests.bridge.test_spec_dispatch import fake_spec

    _registry.protocol_specs()
    spec = fake_spec("fake-noenv", envelope=None, path="/fake/noenv")
    monkeypatch.setitem(_registry._REGISTRY, spec.name, spec)
    routes = tmp_path / "routes.toml"
    routes.write_text('[[routes]]\nmodel = "m"\nprotocol = "fake-noenv"\n')
    with pytest.raises(ConfigError, match="envelope"):
        load_routes(routes)
    routes.write_text('[[routes]]\nmodel = "m"\nprotocol = "google-live"\n')
    assert isinstance(load_routes(routes).routes[0].upstream, WebSocketUpstream)


@pytest.mark.parametrize(
    ("text", "too_big"),
    [
        ("a" * 3000, False),  # exactly the limit
        ("€" * 1000, False),  # 3000 bytes in 1000 characters
        ("€" * 1001, True),  # 3003 bytes: measured in bytes, not characters
        ("a" * 749 + "€" * 751, True),  # 749 + 2253 bytes
    ],
)
async def test_a_client_text_is_limited_by_its_utf8_size(text: str, too_big: bool) -> None:
    from maas_stream.bridge._ws import ClientSocket, MessageTooBig

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.receive", "text": text}

    async def send(message: Any) -> None:
        raise AssertionError("nothing is sent")

    ws = ClientSocket({"type": "websocket"}, receive, send, max_message=3000)
    if too_big:
        with pytest.raises(MessageTooBig) as caught:
            await ws.receive()
        assert caught.value.size == len(text.encode())
        assert ws.received == 0
    else:
        assert await ws.receive() == text
        assert ws.received == 1


async def test_a_relay_cancelled_from_outside_stays_cancelled_and_stops_its_other_side() -> None:
    # The relay takes back only the cancellations its own end asked for: a server shutting the
    # session down (here a cancel scope around it) cancels it, and its client side with it.
    from maas_stream.bridge._pump import Pump

    class Stalled:
        other: Any = None

        async def client_to_upstream(self) -> None:
            self.other = asyncio.current_task()
            await anyio.sleep_forever()

        async def upstream_to_client(self) -> None:
            await anyio.sleep_forever()

    session = Stalled()
    with anyio.move_on_after(0.2) as scope:
        await Pump(lambda: 1.0).run(session.upstream_to_client(), session.client_to_upstream(), None)
    assert scope.cancelled_caught
    assert session.other is not None
    await anyio.lowlevel.checkpoint()
    assert session.other.cancelled()


def open_sessions() -> list[tuple[list[str], Any]]:
    """Each running session: the coroutines its task waits through (outermost first, by name), and its ``_Session``."""
    found = []
    for task in asyncio.all_tasks():
        names: list[str] = []
        session = None
        step: Any = task.get_coro()
        while step is not None and hasattr(step, "cr_code"):
            names.append(step.cr_code.co_qualname)
            if names[-1] == "_Session.run":
                session = step.cr_frame.f_locals["self"]
            step = step.cr_await
        if session is not None:
            found.append((names, session))
    return found


async def test_an_open_session_keeps_neither_its_handshake_nor_the_frames_of_its_opening(
    realtime: tuple[FakeRealtime, int, BridgeApp],
) -> None:
    # An idle session's memory: its headers are let go (its own copy and its scope's), and its
    # task waits in the relay, with no frame of the checks, the route or the upstream's opening.
    fake, port, app = realtime
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model="gpt-realtime") as conn:
            await Events(conn).until("session.created")
            ((chain, session),) = open_sessions()
            assert "_Session._relay" in chain
            # Each side waits on its socket's future itself: no receive() or recv() coroutine.
            assert chain[-1] == "_Session._client_to_upstream"
            coros: list[Any] = [t.get_coro() for t in asyncio.all_tasks()]
            (other,) = [c for c in coros if c.__qualname__ == "_Session._upstream_to_client"]
            assert not hasattr(other.cr_await, "cr_code")  # a future's iterator, not a coroutine
            assert not {
                "BridgeApp._not_http",
                "serve_session",
                "_Session._serve",
                "_Session._connect",
                "_Session._open",
            } & set(chain)
            assert session.headers == {}
            assert session.scope["headers"] == []
            assert session.scope["path"] == "/v1/realtime"  # the rest of the scope stays
        await fake.ended()
    await settled(app)
    assert app.stats.streams == 1
