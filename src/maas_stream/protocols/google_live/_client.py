"""Google Live client messages ↔ canonical client messages (``_client_model``).

:func:`decode_client` reads one client message (camelCase, or the Python SDK's snake_case keys)
into canonical client messages; :func:`encode_client` writes one canonical client message as
Live client messages (camelCase). What Live cannot carry is not written: its canonical field
name goes to ``lost`` (the caller refuses or reports it); :func:`client_path` names a canonical
field in the Live client's own terms.

* ``setup`` ↔ :class:`SessionConfig`: ``generationConfig.responseModalities`` (``TEXT`` /
  ``AUDIO``), ``speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName``, ``temperature``,
  ``maxOutputTokens``; ``systemInstruction`` (text parts); ``tools[].functionDeclarations``;
  ``realtimeInputConfig.automaticActivityDetection`` (``disabled`` → manual turns; sensitivities,
  padding and silence) and ``activityHandling`` (``NO_INTERRUPTION`` ↔ no barge-in);
  ``inputAudioTranscription`` / ``outputAudioTranscription``. Other setup fields are listed in
  :attr:`SessionConfig.unsupported` by their client path.
* ``clientContent`` ↔ :class:`AddMessages` (``turnComplete`` ↔ ``respond``), through the
  history codec (``_history``).
* ``realtimeInput``: ``audio`` / ``mediaChunks`` ↔ :class:`AudioChunk` (format from the blob's
  ``mimeType``, ``audio/pcm;rate=16000``), ``text`` ↔ :class:`TextInput`, ``activityStart`` ↔
  :class:`ActivityStart`, ``activityEnd`` ↔ :class:`AudioCommit` (manual turns; with automatic
  detection a commit is written ``audioStreamEnd``), ``audioStreamEnd`` ↔ :class:`AudioStreamEnd`.
* ``toolResponse`` ↔ :class:`ToolResults` (``respond``: Live goes on by itself).

Live has no message for a response request with overrides, a cancellation, item management or
discarding input audio: those are ``lost``. A plain response request is ``clientContent
{"turnComplete": true}`` (generate now from what the conversation holds). It must not hold state
or do IO.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any, Final

import msgspec

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
    OtherClientMessage,
    OutputAudioClear,
    ResponseRequest,
    SessionConfig,
    SessionTool,
    TextInput,
    ToolResults,
    Transcription,
    TurnDetection,
)
from ..._exceptions import RemoteProtocolError
from ..._model import ToolResultPart
from .._names import GOOGLE_LIVE as PROTOCOL
from ._events import CLIENT_KEYS
from ._history import from_canonical, to_canonical
from ._parts import function_response

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = ["audio_mime", "client_path", "decode_client", "encode_client", "format_of"]

_SETUP_KNOWN: Final = frozenset(
    {"model", "generationConfig", "systemInstruction", "tools", "realtimeInputConfig"}
    | {"inputAudioTranscription", "outputAudioTranscription"}
)
_GENERATION_KNOWN: Final = frozenset({"responseModalities", "speechConfig", "temperature", "maxOutputTokens"})
_DETECTION_KNOWN: Final = frozenset(
    {"disabled", "startOfSpeechSensitivity", "endOfSpeechSensitivity", "prefixPaddingMs", "silenceDurationMs"}
)
_PATHS: Final[dict[str, str]] = {
    "instructions": "setup.systemInstruction",
    "tools": "setup.tools",
    "tool_choice": "setup.toolConfig",
    "modalities": "setup.generationConfig.responseModalities",
    "voice": "setup.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName",
    "input_format": "realtimeInput.audio.mimeType",
    "output_format": "setup (output audio format)",
    "input_transcription": "setup.inputAudioTranscription",
    "output_transcription": "setup.outputAudioTranscription",
    "turn_detection": "setup.realtimeInputConfig.automaticActivityDetection",
    "temperature": "setup.generationConfig.temperature",
    "max_output_tokens": "setup.generationConfig.maxOutputTokens",
}
_DETECTION_PATHS: Final[dict[str, str]] = {
    "prefix_padding_ms": "prefixPaddingMs",
    "silence_duration_ms": "silenceDurationMs",
    "start_sensitivity": "startOfSpeechSensitivity",
    "end_sensitivity": "endOfSpeechSensitivity",
}


def client_path(field: str) -> str:
    """A canonical field (``turn_detection.start_sensitivity``) in the Live client's terms."""
    head, _, rest = field.partition(".")
    found = _PATHS.get(head)
    if found is None:
        return field
    if head == "turn_detection" and rest:
        if rest == "interrupt_response":
            return "setup.realtimeInputConfig.activityHandling"
        return f"{found}.{_DETECTION_PATHS.get(rest, rest)}"
    return f"{found}.{rest}" if rest else found


# ---------------------------------------------------------------------- decoding


def _get(obj: dict[str, Any], camel: str) -> Any:
    """A field by its camelCase name or the Python SDK's snake_case one."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


def _camel(obj: dict[str, Any]) -> dict[str, Any]:
    """The keys of one object in camelCase (the SDK sends snake_case)."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        head, *rest = key.split("_")
        out[head + "".join(w[:1].upper() + w[1:] for w in rest)] = value
    return out


def _obj(value: Any) -> dict[str, Any]:
    return _camel(value) if isinstance(value, dict) else {}


def _extra(obj: dict[str, Any], known: set[str] | frozenset[str], prefix: str) -> list[str]:
    """The client paths of the keys of ``obj`` that have no canonical form."""
    return [f"{prefix}.{key}" for key in obj if key not in known]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def format_of(mime: str | None) -> AudioFormat | None:
    """The audio format of a Live blob ``mimeType`` (``audio/pcm;rate=16000``; PCM without a rate is 16 kHz)."""
    if not isinstance(mime, str):
        return None
    kind, _, params = mime.partition(";")
    kind = kind.strip().lower()
    rate: int | None = None
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "rate" and value.strip().isdigit():
            rate = int(value.strip())
    if kind in ("audio/pcm", "audio/l16"):
        return AudioFormat(encoding="pcm16", rate=rate or 16000)
    if kind in ("audio/pcmu", "audio/mulaw", "audio/basic"):
        return AudioFormat(encoding="g711_ulaw", rate=8000)
    if kind in ("audio/pcma", "audio/alaw"):
        return AudioFormat(encoding="g711_alaw", rate=8000)
    return None


def audio_mime(fmt: AudioFormat) -> str:
    """A Live blob ``mimeType`` for an audio format (``audio/pcm;rate=16000``)."""
    if fmt.encoding == "g711_ulaw":
        return "audio/pcmu"
    if fmt.encoding == "g711_alaw":
        return "audio/pcma"
    return f"audio/pcm;rate={fmt.rate}"


def _instructions(raw: Any, unsupported: list[str]) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    parts = _obj(raw).get("parts")
    texts: list[str] = []
    for i, part in enumerate(parts if isinstance(parts, list) else []):
        text = _str(_obj(part).get("text"))
        if text is None:
            unsupported.append(f"setup.systemInstruction.parts[{i}]")
        else:
            texts.append(text)
    return "\n".join(texts)


def _tools(raw: Any, unsupported: list[str]) -> list[SessionTool] | None:
    if raw is None:
        return None
    out: list[SessionTool] = []
    for i, tool in enumerate(raw if isinstance(raw, list) else []):
        obj = _obj(tool)
        unsupported += _extra(obj, {"functionDeclarations"}, f"setup.tools[{i}]")
        decls = obj.get("functionDeclarations")
        for j, decl in enumerate(decls if isinstance(decls, list) else []):
            d = _obj(decl)
            name = _str(d.get("name"))
            if name is None:
                unsupported.append(f"setup.tools[{i}].functionDeclarations[{j}]")
                continue
            known = {"name", "description", "parameters", "parametersJsonSchema"}
            unsupported += _extra(d, known, f"setup.tools[{i}].functionDeclarations[{j}]")
            params = d.get("parametersJsonSchema", d.get("parameters"))
            out.append(SessionTool(name=name, description=_str(d.get("description")), parameters=params))
    return out


def _modalities(raw: Any) -> Any:
    if not isinstance(raw, list):
        return None
    names = {"TEXT": "text", "AUDIO": "audio"}
    return [names[m.upper()] for m in raw if isinstance(m, str) and m.upper() in names]


def _voice(generation: dict[str, Any], unsupported: list[str]) -> str | None:
    speech = _obj(generation.get("speechConfig"))
    if not speech:
        return None
    unsupported += _extra(speech, {"voiceConfig"}, "setup.generationConfig.speechConfig")
    voice = _obj(speech.get("voiceConfig"))
    unsupported += _extra(voice, {"prebuiltVoiceConfig"}, "setup.generationConfig.speechConfig.voiceConfig")
    return _str(_obj(voice.get("prebuiltVoiceConfig")).get("voiceName"))


def _turn_detection(raw: Any, unsupported: list[str]) -> TurnDetection | None:
    if raw is None:
        return None
    config = _obj(raw)
    unsupported += _extra(
        config, {"automaticActivityDetection", "activityHandling"}, "setup.realtimeInputConfig"
    )
    detection = _obj(config.get("automaticActivityDetection"))
    unsupported += _extra(detection, _DETECTION_KNOWN, "setup.realtimeInputConfig.automaticActivityDetection")
    handling = config.get("activityHandling")
    interrupt = None if handling is None else handling != "NO_INTERRUPTION"
    if detection.get("disabled") is True:
        return TurnDetection(mode="manual", interrupt_response=interrupt)
    return TurnDetection(
        mode="server_vad",
        prefix_padding_ms=_int(detection.get("prefixPaddingMs")),
        silence_duration_ms=_int(detection.get("silenceDurationMs")),
        start_sensitivity=_str(detection.get("startOfSpeechSensitivity")),
        end_sensitivity=_str(detection.get("endOfSpeechSensitivity")),
        interrupt_response=interrupt,
    )


def _transcription(raw: Any, path: str, unsupported: list[str]) -> Transcription | None:
    if raw is None:
        return None
    config = _obj(raw)
    languages = config.get("languageCodes")
    language = languages[0] if isinstance(languages, list) and len(languages) == 1 else None
    unsupported += _extra(config, {"languageCodes"} if language is not None else set(), path)
    return Transcription(language=_str(language))


def _setup(raw: dict[str, Any]) -> SessionConfig:
    setup = _camel(raw)
    unsupported = [f"setup.{k}" for k in setup if k not in _SETUP_KNOWN]
    generation = _obj(setup.get("generationConfig"))
    unsupported += [f"setup.generationConfig.{k}" for k in generation if k not in _GENERATION_KNOWN]
    temperature = generation.get("temperature")
    return SessionConfig(
        model=_str(setup.get("model")),
        instructions=_instructions(setup.get("systemInstruction"), unsupported),
        tools=_tools(setup.get("tools"), unsupported),
        modalities=_modalities(generation.get("responseModalities")),
        voice=_voice(generation, unsupported),
        input_transcription=_transcription(
            setup.get("inputAudioTranscription"), "setup.inputAudioTranscription", unsupported
        ),
        output_transcription=_transcription(
            setup.get("outputAudioTranscription"), "setup.outputAudioTranscription", unsupported
        ),
        turn_detection=_turn_detection(setup.get("realtimeInputConfig"), unsupported),
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        max_output_tokens=_int(generation.get("maxOutputTokens")),
        unsupported=tuple(unsupported),
    )


def _chunk(blob: Any, path: str) -> ClientMessage:
    b = _obj(blob)
    mime, data = _str(b.get("mimeType")), b.get("data")
    fmt = format_of(mime)
    if fmt is None or not isinstance(data, str):
        return OtherClientMessage(name=path, raw=blob)
    try:  # protobuf JSON takes both alphabets, and google-genai writes bytes URL-safe
        decoded = base64.b64decode(data.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error as exc:
        raise RemoteProtocolError(f"{path}.data is not base64 ({exc})", protocol=PROTOCOL) from None
    return AudioChunk(data=decoded, format=fmt)


def _realtime_input(raw: dict[str, Any]) -> list[ClientMessage]:
    value = _camel(raw)
    out: list[ClientMessage] = []
    for key, item in value.items():
        if item is None:
            continue
        match key:
            case "audio":
                out.append(_chunk(item, "realtimeInput.audio"))
            case "mediaChunks":
                out += [
                    _chunk(b, "realtimeInput.mediaChunks") for b in (item if isinstance(item, list) else [])
                ]
            case "text":
                if not isinstance(item, str):
                    raise RemoteProtocolError("realtimeInput.text must be a string", protocol=PROTOCOL)
                out.append(TextInput(text=item))
            case "activityStart":
                out.append(ActivityStart())
            case "activityEnd":
                out.append(AudioCommit())
            case "audioStreamEnd":
                if item is True:
                    out.append(AudioStreamEnd())
            case _:
                out.append(OtherClientMessage(name=f"realtimeInput.{key}", raw={key: item}))
    return out


def decode_client(msg: str | bytes | dict[str, Any]) -> list[ClientMessage]:
    """Read one Live client message as canonical client messages.

    Raises:
        RemoteProtocolError: The message is not a Live client message (not a JSON object, an
            unknown top-level key, a field of the wrong type).
    """
    raw = msgspec.json.decode(msg) if isinstance(msg, str | bytes) else msg
    if not isinstance(raw, dict) or len(raw) != 1:
        raise RemoteProtocolError("a Live client message must be an object with one key", protocol=PROTOCOL)
    key, value = next(iter(raw.items()))
    name = CLIENT_KEYS.get(key)
    if not isinstance(value, dict):
        raise RemoteProtocolError(f"Live {key!r} must be an object", protocol=PROTOCOL)
    match name:
        case "setup":
            return [_setup(value)]
        case "clientContent":
            turns = _get(value, "turns")
            messages = to_canonical({"clientContent": {"turns": turns if isinstance(turns, list) else []}})
            return [AddMessages(messages=messages, respond=_get(value, "turnComplete") is True)]
        case "realtimeInput":
            return _realtime_input(value)
        case "toolResponse":
            body = to_canonical({"toolResponse": _camel(value)})
            results = [p for m in body for p in m.content if isinstance(p, ToolResultPart)]
            if not results:
                raise RemoteProtocolError("toolResponse without functionResponses", protocol=PROTOCOL)
            return [ToolResults(results=results, respond=True)]
        case _:
            return [OtherClientMessage(name=key, raw=raw)]


# ---------------------------------------------------------------------- encoding


def _setup_wire(c: SessionConfig, model: str | None, lost: list[str]) -> dict[str, Any]:
    lost.extend(c.unsupported)
    setup: dict[str, Any] = {}
    name = model or c.model
    if name is not None:
        setup["model"] = name if name.startswith(("models/", "projects/")) else f"models/{name}"
    audio = c.modalities is None or "audio" in c.modalities
    generation = _generation_wire(c, audio, lost)
    if generation:
        setup["generationConfig"] = generation
    if c.instructions:
        setup["systemInstruction"] = {"parts": [{"text": c.instructions}]}
    if c.tools:
        setup["tools"] = [{"functionDeclarations": [_declaration(t) for t in c.tools]}]
    if c.tool_choice not in (None, "auto"):
        lost.append("tool_choice")
    if c.turn_detection is not None:
        config = _input_config(c.turn_detection, lost)
        if config != {"automaticActivityDetection": {}}:  # the default: automatic, as it is
            setup["realtimeInputConfig"] = config
    if c.input_transcription is not None and c.input_transcription.enabled:
        setup["inputAudioTranscription"] = _transcription_wire(
            c.input_transcription, "input_transcription", lost
        )
    if audio and (c.output_transcription is None or c.output_transcription.enabled):
        # Realtime audio always comes with its transcript: ask Live for it too.
        setup["outputAudioTranscription"] = (
            _transcription_wire(c.output_transcription, "output_transcription", lost)
            if c.output_transcription is not None
            else {}
        )
    if c.output_format is not None and (c.output_format.encoding, c.output_format.rate) != ("pcm16", 24000):
        lost.append("output_format")  # Live writes PCM16 24 kHz: the caller converts it
    return {"setup": setup}


def _generation_wire(c: SessionConfig, audio: bool, lost: list[str]) -> dict[str, Any]:
    generation: dict[str, Any] = {}
    if c.modalities is not None:
        if len(c.modalities) > 1:
            lost.append("modalities")  # Live answers in one modality
        generation["responseModalities"] = [m.upper() for m in c.modalities[:1]]
    if c.voice is not None and audio:
        generation["speechConfig"] = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": c.voice}}}
    if c.temperature is not None:
        generation["temperature"] = c.temperature
    if c.max_output_tokens is not None:
        generation["maxOutputTokens"] = c.max_output_tokens
    return generation


def _declaration(tool: SessionTool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["parametersJsonSchema"] = tool.parameters
    return out


def _transcription_wire(t: Transcription, field: str, lost: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if t.language is not None:
        out["languageCodes"] = [t.language]
    if t.model is not None:
        lost.append(f"{field}.model")
    if t.prompt is not None:
        lost.append(f"{field}.prompt")
    return out


def _input_config(td: TurnDetection, lost: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if td.mode == "manual":
        config["automaticActivityDetection"] = {"disabled": True}
    else:
        settings = (
            ("prefixPaddingMs", td.prefix_padding_ms),
            ("silenceDurationMs", td.silence_duration_ms),
            ("startOfSpeechSensitivity", td.start_sensitivity),
            ("endOfSpeechSensitivity", td.end_sensitivity),
        )
        detection: dict[str, Any] = {name: value for name, value in settings if value is not None}
        if td.threshold is not None:
            lost.append("turn_detection.threshold")
        if td.eagerness is not None:
            lost.append("turn_detection.eagerness")
        if td.mode == "semantic_vad":
            lost.append("turn_detection.type")  # Live detects voice activity, not semantic turns
        if td.create_response is False:
            lost.append("turn_detection.create_response")  # Live always answers a detected turn
        config["automaticActivityDetection"] = detection
    if td.interrupt_response is not None:
        config["activityHandling"] = (
            "START_OF_ACTIVITY_INTERRUPTS" if td.interrupt_response else "NO_INTERRUPTION"
        )
    return config


def encode_client(
    message: ClientMessage,
    *,
    model: str | None = None,
    manual_turns: bool = False,
    lost: list[str] | None = None,
    drops: DropLog | None = None,
) -> list[dict[str, Any]]:
    """Write one canonical client message as Live client messages (JSON objects, camelCase).

    Args:
        message: The canonical client message.
        model: The model a ``setup`` names (the config's own when ``None``).
        manual_turns: Whether automatic activity detection is off (a commit is then
            ``activityEnd``, else ``audioStreamEnd``).
        lost: Receives the canonical field names (or client message kinds) Live cannot carry;
            they are left out of the messages.
        drops: Receives what client content cannot carry (see ``from_canonical``).
    """
    gone = lost if lost is not None else []
    match message:
        case SessionConfig():
            return [_setup_wire(message, model, gone)]
        case AddMessages():
            body = from_canonical(message.messages, drops=drops)
            if "setup" in body:
                gone.append("messages.system")  # system text goes in the setup, before the session
            if message.previous_item_id is not None:
                gone.append("conversation.item.create.previous_item_id")
            turns = body["clientContent"]["turns"]
            return [{"clientContent": {"turns": turns, "turnComplete": message.respond}}]
        case ToolResults():
            return [{"toolResponse": {"functionResponses": [function_response(r) for r in message.results]}}]
        case TextInput():
            return [{"realtimeInput": {"text": message.text}}]
        case AudioChunk():
            data = base64.b64encode(message.data).decode("ascii")
            return [{"realtimeInput": {"audio": {"mimeType": audio_mime(message.format), "data": data}}}]
        case ActivityStart():
            return [{"realtimeInput": {"activityStart": {}}}]
        case AudioCommit():
            if manual_turns:
                return [{"realtimeInput": {"activityEnd": {}}}]
            return [{"realtimeInput": {"audioStreamEnd": True}}]
        case AudioStreamEnd():
            return [{"realtimeInput": {"audioStreamEnd": True}}]
        case ResponseRequest():
            _response_lost(message, gone)
            return [{"clientContent": {"turnComplete": True}}]
        case _:
            gone.append(_NO_FORM.get(type(message), getattr(message, "name", type(message).__name__)))
            return []


_NO_FORM: Final[dict[type[Any], str]] = {
    AudioClear: "input_audio_buffer.clear",
    CancelResponse: "response.cancel",
    ItemDelete: "conversation.item.delete",
    ItemRetrieve: "conversation.item.retrieve",
    ItemTruncate: "conversation.item.truncate",
    OutputAudioClear: "output_audio_buffer.clear",
}
"""Client messages Live has no form for, by the Realtime event that sends them."""


def _response_lost(r: ResponseRequest, lost: list[str]) -> None:
    """Per-response overrides: Live configures a session once, in its setup."""
    lost.extend(r.unsupported)
    names = ("instructions", "tools", "tool_choice", "modalities", "voice", "output_format")
    lost.extend(
        f"response.{name}"
        for name in (*names, "max_output_tokens", "temperature")
        if getattr(r, name) is not None
    )
