"""The bridge: serve any provider's streaming endpoint from any upstream or recording (``[serve]`` extra).

:func:`create_app` builds a pure ASGI application (no web framework) that a client SDK talks to
as if it were OpenAI, Anthropic or Gemini, while the stream comes from an :class:`HTTPUpstream`
(a real provider of any protocol) or a :class:`RecordingUpstream` (a recording, offline). Run it
with any ASGI server, e.g. ``maas-stream serve`` (uvicorn).

It wires the library's pipeline and contains no stream or conversation logic.
"""

from __future__ import annotations

from ._app import BridgeApp as BridgeApp
from ._app import BridgeStats as BridgeStats
from ._app import create_app as create_app
from ._upstream import API_KEYS as API_KEYS
from ._upstream import HTTPUpstream as HTTPUpstream
from ._upstream import RecordingUpstream as RecordingUpstream
from ._upstream import Upstream as Upstream
from ._upstream import auth_headers as auth_headers

__all__ = (
    "API_KEYS",
    "BridgeApp",
    "BridgeStats",
    "HTTPUpstream",
    "RecordingUpstream",
    "Upstream",
    "auth_headers",
    "create_app",
)
