"""What both sides of a realtime session share on ``websockets``' sans-I/O protocols: a message's frames put together, and the handshake let go.

:class:`FramedConnection` is the base of both asyncio protocols (the client's, ``_ws_lean``; the
upstream's, ``_ws_client``): write flow control (``_aiosock.WriteFlow``) and a message's text,
binary and continuation frames put together (the sans-I/O protocol checks their sequence, their
size and a text's UTF-8), and the wait for the next message (one shared future: ``arrival``;
``arrived`` for a reader that may not be the only one); each side says what a whole message
(``_message``) and a control frame (``_control``) are to it.

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

import asyncio
from types import GeneratorType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from websockets.frames import Frame, Opcode
from websockets.protocol import OPEN, Protocol
from websockets.streams import StreamReader

from ._aiosock import WriteFlow

if TYPE_CHECKING:
    from types import CodeType

__all__ = ["Data", "FramedConnection", "drop_handshake", "unlabelled"]

Data = bytes | bytearray | memoryview
"""A frame's payload, as ``websockets`` types it."""
OP_TEXT, OP_BINARY, OP_CONT = Opcode.TEXT, Opcode.BINARY, Opcode.CONT

_P = TypeVar("_P", bound=Protocol)
_FRAMES: Final = Protocol.parse.__code__
_WAITING: Final = StreamReader.at_eof.__code__


def unlabelled(proto: _P) -> _P:
    """``proto`` without its ``id`` (~100 B a side, held for the connection's life).

    ``websockets`` makes a ``uuid4`` for each protocol, for its own connection classes' logs;
    the sans-I/O protocol never reads it.
    """
    proto.__dict__.pop("id", None)
    return proto


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


class FramedConnection(WriteFlow):
    """A websocket connection's asyncio protocol: write flow control, messages put together from their frames, and the reader's wait for them."""

    __slots__ = ("_messages", "_parts", "_text", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._parts: list[Data] | None = None  # a fragmented message's frames so far
        self._text = False  # ... a text message
        self._messages: list[Any] = []  # what the reader has not taken yet
        self._waiter: asyncio.Future[None] | None = None  # done at the next message (or the end)

    def arrival(self) -> asyncio.Future[None]:
        """A future done at the next message or the connection's end (every waiting task is woken; then take)."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = self._loop.create_future()
        return waiter

    async def arrived(self) -> None:
        """Wait for :meth:`arrival` as one of several readers.

        The readers share one future, and a reader's cancellation cancels it: another reader
        then waits again rather than taking a cancellation that was not its own.
        """
        while True:
            try:
                await self.arrival()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise
            else:
                return

    def _wake(self) -> None:
        """Wake the reader: a message was queued, or the connection ended."""
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _frame(self, frame: Frame) -> None:
        """One frame the sans-I/O protocol parsed: a whole message to :meth:`_message`, a control frame to :meth:`_control`.

        A text message is decoded here: the sans-I/O protocol does not check a text frame's UTF-8
        (only a close frame's reason), so invalid text goes to :meth:`_invalid_text` instead.
        """
        opcode = frame.opcode
        if opcode is OP_TEXT or opcode is OP_BINARY:
            data, text = frame.data, opcode is OP_TEXT
            if not frame.fin:
                self._parts, self._text = [data], text
                return
        elif opcode is OP_CONT:
            parts = self._parts
            assert parts is not None  # the sans-I/O protocol checks the sequence
            parts.append(frame.data)
            if not frame.fin:
                return
            self._parts = None
            data, text = b"".join(parts), self._text
        else:
            self._control(frame)
            return
        if not text:
            self._message(data if type(data) is bytes else bytes(data), len(data))
            return
        try:
            message = str(data, "utf-8")
        except UnicodeDecodeError:
            self._invalid_text()
            return
        self._message(message, len(data))

    def _message(self, message: str | bytes, size: int) -> None:
        """A whole message: text as ``str``, binary as ``bytes``; ``size``: its bytes on the wire."""
        raise NotImplementedError

    def _invalid_text(self) -> None:
        """A text message that is not UTF-8: the connection fails with 1007 (RFC 6455, 8.1)."""
        raise NotImplementedError

    def _control(self, frame: Frame) -> None:
        """A ping, pong or close frame (the sans-I/O protocol has queued a ping's pong and a close's echo)."""
        raise NotImplementedError
