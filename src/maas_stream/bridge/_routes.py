"""Routing: which upstream serves a client's model, and which ones to try when it fails.

A route maps a model name, or a glob pattern (``gpt-*``, ``*``), to an upstream: a provider of
any protocol with an envelope codec (its URL, where its key comes from, a model rename, timeouts,
extra headers) or a recording. A route may name ``fallbacks``: other routes tried, in order, when
it answers 429, a 5xx or cannot be reached, as long as nothing was sent to the client yet.

Routes are written in a TOML file, the way LiteLLM users write ``model_list``::

    [[routes]]
    model = "gpt-*"                     # the client's model name, or a glob pattern
    protocol = "openai-chat"            # the upstream's protocol
    api_key_env = "OPENAI_API_KEY"      # default: the protocol's own variable
    fallbacks = ["claude"]

    [[routes]]
    name = "claude"                     # default: the model pattern
    model = "claude-*"
    protocol = "anthropic"
    upstream_model = "claude-sonnet-4-5"   # send this model instead of the client's
    api_key_file = "/run/secrets/anthropic"
    timeouts = { idle = 120 }
    headers = { "x-team" = "research" }

A route to a session protocol (``openai-realtime``, ``google-live``) serves realtime clients
over websockets; its ``url`` is the provider's websocket URL (``wss://...``, ``{model}`` filled
in; the protocol's own by default).

The key is read from the environment variable or the file named; an inline ``api_key`` is
accepted with a warning (the file then holds a secret). A route whose key variable is not set is
reported at startup.

It must not contain protocol logic (defaults come from the protocols' specs) or do request IO.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .._exceptions import MaasStreamError
from .._models import ModelCaps
from .._registry import get_protocol
from ._guard import check_model
from ._request import Rejected
from ._upstream import HTTPUpstream, RecordingUpstream, Timeouts
from ._ws import WebSocketUpstream

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._upstream import Upstream

__all__ = ["ConfigError", "Route", "Router", "load_routes", "route_from_table", "single_route"]

log = logging.getLogger("maas_stream")

_KEYS: Final = frozenset(
    {
        "name",
        "model",
        "protocol",
        "url",
        "api_key_env",
        "api_key_file",
        "api_key",
        "upstream_model",
        "headers",
        "timeouts",
        "fallbacks",
        "recording",
        "speed",
        "drop_params",
        "model_caps",
    }
)


class ConfigError(ValueError):
    """A routes file (or route table) that cannot be served; the message names the route and field."""


@dataclass(frozen=True)
class Route:
    """One route: the client model names it serves, the upstream, the routes to fall back to.

    Attributes:
        model: The client's model name, or a glob pattern (``*``, ``gpt-*``).
        upstream: Where the streams come from.
        name: The route's name (fallbacks name routes by it); the model pattern by default.
        fallbacks: Names of the routes tried, in order, when this one fails before the first byte.
        drop_params: Drop and report (``True``) or refuse (``False``) request fields that change
            the answer and cannot reach this upstream; the app's setting when ``None``.
        caps: What this route's upstream model accepts (sampling, reasoning, max output),
            instead of the built-in model table.
    """

    model: str
    upstream: Upstream
    name: str = ""
    fallbacks: tuple[str, ...] = ()
    drop_params: bool | None = None
    caps: ModelCaps | None = None

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.model)

    @property
    def pattern(self) -> bool:
        """Whether :attr:`model` is a glob pattern rather than one name."""
        return any(c in self.model for c in "*?[")

    def matches(self, model: str) -> bool:
        """Whether the client's ``model`` is served by this route."""
        if self.pattern:
            return fnmatch.fnmatchcase(model, self.model)
        return model == self.model


MATCH_CACHE: Final = 4096
"""Model names whose pattern route :meth:`Router.select` remembers (forgotten all at once when full)."""


class Router:
    """Routes in order: an exact name wins over a pattern; patterns are tried in file order.

    Raises:
        ConfigError: Two routes share a name, or a fallback names no route.
    """

    def __init__(self, routes: Sequence[Route]) -> None:
        if not routes:
            raise ConfigError("no routes: give at least one")
        self.routes = tuple(routes)
        self._by_name: dict[str, Route] = {}
        self._chains: dict[str, tuple[Route, ...]] = {}
        for route in self.routes:
            if route.name in self._by_name:
                raise ConfigError(f"two routes are named {route.name!r} (give one a distinct name)")
            self._by_name[route.name] = route
        for route in self.routes:
            for name in route.fallbacks:
                if name not in self._by_name:
                    raise ConfigError(f"route {route.name!r}: fallback {name!r} names no route")
        self._exact = {r.model: r for r in reversed(self.routes) if not r.pattern}
        self._matched: dict[str, Route] = {}

    def select(self, model: str | None) -> Route:
        """The route serving the client's ``model`` (``None``: the model was not named).

        Raises:
            Rejected: No route serves it (404).
        """
        name = model or ""
        found = self._exact.get(name) or self._matched.get(name)
        if found is not None:
            return found
        for route in self.routes:
            if route.pattern and route.matches(name):
                # Remembered, so a request costs O(1) in the number of routes; bounded, since
                # the names come from clients.
                if len(self._matched) >= MATCH_CACHE:
                    self._matched.clear()
                self._matched[name] = route
                return route
        shown = repr(model) if model is not None else "(none named)"
        raise Rejected(404, f"no route serves the model {shown}; served: {', '.join(self.models())}")

    def chain(self, route: Route) -> tuple[Route, ...]:
        """``route`` followed by its fallbacks, each once, in order (one tuple per route, kept)."""
        found = self._chains.get(route.name)
        if found is None or found[0] is not route:
            out = [route]
            for name in route.fallbacks:
                fallback = self._by_name[name]
                if fallback not in out:
                    out.append(fallback)
            found = self._chains[route.name] = tuple(out)
        return found

    def models(self) -> list[str]:
        """The model names and patterns served, in order, each once."""
        return list(dict.fromkeys(r.model for r in self.routes))

    def upstreams(self) -> list[Upstream]:
        """Every route's upstream, each once."""
        out: list[Upstream] = []
        for route in self.routes:
            if all(route.upstream is not u for u in out):
                out.append(route.upstream)
        return out

    async def aclose(self) -> None:
        """Close every upstream."""
        for upstream in self.upstreams():
            await upstream.aclose()


def _str(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string")
    return value


def _timeouts(table: Any, where: str) -> Timeouts:
    """``timeouts = {idle = 120, ...}`` as a :class:`Timeouts` (left out: default; ``0``: none)."""
    if table is None:
        return Timeouts()
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: timeouts must be a table, e.g. {{ idle = 120 }}")
    known = [f.name for f in dataclasses.fields(Timeouts)]
    out: dict[str, float | None] = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown timeout {key!r} (known: {', '.join(known)})")
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{where}: timeouts.{key} must be a number of seconds")
        out[key] = float(value) if value else None
    return Timeouts(**out)


def _api_key(table: dict[str, Any], protocol: str, where: str, base: Path) -> str | None:
    inline = _str(table, "api_key", where)
    path = _str(table, "api_key_file", where)
    env = _str(table, "api_key_env", where)
    if sum(x is not None for x in (inline, path, env)) > 1:
        raise ConfigError(f"{where}: give one of api_key_env, api_key_file and api_key")
    if inline is not None:
        log.warning(
            "%s: the API key is written in the routes file; prefer api_key_env or api_key_file", where
        )
        return inline
    if path is not None:
        try:
            return (base / path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"{where}: api_key_file {path!r}: {exc.strerror or exc}") from None
    auth = get_protocol(protocol).auth
    env = env or (auth.env if auth is not None else None)
    if env is None:
        return None
    key = os.environ.get(env)
    if not key:
        log.warning(
            "%s: the environment variable %s is not set: requests go upstream without a key", where, env
        )
    return key or None


def route_from_table(table: dict[str, Any], *, base: Path | None = None, index: int = 0) -> Route:
    """One ``[[routes]]`` table → a :class:`Route` (paths are relative to ``base``).

    Raises:
        ConfigError: A field is missing, unknown or of the wrong type; the protocol cannot be an
            upstream; the recording cannot be read.
    """
    where = f"route {table.get('name') or table.get('model') or index + 1!r}"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})"
        )
    model = _str(table, "model", where)
    if not model:
        raise ConfigError(f"{where}: model (a name or a glob pattern such as 'gpt-*') is required")
    base = base or Path.cwd()
    fallbacks = table.get("fallbacks", [])
    if not isinstance(fallbacks, list) or not all(isinstance(f, str) for f in fallbacks):
        raise ConfigError(f"{where}: fallbacks must be a list of route names")
    upstream = _upstream(table, where, base)
    drop = table.get("drop_params")
    if drop is not None and not isinstance(drop, bool):
        raise ConfigError(f"{where}: drop_params must be true or false")
    caps = _caps(table.get("model_caps"), where)
    return Route(model, upstream, _str(table, "name", where) or "", tuple(fallbacks), drop, caps)


def _caps(table: Any, where: str) -> ModelCaps | None:
    """``model_caps = {sampling = ["temperature"], reasoning = false, max_output = 8192, ...}``."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: model_caps must be a table")
    known = {f.name for f in dataclasses.fields(ModelCaps)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{where}: model_caps: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    args: dict[str, Any] = dict(table)
    sampling = args.get("sampling")
    if sampling is not None:
        if not isinstance(sampling, list) or not all(isinstance(x, str) for x in sampling):
            raise ConfigError(f"{where}: model_caps.sampling must be a list of parameter names")
        args["sampling"] = frozenset(sampling)
    for flag in ("one_of_temperature_top_p", "reasoning"):
        if flag in args and not isinstance(args[flag], bool):
            raise ConfigError(f"{where}: model_caps.{flag} must be true or false")
    limit = args.get("max_output")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"{where}: model_caps.max_output must be a positive integer")
    return ModelCaps(**args)


def _upstream(table: dict[str, Any], where: str, base: Path) -> Upstream:
    recording = _str(table, "recording", where)
    protocol = _str(table, "protocol", where)
    try:
        if recording is not None:
            speed = table.get("speed")
            if speed is not None and not isinstance(speed, int | float):
                raise ConfigError(f"{where}: speed must be a number")
            return RecordingUpstream(base / recording, speed=speed or None, protocol=protocol)
        if protocol is None:
            raise ConfigError(f"{where}: give the upstream's protocol (or a recording)")
        rename = _str(table, "upstream_model", where)
        if rename is not None:
            check_model(rename)
        headers = table.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise ConfigError(f"{where}: headers must be a table of strings")
        # A websocket session protocol (Realtime, Live) or an HTTP one: the same settings.
        kind = WebSocketUpstream if get_protocol(protocol).session is not None else HTTPUpstream
        return kind(
            protocol,
            _str(table, "url", where),
            api_key=_api_key(table, protocol, where, base),
            model=rename,
            headers=headers,
            timeouts=_timeouts(table.get("timeouts"), where),
        )
    except Rejected as exc:
        raise ConfigError(f"{where}: upstream_model: {exc.message}") from None
    except (MaasStreamError, ValueError, OSError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{where}: {exc}") from None


def load_routes(path: str | Path) -> Router:
    """Read a TOML routes file (see the module docstring).

    Raises:
        ConfigError: The file is not TOML, has no ``[[routes]]``, or a route is invalid.
        OSError: The file cannot be read.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"routes"})
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {', '.join(unknown)} (expected [[routes]])")
    tables = data.get("routes")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{path}: no [[routes]] tables")
    try:
        return Router([route_from_table(t, base=path.parent, index=i) for i, t in enumerate(tables)])
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def single_route(upstream: Upstream) -> Router:
    """One route serving every model from ``upstream`` (``create_app(upstream=...)``)."""
    return Router([Route("*", upstream)])
