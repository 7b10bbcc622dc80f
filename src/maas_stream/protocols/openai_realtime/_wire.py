"""OpenAI Realtime wire Struct (private): one envelope for every server event, typed by ``type``.

It declares only the fields the decoder reads (unknown ones are ignored, never forbidden) and is
``gc=False`` like the Live Structs (fresh per message, plain JSON values inside, no cycles;
measured in ``benchmarks/bench_realtime.py``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._session import Frame

__all__ = ["ServerEvent", "frame_decoder", "server_decoder"]


class ServerEvent(msgspec.Struct, gc=False):
    """Any Realtime server event (GA and beta names share these fields)."""

    type: str = ""
    item_id: str | None = None
    content_index: int = 0
    delta: str | None = None
    item: dict[str, Any] | None = None
    part: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    session: dict[str, Any] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    transcript: str | None = None
    error: Any = None


server_decoder = msgspec.json.Decoder(ServerEvent)


frame_decoder = msgspec.json.Decoder(Frame[ServerEvent])
"""Reads a recorded server line, envelope included, in one pass."""
