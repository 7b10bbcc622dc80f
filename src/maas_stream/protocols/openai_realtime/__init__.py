"""OpenAI Realtime (GA and beta event names) over a websocket, recorded as ``{"dir", "msg"}`` JSON lines.

Public: :class:`StreamDecoder` (server and client events; each response's output items as
messages), :class:`StreamEncoder` (server events), the conversation-item history codec
(:func:`to_canonical`, :func:`from_canonical`, :func:`validate`). The wire Structs, the item
mapping (``_items``) and the event writer (``_writer``) are private.
"""

from __future__ import annotations

import sys
from typing import Final

from ..._registry import Auth, spec_of
from .. import _names
from .._errors import openai_error_body
from ._decode import StreamDecoder
from ._detect import detect
from ._encode import StreamEncoder
from ._history import from_canonical, to_canonical, validate

__all__ = (
    "SPEC",
    "NAME",
    "StreamDecoder",
    "StreamEncoder",
    "detect",
    "from_canonical",
    "to_canonical",
    "validate",
)

NAME: Final = _names.OPENAI_REALTIME


SPEC = spec_of(
    sys.modules[__name__],
    "jsonl",
    endpoints=(),
    auth=Auth("OPENAI_API_KEY", "authorization", "Bearer {}"),
    url=None,
    error_body=openai_error_body,
    media_type="application/jsonl",
)
"""Everything the registry, the CLI and the bridge know of this protocol."""
