"""This protocol's spec: the one record the registry, the CLI and the bridge dispatch on.

It names the protocol, its framing, its decoder, encoder, history codec and validation, its
detection, its client endpoints, its provider's authentication and URL, and its error body.
"""

from __future__ import annotations

from ..._registry import Auth, Endpoint, ProtocolSpec
from .. import _names
from .._errors import google_error_body
from ._body import encode_response
from ._decode import SIGNATURE_TYPE, StreamDecoder
from ._detect import detect, detect_body
from ._encode import StreamEncoder
from ._history import from_canonical, to_canonical, validate

__all__ = ["SPEC"]

_MODEL_PATH = r"/(?:v1beta|v1|v1alpha)/models/(?P<model>[^/:]+)"

SPEC = ProtocolSpec(
    name=_names.GEMINI,
    framing="sse",
    decoder=StreamDecoder,
    encoder=StreamEncoder,
    to_canonical=to_canonical,
    from_canonical=from_canonical,
    validate=validate,
    detect=detect,
    detect_body=detect_body,
    encode_response=encode_response,
    endpoints=(
        Endpoint(_MODEL_PATH + ":streamGenerateContent", stream=True, query="alt=sse"),
        Endpoint(_MODEL_PATH + ":generateContent", stream=False),
    ),
    auth=Auth("GEMINI_API_KEY", "x-goog-api-key"),
    url="https://generativelanguage.googleapis.com/v1beta/models/{model}:streamGenerateContent?alt=sse",
    error_body=google_error_body,
    replay_only=frozenset({SIGNATURE_TYPE}),
)
