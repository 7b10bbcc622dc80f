"""The conversation stores the store and stateful tests run on: SQLite in a temporary folder,
and Redis on a ``redis-server`` this module starts on a free loopback port (skipped, with the
reason, only when the binary is missing; CI installs Debian's ``redis-server``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from maas_stream.bridge._store import Store, open_store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from pathlib import Path

KINDS = [pytest.param("sqlite", id="sqlite"), pytest.param("redis", id="redis")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A private redis-server on 127.0.0.1 for the session (no persistence)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(
            "redis-server is not installed (apt-get install redis-server): the Redis store is untested"
        )
    pytest.importorskip("redis", reason="the redis package (maas-stream[store-redis]) is not installed")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Callable[..., Store]]:
    """``make_store(**options)``: a new store object on ONE shared place per test (the
    ``kind`` parameter), as a second process would open it."""
    kind = request.param if hasattr(request, "param") else "sqlite"
    prefix = f"t{uuid.uuid4().hex}"
    made: list[Store] = []

    def make(**options: Any) -> Store:
        if kind == "redis":
            url = request.getfixturevalue("redis_url")
            store = open_store(url, prefix=prefix, **options)
        else:
            store = open_store(f"sqlite:{tmp_path / 'store.sqlite3'}", **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()
