"""Anthropic Messages wire Structs (private). Only the fields we read are declared.

Source: PROTOCOLS.md §3 (anthropic-sdk-python ``types/raw_*_event.py``, ``types/beta/*``). One
envelope Struct covers every stream event, so each frame is decoded once and the hot frames
(``content_block_delta`` with ``text_delta`` / ``input_json_delta``) build no dict. Blocks,
messages, usage and errors stay untyped (``Any``): they are kept raw for a lossless re-encode.

They are ``gc=False``: decoded fresh per frame, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles; leaving them out of the cycle collector is measured
in ``benchmarks/bench_anthropic.py``.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec


class Delta(msgspec.Struct, gc=False):
    """A ``content_block_delta.delta`` or a ``message_delta.delta`` (they share the name)."""

    type: str = ""
    text: str | None = None
    partial_json: str | None = None
    thinking: str | None = None
    signature: str | None = None
    citation: Any = None
    content: Any = msgspec.UNSET
    encrypted_content: Any = msgspec.UNSET
    stop_reason: str | None = None
    stop_sequence: str | None = None


class Frame(msgspec.Struct, gc=False):
    """Any Anthropic stream event's JSON payload."""

    type: str = ""
    index: Annotated[int, msgspec.Meta(ge=0)] = 0
    """A block's position in the message: a provider key, never used to size anything."""
    delta: Delta | None = None
    content_block: Any = None
    message: Any = None
    usage: Any = None
    error: Any = None


frame_decoder = msgspec.json.Decoder(Frame)
