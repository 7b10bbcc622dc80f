"""Google Live (BidiGenerateContent) messages → events: what each message of a session is.

Live is a session, not one response, and it is not flattened into plain messages:

* Each **model turn** becomes its own assistant message (message key = the model turn number):
  text, thought text (reasoning), one audio part per turn (``inlineData`` audio concatenated,
  ``outputTranscription`` as its transcript), code parts, and the turn's ``toolCall`` calls
  (arguments as JSON text). A turn ends at ``turnComplete``, at a ``toolCall`` (the model waits
  for the results) or when the client answers with ``toolResponse``; model output after that is
  the next turn. Each turn is one response: a ``ResponseStart`` when it begins and a
  ``ResponseDone`` when it ends (``finish_reason`` ``stop``, which the aggregator turns into
  ``tool_calls`` when the turn holds calls; status ``incomplete`` with provider reason
  ``interrupted`` after a barge-in).
* A client ``toolResponse`` becomes a ``tool`` message with one tool result per function
  response (message key ``("tool", n)``); its content is the ``response`` object as JSON text.
* ``inputTranscription`` becomes a ``user`` message holding an audio part with the transcript.
* A ``toolCallCancellation`` becomes one ``Cancelled(call_id=...)`` per id: the aggregator finds
  the call (in whichever turn it was made) and marks it, and its message, ``incomplete``. The
  message itself is also kept whole in ``Response.unknown_events`` (a session frame the Live
  encoder passes through).
* Every other client message (``setup``, ``clientContent``, ``realtimeInput``) and session
  message (``setupComplete``, ``goAway``, ``sessionResumptionUpdate``, ...) is kept whole as an
  unknown event (client ones as ``client.<name>``), counted, and passed through by the Live
  encoder.
* ``usageMetadata`` is per turn; each report replaces the last (``Response.usage`` is the last
  turn's).

It keeps only framing-level state, because Live's messages carry no keys of their own: the
turn counter and the position of the open turn's current part (the message and part keys it
synthesizes), whether the turn's audio part and the input transcription are open, whether a
response is open (and whether the decoder opened it for session messages), and the session id
and model for ``ResponseStart``. Item state (which calls exist, their status) is the
aggregator's: a cancellation names the call by id.

The direct fold (``_decode``) folds the common messages without events and must leave what
these events leave.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ... import events as ev
from ..._exceptions import RemoteProtocolError
from ..._model import AudioPart, ImagePart, MessageStatus, ReasoningPart, TextPart, ToolResultPart
from .._names import GOOGLE_LIVE as PROTOCOL
from .._session import SessionDecoder
from ._parts import call_part, code_part, result_part, usage_from
from ._wire import LivePart, ServerContent, ServerMessage, frame_decoder, server_decoder

__all__ = ["CLIENT_KEYS", "LiveEvents", "kept_client"]

CLIENT_KEYS: Final[dict[str, str]] = {
    "setup": "setup",
    "clientContent": "clientContent",
    "client_content": "clientContent",
    "realtimeInput": "realtimeInput",
    "realtime_input": "realtimeInput",
    "toolResponse": "toolResponse",
    "tool_response": "toolResponse",
}
"""Client message keys (camelCase and the Python SDK's snake_case) → canonical camelCase name."""

_SESSION_KEYS: Final = ("setupComplete", "toolCallCancellation", "goAway", "sessionResumptionUpdate")


def _results(body: Any) -> list[ToolResultPart]:
    """A ``toolResponse``'s tool results (``functionResponses``, or the SDK's snake_case name)."""
    responses = body.get("functionResponses") if isinstance(body, dict) else None
    if responses is None and isinstance(body, dict):
        responses = body.get("function_responses")
    if not isinstance(responses, list):
        raise RemoteProtocolError("toolResponse without functionResponses")
    results: list[ToolResultPart] = []
    for item in responses:
        result = result_part(item)
        if result is None:
            raise RemoteProtocolError(
                "toolResponse.functionResponses must hold objects whose id and name are strings"
            )
        results.append(result)
    return results


def client_type(key: str, name: str | None) -> str:
    """A client message's pass-through type: ``client.<name>``, its ``CLIENT_KEYS`` name, else its key."""
    return f"client.{name or key}"


def kept_client(raw: dict[str, Any], key: str, name: str | None) -> ev.UnknownEvent:
    """A client message kept whole as its one event (:func:`client_type`)."""
    return ev.UnknownEvent(provider_type=client_type(key, name), raw=raw, passthrough=True)


def _tool_results(raw: Any) -> list[ToolResultPart] | None:
    """A client message's tool results if it is a ``toolResponse`` as ``_client`` reads it; else ``None``."""
    if not isinstance(raw, dict) or not raw or CLIENT_KEYS.get(next(iter(raw))) != "toolResponse":
        return None
    try:
        return _results(next(iter(raw.values())))
    except RemoteProtocolError:
        return None  # the normal way raises it


def _raw(line: bytes | str, whole: bool) -> Any:
    """A server message as plain JSON values, from its recorded line (``whole``) or its text."""
    raw = msgspec.json.decode(line)
    return raw["msg"] if whole else raw


class LiveEvents(SessionDecoder):
    """A Google Live session's messages as events (the module docstring); ``_decode.StreamDecoder`` adds the direct fold."""

    protocol = PROTOCOL
    frame_decoder = frame_decoder

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session: str | None = None
        self._turn = 0
        self._msg_open = False
        self._pos = -1
        self._last = ""
        self._audio = False
        self._interrupted = False
        self._tools = 0
        self._inputs = 0
        self._input_open = False

    def on_message(self, msg: bytes | str, direction: str, decoded: Any = None) -> list[ev.Event]:
        out: list[ev.Event] = []
        if direction == "client":
            self._client(msgspec.json.decode(msg) if decoded is None else decoded, out)
        else:
            self._server_line(server_decoder.decode(msg) if decoded is None else decoded, msg, out, False)
        return out

    def _server_line(
        self, message: ServerMessage, line: bytes | str, out: list[ev.Event], whole: bool = True
    ) -> None:
        """The events of one server message: ``line`` is its recorded line (``whole``) or its text.

        The text is decoded untyped only when the message, or a part of it, is kept whole.
        """
        if not self._started:
            # The session starts: say which protocol this is before any session message.
            self._started = True
            self._ensure_open(out, ours=True)
        content = message.server_content
        if content is not None:
            if content.input_transcription is not None:
                self._input(content.input_transcription.text, bool(content.input_transcription.finished), out)
            turn = content.model_turn
            if turn is not None and turn.parts:
                if not self._msg_open:
                    self._ensure_turn(out)
                for i, part in enumerate(turn.parts):
                    self._part(part, i, line, whole, out)
            transcript = content.output_transcription
            if transcript is not None and transcript.text:
                if not self._msg_open:
                    self._ensure_turn(out)
                if not self._audio:
                    self._start_audio(None, out)
                out.append(ev.AudioDelta(message=self._turn, part="audio", transcript=transcript.text))
            if (
                content.interrupted
                or content.grounding_metadata is not None
                or content.url_context_metadata is not None
            ):
                self._content_extras(content, out)
            if not (
                content.turn_complete
                or message.tool_call
                or message.usage_metadata
                or message.setup_complete is not None
                or message.tool_call_cancellation is not None
                or message.go_away is not None
                or message.session_resumption_update is not None
            ):
                return  # the common case: a piece of a model turn
        self._turn_end(message, content, line, whole, out)

    def _turn_end(
        self,
        message: ServerMessage,
        content: ServerContent | None,
        line: bytes | str,
        whole: bool,
        out: list[ev.Event],
    ) -> None:
        """What a message holds besides model turn content: calls, usage, its end, session keys."""
        session = (
            message.setup_complete is not None
            or message.tool_call_cancellation is not None
            or message.go_away is not None
            or message.session_resumption_update is not None
        )
        if message.tool_call is not None:
            self._tool_call(message.tool_call.function_calls, out)
        if message.tool_call_cancellation is not None:
            self._cancel(message.tool_call_cancellation, out)
        if message.usage_metadata is not None:
            usage = usage_from(message.usage_metadata)
            if usage is not None:
                out.append(ev.UsageUpdate(usage=usage))
        if content is not None and content.turn_complete:
            self._turn_complete(content, out)
        main = content is not None or message.tool_call is not None or message.usage_metadata is not None
        if session or not main:
            self._session_message(_raw(line, whole), out)

    def _session_message(self, raw: Any, out: list[ev.Event]) -> None:
        if not isinstance(raw, dict):
            raise RemoteProtocolError("a Live server message must be a JSON object")
        setup = raw.get("setupComplete")
        if isinstance(setup, dict) and isinstance(setup.get("sessionId"), str):
            self._session = setup["sessionId"]
        key = next((k for k in _SESSION_KEYS if k in raw), None) or next(iter(raw), "empty")
        out.append(ev.UnknownEvent(provider_type=key, raw=raw, passthrough=True))

    def on_finish(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        if self._open and self._ours and not self._msg_open and not self._input_open:
            self._close_response(out)
        return out

    def _response_id(self) -> str | None:
        return self._session

    def _ensure_turn(self, out: list[ev.Event]) -> None:
        self._ensure_open(out, ours=False)
        self._ours = False
        if not self._msg_open:
            self._begin_turn()
            out.append(ev.MessageStart(message=self._turn, role="assistant"))

    def _begin_turn(self) -> None:
        """The decoder's state when a turn's message opens (no part yet)."""
        self._msg_open = True
        self._pos = -1
        self._last = ""
        self._audio = False

    def _end_turn(self, out: list[ev.Event], status: MessageStatus | None = None) -> None:
        if self._msg_open:
            self._msg_open = False
            out.append(ev.MessageDone(message=self._turn, status=status))
            self._turn += 1

    def _content_extras(self, content: ServerContent, out: list[ev.Event]) -> None:
        if content.interrupted:
            self._interrupted = True
        if content.grounding_metadata is not None:
            self._metadata("groundingMetadata", content.grounding_metadata, out)
        if content.url_context_metadata is not None:
            self._metadata("urlContextMetadata", content.url_context_metadata, out)

    def _metadata(self, name: str, raw: Any, out: list[ev.Event]) -> None:
        self._ensure_turn(out)
        out.append(ev.UnknownEvent(provider_type=name, raw=raw, message=self._turn))

    def _input(self, text: str | None, finished: bool, out: list[ev.Event]) -> None:
        key = ("input", self._inputs)
        if not self._input_open and (text or finished):
            self._ensure_open(out, ours=False)
            self._input_open = True
            out.append(ev.MessageStart(message=key, role="user", type="input_transcription"))
            out.append(ev.PartStart(message=key, part=0, value=AudioPart()))
        if text:
            out.append(ev.AudioDelta(message=key, part=0, transcript=text))
        if finished:
            self._end_input(out)

    def _end_input(self, out: list[ev.Event]) -> None:
        if self._input_open:
            self._input_open = False
            out.append(ev.MessageDone(message=("input", self._inputs)))
            self._inputs += 1

    def _start_audio(self, fmt: str | None, out: list[ev.Event]) -> None:
        if not self._audio:
            self._audio = True
            out.append(ev.PartStart(message=self._turn, part="audio", value=AudioPart(format=fmt)))

    def _part(self, part: LivePart, i: int, line: bytes | str, whole: bool, out: list[ev.Event]) -> None:
        turn = self._turn
        text = part.text
        if text is not None:
            if self._last == "text" and not part.thought and part.thought_signature is None:
                if text:  # the common case: more of the open text part
                    out.append(ev.TextDelta(message=turn, part=self._pos, text=text))
            else:
                self._text(part, out)
            return
        blob = part.inline_data
        if blob is not None and (blob.mime_type or "").startswith("audio/"):
            if not self._audio:
                self._start_audio(blob.mime_type, out)
            out.append(ev.AudioDelta(message=turn, part="audio", data=blob.data))
            return
        if part.function_call is not None:
            self._call(part.function_call, out)
            return
        self._pos += 1
        self._last = ""
        if blob is not None:
            value: Any = ImagePart(data=blob.data, media_type=blob.mime_type)
        elif part.executable_code is not None or part.code_execution_result is not None:
            value = code_part(part.executable_code, part.code_execution_result)
        else:
            raw = _raw(line, whole)["serverContent"]["modelTurn"]["parts"][i]
            out.append(ev.UnknownEvent(provider_type="part", raw=raw, message=turn, part=self._pos))
            return
        out += [
            ev.PartStart(message=turn, part=self._pos, value=value),
            ev.PartDone(message=turn, part=self._pos),
        ]

    def _text(self, part: LivePart, out: list[ev.Event]) -> None:
        turn = self._turn
        kind = "thought" if part.thought else "text"
        if self._last != kind:
            self._pos += 1
            self._last = kind
            value: Any = ReasoningPart() if part.thought else TextPart(text="")
            out.append(ev.PartStart(message=turn, part=self._pos, value=value))
        if part.text:
            delta: ev.Event = (
                ev.ReasoningDelta(message=turn, part=self._pos, text=part.text)
                if part.thought
                else ev.TextDelta(message=turn, part=self._pos, text=part.text)
            )
            out.append(delta)
        if part.thought_signature is not None:
            out.append(ev.SignatureDelta(message=turn, part=self._pos, signature=part.thought_signature))
            if part.thought:
                self._last = ""  # a signature closes its thought block; more thought is a new one

    def _turn_complete(self, content: ServerContent, out: list[ev.Event]) -> None:
        interrupted = self._interrupted
        self._interrupted = False
        self._end_turn(out, "incomplete" if interrupted else None)
        self._end_input(out)
        reason = content.turn_complete_reason
        if interrupted:
            self._close_response(
                out, status="incomplete", finish_reason="other", provider_finish_reason="interrupted"
            )
        elif reason:
            self._close_response(out, finish_reason="other", provider_finish_reason=reason)
        else:
            self._close_response(out, finish_reason="stop")

    def _call(self, raw: Any, out: list[ev.Event]) -> None:
        value = call_part(raw)
        if value is None:
            raise RemoteProtocolError("a Live function call must be an object whose id and name are strings")
        self._pos += 1
        self._last = ""
        out += [
            ev.PartStart(message=self._turn, part=self._pos, value=value),
            ev.PartDone(message=self._turn, part=self._pos),
        ]

    def _tool_call(self, calls: list[Any], out: list[ev.Event]) -> None:
        self._ensure_turn(out)
        for call in calls:
            self._call(call, out)
        # The model waits for the results: this turn, and this response, end here ("stop": the
        # aggregator says "tool_calls" for a turn that holds calls).
        self._end_turn(out)
        self._close_response(out, finish_reason="stop")

    def _cancel(self, raw: Any, out: list[ev.Event]) -> None:
        ids = raw.get("ids", []) if isinstance(raw, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise RemoteProtocolError("toolCallCancellation.ids must be a list of strings")
        # The aggregator finds each call by id, in whichever turn it was made.
        out += [ev.Cancelled(call_id=call_id) for call_id in ids]

    def _client(self, raw: Any, out: list[ev.Event]) -> None:
        """A client message's events (``raw``: its JSON values)."""
        if not isinstance(raw, dict) or not raw:
            raise RemoteProtocolError("a Live client message must be a non-empty JSON object")
        key = next(iter(raw))
        name = CLIENT_KEYS.get(key)
        if name == "setup" and isinstance(raw[key], dict):
            model = raw[key].get("model")
            self._model = model if isinstance(model, str) else None
        if not self._started:
            self._started = True
            self._ensure_open(out, ours=True)
        if name == "toolResponse":
            self._tool_response(raw[key], out)
            return
        out.append(kept_client(raw, key, name))

    def _tool_response(self, body: Any, out: list[ev.Event]) -> None:
        results = _results(body)
        ours = not self._open
        self._ensure_open(out, ours=ours)
        self._end_turn(out)
        key = ("tool", self._tools)
        self._tools += 1
        out.append(ev.MessageStart(message=key, role="tool"))
        for i, result in enumerate(results):
            out += [ev.PartStart(message=key, part=i, value=result), ev.PartDone(message=key, part=i)]
        out.append(ev.MessageDone(message=key))
        if ours:
            self._close_response(out)
