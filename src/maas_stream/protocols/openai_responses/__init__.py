"""OpenAI Responses API (``POST /v1/responses`` with ``stream: true``, and resumed streams).

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the non-streaming body codec
(:func:`encode_response`, :func:`decode_response`), the history codec (:func:`to_canonical`,
:func:`from_canonical`) and :func:`validate`. Wire Structs are private. One mapping serves them
all: ``_items`` / ``_items_write`` (output and input items → messages and parts, and back) and
``_meta`` (usage, status and finish, error).
"""

from __future__ import annotations

import sys
from typing import Final

from ..._registry import Auth, Endpoint, spec_of
from .. import _names
from .._counts import RESPONSES_COUNT
from .._errors import openai_error_body
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

NAME: Final = _names.OPENAI_RESPONSES


ENDPOINTS = (
    Endpoint(r"(?:/v1)?/responses"),
    Endpoint(r"(?:/v1)?/responses/input_tokens", count=True),
)
COUNT_TOKENS = RESPONSES_COUNT
AUTH = Auth("OPENAI_API_KEY", "authorization", "Bearer {}")
URL = "https://api.openai.com/v1/responses"
ERROR_BODY = openai_error_body

SPEC = spec_of(sys.modules[__name__], "sse")
"""Everything the registry, the CLI and the bridge know of this protocol."""
