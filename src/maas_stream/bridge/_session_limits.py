"""What a realtime session may do, and what the bridge's relay expects of its translator.

:class:`SessionLimits` (message size, idle time, the wait for a first message that names the
model; the number of sessions is :attr:`~maas_stream.bridge.Limits.max_streams`) and the seam
between the relay (``_realtime``) and the sans-IO session translator: :class:`Translator`, the
interface :class:`maas_stream._session_bridge.SessionBridge` serves, and :class:`Translated`,
what one message becomes.

It must not contain protocol logic, do IO or relay anything (``_realtime`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from .._drops import Dropped
    from .._model import Session

__all__ = ["MAX_MESSAGE", "SessionLimits", "Translated", "Translator"]


MAX_MESSAGE: Final = 16 * 1024 * 1024
"""The largest websocket message accepted by default, either way (bytes): a few seconds of audio
fit many times over; uvicorn's own default limit is the same."""


@dataclass(frozen=True)
class SessionLimits:
    """What one realtime session may do (the number of sessions is :attr:`Limits.max_streams`)."""

    max_message: int = MAX_MESSAGE
    """The largest message, in bytes, from the client (closed 1009 beyond) or the upstream."""
    idle_timeout: float | None = 600.0
    """Seconds without a message either way before the session is closed (``None``: never)."""
    first_message_timeout: float | None = 30.0
    """Seconds a client that names its model in its first message (Live's ``setup``) has to send it."""

    def __post_init__(self) -> None:
        if self.max_message < 1:
            raise ValueError(f"max_message must be positive, not {self.max_message}")
        for name in ("idle_timeout", "first_message_timeout"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds or None, not {value!r}")


# ---------------------------------------------------------------------------------- the seam


@dataclass
class Translated:
    """What one message (or the session's opening) becomes: messages each way, drops, a close."""

    to_upstream: list[str | bytes]
    to_client: list[str | bytes]
    dropped: list[Dropped] = field(default_factory=list)
    close: tuple[int, str] | None = None
    """Close the session: the client with this code and reason (after :attr:`to_client`)."""


class Translator(Protocol):
    """The session translator's interface (``maas_stream._session_bridge.SessionBridge``)."""

    def opening(self) -> Any:
        """What to send when the session opens."""
        ...

    def from_client(self, message: str | bytes) -> Any:
        """A client message, translated."""
        ...

    def from_upstream(self, message: str | bytes) -> Any:
        """An upstream message, translated."""
        ...

    @property
    def session(self) -> Session:
        """The session so far (responses with their usage, session events)."""
        ...
