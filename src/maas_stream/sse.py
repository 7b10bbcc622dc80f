"""Server-Sent Events framing (WHATWG "event stream interpretation"), sans-IO, bounded.

:class:`Decoder` turns bytes, in chunks of any size, into :class:`ServerSentEvent` objects;
:class:`Encoder` does the reverse. Both are synchronous and know nothing about JSON or any
provider: protocol decoders parse ``event.data`` themselves.

Decoding follows the standard (PROTOCOLS.md §7.1) exactly: CRLF, LF and lone CR line endings,
also mixed and also with CR and LF in different chunks; one leading BOM stripped; comments
ignored; ``data`` lines joined with LF; ``id`` (kept across events, ignored when it holds NUL)
and ``retry`` (digits only); an event without data is not dispatched; an event with no blank
line after it when the stream ends is discarded (and :attr:`Decoder.truncated` says so).

It must not parse JSON, know a provider, or do IO.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from itertools import repeat
from typing import Final, cast, final, overload

import msgspec

from ._exceptions import EventTooLargeError, LocalProtocolError

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "Decoder", "Encoder", "ServerSentEvent"]

DEFAULT_MAX_EVENT_SIZE: Final = 16 * 1024 * 1024
"""Default cap, in bytes, on one event (its data plus any incomplete line being buffered)."""

_BOM: Final = b"\xef\xbb\xbf"

_BOM_PENDING: Final = 1
"""A :attr:`Decoder._settle` flag: a BOM may start the stream (nothing decided yet)."""
_PENDING_CR: Final = 2
"""A :attr:`Decoder._settle` flag: the last chunk ended with a CR (an LF may follow it)."""

_NO_LINES: Final = cast("list[bytes]", ())
"""No pending line or data lines: shared by idle decoders (two empty lists are 112 bytes a
stream). A tuple, so an ``append`` to it fails at once; every writer makes its own list."""


@final
class ServerSentEvent(msgspec.Struct, frozen=True):
    """One dispatched event."""

    event: str = "message"
    """The event type: the ``event`` field, or ``"message"`` when none was given."""
    data: str = ""
    """The data lines joined with LF (no trailing LF)."""
    id: str = ""
    """The last event id seen so far in the stream (it persists across events)."""
    retry: int | None = None
    """The reconnection time in ms, if this event set one."""


class _Types(Sequence[str]):
    """The event types of :meth:`Decoder.feed_payloads`' events, from their ``event:`` lines, decoded when read."""

    __slots__ = ("_lines",)

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [line[7:].decode("utf-8", "replace") or "message" for line in self._lines[index]]
        return self._lines[index][7:].decode("utf-8", "replace") or "message"


class _State(enum.Enum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"
    ERROR = "ERROR"


class Decoder:
    """Incremental, bounded SSE decoder.

    Usage::

        decoder = Decoder()
        for chunk in chunks:
            for event in decoder.feed(chunk):
                ...
        decoder.finish()

    Args:
        max_event_size: Largest event (data plus pending line) in bytes before
            :class:`~maas_stream.EventTooLargeError` is raised.
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_event",
        "_last_id",
        "_max",
        "_pending",
        "_pending_size",
        "_retry",
        "_settle",
        "_state",
        "events",
        "truncated",
    )

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self._max = max_event_size
        self._pending = _NO_LINES
        self._pending_size = 0
        self._settle = _BOM_PENDING
        """What the next chunk settles first (flags): a BOM that may start the stream, a CR
        that ended the last chunk (an LF may follow it)."""
        self._event = ""
        self._data = _NO_LINES
        self._data_size = 0
        self._last_id = ""
        self._retry: int | None = None
        self._state = _State.OPEN
        self.events = 0
        """How many events were dispatched so far."""
        self.truncated = False
        """True after :meth:`finish` if the stream ended inside an event, which was discarded."""

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode a chunk of bytes; return the events it completed.

        Raises:
            EventTooLargeError: An event or line grew past ``max_event_size``.
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        return [
            ServerSentEvent(event, data.decode("utf-8", "replace"), id, retry)
            for event, data, id, retry in self.feed_raw(chunk)
        ]

    def feed_raw(self, chunk: bytes) -> list[tuple[str, bytes, str, int | None]]:
        """Like :meth:`feed`, but each event is a tuple ``(event, data, id, retry)``.

        The data is still UTF-8 bytes (not yet checked): the fast path for JSON payloads,
        which a JSON decoder reads from bytes directly.

        Raises:
            EventTooLargeError: An event or line grew past ``max_event_size``.
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        chunk = self._prepare(chunk)
        if not chunk:
            return []
        out: list[tuple[str, bytes, str, int | None]] = []
        # Fast path: whole events are blocks ended by a blank line. A block that is one
        # "data: ..." line, or "event: ..." then one "data: ..." line, needs no line-by-line
        # work; anything else (comments, ids, multi-line data, an event begun in an earlier
        # chunk) goes through the general line machine, which is exact.
        blocks = chunk.split(b"\n\n")
        rest = blocks.pop()
        for block in blocks:
            if len(block) > self._max:
                self._fail(f"an SSE event grew past {self._max} bytes")
            if not self._data and not self._event and self._retry is None:
                if block[:6] == b"data: " and 10 not in block:  # (the byte value: memchr, no number attempt)
                    self.events += 1
                    out.append(("message", block[6:], self._last_id, None))
                    continue
                if block[:7] == b"event: ":
                    nl = block.find(b"\n")
                    if nl > 0 and block[nl + 1 : nl + 7] == b"data: " and block.find(b"\n", nl + 1) < 0:
                        self.events += 1
                        out.append(
                            (
                                block[7:nl].decode("utf-8", "replace") or "message",
                                block[nl + 7 :],
                                self._last_id,
                                None,
                            )
                        )
                        continue
            self._lines(block.split(b"\n"), out)
            self._line(b"", out)
        if rest:
            lines = rest.split(b"\n")
            tail = lines.pop()
            if tail:
                self._pending = [tail]
                self._pending_size = len(tail)
            self._lines(lines, out)
        if self._pending_size + self._data_size > self._max:
            self._fail(f"an SSE event grew past {self._max} bytes")
        return out

    def feed_payloads(self, chunk: bytes) -> tuple[list[bytes], Sequence[str]] | None:
        """The fast path of :meth:`feed_raw` for the common shape: payloads and event types, or ``None``.

        When the chunk (with what an earlier one left) is whole events that are each one
        ``data:`` line, or one ``event:`` line and one ``data:`` line, all ended the same way
        (LF or CRLF), with at most the start of a next line after them, it returns the events'
        data and types (``"message"`` when none is given); a type is decoded only when read.
        The checks and the split are done on the whole chunk, in C, not line by line (a fresh
        decoder's first chunk too, when it cannot start with a BOM). Otherwise it returns ``None``
        and changes nothing that :meth:`feed_raw` would read otherwise: pass the chunk to it.
        What it keeps for the next chunk (LF line endings, no CR) is what :meth:`feed_raw` reads
        as a pending line: the start of a line, or, on LF streams, a whole ``event:`` line and
        the start of the next (``finish`` then finds the stream cut inside an event either way).

        Raises:
            LocalProtocolError: Called after :meth:`finish` or after an error.
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(f"SSE decoder fed in state {self._state.value}", state=self._state.value)
        if (
            self._data
            or self._retry is not None
            or self._settle & _PENDING_CR
            or 10 not in chunk  # an int: memchr (a one-byte bytes needle is searched far slower)
        ):
            return None  # inside an event, a rare case to settle first, or nothing ends here
        lone = self._lone_event(chunk)  # a slow network's chunk: one event, one data line
        if lone is not None:
            return lone
        if self._settle:
            # A fresh decoder: the first chunk takes the whole-chunk split too, unless it may
            # start with a BOM (what is pending then is the start of one).
            if self._pending or chunk[0] == 0xEF:
                return None
            self._settle = 0  # as feed_raw would settle it: no BOM here
        data = b"".join(self._pending) + chunk if self._pending else chunk
        if self._event:
            # feed_raw stopped after an event's "event:" line: read from that line again.
            data = b"event: " + self._event.encode() + b"\n" + data
        if 13 in data:
            nl, crlf = b"\r\n", True
        else:
            nl, crlf = b"\n", False
        sep = nl + nl
        end = data.rfind(sep)
        if end < 0:
            return None
        rest = data[end + len(sep) :]
        if end > self._max or len(rest) > self._max:
            return None  # sizes to check: the line machine's
        if 10 in rest or 13 in rest:
            # The next event's "event:" line may have ended already: kept as it is (it sets nothing
            # until its event ends), when what follows it is the start of a line.
            nl_at = rest.find(b"\n")
            if crlf or rest[:7] != b"event: " or rest.find(b"\n", nl_at + 1) >= 0 or rest[-1] == 0x0A:
                return None  # a line ended after the last event, or lone CRs: the line machine's
        split = _split_events(data[:end], nl, crlf)
        if split is None:
            return None
        self._event = ""
        if rest:
            self._pending = [rest]
            self._pending_size = len(rest)
        elif self._pending:
            self._pending = _NO_LINES
            self._pending_size = 0
        self.events += len(split[0])
        return split

    def _lone_event(self, chunk: bytes) -> tuple[list[bytes], Sequence[str]] | None:
        """:meth:`feed_payloads` of a chunk that is one whole event, alone (a slow network's chunk).

        ``None`` unless nothing is pending before it and the chunk is one ``data:`` line ended by
        LF LF or CRLF CRLF (its first line break is its last line's), or one ``event:`` line and
        one ``data:`` line ended by LF.
        """
        if self._pending or self._settle or self._event:
            return None
        end = len(chunk) - 2
        first = chunk.find(b"\n")
        names: Sequence[str]
        if chunk[:6] == b"data: ":
            if first != end or 13 in chunk or chunk[-1] != 10:
                end -= 2
                if first != end + 1 or chunk.find(b"\r") != end or chunk[end:] != b"\r\n\r\n":
                    return None
            start, names = 6, ["message"]
        elif (
            chunk[:7] == b"event: "
            and chunk[first + 1 : first + 7] == b"data: "
            and chunk.find(b"\n", first + 1) == end
            and chunk[-1] == 10
            and 13 not in chunk
        ):
            start, names = first + 7, [chunk[7:first].decode("utf-8", "replace") or "message"]
        else:
            return None
        if end > self._max:
            return None  # the size to check: the line machine's
        self.events += 1
        return [chunk[start:end]], names

    def _prepare(self, chunk: bytes) -> bytes:
        """Check the state, normalize line endings, and join what an earlier chunk left.

        Returns the bytes to split, or ``b""`` when they hold no line ending yet.
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(f"SSE decoder fed in state {self._state.value}", state=self._state.value)
        if not chunk:
            return b""
        if self._settle or 13 in chunk:
            chunk = self._normalize(chunk)
            if not chunk:
                return b""
        if 10 not in chunk:
            if self._pending:
                self._pending.append(chunk)
            else:
                self._pending = [chunk]
            self._pending_size += len(chunk)
            if self._pending_size + self._data_size > self._max:
                self._fail(f"an SSE line grew past {self._max} bytes without ending")
            return b""
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending = _NO_LINES
            self._pending_size = 0
        return chunk

    def _lines(self, lines: list[bytes], out: list[tuple[str, bytes, str, int | None]]) -> None:
        for line in lines:
            self._line(line, out)

    def _line(self, line: bytes, out: list[tuple[str, bytes, str, int | None]]) -> None:
        if not line:
            if self._data:
                out.append(self._dispatch())
            else:
                self._event = ""
                self._retry = None
        elif line.startswith(b"data:"):
            value = line[6:] if line[5:6] == b" " else line[5:]
            if self._data:
                self._data.append(value)
            else:
                self._data = [value]
            self._data_size += len(value) + 1
            if self._data_size > self._max:
                self._fail(f"an SSE event's data grew past {self._max} bytes")
        elif line[0] != 0x3A:  # ':' starts a comment
            self._field(line)

    def _normalize(self, chunk: bytes) -> bytes:
        """Handle the rare cases: a CR that ended the last chunk, the BOM, CR and CRLF endings."""
        if self._settle & _PENDING_CR:
            self._settle &= _BOM_PENDING
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
                if not chunk:
                    return b""
        if self._settle & _BOM_PENDING:
            head = b"".join(self._pending) + chunk if self._pending else chunk
            if len(head) < 3 and _BOM.startswith(head):
                self._pending = [head]
                self._pending_size = len(head)
                return b""
            self._settle &= _PENDING_CR
            self._pending = _NO_LINES
            self._pending_size = 0
            chunk = head[3:] if head.startswith(_BOM) else head
        if 13 in chunk:
            if chunk[-1] == 0x0D:
                self._settle |= _PENDING_CR
            chunk = chunk.replace(b"\r\n", b"\n")
            if 13 in chunk:  # a lone CR (an int: memchr, where a second replace scans it all)
                chunk = chunk.replace(b"\r", b"\n")
        return chunk

    def finish(self) -> list[ServerSentEvent]:
        """Signal the end of the stream.

        An event that was not ended by a blank line is discarded, as the standard says;
        :attr:`truncated` tells whether that happened. Always returns an empty list; the
        return value keeps the ``feed``/``finish`` convention of every machine here.

        Raises:
            LocalProtocolError: Called twice, or after an error.
        """
        if self._state is not _State.OPEN:
            raise LocalProtocolError(
                f"SSE decoder finished in state {self._state.value}", state=self._state.value
            )
        self._state = _State.CLOSED
        self.truncated = bool(self._data) or (any(self._pending) and not self._bom_only())
        self._pending = _NO_LINES
        self._data = _NO_LINES
        return []

    def _bom_only(self) -> bool:
        return bool(self._settle & _BOM_PENDING) and _BOM.startswith(b"".join(self._pending))

    def _field(self, line: bytes) -> None:
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"data":  # "data" without a colon: an empty data line
            if self._data:
                self._data.append(value)
            else:
                self._data = [value]
            self._data_size += len(value) + 1
        elif name == b"id":
            if b"\x00" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value and value.isdigit() and value.isascii():
                self._retry = int(value)

    def _dispatch(self) -> tuple[str, bytes, str, int | None]:
        data = self._data
        raw = data[0] if len(data) == 1 else b"\n".join(data)
        self._data = _NO_LINES
        self._data_size = 0
        event = self._event or "message"
        self._event = ""
        retry = self._retry
        self._retry = None
        self.events += 1
        return (event, raw, self._last_id, retry)

    def _fail(self, message: str) -> None:
        self._state = _State.ERROR
        raise EventTooLargeError(message, frame=self.events + 1, state="OPEN")


def _split_events(body: bytes, nl: bytes, crlf: bool) -> tuple[list[bytes], Sequence[str]] | None:
    """Whole events (the last one's blank line cut off) as :meth:`Decoder.feed_payloads` returns them.

    ``None`` when an event is not one ``data:`` line, or one ``event:`` and one ``data:`` line,
    or the lines do not all end with ``nl``.
    """
    if body[:6] == b"data: ":
        payloads = body.split(nl + nl + b"data: ")
        payloads[0] = payloads[0][6:]
        if _breaks(payloads, crlf):
            return None  # some event has more than one line, or line endings are mixed
        return payloads, ["message"] * len(payloads)
    if body[:7] != b"event: ":
        return None
    split = body.split(nl)
    if len(split) % 3 != 2 or (crlf and _breaks(split, crlf)):
        return None
    types, blanks = split[0::3], split[2::3]
    payloads = [line[6:] for line in split[1::3] if line[:6] == b"data: "]
    if (
        len(payloads) != len(types)
        or blanks.count(b"") != len(blanks)
        or not all(map(bytes.startswith, types, repeat(b"event: ")))
    ):
        return None
    return payloads, _Types(types)


def _breaks(pieces: list[bytes], crlf: bool) -> bool:
    """Whether a line break (LF, or CR too when ``crlf``) is left in the pieces.

    Joined, then looked for with ``int in bytes`` (memchr): several times faster than
    ``bytes.count`` or a search per piece.
    """
    joined = b"".join(pieces)
    return 10 in joined or (crlf and 13 in joined)


class Encoder:
    """SSE encoder: one call, one event, as bytes ready for the wire.

    Lines end with LF. ``data`` containing line breaks is split over several ``data:`` lines,
    which a decoder joins back with LF.
    """

    __slots__ = ()

    def encode(
        self,
        data: str,
        *,
        event: str | None = None,
        id: str | None = None,
        retry: int | None = None,
    ) -> bytes:
        """Encode one event.

        Raises:
            LocalProtocolError: ``event`` or ``id`` contains a line break (or ``id`` a NUL).
        """
        parts: list[str] = []
        if event is not None:
            if "\n" in event or "\r" in event:
                raise LocalProtocolError("an SSE event type cannot contain a line break")
            parts.append(f"event: {event}\n")
        if id is not None:
            if "\n" in id or "\r" in id or "\x00" in id:
                raise LocalProtocolError("an SSE id cannot contain a line break or NUL")
            parts.append(f"id: {id}\n")
        if retry is not None:
            parts.append(f"retry: {int(retry)}\n")
        if "\n" in data or "\r" in data:
            lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            parts.extend(f"data: {line}\n" for line in lines)
        else:
            parts.append(f"data: {data}\n")
        parts.append("\n")
        return "".join(parts).encode()

    def encode_bytes(self, data: bytes, *, event: str | None = None) -> bytes:
        """Encode one event whose data is already UTF-8 bytes on a single line (a JSON payload)."""
        if event is None:
            return b"data: " + data + b"\n\n"
        return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"

    def comment(self, text: str = "") -> bytes:
        """Encode a comment line (a keep-alive)."""
        return f": {text}\n\n".encode() if text else b":\n\n"
