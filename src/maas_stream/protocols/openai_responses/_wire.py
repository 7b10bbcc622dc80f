"""OpenAI Responses wire Structs (private). Only the fields we read are declared.

Source: PROTOCOLS.md §2 (openai-python ``types/responses/*_event.py``). One flat envelope covers
every server-sent event type: each type reads the few fields it needs. Items, parts, annotations
and response objects stay plain JSON (``Any``): they are mapped by ``_items`` and kept whole
where the canonical model has no home for a field.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Envelope(msgspec.Struct, gc=False):
    """Any Responses stream event; unknown fields are ignored.

    ``gc=False``: decoded JSON holds no reference cycles, and skipping GC tracking of one
    short-lived envelope per event saves collector work on the hot path
    (benchmarks/bench_openai_responses.py).
    """

    type: str = ""
    sequence_number: int | None = None
    output_index: int | None = None
    content_index: int | None = None
    summary_index: int | None = None
    command_index: int | None = None
    item_id: str | None = None
    delta: Any = None
    """A text fragment (or, for ``shell_call_output_content.delta``, ``{stdout, stderr}``)."""
    text: str | None = None
    command: str | None = None
    code: Any = None
    """The error code of a flat ``error`` event."""
    message: Any = None
    param: Any = None
    error: Any = None
    logprobs: list[Any] | None = None
    annotation: Any = None
    part: Any = None
    item: Any = None
    response: Any = None
    partial_image_b64: str | None = None
    partial_image_index: int | None = None
    output_format: str | None = None


envelope_decoder = msgspec.json.Decoder(Envelope)
