"""Google Interactions (``POST /v1beta/interactions`` with ``stream: true``), both stream schemas.

Public: :class:`StreamDecoder` (current ``step.*`` and legacy ``content.*`` events, told apart
automatically), :class:`StreamEncoder` (current schema), the non-streaming Interaction body
(:func:`encode_response`, :func:`decode_response`), the stateless history codec
(:func:`to_canonical`, :func:`from_canonical`), :func:`validate` and the request envelope codec
(``ENVELOPE``: everything of a request around ``input``). All of them render steps, usage and
status through one mapping (``_steps``). Wire Structs are private.
"""

from __future__ import annotations

import sys
from typing import Final

from ..._registry import Auth, Endpoint, spec_of
from .. import _names
from .._errors import google_error_body
from ._body import decode_response as decode_response
from ._body import encode_response as encode_response
from ._decode import StreamDecoder as StreamDecoder
from ._detect import detect as detect
from ._detect import detect_body as detect_body
from ._encode import StreamEncoder as StreamEncoder
from ._envelope import ENVELOPE as ENVELOPE
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

NAME: Final = _names.GOOGLE_INTERACTIONS

# POST /v1beta/interactions: the body's `stream` decides (GG:_gaos/interactions.py create);
# google-genai sends the key in x-goog-api-key, Google's REST examples also take ?key=.
ENDPOINTS = (Endpoint(r"/(?:v1beta|v1alpha|v1)/interactions"),)
AUTH = Auth("GEMINI_API_KEY", "x-goog-api-key", query="key")
URL = "https://generativelanguage.googleapis.com/v1beta/interactions"
ERROR_BODY = google_error_body

SPEC = spec_of(sys.modules[__name__], "sse")
"""Everything the registry, the CLI and the bridge know of this protocol."""
