"""Running an agent CLI against the bridge in front of a fake provider, all on 127.0.0.1.

:func:`bridge_over_fake` starts the fake provider (``tests/agents/upstreams.py``) and the bridge
(uvicorn, in-process, port 0) with ``HTTPUpstream(protocol, url=fake)``; :func:`run_cli` runs one
CLI process with a temporary HOME and the environment the test gives, and returns what it
printed. The CLIs come from ``scripts/install_agents.sh`` (``.ci/agents`` or
``$MAAS_AGENTS_DIR``); :func:`cli_path` says where, and why a test must skip when one is missing.

This module owns process and server plumbing only; the per-CLI settings live in the tests.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from maas_stream.bridge import BridgeApp, HTTPUpstream, Timeouts, create_app
from tests.agents.upstreams import PATHS, FakeProvider
from tests.io.loopback import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

REPO = Path(__file__).resolve().parents[2]
AGENTS_DIR = Path(os.environ.get("MAAS_AGENTS_DIR", REPO / ".ci" / "agents"))
"""Where ``scripts/install_agents.sh`` put the CLIs (its ``node_modules/.bin``)."""

CLI_TIMEOUT = 60.0
"""The most one CLI run may take (a hung CLI fails the test, it never blocks the suite)."""

UPSTREAM_TIMEOUTS = Timeouts(connect=5.0, first_byte=20.0, idle=20.0, total=60.0)


def cli_path(name: str) -> Path:
    """The installed CLI ``name`` (``claude``, ``codex``, ``gemini``); skips with the reason if absent."""
    path = AGENTS_DIR / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.skip(
            f"agent CLI {name!r} is not installed at {path}: run scripts/install_agents.sh "
            "(CI does; set MAAS_AGENTS_DIR to use another install)"
        )
    return path


@dataclass
class Bridge:
    """A running bridge and the fake provider behind it."""

    url: str
    app: BridgeApp
    fake: FakeProvider


@contextlib.asynccontextmanager
async def bridge_over_fake(fake: FakeProvider, *, drop_params: bool = False) -> AsyncIterator[Bridge]:
    """The fake provider and a bridge in front of it (``drop_params`` as given), on 127.0.0.1."""
    uvicorn = pytest.importorskip("uvicorn")
    async with serve(fake.script) as upstream:
        app = create_app(
            upstream=HTTPUpstream(
                fake.protocol,
                url=upstream.url + PATHS[fake.protocol],
                api_key="x",
                timeouts=UPSTREAM_TIMEOUTS,
            ),
            drop_params=drop_params,
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
                await anyio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            try:
                yield Bridge(f"http://127.0.0.1:{port}", app, fake)
            finally:
                server.should_exit = True
        assert upstream.errors == [], upstream.errors


@dataclass
class Run:
    """What a CLI process did."""

    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"


def base_env(home: Path) -> dict[str, str]:
    """A minimal environment: PATH, a temporary HOME, no proxies, no inherited provider keys."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "TMPDIR": str(home / "tmp"),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
    }


async def run_cli(args: list[str], *, cwd: Path, env: Mapping[str, str]) -> Run:
    """Run one CLI to the end (stdin closed), within :data:`CLI_TIMEOUT`."""
    (Path(env["HOME"]) / "tmp").mkdir(parents=True, exist_ok=True)
    with anyio.fail_after(CLI_TIMEOUT):
        done = await anyio.run_process(args, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, check=False)
    return Run(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
