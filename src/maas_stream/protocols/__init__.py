"""Wire protocols. Each sub-module is one wire API with its decoder, encoder and history codec.

Importing this package registers every protocol with the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from types import ModuleType

    from .._interfaces import Framing

__all__ = [
    "anthropic",
    "gemini",
    "google_interactions",
    "google_live",
    "openai_chat",
    "openai_realtime",
    "openai_responses",
]


def _register(module: ModuleType, framing: Framing, **extra: Any) -> None:
    """Register a protocol module by its conventional names (NAME, StreamDecoder, ...)."""
    register(
        ProtocolSpec(
            name=module.NAME,
            framing=framing,
            decoder=module.StreamDecoder,
            encoder=module.StreamEncoder,
            to_canonical=module.to_canonical,
            from_canonical=module.from_canonical,
            validate=module.validate,
            detect=module.detect,
            detect_body=getattr(module, "detect_body", None),
            encode_response=getattr(module, "encode_response", None),
            **extra,
        )
    )


_register(openai_chat, "sse")
_register(anthropic, "sse")
_register(openai_responses, "sse")
_register(gemini, "sse", replay_only=frozenset({gemini.SIGNATURE_TYPE}))
_register(google_interactions, "sse")
_register(google_live, "jsonl", media_type="application/jsonl")
_register(openai_realtime, "jsonl", media_type="application/jsonl")
