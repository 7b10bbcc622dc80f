"""OpenAI Realtime client events → canonical client messages (``_client_model``), and field paths.

:func:`decode_client` reads one client event, GA or beta shape, into canonical client messages;
:func:`is_beta_session` tells the two session shapes apart; :func:`format_of` reads an audio
format; :func:`client_path` names a canonical field in the client's own terms
(``turn_detection.threshold`` → ``session.audio.input.turn_detection.threshold``). The way back,
:func:`encode_client`, is ``_client_wire`` (re-exported here, so callers import both directions
from this module).

The session shapes (``openai.types.realtime`` GA / ``openai.types.beta.realtime``):

* GA ``session.update``: ``session {type: "realtime", instructions, output_modalities, tools,
  tool_choice, max_output_tokens, audio {input {format {type: audio/pcm|audio/pcmu|audio/pcma,
  rate}, transcription, turn_detection, noise_reduction}, output {format, voice, speed}}}``.
* beta ``session.update``: ``session {modalities, instructions, voice, input_audio_format,
  output_audio_format (pcm16|g711_ulaw|g711_alaw), input_audio_transcription, turn_detection,
  tools, tool_choice, temperature, max_response_output_tokens}``.

``turn_detection: null`` is manual turns; ``transcription: null`` turns transcription off.
Conversation items map through the history codec (``_history``). It must not write client
events (``_client_wire``), hold state or do IO.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final

import msgspec

from ..._client_model import (
    AddMessages,
    AudioChunk,
    AudioClear,
    AudioCommit,
    AudioFormat,
    CancelResponse,
    ClientMessage,
    ItemDelete,
    ItemRetrieve,
    ItemTruncate,
    OtherClientMessage,
    OutputAudioClear,
    ResponseRequest,
    SessionConfig,
    SessionTool,
    ToolResults,
    Transcription,
    TurnDetection,
)
from ..._exceptions import RemoteProtocolError
from ..._model import ToolResultPart
from .._names import OPENAI_REALTIME as PROTOCOL
from ._client_wire import encode_client
from ._history import to_canonical

__all__ = ["client_path", "decode_client", "encode_client", "format_of", "is_beta_session"]

_GA_FORMATS: Final[dict[str, tuple[str, int]]] = {
    "audio/pcm": ("pcm16", 24000),
    "audio/pcmu": ("g711_ulaw", 8000),
    "audio/pcma": ("g711_alaw", 8000),
}
_BETA_FORMATS: Final[dict[str, tuple[str, int]]] = {
    "pcm16": ("pcm16", 24000),
    "g711_ulaw": ("g711_ulaw", 8000),
    "g711_alaw": ("g711_alaw", 8000),
}

_GA_SESSION_KNOWN: Final = frozenset(
    {
        "type",
        "model",
        "instructions",
        "output_modalities",
        "tools",
        "tool_choice",
        "max_output_tokens",
        "audio",
    }
)
_BETA_SESSION_KNOWN: Final = frozenset(
    {
        "model",
        "instructions",
        "modalities",
        "voice",
        "input_audio_format",
        "output_audio_format",
        "input_audio_transcription",
        "turn_detection",
        "tools",
        "tool_choice",
        "temperature",
        "max_response_output_tokens",
    }
)
_GA_RESPONSE_KNOWN: Final = frozenset(
    {
        "instructions",
        "tools",
        "tool_choice",
        "output_modalities",
        "audio",
        "max_output_tokens",
        "conversation",
    }
)
_BETA_RESPONSE_KNOWN: Final = frozenset(
    {
        "instructions",
        "tools",
        "tool_choice",
        "modalities",
        "voice",
        "output_audio_format",
        "temperature",
        "max_response_output_tokens",
        "conversation",
    }
)

_GA_PATHS: Final[dict[str, str]] = {
    "instructions": "session.instructions",
    "tools": "session.tools",
    "tool_choice": "session.tool_choice",
    "modalities": "session.output_modalities",
    "voice": "session.audio.output.voice",
    "input_format": "session.audio.input.format",
    "output_format": "session.audio.output.format",
    "input_transcription": "session.audio.input.transcription",
    "output_transcription": "session.audio.output (transcript)",
    "turn_detection": "session.audio.input.turn_detection",
    "temperature": "session.temperature",
    "max_output_tokens": "session.max_output_tokens",
}
_BETA_PATHS: Final[dict[str, str]] = {
    "modalities": "session.modalities",
    "voice": "session.voice",
    "input_format": "session.input_audio_format",
    "output_format": "session.output_audio_format",
    "input_transcription": "session.input_audio_transcription",
    "turn_detection": "session.turn_detection",
    "max_output_tokens": "session.max_response_output_tokens",
}


def client_path(field: str, *, beta: bool = False) -> str:
    """A canonical field (``turn_detection.threshold``, ``response.instructions``) in Realtime's terms.

    ``response.<field>`` names a ``response.create`` field; a client event name
    (``conversation.item.truncate``) is returned as it is.
    """
    head, _, rest = field.partition(".")
    if head == "response" and rest:
        inner = client_path(rest, beta=beta)
        return "response." + inner.removeprefix("session.")
    paths = _BETA_PATHS if beta else {}
    found = paths.get(head) or _GA_PATHS.get(head)
    if found is None:
        return field
    return f"{found}.{rest}" if rest else found


# ---------------------------------------------------------------------- decoding


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def format_of(value: Any) -> AudioFormat | None:
    """A Realtime audio format (GA ``{"type": "audio/pcm", "rate": 24000}`` or beta ``"pcm16"``)."""
    if isinstance(value, str) and value in _BETA_FORMATS:
        encoding, rate = _BETA_FORMATS[value]
    elif isinstance(value, dict) and value.get("type") in _GA_FORMATS:
        encoding, rate = _GA_FORMATS[value["type"]]
        rate = _int(value.get("rate")) or rate
    else:
        return None
    return AudioFormat(encoding=encoding, rate=rate)  # type: ignore[arg-type]


def _tools(raw: Any, path: str, unsupported: list[str]) -> list[SessionTool] | None:
    if raw is None:
        return None
    out: list[SessionTool] = []
    for i, tool in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(tool, dict) and tool.get("type", "function") == "function" and _str(tool.get("name")):
            out.append(
                SessionTool(
                    name=tool["name"],
                    description=_str(tool.get("description")),
                    parameters=tool.get("parameters"),
                )
            )
        else:
            unsupported.append(f"{path}[{i}]")
    return out


def _tool_choice(raw: Any, path: str, unsupported: list[str]) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    unsupported.append(path)
    return None


def _transcription(raw: Any) -> Transcription:
    if raw is None:
        return Transcription(enabled=False)
    obj = _obj(raw)
    return Transcription(
        model=_str(obj.get("model")), language=_str(obj.get("language")), prompt=_str(obj.get("prompt"))
    )


def _turn_detection(raw: Any, path: str, unsupported: list[str]) -> TurnDetection:
    if raw is None:
        return TurnDetection(mode="manual")
    obj = _obj(raw)
    mode = obj.get("type", "server_vad")
    if mode not in ("server_vad", "semantic_vad"):
        unsupported.append(f"{path}.type")
        mode = "server_vad"
    if "idle_timeout_ms" in obj:
        unsupported.append(f"{path}.idle_timeout_ms")
    return TurnDetection(
        mode=mode,
        prefix_padding_ms=_int(obj.get("prefix_padding_ms")),
        silence_duration_ms=_int(obj.get("silence_duration_ms")),
        threshold=_float(obj.get("threshold")),
        eagerness=_str(obj.get("eagerness")),
        create_response=obj.get("create_response") if isinstance(obj.get("create_response"), bool) else None,
        interrupt_response=(
            obj.get("interrupt_response") if isinstance(obj.get("interrupt_response"), bool) else None
        ),
    )


def _max_tokens(value: Any) -> int | None:
    return _int(value)  # "inf" is the default: nothing to carry


def _voice(raw: Any, path: str, unsupported: list[str]) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    unsupported.append(path)  # a custom voice {"id": ...}
    return None


def _ga_session(s: dict[str, Any], event_id: str | None) -> SessionConfig:
    unsupported = [f"session.{k}" for k in s if k not in _GA_SESSION_KNOWN]
    audio = _obj(s.get("audio"))
    unsupported += [f"session.audio.{k}" for k in audio if k not in ("input", "output")]
    inp, out = _obj(audio.get("input")), _obj(audio.get("output"))
    unsupported += [
        f"session.audio.input.{k}"
        for k in inp
        if k not in ("format", "transcription", "turn_detection")
        and not (k == "noise_reduction" and inp[k] is None)
    ]
    unsupported += [f"session.audio.output.{k}" for k in out if k not in ("format", "voice")]
    input_format = format_of(inp["format"]) if "format" in inp else None
    output_format = format_of(out["format"]) if "format" in out else None
    if "format" in inp and input_format is None:
        unsupported.append("session.audio.input.format")
    if "format" in out and output_format is None:
        unsupported.append("session.audio.output.format")
    modalities = s.get("output_modalities")
    return SessionConfig(
        event_id=event_id,
        model=_str(s.get("model")),
        instructions=_str(s.get("instructions")),
        tools=_tools(s.get("tools"), "session.tools", unsupported),
        tool_choice=_tool_choice(s.get("tool_choice"), "session.tool_choice", unsupported),
        modalities=_modalities(modalities),
        voice=_voice(out.get("voice"), "session.audio.output.voice", unsupported),
        input_format=input_format,
        output_format=output_format,
        input_transcription=_transcription(inp["transcription"]) if "transcription" in inp else None,
        turn_detection=(
            _turn_detection(inp["turn_detection"], "session.audio.input.turn_detection", unsupported)
            if "turn_detection" in inp
            else None
        ),
        max_output_tokens=_max_tokens(s.get("max_output_tokens")),
        unsupported=tuple(unsupported),
    )


def _beta_session(s: dict[str, Any], event_id: str | None) -> SessionConfig:
    unsupported = [
        f"session.{k}"
        for k in s
        if k not in _BETA_SESSION_KNOWN and not (k == "input_audio_noise_reduction" and s[k] is None)
    ]
    input_format = format_of(s.get("input_audio_format"))
    output_format = format_of(s.get("output_audio_format"))
    return SessionConfig(
        event_id=event_id,
        model=_str(s.get("model")),
        instructions=_str(s.get("instructions")),
        tools=_tools(s.get("tools"), "session.tools", unsupported),
        tool_choice=_tool_choice(s.get("tool_choice"), "session.tool_choice", unsupported),
        modalities=_modalities(s.get("modalities")),
        voice=_voice(s.get("voice"), "session.voice", unsupported),
        input_format=input_format,
        output_format=output_format,
        input_transcription=(
            _transcription(s["input_audio_transcription"]) if "input_audio_transcription" in s else None
        ),
        turn_detection=(
            _turn_detection(s["turn_detection"], "session.turn_detection", unsupported)
            if "turn_detection" in s
            else None
        ),
        temperature=_float(s.get("temperature")),
        max_output_tokens=_max_tokens(s.get("max_response_output_tokens")),
        unsupported=tuple(unsupported),
    )


def _modalities(raw: Any) -> Any:
    if not isinstance(raw, list):
        return None
    return [m for m in raw if m in ("text", "audio")]


def is_beta_session(session: dict[str, Any]) -> bool:
    """Whether a ``session.update``'s session object has the beta shape (no ``type: realtime``)."""
    if session.get("type") == "realtime" or "audio" in session or "output_modalities" in session:
        return False
    return bool(_BETA_SESSION_KNOWN.intersection(session) - {"instructions", "tools", "tool_choice", "model"})


def _response(r: dict[str, Any], event_id: str | None) -> ResponseRequest:
    beta = "modalities" in r or "voice" in r or "output_audio_format" in r or "temperature" in r
    known = _BETA_RESPONSE_KNOWN if beta else _GA_RESPONSE_KNOWN
    unsupported = [f"response.{k}" for k in r if k not in known]
    if r.get("conversation") not in (None, "auto"):
        unsupported.append("response.conversation")
    output = _obj(_obj(r.get("audio")).get("output"))
    unsupported += [f"response.audio.output.{k}" for k in output if k not in ("format", "voice")]
    fmt = output.get("format") if not beta else r.get("output_audio_format")
    voice = output.get("voice") if not beta else r.get("voice")
    return ResponseRequest(
        event_id=event_id,
        instructions=_str(r.get("instructions")),
        tools=_tools(r.get("tools"), "response.tools", unsupported),
        tool_choice=_tool_choice(r.get("tool_choice"), "response.tool_choice", unsupported),
        modalities=_modalities(r.get("modalities" if beta else "output_modalities")),
        voice=_voice(voice, "response.voice" if beta else "response.audio.output.voice", unsupported),
        output_format=format_of(fmt),
        max_output_tokens=_max_tokens(r.get("max_response_output_tokens" if beta else "max_output_tokens")),
        temperature=_float(r.get("temperature")),
        unsupported=tuple(unsupported),
    )


def _item(item: dict[str, Any], raw: dict[str, Any], event_id: str | None) -> ClientMessage:
    messages = to_canonical([item])
    previous = _str(raw.get("previous_item_id"))
    if item.get("type") == "function_call_output":
        results = (
            [p for m in messages for p in m.content if isinstance(p, ToolResultPart)] if messages else []
        )
        if not results:
            raise RemoteProtocolError("a function_call_output's call_id must be a string", protocol=PROTOCOL)
        return ToolResults(event_id=event_id, results=results, item_id=_str(item.get("id")))
    return AddMessages(event_id=event_id, messages=messages, previous_item_id=previous)


def _audio(raw: dict[str, Any], event_id: str | None, fmt: AudioFormat) -> AudioChunk:
    audio = raw.get("audio")
    if not isinstance(audio, str):
        raise RemoteProtocolError("input_audio_buffer.append needs base64 'audio'", protocol=PROTOCOL)
    try:
        data = base64.b64decode(audio, validate=True)
    except binascii.Error as exc:
        raise RemoteProtocolError(
            f"input_audio_buffer.append: audio is not base64 ({exc})", protocol=PROTOCOL
        ) from None
    return AudioChunk(event_id=event_id, data=data, format=fmt)


def _item_id(raw: dict[str, Any], kind: str) -> str:
    item_id = raw.get("item_id")
    if not isinstance(item_id, str):
        raise RemoteProtocolError(f"{kind} needs a string 'item_id'", protocol=PROTOCOL)
    return item_id


_BARE: Final[dict[str, type[AudioCommit | AudioClear | OutputAudioClear]]] = {
    "input_audio_buffer.commit": AudioCommit,
    "input_audio_buffer.clear": AudioClear,
    "output_audio_buffer.clear": OutputAudioClear,
}


def _item_event(kind: str, raw: dict[str, Any], event_id: str | None) -> ClientMessage:
    item_id = _item_id(raw, kind)
    if kind == "conversation.item.delete":
        return ItemDelete(event_id=event_id, item_id=item_id)
    if kind == "conversation.item.retrieve":
        return ItemRetrieve(event_id=event_id, item_id=item_id)
    index, end = _int(raw.get("content_index")), _int(raw.get("audio_end_ms"))
    if index is None or end is None:
        raise RemoteProtocolError(
            "conversation.item.truncate needs integer content_index and audio_end_ms", protocol=PROTOCOL
        )
    return ItemTruncate(event_id=event_id, item_id=item_id, content_index=index, audio_end_ms=end)


def decode_client(
    msg: str | bytes | dict[str, Any], *, input_format: AudioFormat | None = None
) -> list[ClientMessage]:
    """Read one Realtime client event (GA or beta) as canonical client messages.

    Args:
        msg: The event: websocket text, or the JSON object.
        input_format: The session's input audio format, which appended audio is in
            (PCM16 24 kHz when ``None``).

    Raises:
        RemoteProtocolError: The event is not a Realtime client event (not JSON, no ``type``, a
            field of the wrong type).
    """
    raw = msgspec.json.decode(msg) if isinstance(msg, str | bytes) else msg
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise RemoteProtocolError("a Realtime client event must be an object with a type", protocol=PROTOCOL)
    kind: str = raw["type"]
    event_id = _str(raw.get("event_id"))
    match kind:
        case "session.update":
            session = raw.get("session")
            if not isinstance(session, dict):
                raise RemoteProtocolError("session.update needs a 'session' object", protocol=PROTOCOL)
            if is_beta_session(session):
                return [_beta_session(session, event_id)]
            return [_ga_session(session, event_id)]
        case "conversation.item.create":
            item = raw.get("item")
            if not isinstance(item, dict):
                raise RemoteProtocolError(
                    "conversation.item.create needs an 'item' object", protocol=PROTOCOL
                )
            return [_item(item, raw, event_id)]
        case "input_audio_buffer.append":
            return [_audio(raw, event_id, input_format or AudioFormat())]
        case "input_audio_buffer.commit" | "input_audio_buffer.clear" | "output_audio_buffer.clear":
            return [_BARE[kind](event_id=event_id)]
        case "response.create":
            return [_response(_obj(raw.get("response")), event_id)]
        case "response.cancel":
            return [CancelResponse(event_id=event_id, response_id=_str(raw.get("response_id")))]
        case "conversation.item.delete" | "conversation.item.retrieve" | "conversation.item.truncate":
            return [_item_event(kind, raw, event_id)]
        case _:
            return [OtherClientMessage(event_id=event_id, name=kind, raw=raw)]
