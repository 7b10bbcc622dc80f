"""What the two session (websocket) protocols, Google Live and OpenAI Realtime, share.

:class:`SessionDecoder` is their decoders' fast path: a recorded server line decoded typed in one
pass, envelope included. :class:`SessionEncoder` is the base of their stream encoders; it owns
what those two encoders do alike: the ``{"dir", "msg"}`` JSON-lines framing of server
and client messages, the drop log and which kind each drop is, the source protocol, usage held
until a turn ends, what neither protocol carries (refusals, citations, log-probabilities), input
messages that are no server message, and the pass-through of session and client frames that the
same protocol's decoder kept.

It must not know either protocol's message shapes (the subclasses write those) nor decide any
cross-protocol rule (finish reasons, replay: see the aggregator and ``_replay``).
"""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, TypeVar

import msgspec

from .. import events
from .._drops import DropKind, DropLog
from .._exceptions import RemoteProtocolError
from .._model import Part, TextPart, ToolCallPart, ToolResultPart, UnknownPart, Usage
from ._base import _DECODE_FAULTS, EventEncoder, _State, flush_warnings
from ._jsonl import JSONLinesStreamDecoder

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .._model import Message

__all__ = [
    "NOT_SERVER",
    "Frame",
    "SessionDecoder",
    "SessionEncoder",
    "drop_kind",
    "frame",
    "part_name",
    "result_text",
    "tool_parts",
]

_json = msgspec.json.Encoder()
_M = TypeVar("_M")
NOT_SERVER: Final[Any] = object()
"""A line decoded beforehand that is no recorded server line (``SessionDecoder.normal_decoded``)."""
_SERVER: Final = b'{"dir":"server","msg":'
_CLIENT: Final = b'{"dir":"client","msg":'

_PART_KINDS: Final[dict[str, DropKind]] = {
    "image": "media",
    "audio": "media",
    "file": "media",
    "citation": "citation",
    "code": "code",
    "refusal": "refusal",
    "reasoning": "reasoning",
    "tool_result": "tool_result",
    "tool_call": "server_call",
    "unknown": "unknown",
}


class Frame(msgspec.Struct, Generic[_M], gc=False):
    """A recorded server line ``{"dir": "server", "msg": ...}`` whose message is typed (one pass).

    ``Frame[ServerMessage]`` is what a protocol's ``frame_decoder`` reads; ``gc=False`` as for
    the wire Structs it holds (measured in ``benchmarks/bench_realtime.py``). Any other line (a
    client line, a server line without a message) fails to decode and takes the base path.
    """

    dir: Literal["server"]
    msg: _M


def frame(msg: Any, *, client: bool = False) -> bytes:
    """One recorded websocket message: ``{"dir": "server"|"client", "msg": msg}`` and a newline."""
    return (_CLIENT if client else _SERVER) + _json.encode(msg) + b"}\n"


def drop_kind(part: Part) -> DropKind:
    """The drop kind of a whole part a target has no form for (a tool call here is a server one)."""
    return _PART_KINDS.get(str(part.__struct_config__.tag), "field")


def part_name(part: Part) -> str:
    """A part as a drop description names it: ``an image part``, ``an unknown 'mcp_call' part``."""
    tag = part.__struct_config__.tag
    if isinstance(part, UnknownPart):
        return f"an unknown {part.provider_type!r} part"
    return f"{'an' if str(tag)[0] in 'aeiou' else 'a'} {tag} part"


def result_text(result: ToolResultPart) -> str:
    """A tool result's content as text: the string, or its text parts joined."""
    content = result.content
    return (
        content if isinstance(content, str) else "".join(p.text for p in content if isinstance(p, TextPart))
    )


def tool_parts(messages: list[Message]) -> Iterator[tuple[int, ToolCallPart | ToolResultPart, bool]]:
    """Each tool call and tool result of a history in order, for a codec's ``validate``.

    Yields ``(message index, part, answered)``: ``answered`` is true for a call, and for a
    result whose call id appeared in an earlier call.
    """
    calls: set[str] = set()
    for i, message in enumerate(messages):
        for part in message.content if isinstance(message.content, list) else ():
            if isinstance(part, ToolCallPart):
                calls.add(part.id)
                yield i, part, True
            elif isinstance(part, ToolResultPart):
                yield i, part, part.tool_call_id in calls


class SessionDecoder(JSONLinesStreamDecoder):
    """Base of the session decoders: recorded server lines take a typed one-pass fast path.

    Subclasses set :attr:`frame_decoder` (a decoder of ``{"dir", "msg"}`` whose ``msg`` is their
    typed server message) and implement :meth:`_server_line`; every other line (client lines,
    odd frames) takes the base path through ``on_message``.

    The fast path is :meth:`_lines` (``feed`` splits the chunk in the base): it decodes each
    server line typed in one pass and hands the message to :meth:`_server_line`, which appends to one list for the
    whole chunk. Per line that is one msgspec decode and one call into the protocol: no untyped
    envelope, no per-line list, no wrapper object unless a message is kept whole.

    When only the result counts, the session decoders fold directly (``direct``, ``_base``):
    a subclass's :meth:`fold_lines` hands a line that only continues an open part's text,
    arguments, audio or transcript to ``fold_delta`` (a run of them to ``fold_deltas``) and
    every other line to ``normal``, or to :meth:`normal_decoded` once it decoded the line; a line
    with no events (``generationComplete``, a quiet ``.done``) is only counted.
    """

    frame_decoder: ClassVar[Any]
    direct: ClassVar[bool] = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model: str | None = None
        """The session's model (from its setup), for each ``ResponseStart``."""
        self._started = False
        """Whether the first message arrived (the session's ``ResponseStart`` went out)."""
        self._open = False
        """Whether a response is open."""
        self._ours = False
        """Whether the decoder opened it, to hold session messages outside any model response."""

    def _response_id(self) -> str | None:
        return None

    def _ensure_open(self, out: list[events.Event], *, ours: bool) -> None:
        if not self._open:
            self._open = True
            self._ours = ours
            out.append(self._response_start())

    def _response_start(self) -> events.ResponseStart:
        """The ``ResponseStart`` that opens a response (the decoder's state unchanged)."""
        return events.ResponseStart(protocol=self.protocol, id=self._response_id(), model=self._model)

    def _close_response(self, out: list[events.Event], *, only_ours: bool = False, **done: Any) -> None:
        if self._open and (self._ours or not only_ours):
            self._open = False
            self._ours = False
            out.append(events.ResponseDone(**done))

    def _server_line(self, message: Any, line: bytes, out: list[events.Event]) -> None:
        """Append the events of one typed server message; ``line`` is its recorded line.

        A subclass that keeps the message whole wraps the line (``WrappedLine(line)``) for
        ``raw_message``; the common deltas never need it.
        """
        raise NotImplementedError

    def _line(self, line: bytes) -> list[events.Event]:
        out: list[events.Event] = []
        self._lines([line], out)
        return out

    def normal_decoded(self, messages: list[Any], lines: list[bytes]) -> None:
        """``normal`` for lines a ``fold_lines`` decoded already: none is decoded again.

        ``messages[i]`` is line ``i``'s typed server message (``frame_decoder``'s ``msg``),
        :data:`NOT_SERVER` for a line that is none (a client line, an odd or bad one: the base
        path says which), or ``None`` for a line not decoded yet. Errors as from ``normal``.
        """
        out: list[events.Event] = []
        self._lines(lines, out, messages)
        self._forget(out)

    def _lines(self, lines: list[bytes], out: list[events.Event], messages: list[Any] | None = None) -> None:
        """Append the events of whole lines to ``out``; a bad line raises with those before it.

        ``messages``: the lines' messages decoded already (:meth:`normal_decoded`).
        """
        decode = self.frame_decoder.decode
        on_server = self._server_line
        warnings = self.warnings  # flush_warnings empties it in place
        slow = super()._line
        frames = self._frames  # counted here, stored back before anything else reads it
        for line, message in zip(lines, repeat(None) if messages is None else messages, strict=False):
            if not line:
                continue
            if message is None:
                try:
                    message = decode(line).msg
                except _DECODE_FAULTS:
                    message = NOT_SERVER
            if message is NOT_SERVER:
                if line.strip():  # client lines, odd frames: the base path (errors included)
                    self._frames = frames
                    try:
                        out += slow(line)
                    except RemoteProtocolError as exc:
                        exc.events = out  # what the lines before the bad one decoded to: not lost
                        raise
                    frames = self._frames
                continue
            frames += 1
            mark = len(out)
            try:
                on_server(message, line, out)
            except _DECODE_FAULTS as exc:
                self._frames = frames
                del out[mark:]  # the bad line's own events
                raise self._fault(exc, line, out) from exc
            except RemoteProtocolError as exc:
                self._frames = frames
                del out[mark:]
                self._state = _State.ERROR
                exc.protocol = exc.protocol or self.protocol
                exc.frame = exc.frame or frames
                exc.events = out
                raise
            if warnings:
                out += flush_warnings(warnings)
        self._frames = frames

    def _fault(self, exc: Exception, line: bytes, before: list[events.Event]) -> RemoteProtocolError:
        self._state = _State.ERROR
        err = RemoteProtocolError(
            f"invalid {self.protocol} message: {exc}",
            protocol=self.protocol,
            frame=self._frames,
            raw=line[:500].decode("utf-8", "replace"),
        )
        err.events = before
        return err


class SessionEncoder(EventEncoder):
    """Base of the session-protocol stream encoders (events → ``{"dir", "msg"}`` lines).

    Subclasses set :attr:`protocol` and :attr:`title`, write their own messages and may override
    :meth:`_end` (what :meth:`finish` still has to write) and :meth:`_pass` (how a kept frame of
    their own protocol goes back out).
    """

    protocol: ClassVar[str] = ""
    title: ClassVar[str] = ""
    """The protocol's name in drop descriptions (``Live``, ``Realtime``)."""

    def __init__(self) -> None:
        self.drops = DropLog(self.protocol)
        """What the target protocol could not carry, one record per kind and description."""
        self._source = ""
        self._ended = False
        self._usage: Usage | None = None
        self._roles: dict[Any, str] = {}

    def encode(self, event: events.Event) -> bytes:
        """Encode one canonical event; return the JSON lines it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        return self._TABLE[type(event)](self, event)  # (inlined _route: once per event)

    def finish(self) -> bytes:
        """End the output; return what is still held (a cut source is never completed)."""
        if self._ended:
            return b""
        self._ended = True
        return self._end()

    def _end(self) -> bytes:
        return b""

    @property
    def _same(self) -> bool:
        """Whether the source is this protocol (its kept frames and ids may pass through)."""
        return self._source == self.protocol

    def _lose(self, kind: DropKind, what: str, where: str | None = None) -> None:
        self.drops.add(kind, what, where=where)

    def _lose_part(self, value: Part) -> None:
        self._lose(drop_kind(value), f"{part_name(value)} (no {self.title} form)")

    # ------------------------------------------------------------------ written by the subclasses

    def _nothing(self, ev: Any) -> bytes:
        return b""

    _on_part_start = _on_text = _on_reasoning = _on_summary = _on_signature = _nothing
    _on_arguments = _on_audio = _on_part_done = _on_message_done = _nothing
    _on_response_done = _on_error = _nothing

    # ------------------------------------------------------------------ shared handlers

    def _on_response_start(self, ev: events.ResponseStart) -> bytes:
        self._source = ev.protocol
        self.drops.source = ev.protocol or None
        return b""

    def _on_message_start(self, ev: events.MessageStart) -> bytes:
        self._roles[ev.message] = ev.role
        if ev.role in ("user", "system", "developer") and ev.type != "input_transcription":
            self._lose("message", f"{ev.role} messages (not {self.title} server messages)")
        return b""

    def _on_usage(self, ev: events.UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_refusal(self, ev: events.RefusalDelta) -> bytes:
        self._lose("refusal", f"a refusal part (no {self.title} form)")
        return b""

    def _on_annotation(self, ev: events.AnnotationAdded) -> bytes:
        self._lose("citation", f"a citation part (no {self.title} form)")
        return b""

    def _on_logprobs(self, ev: events.LogprobsDelta) -> bytes:
        self._lose("logprobs", f"log-probabilities (no {self.title} form)")
        return b""

    def _on_unknown(self, ev: events.UnknownEvent) -> bytes:
        raw = ev.raw
        if self._same and isinstance(raw, dict):
            return self._pass(ev, raw)
        source = self._source or "another protocol"
        if ev.passthrough:
            self._lose("session_frame", f"{source} session frames ({ev.provider_type!r})")
        else:
            self._lose("unknown", f"unknown {source} frames ({ev.provider_type!r})")
        return b""

    def _pass(self, ev: events.UnknownEvent, raw: dict[str, Any]) -> bytes:
        """A frame of this protocol kept whole by its decoder, written back unchanged."""
        return frame(raw, client=ev.provider_type.startswith("client."))
