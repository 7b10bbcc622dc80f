"""The bridge: serve any provider's streaming endpoint from any upstream or recording (``[serve]`` extra).

:func:`create_app` builds a pure ASGI application (no web framework) that a client SDK talks to
as if it were OpenAI, Anthropic or Gemini, while the stream comes from an :class:`HTTPUpstream`
(a real provider of any protocol) or a :class:`RecordingUpstream` (a recording, offline), chosen
per request by the model through :class:`Route` s (a TOML file: :func:`load_routes`). A
:class:`Guard` checks bridge keys, hosts, origins and the content type. Run it with any ASGI
server, e.g. ``maas-stream serve`` (uvicorn), or several workers with the
:func:`app_from_env` factory.

Given a conversation store (:func:`open_store`: SQLite by default, Redis for several workers),
it keeps Responses and Interactions conversations: ``previous_response_id`` /
``previous_interaction_id`` on any upstream, retrieval, stream resumption and background
responses. Realtime sessions (OpenAI Realtime, Gemini Live websockets) are relayed to a
:class:`WebSocketUpstream` (translated by :class:`maas_stream.SessionBridge` when the protocols
differ) within :class:`SessionLimits`, or asked turn by turn of an HTTP upstream.

It wires the library's pipeline and contains no stream, conversation or protocol logic: routes,
request envelopes, credentials, default URLs and error bodies come from the protocols' specs.
"""

from __future__ import annotations

from ._app import BridgeApp as BridgeApp
from ._app import Limits as Limits
from ._app import create_app as create_app
from ._guard import KEYS_ENV as KEYS_ENV
from ._guard import Guard as Guard
from ._guard import load_bridge_keys as load_bridge_keys
from ._metrics import BridgeStats as BridgeStats
from ._metrics import Metrics as Metrics
from ._routes import ConfigError as ConfigError
from ._routes import Route as Route
from ._routes import Router as Router
from ._routes import load_routes as load_routes
from ._serve import DEFAULT_STORE as DEFAULT_STORE
from ._serve import SETTINGS_ENV as SETTINGS_ENV
from ._serve import ServeSettings as ServeSettings
from ._serve import app_from_env as app_from_env
from ._serve import build_app as build_app
from ._serve import describe as describe
from ._session_limits import SessionLimits as SessionLimits
from ._store import Store as Store
from ._store import StoredRequest as StoredRequest
from ._store import StoredResponse as StoredResponse
from ._store import StoreFullError as StoreFullError
from ._store import open_store as open_store
from ._upstream import HTTPUpstream as HTTPUpstream
from ._upstream import RecordingUpstream as RecordingUpstream
from ._upstream import Timeouts as Timeouts
from ._upstream import Upstream as Upstream
from ._upstream import auth_headers as auth_headers
from ._ws import SessionRecordingUpstream as SessionRecordingUpstream
from ._ws import WebSocketUpstream as WebSocketUpstream

__all__ = (
    "DEFAULT_STORE",
    "KEYS_ENV",
    "SETTINGS_ENV",
    "BridgeApp",
    "BridgeStats",
    "ConfigError",
    "Guard",
    "HTTPUpstream",
    "Limits",
    "RecordingUpstream",
    "Timeouts",
    "Metrics",
    "Route",
    "Router",
    "ServeSettings",
    "SessionLimits",
    "SessionRecordingUpstream",
    "Store",
    "StoreFullError",
    "StoredRequest",
    "StoredResponse",
    "Upstream",
    "WebSocketUpstream",
    "app_from_env",
    "auth_headers",
    "build_app",
    "create_app",
    "describe",
    "load_bridge_keys",
    "load_routes",
    "open_store",
)
