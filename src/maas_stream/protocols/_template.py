"""Pre-encoded frames: a JSON body encoded once, with holes the hot paths fill per event.

An encoder writes the same frame many times with only a delta (and maybe a sequence number)
changing: a Chat ``content`` chunk, a Responses ``output_text.delta``, a Realtime
``output_audio.delta``. :func:`template` encodes such a frame once, exactly as the encoder's own
``msgspec.json.encode`` of the whole body would (key order and all), with a marker in place of
each changing value, and cuts it at the markers. Filling it is one ``bytes.join`` of the constant
fragments and the encoded values: no dict built, no body re-encoded per event, and the bytes are
those of the per-event path by construction.

It must not know any protocol's frames (the encoders build the bodies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HOLE", "shared_template", "template"]

HOLE: Final = tuple(f"\x00maas-hole-{i}\x00" for i in range(4))
"""The markers a body holds where a value goes in (``HOLE[0]`` first, then ``HOLE[1]``...).

A NUL never reaches an encoded JSON string unescaped, so a marker's encoding cannot be part of
any other value of the body.
"""

_json: Final = msgspec.json.Encoder()
_MARKS: Final = tuple(_json.encode(marker) for marker in HOLE)
"""The markers as they are encoded (with their quotes: a value takes the whole place)."""
_PREFIX: Final = _MARKS[0][: _MARKS[0].index(b"-0")]
"""What every encoded marker starts with."""


def template(frame: Callable[[Any], bytes], body: Any, holes: int) -> tuple[bytes, ...]:
    """The frame of ``body`` cut at its ``holes`` markers: ``holes + 1`` constant fragments.

    ``frame`` writes the whole frame of a body (an SSE ``data:`` line around the encoded body); the
    body holds ``HOLE[0]`` to ``HOLE[holes - 1]``, each once, in that order of the encoded text.
    The frame of the body with encoded values ``v0, v1...`` in place of the markers is then
    ``b"".join((f0, v0, f1, v1, ...))`` for the returned ``(f0, f1, ...)``.

    Raises:
        ValueError: A marker is missing, repeated or out of order in the frame.
    """
    text = frame(body)
    fragments: list[bytes] = []
    start = 0
    for mark in _MARKS[:holes]:
        at = text.find(mark, start)
        if at < 0:
            break
        fragments.append(text[start:at])
        start = at + len(mark)
    if len(fragments) < holes or text.count(_PREFIX) != holes:
        # Each found after the one before, and no other: each is there once, in order.
        raise ValueError(f"the template body must hold each of {HOLE[:holes]!r} exactly once, in order")
    fragments.append(text[start:])
    return tuple(fragments)


SHARED_MAX: Final = 1024
"""How many templates :func:`shared_template` keeps (then it makes the others each time)."""

_SHARED: Final[dict[tuple[str, str, int], tuple[bytes, ...]]] = {}


def shared_template(kind: str, frame: Callable[[Any], bytes], body: Any, holes: int) -> tuple[bytes, ...]:
    """:func:`template` of ``body``, made once for every stream that writes the same frame.

    Streams write the same delta frames over and over (a synthesized item id is its output
    index, so the first text part of every converted stream has one frame), and a stream keeps
    the template of its open part: sharing one saves each idle stream its own copy and each part
    its making. ``kind`` names what ``frame`` writes, uniquely in the library (its protocol, framing
    and event type: one kind, one frame function); the body's
    ``repr`` tells the bodies apart (equal for equal JSON values of equal types, key order and
    all). At most :data:`SHARED_MAX` are kept; the templates are immutable.
    """
    key = (kind, repr(body), holes)
    found = _SHARED.get(key)
    if found is None:
        found = template(frame, body, holes)
        if len(_SHARED) < SHARED_MAX:
            _SHARED[key] = found
    return found
