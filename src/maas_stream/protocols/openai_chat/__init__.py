"""OpenAI Chat Completions (``POST /v1/chat/completions`` with ``stream: true``).

Public: :class:`StreamDecoder`, :class:`StreamEncoder`, the response bodies
(:func:`encode_response`, :func:`decode_response`), the history codec (:func:`to_canonical`,
:func:`from_canonical`) and :func:`validate`. All of them render Chat wire objects through one
mapping (``_map``, ``_message``). Wire Structs are private.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Final

from ..._registry import Auth, Endpoint, ModelList, spec_of
from .. import _names
from .._errors import openai_error_body
from ._body import decode_response as decode_response
from ._body import encode_response as encode_response
from ._decode import StreamDecoder as StreamDecoder
from ._detect import detect as detect
from ._detect import detect_body as detect_body
from ._encode import StreamEncoder as StreamEncoder
from ._envelope import ENVELOPE as ENVELOPE
from ._envelope import encoder_options
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate
from ._map import ReasoningMode as ReasoningMode

if TYPE_CHECKING:
    from collections.abc import Sequence

NAME: Final = _names.OPENAI_CHAT


ENDPOINTS = (Endpoint(r"(?:/v1)?/chat/completions"),)
AUTH = Auth("OPENAI_API_KEY", "authorization", "Bearer {}")
URL = "https://api.openai.com/v1/chat/completions"
ERROR_BODY = openai_error_body
ENCODER_OPTIONS = encoder_options


def _model_list(models: Sequence[str]) -> dict[str, Any]:
    # GET /v1/models: https://platform.openai.com/docs/api-reference/models/list
    data = [{"id": m, "object": "model", "created": 0, "owned_by": "maas-stream"} for m in models]
    return {"object": "list", "data": data}


MODELS = ModelList(r"(?:/v1)?/models", _model_list)

SPEC = spec_of(sys.modules[__name__], "sse")
"""Everything the registry, the CLI and the bridge know of this protocol."""
