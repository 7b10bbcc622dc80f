"""Google Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``.

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the response-body codec
(:func:`encode_response`, :func:`decode_response`), the history codec (:func:`to_canonical`,
:func:`from_canonical`, :func:`request_extras`) and :func:`validate`. Wire Structs and the one
part/metadata mapping (``_parts``, ``_meta``) are private.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Final

from ..._registry import Auth, Endpoint, ModelList, spec_of
from .. import _names
from .._counts import GEMINI_COUNT
from .._errors import google_error_body
from ._body import decode_response as decode_response
from ._body import encode_response as encode_response
from ._decode import StreamDecoder as StreamDecoder
from ._detect import detect as detect
from ._detect import detect_body as detect_body
from ._encode import StreamEncoder as StreamEncoder
from ._envelope import ENVELOPE as ENVELOPE
from ._history import PLACEHOLDER_SIGNATURE as PLACEHOLDER_SIGNATURE
from ._history import from_canonical as from_canonical
from ._history import request_extras as request_extras
from ._history import to_canonical as to_canonical
from ._history import validate as validate
from ._parts import SIGNATURE_TYPE as SIGNATURE_TYPE

if TYPE_CHECKING:
    from collections.abc import Sequence

NAME: Final = _names.GEMINI

_MODEL_PATH = r"/(?:v1beta|v1|v1alpha)/models/(?P<model>[^/:]+)"

ENDPOINTS = (
    Endpoint(_MODEL_PATH + ":streamGenerateContent", stream=True, query="alt=sse"),
    Endpoint(_MODEL_PATH + ":generateContent", stream=False),
    Endpoint(_MODEL_PATH + ":countTokens", count=True),
)
COUNT_TOKENS = GEMINI_COUNT
AUTH = Auth("GEMINI_API_KEY", "x-goog-api-key", query="key")
URL = "https://generativelanguage.googleapis.com/v1beta/models/{model}:streamGenerateContent?alt=sse"
ERROR_BODY = google_error_body


def _model_list(models: Sequence[str]) -> dict[str, Any]:
    # GET /v1beta/models: https://ai.google.dev/api/models#method:-models.list
    methods = ["generateContent", "streamGenerateContent"]
    return {
        "models": [
            {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": methods} for m in models
        ]
    }


MODELS = ModelList(r"/(?:v1beta|v1alpha)/models", _model_list)
REPLAY_ONLY = frozenset({SIGNATURE_TYPE})

SPEC = spec_of(sys.modules[__name__], "sse")
"""Everything the registry, the CLI and the bridge know of this protocol."""
