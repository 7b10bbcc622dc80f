"""How a ``maas-stream serve`` process builds its bridge: settings, keys, workers, the banner.

:class:`ServeSettings` is what the command line asked for, in a form that travels to worker
processes (JSON in :data:`SETTINGS_ENV`; keys travel separately, in
:data:`~maas_stream.bridge.KEYS_ENV` and key files); :func:`build_app` makes the same app from
it in any process, refusing a non-loopback bind without bridge keys; :func:`app_from_env` is the
workers' factory. Request handling is ``_app``'s; this module only configures a process.

It must not contain protocol logic.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .._registry import get_protocol
from ..io._record import redact_url
from ._app import BridgeApp, Limits, create_app
from ._guard import LOOPBACK_HOSTS, Guard, is_loopback, load_bridge_keys
from ._session_limits import SessionLimits
from ._store import open_store
from ._upstream import DEFAULT_MAX_CONNECTIONS, HTTPUpstream, RecordingUpstream, Timeouts
from ._ws import WebSocketUpstream

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._upstream import Upstream

__all__ = [
    "DEFAULT_STORE",
    "DEFAULT_STORE_TTL",
    "SETTINGS_ENV",
    "ServeSettings",
    "app_from_env",
    "build_app",
    "describe",
]

log = logging.getLogger("maas_stream")

SETTINGS_ENV = "MAAS_STREAM_SERVE"
"""The environment variable carrying :class:`ServeSettings` (JSON) to worker processes."""


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "maas-stream"


DEFAULT_STORE = f"sqlite:{_state_dir() / 'responses.sqlite3'}"
"""Where ``maas-stream serve`` keeps stored responses unless told otherwise (created on first use)."""
DEFAULT_STORE_TTL = 30 * 24 * 3600.0
"""How long a stored response is kept: 30 days, as OpenAI keeps them."""


class ServeSettings(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What ``maas-stream serve`` was asked for: enough to build the same app in any process.

    Keys are not in it: a worker reads them from :data:`~maas_stream.bridge.KEYS_ENV` and the key
    files named here, so that the settings can travel in an environment variable.
    """

    config: str | None = None
    """A TOML routes file."""
    recording: str | None = None
    speed: float | None = None
    upstream_protocol: str | None = None
    upstream_url: str | None = None
    upstream_model: str | None = None
    keys_files: list[str] = msgspec.field(default_factory=list)
    no_auth: bool = False
    """Serve without bridge keys even when some are set (``--no-auth``)."""
    allowed_hosts: list[str] | None = None
    """``Host`` names served; ``None``: loopback names for a loopback bind, any otherwise."""
    cors_origins: list[str] = msgspec.field(default_factory=list)
    host: str = "127.0.0.1"
    log_level: str = "info"
    """The level of the per-request log lines (worker processes set up their own logging)."""
    timeouts: dict[str, float | None] = msgspec.field(default_factory=dict)
    """:class:`~maas_stream.bridge.Timeouts` fields for the upstream given by flags."""
    limits: dict[str, Any] = msgspec.field(default_factory=dict)
    """:class:`Limits` fields."""
    max_connections: int | None = None
    """The upstream connection pool's size (its default when ``None``)."""
    drop_params: bool = False
    """Drop and report request fields that change the answer instead of refusing them."""
    session_limits: dict[str, Any] = msgspec.field(default_factory=dict)
    """:class:`~maas_stream.bridge._session_limits.SessionLimits` fields (realtime websocket sessions)."""
    store: str | None = DEFAULT_STORE
    """The conversation store: ``sqlite:PATH`` or ``redis://HOST:PORT/DB``; ``None``: none
    (``store``/``previous_response_id`` then go to the upstream as they are)."""
    store_ttl: float | None = DEFAULT_STORE_TTL
    """Seconds a stored response is kept (``None``: until deleted)."""
    store_max_bytes: int | None = None
    """The most bytes one bridge key may have stored (``None``: no cap)."""
    native_state: bool = True
    """An upstream of the client's own protocol keeps its state (``previous_response_id`` is
    passed on) instead of the bridge expanding the stored history."""


def build_app(settings: ServeSettings, *, keys: Sequence[str] = ()) -> BridgeApp:
    """The app ``maas-stream serve`` runs, from its settings (and keys given on the command line).

    Raises:
        ValueError: The settings name no upstream, a bridge key is too short, the address is
            not loopback and there are no bridge keys (and no ``no_auth``), or the store URL
            names no known store.
        ImportError: A Redis store without the ``redis`` package (``maas-stream[store-redis]``).
        ConfigError: The routes file is invalid.
        OSError: A file cannot be read.
        MaasStreamError: A recording cannot be used.
    """
    found = () if settings.no_auth else load_bridge_keys(keys, files=settings.keys_files)
    if not found and not settings.no_auth and not is_loopback(settings.host):
        raise ValueError(
            f"refusing to serve {settings.host} without bridge keys: anyone who reaches the port would "
            "spend the upstream keys (give --bridge-key, --bridge-keys-file or MAAS_STREAM_BRIDGE_KEYS, "
            "or --no-auth)"
        )
    hosts = settings.allowed_hosts
    if hosts is None and is_loopback(settings.host):
        hosts = sorted(LOOPBACK_HOSTS)
    guard = Guard(
        keys=found,
        allowed_hosts=frozenset(hosts) if hosts is not None else None,
        cors_origins=frozenset(settings.cors_origins),
    )
    upstream: Upstream | None = None
    timeouts = Timeouts(**settings.timeouts)
    if settings.recording is not None:
        upstream = RecordingUpstream(settings.recording, speed=settings.speed or None, timeouts=timeouts)
    elif settings.upstream_protocol is not None and get_protocol(settings.upstream_protocol).session:
        upstream = WebSocketUpstream(
            settings.upstream_protocol,
            settings.upstream_url,
            model=settings.upstream_model,
            timeouts=timeouts,
        )
    elif settings.upstream_protocol is not None:
        upstream = HTTPUpstream(
            settings.upstream_protocol,
            settings.upstream_url,
            model=settings.upstream_model,
            timeouts=timeouts,
            max_connections=settings.max_connections or DEFAULT_MAX_CONNECTIONS,
        )
    elif settings.config is None:
        raise ValueError("give a routes file, an upstream protocol or a recording")
    if settings.recording is None and settings.upstream_protocol is not None:
        auth = get_protocol(settings.upstream_protocol).auth
        if auth is not None and not os.environ.get(auth.env):
            log.warning(
                "the environment variable %s is not set: requests go upstream without a key", auth.env
            )
    limits = Limits(**settings.limits)
    common: dict[str, Any] = {
        "guard": guard,
        "limits": limits,
        "drop_params": settings.drop_params,
        "native_state": settings.native_state,
    }
    if settings.store is not None:
        common["store"] = open_store(
            settings.store, ttl=settings.store_ttl, max_bytes=settings.store_max_bytes
        )
    if upstream is not None:
        app = create_app(upstream=upstream, **common)
    else:
        assert settings.config is not None
        app = create_app(routes=settings.config, **common)
    app.session_limits = SessionLimits(**settings.session_limits)
    app.freeze_gc = True  # a serve process: what is alive at startup stays
    return app


def app_from_env() -> BridgeApp:
    """The app factory for worker processes (``uvicorn --factory maas_stream.bridge:app_from_env``).

    Reads :class:`ServeSettings` as JSON from :data:`SETTINGS_ENV`; bridge keys come from
    :data:`~maas_stream.bridge.KEYS_ENV` and the key files named.

    Raises:
        RuntimeError: :data:`SETTINGS_ENV` is not set.
    """
    raw = os.environ.get(SETTINGS_ENV)
    if not raw:
        raise RuntimeError(f"{SETTINGS_ENV} is not set: it carries the serve settings (JSON) to each worker")
    settings = msgspec.json.decode(raw, type=ServeSettings)
    _worker_logging(settings.log_level)
    return build_app(settings)


def _worker_logging(level: str) -> None:
    """A worker process's stderr logging: drops and warnings, and the per-request lines."""
    root = logging.getLogger("maas_stream")
    if any(not isinstance(h, logging.NullHandler) for h in root.handlers):
        return  # the embedding program set up logging
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(f"maas-stream[{os.getpid()}]: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    access = logging.getLogger("maas_stream.bridge.access")
    access.setLevel(logging.getLevelNamesMapping().get(level.upper(), logging.INFO))


def describe(app: BridgeApp) -> str:
    """What an app serves, for a banner: routes and upstream URLs with secrets redacted."""
    parts = []
    for route in app.router.routes:
        upstream = route.upstream
        url = getattr(upstream, "url", None)
        where = (
            redact_url(url)
            if isinstance(url, str)
            else getattr(getattr(upstream, "recording", None), "path", "")
        )
        parts.append(f"{route.model} -> {upstream.protocol} {where}".rstrip())
    return "; ".join(parts)
