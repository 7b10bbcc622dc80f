"""Wire protocols. Each sub-module is one wire API with its decoder, encoder and history codec.

Importing this package registers every protocol with the registry.
"""

from __future__ import annotations

from .._registry import ProtocolSpec, register
from . import gemini, openai_chat

__all__ = ["gemini", "openai_chat"]

register(
    ProtocolSpec(
        name=openai_chat.NAME,
        framing="sse",
        decoder=openai_chat.StreamDecoder,
        encoder=openai_chat.StreamEncoder,
        to_canonical=openai_chat.to_canonical,
        from_canonical=openai_chat.from_canonical,
        validate=openai_chat.validate,
        detect=openai_chat.detect,
    )
)

register(
    ProtocolSpec(
        name=gemini.NAME,
        framing="sse",
        decoder=gemini.StreamDecoder,
        encoder=gemini.StreamEncoder,
        to_canonical=gemini.to_canonical,
        from_canonical=gemini.from_canonical,
        validate=gemini.validate,
        detect=gemini.detect,
    )
)
