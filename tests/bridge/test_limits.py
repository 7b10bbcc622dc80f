"""Timeouts and limits of the bridge, over loopback: hang-ups, stream and pool limits, bodies, bugs.

A client that hangs up cancels the upstream (streaming or not, also while the upstream has not
answered yet): the loopback upstream sees its connection closed. The ASGI server is uvicorn on
127.0.0.1 where a real hang-up matters; elsewhere the app is driven through
``httpx2.ASGITransport`` or raw ASGI callables.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import openai
import pytest

import maas_stream._cli as cli
from maas_stream.bridge import (
    BridgeApp,
    HTTPUpstream,
    Limits,
    RecordingUpstream,
    ServeSettings,
    Timeouts,
    build_app,
    create_app,
)
from maas_stream.bridge._transport import LeanTransport
from maas_stream.bridge._uvicorn_http import http_protocol
from maas_stream.bridge._ws_lean import LeanWebSocketProtocol
from tests.bridge.test_faults import CUT, FRAMES, MESSAGES, openai_client
from tests.conftest import RECORDINGS
from tests.io.loopback import Conn, Script, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

LIMIT = 10.0
SLOW = Timeouts(connect=5.0, first_byte=60.0, idle=60.0, total=120.0)
"""Limits that never fire within a test: only the hang-up may end the exchange."""


def held(gate: anyio.Event) -> Script:
    """An upstream that sends the first frames, then waits for ``gate`` and ends the stream."""

    async def script(conn: Conn) -> None:
        await conn.start()
        for frame in FRAMES[:CUT]:
            await conn.send(frame)
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                await conn.wait_disconnect()  # sets server.disconnected when the bridge hangs up
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            await gate.wait()
            tg.cancel_scope.cancel()
        if conn.server.disconnected.is_set():
            return
        for frame in FRAMES[CUT:]:
            await conn.send(frame)
        await conn.end()

    return script


async def silent(conn: Conn) -> None:
    """An upstream that reads the request and never answers."""
    await conn.wait_disconnect()


def http_upstream(url: str, **options: Any) -> HTTPUpstream:
    options.setdefault("timeouts", SLOW)
    return HTTPUpstream("anthropic", url + "/v1/messages", api_key="upstream-secret", **options)


@contextlib.asynccontextmanager
async def uvicorn_running(app: BridgeApp) -> AsyncIterator[str]:
    uvicorn = pytest.importorskip("uvicorn")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
            await anyio.sleep(0.01)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        server.should_exit = True


# ------------------------------------------------------------------- hang-ups cancel the upstream


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
@pytest.mark.parametrize("upstream_state", ["no headers yet", "mid-stream"])
async def test_a_client_hang_up_cancels_the_upstream(stream: bool, upstream_state: str) -> None:
    gate = anyio.Event()
    script = silent if upstream_state == "no headers yet" else held(gate)
    with anyio.fail_after(LIMIT):
        async with serve(script) as upstream:
            app = create_app(upstream=http_upstream(upstream.url))
            async with uvicorn_running(app) as url, httpx2.AsyncClient(trust_env=False) as client:
                async with anyio.create_task_group() as tg:
                    body = {"model": "m", "messages": MESSAGES, "stream": stream}
                    tg.start_soon(partial(client.post, url + "/v1/chat/completions", json=body))
                    while not upstream.requests:  # noqa: ASYNC110
                        await anyio.sleep(0.01)
                    await anyio.sleep(0.1)
                    tg.cancel_scope.cancel()  # the client hangs up
                await upstream.disconnected.wait()  # ... and the bridge hangs up on the upstream
                while app.stats.client_gone == 0:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            gate.set()
    assert app.stats.client_gone == 1
    assert app.stats.streams == 0
    assert upstream.errors == []


# ------------------------------------------------------------------- concurrency limits


async def test_over_max_streams_is_503_with_retry_after() -> None:
    gate = anyio.Event()
    async with serve(held(gate)) as upstream:
        app = create_app(upstream=http_upstream(upstream.url), limits=Limits(max_streams=1, retry_after=3))
        client = openai_client(app)
        text: list[str] = []

        async def first() -> None:
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async for chunk in stream:
                text.extend(c.delta.content for c in chunk.choices if c.delta.content)

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                while not upstream.requests:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                with pytest.raises(openai.APIStatusError) as info:
                    await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
                gate.set()
    assert info.value.status_code == 503
    assert info.value.response.headers["retry-after"] == "3"
    assert "streams already" in info.value.message
    assert "Checking both cities now." in "".join(text)  # the first one was served in full
    assert app.stats.overloaded == 1
    assert app.stats.streams == 1
    assert len(upstream.requests) == 1  # the refused one never reached the upstream


async def test_an_exhausted_upstream_pool_is_503_not_a_hang() -> None:
    gate = anyio.Event()
    async with serve(held(gate)) as upstream:
        timeouts = Timeouts(connect=0.3, first_byte=60.0, idle=60.0, total=120.0)
        app = create_app(upstream=http_upstream(upstream.url, timeouts=timeouts, max_connections=1))
        client = openai_client(app)

        async def first() -> None:
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async for _ in stream:
                pass

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                while not upstream.requests:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                with pytest.raises(openai.APIStatusError) as info:
                    await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
                gate.set()
    assert info.value.status_code == 503
    assert "no free upstream connection" in info.value.message
    assert info.value.response.headers["retry-after"] == "1"
    assert app.stats.streams == 1


def test_the_upstream_client_is_a_pooled_httpx2_client() -> None:
    upstream = HTTPUpstream("anthropic", "http://127.0.0.1:9/v1/messages", api_key="k", max_connections=7)
    client = upstream._get_client()
    assert isinstance(client, httpx2.AsyncClient)
    transport = client._transport
    assert isinstance(transport, LeanTransport)  # the bridge's lean HTTP/1.1 transport
    assert transport.max_connections == 7
    assert client.timeout.read is None  # reading is bounded by the stream readers (idle, total)
    assert client.timeout.connect == upstream.timeouts.connect


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"idle": 0}, id="zero"),
        pytest.param({"connect": -1.0}, id="negative"),
    ],
)
def test_timeouts_refuse_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        Timeouts(**bad)


# ------------------------------------------------------------------- request bodies


def recording_app(limits: Limits) -> BridgeApp:
    return create_app(upstream=RecordingUpstream(RECORDINGS / "anthropic/tool_no_args.sse"), limits=limits)


async def test_a_body_over_max_body_is_413_in_the_client_shape() -> None:
    app = recording_app(Limits(max_body=200))
    with anyio.fail_after(LIMIT), pytest.raises(openai.APIStatusError) as info:
        await openai_client(app).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x" * 1000}]
        )
    assert info.value.status_code == 413
    assert "larger than 200 bytes" in info.value.message


async def call_asgi(app: BridgeApp, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> list[Any]:
    """Drive the app with raw ASGI callables: ``chunks`` then nothing more (a stalled sender)."""
    sent: list[Any] = []
    pending = list(chunks)

    async def receive() -> Any:
        if pending:
            return {"type": "http.request", "body": pending.pop(0), "more_body": True}
        await anyio.sleep_forever()

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": headers}
    with anyio.fail_after(LIMIT):
        await app(scope, receive, send)
    return sent


async def test_a_chunked_body_over_max_body_is_413_while_reading() -> None:
    app = recording_app(Limits(max_body=100))
    sent = await call_asgi(app, [(b"content-type", b"application/json")], [b"x" * 60, b"x" * 60])
    assert sent[0]["status"] == 413
    assert b"larger than 100 bytes" in sent[1]["body"]


async def test_a_slow_body_is_408() -> None:
    app = recording_app(Limits(body_timeout=0.2))
    sent = await call_asgi(app, [(b"content-type", b"application/json")], [b'{"model": '])
    assert sent[0]["status"] == 408
    assert b'"error"' in sent[1]["body"]  # the client's error shape, not plain text


# ------------------------------------------------------------------- bugs, shutdown


SECRET = "-".join(["sk", "secret", "123"])
"""Built at run time: the logged frames show source lines, which must not hold it either."""


class BrokenUpstream:
    """An upstream with a bug: its exception's text holds a secret."""

    protocol = "anthropic"

    def open(self, body: dict[str, Any], *, model: str | None) -> Any:
        raise RuntimeError(f"boom with {SECRET} inside")

    async def aclose(self) -> None:
        pass


async def test_a_bug_is_a_500_in_the_client_shape_and_logs_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(upstream=BrokenUpstream())
    with caplog.at_level(logging.DEBUG, logger="maas_stream"):
        with anyio.fail_after(LIMIT), pytest.raises(openai.InternalServerError) as info:
            await openai_client(app).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert info.value.status_code == 500
    assert isinstance(info.value.body, dict)
    assert "RuntimeError" in info.value.message
    assert SECRET not in info.value.message
    assert "RuntimeError" in caplog.text
    assert 'raise RuntimeError(f"boom with {SECRET} inside")' in caplog.text  # where it happened...
    assert SECRET not in caplog.text  # ... but never the exception's text
    assert app.stats.internal_errors == 1


async def test_lifespan_shutdown_closes_the_upstream_pool() -> None:
    upstream = http_upstream("http://127.0.0.1:9")
    client = upstream._get_client()
    app = create_app(upstream=upstream)
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[Any] = []

    async def receive() -> Any:
        return next(messages)

    async def send(message: Any) -> None:
        sent.append(message)

    await app({"type": "lifespan"}, receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert client.is_closed


@pytest.mark.parametrize("freeze", [False, True])
async def test_freeze_gc_freezes_what_is_alive_at_startup(freeze: bool) -> None:
    app = build_app(
        ServeSettings(
            recording=str(RECORDINGS / "anthropic/tool_no_args.sse"), host="127.0.0.1", no_auth=True
        )
    )
    assert app.freeze_gc  # serve's app
    app.freeze_gc = freeze
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> Any:
        return next(messages)

    async def send(message: Any) -> None:
        return None

    gc.unfreeze()
    try:
        await app({"type": "lifespan"}, receive, send)
        assert (gc.get_freeze_count() > 0) is freeze
    finally:
        gc.unfreeze()


# ------------------------------------------------------------------- serve flags


def test_serve_flags_reach_the_app_and_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def run(app: Any, **options: Any) -> None:
        seen["app"], seen["options"] = app, options

    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.setattr(uvicorn, "run", run)
    code = cli.main(
        [
            "serve",
            "--recording",
            str(RECORDINGS / "anthropic/tool_no_args.sse"),
            "--idle-timeout",
            "0",
            "--total-timeout",
            "90",
            "--max-streams",
            "9",
            "--max-body",
            "4096",
            "--body-timeout",
            "5",
            "--limit-concurrency",
            "50",
            "--timeout-keep-alive",
            "3",
            "--h11-max-incomplete-event-size",
            "8192",
        ]
    )
    assert code == 0
    app = seen["app"]
    assert app.limits == Limits(max_body=4096, body_timeout=5.0, max_streams=9)
    assert app.upstream.timeouts == Timeouts(idle=None, total=90.0)
    options = seen["options"]
    assert options["limit_concurrency"] == 50
    assert options["timeout_keep_alive"] == 3
    assert options["h11_max_incomplete_event_size"] == 8192
    assert options["timeout_graceful_shutdown"] == 30.0


@pytest.mark.parametrize(("given", "deflate"), [([], False), (["on"], True), (["OFF"], False)])
def test_websocket_compression_is_off_unless_asked_for(given: list[str], deflate: bool) -> None:
    flag = ["--ws-per-message-deflate", *given] if given else []
    args = cli.build_parser().parse_args(["serve", "--upstream-protocol", "openai-realtime", *flag])
    assert cli.serve_options(args)[3]["ws_per_message_deflate"] is deflate


def test_serve_flag_defaults_are_the_library_defaults() -> None:
    args = cli.build_parser().parse_args(["serve", "--upstream-protocol", "anthropic"])
    timeouts, limits, upstream, server = cli.serve_options(args)
    assert (Timeouts(**timeouts), Limits(**limits), upstream) == (Timeouts(), Limits(), {})
    assert server == {
        "timeout_graceful_shutdown": 30.0,
        "ws_per_message_deflate": False,
        "ws": LeanWebSocketProtocol,
        "http": http_protocol(None),
    }
    with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
        cli.build_parser().parse_args(["serve", "--help"])
    text = out.getvalue()
    t = Timeouts()
    for flag, value in [
        ("--connect-timeout", t.connect),
        ("--first-byte-timeout", t.first_byte),
        ("--idle-timeout", t.idle),
        ("--total-timeout", t.total),
        ("--max-streams", Limits().max_streams),
        ("--max-body", Limits().max_body),
        ("--body-timeout", Limits().body_timeout),
    ]:
        after = " ".join(text.split("timeouts and limits", 1)[1].split(flag, 1)[1].split())
        assert f"(default {value:.15g})" in after.split(" --", 1)[0], flag
