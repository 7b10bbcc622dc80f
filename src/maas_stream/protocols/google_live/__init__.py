"""Google Live API (BidiGenerateContent over a websocket), recorded as ``{"dir", "msg"}`` JSON lines.

Public: :class:`StreamDecoder` (client and server messages; one assistant message per model
turn, kept as session events rather than flattened), :class:`StreamEncoder` (server messages),
the client-content history codec (:func:`to_canonical`, :func:`from_canonical`) and
:func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

import sys
from typing import Final

from ..._registry import Auth, spec_of
from .. import _names
from .._errors import google_error_body
from ._decode import StreamDecoder
from ._detect import detect
from ._encode import DEFAULT_AUDIO_MIME, StreamEncoder
from ._history import from_canonical, to_canonical, validate

__all__ = (
    "SPEC",
    "NAME",
    "StreamDecoder",
    "StreamEncoder",
    "DEFAULT_AUDIO_MIME",
    "detect",
    "from_canonical",
    "to_canonical",
    "validate",
)

NAME: Final = _names.GOOGLE_LIVE


SPEC = spec_of(
    sys.modules[__name__],
    "jsonl",
    endpoints=(),
    auth=Auth("GEMINI_API_KEY", "x-goog-api-key"),
    url=None,
    error_body=google_error_body,
    media_type="application/jsonl",
)
"""Everything the registry, the CLI and the bridge know of this protocol."""
