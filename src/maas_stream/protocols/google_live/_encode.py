"""Google Live encoder: canonical events → Live server messages as ``{"dir", "msg"}`` JSON lines.

Text, thought text, audio data and transcripts go out as they arrive (``serverContent`` with a
``modelTurn`` part, ``outputTranscription`` or ``inputTranscription``). A function call's
arguments are gathered from its deltas; calls are held until their message ends (or other output
follows) and sent together in one ``toolCall``, the way Live sends parallel calls. A call that
is cancelled before it went out is never sent (its turn still ends: ``turnComplete``); one
cancelled after it went out (from another protocol) is followed by a ``toolCallCancellation``.
A response that ends for tool calls ends there (Live sends no ``turnComplete`` before the
results); any other end sends ``generationComplete`` and ``turnComplete`` (with the last
``usageMetadata``), or ``interrupted`` then ``turnComplete`` for an interrupted turn. Tool
results (``tool`` messages) are written as the client's ``toolResponse`` (``dir: "client"``), so
a recording keeps both sides; Live session and client messages kept by the Live decoder pass
through unchanged.

Dropped and reported as records (:attr:`StreamEncoder.lossy`): server and MCP tool calls,
signatures from other protocols, encrypted reasoning, refusals, citations, files, in-band errors
(Live has none), user and system input, and frames of other protocols.

Calls, results, code and usage map through ``_parts``, as in the decoder and history codec. It
must not decide cross-protocol rules (finish reasons, replay) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from ..._accumulate import add_fragment
from ..._model import AudioPart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, UnknownPart
from .._names import GOOGLE_LIVE as PROTOCOL
from .._replay import replayable
from .._session import SessionEncoder, frame
from .._template import HOLE, template
from ._parts import DEFAULT_AUDIO_MIME, blob, function_call, function_response, usage_wire, whole_parts

if TYPE_CHECKING:
    from ... import events
    from ..._model import Part

__all__ = ["DEFAULT_AUDIO_MIME", "StreamEncoder"]

_Key = tuple[Any, Any]


def _turn(part: dict[str, Any]) -> bytes:
    return frame({"serverContent": {"modelTurn": {"parts": [part]}}})


# The streamed messages, pre-encoded with their text left open (the hot paths: one join each).
_json: Final = msgspec.json.Encoder()
_TEXT: Final = template(_turn, {"text": HOLE[0]}, 1)
_THOUGHT: Final = template(_turn, {"text": HOLE[0], "thought": True}, 1)
_TRANSCRIPT: Final = template(frame, {"serverContent": {"outputTranscription": {"text": HOLE[0]}}}, 1)


def _filled(frames: tuple[bytes, ...], value: str) -> bytes:
    return b"".join((frames[0], _json.encode(value), frames[1]))


class StreamEncoder(SessionEncoder):
    """Encode canonical events as a Google Live session (server messages, JSON lines).

    Args:
        audio_mime: The ``mimeType`` of audio whose source gave no format.
    """

    protocol: ClassVar[str] = PROTOCOL
    title: ClassVar[str] = "Live"

    def __init__(self, *, audio_mime: str = DEFAULT_AUDIO_MIME) -> None:
        super().__init__()
        self.audio_mime = audio_mime
        self._kinds: dict[_Key, str] = {}
        """What each open part is written as (``text``, ``thought``, ``audio``, ``call``...)."""
        self._formats: dict[_Key, str] = {}
        self._args: dict[_Key, list[str]] = {}
        """The argument deltas of each open call."""
        self._calls: list[tuple[_Key, dict[str, Any]]] = []
        """Closed calls not sent yet (they go out together in one ``toolCall``)."""
        self._sent: dict[Any, dict[Any, str]] = {}
        """Ids of the calls sent, by message and part (for a later cancellation)."""
        self._results: dict[Any, list[dict[str, Any]]] = {}
        self._active = False
        """Whether model output went out in the current response (else no turn to complete)."""
        self._after_call = False
        """Whether model output went out after the last ``toolCall``."""
        self._blobs: dict[str, tuple[bytes, ...]] | None = None
        """The audio message of each MIME type, pre-encoded with its data left open."""

    def _end(self) -> bytes:
        return self._flush()

    # ------------------------------------------------------------------ helpers

    def _flush(self) -> bytes:
        if not self._calls:
            return b""
        self._active = True
        self._after_call = False
        calls, self._calls = self._calls, []
        if not self._same:  # a Live source cancels with its own frame, which passes through
            for (message, part), call in calls:
                self._sent.setdefault(message, {})[part] = call["id"]
        return frame({"toolCall": {"functionCalls": [call for _, call in calls]}})

    def _mt(self, part: dict[str, Any]) -> bytes:
        self._active = self._after_call = True
        return _turn(part)

    def _ml(self, msg: dict[str, Any]) -> bytes:
        self._active = self._after_call = True
        return frame(msg)

    def _kind(self, message: Any, part: Any) -> str | None:
        return self._kinds.get((message, part))

    # ------------------------------------------------------------------ parts

    def _on_part_start(self, ev: events.PartStart) -> bytes:
        key = (ev.message, ev.part)
        role = self._roles.get(ev.message, "assistant")
        value = ev.value
        if role not in ("assistant", "model"):
            return self._input_part(key, role, value)
        if isinstance(value, ToolCallPart):
            if value.kind in ("function", "custom"):
                self._kinds[key] = "call"
                self._args[key] = []
            else:
                self._kinds[key] = "skip"
                self._lose("server_call", f"{value.kind} tool call {value.name!r} (no Live form)")
            return b""
        out = self._flush()
        if isinstance(value, TextPart):
            self._kinds[key] = "text"  # its text follows as deltas
        elif isinstance(value, ReasoningPart):
            self._kinds[key] = "thought"
            if value.encrypted_content or value.data:
                self._lose("encrypted_reasoning", "encrypted or redacted reasoning (no Live form)")
            for text in value.summary or ():
                out += self._mt({"text": text, "thought": True})
        elif isinstance(value, AudioPart):
            self._kinds[key] = "audio"
            self._formats[key] = value.format if value.format and "/" in value.format else self.audio_mime
            out += self._audio(key, value.data, value.transcript)
        else:
            self._kinds[key] = "whole"  # sent, or reported, when it is done
        return out

    def _input_part(self, key: _Key, role: str, value: Part) -> bytes:
        self._kinds[key] = "skip"
        if role == "tool":
            if isinstance(value, ToolResultPart):
                self._kinds[key] = "result"
            else:
                self._lose_part(value)
        elif role == "user" and isinstance(value, AudioPart):
            self._kinds[key] = "input"
            if value.transcript:
                return frame({"serverContent": {"inputTranscription": {"text": value.transcript}}})
        return b""

    def _on_text(self, ev: events.TextDelta) -> bytes:
        if self._kind(ev.message, ev.part) != "text":
            return b""
        out = self._flush()
        self._active = self._after_call = True
        return out + _filled(_TEXT, ev.text)

    def _on_reasoning(self, ev: events.ReasoningDelta) -> bytes:
        if self._kind(ev.message, ev.part) != "thought":
            return b""
        out = self._flush()
        self._active = self._after_call = True
        return out + _filled(_THOUGHT, ev.text)

    def _on_summary(self, ev: events.SummaryDelta) -> bytes:
        if self._kind(ev.message, ev.part) != "thought" or not ev.text:
            return b""
        out = self._flush()
        self._active = self._after_call = True
        return out + _filled(_THOUGHT, ev.text)

    def _on_signature(self, ev: events.SignatureDelta) -> bytes:
        kind = self._kind(ev.message, ev.part)
        if kind not in ("text", "thought"):
            if kind is not None:
                self._lose("signature", "signatures outside text and thought parts (no Live form)")
            return b""
        if not replayable(self._source, PROTOCOL):
            self._lose(
                "signature",
                f"signatures from {self._source or 'another protocol'} (not replayable to {PROTOCOL})",
            )
            return b""
        part: dict[str, Any] = {"text": "", "thoughtSignature": ev.signature}
        if kind == "thought":
            part["thought"] = True
        return self._flush() + self._mt(part)

    def _on_audio(self, ev: events.AudioDelta) -> bytes:
        key = (ev.message, ev.part)
        kind = self._kinds.get(key)
        if kind == "input":
            if not ev.transcript:
                return b""
            return frame({"serverContent": {"inputTranscription": {"text": ev.transcript}}})
        if kind != "audio":
            return b""
        return self._flush() + self._audio(key, ev.data, ev.transcript)

    def _audio(self, key: _Key, data: str | None, transcript: str | None) -> bytes:
        out = b""
        if data:
            mime = self._formats.get(key, self.audio_mime)
            blobs = self._blobs
            if blobs is None:
                blobs = self._blobs = {}
            frames = blobs.get(mime)
            if frames is None:
                frames = blobs[mime] = template(_turn, blob(mime, HOLE[0]), 1)
            out = _filled(frames, data)
        if transcript:
            out += _filled(_TRANSCRIPT, transcript)
        if out:
            self._active = self._after_call = True
        return out

    def _on_arguments(self, ev: events.ArgumentsDelta) -> bytes:
        args = self._args.get((ev.message, ev.part))
        if args is not None:
            add_fragment(args, ev.delta)
        return b""

    def _on_part_done(self, ev: events.PartDone) -> bytes:
        key = (ev.message, ev.part)
        kind = self._kinds.pop(key, None)
        self._formats.pop(key, None)
        value = ev.value
        if kind == "call":
            arguments = "".join(self._args.pop(key, ()))
            if isinstance(value, ToolCallPart):
                call = function_call(value, arguments, self.drops, where=value.id or None)
                if call is not None:
                    self._calls.append((key, call))
            return b""
        if kind == "result" and isinstance(value, ToolResultPart):
            self._results.setdefault(ev.message, []).append(function_response(value))
            return b""
        if kind == "whole" and value is not None:
            return self._whole(value)
        return b""

    def _whole(self, value: Part) -> bytes:
        parts = whole_parts(value)
        if parts is not None and not isinstance(value, UnknownPart | AudioPart):
            out = self._flush()
            for part in parts:
                out += self._mt(part)
            return out
        if isinstance(value, UnknownPart) and self._same and isinstance(value.raw, dict):
            if value.provider_type == "part":
                return self._flush() + self._mt(value.raw)
            return self._flush() + self._ml({"serverContent": {value.provider_type: value.raw}})
        self._lose_part(value)
        return b""

    # ------------------------------------------------------------------ messages and responses

    def _on_message_done(self, ev: events.MessageDone) -> bytes:
        results = self._results.pop(ev.message, None)
        if results:
            return self._flush() + frame({"toolResponse": {"functionResponses": results}}, client=True)
        if self._roles.get(ev.message) in ("assistant", "model"):
            return self._flush()
        return b""

    def _on_cancelled(self, ev: events.Cancelled) -> bytes:
        if self._same:
            return b""  # the Live source's own toolCallCancellation passes through
        hit = (lambda part: part == ev.part) if ev.part is not None else (lambda part: True)
        kept = [(key, call) for key, call in self._calls if not (key[0] == ev.message and hit(key[1]))]
        cut = any(key[0] == ev.message and hit(key[1]) for key in self._args) or len(kept) < len(self._calls)
        self._active = self._active or cut  # a model turn was cut: the client still sees it end
        self._calls = kept
        sent = self._sent.get(ev.message, {})
        ids = [sent.pop(part) for part in list(sent) if hit(part)]
        return frame({"toolCallCancellation": {"ids": ids}}) if ids else b""

    def _on_response_done(self, ev: events.ResponseDone) -> bytes:
        active = self._active or bool(self._calls)
        out = self._flush()
        waiting = ev.finish_reason == "tool_calls" and not self._after_call
        self._active = self._after_call = False
        if waiting or not (active or self._usage is not None):
            # Live sends no turnComplete before tool results; a response that carried only
            # client-side messages (tool results) had no model turn to complete. The usage the
            # source reported for the response still goes out, as a message of its own
            # (``usageMetadata`` is a sibling key that may travel alone).
            if waiting and self._usage is not None:
                out += frame({"usageMetadata": usage_wire(self._usage, same=self._same)})
                self._usage = None
            return out
        content: dict[str, Any] = {"turnComplete": True}
        if ev.provider_finish_reason == "interrupted":
            out += frame({"serverContent": {"interrupted": True}})
        else:
            out += frame({"serverContent": {"generationComplete": True}})
            reason = ev.provider_finish_reason
            if self._same and ev.finish_reason == "other" and reason and reason.isupper():
                content["turnCompleteReason"] = reason
        msg: dict[str, Any] = {"serverContent": content}
        if self._usage is not None:
            msg["usageMetadata"] = usage_wire(self._usage, same=self._same)
            self._usage = None
        return out + frame(msg)

    def _on_error(self, ev: events.StreamErrorEvent) -> bytes:
        self._lose("error", f"in-band {ev.error.type!r} errors (Live has no error message)")
        return b""

    def _pass(self, ev: events.UnknownEvent, raw: dict[str, Any]) -> bytes:
        if ev.provider_type.startswith("client."):
            return frame(raw, client=True)
        if ev.message is not None:
            return frame({"serverContent": {ev.provider_type: raw}})
        return self._flush() + frame(raw)
