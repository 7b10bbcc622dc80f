"""``maas-stream serve`` as an operator runs it: over loopback sockets, with keys, routes and workers.

One test runs the app under uvicorn in-process (the SDK over a real socket, a forged Host header,
a wrong key); one runs ``python -m maas_stream serve --workers 2`` as a subprocess on 127.0.0.1
and sends it requests until they have all been answered, each by whichever worker took it.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import httpx2
import openai
import pytest

import maas_stream as ms
from maas_stream.bridge import (
    KEYS_ENV,
    SETTINGS_ENV,
    BridgeApp,
    RecordingUpstream,
    ServeSettings,
    app_from_env,
    build_app,
)
from tests.bridge.test_auth import HI
from tests.bridge.test_serve import LIMIT, expected
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

KEY = "bridge-key-0123456789"
ANTHROPIC_REC = RECORDINGS / "anthropic/thinking_parallel_tools.sse"
GEMINI_REC = RECORDINGS / "gemini/thoughts_text_parallel_calls.sse"


def write_routes(tmp_path: Path) -> Path:
    path = tmp_path / "routes.toml"
    path.write_text(
        f"""
[[routes]]
model = "claude-*"
recording = "{ANTHROPIC_REC}"

[[routes]]
model = "gemini-*"
recording = "{GEMINI_REC}"
"""
    )
    return path


@pytest.fixture
def worker_logging() -> Iterator[None]:
    """``app_from_env`` sets up a worker's logging; give the test process its own back after."""
    loggers = [logging.getLogger("maas_stream"), logging.getLogger("maas_stream.bridge.access")]
    saved = [(lg, list(lg.handlers), lg.level) for lg in loggers]
    yield
    for lg, handlers, level in saved:
        lg.handlers[:] = handlers
        lg.setLevel(level)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_loopback_server_with_keys_and_host_check(tmp_path: Path) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    app = build_app(ServeSettings(config=str(write_routes(tmp_path)), host="127.0.0.1"), keys=[KEY])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
                await anyio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            base = f"http://127.0.0.1:{port}"
            client = openai.AsyncOpenAI(
                api_key=KEY,
                base_url=f"{base}/v1",
                http_client=httpx2.AsyncClient(trust_env=False),
                max_retries=0,
            )
            chat = await client.chat.completions.create(model="claude-x", messages=HI)
            await client.close()
            async with httpx.AsyncClient(trust_env=False) as raw:
                body = {"model": "gemini-y", "messages": HI}
                auth = {"authorization": f"Bearer {KEY}"}
                forged = await raw.post(
                    f"{base}/v1/chat/completions", json=body, headers={**auth, "host": "rebind.example"}
                )
                wrong = await raw.post(
                    f"{base}/v1/chat/completions", json=body, headers={"authorization": "Bearer nope-nope"}
                )
                plain = await raw.post(
                    f"{base}/v1/chat/completions",
                    content=b"{}",
                    headers={**auth, "content-type": "text/plain"},
                )
                ok = await raw.post(f"{base}/v1/chat/completions", json=body, headers=auth)
                health = await raw.get(f"{base}/health", headers={"host": f"localhost:{port}"})
            server.should_exit = True
    assert chat.choices[0].message.content == expected(ANTHROPIC_REC)[0]
    assert (forged.status_code, wrong.status_code, plain.status_code) == (421, 401, 415)
    assert ok.status_code == 200
    assert ok.json()["choices"][0]["message"]["content"] == expected(GEMINI_REC)[0]
    assert health.json()["status"] == "ok"


@pytest.mark.usefixtures("worker_logging")
def test_cli_workers_run_the_factory_with_settings_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    monkeypatch.setenv(SETTINGS_ENV, "")  # restored after the test
    monkeypatch.setenv(KEYS_ENV, "")
    ran: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append((app, kw)))
    config = write_routes(tmp_path)
    argv = [
        "serve",
        "--config",
        str(config),
        "--workers",
        "3",
        "--bridge-key",
        KEY,
        "--cors-origin",
        "https://ui.example",
    ]
    assert main(argv) == 0
    target, kw = ran[0]
    assert target == "maas_stream.bridge:app_from_env"
    assert kw["factory"] is True
    assert kw["workers"] == 3
    assert os.environ[KEYS_ENV] == KEY
    assert KEY not in os.environ[SETTINGS_ENV]  # keys travel in their own variable only
    worker = app_from_env()  # what each worker process builds
    access = logging.getLogger("maas_stream.bridge.access")
    assert access.getEffectiveLevel() == logging.INFO  # each worker logs its request lines
    assert isinstance(worker, BridgeApp)
    assert worker.router.models() == ["claude-*", "gemini-*"]
    assert worker.guard.auth
    assert worker.guard.keys == (KEY,)
    assert worker.guard.cors_origins == frozenset({"https://ui.example"})
    assert worker.guard.allowed_hosts == frozenset({"localhost", "127.0.0.1", "::1"})


def test_app_from_env_needs_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SETTINGS_ENV, raising=False)
    with pytest.raises(RuntimeError, match=SETTINGS_ENV):
        app_from_env()


def test_cli_serve_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    ran: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append((app, kw)))
    assert main(["serve", "--config", str(write_routes(tmp_path))]) == 0
    app, kw = ran[0]
    assert kw["access_log"] is False  # the bridge's own line replaces uvicorn's
    assert isinstance(app, BridgeApp)
    assert [type(r.upstream) for r in app.router.routes] == [RecordingUpstream, RecordingUpstream]
    err = capsys.readouterr().err
    assert "claude-* -> anthropic" in err
    assert "gemini-* -> gemini" in err
    bad = tmp_path / "bad.toml"
    bad.write_text('[[routes]]\nmodel = "m"\n')
    with pytest.raises(SystemExit, match=r"--config: .*bad\.toml"):
        main(["serve", "--config", str(bad)])


def test_workers_behind_one_port(tmp_path: Path) -> None:
    """Two worker processes, one port: every request is answered, whichever worker takes it."""
    pytest.importorskip("uvicorn")
    port = free_port()
    src = Path(ms.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(src), KEYS_ENV: KEY}
    env.pop(SETTINGS_ENV, None)
    cmd = [sys.executable, "-m", "maas_stream", "serve", "--port", str(port), "--workers", "2"]
    cmd += ["--config", str(write_routes(tmp_path)), "--log-level", "info"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(trust_env=False, timeout=5) as client:
            for _ in range(300):  # up to 30 s for two interpreters to start
                try:
                    if client.get(f"{base}/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
            answers = []
            for i in range(12):
                model = "claude-a" if i % 2 else "gemini-b"
                response = client.post(
                    f"{base}/v1/chat/completions",
                    json={"model": model, "messages": HI},
                    headers={"authorization": f"Bearer {KEY}"},
                )
                answers.append(
                    (model, response.status_code, response.json()["choices"][0]["message"]["content"])
                )
            denied = client.post(f"{base}/v1/chat/completions", json={"model": "claude-a", "messages": HI})
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    want = {"claude-a": expected(ANTHROPIC_REC)[0], "gemini-b": expected(GEMINI_REC)[0]}
    assert answers == [(m, 200, want[m]) for m, _, _ in answers]
    assert denied.status_code == 401
    log = err.decode()
    assert log.count("bridge request") >= 13  # one line per request, from the workers
    assert KEY not in log


def test_missing_upstream_key_variable_is_reported(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        build_app(ServeSettings(upstream_protocol="anthropic"))
    assert any("ANTHROPIC_API_KEY is not set" in r.getMessage() for r in caplog.records)
    caplog.clear()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-present-1")
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        build_app(ServeSettings(upstream_protocol="anthropic"))
    assert caplog.records == []
