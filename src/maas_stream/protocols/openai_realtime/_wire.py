"""OpenAI Realtime wire Structs (private): the server events, typed by ``type``.

They declare only the fields the decoder reads (unknown ones are ignored, never forbidden) and are
``gc=False`` like the Live Structs (fresh per message, plain JSON values inside, no cycles;
measured in ``benchmarks/bench_realtime.py``).

A server message (or a recorded server line) is decoded by :func:`typed_decoders`'s decoders:
its ``type`` picks the Struct (a msgspec tag: no ``type`` string is built per message), and a
streamed delta's Struct holds only what a delta needs (its other fields are not read, so not
checked either). A message of any other type fails them and is read untagged (``ServerEvent``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Union

import msgspec

from .._session import Frame

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["ServerEvent", "server_decoder", "typed_decoders"]


class _Fields(msgspec.Struct, gc=False):
    """The fields the decoder reads of any server event but its type (GA and beta names share them)."""

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


class ServerEvent(_Fields, gc=False):
    """Any Realtime server event, its type read as a string."""

    type: str = ""


class _Known(_Fields, tag_field="type", gc=False):
    """A server event of a type the decoder names: ``type`` is its tag, one string per class."""

    type: ClassVar[str] = ""
    into: ClassVar[int | None] = None
    """The buffer a streamed delta folds to (``_direct``'s kinds), ``None`` for any other event."""


class _Delta(msgspec.Struct, tag_field="type", gc=False):
    """A streamed delta (text, audio, transcript, call arguments): only what it needs."""

    type: ClassVar[str] = ""
    into: ClassVar[int | None] = None
    item_id: str | None = None
    content_index: int = 0
    delta: str | None = None


server_decoder = msgspec.json.Decoder(ServerEvent)


def typed_decoders(
    deltas: dict[str, int], others: Iterable[str]
) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]:
    """Decoders of a server message and of a recorded server line (``Frame``), typed by ``type``.

    ``deltas``: the streamed deltas' types, by the buffer they fold to; ``others``: every other
    type read typed. Each type is one Struct whose ``type`` and ``into`` are class attributes; a
    message of any other type fails both decoders (``server_decoder`` reads it).
    """
    kinds = [
        msgspec.defstruct(
            f"Delta{i}", [], bases=(_Delta,), tag=name, namespace={"type": name, "into": into}, gc=False
        )
        for i, (name, into) in enumerate(deltas.items())
    ]
    kinds += [
        msgspec.defstruct(f"Event{i}", [], bases=(_Known,), tag=name, namespace={"type": name}, gc=False)
        for i, name in enumerate(others)
    ]
    typed = Union[tuple(kinds)]  # type: ignore[valid-type]  # noqa: UP007
    return msgspec.json.Decoder(typed), msgspec.json.Decoder(Frame[typed])  # type: ignore[valid-type]
