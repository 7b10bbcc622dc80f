"""Google Live encoder: canonical events → Live server messages as ``{"dir", "msg"}`` JSON lines.

Text, thought text, audio data and transcripts go out as they arrive (``serverContent`` with a
``modelTurn`` part, ``outputTranscription`` or ``inputTranscription``). Function calls are held
until their message ends (or other output follows) and sent together in one ``toolCall``, the
way Live sends parallel calls. A response that ends for tool calls ends there (Live sends no
``turnComplete`` before the results); any other end sends ``generationComplete`` and
``turnComplete`` (with the last ``usageMetadata``), or ``interrupted`` then ``turnComplete`` for an
interrupted turn. Tool results (``tool`` messages) are written as the client's
``toolResponse`` (``dir: "client"``), so a recording keeps both sides; Live session and client
messages kept by the Live decoder pass through unchanged.

Dropped (listed in :attr:`StreamEncoder.lossy`): server and MCP tool calls, signatures from
non-Google sources, encrypted reasoning, refusals, citations, files, in-band errors (Live has
none), other user input, and unknown frames of other protocols.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec

from ..._model import (
    AudioPart,
    CodePart,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    Usage,
)
from ...events import (
    AnnotationAdded,
    ArgumentsDelta,
    AudioDelta,
    Event,
    LogprobsDelta,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    RefusalDelta,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    StreamErrorEvent,
    SummaryDelta,
    TextDelta,
    UnknownEvent,
    UsageUpdate,
)
from .._base import EventEncoder

__all__ = ["DEFAULT_AUDIO_MIME", "StreamEncoder"]

from .._names import GOOGLE_LIVE as PROTOCOL

DEFAULT_AUDIO_MIME: Final = "audio/pcm;rate=24000"
"""Live's output audio format (24 kHz 16-bit PCM), used when the source did not say."""
SIGNATURE_SOURCES: Final = frozenset({"google-interactions", "gemini", "google-live"})

_json = msgspec.json.Encoder()
_SERVER: Final = b'{"dir":"server","msg":'
_CLIENT: Final = b'{"dir":"client","msg":'


def _line(msg: Any, client: bool = False) -> bytes:
    return (_CLIENT if client else _SERVER) + _json.encode(msg) + b"}\n"


def _turn(part: dict[str, Any]) -> bytes:
    return _line({"serverContent": {"modelTurn": {"parts": [part]}}})


class StreamEncoder(EventEncoder):
    """Encode canonical events as a Google Live session (server messages, JSON lines).

    Args:
        audio_mime: The ``mimeType`` of audio whose source gave no format.
    """

    _ROUTES: ClassVar[dict[type[Any], str]] = {ArgumentsDelta: "_on_nothing"}
    protocol: ClassVar[str] = PROTOCOL

    def __init__(self, *, audio_mime: str = DEFAULT_AUDIO_MIME) -> None:
        self.audio_mime = audio_mime
        self.lossy: list[str] = []
        """What the target protocol could not carry and was dropped, one line each."""
        self._source = ""
        self._ended = False
        self._kinds: dict[tuple[Any, Any], str] = {}
        self._formats: dict[tuple[Any, Any], str] = {}
        self._roles: dict[Any, str] = {}
        self._calls: list[dict[str, Any]] = []
        self._results: dict[Any, list[dict[str, Any]]] = {}
        self._usage: Usage | None = None
        self._active = False
        """Whether model output went out in the current response (else no turn to complete)."""
        self._after_call = False
        """Whether model output went out after the last ``toolCall``."""

    def encode(self, event: Event) -> bytes:
        """Encode one canonical event; return the JSON lines it completes (maybe ``b""``)."""
        if self._ended:
            return b""
        result: bytes = self._route(event)
        return result

    def finish(self) -> bytes:
        """End the output; complete calls still held are sent (a cut source is not completed)."""
        self._ended = True
        return self._flush()

    # ------------------------------------------------------------------ helpers

    def _lose(self, what: str) -> None:
        if what not in self.lossy:
            self.lossy.append(what)

    def _flush(self) -> bytes:
        if not self._calls:
            return b""
        self._active = True
        self._after_call = False
        calls = self._calls
        self._calls = []
        return _line({"toolCall": {"functionCalls": calls}})

    def _mt(self, part: dict[str, Any]) -> bytes:
        self._active = self._after_call = True
        return _turn(part)

    def _ml(self, msg: dict[str, Any]) -> bytes:
        self._active = self._after_call = True
        return _line(msg)

    def _kind(self, message: Any, part: Any) -> str | None:
        return self._kinds.get((message, part))

    # ------------------------------------------------------------------ handlers

    def _on_response_start(self, ev: ResponseStart) -> bytes:
        self._source = ev.protocol
        return b""

    def _on_message_start(self, ev: MessageStart) -> bytes:
        self._roles[ev.message] = ev.role
        if ev.role == "user" and ev.type != "input_transcription":
            self._lose("user input messages are not Live server messages; dropped")
        elif ev.role in ("system", "developer"):
            self._lose("system messages are not Live server messages; dropped")
        return b""

    def _on_part_start(self, ev: PartStart) -> bytes:
        key = (ev.message, ev.part)
        role = self._roles.get(ev.message, "assistant")
        value = ev.value
        if role not in ("assistant", "model"):
            return self._input_part(key, role, value)
        out = b""
        if isinstance(value, ToolCallPart):
            if value.kind in ("function", "custom"):
                self._kinds[key] = "call"
            else:
                self._kinds[key] = "skip"
                self._lose(f"{value.kind} tool call {value.name!r} has no Live form; dropped")
            return out
        out = self._flush()
        if isinstance(value, TextPart):
            self._kinds[key] = "text"
            if value.text:
                out += self._mt({"text": value.text})
        elif isinstance(value, ReasoningPart):
            self._kinds[key] = "thought"
            if value.encrypted_content or value.data:
                self._lose("encrypted or redacted reasoning has no Live form; dropped")
            for text in value.summary or ([value.text] if value.text else []):
                out += self._mt({"text": text, "thought": True})
        elif isinstance(value, AudioPart):
            self._kinds[key] = "audio"
            self._formats[key] = value.format if value.format and "/" in value.format else self.audio_mime
            if value.data:
                out += self._mt({"inlineData": {"mimeType": self._formats[key], "data": value.data}})
            if value.transcript:
                out += self._ml({"serverContent": {"outputTranscription": {"text": value.transcript}}})
        elif isinstance(value, ImagePart | CodePart | UnknownPart):
            self._kinds[key] = "whole"
        else:
            self._kinds[key] = "skip"
            self._lose(f"a {value.__struct_config__.tag} part has no Live form; dropped")
        return out

    def _input_part(self, key: tuple[Any, Any], role: str, value: Any) -> bytes:
        if role == "tool":
            self._kinds[key] = "result" if isinstance(value, ToolResultPart) else "skip"
        elif role == "user" and isinstance(value, AudioPart):
            self._kinds[key] = "input"
            if value.transcript:
                return _line({"serverContent": {"inputTranscription": {"text": value.transcript}}})
        else:
            self._kinds[key] = "skip"
        return b""

    def _on_text(self, ev: TextDelta) -> bytes:
        if self._kind(ev.message, ev.part) != "text":
            return b""
        return self._flush() + self._mt({"text": ev.text})

    def _on_reasoning(self, ev: ReasoningDelta) -> bytes:
        if self._kind(ev.message, ev.part) != "thought":
            return b""
        return self._flush() + self._mt({"text": ev.text, "thought": True})

    def _on_summary(self, ev: SummaryDelta) -> bytes:
        if self._kind(ev.message, ev.part) != "thought" or not ev.text:
            return b""
        return self._flush() + self._mt({"text": ev.text, "thought": True})

    def _on_signature(self, ev: SignatureDelta) -> bytes:
        kind = self._kind(ev.message, ev.part)
        if kind not in ("text", "thought"):
            if kind is not None:
                self._lose("signatures outside text and thought parts have no Live form; dropped")
            return b""
        if self._source not in SIGNATURE_SOURCES:
            self._lose(f"signatures from {self._source or 'another protocol'} dropped (not valid for Gemini)")
            return b""
        part: dict[str, Any] = {"text": "", "thoughtSignature": ev.signature}
        if kind == "thought":
            part["thought"] = True
        return self._flush() + self._mt(part)

    def _on_audio(self, ev: AudioDelta) -> bytes:
        key = (ev.message, ev.part)
        kind = self._kinds.get(key)
        out = b""
        if kind == "input":
            if ev.transcript:
                out += _line({"serverContent": {"inputTranscription": {"text": ev.transcript}}})
            return out
        if kind != "audio":
            return b""
        out = self._flush()
        if ev.data:
            out += self._mt(
                {"inlineData": {"mimeType": self._formats.get(key, self.audio_mime), "data": ev.data}}
            )
        if ev.transcript:
            out += self._ml({"serverContent": {"outputTranscription": {"text": ev.transcript}}})
        return out

    def _on_refusal(self, ev: RefusalDelta) -> bytes:
        self._lose("refusal text has no Live form; dropped")
        return b""

    def _on_annotation(self, ev: AnnotationAdded) -> bytes:
        self._lose("citations have no Live form; dropped")
        return b""

    def _on_logprobs(self, ev: LogprobsDelta) -> bytes:
        self._lose("log-probabilities have no Live form; dropped")
        return b""

    def _on_nothing(self, ev: Event) -> bytes:
        return b""

    def _on_part_done(self, ev: PartDone) -> bytes:
        key = (ev.message, ev.part)
        kind = self._kinds.get(key)
        value = ev.value
        if kind == "call" and isinstance(value, ToolCallPart):
            if value.status == "incomplete":
                # A cut call would run with half its arguments: never handed to the client.
                self._lose(f"tool call {value.id} was cut before it ended; not sent")
                return b""
            try:
                args = msgspec.json.decode(value.arguments) if value.arguments else {}
            except msgspec.DecodeError:
                args = {"arguments": value.arguments}
                self._lose(f"tool call {value.id}: arguments are not JSON; wrapped as {{'arguments': text}}")
            self._calls.append({"id": value.id, "name": value.name, "args": args})
            return b""
        if kind == "result" and isinstance(value, ToolResultPart):
            self._results.setdefault(ev.message, []).append(_function_response(value))
            return b""
        if kind == "whole" and value is not None:
            return self._whole(value)
        return b""

    def _whole(self, value: Any) -> bytes:
        if isinstance(value, ImagePart) and value.data:
            return self._flush() + self._mt(
                {"inlineData": {"mimeType": value.media_type or "image/png", "data": value.data}}
            )
        if isinstance(value, CodePart):
            out = self._flush()
            if value.code is not None:
                out += self._mt(
                    {"executableCode": {"language": value.language or "PYTHON", "code": value.code}}
                )
            if value.outcome is not None or value.output is not None:
                result = {
                    k: v for k, v in (("outcome", value.outcome), ("output", value.output)) if v is not None
                }
                out += self._mt({"codeExecutionResult": result})
            return out
        if isinstance(value, UnknownPart) and self._source == PROTOCOL and isinstance(value.raw, dict):
            if value.provider_type == "part":
                return self._flush() + self._mt(value.raw)
            return self._flush() + self._ml({"serverContent": {value.provider_type: value.raw}})
        self._lose(f"a {value.__struct_config__.tag} part has no Live form; dropped")
        return b""

    def _on_message_done(self, ev: MessageDone) -> bytes:
        results = self._results.pop(ev.message, None)
        if results:
            return self._flush() + _line({"toolResponse": {"functionResponses": results}}, client=True)
        if self._roles.get(ev.message) in ("assistant", "model"):
            return self._flush()
        return b""

    def _on_usage(self, ev: UsageUpdate) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_response_done(self, ev: ResponseDone) -> bytes:
        active = self._active or bool(self._calls)
        out = self._flush() if self._calls else b""
        waiting = ev.finish_reason == "tool_calls" and not self._after_call
        self._active = self._after_call = False
        if waiting or not (active or self._usage is not None):
            # Live sends no turnComplete before tool results; a response that carried only
            # client-side messages (tool results) had no model turn to complete.
            return out
        content: dict[str, Any] = {"turnComplete": True}
        if ev.provider_finish_reason == "interrupted":
            out += _line({"serverContent": {"interrupted": True}})
        else:
            out += _line({"serverContent": {"generationComplete": True}})
            reason = ev.provider_finish_reason
            if self._source == PROTOCOL and ev.finish_reason == "other" and reason and reason.isupper():
                content["turnCompleteReason"] = reason
        msg: dict[str, Any] = {"serverContent": content}
        if self._usage is not None:
            msg["usageMetadata"] = _usage_wire(self._usage)
            self._usage = None
        return out + _line(msg)

    def _on_error(self, ev: StreamErrorEvent) -> bytes:
        self._lose(f"in-band error {ev.error.type!r}: Live has no error message; dropped")
        return b""

    def _on_unknown(self, ev: UnknownEvent) -> bytes:
        raw = ev.raw
        if self._source != PROTOCOL or not isinstance(raw, dict):
            self._lose(f"unknown {ev.provider_type!r} frames of another protocol dropped")
            return b""
        if ev.provider_type.startswith("client."):
            return _line(raw, client=True)
        if ev.message is not None:
            return _line({"serverContent": {ev.provider_type: raw}})
        return self._flush() + _line(raw)


def _function_response(value: ToolResultPart) -> dict[str, Any]:
    content = value.content
    response: Any
    if isinstance(content, str):
        try:
            response = msgspec.json.decode(content)
        except msgspec.DecodeError:
            response = {"output": content}
        if not isinstance(response, dict):
            response = {"output": response}
    else:
        texts = [p.text for p in content if isinstance(p, TextPart)]
        response = {"output": "".join(texts)}
    out: dict[str, Any] = {"id": value.tool_call_id}
    if value.name is not None:
        out["name"] = value.name
    out["response"] = response
    return out


def _usage_wire(usage: Usage) -> dict[str, Any]:
    raw = usage.raw
    if isinstance(raw, dict) and ("promptTokenCount" in raw or "totalTokenCount" in raw):
        return raw
    pairs = (
        ("promptTokenCount", usage.input_tokens),
        ("cachedContentTokenCount", usage.cache_read_tokens),
        ("responseTokenCount", usage.output_tokens),
        ("thoughtsTokenCount", usage.reasoning_tokens),
        ("totalTokenCount", usage.total_tokens),
    )
    out: dict[str, Any] = {name: value for name, value in pairs if value is not None}
    return out
