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

The module owns the session's state machine (the client ↔ upstream message flow, the
configuration, the relay of realtime upstream messages); its
rules live beside it: ``_session_config`` (configuration ↔ Live ``setup`` / Realtime
``session.update``, voices), ``_session_input`` (what a realtime upstream is sent for the
client's messages: audio conversion, manual turns, the Live ``setup`` timing, what the session
keeps of them), ``_session_output`` (what the client is sent: server events, errors, refusals)
and ``_session_http`` (an HTTP upstream's turns).

It must not do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from . import events as ev
from ._client_model import AudioFormat, ClientMessage, SessionConfig, TurnDetection
from ._drops import DropLog
from ._exceptions import LocalProtocolError, ProtocolError, RemoteProtocolError
from ._model import Session, StreamError, ToolCallPart
from ._registry import get_protocol
from ._session_config import (
    REALTIME_DEFAULT,
    SESSION_PROTOCOLS,
    VOICES,
    SampleRates,
    merge,
    realtime_update,
    session_object,
)
from ._session_http import HttpTurns, TurnRequest
from ._session_input import UpstreamInput, is_streamed_audio
from ._session_output import ClientWriter, Translated, close_reason, json_text
from ._stream_aggregator import StreamAggregator
from .protocols._names import GOOGLE_LIVE, OPENAI_REALTIME
from .protocols.google_live import _client as live
from .protocols.openai_realtime import _client as realtime

if TYPE_CHECKING:
    from ._interfaces import StreamEncoder

__all__ = ["VOICES", "SampleRates", "SessionBridge", "Translated", "TurnRequest"]


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
        keep_passthrough: Keep the session's pass-through messages (session messages such as
            ``session.updated`` or ``setupComplete``, and the client's messages) in
            :attr:`session` as session events. When false they are counted by type
            (``Session.unknown``) only: a relay that needs the responses and the counts (the
            bridge's record) then holds memory for the responses, not for every message.

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
        keep_passthrough: bool = True,
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
        self.http = upstream not in SESSION_PROTOCOLS
        self.same = client == upstream
        """The session passes through (client and upstream speak one protocol): see :meth:`pass_client`."""
        self.drops = DropLog(upstream, client)
        """Every drop of the session so far (what each :class:`Translated` listed)."""
        self.config = REALTIME_DEFAULT if client == OPENAI_REALTIME else SessionConfig()
        if self.http and client == OPENAI_REALTIME:
            self.config = msgspec.structs.replace(
                self.config, modalities=["text"], turn_detection=TurnDetection(mode="manual")
            )
        """The client's session configuration as it stands (canonical)."""
        self._beta = beta
        self._writer: ClientWriter | None = None
        self._input: UpstreamInput | None = None
        """The writer and the input rules, made on first use (a pass-through session needs neither)."""
        self._calls: dict[str, str] = {}
        """Call id → function name (a Live function response needs the name)."""
        self._encoder: StreamEncoder | None = None
        if not self.http and not self.same:
            self._encoder = get_protocol(client).encoder()
        # Only a translated session re-encodes the events; a passed-through one only reads them.
        self._agg = StreamAggregator(
            None if self.http else upstream, emit=self._encoder is not None, keep_passthrough=keep_passthrough
        )
        self._turns: HttpTurns | None = None
        if self.http:  # raises for a protocol without HTTP request bodies
            self._turns = HttpTurns(client, upstream, model=model, writer=self._out, calls=self._calls)
        self._reading = True
        self._awaiting_setup = False

    @property
    def _out(self) -> ClientWriter:
        """What the client is sent (made on first use)."""
        return self._writer or self._translating()[0]

    @property
    def _in(self) -> UpstreamInput:
        """What a realtime upstream is sent for the client's messages (made on first use)."""
        return self._input or self._translating()[1]

    def _translating(self) -> tuple[ClientWriter, UpstreamInput]:
        """Make the writer and the input rules (together): a pass-through session needs neither."""
        writer = self._writer = ClientWriter(
            self.client,
            self.upstream,
            drop_params=self.drop_params,
            rates=self.rates,
            beta=self._beta,
            drops=self.drops,
        )
        self._input = UpstreamInput(
            self.upstream,
            model=self.model,
            rates=self.rates,
            writer=writer,
            calls=self._calls,
            session=self._agg,
        )
        return writer, self._input

    # ------------------------------------------------------------------ public

    @property
    def beta(self) -> bool:
        """The Realtime client speaks the beta event names (given, or learnt from its first update)."""
        return self._beta if self._writer is None else self._writer.beta

    @beta.setter
    def beta(self, value: bool) -> None:
        self._beta = value
        if self._writer is not None:
            self._writer.beta = value

    @property
    def session(self) -> Session:
        """The canonical session so far (responses and session events), for logs and metrics."""
        if self._turns is not None:
            return self._turns.session()
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
            out.to_upstream.append(self.pass_client(message))
            return out
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
            self._out.client_fault(out, str(exc), None, None)
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
            out.to_client.append(self._out.error("server_error", text, None, None, code="upstream_closed"))
        if not self.http:
            self._agg.fail(StreamError(type="upstream_closed", message=text, code=str(code)))
        out.close = (code if code in (1000, 1001) else 1011, close_reason(reason or text))
        return out

    # ------------------------------------------------------------------ same protocol

    def pass_client(self, message: str | bytes) -> str | bytes:
        """The same protocol's client message to send upstream (read for the :attr:`session`).

        The relay's fast path for a same-protocol session (:attr:`same`): what
        ``from_client(message).to_upstream`` holds, without the :class:`Translated`. The message
        passes untouched, but for a Live ``setup``, which names the route's model.

        Raises:
            LocalProtocolError: The session is not a same-protocol one.
        """
        if not self.same:
            raise LocalProtocolError(
                f"a {self.client} client of {self.upstream} is translated: use from_client()"
            )
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
                forward = json_text(raw)
        if not is_streamed_audio(message):
            self._read(forward, "client")
        return forward

    def pass_upstream(self, message: str | bytes) -> None:
        """Read the same protocol's upstream message, relayed to the client untouched (for the :attr:`session`).

        The relay's fast path for a same-protocol session (:attr:`same`): ``from_upstream``
        would send ``message`` to the client and nothing else.

        Raises:
            LocalProtocolError: The session is not a same-protocol one.
        """
        if not self.same:
            raise LocalProtocolError(
                f"a {self.client} client of {self.upstream} is translated: use from_upstream()"
            )
        if self._reading:  # (_read, inlined: once per streamed message)
            try:
                self._agg.feed_message(message)
            except ProtocolError as exc:
                self._unreadable(exc, "server")

    def _read(self, message: str | bytes, direction: str) -> None:
        """Read a passed-through message for the Session; one it cannot read ends the reading.

        The same protocol passes through untouched: its upstream judges the client's messages.
        """
        if not self._reading:
            return
        try:
            self._agg.feed_message(message, direction=direction)
        except ProtocolError as exc:
            self._unreadable(exc, direction)

    def _unreadable(self, exc: ProtocolError, direction: str) -> None:
        """A ``direction`` message the Session cannot read (``exc``): the reading ends, and says so in the drops."""
        self._reading = False
        log = DropLog(self.client, self.upstream)
        log.add("unknown", f"the rest of the Session (a {direction} message it cannot read: {exc.message})")
        self.drops.extend(log.records)

    def _session_event(self, kind: str) -> str:
        """A Realtime ``session.created`` / ``session.updated`` of the configuration as it stands."""
        session = session_object(self.config, model=self.model, beta=self.beta)
        return self._out.server_event({"type": kind, "session": session})

    # ------------------------------------------------------------------ client → upstream

    def _from_client(self, m: ClientMessage, out: Translated) -> None:
        if isinstance(m, SessionConfig):
            self._config(m, out)
        elif self.http:
            self._http_turns().take(m, self.config, out)
        else:
            self._in.take(m, self.config, out)

    def _config(self, m: SessionConfig, out: Translated) -> None:
        merged = merge(self.config, m)
        lost = list(m.unsupported)
        if self.http:
            # A Live setup that names no modality asks for audio (Live's default).
            modalities = merged.modalities or (["audio"] if self.client == GOOGLE_LIVE else ["text"])
            if "audio" in modalities:
                lost.append("modalities")
            if self._out.lost(out, lost, "an HTTP upstream answers in text only", m.event_id):
                return
            self.config = msgspec.structs.replace(merged, modalities=["text"])
            self._config_done(out)
            return
        if self.upstream == GOOGLE_LIVE:
            self._live_config(m, merged, lost, out)
            return
        # A Live client's setup for a Realtime upstream.
        wire = realtime_update(merged, rate=self.rates.realtime, lost=lost)
        if self._out.lost(out, lost, "OpenAI Realtime has no counterpart", m.event_id):
            return
        self.config = merged
        self._awaiting_setup = True
        out.to_upstream.append(json_text(wire))
        self._in.keep(wire)

    def _live_config(self, m: SessionConfig, merged: SessionConfig, lost: list[str], out: Translated) -> None:
        setup, lost, why = self._in.live_setup(merged, lost)
        if self._out.lost(out, lost, why, m.event_id):
            return
        self.config = merged
        self._in.configured(setup)
        self._config_done(out)

    def _config_done(self, out: Translated) -> None:
        if self.client == OPENAI_REALTIME:
            out.to_client.append(self._session_event("session.updated"))
        else:
            out.to_client.append(json_text({"setupComplete": {}}))

    # ------------------------------------------------------------------ upstream → client

    def _from_live(self, raw: Any, message: str | bytes, out: Translated) -> None:
        if isinstance(raw, dict) and "setupComplete" in raw:
            out.to_upstream.extend(self._in.ready())
        self._relay(message, out)
        cancel = raw.get("toolCallCancellation") if isinstance(raw, dict) else None
        ids = cancel.get("ids") if isinstance(cancel, dict) else None
        for call_id in ids if isinstance(ids, list) else ():
            item = self._out.call_items.get(call_id) if isinstance(call_id, str) else None
            if self.client == OPENAI_REALTIME and item is not None and call_id not in self._out.open_calls:
                # A call the client already got in a finished response: Realtime's counterpart of
                # Live's toolCallCancellation is the removal of the call's item.
                out.to_client.append(
                    self._out.server_event({"type": "conversation.item.deleted", "item_id": item})
                )

    def _from_realtime(self, raw: Any, message: str | bytes, out: Translated) -> None:
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind == "session.updated" and self._awaiting_setup:
            self._awaiting_setup = False
            out.to_client.append(json_text({"setupComplete": {}}))
        elif kind == "error" and self._awaiting_setup:
            self._agg.feed_message(message, direction="server")
            error = raw.get("error") if isinstance(raw.get("error"), dict) else {}
            text = f"the {self.upstream} upstream refused the session: {error.get('message') or error.get('code')}"
            out.close = (1011, close_reason(text))
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
                    self._out.report(out, log.records)
                continue  # session frames: kept in the Session, no loss of a response
            if isinstance(e, ev.PartStart) and isinstance(e.value, ToolCallPart):
                self._calls[e.value.id] = e.value.name
            chunks.append(encoder.encode(e))
        self._out.lines(b"".join(chunks), out, self.config)
        if not drops or sum(drops.by_kind().values()) == total:
            return  # the common case, per message: nothing new dropped
        after = drops.records
        new = [
            msgspec.structs.replace(r, count=r.count - before.get((r.kind, r.what), 0))
            for r in after
            if r.count > before.get((r.kind, r.what), 0)
        ]
        if new:
            self._out.report(out, new)

    # ------------------------------------------------------------------ HTTP upstream, turn by turn

    def turn_request(self) -> TurnRequest:
        """The HTTP request of the next turn: the whole conversation so far, instructions and tools.

        Raises:
            LocalProtocolError: The upstream is not an HTTP protocol.
        """
        return self._http_turns().request(self.config)

    def upstream_http(self, data: bytes) -> Translated:
        """Feed the bytes of the HTTP upstream's stream for the turn in progress.

        Raises:
            LocalProtocolError: No turn is in progress, or the upstream is not an HTTP protocol.
            RemoteProtocolError: The bytes break the upstream protocol.
        """
        return self._http_turns().feed(data, self.config)

    def upstream_http_end(self, *, error: StreamError | None = None) -> Translated:
        """End the HTTP turn in progress (``error``: it failed or was cut); the client gets its end.

        Raises:
            LocalProtocolError: No turn is in progress, or the upstream is not an HTTP protocol.
        """
        return self._http_turns().end(self.config, error=error)

    def _http_turns(self) -> HttpTurns:
        if self._turns is None:
            raise LocalProtocolError(
                f"{self.upstream} is a realtime upstream: it takes messages, not turn requests"
            )
        return self._turns
