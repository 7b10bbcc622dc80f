"""Client → server messages of both session protocols: decoded to canonical and encoded back.

Every example is first read by the SDK's own client type (openai's ``RealtimeClientEvent``
unions, GA and beta, strictly: no field the SDK does not know; google-genai's
``LiveClientMessage`` / ``LiveConnectConfig``), then decoded, encoded, and the encoded messages
are read by the same SDK type and decode to the same canonical messages.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

import maas_stream as ms
from maas_stream._client_model import (
    ActivityStart,
    AddMessages,
    AudioChunk,
    AudioClear,
    AudioCommit,
    AudioFormat,
    AudioStreamEnd,
    CancelResponse,
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
from maas_stream.protocols import google_live as live
from maas_stream.protocols import openai_realtime as rt
from tests import oracles

PCM = base64.b64encode(bytes(range(256)) * 4).decode()
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

GA_EVENTS: list[dict[str, Any]] = [
    {
        "type": "session.update",
        "event_id": "e1",
        "session": {
            "type": "realtime",
            "instructions": "Be brief.",
            "output_modalities": ["audio"],
            "tools": [{"type": "function", "name": "get_weather", "description": "d", "parameters": WEATHER}],
            "tool_choice": "auto",
            "max_output_tokens": 512,
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": 24000},
                    "transcription": {"model": "gpt-4o-transcribe", "language": "en"},
                    "turn_detection": {
                        "type": "server_vad",
                        "threshold": 0.6,
                        "prefix_padding_ms": 300,
                        "silence_duration_ms": 500,
                        "create_response": True,
                        "interrupt_response": True,
                    },
                },
                "output": {"format": {"type": "audio/pcmu"}, "voice": "marin"},
            },
        },
    },
    {
        "type": "session.update",
        "session": {
            "type": "realtime",
            "output_modalities": ["text"],
            "audio": {"input": {"turn_detection": None, "transcription": None}},
        },
    },
    {
        "type": "session.update",
        "session": {
            "type": "realtime",
            "audio": {"input": {"turn_detection": {"type": "semantic_vad", "eagerness": "low"}}},
        },
    },
    {
        "type": "conversation.item.create",
        "event_id": "e2",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Weather in Paris?"}],
        },
    },
    {
        "type": "conversation.item.create",
        "item": {"type": "message", "role": "user", "content": [{"type": "input_audio", "audio": PCM}]},
    },
    {
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": "call_1", "output": '{"temp_c": 18}'},
    },
    {"type": "conversation.item.delete", "item_id": "item_1"},
    {"type": "conversation.item.retrieve", "item_id": "item_1"},
    {"type": "conversation.item.truncate", "item_id": "item_2", "content_index": 0, "audio_end_ms": 1500},
    {"type": "input_audio_buffer.append", "audio": PCM},
    {"type": "input_audio_buffer.commit"},
    {"type": "input_audio_buffer.clear"},
    {"type": "output_audio_buffer.clear"},
    {"type": "response.create"},
    {
        "type": "response.create",
        "response": {
            "instructions": "Answer in French.",
            "output_modalities": ["text"],
            "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
            "tool_choice": "required",
            "max_output_tokens": 64,
            "audio": {"output": {"voice": "cedar", "format": {"type": "audio/pcma"}}},
        },
    },
    {"type": "response.cancel"},
    {"type": "response.cancel", "response_id": "resp_1"},
]

BETA_EVENTS: list[dict[str, Any]] = [
    {
        "type": "session.update",
        "session": {
            "modalities": ["text", "audio"],
            "instructions": "Be brief.",
            "voice": "verse",
            "input_audio_format": "g711_ulaw",
            "output_audio_format": "pcm16",
            "input_audio_transcription": {"model": "whisper-1"},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 700},
            "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
            "tool_choice": "auto",
            "temperature": 0.7,
            "max_response_output_tokens": 200,
        },
    },
    {
        "type": "response.create",
        "response": {"modalities": ["text"], "instructions": "Short.", "temperature": 0.8, "voice": "alloy"},
    },
]

LIVE_MESSAGES: list[dict[str, Any]] = [
    {
        "setup": {
            "model": "models/gemini-live-2.5-flash",
            "generationConfig": {
                "responseModalities": ["AUDIO"],
                "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}},
                "temperature": 0.5,
                "maxOutputTokens": 300,
            },
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}],
            "realtimeInputConfig": {
                "automaticActivityDetection": {
                    "startOfSpeechSensitivity": "START_SENSITIVITY_LOW",
                    "endOfSpeechSensitivity": "END_SENSITIVITY_HIGH",
                    "prefixPaddingMs": 20,
                    "silenceDurationMs": 400,
                },
                "activityHandling": "NO_INTERRUPTION",
            },
            "inputAudioTranscription": {},
            "outputAudioTranscription": {},
        }
    },
    {
        "setup": {
            "model": "models/gemini-live-2.5-flash",
            "generationConfig": {"responseModalities": ["TEXT"]},
            "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
        }
    },
    {
        "clientContent": {
            "turns": [
                {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                {"role": "model", "parts": [{"text": "Checking."}]},
            ],
            "turnComplete": True,
        }
    },
    {
        "clientContent": {
            "turns": [{"role": "user", "parts": [{"text": "More context."}]}],
            "turnComplete": False,
        }
    },
    {"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": PCM}}},
    {"realtimeInput": {"text": "Hello"}},
    {"realtimeInput": {"activityStart": {}}},
    {"realtimeInput": {"activityEnd": {}}},
    {"realtimeInput": {"audioStreamEnd": True}},
    {
        "toolResponse": {
            "functionResponses": [
                {"id": "fc-1", "name": "get_weather", "response": {"temp_c": 18}},
                {"id": "fc-2", "name": "get_weather", "response": {"temp_c": 9}},
            ]
        }
    },
]


def _ids(events: list[dict[str, Any]]) -> list[str]:
    return [
        f"{i}-{e.get('type') or next(iter(e))}-{next(iter(e.get('session') or e.get('response') or e.get('item') or [''])) if isinstance(e.get('session') or e.get('response') or e.get('item'), dict) else ''}"
        for i, e in enumerate(events)
    ]


@pytest.mark.parametrize("event", GA_EVENTS, ids=_ids(GA_EVENTS))
def test_realtime_ga_round_trip(event: dict[str, Any]) -> None:
    oracles.realtime_client_event(event)
    decoded = rt.decode_client(event)
    assert decoded
    lost: list[str] = []
    encoded = [e for m in decoded for e in rt.encode_client(m, lost=lost)]
    assert lost == []
    for e in encoded:
        oracles.realtime_client_event(e)
    again = [m for e in encoded for m in rt.decode_client(e)]
    assert again == decoded


@pytest.mark.parametrize("event", BETA_EVENTS, ids=_ids(BETA_EVENTS))
def test_realtime_beta_round_trip(event: dict[str, Any]) -> None:
    oracles.realtime_beta_client_event(event)
    decoded = rt.decode_client(event)
    lost: list[str] = []
    encoded = [e for m in decoded for e in rt.encode_client(m, beta=True, lost=lost)]
    assert lost == []
    for e in encoded:
        oracles.realtime_beta_client_event(e)
    assert [m for e in encoded for m in rt.decode_client(e)] == decoded


@pytest.mark.parametrize("message", LIVE_MESSAGES, ids=_ids(LIVE_MESSAGES))
def test_live_round_trip(message: dict[str, Any]) -> None:
    oracles.live_client_message(message)
    decoded = live.decode_client(message)
    assert decoded
    lost: list[str] = []
    manual = "activityEnd" in message.get("realtimeInput", {})
    encoded = [e for m in decoded for e in live.encode_client(m, manual_turns=manual, lost=lost)]
    assert lost == []
    for e in encoded:
        oracles.live_client_message(e)
    assert [m for e in encoded for m in live.decode_client(e)] == decoded


def test_realtime_session_update_decodes_every_setting() -> None:
    (config,) = rt.decode_client(GA_EVENTS[0])
    assert config == SessionConfig(
        event_id="e1",
        instructions="Be brief.",
        modalities=["audio"],
        tools=[SessionTool(name="get_weather", description="d", parameters=WEATHER)],
        tool_choice="auto",
        max_output_tokens=512,
        voice="marin",
        input_format=AudioFormat(encoding="pcm16", rate=24000),
        output_format=AudioFormat(encoding="g711_ulaw", rate=8000),
        input_transcription=Transcription(model="gpt-4o-transcribe", language="en"),
        turn_detection=TurnDetection(
            mode="server_vad",
            threshold=0.6,
            prefix_padding_ms=300,
            silence_duration_ms=500,
            create_response=True,
            interrupt_response=True,
        ),
    )
    (off,) = rt.decode_client(GA_EVENTS[1])
    assert isinstance(off, SessionConfig)
    assert off.turn_detection == TurnDetection(mode="manual")
    assert off.input_transcription == Transcription(enabled=False)
    assert off.modalities == ["text"]


def test_beta_and_ga_session_updates_mean_the_same() -> None:
    (beta,) = rt.decode_client(BETA_EVENTS[0])
    assert isinstance(beta, SessionConfig)
    assert beta.input_format == AudioFormat(encoding="g711_ulaw", rate=8000)
    assert beta.voice == "verse"
    assert beta.temperature == 0.7
    assert beta.turn_detection == TurnDetection(mode="server_vad", silence_duration_ms=700)
    # GA has no session temperature: written GA, it is lost (and said so), the rest is kept.
    lost: list[str] = []
    (ga,) = rt.encode_client(beta, lost=lost)
    oracles.realtime_client_event(ga)
    assert lost == ["temperature"]
    assert ga["session"]["audio"]["input"]["format"] == {"type": "audio/pcmu"}
    assert ga["session"]["audio"]["output"]["voice"] == "verse"


def test_live_setup_decodes_every_setting() -> None:
    (config,) = live.decode_client(LIVE_MESSAGES[0])
    assert config == SessionConfig(
        model="models/gemini-live-2.5-flash",
        instructions="Be brief.",
        tools=[SessionTool(name="get_weather", parameters=WEATHER)],
        modalities=["audio"],
        voice="Kore",
        temperature=0.5,
        max_output_tokens=300,
        input_transcription=Transcription(),
        output_transcription=Transcription(),
        turn_detection=TurnDetection(
            mode="server_vad",
            prefix_padding_ms=20,
            silence_duration_ms=400,
            start_sensitivity="START_SENSITIVITY_LOW",
            end_sensitivity="END_SENSITIVITY_HIGH",
            interrupt_response=False,
        ),
    )
    (manual,) = live.decode_client(LIVE_MESSAGES[1])
    assert isinstance(manual, SessionConfig)
    assert manual.turn_detection == TurnDetection(mode="manual")


def test_the_python_sdks_snake_case_keys_are_read() -> None:
    snake = {
        "client_content": {"turns": [{"role": "user", "parts": [{"text": "hi"}]}], "turn_complete": True}
    }
    (m,) = live.decode_client(snake)
    assert isinstance(m, AddMessages)
    assert m.respond
    assert m.messages[0].content == [ms.TextPart(text="hi")]
    audio = {"realtime_input": {"audio": {"mime_type": "audio/pcm;rate=16000", "data": PCM}}}
    (chunk,) = live.decode_client(audio)
    assert chunk == AudioChunk(data=base64.b64decode(PCM), format=AudioFormat(rate=16000))


def test_each_client_message_kind_decodes_to_its_canonical_type() -> None:
    kinds = [type(m) for e in GA_EVENTS for m in rt.decode_client(e)]
    assert kinds == [
        SessionConfig,
        SessionConfig,
        SessionConfig,
        AddMessages,
        AddMessages,
        ToolResults,
        ItemDelete,
        ItemRetrieve,
        ItemTruncate,
        AudioChunk,
        AudioCommit,
        AudioClear,
        OutputAudioClear,
        ResponseRequest,
        ResponseRequest,
        CancelResponse,
        CancelResponse,
    ]
    live_kinds = [type(m) for e in LIVE_MESSAGES for m in live.decode_client(e)]
    assert live_kinds == [
        SessionConfig,
        SessionConfig,
        AddMessages,
        AddMessages,
        AudioChunk,
        TextInput,
        ActivityStart,
        AudioCommit,
        AudioStreamEnd,
        ToolResults,
    ]


def test_a_tool_result_crosses_with_its_call_id() -> None:
    (result,) = rt.decode_client(GA_EVENTS[5])
    assert isinstance(result, ToolResults)
    assert result.results[0].tool_call_id == "call_1"
    named = ToolResults(
        results=[ms.ToolResultPart(tool_call_id="call_1", name="get_weather", content='{"temp_c": 18}')]
    )
    (wire,) = live.encode_client(named)
    oracles.live_client_message(wire)
    assert wire == {
        "toolResponse": {
            "functionResponses": [{"id": "call_1", "name": "get_weather", "response": {"temp_c": 18}}]
        }
    }
    # Live goes on after toolResponse; a Realtime server needs response.create.
    (from_live,) = live.decode_client(wire)
    assert isinstance(from_live, ToolResults)
    assert from_live.respond
    events = rt.encode_client(from_live)
    assert [e["type"] for e in events] == ["conversation.item.create", "response.create"]
    for e in events:
        oracles.realtime_client_event(e)


def test_a_realtime_session_update_as_a_live_setup() -> None:
    (config,) = rt.decode_client(GA_EVENTS[0])
    assert isinstance(config, SessionConfig)
    lost: list[str] = []
    # The bridge maps voices and formats; the codec writes what it is given.
    (setup,) = live.encode_client(
        SessionConfig(
            instructions=config.instructions,
            tools=config.tools,
            modalities=config.modalities,
            voice="Despina",
            turn_detection=config.turn_detection,
            input_transcription=config.input_transcription,
        ),
        model="gemini-live-2.5-flash",
        lost=lost,
    )
    oracles.live_client_message(setup)
    body = setup["setup"]
    assert body["model"] == "models/gemini-live-2.5-flash"
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "get_weather", "description": "d", "parametersJsonSchema": WEATHER}
            ]
        }
    ]
    assert body["generationConfig"]["responseModalities"] == ["AUDIO"]
    assert body["outputAudioTranscription"] == {}
    assert body["inputAudioTranscription"] == {"languageCodes": ["en"]}
    assert body["realtimeInputConfig"] == {
        "automaticActivityDetection": {"prefixPaddingMs": 300, "silenceDurationMs": 500},
        "activityHandling": "START_OF_ACTIVITY_INTERRUPTS",
    }
    # What Live cannot carry is said, in canonical terms, and named in the client's terms.
    assert lost == ["turn_detection.threshold", "input_transcription.model"]
    assert rt.client_path("turn_detection.threshold") == "session.audio.input.turn_detection.threshold"
    assert rt.client_path("turn_detection.threshold", beta=True) == "session.turn_detection.threshold"


def test_a_live_setup_as_a_realtime_session_update() -> None:
    (config,) = live.decode_client(LIVE_MESSAGES[0])
    assert isinstance(config, SessionConfig)
    lost: list[str] = []
    (update,) = rt.encode_client(msgspec_replace(config, voice="coral"), lost=lost)
    oracles.realtime_client_event(update)
    session = update["session"]
    assert session["instructions"] == "Be brief."
    assert session["output_modalities"] == ["audio"]
    assert session["audio"]["input"]["turn_detection"] == {
        "type": "server_vad",
        "prefix_padding_ms": 20,
        "silence_duration_ms": 400,
        "interrupt_response": False,
    }
    assert session["audio"]["output"]["voice"] == "coral"
    assert lost == ["temperature", "turn_detection.start_sensitivity", "turn_detection.end_sensitivity"]
    assert live.client_path("turn_detection.start_sensitivity") == (
        "setup.realtimeInputConfig.automaticActivityDetection.startOfSpeechSensitivity"
    )


def msgspec_replace(config: SessionConfig, **changes: Any) -> SessionConfig:
    import msgspec

    return msgspec.structs.replace(config, **changes)


@pytest.mark.parametrize(
    ("message", "lost"),
    [
        pytest.param(CancelResponse(), ["response.cancel"], id="cancel"),
        pytest.param(AudioClear(), ["input_audio_buffer.clear"], id="clear"),
        pytest.param(
            ItemTruncate(item_id="i", content_index=0, audio_end_ms=10),
            ["conversation.item.truncate"],
            id="truncate",
        ),
        pytest.param(
            ResponseRequest(instructions="x"), ["response.instructions"], id="per-response-instructions"
        ),
        pytest.param(OtherClientMessage(name="realtimeInput.video"), ["realtimeInput.video"], id="video"),
    ],
)
def test_what_live_cannot_carry_is_lost_not_written(message: Any, lost: list[str]) -> None:
    found: list[str] = []
    written = live.encode_client(message, lost=found)
    assert found == lost
    for wire in written:
        oracles.live_client_message(wire)
    if isinstance(message, ResponseRequest):
        assert written == [{"clientContent": {"turnComplete": True}}]  # generate now, without the override
    else:
        assert written == []


def test_unknown_setup_fields_are_named_by_their_client_path() -> None:
    setup = {
        "setup": {"model": "m", "proactivity": {"proactiveAudio": True}, "tools": [{"googleSearch": {}}]}
    }
    oracles.live_client_message(setup)
    (config,) = live.decode_client(setup)
    assert isinstance(config, SessionConfig)
    assert config.unsupported == ("setup.proactivity", "setup.tools[0].googleSearch")
    update = {
        "type": "session.update",
        "session": {"type": "realtime", "tracing": "auto", "audio": {"output": {"speed": 1.2}}},
    }
    oracles.realtime_client_event(update)
    (rt_config,) = rt.decode_client(update)
    assert isinstance(rt_config, SessionConfig)
    assert rt_config.unsupported == ("session.tracing", "session.audio.output.speed")


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(b"[1]", id="not-an-object"),
        pytest.param(b'{"type": "input_audio_buffer.append", "audio": "***"}', id="not-base64"),
        pytest.param(b'{"type": "conversation.item.delete"}', id="no-item-id"),
        pytest.param(b'{"type": "session.update"}', id="no-session"),
    ],
)
def test_a_broken_realtime_event_is_a_remote_protocol_error(bad: bytes) -> None:
    with pytest.raises(ms.RemoteProtocolError):
        rt.decode_client(bad)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(b'{"setup": {}, "clientContent": {}}', id="two-keys"),
        pytest.param(b'{"toolResponse": {"functionResponses": []}}', id="no-responses"),
        pytest.param(b'{"realtimeInput": {"text": 3}}', id="text-not-a-string"),
    ],
)
def test_a_broken_live_message_is_a_remote_protocol_error(bad: bytes) -> None:
    with pytest.raises(ms.RemoteProtocolError):
        live.decode_client(bad)


def test_live_audio_in_the_url_safe_alphabet_is_read() -> None:
    # google-genai writes bytes with base64.urlsafe_b64encode (its _common); protobuf JSON reads both
    data = bytes(range(256)) * 2
    url_safe = base64.urlsafe_b64encode(data).decode()
    assert {"-", "_"} <= set(url_safe)
    (chunk,) = live.decode_client(
        {"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": url_safe}}}
    )
    assert chunk == AudioChunk(data=data, format=AudioFormat(rate=16000))
    with pytest.raises(ms.RemoteProtocolError, match="not base64"):
        live.decode_client({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "***"}}})
