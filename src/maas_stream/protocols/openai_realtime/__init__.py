"""OpenAI Realtime (GA and beta event names) over a websocket, recorded as ``{"dir", "msg"}`` JSON lines.

Public: :class:`StreamDecoder` (server and client events; each response's output items as
messages), :class:`StreamEncoder` (server events), the client-event codec (:func:`decode_client`,
:func:`encode_client`: client events ↔ canonical client messages, ``maas_stream._client_model``),
the conversation-item history codec
(:func:`to_canonical`, :func:`from_canonical`, :func:`validate`). The wire Structs, the item
mapping (``_items``) and the event writer (``_writer``) are private.
"""

from __future__ import annotations

import sys
from typing import Final

from ..._registry import Auth, SessionEndpoint, spec_of
from .. import _names
from .._errors import openai_error_body
from ._client import client_path as client_path
from ._client import decode_client as decode_client
from ._client import encode_client as encode_client
from ._decode import StreamDecoder as StreamDecoder
from ._detect import detect as detect
from ._encode import StreamEncoder as StreamEncoder
from ._history import from_canonical as from_canonical
from ._history import to_canonical as to_canonical
from ._history import validate as validate

NAME: Final = _names.OPENAI_REALTIME


AUTH = Auth("OPENAI_API_KEY", "authorization", "Bearer {}")
ERROR_BODY = openai_error_body
SESSION = SessionEndpoint(
    paths=(r"/v1/realtime",),
    url="wss://api.openai.com/v1/realtime?model={model}",
    model_query="model",
    key_subprotocol="openai-insecure-api-key.",
    subprotocol="realtime",
    forward_headers=("openai-beta",),  # realtime=v1: the beta event names
    beta_header=("openai-beta", "realtime=v1"),
)

SPEC = spec_of(sys.modules[__name__], "jsonl", media_type="application/jsonl")
"""Everything the registry, the CLI and the bridge know of this protocol."""
