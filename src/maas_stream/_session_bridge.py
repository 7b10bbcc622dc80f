"""A realtime session translated between a client protocol and an upstream (sans-IO).

:class:`SessionBridge` sits between one realtime client connection (``openai-realtime`` or
``google-live``) and one upstream: the other realtime protocol, the same one (passed through,
still read for the :attr:`~SessionBridge.session`), or an HTTP protocol (``openai-chat``,
``openai-responses``, ``anthropic``, ``gemini``) driven turn by turn. It does no IO: the caller
(the bridge's websocket endpoint) moves messages and calls:

``opening() -> Translated``
    Once, when both connections are open: what to send first. A Realtime client gets a
    ``session.created``; a Live upstream's ``setup`` is NOT sent yet: it goes out with the
    client's first message that is not a ``session.update`` (Live takes its whole
    configuration once, in ``setup``, while Realtime clients configure the session with
    ``session.update`` after connecting), and what follows it is held until the upstream's
    ``setupComplete``.
``from_client(message) -> Translated``
    One websocket message of the client (text as ``str``, binary as ``bytes``).
``from_upstream(message) -> Translated``
    One websocket message of a realtime upstream.
``upstream_closed(code, reason) -> Translated``
    The upstream websocket closed: the client gets the failure in its own protocol.
``turn_request() -> TurnRequest`` (HTTP upstream)
    The request body for the next turn: the whole conversation so far, the session's
    instructions and tools, in the upstream's terms. ``from_client`` sets
    :attr:`Translated.request` when the client asked for a turn (Realtime ``response.create``,
    Live ``turnComplete`` / ``realtimeInput.text`` / ``toolResponse``); the caller sends that
    request with its HTTP upstream (streaming) and feeds the response bytes to
    ``upstream_http(chunk) -> Translated``, then ``upstream_http_end(error=None) -> Translated``
    (pass the failure when the HTTP request failed or was cut). One turn at a time. Text only:
    audio input and audio output are refused with an HTTP upstream.

Every :class:`Translated` says what to send upstream, what to send the client, what was dropped
(structured :class:`~maas_stream.Dropped` records: never a silent loss), and whether to close the
client (a refused Live ``setup``: Live has no error message, its server closes).

What cannot be carried (a field the upstream has no counterpart for, a client message with no
upstream form) is REFUSED: a Realtime client gets an ``error`` event naming its own field (and
the session goes on, as Realtime's own errors do), a Live client is closed with code 1007 and
the field in the reason. With ``drop_params=True`` it is dropped instead and reported as a
record. A session is never left healthy-looking and silent (audio asked for, text upstream).

The mappings (documented in docs/sessions.md, "Realtime bridge"): instructions, tools,
modalities, voice (:data:`VOICES`, a fixed table of Realtime ↔ Live voices; a voice with no
counterpart is refused), input transcription, turn detection (``server_vad`` /
``semantic_vad`` ↔ automatic activity detection; manual turns ↔ ``activityStart`` /
``activityEnd``), audio formats (resampled and G.711-converted by ``_audio``; Live PCM16 16 kHz
in and 24 kHz out, Realtime PCM16 24 kHz or G.711). Server events go through the existing
decoders, aggregator and encoders (the same path as ``StreamConverter``): tool calls, tool
results, ``toolCallCancellation`` ↔ a ``response.done`` listing the call ``incomplete`` (a
Live cancellation of a call a Realtime client already got is a ``conversation.item.deleted``
of its item), and Realtime's recoverable ``error`` (forwarded to a Realtime client; a Live
client has no error message, so it is a record of kind ``error``).

It must not do IO.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec

from . import events as ev
from ._audio import AudioConverter
from ._bodies import from_canonical
from ._client_model import (
    ActivityStart,
    AddMessages,
    AudioChunk,
    AudioCommit,
    AudioFormat,
    AudioStreamEnd,
    CancelResponse,
    ClientMessage,
    ResponseRequest,
    SessionConfig,
    TextInput,
    ToolResults,
    Transcription,
    TurnDetection,
)
from ._convert import StreamConverter
from ._drops import DropKind, DropLog, Dropped
from ._envelope import Envelope, FunctionTool, Unread
from ._exceptions import LocalProtocolError, ProtocolError, RemoteProtocolError
from ._model import (
    Message,
    Response,
    ResponseStatus,
    Session,
    SessionEvent,
    StreamError,
    TextPart,
    ToolCallPart,
)
from ._models import model_caps
from ._registry import get_protocol
from ._request import _codec, _with_limit
from ._stream_aggregator import StreamAggregator
from .protocols._names import GOOGLE_LIVE, OPENAI_REALTIME
from .protocols.google_live import _client as live
from .protocols.openai_realtime import _client as realtime

if TYPE_CHECKING:
    from ._interfaces import StreamEncoder

__all__ = ["VOICES", "SampleRates", "SessionBridge", "Translated", "TurnRequest"]

SESSION_PROTOCOLS: Final = frozenset({OPENAI_REALTIME, GOOGLE_LIVE})

VOICES: Final[dict[str, str]] = {
    "alloy": "Puck",
    "ash": "Charon",
    "ballad": "Orus",
    "coral": "Aoede",
    "echo": "Fenrir",
    "sage": "Kore",
    "shimmer": "Leda",
    "verse": "Zephyr",
    "marin": "Despina",
    "cedar": "Algenib",
}
"""Realtime voice → Live prebuilt voice, one to one (each default, ``alloy`` and ``Puck``, is the
other's counterpart). A voice outside this table has no counterpart: it is refused (or dropped
with ``drop_params``), never replaced silently by another."""

_LIVE_VOICES: Final = {live_voice.lower(): rt for rt, live_voice in VOICES.items()}

_REASON_BYTES: Final = 123
"""A websocket close reason holds at most 123 bytes (RFC 6455 §5.5)."""

_json = msgspec.json.Encoder()


@dataclass(frozen=True)
class SampleRates:
    """The PCM16 sample rates of each side (the protocols' documented rates by default)."""

    live_input: int = 16000
    """What a Live upstream is sent (``audio/pcm;rate=16000``)."""
    live_output: int = 24000
    """What Live writes, and what a Live client is sent."""
    realtime: int = 24000
    """Realtime's PCM16 rate, both ways."""


@dataclass
class Translated:
    """What one message (or event) of the session turns into.

    Attributes:
        to_upstream: Websocket messages to send upstream, in order (text frames as ``str``).
        to_client: Websocket messages to send the client now, in order.
        dropped: What could not be carried and was dropped (only with ``drop_params``, or
            upstream messages the client protocol has no form for).
        close: Close the client with this code and reason (a refused Live setup, a closed
            upstream); send ``to_client`` first.
        request: HTTP upstream only: the client asked for a turn; send this request upstream.
    """

    to_upstream: list[str | bytes] = field(default_factory=list)
    to_client: list[str | bytes] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    close: tuple[int, str] | None = None
    request: TurnRequest | None = None


@dataclass(frozen=True)
class TurnRequest:
    """One turn of a session for an HTTP upstream (see :meth:`SessionBridge.turn_request`).

    Attributes:
        protocol: The upstream protocol the body is written for.
        body: The streaming request body.
        messages: The canonical conversation it holds (system instructions first).
        envelope: The canonical envelope (model, tools...).
        dropped: What of the conversation or envelope the upstream cannot carry.
    """

    protocol: str
    body: dict[str, Any]
    messages: list[Message]
    envelope: Envelope
    dropped: list[Dropped]


def _text(obj: Any) -> str:
    return str(_json.encode(obj), "utf-8")


def _reason(text: str) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= _REASON_BYTES:
        return text
    return raw[: _REASON_BYTES - 3].decode("utf-8", "ignore") + "..."


_REALTIME_DEFAULT: Final = SessionConfig(
    instructions="",
    tools=[],
    tool_choice="auto",
    modalities=["audio"],
    voice="alloy",
    input_format=AudioFormat(),
    output_format=AudioFormat(),
    input_transcription=Transcription(enabled=False),
    turn_detection=TurnDetection(mode="server_vad"),
)
"""What a Realtime client is told the session is before it says anything (``session.created``)."""

_CONFIG_FIELDS: Final = tuple(
    f for f in SessionConfig.__struct_fields__ if f not in ("event_id", "unsupported")
)

_BETA_NAMES: Final = {
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "conversation.item.added": "conversation.item.created",
}
_BETA_PARTS: Final = {"output_text": "text", "output_audio": "audio"}

_SERVER_LINE: Final = b'{"dir":"server","msg":'
"""How a session encoder writes a server message (``protocols._session.frame``)."""

_PLAIN_REALTIME: Final = tuple(
    b'{"type":"' + name.encode() + b'"'
    for name in (
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_audio_transcript.delta",
        "response.output_audio_transcript.done",
        "response.output_audio.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.content_part.added",
        "response.content_part.done",
    )
)
"""Realtime server events a GA client gets as the encoder wrote them (audio: when no conversion)."""


def _merge(base: SessionConfig, update: SessionConfig) -> SessionConfig:
    changes = {name: getattr(update, name) for name in _CONFIG_FIELDS if getattr(update, name) is not None}
    return msgspec.structs.replace(base, **changes) if changes else base


class SessionBridge:
    """Translate one realtime session between a client protocol and an upstream (see the module doc).

    Args:
        client: The client's protocol: ``openai-realtime`` or ``google-live``.
        upstream: The upstream's protocol: either realtime protocol, or an HTTP protocol with a
            request envelope (``openai-chat``, ``openai-responses``, ``anthropic``, ``gemini``).
        model: The upstream model (a Live ``setup`` names it; an HTTP body names it).
        drop_params: Drop (and report) what cannot be carried instead of refusing it.
        sample_rates: The PCM16 rates of each side.
        beta: The Realtime client speaks the beta event names (``response.audio.delta``...);
            also set when it sends a beta-shaped ``session.update``.

    Raises:
        LocalProtocolError: ``client`` is not a realtime protocol, or ``upstream`` is neither a
            realtime protocol nor one with HTTP request bodies.
    """

    def __init__(
        self,
        client: str,
        upstream: str,
        *,
        model: str,
        drop_params: bool = False,
        sample_rates: SampleRates | None = None,
        beta: bool = False,
    ) -> None:
        if client not in SESSION_PROTOCOLS:
            raise LocalProtocolError(
                f"a session client speaks openai-realtime or google-live, not {client!r}"
            )
        self.client = client
        self.upstream = upstream
        self.model = model
        self.drop_params = drop_params
        self.rates = sample_rates or SampleRates()
        self.beta = beta
        self.http = upstream not in SESSION_PROTOCOLS
        if self.http:
            _codec(upstream)  # raises for a protocol without HTTP request bodies
        self.same = client == upstream
        self.drops = DropLog(upstream, client)
        """Every drop of the session so far (what each :class:`Translated` listed)."""
        self.config = _REALTIME_DEFAULT if client == OPENAI_REALTIME else SessionConfig()
        if self.http and client == OPENAI_REALTIME:
            self.config = msgspec.structs.replace(
                self.config, modalities=["text"], turn_detection=TurnDetection(mode="manual")
            )
        """The client's session configuration as it stands (canonical)."""
        self._agg = StreamAggregator(None if self.http else upstream, emit=True)
        self._encoder: StreamEncoder | None = None
        if not self.http and not self.same:
            self._encoder = get_protocol(client).encoder()
        self._ids = itertools.count(1)
        self._reading = True
        self._setup_sent = False
        self._setup: dict[str, Any] | None = None
        self._ready = False
        self._held: list[str | bytes] = []
        self._awaiting_setup = False
        self._calls: dict[str, str] = {}
        """Call id → function name (a Live function response needs the name)."""
        self._call_items: dict[str, str] = {}
        """Call id → the Realtime item id a Realtime client got it in."""
        self._open_calls: set[str] = set()
        """Calls of the response being written to a Realtime client (not finished yet)."""
        self._auto = False
        """A Live upstream answers by itself now (after tool results or the end of an audio turn):
        the Realtime client's next plain ``response.create`` is already served."""
        self._activity = False
        self._inputs: dict[AudioFormat, AudioConverter] = {}
        self._output: AudioConverter | None = None
        # HTTP upstream: the conversation and the turns.
        self._history: list[Message] = []
        self._turns: list[Response] = []
        self._events: list[SessionEvent] = []
        self._http: StreamConverter | None = None
        self._overrides: ResponseRequest | None = None
        self._response: tuple[str, list[dict[str, Any]]] | None = None
        """The response a Realtime client was told started and not yet done: its id and items."""

    # ------------------------------------------------------------------ public

    @property
    def session(self) -> Session:
        """The canonical session so far (responses and session events), for logs and metrics."""
        if self.http:
            status: ResponseStatus = "in_progress" if self._http is not None else "completed"
            return Session(
                protocol=self.upstream,
                status=status,
                responses=list(self._turns),
                events=list(self._events),
                model=self.model,
            )
        return self._agg.session()

    def opening(self) -> Translated:
        """What to send when both connections are open (see the module doc)."""
        out = Translated()
        if self.client == OPENAI_REALTIME and not self.same:
            out.to_client.append(self._session_event("session.created"))
        return out

    def from_client(self, message: str | bytes) -> Translated:
        """Translate one client websocket message.

        A message that breaks the client protocol raises nothing: it is answered in that
        protocol (a Realtime ``error`` event; a Live client is closed with code 1007).
        """
        out = Translated()
        if self.same:
            return self._pass_client(message, out)
        try:
            if self.client == OPENAI_REALTIME:
                fmt = self.config.input_format or AudioFormat(rate=self.rates.realtime)
                messages = realtime.decode_client(message, input_format=fmt)
                if not self.beta and isinstance(messages[0], SessionConfig):
                    session = msgspec.json.decode(message).get("session")
                    self.beta = realtime.is_beta_session(session)
            else:
                messages = live.decode_client(message)
        except (ProtocolError, msgspec.DecodeError) as exc:
            self._client_fault(out, str(exc), None, None)
            return out
        for m in messages:
            self._from_client(m, out)
            if out.close is not None:
                break
        return out

    def from_upstream(self, message: str | bytes) -> Translated:
        """Translate one websocket message of a realtime upstream.

        Raises:
            RemoteProtocolError: The message breaks the upstream's protocol.
            LocalProtocolError: The upstream is an HTTP protocol (use :meth:`upstream_http`).
        """
        if self.http:
            raise LocalProtocolError("an HTTP upstream's bytes go to upstream_http(), not from_upstream()")
        out = Translated()
        if self.same:
            self._read(message, "server")
            out.to_client.append(message)
            return out
        try:
            raw = msgspec.json.decode(message)
        except msgspec.DecodeError as exc:
            raise RemoteProtocolError(
                f"an upstream message is not JSON ({exc})", protocol=self.upstream
            ) from None
        if self.upstream == GOOGLE_LIVE:
            self._from_live(raw, message, out)
        else:
            self._from_realtime(raw, message, out)
        return out

    def upstream_closed(self, code: int, reason: str) -> Translated:
        """The upstream websocket closed: tell the client in its own protocol, and close it."""
        out = Translated()
        text = f"the upstream {self.upstream} connection closed ({code}{': ' + reason if reason else ''})"
        if self.client == OPENAI_REALTIME and not self.same:
            out.to_client.append(self._error("server_error", text, None, None, code="upstream_closed"))
        if not self.http:
            self._agg.fail(StreamError(type="upstream_closed", message=text, code=str(code)))
        out.close = (code if code in (1000, 1001) else 1011, _reason(reason or text))
        return out

    # ------------------------------------------------------------------ same protocol

    def _pass_client(self, message: str | bytes, out: Translated) -> Translated:
        forward = message
        if self.client == GOOGLE_LIVE and (
            "setup" in message if isinstance(message, str) else b"setup" in message
        ):
            try:
                raw = msgspec.json.decode(message)
            except msgspec.DecodeError:
                raw = None
            setup = raw.get("setup") if isinstance(raw, dict) else None
            if isinstance(setup, dict):
                # The route's model, whatever the client named (it may be an alias).
                setup["model"] = self.model if self.model.startswith("models/") else f"models/{self.model}"
                forward = _text(raw)
        if not self._is_audio(message):
            self._read(forward, "client")
        out.to_upstream.append(forward)
        return out

    def _read(self, message: str | bytes, direction: str) -> None:
        """Read a passed-through message for the Session; one it cannot read ends the reading.

        The same protocol passes through untouched: its upstream judges the client's messages.
        """
        if not self._reading:
            return
        try:
            self._agg.feed_message(message, direction=direction)
        except ProtocolError as exc:
            self._reading = False
            log = DropLog(self.client, self.upstream)
            log.add(
                "unknown", f"the rest of the Session (a {direction} message it cannot read: {exc.message})"
            )
            self.drops.extend(log.records)

    def _is_audio(self, message: str | bytes) -> bool:
        """Whether a client message is streamed audio.

        Streamed audio is kept out of the Session: it would grow with every second of audio.
        """
        head = message[:120] if isinstance(message, str) else message[:120].decode("utf-8", "ignore")
        return (
            "input_audio_buffer.append" in head
            or ("realtimeInput" in head and '"audio"' in head)
            or ("realtime_input" in head and '"audio"' in head)
        )

    # ------------------------------------------------------------------ refusals

    def _client_path(self, name: str) -> str:
        if self.client == OPENAI_REALTIME:
            return realtime.client_path(name, beta=self.beta)
        return live.client_path(name)

    def _lost(
        self,
        out: Translated,
        lost: list[str],
        why: str,
        event_id: str | None,
        kind: DropKind = "request_field",
    ) -> bool:
        """Refuse what cannot be carried (return ``True``), or with ``drop_params`` report it."""
        paths = list(dict.fromkeys(self._client_path(name) for name in lost))
        if not paths:
            return False
        if self.drop_params:
            log = DropLog(self.upstream, self.client)
            for path in paths:
                log.add(kind, f"{path} ({why})")
            self._report(out, log.records)
            return False
        text = (
            f"{', '.join(paths)}: cannot be carried to the {self.upstream} upstream ({why}); "
            "the bridge refuses it rather than drop it (its operator may set drop_params)"
        )
        self._client_fault(out, text, paths[0], event_id, code="unsupported_by_upstream")
        return True

    def _report(self, out: Translated, records: list[Dropped]) -> None:
        out.dropped.extend(records)
        self.drops.extend(records)

    def _client_fault(
        self,
        out: Translated,
        text: str,
        param: str | None,
        event_id: str | None,
        *,
        code: str = "invalid_event",
    ) -> None:
        if self.client == OPENAI_REALTIME:
            out.to_client.append(self._error("invalid_request_error", text, param, event_id, code=code))
        else:
            out.close = (1007, _reason(text))

    def _error(self, kind: str, text: str, param: str | None, event_id: str | None, *, code: str) -> str:
        error: dict[str, Any] = {"type": kind, "code": code, "message": text, "param": param}
        if event_id is not None:
            error["event_id"] = event_id
        return self._server_event({"type": "error", "error": error})

    def _server_event(self, body: dict[str, Any]) -> str:
        body["event_id"] = f"event_maas_bridge_{next(self._ids)}"
        return _text(self._beta(body) if self.beta else body)

    # ------------------------------------------------------------------ Realtime session events

    def _session_object(self) -> dict[str, Any]:
        c = self.config
        session = realtime.encode_client(c, beta=self.beta)[0]["session"]
        if not self.beta:  # (the beta types take only OpenAI model names; GA has no session id)
            session["model"] = self.model
        if not self.beta:
            audio = session.setdefault("audio", {})
            audio.setdefault("input", {}).setdefault("turn_detection", None)
            audio["input"].setdefault("transcription", None)
        return dict(session)

    def _session_event(self, kind: str) -> str:
        return self._server_event({"type": kind, "session": self._session_object()})

    # ------------------------------------------------------------------ client → upstream

    def _from_client(self, m: ClientMessage, out: Translated) -> None:
        if isinstance(m, SessionConfig):
            self._config(m, out)
        elif self.http:
            self._http_client(m, out)
        elif self.upstream == GOOGLE_LIVE:
            self._to_live(m, out)
        else:
            self._to_realtime(m, out)

    def _config(self, m: SessionConfig, out: Translated) -> None:
        merged = _merge(self.config, m)
        lost = list(m.unsupported)
        if self.http:
            # A Live setup that names no modality asks for audio (Live's default).
            modalities = merged.modalities or (["audio"] if self.client == GOOGLE_LIVE else ["text"])
            if "audio" in modalities:
                lost.append("modalities")
            if self._lost(out, lost, "an HTTP upstream answers in text only", m.event_id):
                return
            self.config = msgspec.structs.replace(merged, modalities=["text"])
            self._config_done(out)
            return
        if self.upstream == GOOGLE_LIVE:
            self._live_config(m, merged, lost, out)
            return
        # A Live client's setup for a Realtime upstream.
        wire = self._realtime_update(merged, lost)
        if self._lost(out, lost, "OpenAI Realtime has no counterpart", m.event_id):
            return
        self.config = merged
        self._awaiting_setup = True
        out.to_upstream.append(_text(wire))
        self._feed_client(wire)

    def _live_config(self, m: SessionConfig, merged: SessionConfig, lost: list[str], out: Translated) -> None:
        setup = self._live_setup(merged, lost)
        if self._setup_sent:
            old: dict[str, Any] = (self._setup or {}).get("setup", {})
            new: dict[str, Any] = setup["setup"]
            changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            lost = [f"setup.{k}" for k in changed] + lost
            why = "Google Live takes its configuration once, in setup, when the session starts"
        else:
            why = "Google Live has no counterpart"
        if self._lost(out, lost, why, m.event_id):
            return
        self.config = merged
        if not self._setup_sent:
            self._setup = setup
        self._config_done(out)

    def _config_done(self, out: Translated) -> None:
        if self.client == OPENAI_REALTIME:
            out.to_client.append(self._session_event("session.updated"))
        else:
            out.to_client.append(_text({"setupComplete": {}}))

    def _live_setup(self, c: SessionConfig, lost: list[str]) -> dict[str, Any]:
        voice = c.voice
        if voice is not None:
            mapped = VOICES.get(voice.lower())
            if mapped is None:
                lost.append("voice")
            voice = mapped
        upstream = msgspec.structs.replace(
            c, voice=voice, input_format=None, output_format=None, modalities=c.modalities or ["audio"]
        )
        encoded = live.encode_client(upstream, model=self.model, lost=lost)[0]
        return encoded

    def _realtime_update(self, c: SessionConfig, lost: list[str]) -> dict[str, Any]:
        voice = c.voice
        if voice is not None:
            mapped = _LIVE_VOICES.get(voice.lower())
            if mapped is None:
                lost.append("voice")
            voice = mapped
        fmt = AudioFormat(rate=self.rates.realtime)
        upstream = msgspec.structs.replace(
            c,
            voice=voice,
            input_format=fmt,
            output_format=fmt,
            modalities=c.modalities or ["audio"],
            output_transcription=None,
        )
        return realtime.encode_client(upstream, lost=lost)[0]

    def _feed_client(self, wire: dict[str, Any]) -> None:
        """Keep a translated client message in the session (not audio: see ``_is_audio``)."""
        self._agg.feed_message(_text(wire), direction="client")

    def _send(self, out: Translated, wires: list[dict[str, Any]]) -> None:
        for wire in wires:
            text = _text(wire)
            if self.upstream == GOOGLE_LIVE and not self._ready:
                self._held.append(text)
            else:
                out.to_upstream.append(text)
            kind = wire.get("type") if self.upstream == OPENAI_REALTIME else next(iter(wire), None)
            audio = kind == "input_audio_buffer.append" or (
                kind == "realtimeInput" and "audio" in wire.get("realtimeInput", {})
            )
            if not audio:
                self._feed_client(wire)

    def _ensure_setup(self, out: Translated) -> bool:
        """Send the Live setup before the first message that is not a configuration."""
        if self._setup_sent:
            return True
        lost: list[str] = []
        setup = self._setup or self._live_setup(self.config, lost)
        if self._lost(out, lost, "Google Live has no counterpart", None):
            return False
        self._setup = setup
        self._setup_sent = True
        out.to_upstream.append(_text(setup))
        self._feed_client(setup)
        return True

    def _to_live(self, m: ClientMessage, out: Translated) -> None:
        if not self._ensure_setup(out):
            return
        manual = self.config.turn_detection is not None and self.config.turn_detection.mode == "manual"
        wires: list[dict[str, Any]] = []
        if isinstance(m, AudioChunk):
            data = self._convert_in(m.format, AudioFormat(rate=self.rates.live_input), m.data)
            if manual and not self._activity:
                self._activity = True
                wires.append({"realtimeInput": {"activityStart": {}}})
            if data:
                m = msgspec.structs.replace(m, data=data, format=AudioFormat(rate=self.rates.live_input))
                wires += live.encode_client(m)
            self._send(out, wires)
            return
        if isinstance(m, AudioCommit):
            tail = self._flush_in()
            if manual and not self._activity:
                wires.append({"realtimeInput": {"activityStart": {}}})
            if tail:
                wires += live.encode_client(
                    AudioChunk(data=tail, format=AudioFormat(rate=self.rates.live_input))
                )
            self._activity = False
            self._auto = manual
        if isinstance(m, ResponseRequest) and self._auto and m == ResponseRequest(event_id=m.event_id):
            self._auto = False  # Live already answers (tool results, the end of an audio turn)
            return
        if isinstance(m, ToolResults):
            results = [
                r if r.name else msgspec.structs.replace(r, name=self._calls.get(r.tool_call_id))
                for r in m.results
            ]
            m = msgspec.structs.replace(m, results=results)
            self._auto = True
        elif isinstance(m, AddMessages | TextInput) or isinstance(m, ResponseRequest):
            self._auto = False
        lost: list[str] = []
        drops = DropLog(self.upstream, self.client)
        wires += live.encode_client(m, model=self.model, manual_turns=manual, lost=lost, drops=drops)
        lost += [rec.what for rec in drops.records]
        if self._lost(out, lost, "Google Live has no counterpart", m.event_id, kind="session_frame"):
            return
        self._send(out, wires)

    def _to_realtime(self, m: ClientMessage, out: Translated) -> None:
        wires: list[dict[str, Any]] = []
        if isinstance(m, AudioChunk):
            target = AudioFormat(rate=self.rates.realtime)
            data = self._convert_in(m.format, target, m.data)
            if data:
                wires += realtime.encode_client(msgspec.structs.replace(m, data=data, format=target))
            self._send(out, wires)
            return
        manual = self.config.turn_detection is not None and self.config.turn_detection.mode == "manual"
        if isinstance(m, AudioCommit | AudioStreamEnd):
            tail = self._flush_in()
            if tail:
                wires += realtime.encode_client(
                    AudioChunk(data=tail, format=AudioFormat(rate=self.rates.realtime))
                )
        if isinstance(m, ActivityStart):
            return  # Realtime needs no mark: a manual turn starts with its first audio
        lost: list[str] = []
        drops = DropLog(self.upstream, self.client)
        wires += realtime.encode_client(m, lost=lost, drops=drops)
        if isinstance(m, AudioCommit) and manual:
            wires.append({"type": "response.create"})  # Live answers at activityEnd
        lost += [rec.what for rec in drops.records]
        if self._lost(out, lost, "OpenAI Realtime has no counterpart", m.event_id, kind="session_frame"):
            return
        self._send(out, wires)

    def _convert_in(self, source: AudioFormat, target: AudioFormat, data: bytes) -> bytes:
        conv = self._inputs.get(source)
        if conv is None:
            conv = self._inputs[source] = AudioConverter(source, target)
        return conv.feed(data)

    def _flush_in(self) -> bytes:
        return b"".join(conv.flush() for conv in self._inputs.values())

    # ------------------------------------------------------------------ upstream → client

    def _from_live(self, raw: Any, message: str | bytes, out: Translated) -> None:
        if isinstance(raw, dict) and "setupComplete" in raw:
            self._ready = True
            out.to_upstream.extend(self._held)
            self._held = []
        self._relay(message, out)
        cancel = raw.get("toolCallCancellation") if isinstance(raw, dict) else None
        ids = cancel.get("ids") if isinstance(cancel, dict) else None
        for call_id in ids if isinstance(ids, list) else ():
            item = self._call_items.get(call_id) if isinstance(call_id, str) else None
            if self.client == OPENAI_REALTIME and item is not None and call_id not in self._open_calls:
                # A call the client already got in a finished response: Realtime's counterpart of
                # Live's toolCallCancellation is the removal of the call's item.
                out.to_client.append(
                    self._server_event({"type": "conversation.item.deleted", "item_id": item})
                )

    def _from_realtime(self, raw: Any, message: str | bytes, out: Translated) -> None:
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind == "session.updated" and self._awaiting_setup:
            self._awaiting_setup = False
            out.to_client.append(_text({"setupComplete": {}}))
        elif kind == "error" and self._awaiting_setup:
            self._agg.feed_message(message, direction="server")
            error = raw.get("error") if isinstance(raw.get("error"), dict) else {}
            text = f"the {self.upstream} upstream refused the session: {error.get('message') or error.get('code')}"
            out.close = (1011, _reason(text))
            return
        self._relay(message, out)

    def _relay(self, message: str | bytes, out: Translated) -> None:
        encoder = self._encoder
        assert encoder is not None
        drops = encoder.drops
        before = {(r.kind, r.what): r.count for r in drops.records} if drops else {}
        total = sum(before.values())
        events = self._agg.feed_message(message, direction="server")
        chunks: list[bytes] = []
        for e in events:
            if type(e) is ev.UnknownEvent and e.passthrough and e.message is None:
                if e.provider_type == "goAway":
                    log = DropLog(self.client, self.upstream)
                    log.add(
                        "session_frame", "goAway (the Live upstream closes soon; no Realtime counterpart)"
                    )
                    self._report(out, log.records)
                continue  # session frames: kept in the Session, no loss of a response
            if isinstance(e, ev.PartStart) and isinstance(e.value, ToolCallPart):
                self._calls[e.value.id] = e.value.name
            chunks.append(encoder.encode(e))
        self._lines(b"".join(chunks), out)
        if not drops or sum(drops.by_kind().values()) == total:
            return  # the common case, per message: nothing new dropped
        after = drops.records
        new = [
            msgspec.structs.replace(r, count=r.count - before.get((r.kind, r.what), 0))
            for r in after
            if r.count > before.get((r.kind, r.what), 0)
        ]
        if new:
            self._report(out, new)

    def _lines(self, data: bytes, out: Translated) -> None:
        for line in data.splitlines():
            if not line.startswith(_SERVER_LINE):
                continue  # tool results written back as the client's: the client sent them
            body = line[len(_SERVER_LINE) : -1]
            if self._plain(body):
                out.to_client.append(body.decode("utf-8"))  # the per-delta fast path: as written
            elif self.client == OPENAI_REALTIME:
                out.to_client.extend(self._realtime_out(msgspec.json.decode(body)))
            else:
                out.to_client.extend(self._live_out(msgspec.json.decode(body)))

    def _plain(self, body: bytes) -> bool:
        """Whether an encoded server message goes to the client as it is (nothing to track or convert)."""
        if self.client == OPENAI_REALTIME:
            if self.beta or not body.startswith(_PLAIN_REALTIME):
                return False
            audio = body.startswith(b'{"type":"response.output_audio.')
            return not audio or self._output_format() == AudioFormat(rate=self.rates.live_output)
        if self.rates.realtime != self.rates.live_output:
            return False
        asked = self.config.output_transcription
        return (asked is not None and asked.enabled) or b'"outputTranscription"' not in body

    def _output_format(self) -> AudioFormat:
        return self.config.output_format or AudioFormat(rate=self.rates.realtime)

    def _realtime_out(self, msg: dict[str, Any]) -> list[str | bytes]:
        kind = msg.get("type")
        item = msg.get("item")
        if (
            kind == "response.output_item.added"
            and isinstance(item, dict)
            and item.get("type") == "function_call"
        ):
            self._call_items[item.get("call_id", "")] = item.get("id", "")
            self._open_calls.add(item.get("call_id", ""))
        elif kind == "response.created" and isinstance(msg.get("response"), dict):
            self._response = (str(msg["response"].get("id")), [])
        elif kind == "response.output_item.done" and isinstance(item, dict) and self._response is not None:
            self._response[1].append(item)
        elif kind == "response.done":
            self._open_calls.clear()
            self._response = None
        out: list[str | bytes] = []
        target = self._output_format()
        source = AudioFormat(rate=self.rates.live_output)
        if kind in ("response.output_audio.delta", "response.output_audio.done") and source != target:
            if self._output is None:
                self._output = AudioConverter(source, target)
            if kind == "response.output_audio.delta":
                data = self._output.feed(base64.b64decode(msg.get("delta") or ""))
                if not data:
                    return []
                msg["delta"] = base64.b64encode(data).decode("ascii")
            else:
                tail = self._output.flush()
                if tail:
                    delta: dict[str, Any] = {
                        k: msg[k]
                        for k in ("response_id", "item_id", "output_index", "content_index")
                        if k in msg
                    }
                    delta.update(
                        type="response.output_audio.delta", delta=base64.b64encode(tail).decode("ascii")
                    )
                    out.append(self._server_event(delta))
        out.append(_text(self._beta(msg) if self.beta else msg))
        return out

    def _live_out(self, msg: dict[str, Any]) -> list[str | bytes]:
        source = AudioFormat(rate=self.rates.realtime)
        target = AudioFormat(rate=self.rates.live_output)
        content = msg.get("serverContent")
        asked = self.config.output_transcription
        if isinstance(content, dict) and "outputTranscription" in content and not (asked and asked.enabled):
            # Realtime audio always comes with its transcript; a Live client that did not ask
            # for outputAudioTranscription gets none, as from Live itself.
            del content["outputTranscription"]
            if not content:
                del msg["serverContent"]
                if not msg:
                    return []
        if source != target and isinstance(content, dict):
            if self._output is None:
                self._output = AudioConverter(source, target)
            for part in (content.get("modelTurn") or {}).get("parts", []):
                blob = part.get("inlineData")
                if isinstance(blob, dict) and str(blob.get("mimeType", "")).startswith("audio/"):
                    blob["data"] = base64.b64encode(
                        self._output.feed(base64.b64decode(blob["data"]))
                    ).decode()
                    blob["mimeType"] = live.audio_mime(target)
            if content.get("generationComplete") or content.get("interrupted"):
                tail = self._output.flush()
                if tail:
                    part = {
                        "inlineData": {
                            "mimeType": live.audio_mime(target),
                            "data": base64.b64encode(tail).decode(),
                        }
                    }
                    return [_text({"serverContent": {"modelTurn": {"parts": [part]}}}), _text(msg)]
        return [_text(msg)]

    def _beta(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A GA server event under its beta name and part types (for a beta Realtime client)."""
        kind = msg.get("type")
        if isinstance(kind, str) and kind in _BETA_NAMES:
            msg["type"] = _BETA_NAMES[kind]
        for holder in (msg.get("part"), msg.get("item")):
            if isinstance(holder, dict):
                self._beta_parts(holder)
        response = msg.get("response")
        if isinstance(response, dict):
            for item in response.get("output") or []:
                if isinstance(item, dict):
                    self._beta_parts(item)
        return msg

    @staticmethod
    def _beta_parts(obj: dict[str, Any]) -> None:
        if obj.get("type") in _BETA_PARTS:
            obj["type"] = _BETA_PARTS[obj["type"]]
        for part in obj.get("content") or []:
            if isinstance(part, dict) and part.get("type") in _BETA_PARTS:
                part["type"] = _BETA_PARTS[part["type"]]

    # ------------------------------------------------------------------ HTTP upstream, turn by turn

    def _http_client(self, m: ClientMessage, out: Translated) -> None:
        respond = False
        match m:
            case AddMessages():
                self._history += [msg for msg in m.messages if msg.role not in ("system", "developer")]
                system = [msg for msg in m.messages if msg.role in ("system", "developer")]
                self._history += system
                respond = m.respond
            case ToolResults():
                message = Message(
                    role="tool", content=list(m.results), tool_call_id=m.results[0].tool_call_id
                )
                self._history.append(message)
                self._events.append(
                    SessionEvent(
                        kind="tool_result", type="tool_result", after=len(self._turns), message=message
                    )
                )
                respond = m.respond
            case TextInput():
                self._history.append(Message(role="user", content=[TextPart(text=m.text)]))
                respond = True
            case ResponseRequest():
                lost = list(m.unsupported)
                if m.modalities and "audio" in m.modalities:
                    lost.append("response.modalities")
                if m.output_format is not None or m.voice is not None:
                    lost += [f"response.{n}" for n in ("voice", "output_format") if getattr(m, n) is not None]
                if self._lost(out, lost, "an HTTP upstream answers in text only", m.event_id):
                    return
                self._overrides = m
                respond = True
            case AudioChunk() | AudioCommit() | AudioStreamEnd() | ActivityStart():
                self._lost(
                    out, ["input audio"], "an HTTP upstream takes text turns only", m.event_id, kind="media"
                )
                return
            case CancelResponse():
                self._lost(
                    out,
                    ["response.cancel"],
                    "an HTTP turn cannot be cancelled through the bridge",
                    m.event_id,
                    kind="session_frame",
                )
                return
            case _:
                name = type(m).__name__
                self._lost(
                    out,
                    [getattr(m, "name", name)],
                    "no counterpart for an HTTP upstream",
                    m.event_id,
                    kind="session_frame",
                )
                return
        if respond:
            if self._http is not None:
                self._client_fault(
                    out,
                    "a response is already in progress",
                    None,
                    m.event_id,
                    code="conversation_already_has_active_response",
                )
                return
            out.request = self.turn_request()
            self._http = StreamConverter(self.client, protocol=self.upstream)

    def turn_request(self) -> TurnRequest:
        """The HTTP request of the next turn: the whole conversation so far, instructions and tools.

        Raises:
            LocalProtocolError: The upstream is not an HTTP protocol.
        """
        if not self.http:
            raise LocalProtocolError(
                f"{self.upstream} is a realtime upstream: it takes messages, not turn requests"
            )
        c = self.config
        o = self._overrides
        instructions = o.instructions if o is not None and o.instructions is not None else c.instructions
        tools = o.tools if o is not None and o.tools is not None else c.tools
        messages = list(self._history)
        if instructions:
            messages.insert(0, Message(role="system", content=instructions))
        env = Envelope(
            model=self.model,
            stream=True,
            max_tokens=(o.max_output_tokens if o is not None and o.max_output_tokens else None)
            or c.max_output_tokens,
            temperature=(o.temperature if o is not None and o.temperature is not None else c.temperature),
            tools=[FunctionTool(t.name, t.description, t.parameters) for t in tools or []],
            origin=self.client,
        )
        drops: list[Dropped] = []
        conversation = from_canonical(messages, self.upstream, lossy=drops, source=self.client)
        codec = _codec(self.upstream)
        lost: list[Unread] = []
        body = codec.build(conversation, _with_limit(env, codec, model_caps(self.model)), lost)
        log = DropLog(self.upstream, self.client)
        for u in lost:
            log.add("request_field", u.what, where=u.where)
        return TurnRequest(self.upstream, body, messages, env, drops + log.records)

    def upstream_http(self, data: bytes) -> Translated:
        """Feed the bytes of the HTTP upstream's stream for the turn in progress.

        Raises:
            LocalProtocolError: No turn is in progress.
            RemoteProtocolError: The bytes break the upstream protocol.
        """
        conv = self._http
        if conv is None:
            raise LocalProtocolError("no HTTP turn is in progress (send turn_request() first)")
        out = Translated()
        self._lines(conv.feed(data), out)
        return out

    def upstream_http_end(self, *, error: StreamError | None = None) -> Translated:
        """End the HTTP turn in progress (``error``: it failed or was cut); the client gets its end."""
        conv = self._http
        if conv is None:
            raise LocalProtocolError("no HTTP turn is in progress")
        out = Translated()
        cut = StreamError(type="cut", message="the upstream stream ended early")
        data = conv.fail(error) if error is not None else conv.finish(cut=cut)
        self._lines(data, out)
        final = conv.response
        failure = error or (final.error if final is not None and final.status == "failed" else None)
        if self.client == OPENAI_REALTIME and self._response is not None and failure is not None:
            # The client was told a response started: it ends, failed, as a Realtime server ends one.
            rid, items = self._response
            details = {"type": "failed", "error": {"type": failure.type, "message": failure.message or ""}}
            response = {
                "object": "realtime.response",
                "id": rid,
                "status": "failed",
                "status_details": details,
            }
            done = {"type": "response.done", "response": {**response, "output": items}}
            out.to_client.append(self._server_event(done))
            self._response = None
        self._http = None
        self._overrides = None
        if final is not None:
            self._turns.append(final)
            self._history += [m for m in final.messages if m.role in ("assistant", "model")]
            for m in final.messages:
                for part in m.content if isinstance(m.content, list) else ():
                    if isinstance(part, ToolCallPart):
                        self._calls[part.id] = part.name
        self._report(out, conv.lossy)
        return out
