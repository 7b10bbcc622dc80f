"""The protocol names, defined once: every protocol package takes its own name from here.

It must not import anything.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ANTHROPIC",
    "GEMINI",
    "GOOGLE_INTERACTIONS",
    "GOOGLE_LIVE",
    "OPENAI_CHAT",
    "OPENAI_REALTIME",
    "OPENAI_RESPONSES",
]

OPENAI_CHAT: Final = "openai-chat"
OPENAI_RESPONSES: Final = "openai-responses"
ANTHROPIC: Final = "anthropic"
GEMINI: Final = "gemini"
GOOGLE_INTERACTIONS: Final = "google-interactions"
GOOGLE_LIVE: Final = "google-live"
OPENAI_REALTIME: Final = "openai-realtime"
