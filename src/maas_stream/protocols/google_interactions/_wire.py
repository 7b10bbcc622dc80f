"""Google Interactions wire Structs (private): only the fields the decoder reads.

Both schemas share one envelope: the current one (``interaction.created``, ``step.*``,
``interaction.completed``) and the legacy one (``interaction.start``, ``content.*``,
``interaction.complete``). The wire is snake_case. Unknown fields are ignored, never forbidden.

They are ``gc=False``: decoded fresh per frame, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles; leaving them out of the cycle collector is measured
in ``benchmarks/bench_realtime.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Delta", "Envelope", "envelope_decoder"]


class Delta(msgspec.Struct, gc=False):
    """A ``step.delta`` / ``content.delta`` payload (one struct for every delta type)."""

    type: str = ""
    text: str | None = None
    signature: str | None = None
    arguments: Any = None
    content: Any = None
    annotations: Any = None
    id: str | None = None
    name: str | None = None


class Envelope(msgspec.Struct, gc=False):
    """Every Interactions stream event, current or legacy."""

    event_type: str = ""
    index: int | None = None
    step: dict[str, Any] | None = None
    content: dict[str, Any] | None = None
    delta: Delta | None = None
    interaction: dict[str, Any] | None = None
    error: Any = None
    status: str | None = None


envelope_decoder = msgspec.json.Decoder(Envelope)
