"""The replay rule for continuation state, in one place for every protocol.

Signatures (Anthropic ``signature``, Gemini ``thoughtSignature``, Interactions step
signatures), redacted thinking and encrypted reasoning (Responses ``encrypted_content``) are
opaque tokens a provider made for itself: they are replayed unchanged to the protocol that made
them and to no other (elsewhere they are dropped and reported, never turned into text). Every
encoder (stream, body, history) asks :func:`replayable`; none decides on its own.

The origin of a piece of state is the protocol name of the stream it was decoded from
(``Response.protocol``, an encoder's source) or of the history codec that read it
(``Message.provider``).

It must not do IO.
"""

from __future__ import annotations

__all__ = ["replayable"]


def replayable(origin: str | None, target: str) -> bool:
    """Whether continuation state made by ``origin`` may be sent back to ``target``.

    Args:
        origin: The protocol the state came from (``None`` when unknown: never replayed, since
            a token of unknown origin is as good as a foreign one).
        target: The protocol being written.
    """
    return origin is not None and origin == target
