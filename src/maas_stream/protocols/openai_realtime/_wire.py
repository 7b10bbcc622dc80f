"""OpenAI Realtime wire Struct (private): one envelope for every server event, typed by ``type``.

Only the fields the decoder reads are declared; unknown fields are ignored, never forbidden.

They are ``gc=False``: decoded fresh per message, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles; leaving them out of the cycle collector is measured
in ``benchmarks/bench_realtime.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Frame", "ServerEvent", "frame_decoder", "server_decoder"]


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


class Frame(msgspec.Struct, gc=False):
    """A recorded ``{"dir", "msg"}`` line whose message is a server event (decoded in one pass)."""

    dir: str = ""
    msg: ServerEvent | None = None


frame_decoder = msgspec.json.Decoder(Frame)
