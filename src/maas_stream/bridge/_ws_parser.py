"""Letting a websocket connection's handshake go once it is over: the one rule, for both sides of a session.

``websockets``' sans-I/O protocols parse with one generator for the whole connection:
``ServerProtocol.parse`` reads the handshake's request (``ClientProtocol.parse`` its response),
then goes on as ``Protocol.parse`` (frames) inside the same generator, whose frame keeps the
request or response (its headers: ~2.5 KiB on the bridge's client side, ~1.6 KiB upstream) as
long as the connection lives. :func:`drop_handshake` restarts the frame parser on its own when
that is exact: the connection is open and the parser waits *between* two frames (its innermost
step is ``StreamReader.at_eof``, which waits only while nothing is buffered). Mid-frame (a
frame's header already consumed, its rest not yet come) it does nothing and says so: the caller
tries again after the next read.

Relied on in ``websockets`` (pinned by ``tests/bridge/test_ws_parser.py``): a protocol's
``parser`` generator, ``Protocol.parse`` and ``StreamReader.at_eof``; the generator chain is read
with Python's own ``gi_yieldfrom``. It must not contain protocol logic.
"""

from __future__ import annotations

from types import GeneratorType
from typing import TYPE_CHECKING, Final

from websockets.protocol import OPEN, Protocol
from websockets.streams import StreamReader

if TYPE_CHECKING:
    from types import CodeType

__all__ = ["drop_handshake"]

_FRAMES: Final = Protocol.parse.__code__
_WAITING: Final = StreamReader.at_eof.__code__


def drop_handshake(proto: Protocol) -> bool:
    """Restart ``proto``'s frame parser without its handshake; ``True`` once nothing of the handshake is held.

    ``False`` (try again after the next read) while the connection is not open, or the parser is
    in the middle of a frame or past the frames (``websockets``' ``discard()`` after a close).
    """
    if proto.state is not OPEN or proto.parser_exc is not None:
        return False
    chain: list[CodeType] = []
    step: object = proto.parser
    while isinstance(step, GeneratorType):
        chain.append(step.gi_code)
        step = step.gi_yieldfrom
    if len(chain) < 2 or chain[-1] is not _WAITING or chain[-2] is not _FRAMES:
        return False
    if len(chain) > 2:  # the handshake's generator around the frames: start them afresh
        proto.parser = Protocol.parse(proto)
        next(proto.parser)  # to the wait between frames (nothing is buffered)
    return True
