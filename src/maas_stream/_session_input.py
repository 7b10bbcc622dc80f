"""What a realtime upstream is sent for a client's messages, and what the session keeps of them (sans-IO).

:class:`UpstreamInput` is the upstream-facing half of :class:`~maas_stream.SessionBridge` (the
client-facing half is ``_session_output.ClientWriter``). It owns:

* a client message in a realtime upstream's terms (``google-live`` or ``openai-realtime``):
  audio converted to the upstream's format (``_audio``, one converter per client format),
  manual turns (Live ``activityStart`` / ``activityEnd`` ↔ Realtime's commit and
  ``response.create``), a Live function response given the call's name;
* the Live ``setup`` timing: the setup goes out with the first message that is not a
  configuration, and what follows it is held until the upstream's ``setupComplete``
  (:meth:`~UpstreamInput.ready`); a configuration after the setup went out can change nothing;
* whether Live answers by itself already (after tool results or the end of a manual audio
  turn), so that a Realtime client's next plain ``response.create`` is not sent twice;
* what the session keeps of the client's messages: each one sent, in the upstream's terms, but
  never streamed audio (:func:`is_streamed_audio`: it would grow with every second of audio).

It must not decide what the client is sent (refusals go through the ``ClientWriter`` it is
given), hold the session configuration (it is passed in), or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ._audio import AudioConverter
from ._client_model import (
    ActivityStart,
    AddMessages,
    AudioChunk,
    AudioCommit,
    AudioFormat,
    AudioStreamEnd,
    ClientMessage,
    ResponseRequest,
    SessionConfig,
    TextInput,
    ToolResults,
)
from ._drops import DropLog
from ._session_config import live_setup
from ._session_output import json_text
from .protocols._names import GOOGLE_LIVE, OPENAI_REALTIME
from .protocols.google_live import _client as live
from .protocols.openai_realtime import _client as realtime

if TYPE_CHECKING:
    from ._session_config import SampleRates
    from ._session_output import ClientWriter, Translated
    from ._stream_aggregator import StreamAggregator

__all__ = ["UpstreamInput", "is_streamed_audio"]


def is_streamed_audio(message: str | bytes) -> bool:
    """Whether a client message as sent on the wire is streamed audio (kept out of the session)."""
    head = message[:120] if isinstance(message, str) else message[:120].decode("utf-8", "ignore")
    return (
        "input_audio_buffer.append" in head
        or ("realtimeInput" in head and '"audio"' in head)
        or ("realtime_input" in head and '"audio"' in head)
    )


def _is_audio_wire(upstream: str, wire: dict[str, Any]) -> bool:
    """:func:`is_streamed_audio` of a message the bridge wrote for ``upstream`` (not yet text)."""
    kind = wire.get("type") if upstream == OPENAI_REALTIME else next(iter(wire), None)
    return kind == "input_audio_buffer.append" or (
        kind == "realtimeInput" and "audio" in wire.get("realtimeInput", {})
    )


class UpstreamInput:
    """A realtime upstream's side of one session: the client's messages in its terms (see the module doc).

    Args:
        upstream: ``google-live`` or ``openai-realtime``.
        model: The upstream model (a Live ``setup`` names it).
        rates: The PCM16 rates of each side.
        writer: Where refusals go (the session's ``ClientWriter``).
        calls: Call id → function name, shared with the session (a Live function response
            needs the name).
        session: The session's aggregator: each message sent is kept in it (not audio).
    """

    __slots__ = (
        "_activity",
        "_agg",
        "_auto",
        "_calls",
        "_held",
        "_inputs",
        "_out",
        "_ready",
        "_setup",
        "_setup_sent",
        "model",
        "rates",
        "upstream",
    )

    def __init__(
        self,
        upstream: str,
        *,
        model: str,
        rates: SampleRates,
        writer: ClientWriter,
        calls: dict[str, str],
        session: StreamAggregator,
    ) -> None:
        self.upstream = upstream
        self.model = model
        self.rates = rates
        self._out = writer
        self._calls = calls
        self._agg = session
        self._setup_sent = False
        self._setup: dict[str, Any] | None = None
        self._ready = False
        self._held: list[str | bytes] = []
        self._activity = False
        self._auto = False
        """Live answers by itself now (after tool results or the end of an audio turn): the
        Realtime client's next plain ``response.create`` is already served."""
        self._inputs: dict[AudioFormat, AudioConverter] = {}

    # ------------------------------------------------------------------ the Live setup

    def live_setup(self, merged: SessionConfig, lost: list[str]) -> tuple[dict[str, Any], list[str], str]:
        """The Live ``setup`` of a configuration, what it cannot carry, and why (for the refusal).

        Once the setup went out, every field the configuration changes is lost too: Live takes
        its configuration once.
        """
        setup = live_setup(merged, model=self.model, lost=lost)
        if not self._setup_sent:
            return setup, lost, "Google Live has no counterpart"
        old: dict[str, Any] = (self._setup or {}).get("setup", {})
        new: dict[str, Any] = setup["setup"]
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        why = "Google Live takes its configuration once, in setup, when the session starts"
        return setup, [f"setup.{k}" for k in changed] + lost, why

    def configured(self, setup: dict[str, Any]) -> None:
        """The client's configuration was taken: its ``setup`` is the one to send (if none went out)."""
        if not self._setup_sent:
            self._setup = setup

    def ready(self) -> list[str | bytes]:
        """The Live upstream's ``setupComplete`` came: what was held for it, to send now."""
        self._ready = True
        held, self._held = self._held, []
        return held

    def _ensure_setup(self, config: SessionConfig, out: Translated) -> bool:
        """Send the Live setup before the first message that is not a configuration."""
        if self._setup_sent:
            return True
        lost: list[str] = []
        setup = self._setup or live_setup(config, model=self.model, lost=lost)
        if self._out.lost(out, lost, "Google Live has no counterpart", None):
            return False
        self._setup = setup
        self._setup_sent = True
        out.to_upstream.append(json_text(setup))
        self.keep(setup)
        return True

    # ------------------------------------------------------------------ client messages

    def take(self, m: ClientMessage, config: SessionConfig, out: Translated) -> None:
        """Send the upstream a client message (not a configuration), or refuse it in ``out``."""
        if self.upstream == GOOGLE_LIVE:
            self._to_live(m, config, out)
        else:
            self._to_realtime(m, config, out)

    def keep(self, wire: dict[str, Any]) -> None:
        """Keep a message sent upstream in the session (the caller keeps audio out)."""
        self._agg.feed_message(json_text(wire), direction="client")

    def _send(self, out: Translated, wires: list[dict[str, Any]]) -> None:
        for wire in wires:
            text = json_text(wire)
            if self.upstream == GOOGLE_LIVE and not self._ready:
                self._held.append(text)
            else:
                out.to_upstream.append(text)
            if not _is_audio_wire(self.upstream, wire):
                self.keep(wire)

    def _to_live(self, m: ClientMessage, config: SessionConfig, out: Translated) -> None:
        if not self._ensure_setup(config, out):
            return
        manual = config.turn_detection is not None and config.turn_detection.mode == "manual"
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
        drops = DropLog(self.upstream, self._out.client)
        wires += live.encode_client(m, model=self.model, manual_turns=manual, lost=lost, drops=drops)
        lost += [rec.what for rec in drops.records]
        if self._out.lost(out, lost, "Google Live has no counterpart", m.event_id, kind="session_frame"):
            return
        self._send(out, wires)

    def _to_realtime(self, m: ClientMessage, config: SessionConfig, out: Translated) -> None:
        wires: list[dict[str, Any]] = []
        if isinstance(m, AudioChunk):
            target = AudioFormat(rate=self.rates.realtime)
            data = self._convert_in(m.format, target, m.data)
            if data:
                wires += realtime.encode_client(msgspec.structs.replace(m, data=data, format=target))
            self._send(out, wires)
            return
        manual = config.turn_detection is not None and config.turn_detection.mode == "manual"
        if isinstance(m, AudioCommit | AudioStreamEnd):
            tail = self._flush_in()
            if tail:
                wires += realtime.encode_client(
                    AudioChunk(data=tail, format=AudioFormat(rate=self.rates.realtime))
                )
        if isinstance(m, ActivityStart):
            return  # Realtime needs no mark: a manual turn starts with its first audio
        lost: list[str] = []
        drops = DropLog(self.upstream, self._out.client)
        wires += realtime.encode_client(m, lost=lost, drops=drops)
        if isinstance(m, AudioCommit) and manual:
            wires.append({"type": "response.create"})  # Live answers at activityEnd
        lost += [rec.what for rec in drops.records]
        if self._out.lost(out, lost, "OpenAI Realtime has no counterpart", m.event_id, kind="session_frame"):
            return
        self._send(out, wires)

    # ------------------------------------------------------------------ audio input

    def _convert_in(self, source: AudioFormat, target: AudioFormat, data: bytes) -> bytes:
        conv = self._inputs.get(source)
        if conv is None:
            conv = self._inputs[source] = AudioConverter(source, target)
        return conv.feed(data)

    def _flush_in(self) -> bytes:
        return b"".join(conv.flush() for conv in self._inputs.values())
