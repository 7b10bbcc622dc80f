"""Canonical client messages (``_client_model``) → OpenAI Realtime client events.

:func:`encode_client` writes one canonical client message as Realtime client events (GA shape,
or the beta event shape with ``beta=True``). What a canonical message holds that Realtime
cannot carry is not written: its canonical field name is appended to ``lost`` (the caller
refuses or reports it, see ``_session_bridge``). Conversation items are written by the history
codec (``_history``); the session shapes are described in ``_client``, which reads them and
re-exports :func:`encode_client`.

It must not read client events (``_client``), hold state or do IO.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Final

from ..._client_model import (
    ActivityStart,
    AddMessages,
    AudioChunk,
    AudioClear,
    AudioCommit,
    AudioFormat,
    AudioStreamEnd,
    CancelResponse,
    ClientMessage,
    ItemDelete,
    ItemRetrieve,
    ItemTruncate,
    OutputAudioClear,
    ResponseRequest,
    SessionConfig,
    SessionTool,
    TextInput,
    ToolResults,
    Transcription,
    TurnDetection,
)
from ._history import from_canonical
from ._items import output_item

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = ["encode_client"]

_GA_NAMES: Final = {"pcm16": "audio/pcm", "g711_ulaw": "audio/pcmu", "g711_alaw": "audio/pcma"}


def _event(kind: str, event_id: str | None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind}
    if event_id is not None:
        out["event_id"] = event_id
    out.update(fields)
    return out


def _tools_wire(tools: list[SessionTool]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        decl: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description is not None:
            decl["description"] = tool.description
        decl["parameters"] = (
            tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
        )
        out.append(decl)
    return out


def _format_wire(fmt: AudioFormat, beta: bool, field: str, lost: list[str]) -> Any:
    expected = 24000 if fmt.encoding == "pcm16" else 8000
    if fmt.rate != expected:
        lost.append(f"{field}.rate")  # the caller resamples to a rate Realtime takes first
    if beta:
        return fmt.encoding
    out: dict[str, Any] = {"type": _GA_NAMES[fmt.encoding]}
    if fmt.encoding == "pcm16":
        out["rate"] = 24000
    return out


def _turn_detection_wire(td: TurnDetection, lost: list[str]) -> dict[str, Any] | None:
    if td.mode == "manual":
        return None
    out: dict[str, Any] = {"type": td.mode}
    fields = (
        ("prefix_padding_ms", td.prefix_padding_ms),
        ("silence_duration_ms", td.silence_duration_ms),
        ("threshold", td.threshold),
    )
    for name, value in fields:
        if value is not None:
            if td.mode == "server_vad":
                out[name] = value
            else:
                lost.append(f"turn_detection.{name}")
    if td.eagerness is not None:
        if td.mode == "semantic_vad":
            out["eagerness"] = td.eagerness
        else:
            lost.append("turn_detection.eagerness")
    if td.create_response is not None:
        out["create_response"] = td.create_response
    if td.interrupt_response is not None:
        out["interrupt_response"] = td.interrupt_response
    if td.start_sensitivity is not None:
        lost.append("turn_detection.start_sensitivity")
    if td.end_sensitivity is not None:
        lost.append("turn_detection.end_sensitivity")
    return out


def _transcription_wire(t: Transcription) -> dict[str, Any] | None:
    if not t.enabled:
        return None
    out: dict[str, Any] = {}
    for name in ("model", "language", "prompt"):
        value = getattr(t, name)
        if value is not None:
            out[name] = value
    return out


def _generation_wire(
    c: SessionConfig | ResponseRequest, out: dict[str, Any], beta: bool, lost: list[str], temperature: str
) -> None:
    """Write what a session and a response both set into ``out``.

    Instructions, tools, tool choice, modalities, the output limit, and temperature (beta only:
    GA has none, so ``temperature`` names it in ``lost``).
    """
    if c.instructions is not None:
        out["instructions"] = c.instructions
    if c.tools is not None:
        out["tools"] = _tools_wire(c.tools)
    if c.tool_choice is not None:
        out["tool_choice"] = c.tool_choice
    if c.modalities is not None:
        out["modalities" if beta else "output_modalities"] = list(c.modalities)
    if c.max_output_tokens is not None:
        out["max_response_output_tokens" if beta else "max_output_tokens"] = c.max_output_tokens
    if c.temperature is not None:
        if beta:
            out["temperature"] = c.temperature
        else:
            lost.append(temperature)


def _session_wire(c: SessionConfig, beta: bool, lost: list[str]) -> dict[str, Any]:
    lost.extend(c.unsupported)
    s: dict[str, Any] = {} if beta else {"type": "realtime"}
    _generation_wire(c, s, beta, lost, "temperature")
    if c.output_transcription is not None and not c.output_transcription.enabled:
        lost.append("output_transcription")  # Realtime audio always comes with its transcript
    inp, out = _audio_wire(c, beta, lost)
    if beta:
        names = {"format": "input_audio_format", "transcription": "input_audio_transcription"}
        s.update({names.get(key, key): value for key, value in inp.items()})
        s.update({"output_audio_format" if key == "format" else key: value for key, value in out.items()})
        return s
    audio = {name: side for name, side in (("input", inp), ("output", out)) if side}
    if audio:
        s["audio"] = audio
    return s


def _audio_wire(c: SessionConfig, beta: bool, lost: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config's input and output audio settings (GA ``audio.input`` / ``audio.output`` keys)."""
    inp: dict[str, Any] = {}
    out: dict[str, Any] = {}
    if c.input_format is not None:
        inp["format"] = _format_wire(c.input_format, beta, "input_format", lost)
    if c.input_transcription is not None:
        inp["transcription"] = _transcription_wire(c.input_transcription)
    if c.turn_detection is not None:
        inp["turn_detection"] = _turn_detection_wire(c.turn_detection, lost)
    if c.output_format is not None:
        out["format"] = _format_wire(c.output_format, beta, "output_format", lost)
    if c.voice is not None:
        out["voice"] = c.voice
    return inp, out


def _response_wire(r: ResponseRequest, beta: bool, lost: list[str]) -> dict[str, Any]:
    lost.extend(r.unsupported)
    out: dict[str, Any] = {}
    _generation_wire(r, out, beta, lost, "response.temperature")
    if beta:
        if r.voice is not None:
            out["voice"] = r.voice
        if r.output_format is not None:
            out["output_audio_format"] = _format_wire(r.output_format, True, "response.output_format", lost)
    else:
        audio: dict[str, Any] = {}
        if r.voice is not None:
            audio["voice"] = r.voice
        if r.output_format is not None:
            audio["format"] = _format_wire(r.output_format, False, "response.output_format", lost)
        if audio:
            out["audio"] = {"output": audio}
    return out


def encode_client(
    message: ClientMessage, *, beta: bool = False, lost: list[str] | None = None, drops: DropLog | None = None
) -> list[dict[str, Any]]:
    """Write one canonical client message as Realtime client events (JSON objects).

    Args:
        message: The canonical client message.
        beta: Write the beta shapes (``modalities``, ``input_audio_format``...) instead of GA.
        lost: Receives the canonical field names (or client message kinds) Realtime cannot carry;
            they are left out of the events.
        drops: Receives what conversation items cannot carry (see ``from_canonical``).
    """
    gone = lost if lost is not None else []
    eid = message.event_id
    match message:
        case SessionConfig():
            return [_event("session.update", eid, session=_session_wire(message, beta, gone))]
        case AddMessages():
            items = from_canonical(message.messages, drops=drops)["items"]
            out = [
                _event("conversation.item.create", eid if i == 0 else None, item=it)
                for i, it in enumerate(items)
            ]
            if message.previous_item_id is not None and out:
                out[0]["previous_item_id"] = message.previous_item_id
            if message.respond:
                out.append(_event("response.create", None))
            return out
        case ToolResults():
            out = [
                _event("conversation.item.create", eid if i == 0 else None, item=output_item(r))
                for i, r in enumerate(message.results)
            ]
            if message.respond:
                out.append(_event("response.create", None))
            return out
        case TextInput():
            item = {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": message.text}],
            }
            return [_event("conversation.item.create", eid, item=item), _event("response.create", None)]
        case AudioChunk():
            return [
                _event("input_audio_buffer.append", eid, audio=base64.b64encode(message.data).decode("ascii"))
            ]
        case ResponseRequest():
            wire = _response_wire(message, beta, gone)
            return [_event("response.create", eid, response=wire) if wire else _event("response.create", eid)]
        case _:
            return _control(message, gone)


def _control(message: ClientMessage, lost: list[str]) -> list[dict[str, Any]]:
    """The events of the messages that carry no content: audio turns, cancels, item management."""
    eid = message.event_id
    match message:
        case ActivityStart():
            return []  # Realtime needs no mark: a manual turn starts with its first audio
        case AudioCommit() | AudioStreamEnd():
            return [_event("input_audio_buffer.commit", eid)]
        case AudioClear():
            return [_event("input_audio_buffer.clear", eid)]
        case OutputAudioClear():
            return [_event("output_audio_buffer.clear", eid)]
        case CancelResponse():
            if message.response_id is not None:
                return [_event("response.cancel", eid, response_id=message.response_id)]
            return [_event("response.cancel", eid)]
        case ItemDelete():
            return [_event("conversation.item.delete", eid, item_id=message.item_id)]
        case ItemRetrieve():
            return [_event("conversation.item.retrieve", eid, item_id=message.item_id)]
        case ItemTruncate():
            fields = {"content_index": message.content_index, "audio_end_ms": message.audio_end_ms}
            return [_event("conversation.item.truncate", eid, item_id=message.item_id, **fields)]
        case _:  # OtherClientMessage: no Realtime form
            lost.append(getattr(message, "name", type(message).__name__))
            return []
