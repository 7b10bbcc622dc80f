"""What a realtime session may do: :class:`SessionLimits`.

Message size, idle time, the wait for a first message that names the model; the number of
sessions is :attr:`~maas_stream.bridge.Limits.max_streams`. The relay (``_realtime``) hands each
message to :class:`maas_stream.SessionBridge` (sans-IO) directly.

It must not contain protocol logic, do IO or relay anything (``_realtime`` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_MESSAGE", "SessionLimits"]


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
