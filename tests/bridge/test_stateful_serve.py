"""The store's settings: ``maas-stream serve --store/--store-ttl/--store-max-bytes``, their
environment variables, :class:`~maas_stream.bridge.ServeSettings` and what ``build_app`` makes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from maas_stream.bridge import DEFAULT_STORE, BridgeApp, ServeSettings, build_app
from maas_stream.bridge._store_redis import RedisStore
from maas_stream.bridge._store_sqlite import SQLiteStore

if TYPE_CHECKING:
    from pathlib import Path


def served(monkeypatch: pytest.MonkeyPatch, *flags: str) -> BridgeApp:
    uvicorn = pytest.importorskip("uvicorn")
    from maas_stream._cli import main

    ran: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append(app))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-key")
    assert main(["serve", "--upstream-protocol", "anthropic", *flags]) == 0
    app = ran[0]
    assert isinstance(app, BridgeApp)
    return app


def test_the_flags_make_the_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    app = served(monkeypatch, "--store", f"sqlite:{path}", "--store-ttl", "60", "--store-max-bytes", "1000")
    assert app.stateful is not None
    store = app.stateful.store
    assert isinstance(store, SQLiteStore)
    assert (store.path, store.ttl, store.max_bytes) == (str(path), 60.0, 1000)
    assert app.stateful.native_state
    assert not path.exists()  # opened on first use


def test_the_environment_gives_what_the_flags_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAAS_STREAM_STORE", "redis://127.0.0.1:1/3")
    monkeypatch.setenv("MAAS_STREAM_STORE_TTL", "0")
    monkeypatch.setenv("MAAS_STREAM_STORE_MAX_BYTES", "5000")
    app = served(monkeypatch, "--no-native-state")
    assert app.stateful is not None
    store = app.stateful.store
    assert isinstance(store, RedisStore)  # no connection is made before the first request
    assert (store.url, store.ttl, store.max_bytes) == ("redis://127.0.0.1:1/3", None, 5000)
    assert not app.stateful.native_state
    flagged = served(monkeypatch, "--store-max-bytes", "7")
    assert flagged.stateful is not None
    assert flagged.stateful.store.max_bytes == 7


def test_store_none_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert served(monkeypatch, "--store", "none").stateful is None
    monkeypatch.setenv("MAAS_STREAM_STORE_TTL", "soon")
    with pytest.raises(SystemExit, match="MAAS_STREAM_STORE_TTL"):
        served(monkeypatch)


def test_settings_travel_to_workers_with_the_store() -> None:
    settings = ServeSettings(
        upstream_protocol="anthropic", store="redis://h:1/0", store_ttl=None, store_max_bytes=9
    )
    again = msgspec.json.decode(msgspec.json.encode(settings), type=ServeSettings)
    assert again == settings
    default = ServeSettings(upstream_protocol="anthropic")
    assert default.store == DEFAULT_STORE
    assert DEFAULT_STORE.startswith("sqlite:")
    assert DEFAULT_STORE.endswith("responses.sqlite3")
    assert default.store_ttl == 30 * 24 * 3600
    app = build_app(default)
    assert app.stateful is not None
    assert isinstance(app.stateful.store, SQLiteStore)
    with pytest.raises(ValueError, match="unknown store"):
        build_app(ServeSettings(upstream_protocol="anthropic", store="mysql://x"))
