"""The decoder and encoder interfaces every protocol implements (typing only).

It must not import any protocol module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    from ._drops import DropLog, Dropped
    from .events import Event

__all__ = ["Framing", "StreamDecoder", "StreamEncoder"]

Framing: TypeAlias = Literal["sse", "jsonl"]
"""How a protocol's frames travel: Server-Sent Events, or websocket messages recorded as JSON lines."""


class StreamDecoder(Protocol):
    """The decoder interface: bytes in, events with provider keys out."""

    protocol: ClassVar[str]
    warnings: list[str]
    """Framing-level findings that did not stop decoding (a sequence gap, say)."""

    @property
    def frames(self) -> int:
        """How many frames (SSE events or JSON lines) were decoded so far."""
        ...

    @property
    def truncated(self) -> bool:
        """True after :meth:`finish` when the bytes ended inside a frame, which was dropped."""
        ...

    def feed(self, data: bytes) -> list[Event]:
        """Decode a chunk of bytes; return the events it completed."""
        ...

    def finish(self) -> list[Event]:
        """Signal end of input; return any last events."""
        ...


class StreamEncoder(Protocol):
    """The encoder interface: canonical events in, wire bytes out."""

    protocol: ClassVar[str]
    drops: DropLog
    """What the target protocol could not carry and was dropped, as records."""

    @property
    def lossy(self) -> list[Dropped]:
        """The drops so far (``drops.records``)."""
        ...

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the frames it completes (maybe ``b""``)."""
        ...

    def finish(self) -> bytes:
        """End the output stream; return the last frames."""
        ...
