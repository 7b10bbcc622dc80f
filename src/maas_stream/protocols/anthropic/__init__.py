"""Anthropic Messages (``POST /v1/messages`` with ``stream: true``).

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the non-streaming body codec
(:func:`encode_response`, :func:`decode_response`), the history codec (:func:`to_canonical`,
:func:`from_canonical`) and :func:`validate`. Wire Structs are private.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Final

from ..._registry import Auth, Endpoint, ModelList, spec_of
from .. import _names
from .._counts import ANTHROPIC_COUNT
from .._errors import anthropic_error_body
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

if TYPE_CHECKING:
    from collections.abc import Sequence

NAME: Final = _names.ANTHROPIC


ENDPOINTS = (Endpoint(r"/v1/messages"), Endpoint(r"/v1/messages/count_tokens", count=True))
COUNT_TOKENS = ANTHROPIC_COUNT
AUTH = Auth(
    "ANTHROPIC_API_KEY",
    "x-api-key",
    fixed={"anthropic-version": "2023-06-01"},
    alternatives=(("authorization", "Bearer {}"),),  # what the SDK sends since 2026 (api_key or auth_token)
)
URL = "https://api.anthropic.com/v1/messages"
ERROR_BODY = anthropic_error_body


def _model_list(models: Sequence[str]) -> dict[str, Any]:
    # GET /v1/models (with anthropic-version): https://docs.anthropic.com/en/api/models-list
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "1970-01-01T00:00:00Z"} for m in models
    ]
    first, last = (models[0], models[-1]) if models else (None, None)
    return {"data": data, "has_more": False, "first_id": first, "last_id": last}


MODELS = ModelList(r"/v1/models", _model_list, header="anthropic-version")

SPEC = spec_of(sys.modules[__name__], "sse")
"""Everything the registry, the CLI and the bridge know of this protocol."""
