"""What a realtime session's client is sent: server events in its protocol, errors, refusals (sans-IO).

:class:`ClientWriter` is the client-facing half of :class:`~maas_stream.SessionBridge`. It owns:

* the translation of server events to the client: the lines a session encoder (or an HTTP
  turn's :class:`~maas_stream.StreamConverter`) wrote become client messages, as written on the
  per-delta fast path, otherwise with the audio resampled to the client's format
  (``_audio``), Realtime's beta event names and part types for a beta client, and Realtime
  output transcripts removed for a Live client that did not ask for them;
* what it tracks of the client's view for that: which function calls a Realtime client got in
  which item (:attr:`~ClientWriter.call_items`, :attr:`~ClientWriter.open_calls`);
* the bridge's own server events (ids ``event_maas_bridge_N``), client errors (a Realtime
  ``error`` event; a Live client is closed with 1007) and refusals (:meth:`~ClientWriter.lost`:
  refused, or with ``drop_params`` reported as :class:`~maas_stream.Dropped` records);
* :class:`Translated`, what one message of the session turns into.

It must not decide what the upstream is sent, hold the conversation or the session
configuration (it is passed in), or do IO.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._audio import AudioConverter
from ._client_model import AudioFormat, SessionConfig
from ._drops import DropKind, DropLog, Dropped
from .protocols._names import OPENAI_REALTIME
from .protocols.google_live import _client as live
from .protocols.openai_realtime import _client as realtime

if TYPE_CHECKING:
    from ._session_config import SampleRates
    from ._session_http import TurnRequest

__all__ = ["ClientWriter", "Translated", "close_reason", "json_text"]

_REASON_BYTES: Final = 123
"""A websocket close reason holds at most 123 bytes (RFC 6455 §5.5)."""

_json = msgspec.json.Encoder()

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


def json_text(obj: Any) -> str:
    """``obj`` as a JSON text frame."""
    return str(_json.encode(obj), "utf-8")


def close_reason(text: str) -> str:
    """``text`` cut to fit a websocket close reason."""
    raw = text.encode("utf-8")
    if len(raw) <= _REASON_BYTES:
        return text
    return raw[: _REASON_BYTES - 3].decode("utf-8", "ignore") + "..."


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


class ClientWriter:
    """Write to one session client in its protocol (see the module doc).

    Args:
        client: The client's protocol (``openai-realtime`` or ``google-live``).
        upstream: The upstream's protocol (named in refusals).
        drop_params: Report what cannot be carried instead of refusing it.
        rates: The PCM16 rates of each side.
        beta: The Realtime client speaks the beta event names.
        drops: The session's drop log; every reported record is added to it.
    """

    def __init__(
        self,
        client: str,
        upstream: str,
        *,
        drop_params: bool,
        rates: SampleRates,
        beta: bool,
        drops: DropLog,
    ) -> None:
        self.client = client
        self.upstream = upstream
        self.drop_params = drop_params
        self.rates = rates
        self.beta = beta
        """The Realtime client speaks the beta event names (may be learnt from its first update)."""
        self.drops = drops
        self._ids = itertools.count(1)
        self.call_items: dict[str, str] = {}
        """Call id → the Realtime item id a Realtime client got it in."""
        self.open_calls: set[str] = set()
        """Calls of the response being written to a Realtime client (not finished yet)."""
        self._output: AudioConverter | None = None

    # ------------------------------------------------------------------ refusals and errors

    def client_path(self, name: str) -> str:
        """The client's own name for the canonical field ``name``."""
        if self.client == OPENAI_REALTIME:
            return realtime.client_path(name, beta=self.beta)
        return live.client_path(name)

    def lost(
        self,
        out: Translated,
        lost: list[str],
        why: str,
        event_id: str | None,
        kind: DropKind = "request_field",
    ) -> bool:
        """Refuse what cannot be carried (return ``True``), or with ``drop_params`` report it."""
        paths = list(dict.fromkeys(self.client_path(name) for name in lost))
        if not paths:
            return False
        if self.drop_params:
            log = DropLog(self.upstream, self.client)
            for path in paths:
                log.add(kind, f"{path} ({why})")
            self.report(out, log.records)
            return False
        text = (
            f"{', '.join(paths)}: cannot be carried to the {self.upstream} upstream ({why}); "
            "the bridge refuses it rather than drop it (its operator may set drop_params)"
        )
        self.client_fault(out, text, paths[0], event_id, code="unsupported_by_upstream")
        return True

    def report(self, out: Translated, records: list[Dropped]) -> None:
        """List ``records`` in ``out`` and in the session's drop log."""
        out.dropped.extend(records)
        self.drops.extend(records)

    def client_fault(
        self,
        out: Translated,
        text: str,
        param: str | None,
        event_id: str | None,
        *,
        code: str = "invalid_event",
    ) -> None:
        """Answer a client message the bridge refuses: a Realtime ``error``, or close a Live client."""
        if self.client == OPENAI_REALTIME:
            out.to_client.append(self.error("invalid_request_error", text, param, event_id, code=code))
        else:
            out.close = (1007, close_reason(text))

    def error(self, kind: str, text: str, param: str | None, event_id: str | None, *, code: str) -> str:
        """A Realtime ``error`` server event."""
        error: dict[str, Any] = {"type": kind, "code": code, "message": text, "param": param}
        if event_id is not None:
            error["event_id"] = event_id
        return self.server_event({"type": "error", "error": error})

    def server_event(self, body: dict[str, Any]) -> str:
        """A Realtime server event of the bridge's own, with its own event id."""
        body["event_id"] = f"event_maas_bridge_{next(self._ids)}"
        return json_text(self.beta_names(body) if self.beta else body)

    # ------------------------------------------------------------------ server events

    def lines(self, data: bytes, out: Translated, config: SessionConfig) -> None:
        """Send the client the server messages a session encoder wrote in ``data``."""
        for line in data.splitlines():
            if not line.startswith(_SERVER_LINE):
                continue  # tool results written back as the client's: the client sent them
            body = line[len(_SERVER_LINE) : -1]
            if self._plain(body, config):
                out.to_client.append(body.decode("utf-8"))  # the per-delta fast path: as written
            elif self.client == OPENAI_REALTIME:
                out.to_client.extend(self._realtime_out(msgspec.json.decode(body), config))
            else:
                out.to_client.extend(self._live_out(msgspec.json.decode(body), config))

    def _plain(self, body: bytes, config: SessionConfig) -> bool:
        """Whether an encoded server message goes to the client as it is (nothing to track or convert)."""
        if self.client == OPENAI_REALTIME:
            if self.beta or not body.startswith(_PLAIN_REALTIME):
                return False
            audio = body.startswith(b'{"type":"response.output_audio.')
            return not audio or self._output_format(config) == AudioFormat(rate=self.rates.live_output)
        if self.rates.realtime != self.rates.live_output:
            return False
        asked = config.output_transcription
        return (asked is not None and asked.enabled) or b'"outputTranscription"' not in body

    def _output_format(self, config: SessionConfig) -> AudioFormat:
        return config.output_format or AudioFormat(rate=self.rates.realtime)

    def _track(self, msg: dict[str, Any]) -> None:
        """Follow the calls and the response a Realtime client is told about."""
        kind = msg.get("type")
        item = msg.get("item")
        if (
            kind == "response.output_item.added"
            and isinstance(item, dict)
            and item.get("type") == "function_call"
        ):
            self.call_items[item.get("call_id", "")] = item.get("id", "")
            self.open_calls.add(item.get("call_id", ""))
        elif kind == "response.done":
            self.open_calls.clear()

    def _realtime_out(self, msg: dict[str, Any], config: SessionConfig) -> list[str | bytes]:
        self._track(msg)
        kind = msg.get("type")
        out: list[str | bytes] = []
        target = self._output_format(config)
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
                    out.append(self.server_event(delta))
        out.append(json_text(self.beta_names(msg) if self.beta else msg))
        return out

    def _live_out(self, msg: dict[str, Any], config: SessionConfig) -> list[str | bytes]:
        source = AudioFormat(rate=self.rates.realtime)
        target = AudioFormat(rate=self.rates.live_output)
        content = msg.get("serverContent")
        asked = config.output_transcription
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
                    return [json_text({"serverContent": {"modelTurn": {"parts": [part]}}}), json_text(msg)]
        return [json_text(msg)]

    def beta_names(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A GA server event under its beta name and part types (for a beta Realtime client)."""
        kind = msg.get("type")
        if isinstance(kind, str) and kind in _BETA_NAMES:
            msg["type"] = _BETA_NAMES[kind]
        for holder in (msg.get("part"), msg.get("item")):
            if isinstance(holder, dict):
                _beta_parts(holder)
        response = msg.get("response")
        if isinstance(response, dict):
            for item in response.get("output") or []:
                if isinstance(item, dict):
                    _beta_parts(item)
        return msg


def _beta_parts(obj: dict[str, Any]) -> None:
    if obj.get("type") in _BETA_PARTS:
        obj["type"] = _BETA_PARTS[obj["type"]]
    for part in obj.get("content") or []:
        if isinstance(part, dict) and part.get("type") in _BETA_PARTS:
            part["type"] = _BETA_PARTS[part["type"]]
