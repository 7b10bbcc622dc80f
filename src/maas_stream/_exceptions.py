"""The exception tree. Every error this library raises on purpose is a ``MaasStreamError``.

::

    MaasStreamError
     ├── ProtocolError                  (abstract: something broke a protocol's rules)
     │    ├── RemoteProtocolError        the provider (or a recording) sent something invalid
     │    │    └── EventTooLargeError    one SSE event grew past the decoder's limit
     │    └── LocalProtocolError         the caller misused an object, or asked for something
     │         │                         the target protocol cannot express
     │         └── ConversionError       a conversion would drop continuation state (fail closed)
     ├── ProtocolDetectionError         a recording's protocol could not be told from its frames
     ├── ValidationError                a request body breaks the target protocol's rules
     └── StreamIOError (io/)            transport-level trouble; also subclasses httpx's error

Errors carry what is needed to find the fault: the protocol, the frame number (counting from 1),
the event type and the raw frame, where known. In-band errors that the provider reports inside a
stream are not exceptions: they are :class:`~maas_stream.events.StreamErrorEvent` events and end
up in ``Response.error``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._model import Response
    from .events import Event

__all__ = [
    "ConversionError",
    "EventTooLargeError",
    "LocalProtocolError",
    "MaasStreamError",
    "ProtocolDetectionError",
    "ProtocolError",
    "RemoteProtocolError",
    "ValidationError",
]


class MaasStreamError(Exception):
    """Root of every error maas-stream raises on purpose."""


class ProtocolError(MaasStreamError):
    """Something broke a protocol's rules. Abstract: catch a subclass or this.

    Attributes:
        message: What is wrong, in one line.
        protocol: The protocol name, when known.
        frame: The 1-based number of the offending frame (SSE event or JSON line), when known.
        event_type: The frame's event type, when known.
        raw: The raw frame (text), when known; truncated to 500 characters in ``str()``.
        state: The state machine's state when the error happened, when relevant.
        partial: The response as aggregated before the fault, when a pipeline raised it:
            nothing already received is lost.
        events: Events decoded from the frames before the bad one in the same chunk; a
            pipeline applies them before building ``partial``.
        error_frame: The in-band error frame :func:`~maas_stream.aconvert` wrote in its target
            protocol for this fault (``b""`` elsewhere).
    """

    error_frame: bytes = b""

    def __init__(
        self,
        message: str,
        *,
        protocol: str | None = None,
        frame: int | None = None,
        event_type: str | None = None,
        raw: Any = None,
        state: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.protocol = protocol
        self.frame = frame
        self.event_type = event_type
        self.raw = raw
        self.state = state
        self.partial: Response | None = None
        self.events: list[Event] = []

    def __str__(self) -> str:
        where = []
        if self.protocol:
            where.append(self.protocol)
        if self.frame is not None:
            where.append(f"frame {self.frame}")
        if self.event_type:
            where.append(f"event {self.event_type!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        return f"{prefix}{self.message}"


class RemoteProtocolError(ProtocolError):
    """The provider, or a recording of it, sent something that breaks the protocol."""


class EventTooLargeError(RemoteProtocolError):
    """One SSE event (or line) grew past the decoder's size limit."""


class LocalProtocolError(ProtocolError):
    """The caller misused an object, or asked an encoder for what its protocol cannot express.

    Misuse means feeding a machine after an error or after ``finish()``.
    """


class ConversionError(LocalProtocolError):
    """A conversion would drop state the next turn needs, so it fails closed instead.

    That state is a call id, a signature or encrypted content carried by an unknown type.
    """


class ProtocolDetectionError(MaasStreamError):
    """The protocol of a stream could not be detected from its first frames."""


class ValidationError(MaasStreamError):
    """A request body breaks the target protocol's rules.

    Attributes:
        faults: Every fault found, each naming the message index and the id involved.
    """

    def __init__(self, protocol: str, faults: list[str]) -> None:
        super().__init__(f"{protocol}: " + "; ".join(faults))
        self.protocol = protocol
        self.faults = faults
