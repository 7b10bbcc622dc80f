"""Google Interactions wire Structs (private): only the fields this package reads, typed.

Both schemas share one envelope: the current one (``interaction.created``, ``step.*``,
``interaction.completed``) and the legacy one (``interaction.start``, ``content.*``,
``interaction.complete``). The wire is snake_case. Unknown fields are ignored, never forbidden.

The step, interaction and usage Structs type the fields the mapping reads, so a value of the
wrong JSON type is an input fault (``msgspec.ValidationError``, which the decoder reports as a
``RemoteProtocolError``) rather than a ``TypeError`` further down. :func:`check_depth` bounds the
nesting of the JSON values this package keeps, so nothing it hands on is too deep to encode.

They are ``gc=False``: decoded fresh per frame, they hold only strings, numbers and plain JSON
values, so they cannot form reference cycles; leaving them out of the cycle collector is measured
in ``benchmarks/bench_realtime.py``.

It must not map anything to the canonical model (that is ``_steps``).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._exceptions import RemoteProtocolError

__all__ = [
    "MAX_DEPTH",
    "Delta",
    "Envelope",
    "InteractionFields",
    "StepFields",
    "UsageFields",
    "check_depth",
    "decode_raw",
    "envelope_decoder",
]

MAX_DEPTH: Final = 64
"""The deepest nesting of JSON arrays and objects kept from the provider (far past any real
tool argument; well inside what ``msgspec`` encodes at any stack depth)."""


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


class StepFields(msgspec.Struct, gc=False):
    """The fields of a known step type that the mapping reads (``msgspec.convert`` from a dict)."""

    type: str = ""
    id: str | None = None
    name: str | None = None
    call_id: str | None = None
    server_name: str | None = None
    signature: str | None = None
    summary: list[Any] | None = None
    content: list[Any] | None = None
    is_error: bool | None = None
    arguments: Any = None
    result: Any = None


class UsageFields(msgspec.Struct, gc=False):
    """The counts of an Interactions ``usage`` object that canonical usage reads."""

    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    total_thought_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_tool_use_tokens: int | None = None
    total_tokens: int | None = None


class InteractionFields(msgspec.Struct, gc=False):
    """The fields of an Interaction resource (body, or a stream's partial one) that are read."""

    id: str | None = None
    model: str | None = None
    agent: str | None = None
    status: str | None = None
    usage: dict[str, Any] | None = None
    errors: list[Any] | None = None
    steps: list[dict[str, Any]] | None = None
    outputs: list[dict[str, Any]] | None = None


def check_depth(value: Any, *, what: str = "value") -> None:
    """Refuse a JSON value nested deeper than :data:`MAX_DEPTH` (iteratively: no recursion).

    Raises:
        RemoteProtocolError: The value is nested too deeply.
    """
    if not isinstance(value, dict | list):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RemoteProtocolError(f"{what} nested deeper than {MAX_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


def decode_raw(data: bytes | str, *, what: str = "frame") -> Any:
    """Decode JSON untyped, with the nesting bound of :func:`check_depth`.

    Raises:
        RemoteProtocolError: Not JSON, or nested too deeply.
    """
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"{what} is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise RemoteProtocolError(f"{what} nested too deeply") from exc
    check_depth(value, what=what)
    return value
