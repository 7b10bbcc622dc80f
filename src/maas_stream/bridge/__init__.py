"""The bridge: serve any provider's streaming endpoint from any upstream or recording (``[serve]`` extra).

:func:`create_app` builds a pure ASGI application (no web framework) that a client SDK talks to
as if it were OpenAI, Anthropic or Gemini, while the stream comes from an :class:`HTTPUpstream`
(a real provider of any protocol) or a :class:`RecordingUpstream` (a recording, offline). Run it
with any ASGI server, e.g. ``maas-stream serve`` (uvicorn).

It wires the library's pipeline and contains no stream, conversation or protocol logic: routes,
request envelopes, credentials, default URLs and error bodies come from the protocols' specs.
"""

from __future__ import annotations

from ._app import BridgeApp as BridgeApp
from ._app import BridgeStats as BridgeStats
from ._app import Limits as Limits
from ._app import create_app as create_app
from ._upstream import HTTPUpstream as HTTPUpstream
from ._upstream import RecordingUpstream as RecordingUpstream
from ._upstream import Timeouts as Timeouts
from ._upstream import Upstream as Upstream
from ._upstream import auth_headers as auth_headers

__all__ = (
    "BridgeApp",
    "BridgeStats",
    "HTTPUpstream",
    "Limits",
    "RecordingUpstream",
    "Timeouts",
    "Upstream",
    "auth_headers",
    "create_app",
)
