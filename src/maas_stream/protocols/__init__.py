"""Wire protocols. Each sub-module is one wire API with its decoder, encoder and history codec.

Importing this package registers every protocol with the registry.
"""

from __future__ import annotations

from .._registry import ProtocolSpec, register
from . import google_interactions, google_live, openai_chat, openai_realtime

__all__ = ["google_interactions", "google_live", "openai_chat", "openai_realtime"]

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
        name=google_interactions.NAME,
        framing="sse",
        decoder=google_interactions.StreamDecoder,
        encoder=google_interactions.StreamEncoder,
        to_canonical=google_interactions.to_canonical,
        from_canonical=google_interactions.from_canonical,
        validate=google_interactions.validate,
        detect=google_interactions.detect,
    )
)

register(
    ProtocolSpec(
        name=google_live.NAME,
        framing="jsonl",
        decoder=google_live.StreamDecoder,
        encoder=google_live.StreamEncoder,
        to_canonical=google_live.to_canonical,
        from_canonical=google_live.from_canonical,
        validate=google_live.validate,
        detect=google_live.detect,
        media_type="application/jsonl",
    )
)

register(
    ProtocolSpec(
        name=openai_realtime.NAME,
        framing="jsonl",
        decoder=openai_realtime.StreamDecoder,
        encoder=openai_realtime.StreamEncoder,
        to_canonical=openai_realtime.to_canonical,
        from_canonical=openai_realtime.from_canonical,
        validate=openai_realtime.validate,
        detect=openai_realtime.detect,
        media_type="application/jsonl",
    )
)
