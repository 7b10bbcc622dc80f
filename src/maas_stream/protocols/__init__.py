"""Wire protocols. Each sub-module is one wire API with its decoder, encoder and history codec.

Importing this package registers every protocol with the registry.
"""

from __future__ import annotations

from .._registry import register
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


for _module in (
    openai_chat,
    anthropic,
    openai_responses,
    gemini,
    google_interactions,
    google_live,
    openai_realtime,
):
    register(_module.SPEC)
