"""The JSON-lines framing shared by the websocket protocols (Realtime, Live) as recorded.

A recording holds one ``{"dir": "client" | "server", "msg": {...}}`` line per websocket
message; a live connection feeds messages with ``feed_message``. This module owns the line
framing (completed lines, the held partial line and its size bound), the state rules of
``feed``/``feed_message``/``finish`` for these decoders, their side of the direct fold
(:meth:`JSONLinesStreamDecoder.feed_into`: a line is folded directly or goes :meth:`~JSONLinesStreamDecoder.normal`),
and the message wrapper a typed one-pass decoder hands on. The SSE twin and what every decoder
shares (``DirectFold``) are in ``_base``.

It must not do IO, and must not apply the aggregator's rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

import msgspec

from .._exceptions import LocalProtocolError, RemoteProtocolError
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ._base import _DECODE_FAULTS, _State, flush_warnings
from ._direct import DirectFold, FoldTarget

if TYPE_CHECKING:
    from ..events import Event

__all__ = ["JSONLinesStreamDecoder", "Msg", "WrappedLine", "client_message", "raw_message"]


class WrappedLine:
    """A whole recorded ``{"dir", "msg"}`` line standing for its message.

    JSON-lines decoders decode a server line typed in one pass, envelope included; they pass
    this on so that a message kept whole (an unknown or session frame) is decoded untyped only
    when it is actually kept (:func:`raw_message`).
    """

    __slots__ = ("line",)

    def __init__(self, line: bytes) -> None:
        self.line = line


Msg: TypeAlias = "bytes | str | WrappedLine"
"""A websocket message: its JSON text, or the recorded line that wraps it."""


def raw_message(msg: Msg) -> Any:
    """The message as plain JSON values."""
    if isinstance(msg, WrappedLine):
        return msgspec.json.decode(msg.line)["msg"]
    return msgspec.json.decode(msg)


class _WSFrame(msgspec.Struct):
    dir: str
    msg: msgspec.Raw


_ws_frame = msgspec.json.Decoder(_WSFrame)

_NEWLINE: Final = ord("\n")
"""A newline as the byte value ``in`` looks for: ``b"\\n" in data`` first tries its argument as a
number and clears the error that raises, ~10x the cost of the search (once per chunk)."""


def client_message(line: bytes) -> Any:
    """A recorded client line's message as plain JSON values, read as the base path reads it.

    ``None`` for a line that is no client line, or whose frame or message is no JSON (the base
    path says what it is). For a direct fold that takes a client line without events.
    """
    try:
        frame = _ws_frame.decode(line)
        return msgspec.json.decode(frame.msg) if frame.dir == "client" else None
    except _DECODE_FAULTS:
        return None


class JSONLinesStreamDecoder(DirectFold):
    """Base for websocket protocols recorded as JSON lines ``{"dir": ..., "msg": {...}}``.

    Subclasses implement :meth:`on_message` for one message (client or server direction).
    Live connections feed messages directly with :meth:`feed_message`. A ``direct`` one
    overrides :meth:`fold_lines` (``DirectFold``).
    """

    protocol: ClassVar[str] = ""

    def __init__(self, *, max_line_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        super().__init__()
        self._max = max_line_size
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._frames = 0
        self._truncated = False
        self._state = _State.OPEN
        self.warnings: list[str] = []
        """Findings that did not stop decoding; they end up in ``Response.warnings``."""

    @property
    def frames(self) -> int:
        """How many messages were decoded so far."""
        return self._frames

    @property
    def truncated(self) -> bool:
        """True after :meth:`finish` when the bytes ended inside a line, which was dropped."""
        return self._truncated

    def feed(self, data: bytes) -> list[Event]:
        """Decode a chunk of JSON-lines bytes; return the events it completed.

        Raises:
            RemoteProtocolError: A line is not a valid frame (the error names its number).
            LocalProtocolError: Called after :meth:`finish` or an error.
        """
        out: list[Event] = []
        lines = self._whole_lines(data)
        if lines:
            self._lines(lines, out)
        return out

    def feed_into(self, data: bytes, target: FoldTarget) -> None:
        """Decode a chunk and fold it into ``target`` (the direct fold, ``_base``).

        The result is ``target.consume(self.feed(data))``'s. A bad line raises as in :meth:`feed`,
        but ``exc.events`` holds only what was not folded yet (:meth:`normal`); the target's errors
        propagate.

        Raises:
            RemoteProtocolError: A line is not a valid frame.
            LocalProtocolError: Called after :meth:`finish` or an error.
        """
        lines = self._whole_lines(data)
        if not lines:
            return
        self._fold_begin(target)
        try:
            self.fold_lines(lines)
        except BaseException:
            self._fold_end(True)
            raise
        self._fold_end(False)

    def feed_message_into(self, msg: bytes | str, direction: str, target: FoldTarget) -> None:
        """Decode one websocket message and fold it into ``target`` (the direct fold, ``_base``).

        The result is ``target.consume(self.feed_message(msg, direction=direction))``'s, and so
        are the errors (a bad message's own events are never applied); a message the protocol
        folds (:meth:`fold_one`) makes no events, and one it decoded but did not fold goes
        :meth:`feed_message` without being decoded again (``decoded``). The part the last delta went to stays the one
        ``fold_delta`` tries first (``_hot``: a run of deltas to one part skips looking it up, as
        across chunks, ``DirectFold``) until a normal message, an error or :meth:`forget_folded`
        (the target changed on its own) forgets it; nothing else is kept between messages.
        """
        self._fold_begin(target)
        try:
            folded = self.fold_one(msg, direction)
            if folded is not True:
                self._forget(self.feed_message(msg, direction=direction, decoded=folded or None))
        except BaseException:
            self._fold_end(True)
            raise
        self._fold_end(False)

    def fold_one(self, msg: bytes | str, direction: str) -> Any:
        """Fold one whole message directly if it is a common one, counting it: ``True``.

        :meth:`fold_lines` for one message (all or nothing); only while the decoder is open.
        Any other answer: the message goes :meth:`feed_message`, which hands it to
        :meth:`on_message` with what this decoded of it (a JSON object or a typed message, as
        ``on_message`` reads it, never ``True``; ``None`` or ``False``: nothing). By default none
        is folded.
        """
        return None

    def fold_lines(self, lines: list[bytes]) -> None:
        """Fold one chunk's whole lines in order; by default they all go :meth:`normal`.

        A ``direct`` protocol hands each common line's delta to ``fold_delta`` (counting it in
        ``_frames``) and hands the other lines to :meth:`normal`, consecutive ones together;
        all or nothing per line.
        """
        self.normal(lines)

    def normal(self, lines: list[bytes]) -> None:
        """Fold consecutive whole lines as events; forget the buffers handed out (``DirectFold._forget``).

        A bad line raises as in :meth:`feed`: ``exc.events`` holds the events of the lines before
        it in ``lines`` (not applied yet; the aggregator applies them before its partial result).
        """
        events: list[Event] = []
        self._lines(lines, events)
        self._forget(events)

    def _whole_lines(self, data: bytes) -> list[bytes]:
        """Check the state, then the chunk's completed lines (the rest is held, its size bounded)."""
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"decoder fed in state {self._state.value}", protocol=self.protocol, state=self._state.value
            )
        if _NEWLINE not in data:
            self._pending.append(data)
            self._pending_size += len(data)
            if self._pending_size > self._max:
                self._state = _State.ERROR
                raise RemoteProtocolError(
                    f"a JSON line grew past {self._max} bytes", protocol=self.protocol, frame=self._frames + 1
                )
            return []
        lines = data.split(b"\n")
        pending = self._pending
        if pending:
            # The held start of the first line joins it alone (the chunk is not copied again).
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            self._pending = []
            self._pending_size = 0
        rest = lines.pop()
        if rest:
            self._pending = [rest]
            self._pending_size = len(rest)
        return lines

    def _lines(self, lines: list[bytes], out: list[Event]) -> None:
        """Append the events of whole lines to ``out``; a bad line raises with those before it."""
        for line in lines:
            if line.strip():
                try:
                    out += self._line(line)
                except RemoteProtocolError as exc:
                    exc.events = out  # what the lines before the bad one decoded to: not lost
                    raise
                except _DECODE_FAULTS as exc:
                    # A subclass that decodes whole lines itself (typed, in one pass).
                    self._state = _State.ERROR
                    err = RemoteProtocolError(
                        f"invalid JSON-lines frame: {exc}",
                        protocol=self.protocol,
                        frame=self._frames + 1,
                        raw=line[:500].decode("utf-8", "replace"),
                    )
                    err.events = out
                    raise err from exc

    def _line(self, line: bytes) -> list[Event]:
        try:
            frame = _ws_frame.decode(line)
        except _DECODE_FAULTS as exc:
            self._state = _State.ERROR
            raise RemoteProtocolError(
                f"invalid JSON-lines frame: {exc}",
                protocol=self.protocol,
                frame=self._frames + 1,
                raw=line[:500].decode("utf-8", "replace"),
            ) from exc
        return self.feed_message(frame.msg, direction=frame.dir)

    def feed_message(
        self, msg: bytes | str | msgspec.Raw, *, direction: str = "server", decoded: Any = None
    ) -> list[Event]:
        """Decode one websocket message (its JSON text) travelling in ``direction``.

        ``decoded``: what :meth:`fold_one` decoded of it already (handed to :meth:`on_message`).

        Raises:
            RemoteProtocolError: The message is not valid for this protocol.
            LocalProtocolError: Called after :meth:`finish` or an error (as :meth:`feed`).
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"decoder fed in state {self._state.value}", protocol=self.protocol, state=self._state.value
            )
        self._frames += 1
        try:
            if decoded is None:  # (as a subclass without a fold_one of its own is called)
                out = self.on_message(bytes(msg) if isinstance(msg, msgspec.Raw) else msg, direction)
            else:
                out = self.on_message(msg, direction, decoded)
            if self.warnings:
                out += flush_warnings(self.warnings)
            return out
        except RemoteProtocolError as exc:
            self._state = _State.ERROR
            exc.protocol = exc.protocol or self.protocol
            exc.frame = exc.frame or self._frames
            raise
        except _DECODE_FAULTS as exc:
            self._state = _State.ERROR
            raw = bytes(msg) if isinstance(msg, msgspec.Raw) else msg
            raise RemoteProtocolError(
                f"invalid {self.protocol} message: {exc}",
                protocol=self.protocol,
                frame=self._frames,
                raw=raw[:500] if isinstance(raw, str) else raw[:500].decode("utf-8", "replace"),
            ) from exc

    def finish(self) -> list[Event]:
        """Signal end of input; return any last events.

        Raises:
            LocalProtocolError: Called twice or after an error.
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"decoder finished in state {self._state.value}",
                protocol=self.protocol,
                state=self._state.value,
            )
        out: list[Event] = []
        if self._pending and b"".join(self._pending).strip():
            # A last line without a newline may still be a whole JSON document: try it. One
            # that is not is a recording cut mid-line: dropped with a warning, as SSE does.
            line = b"".join(self._pending)
            self._pending = []
            try:
                msgspec.json.decode(line)
            except _DECODE_FAULTS:
                self._truncated = True
                self.warnings.append("the stream ended inside a line; that partial line was dropped")
            else:
                out = self._line(line)
        self._state = _State.CLOSED
        out += self.on_finish()
        return out + flush_warnings(self.warnings)

    def on_message(self, msg: bytes | str, direction: str, decoded: Any = None) -> list[Event]:
        """Turn one message into stream events (subclasses implement this).

        ``decoded``: what the subclass's own :meth:`fold_one` decoded of the message already
        (``feed_message``'s); it is passed only when there is one, so a subclass whose
        ``fold_one`` decodes nothing may leave the parameter out.
        """
        raise NotImplementedError

    def on_finish(self) -> list[Event]:
        """Events to emit at end of input (none by default)."""
        return []
