"""This protocol's spec: the one record the registry, the CLI and the bridge dispatch on.

It names the protocol, its framing, its decoder, encoder, history codec and validation, its
detection, its client endpoints, its provider's authentication and URL, and its error body.
"""

from __future__ import annotations

from ..._registry import Auth, Endpoint, ProtocolSpec
from .. import _names
from .._errors import openai_error_body
from ._body import encode_response
from ._decode import StreamDecoder
from ._detect import detect, detect_body
from ._encode import StreamEncoder
from ._history import from_canonical, to_canonical, validate

__all__ = ["SPEC"]

SPEC = ProtocolSpec(
    name=_names.OPENAI_CHAT,
    framing="sse",
    decoder=StreamDecoder,
    encoder=StreamEncoder,
    to_canonical=to_canonical,
    from_canonical=from_canonical,
    validate=validate,
    detect=detect,
    detect_body=detect_body,
    encode_response=encode_response,
    endpoints=(Endpoint(r"(?:/v1)?/chat/completions"),),
    auth=Auth("OPENAI_API_KEY", "authorization", "Bearer {}"),
    url="https://api.openai.com/v1/chat/completions",
    error_body=openai_error_body,
)
