"""Google Live API (BidiGenerateContent over a websocket), recorded as ``{"dir", "msg"}`` JSON lines.

Public: :class:`StreamDecoder` (client and server messages; one assistant message per model
turn, kept as session events rather than flattened), :class:`StreamEncoder` (server messages),
the client-message codec (:func:`decode_client`, :func:`encode_client`: client
messages ↔ canonical client messages, ``maas_stream._client_model``), the client-content history codec (:func:`to_canonical`, :func:`from_canonical`) and
:func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

import sys
from typing import Final

from ..._registry import Auth, SessionEndpoint, spec_of
from .. import _names
from .._errors import google_error_body
from ._client import client_path as client_path
from ._client import decode_client as decode_client
from ._client import encode_client as encode_client
from ._decode import StreamDecoder as StreamDecoder
from ._detect import detect as detect
from ._encode import DEFAULT_AUDIO_MIME as DEFAULT_AUDIO_MIME
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

NAME: Final = _names.GOOGLE_LIVE


AUTH = Auth("GEMINI_API_KEY", "x-goog-api-key", query="key")
ERROR_BODY = google_error_body
_BIDI = "google.ai.generativelanguage.{}.GenerativeService.BidiGenerateContent"
SESSION = SessionEndpoint(
    paths=(r"/ws/" + _BIDI.format(r"(?:v1|v1beta|v1alpha)").replace(".", r"\."),),
    url="wss://generativelanguage.googleapis.com/ws/" + _BIDI.format("v1beta"),
    model_field=("setup", "model"),
    model_prefix="models/",
)

SPEC = spec_of(sys.modules[__name__], "jsonl", media_type="application/jsonl")
"""Everything the registry, the CLI and the bridge know of this protocol."""
