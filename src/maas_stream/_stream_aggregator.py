"""Sans-IO aggregation: bytes of any stream, in chunks of any size, → events → the final response.

:class:`StreamAggregator` detects the source protocol when it is not given
(``_registry.Detector``: each byte scanned once), decodes and aggregates as bytes arrive, and
tells whether anything of the protocol was recognised at all. :func:`aggregate` and
:func:`aggregate_session` wrap it for whole inputs, after checking the input is bytes (a clear
``TypeError`` naming what is accepted otherwise: :func:`chunks_of`). Re-encoding is
``_convert``'s.

It must not do IO.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import msgspec

from ._aggregate import _DISCARD, Aggregator, AggregatorState
from ._exceptions import LocalProtocolError, ProtocolDetectionError, ProtocolError
from ._model import Response, Session, StreamError
from ._registry import Detector, detect_protocol, get_protocol
from .events import StreamErrorEvent, StreamWarning, UnknownEvent

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ._accumulate import PartState
    from ._interfaces import StreamDecoder
    from ._model import Part, Role, Usage
    from .events import Event, Key, ResponseDone, ResponseStart

__all__ = ["StreamAggregator", "aggregate", "aggregate_session", "chunks_of"]

log = logging.getLogger("maas_stream")

_DETECT_LIMIT = 1024 * 1024

_FOLD: Final = 1
"""``StreamAggregator._direct``: the decoder folds directly (only the result counts: no ``emit``)."""
_MESSAGES: Final = 2
"""... the protocol's frames are websocket messages (``feed_message``: JSON-lines framing)."""
_FOLD_MESSAGES: Final = _FOLD | _MESSAGES
"""... both: a message folds directly (``feed_message_into``)."""

_UNRECOGNISED: Final = frozenset({UnknownEvent, StreamWarning})
"""Events that say nothing was understood (an unknown frame; a warning about one)."""


class StreamAggregator:
    """Bytes in, canonical events and a final :class:`~maas_stream.Response` out.

    Usage::

        agg = StreamAggregator("anthropic")
        for chunk in chunks:
            agg.feed(chunk)            # canonical events, if emit=True
            partial = agg.snapshot()   # whenever you like
        response = agg.finish()

    Args:
        protocol: The source protocol; detected from the first frames when ``None``.
        emit: Return canonical events from :meth:`feed` (for a live view or an encoder).
        keep_passthrough: Keep a session's pass-through messages (session messages no
            canonical event models, and client messages) as session events and in
            ``unknown_events``. When false they are counted by type (``unknown``) only, and a
            long session's memory grows with its responses alone (a relay's record).
    """

    __slots__ = (
        "_agg",
        "_decoder",
        "_detector",
        "_direct",
        "_emit",
        "_ended",
        "_failed",
        "_keep",
        "_recognised",
        "protocol",
    )

    def __init__(
        self, protocol: str | None = None, *, emit: bool = False, keep_passthrough: bool = True
    ) -> None:
        self._emit = emit
        self._keep = keep_passthrough
        self._detector = Detector() if protocol is None else None
        self._recognised = False
        self._decoder: StreamDecoder | None = None
        self._agg: Aggregator | None = None
        self._ended = False
        self._failed: Response | None = None
        self._direct = 0
        self.protocol: str | None = None
        """The source protocol (``None`` until detected)."""
        if protocol is not None:
            self._start(protocol)

    def _start(self, protocol: str) -> None:
        spec = get_protocol(protocol)
        self.protocol = protocol
        self._decoder = spec.decoder()
        self._agg = agg = Aggregator(protocol, emit=self._emit)
        if not self._keep:
            agg.forget_passthrough()
        # Only the result counts: the direct fold (docs/architecture.md), SSE and JSON lines alike;
        # what feed_message may do is told here once, not per message.
        mode = _FOLD if not self._emit and getattr(self._decoder, "direct", False) else 0
        if spec.framing == "jsonl":
            mode |= _MESSAGES
            if mode & _FOLD and not hasattr(self._decoder, "feed_message_into"):
                mode = _MESSAGES
        self._direct = mode

    @property
    def aggregator(self) -> Aggregator:
        """The underlying aggregator (for its counters).

        Raises:
            ProtocolDetectionError: The protocol is not known yet.
        """
        if self._agg is None:
            raise ProtocolDetectionError("the protocol has not been detected yet")
        return self._agg

    @property
    def frames(self) -> int:
        """How many frames were decoded so far."""
        return self._decoder.frames if self._decoder is not None else 0

    def feed(self, data: bytes) -> list[Event]:
        """Feed a chunk of bytes; return canonical events if ``emit``, else an empty list.

        Raises:
            RemoteProtocolError: The bytes break the protocol; ``exc.partial`` holds the
                response as it stood before the bad frame.
            ProtocolDetectionError: The protocol was not given and cannot be detected.
        """
        decoder = self._decoder
        if decoder is None:
            detector = self._detector
            assert detector is not None
            name = detector.feed(data)
            if name is None:
                if detector.size <= _DETECT_LIMIT:
                    return []
                name = detector.finish()
            self._detector = None
            self._start(name)
            decoder = self._decoder
            assert decoder is not None
            data = detector.head
        if self._direct & _FOLD:
            # The direct fold (protocols/_direct.py): common deltas go straight into the parts.
            try:
                decoder.feed_into(data, self)  # type: ignore[attr-defined]
            except ProtocolError as exc:
                if exc.partial is None:
                    self._salvage(exc)
                raise
            return []
        try:
            events = decoder.feed(data)
        except ProtocolError as exc:
            self._salvage(exc)
            raise
        return self._aggregate(events)

    def feed_message(self, msg: bytes | str, *, direction: str = "server") -> list[Event]:
        """Feed one whole websocket message (a JSON-lines protocol's frame, not wrapped).

        The websocket twin of :meth:`feed`: a live connection delivers messages, not bytes.

        Raises:
            LocalProtocolError: The protocol is not a websocket (JSON-lines) protocol.
            RemoteProtocolError: The message breaks the protocol (``exc.partial`` is set).
            ProtocolDetectionError: No protocol was given and the first message matches none.
        """
        decoder = self._decoder
        if decoder is None:
            raw = msg.encode() if isinstance(msg, str) else msg
            line = b'{"dir":"' + direction.encode() + b'","msg":' + raw + b"}\n"
            name = detect_protocol(line, final=True)
            assert name is not None
            self._start(name)
            decoder = self._decoder
            assert decoder is not None
        mode = self._direct
        if mode == _FOLD_MESSAGES:
            # The direct fold of one message (protocols/_jsonl.py): common deltas go straight into the parts.
            try:
                decoder.feed_message_into(msg, direction, self)  # type: ignore[attr-defined]
            except ProtocolError as exc:
                if exc.partial is None:
                    self._salvage(exc)
                raise
            return []
        if not mode & _MESSAGES:
            raise LocalProtocolError(
                f"{decoder.protocol} is not a websocket protocol; a websocket source needs a JSON-lines protocol",
                protocol=decoder.protocol,
            )
        try:
            events = decoder.feed_message(msg, direction=direction)  # type: ignore[attr-defined]
        except ProtocolError as exc:
            self._salvage(exc)
            raise
        return self._aggregate(events)

    def consume(self, events: list[Event]) -> None:
        """Apply a frame's events (the direct fold's normal way; ``FoldTarget``).

        :meth:`_aggregate` without ``emit`` (the direct fold's case), inlined: it runs per frame,
        straight into the aggregator's batch loop.
        """
        if not self._recognised and events:
            self._recognised = any(type(e) not in _UNRECOGNISED for e in events)
        agg = self._agg
        assert agg is not None
        try:
            agg._apply(events, _DISCARD)
        except ProtocolError as exc:
            exc.partial = agg.snapshot()
            raise

    @property
    def keeps_passthrough(self) -> bool:
        """Whether pass-through messages are kept, or only counted (``keep_passthrough``; ``FoldTarget``)."""
        return self._keep

    def count_passthrough(self, provider_type: str) -> bool:
        """Count a pass-through message by type without its event (``FoldTarget``; the aggregator's rule)."""
        agg = self._agg
        assert agg is not None
        return agg.count_passthrough(provider_type)

    def part_buffers(self, message: Key, part: Key) -> PartState | None:
        """The part a direct delta may go to (``FoldTarget``; the aggregator decides)."""
        agg = self._agg
        assert agg is not None
        return agg.part_buffers(message, part)

    def open_part(
        self, message: Key, close: Key | None, part: Key, value: Part, done: bool = False
    ) -> PartState | None:
        """Switch parts without events (``FoldTarget``; the aggregator decides)."""
        agg = self._agg
        assert agg is not None
        return agg.open_part(message, close, part, value, done)

    def open_message(
        self, start: ResponseStart | None, message: Key, role: Role, part: Key, value: Part
    ) -> PartState | None:
        """Open a message and its first part without events (``FoldTarget``; the aggregator decides)."""
        agg = self._agg
        assert agg is not None
        return agg.open_message(start, message, role, part, value)

    def end_message(
        self,
        start: ResponseStart | None,
        message: Key,
        role: Role | None,
        parts: Sequence[tuple[Key, Part]],
        usage: Usage | None,
        done: ResponseDone | None,
    ) -> bool:
        """End a message (and its response) without events (``FoldTarget``; the aggregator decides)."""
        agg = self._agg
        assert agg is not None
        return agg.end_message(start, message, role, parts, usage, done)

    @property
    def recognised(self) -> bool:
        """Whether anything of the protocol arrived (a frame other than unknown ones).

        ``False`` after :meth:`finish` means nothing in the input was a stream of
        :attr:`protocol`: an empty input, plain text, or another protocol's frames.
        """
        return self._recognised

    def _aggregate(self, events: list[Event]) -> list[Event]:
        if not self._recognised and events:
            self._recognised = any(type(e) not in _UNRECOGNISED for e in events)
        agg = self._agg
        assert agg is not None
        out: list[Event] = []
        try:
            if len(events) == 1 and agg._state is AggregatorState.STREAMING:
                # One event (a slow network's chunk): Aggregator._apply, inlined
                event = events[0]
                agg._handlers[type(event)](agg, event, out if self._emit else _DISCARD)
            else:
                agg._apply(events, out if self._emit else _DISCARD)  # (feed_all, inlined: per chunk)
        except ProtocolError as exc:
            exc.partial = agg.snapshot()
            raise
        return out

    def _salvage(self, exc: ProtocolError) -> None:
        """Apply what decoded before a bad frame, then attach the partial response."""
        agg = self._agg
        assert agg is not None
        try:
            agg.feed_all(exc.events)
        except ProtocolError:
            pass  # the partial result is still the best we have
        exc.partial = agg.snapshot()

    def snapshot(self) -> Response:
        """The response as it stands (state is not changed)."""
        if self._agg is None:
            return Response(protocol=self.protocol or "unknown", status="in_progress")
        return self._agg.snapshot()

    def session(self) -> Session:
        """The session as it stands (after :meth:`finish`, the final one): see :func:`aggregate_session`."""
        if self._agg is None:
            return Session(protocol=self.protocol or "unknown", status="in_progress")
        return self._agg.session()

    def finish_events(self) -> list[Event]:
        """End the input; return the last canonical events (closing what is still open).

        Without ``emit`` there are none: what is open is closed by :meth:`finish`, in its one pass.

        Raises:
            ProtocolDetectionError: Nothing arrived from which to tell the protocol.
        """
        self._ended = True
        if self._decoder is None:
            detector = self._detector
            assert detector is not None
            name = detector.finish()
            self._detector = None
            self._start(name)
            self.feed(detector.head)
        decoder = self._decoder
        agg = self._agg
        assert decoder is not None
        assert agg is not None
        try:
            last = decoder.finish()
            if not self._recognised and last:
                self._recognised = any(type(e) not in _UNRECOGNISED for e in last)
            out = agg.feed_all(last)
        except ProtocolError as exc:
            self._salvage(exc)
            raise
        return out + agg.finish_events() if self._emit else out

    def finish(self) -> Response:
        """End the input and return the final response.

        Raises:
            ProtocolDetectionError: Nothing arrived from which to tell the protocol.
        """
        if self._failed is not None:
            return self._failed
        if not self._ended:
            self.finish_events()
        assert self._agg is not None
        return self._agg.finish()

    @property
    def ended(self) -> bool:
        """Whether the provider ended its response (its final event, or an in-band error).

        ``False`` at the end of the input means the stream was cut: the connection closed
        early, or the provider never sent its final event.
        """
        return self._agg is not None and self._agg.done

    def fail(self, error: StreamError) -> list[Event]:
        """End the input with an error from outside the stream; return the closing events.

        For a failure the provider could not report itself (a broken connection, a stall, bytes
        that break the protocol, a cut stream): the error is applied as if the provider had
        sent it in-band, open parts close ``incomplete``, and :meth:`finish` then returns the
        ``failed`` response carrying ``error``. The decoder is not finished (it may be broken).
        """
        self._ended = True
        if self._direct & _FOLD:
            self._decoder.forget_folded()  # type: ignore[union-attr]  # the parts close below
        agg = self._agg
        event = StreamErrorEvent(error=error)
        if agg is None or agg.state is AggregatorState.ERROR or self._failed is not None:
            # Nothing decoded (or the machine broke): the error is all there is to tell.
            base = self.snapshot()
            self._failed = msgspec.structs.replace(base, status="failed", error=error)
            return [event] if self._emit else []
        out = agg.feed(event) + agg.finish_events()
        self._failed = agg.finish()
        return out


_ACCEPTED = "bytes, or an iterable of bytes chunks (e.g. ms.io.replay(path), response.iter_bytes())"


def _is_http(data: object) -> bool:
    # An httpx / httpx2 response, an SDK's raw streaming response or its Stream (``.response``).
    inner = getattr(data, "response", None)
    return any(hasattr(x, "iter_bytes") or hasattr(x, "aiter_bytes") for x in (data, inner)) or hasattr(
        data, "http_response"
    )


def _refuse(data: object) -> TypeError:
    what = type(data).__name__
    if isinstance(data, str):
        hint = "; to read a recording, pass open(path, 'rb').read() or ms.io.replay(path)"
    elif _is_http(data):
        hint = "; for a live HTTP or SDK streaming response use ms.stream(...) or await ms.aaggregate(...)"
    elif hasattr(data, "__aiter__"):
        hint = "; for an async iterable use await ms.aaggregate(...)"
    else:
        hint = ""
    return TypeError(f"cannot aggregate a {what} object: expected {_ACCEPTED}{hint}")


_ONLY_BYTES: Final = frozenset((bytes,))


def _checked(chunks: Iterable[object]) -> Iterator[bytes]:
    for chunk in chunks:
        if type(chunk) is bytes:
            yield chunk
        elif isinstance(chunk, bytearray | memoryview):
            yield bytes(chunk)
        else:
            hint = (
                "read iter_bytes(), not iter_text()"
                if isinstance(chunk, str)
                else "an SDK's parsed chunks cannot be re-read: pass its raw streaming response"
            )
            raise TypeError(
                f"cannot aggregate an iterable that yielded a {type(chunk).__name__} object: "
                f"expected {_ACCEPTED} ({hint})"
            )


def chunks_of(data: bytes | Iterable[bytes]) -> Iterable[bytes]:
    if type(data) is list or type(data) is tuple:
        # No HTTP response is a list: not probed for one. Chunks all bytes (the common case) are
        # checked at once, in C, rather than one by one as they are read.
        return data if set(map(type, data)) <= _ONLY_BYTES else _checked(data)
    if isinstance(data, bytes | bytearray | memoryview):
        return (bytes(data),)
    if isinstance(data, str) or not isinstance(data, Iterable) or _is_http(data):
        raise _refuse(data)
    return _checked(data)


def aggregate(data: bytes | Iterable[bytes], *, protocol: str | None = None) -> Response:
    """Aggregate a whole stream into its final :class:`~maas_stream.Response`.

    Args:
        data: The stream's bytes, whole or as an iterable of chunks.
        protocol: The source protocol; detected from the first frames when ``None``.

    Raises:
        RemoteProtocolError: The bytes break the protocol (``exc.frame`` names the frame and
            ``exc.partial`` holds what was aggregated before it).
        ProtocolDetectionError: ``protocol`` was not given and could not be detected.
        TypeError: ``data`` is not bytes nor an iterable of bytes (a path string, an HTTP or
            SDK response, an SDK's parsed chunks); the message says what to pass instead.
    """
    agg = StreamAggregator(protocol)
    for chunk in chunks_of(data):
        agg.feed(chunk)
    return agg.finish()


def aggregate_session(data: bytes | Iterable[bytes], *, protocol: str | None = None) -> Session:
    """Aggregate a whole session into a :class:`~maas_stream.Session`: each response apart.

    For a session protocol (Google Live, OpenAI Realtime) each model response is its own
    :class:`~maas_stream.Response` (its own status, finish reason, usage and error), and the
    session's setup and config frames, errors that did not end it, input transcripts,
    cancellations and the client's messages are :class:`~maas_stream.SessionEvent` records in
    order. Any other protocol gives a session of its one response. :func:`aggregate` folds the
    same input into one response (see ``docs/sessions.md``).

    Raises:
        RemoteProtocolError: The bytes break the protocol (``exc.partial`` holds what was
            aggregated before the bad frame, as one response).
        ProtocolDetectionError: ``protocol`` was not given and could not be detected.
    """
    agg = StreamAggregator(protocol)
    for chunk in chunks_of(data):
        agg.feed(chunk)
    agg.finish()
    return agg.session()
