"""Wire protocols. Each sub-module is one wire API with its decoder, encoder and history codec.

Importing this package registers every protocol with the registry.
"""

from __future__ import annotations

from .._registry import ProtocolSpec, register
from . import (
    anthropic,
    gemini,
    google_interactions,
    google_live,
    openai_chat,
    openai_realtime,
    openai_responses,
)

__all__ = [
    "anthropic",
    "gemini",
    "google_interactions",
    "google_live",
    "openai_chat",
    "openai_realtime",
    "openai_responses",
]

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
        detect_body=openai_chat.detect_body,
    )
)

register(
    ProtocolSpec(
        name=anthropic.NAME,
        framing="sse",
        decoder=anthropic.StreamDecoder,
        encoder=anthropic.StreamEncoder,
        to_canonical=anthropic.to_canonical,
        from_canonical=anthropic.from_canonical,
        validate=anthropic.validate,
        detect=anthropic.detect,
        detect_body=anthropic.detect_body,
    )
)

register(
    ProtocolSpec(
        name=openai_responses.NAME,
        framing="sse",
        decoder=openai_responses.StreamDecoder,
        encoder=openai_responses.StreamEncoder,
        to_canonical=openai_responses.to_canonical,
        from_canonical=openai_responses.from_canonical,
        validate=openai_responses.validate,
        detect=openai_responses.detect,
        detect_body=openai_responses.detect_body,
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
        detect_body=gemini.detect_body,
        replay_only=frozenset({gemini.SIGNATURE_TYPE}),
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
        detect_body=google_interactions.detect_body,
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
