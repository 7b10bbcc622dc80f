"""Google Live (BidiGenerateContent) decoder: websocket messages (JSON lines) → events.

Live is a session, not one response, and it is not flattened into plain messages:

* Each **model turn** becomes its own assistant message (message key = the model turn number):
  text, thought text (reasoning), one audio part per turn (``inlineData`` audio concatenated,
  ``outputTranscription`` as its transcript), code parts, and the turn's ``toolCall`` calls
  (arguments as JSON text). A turn ends at ``turnComplete``, at a ``toolCall`` (the model waits
  for the results) or when the client answers with ``toolResponse``; model output after that is
  the next turn. Each turn is one response: a ``ResponseStart`` when it begins and a
  ``ResponseDone`` when it ends (``finish_reason`` ``tool_calls`` after a ``toolCall``;
  status ``incomplete`` with provider reason ``interrupted`` after a barge-in).
* A client ``toolResponse`` becomes a ``tool`` message with one tool result per function
  response (message key ``("tool", n)``); its content is the ``response`` object as JSON text.
* ``inputTranscription`` becomes a ``user`` message holding an audio part with the transcript.
* A ``toolCallCancellation`` marks each cancelled call ``status: "incomplete"`` (its final
  value) and the message itself is kept in ``Response.unknown_events`` as the explicit marker.
* Every other client message (``setup``, ``clientContent``, ``realtimeInput``) and session
  message (``setupComplete``, ``goAway``, ``sessionResumptionUpdate``, ...) is kept whole as an
  unknown event (client ones as ``client.<name>``), counted, and passed through by the Live
  encoder.
* ``usageMetadata`` is per turn; each report replaces the last (``Response.usage`` is the last
  turn's).

It keeps only session-local state: the turn counter, which parts of the open turn exist, the
ids of calls already made (for cancellations) and whether a response is open.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._exceptions import RemoteProtocolError
from ..._model import (
    AudioPart,
    CodePart,
    ImagePart,
    MessageStatus,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from ...events import (
    AudioDelta,
    Event,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import JSONLinesStreamDecoder, Msg, WrappedLine, _State, raw_message
from ._wire import LivePart, ServerContent, ServerMessage, frame_decoder, server_decoder

__all__ = ["CLIENT_KEYS", "StreamDecoder", "usage_from"]

from .._names import GOOGLE_LIVE as PROTOCOL

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
_json = msgspec.json.Encoder()


def usage_from(raw: Any) -> Usage | None:
    """Map a Live/Gemini ``usageMetadata`` object to canonical usage."""
    if not isinstance(raw, dict):
        return None

    def num(name: str) -> int | None:
        value = raw.get(name)
        return value if type(value) is int else None

    return Usage(
        input_tokens=num("promptTokenCount"),
        output_tokens=num("responseTokenCount")
        if "responseTokenCount" in raw
        else num("candidatesTokenCount"),
        total_tokens=num("totalTokenCount"),
        reasoning_tokens=num("thoughtsTokenCount"),
        cache_read_tokens=num("cachedContentTokenCount"),
        raw=raw,
    )


class StreamDecoder(JSONLinesStreamDecoder):
    """Decode a Google Live session recorded as ``{"dir", "msg"}`` JSON lines (or fed live)."""

    protocol = PROTOCOL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model: str | None = None
        self._session: str | None = None
        self._started = False
        self._open = False
        self._ours = False
        self._turn = 0
        self._msg_open = False
        self._pos = -1
        self._last = ""
        self._audio = False
        self._interrupted = False
        self._calls: dict[str, tuple[int, Any, ToolCallPart]] = {}
        self._tools = 0
        self._inputs = 0
        self._input_open = False

    # ------------------------------------------------------------------ entry

    def _line(self, line: bytes) -> list[Event]:
        # Fast path (the hot one): a server message line decoded typed in one pass, envelope
        # included. Anything else (client lines, odd frames) takes the base path.
        try:
            frame = frame_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return super()._line(line)
        if frame.dir != "server" or frame.msg is None:
            return super()._line(line)
        self._frames += 1
        try:
            return self._server(frame.msg, WrappedLine(line))
        except RemoteProtocolError as exc:
            self._state = _State.ERROR
            exc.protocol = exc.protocol or self.protocol
            exc.frame = exc.frame or self._frames
            raise

    def on_message(self, msg: bytes | str, direction: str) -> list[Event]:
        if direction == "client":
            out: list[Event] = []
            self._client(msg, out)
            return out
        return self._server(server_decoder.decode(msg), msg)

    def _server(self, message: ServerMessage, msg: Msg) -> list[Event]:
        out: list[Event] = []
        if not self._started:
            # The session starts: say which protocol this is before any session message.
            self._started = True
            self._ensure_open(out, ours=True)
        content = message.server_content
        session = (
            message.setup_complete is not None
            or message.tool_call_cancellation is not None
            or message.go_away is not None
            or message.session_resumption_update is not None
        )
        if content is not None:
            self._content(content, msg, out)
            if not (content.turn_complete or session or message.tool_call or message.usage_metadata):
                return out  # the common case: a piece of a model turn
        if message.tool_call is not None:
            self._tool_call(message.tool_call.function_calls, out)
        if message.tool_call_cancellation is not None:
            self._cancel(message.tool_call_cancellation, out)
        if message.usage_metadata is not None:
            usage = usage_from(message.usage_metadata)
            if usage is not None:
                out.append(UsageUpdate(usage=usage))
        if content is not None and content.turn_complete:
            self._turn_complete(content, out)
        main = content is not None or message.tool_call is not None or message.usage_metadata is not None
        if session or not main:
            self._session_message(msg, out)
        return out

    def _session_message(self, msg: Msg, out: list[Event]) -> None:
        raw = raw_message(msg)
        if not isinstance(raw, dict):
            raise RemoteProtocolError("a Live server message must be a JSON object")
        setup = raw.get("setupComplete")
        if isinstance(setup, dict) and isinstance(setup.get("sessionId"), str):
            self._session = setup["sessionId"]
        key = next((k for k in _SESSION_KEYS if k in raw), None) or next(iter(raw), "empty")
        out.append(UnknownEvent(provider_type=key, raw=raw, passthrough=True))

    def on_finish(self) -> list[Event]:
        out: list[Event] = []
        if self._open and self._ours and not self._msg_open and not self._input_open:
            self._close_response(out)
        return out

    # ------------------------------------------------------------------ responses and turns

    def _ensure_open(self, out: list[Event], *, ours: bool = False) -> None:
        if self._open:
            return
        self._open = True
        self._ours = ours
        out.append(ResponseStart(protocol=PROTOCOL, id=self._session, model=self._model))

    def _close_response(self, out: list[Event], **done: Any) -> None:
        if self._open:
            self._open = False
            self._ours = False
            out.append(ResponseDone(**done))

    def _ensure_turn(self, out: list[Event]) -> None:
        self._ensure_open(out)
        self._ours = False
        if not self._msg_open:
            self._msg_open = True
            self._pos = -1
            self._last = ""
            self._audio = False
            out.append(MessageStart(message=self._turn, role="assistant"))

    def _end_turn(self, out: list[Event], status: MessageStatus | None = None) -> None:
        if self._msg_open:
            self._msg_open = False
            out.append(MessageDone(message=self._turn, status=status))
            self._turn += 1

    # ------------------------------------------------------------------ server content

    def _content(self, content: ServerContent, msg: Msg, out: list[Event]) -> None:
        if content.input_transcription is not None:
            self._input(content.input_transcription.text, bool(content.input_transcription.finished), out)
        turn = content.model_turn
        if turn is not None and turn.parts:
            self._ensure_turn(out)
            for i, part in enumerate(turn.parts):
                self._part(part, i, msg, out)
        transcript = content.output_transcription
        if transcript is not None and transcript.text:
            self._ensure_turn(out)
            self._start_audio(None, out)
            out.append(AudioDelta(message=self._turn, part="audio", transcript=transcript.text))
        if content.interrupted:
            self._interrupted = True
        if content.grounding_metadata is not None:
            self._ensure_turn(out)
            out.append(
                UnknownEvent(
                    provider_type="groundingMetadata", raw=content.grounding_metadata, message=self._turn
                )
            )
        if content.url_context_metadata is not None:
            self._ensure_turn(out)
            raw = content.url_context_metadata
            out.append(UnknownEvent(provider_type="urlContextMetadata", raw=raw, message=self._turn))

    def _input(self, text: str | None, finished: bool, out: list[Event]) -> None:
        key = ("input", self._inputs)
        if not self._input_open and (text or finished):
            self._ensure_open(out)
            self._input_open = True
            out.append(MessageStart(message=key, role="user", type="input_transcription"))
            out.append(PartStart(message=key, part=0, value=AudioPart()))
        if text:
            out.append(AudioDelta(message=key, part=0, transcript=text))
        if finished:
            self._end_input(out)

    def _end_input(self, out: list[Event]) -> None:
        if self._input_open:
            self._input_open = False
            out.append(MessageDone(message=("input", self._inputs)))
            self._inputs += 1

    def _start_audio(self, fmt: str | None, out: list[Event]) -> None:
        if not self._audio:
            self._audio = True
            out.append(PartStart(message=self._turn, part="audio", value=AudioPart(format=fmt)))

    def _part(self, part: LivePart, i: int, msg: Msg, out: list[Event]) -> None:
        turn = self._turn
        if part.text is not None:
            kind = "thought" if part.thought else "text"
            if self._last != kind:
                self._pos += 1
                self._last = kind
                value: Any = ReasoningPart() if part.thought else TextPart(text="")
                out.append(PartStart(message=turn, part=self._pos, value=value))
            if part.text:
                delta: Event = (
                    ReasoningDelta(message=turn, part=self._pos, text=part.text)
                    if part.thought
                    else TextDelta(message=turn, part=self._pos, text=part.text)
                )
                out.append(delta)
            if part.thought_signature is not None:
                out.append(SignatureDelta(message=turn, part=self._pos, signature=part.thought_signature))
                if part.thought:
                    self._last = ""  # a signature closes its thought block; more thought is a new one
            return
        blob = part.inline_data
        if blob is not None and (blob.mime_type or "").startswith("audio/"):
            self._start_audio(blob.mime_type, out)
            out.append(AudioDelta(message=turn, part="audio", data=blob.data))
            return
        self._pos += 1
        self._last = ""
        if blob is not None:
            image = ImagePart(data=blob.data, media_type=blob.mime_type)
            out += [
                PartStart(message=turn, part=self._pos, value=image),
                PartDone(message=turn, part=self._pos),
            ]
        elif part.executable_code is not None or part.code_execution_result is not None:
            code = part.executable_code or {}
            result = part.code_execution_result or {}
            value = CodePart(
                language=_str(code.get("language")),
                code=_str(code.get("code")),
                outcome=_str(result.get("outcome")),
                output=_str(result.get("output")),
            )
            out += [
                PartStart(message=turn, part=self._pos, value=value),
                PartDone(message=turn, part=self._pos),
            ]
        elif part.function_call is not None:
            self._call(part.function_call, out)
        else:
            raw = raw_message(msg)["serverContent"]["modelTurn"]["parts"][i]
            out.append(UnknownEvent(provider_type="part", raw=raw, message=turn, part=self._pos))

    def _turn_complete(self, content: ServerContent, out: list[Event]) -> None:
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

    # ------------------------------------------------------------------ tools

    def _call(self, call: dict[str, Any], out: list[Event]) -> None:
        call_id = str(call.get("id") or "")
        args = call.get("args")
        value = ToolCallPart(
            id=call_id,
            name=str(call.get("name") or ""),
            arguments=_json.encode(args).decode() if args is not None else "{}",
        )
        key = ("call", call_id or len(self._calls))
        self._calls[call_id] = (self._turn, key, value)
        out += [PartStart(message=self._turn, part=key, value=value), PartDone(message=self._turn, part=key)]

    def _tool_call(self, calls: list[dict[str, Any]], out: list[Event]) -> None:
        self._ensure_turn(out)
        for call in calls:
            if not isinstance(call, dict):
                raise RemoteProtocolError("toolCall.functionCalls holds a non-object")
            self._call(call, out)
        # The model waits for the results: this turn, and this response, end here.
        self._end_turn(out)
        self._close_response(out, finish_reason="tool_calls")

    def _cancel(self, raw: Any, out: list[Event]) -> None:
        ids = raw.get("ids") if isinstance(raw, dict) else None
        found = [self._calls[i] for i in ids or () if isinstance(i, str) and i in self._calls]
        if not found:
            return
        ours = not self._open
        self._ensure_open(out, ours=ours)
        for turn, key, value in found:
            cancelled = msgspec.structs.replace(value, status="incomplete")
            out.append(PartDone(message=turn, part=key, value=cancelled))
        if ours:
            self._close_response(out)

    # ------------------------------------------------------------------ client messages

    def _client(self, msg: bytes | str, out: list[Event]) -> None:
        raw = msgspec.json.decode(msg)
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
        out.append(UnknownEvent(provider_type=f"client.{name or key}", raw=raw, passthrough=True))

    def _tool_response(self, body: Any, out: list[Event]) -> None:
        responses = body.get("functionResponses") if isinstance(body, dict) else None
        if responses is None and isinstance(body, dict):
            responses = body.get("function_responses")
        if not isinstance(responses, list):
            raise RemoteProtocolError("toolResponse without functionResponses")
        ours = not self._open
        self._ensure_open(out, ours=ours)
        self._end_turn(out)
        key = ("tool", self._tools)
        self._tools += 1
        out.append(MessageStart(message=key, role="tool"))
        for i, item in enumerate(responses):
            if not isinstance(item, dict):
                raise RemoteProtocolError("toolResponse.functionResponses holds a non-object")
            result = ToolResultPart(
                tool_call_id=str(item.get("id") or ""),
                content=_json.encode(item.get("response")).decode(),
                name=_str(item.get("name")),
            )
            out += [PartStart(message=key, part=i, value=result), PartDone(message=key, part=i)]
        out.append(MessageDone(message=key))
        if ours:
            self._close_response(out)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
