"""SessionBridge: a realtime session translated both ways, message by message (no IO).

Every message the bridge writes is read by the SDK type of its side (openai's
``RealtimeClientEvent`` / ``RealtimeServerEvent`` strictly, google-genai's ``LiveClientMessage``
/ ``LiveServerMessage``), so a client of either SDK and an upstream of either protocol accept
it. The upstream side is played from the protocols' docs (PROTOCOLS.md §6, the openai SDK's
event types).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import maas_stream as ms
from tests import oracles

LIVE = "google-live"
RT = "openai-realtime"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _j(obj: Any) -> str:
    return json.dumps(obj)


def _msgs(items: list[str | bytes]) -> list[dict[str, Any]]:
    return [json.loads(m) for m in items]


class Side:
    """Drive one bridge, checking every message against the SDK types of its side."""

    def __init__(self, bridge: ms.SessionBridge) -> None:
        self.bridge = bridge
        self.client: list[dict[str, Any]] = []
        self.upstream: list[dict[str, Any]] = []
        self.dropped: list[ms.Dropped] = []
        self.closed: tuple[int, str] | None = None

    def _check(self, t: ms.Translated) -> ms.Translated:
        client, upstream = _msgs(t.to_client), _msgs(t.to_upstream)
        for m in client:
            if self.bridge.client == RT:
                (oracles.realtime_beta_server_event if self.bridge.beta else oracles.realtime_server_event)(m)
            else:
                oracles.live_server_message(m)
        for m in upstream:
            if self.bridge.upstream == RT:
                oracles.realtime_client_event(m)
            elif self.bridge.upstream == LIVE:
                oracles.live_client_message(m)
        self.client += client
        self.upstream += upstream
        self.dropped += t.dropped
        if t.close is not None:
            self.closed = t.close
        return t

    def open(self) -> ms.Translated:
        return self._check(self.bridge.opening())

    def send(self, msg: dict[str, Any]) -> ms.Translated:
        return self._check(self.bridge.from_client(_j(msg)))

    def serve(self, *msgs: dict[str, Any]) -> ms.Translated:
        out = ms.Translated()
        for msg in msgs:
            t = self._check(self.bridge.from_upstream(_j(msg)))
            out.to_client += t.to_client
            out.to_upstream += t.to_upstream
            out.dropped += t.dropped
        return out

    def take(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        client, upstream = self.client, self.upstream
        self.client, self.upstream = [], []
        return client, upstream


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e.get("type") or next(iter(e)) for e in events]


def _text_of(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["delta"] for e in events if e.get("type") in ("response.output_text.delta", "response.text.delta")
    )


def _live_text(messages: list[dict[str, Any]]) -> str:
    return "".join(
        p.get("text", "")
        for m in messages
        for p in ((m.get("serverContent") or {}).get("modelTurn") or {}).get("parts", [])
    )


def _pcm(samples: int) -> bytes:
    return bytes((i * 37) % 256 for i in range(samples * 2))


# ------------------------------------------------------------------ Realtime client, Live upstream


def _realtime_on_live(**options: Any) -> Side:
    side = Side(ms.SessionBridge(RT, LIVE, model="gemini-live-2.5-flash", **options))
    opened = side.open()
    assert opened.to_upstream == []  # the setup waits for the client's session.update
    assert _types(side.client) == ["session.created"]
    side.take()
    return side


def test_realtime_text_turn_over_live() -> None:
    side = _realtime_on_live()
    side.send(
        {
            "type": "session.update",
            "session": {"type": "realtime", "instructions": "Be brief.", "output_modalities": ["text"]},
        }
    )
    client, upstream = side.take()
    assert _types(client) == ["session.updated"]
    assert client[0]["session"]["output_modalities"] == ["text"]
    assert upstream == []
    side.send(
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        }
    )
    side.send({"type": "response.create"})
    _, upstream = side.take()
    (setup,) = upstream  # the rest waits for setupComplete
    assert setup["setup"]["generationConfig"]["responseModalities"] == ["TEXT"]
    assert setup["setup"]["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert "outputAudioTranscription" not in setup["setup"]
    side.serve({"setupComplete": {}})
    _, upstream = side.take()
    assert upstream == [
        {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Hi"}]}], "turnComplete": False}},
        {"clientContent": {"turnComplete": True}},
    ]
    side.serve(
        {"serverContent": {"modelTurn": {"parts": [{"text": "Hello"}]}}},
        {"serverContent": {"modelTurn": {"parts": [{"text": " there."}]}}},
        {"serverContent": {"generationComplete": True}},
        {
            "serverContent": {"turnComplete": True},
            "usageMetadata": {"promptTokenCount": 4, "responseTokenCount": 3, "totalTokenCount": 7},
        },
    )
    client, _ = side.take()
    assert _types(client)[0] == "response.created"
    assert _types(client)[-1] == "response.done"
    assert _text_of(client) == "Hello there."
    assert client[-1]["response"]["status"] == "completed"
    assert client[-1]["response"]["usage"]["total_tokens"] == 7
    session = side.bridge.session
    assert [r.messages[0].content[0] for r in session.responses] == [ms.TextPart(text="Hello there.")]
    assert side.dropped == []


def _tool_turn(side: Side) -> list[dict[str, Any]]:
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
    side.send(
        {
            "type": "session.update",
            "session": {"type": "realtime", "output_modalities": ["text"], "tools": tools},
        }
    )
    side.send(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Paris?"}],
            },
        }
    )
    side.send({"type": "response.create"})
    side.serve({"setupComplete": {}})
    side.take()
    side.serve(
        {"toolCall": {"functionCalls": [{"id": "fc-1", "name": "get_weather", "args": {"city": "Paris"}}]}}
    )
    client, _ = side.take()
    return client


def test_realtime_tool_round_trip_over_live() -> None:
    side = _realtime_on_live()
    client = _tool_turn(side)
    done = client[-1]
    assert done["type"] == "response.done"
    (call,) = done["response"]["output"]
    assert (call["type"], call["call_id"], call["name"], json.loads(call["arguments"])) == (
        "function_call",
        "fc-1",
        "get_weather",
        {"city": "Paris"},
    )
    side.send(
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "fc-1", "output": '{"temp_c": 18}'},
        }
    )
    side.send({"type": "response.create"})
    _, upstream = side.take()
    # The Realtime result has no function name: the bridge remembers the call's. Live goes on
    # by itself after toolResponse, so the response.create asks for nothing more.
    assert upstream == [
        {
            "toolResponse": {
                "functionResponses": [{"id": "fc-1", "name": "get_weather", "response": {"temp_c": 18}}]
            }
        }
    ]
    side.serve(
        {"serverContent": {"modelTurn": {"parts": [{"text": "18°C in Paris."}]}}},
        {"serverContent": {"turnComplete": True}},
    )
    client, _ = side.take()
    assert _text_of(client) == "18°C in Paris."
    session = side.bridge.session
    assert [r.finish_reason for r in session.responses] == ["tool_calls", "stop"]
    assert [e.kind for e in session.events if e.kind == "tool_result"] == ["tool_result"]


def test_live_cancelling_a_call_the_realtime_client_got_deletes_its_item() -> None:
    side = _realtime_on_live()
    client = _tool_turn(side)
    item_id = client[-1]["response"]["output"][0]["id"]
    side.serve({"toolCallCancellation": {"ids": ["fc-1"]}})
    client, _ = side.take()
    assert client == [
        {"type": "conversation.item.deleted", "item_id": item_id, "event_id": client[0]["event_id"]}
    ]
    (event,) = [e for e in side.bridge.session.events if e.kind == "cancellation"]
    assert event.call_id == "fc-1"


def test_realtime_audio_turn_over_live_is_resampled() -> None:
    side = _realtime_on_live()
    side.send(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
        }
    )
    side.take()
    audio = _pcm(24000)  # one second at 24 kHz
    for start in range(0, len(audio), 4801):  # odd-sized chunks: a sample split between two
        side.send(
            {
                "type": "input_audio_buffer.append",
                "audio": base64.b64encode(audio[start : start + 4801]).decode(),
            }
        )
    side.serve({"setupComplete": {}})
    side.send({"type": "input_audio_buffer.commit"})
    side.send({"type": "response.create"})
    _, upstream = side.take()
    assert upstream[0]["setup"]["realtimeInputConfig"] == {"automaticActivityDetection": {"disabled": True}}
    inputs = [m["realtimeInput"] for m in upstream if "realtimeInput" in m]
    assert inputs[0] == {"activityStart": {}}
    assert inputs[-1] == {"activityEnd": {}}
    chunks = [base64.b64decode(i["audio"]["data"]) for i in inputs if "audio" in i]
    assert {i["audio"]["mimeType"] for i in inputs if "audio" in i} == {"audio/pcm;rate=16000"}
    assert sum(len(c) for c in chunks) == 16000 * 2  # one second at 16 kHz
    assert not any("clientContent" in m for m in upstream)  # Live answers at activityEnd
    # The answer: Live's 24 kHz audio, as the Realtime client asked (PCM16 24 kHz), unchanged.
    answer = _pcm(12000)
    side.serve(
        {
            "serverContent": {
                "modelTurn": {
                    "parts": [
                        {
                            "inlineData": {
                                "mimeType": "audio/pcm;rate=24000",
                                "data": base64.b64encode(answer).decode(),
                            }
                        }
                    ]
                }
            }
        },
        {"serverContent": {"outputTranscription": {"text": "Hi."}}},
        {"serverContent": {"generationComplete": True}},
        {"serverContent": {"turnComplete": True}},
    )
    client, _ = side.take()
    out = b"".join(base64.b64decode(e["delta"]) for e in client if e["type"] == "response.output_audio.delta")
    assert out == answer
    transcript = "".join(e["delta"] for e in client if e["type"] == "response.output_audio_transcript.delta")
    assert transcript == "Hi."


def test_g711_output_is_converted_for_the_realtime_client() -> None:
    side = _realtime_on_live()
    side.send(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"output": {"format": {"type": "audio/pcmu"}}}},
        }
    )
    side.send({"type": "response.create"})
    side.serve({"setupComplete": {}})
    side.take()
    answer = _pcm(24000)
    parts = [
        {
            "inlineData": {
                "mimeType": "audio/pcm;rate=24000",
                "data": base64.b64encode(answer[i : i + 9600]).decode(),
            }
        }
        for i in range(0, len(answer), 9600)
    ]
    side.serve(*({"serverContent": {"modelTurn": {"parts": [p]}}} for p in parts))
    side.serve({"serverContent": {"generationComplete": True}}, {"serverContent": {"turnComplete": True}})
    client, _ = side.take()
    out = b"".join(base64.b64decode(e["delta"]) for e in client if e["type"] == "response.output_audio.delta")
    assert len(out) == 8000  # one second of μ-law at 8 kHz, one byte a sample


def test_a_message_live_cannot_carry_is_refused_and_the_session_goes_on() -> None:
    side = _realtime_on_live()
    side.send({"type": "response.create"})
    side.serve({"setupComplete": {}})
    side.take()
    t = side.send({"type": "response.cancel", "event_id": "c1"})
    assert t.to_upstream == []
    (error,) = side.client
    assert error["type"] == "error"
    assert error["error"]["param"] == "response.cancel"
    assert error["error"]["event_id"] == "c1"
    assert t.close is None
    side.take()
    side.send(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Still there?"}],
            },
        }
    )
    _, upstream = side.take()
    assert upstream == [
        {
            "clientContent": {
                "turns": [{"role": "user", "parts": [{"text": "Still there?"}]}],
                "turnComplete": False,
            }
        }
    ]


def test_drop_params_reports_instead_of_refusing() -> None:
    side = _realtime_on_live(drop_params=True)
    side.send({"type": "response.create"})
    side.serve({"setupComplete": {}})
    side.take()
    t = side.send(
        {"type": "conversation.item.truncate", "item_id": "i", "content_index": 0, "audio_end_ms": 100}
    )
    assert t.to_client == []
    assert t.to_upstream == []
    (rec,) = t.dropped
    assert rec.kind == "session_frame"
    assert rec.what.startswith("conversation.item.truncate")
    assert (rec.source, rec.target) == (RT, LIVE)
    assert side.bridge.drops.records == [rec]


def test_a_voice_without_a_live_counterpart_is_refused() -> None:
    side = _realtime_on_live()
    t = side.send(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"output": {"voice": {"id": "voice_123"}}}},
        }
    )
    (error,) = _msgs(t.to_client)
    assert error["error"]["param"] == "session.audio.output.voice"
    assert side.bridge.config.voice == "alloy"  # not applied
    mapped = _realtime_on_live()
    mapped.send(
        {"type": "session.update", "session": {"type": "realtime", "audio": {"output": {"voice": "cedar"}}}}
    )
    mapped.send({"type": "response.create"})
    setup = mapped.upstream[0]["setup"]
    assert setup["generationConfig"]["speechConfig"] == {
        "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Algenib"}}
    }
    assert setup["generationConfig"]["responseModalities"] == ["AUDIO"]


def test_semantic_vad_is_refused_for_live_unless_dropped() -> None:
    update = {
        "type": "session.update",
        "session": {
            "type": "realtime",
            "audio": {"input": {"turn_detection": {"type": "semantic_vad", "eagerness": "high"}}},
        },
    }
    side = _realtime_on_live()
    (error,) = _msgs(side.send(update).to_client)
    assert error["error"]["param"] == "session.audio.input.turn_detection.eagerness"
    assert "session.audio.input.turn_detection.type" in error["error"]["message"]
    dropped = _realtime_on_live(drop_params=True)
    t = dropped.send(update)
    assert _types(_msgs(t.to_client)) == ["session.updated"]
    assert sorted(r.what.split(" ")[0] for r in t.dropped) == [
        "session.audio.input.turn_detection.eagerness",
        "session.audio.input.turn_detection.type",
    ]


def test_a_change_after_the_live_setup_went_out_is_refused() -> None:
    side = _realtime_on_live()
    side.send({"type": "response.create"})
    side.take()
    same = side.send(
        {"type": "session.update", "session": {"type": "realtime", "output_modalities": ["audio"]}}
    )
    assert _types(_msgs(same.to_client)) == ["session.updated"]  # nothing changes
    changed = side.send({"type": "session.update", "session": {"type": "realtime", "instructions": "New."}})
    (error,) = _msgs(changed.to_client)
    assert error["error"]["param"] == "setup.systemInstruction"
    assert changed.to_upstream == []


def _answered_ok(side: Side) -> list[Any]:
    """The client's messages once the Realtime client asked for a response and Live answered "ok"."""
    side.send({"type": "response.create"})
    side.serve({"setupComplete": {}})
    side.serve(
        {"serverContent": {"modelTurn": {"parts": [{"text": "ok"}]}}},
        {"serverContent": {"turnComplete": True}},
    )
    client, _ = side.take()
    return client


def test_a_beta_realtime_client_gets_beta_event_names() -> None:
    side = Side(ms.SessionBridge(RT, LIVE, model="gemini-live-2.5-flash"))
    side.open()
    side.take()
    side.send({"type": "session.update", "session": {"modalities": ["text"], "instructions": "x"}})
    assert side.bridge.beta
    client = _answered_ok(side)
    assert "response.text.delta" in _types(client)
    assert "response.output_text.delta" not in _types(client)
    assert _text_of(client) == "ok"


@pytest.mark.parametrize("given", [False, True])
def test_the_beta_flag_holds_before_and_after_the_session_writes(given: bool) -> None:
    # A session's writer is made on first use: the flag given or set before it is the writer's.
    bridge = ms.SessionBridge(RT, LIVE, model="gemini-live-2.5-flash", beta=given)
    assert bridge.beta is given
    bridge.beta = not given
    assert bridge.beta is not given
    side = Side(bridge)
    side.open()
    client = _answered_ok(side)
    beta_names = "response.text.delta" in _types(client)
    assert beta_names is not given
    assert bridge.beta is not given
    same = ms.SessionBridge(RT, RT, model="gpt-realtime", beta=given)
    assert same.beta is given


# ------------------------------------------------------------------ Live client, Realtime upstream


def _live_on_realtime(**options: Any) -> Side:
    side = Side(ms.SessionBridge(LIVE, RT, model="gpt-realtime", **options))
    assert side.open().to_client == []
    side.serve(
        {
            "type": "session.created",
            "event_id": "s0",
            "session": {
                "type": "realtime",
                "object": "realtime.session",
                "id": "sess_1",
                "model": "gpt-realtime",
            },
        }
    )
    return side


def _setup(side: Side, **generation: Any) -> None:
    setup = {
        "model": "models/whatever",
        "generationConfig": {"responseModalities": ["TEXT"], **generation},
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}],
    }
    side.send({"setup": setup})
    client, upstream = side.take()
    assert client == []  # setupComplete waits for the upstream's session.updated
    (update,) = upstream
    assert update["session"]["instructions"] == "Be brief."
    assert update["session"]["output_modalities"] == ["text"]
    assert update["session"]["tools"] == [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
    side.serve(
        {
            "type": "session.updated",
            "event_id": "s1",
            "session": {
                "type": "realtime",
                "object": "realtime.session",
                "id": "sess_1",
                "model": "gpt-realtime",
            },
        }
    )
    client, _ = side.take()
    assert client == [{"setupComplete": {}}]


def _rt_text_response(rid: str, item: str, text: str) -> list[dict[str, Any]]:
    base = {"response_id": rid, "item_id": item, "output_index": 0, "content_index": 0}
    msg_item = {
        "id": item,
        "object": "realtime.item",
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    done_item = {**msg_item, "status": "completed", "content": [{"type": "output_text", "text": text}]}
    return [
        {
            "type": "response.created",
            "event_id": "e1",
            "response": {"id": rid, "object": "realtime.response", "status": "in_progress", "output": []},
        },
        {
            "type": "response.output_item.added",
            "event_id": "e2",
            "response_id": rid,
            "output_index": 0,
            "item": msg_item,
        },
        {
            "type": "response.content_part.added",
            "event_id": "e3",
            **base,
            "part": {"type": "text", "text": ""},
        },
        {"type": "response.output_text.delta", "event_id": "e4", **base, "delta": text},
        {"type": "response.output_text.done", "event_id": "e5", **base, "text": text},
        {
            "type": "response.content_part.done",
            "event_id": "e6",
            **base,
            "part": {"type": "text", "text": text},
        },
        {
            "type": "response.output_item.done",
            "event_id": "e7",
            "response_id": rid,
            "output_index": 0,
            "item": done_item,
        },
        {
            "type": "response.done",
            "event_id": "e8",
            "response": {
                "id": rid,
                "object": "realtime.response",
                "status": "completed",
                "output": [done_item],
                "usage": {"total_tokens": 9, "input_tokens": 5, "output_tokens": 4},
            },
        },
    ]


def test_live_text_turn_over_realtime() -> None:
    side = _live_on_realtime()
    _setup(side)
    side.send(
        {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Hi"}]}], "turnComplete": True}}
    )
    _, upstream = side.take()
    assert _types(upstream) == ["conversation.item.create", "response.create"]
    assert upstream[0]["item"]["content"] == [{"type": "input_text", "text": "Hi"}]
    side.serve(*_rt_text_response("resp_1", "item_1", "Hello."))
    client, _ = side.take()
    assert _live_text(client) == "Hello."
    assert client[-1]["serverContent"] == {"turnComplete": True}
    assert client[-1]["usageMetadata"]["totalTokenCount"] == 9
    assert side.dropped == []


def _rt_call_response(rid: str, *, status: str = "completed") -> list[dict[str, Any]]:
    item = {
        "id": "item_c",
        "object": "realtime.item",
        "type": "function_call",
        "status": "in_progress",
        "name": "get_weather",
        "call_id": "call_1",
        "arguments": "",
    }
    args = '{"city": "Paris"}'
    done_item = {**item, "status": "completed" if status == "completed" else "incomplete", "arguments": args}
    base = {"response_id": rid, "item_id": "item_c", "output_index": 0, "call_id": "call_1"}
    details = None if status == "completed" else {"type": "cancelled", "reason": "client_cancelled"}
    return [
        {
            "type": "response.created",
            "event_id": "c1",
            "response": {"id": rid, "object": "realtime.response", "status": "in_progress", "output": []},
        },
        {
            "type": "response.output_item.added",
            "event_id": "c2",
            "response_id": rid,
            "output_index": 0,
            "item": item,
        },
        {"type": "response.function_call_arguments.delta", "event_id": "c3", **base, "delta": args},
        {
            "type": "response.function_call_arguments.done",
            "event_id": "c4",
            **base,
            "name": "get_weather",
            "arguments": args,
        },
        {
            "type": "response.output_item.done",
            "event_id": "c5",
            "response_id": rid,
            "output_index": 0,
            "item": {**done_item, "status": "completed"},
        },
        {
            "type": "response.done",
            "event_id": "c6",
            "response": {
                "id": rid,
                "object": "realtime.response",
                "status": status,
                "status_details": details,
                "output": [done_item],
            },
        },
    ]


def test_live_tool_round_trip_over_realtime() -> None:
    side = _live_on_realtime()
    _setup(side)
    side.send(
        {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Paris?"}]}], "turnComplete": True}}
    )
    side.take()
    side.serve(*_rt_call_response("resp_1"))
    client, _ = side.take()
    calls = [m["toolCall"] for m in client if "toolCall" in m]
    assert calls == [{"functionCalls": [{"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}]}]
    side.send(
        {
            "toolResponse": {
                "functionResponses": [{"id": "call_1", "name": "get_weather", "response": {"temp_c": 18}}]
            }
        }
    )
    _, upstream = side.take()
    assert upstream == [
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "call_1", "output": '{"temp_c":18}'},
        },
        {"type": "response.create"},
    ]
    side.serve(*_rt_text_response("resp_2", "item_2", "18°C."))
    client, _ = side.take()
    assert _live_text(client) == "18°C."
    assert [r.finish_reason for r in side.bridge.session.responses] == ["tool_calls", "stop"]


def test_a_realtime_cancelled_call_reaches_the_live_client_as_a_cancellation() -> None:
    side = _live_on_realtime()
    _setup(side)
    side.send(
        {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Paris?"}]}], "turnComplete": True}}
    )
    side.take()
    side.serve(*_rt_call_response("resp_1", status="cancelled"))
    client, _ = side.take()
    assert {"toolCallCancellation": {"ids": ["call_1"]}} in client
    (response,) = side.bridge.session.responses
    assert response.status == "incomplete"
    assert response.finish_reason != "tool_calls"


def test_a_recoverable_realtime_error_is_reported_to_a_live_client_and_the_session_goes_on() -> None:
    side = _live_on_realtime()
    _setup(side)
    t = side.serve(
        {
            "type": "error",
            "event_id": "x",
            "error": {
                "type": "invalid_request_error",
                "code": "response_cancel_not_active",
                "message": "no active response",
                "param": None,
            },
        }
    )
    assert t.to_client == []  # Live has no error message
    (rec,) = t.dropped
    assert rec.kind == "error"
    side.send(
        {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Hi"}]}], "turnComplete": True}}
    )
    side.serve(*_rt_text_response("resp_1", "item_1", "Fine."))
    client, _ = side.take()
    assert _live_text(client) == "Fine."
    session = side.bridge.session
    assert [e.kind for e in session.events if e.kind == "error"] == ["error"]
    assert session.responses[-1].status == "completed"


def test_live_audio_turn_over_realtime_is_resampled() -> None:
    side = _live_on_realtime()
    setup = {
        "model": "m",
        "generationConfig": {"responseModalities": ["AUDIO"]},
        "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
    }
    side.send({"setup": setup})
    _, (update,) = side.take()
    assert update["session"]["audio"]["input"]["turn_detection"] is None
    assert update["session"]["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    side.serve(
        {
            "type": "session.updated",
            "event_id": "s1",
            "session": {"type": "realtime", "object": "realtime.session", "id": "sess_1"},
        }
    )
    side.send({"realtimeInput": {"activityStart": {}}})
    audio = _pcm(16000)  # one second at 16 kHz
    for start in range(0, len(audio), 3201):
        side.send(
            {
                "realtimeInput": {
                    "audio": {
                        "mimeType": "audio/pcm;rate=16000",
                        "data": base64.b64encode(audio[start : start + 3201]).decode(),
                    }
                }
            }
        )
    side.send({"realtimeInput": {"activityEnd": {}}})
    _, upstream = side.take()
    appended = b"".join(
        base64.b64decode(e["audio"]) for e in upstream if e["type"] == "input_audio_buffer.append"
    )
    assert len(appended) == 24000 * 2  # one second at 24 kHz
    assert _types(upstream)[-2:] == ["input_audio_buffer.commit", "response.create"]
    assert side.bridge.session.events == [e for e in side.bridge.session.events if "append" not in e.type]


def test_a_live_setup_field_realtime_cannot_carry_closes_the_live_client() -> None:
    side = _live_on_realtime()
    t = side.send({"setup": {"model": "m", "proactivity": {"proactiveAudio": True}}})
    assert t.to_upstream == []
    assert t.close is not None
    code, reason = t.close
    assert code == 1007
    assert "setup.proactivity" in reason
    assert len(reason.encode()) <= 123
    dropped = _live_on_realtime(drop_params=True)
    t = dropped.send({"setup": {"model": "m", "proactivity": {"proactiveAudio": True}}})
    assert t.close is None
    assert [r.what.split(" ")[0] for r in t.dropped] == ["setup.proactivity"]
    assert _types(_msgs(t.to_upstream)) == ["session.update"]


def test_a_live_voice_without_a_realtime_counterpart_is_refused() -> None:
    side = _live_on_realtime()

    def setup(voice: str) -> dict[str, Any]:
        speech = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": voice}}}
        return {"setup": {"model": "m", "generationConfig": {"speechConfig": speech}}}

    t = side.send(setup("Sulafat"))
    assert t.close is not None
    assert "voiceName" in t.close[1]
    known = _live_on_realtime()
    (update,) = _msgs(known.send(setup("Kore")).to_upstream)
    assert update["session"]["audio"]["output"]["voice"] == "sage"


def test_the_upstream_closing_ends_the_client_in_its_protocol() -> None:
    side = _realtime_on_live()
    t = side.bridge.upstream_closed(1011, "internal error")
    (error,) = _msgs(t.to_client)
    oracles.realtime_server_event(error)
    assert error["error"]["code"] == "upstream_closed"
    assert t.close == (1011, "internal error")


# ------------------------------------------------------------------ same protocol


@pytest.mark.parametrize("protocol", [RT, LIVE])
def test_the_same_protocol_passes_through_and_is_still_read(protocol: str) -> None:
    bridge = ms.SessionBridge(protocol, protocol, model="m")
    assert bridge.opening() == ms.Translated()
    if protocol == RT:
        sent = _j({"type": "response.create"})
        assert bridge.from_client(sent).to_upstream == [sent]
        served = [_j(e) for e in _rt_text_response("resp_1", "item_1", "Same.")]
    else:
        t = bridge.from_client(_j({"setup": {"model": "models/alias"}}))
        assert _msgs(t.to_upstream) == [{"setup": {"model": "models/m"}}]  # the route's model
        served = [
            _j({"serverContent": {"modelTurn": {"parts": [{"text": "Same."}]}}}),
            _j({"serverContent": {"turnComplete": True}}),
        ]
    for msg in served:
        assert bridge.from_upstream(msg).to_client == [msg]
    (response,) = bridge.session.responses
    assert response.messages[0].content == [ms.TextPart(text="Same.")]


@pytest.mark.parametrize("protocol", [RT, LIVE])
def test_the_relay_fast_path_sends_and_reads_what_the_translated_path_does(protocol: str) -> None:
    # The websocket relay calls pass_client / pass_upstream for a same-protocol session: the
    # same messages go on, and the Session read on the side is the same.
    slow = ms.SessionBridge(protocol, protocol, model="m")
    fast = ms.SessionBridge(protocol, protocol, model="m")
    if protocol == RT:
        sent = [_j({"type": "response.create"}), _j({"type": "input_audio_buffer.append", "audio": "AAAA"})]
        served = [_j(e) for e in _rt_text_response("resp_1", "item_1", "Same.")]
    else:
        sent = [_j({"setup": {"model": "models/alias"}}), _j({"clientContent": {"turnComplete": True}})]
        served = [
            _j({"setupComplete": {}}),
            _j({"serverContent": {"modelTurn": {"parts": [{"text": "Same."}]}}}),
            _j({"serverContent": {"turnComplete": True}}),
        ]
    for msg in sent:
        assert [fast.pass_client(msg)] == slow.from_client(msg).to_upstream
    for msg in served:
        assert slow.from_upstream(msg).to_client == [msg]
        fast.pass_upstream(msg)
    assert fast.session == slow.session
    assert fast.session.responses[0].messages[0].content == [ms.TextPart(text="Same.")]
    if protocol == LIVE:
        assert json.loads(fast.pass_client(sent[0]))["setup"]["model"] == "models/m"  # the route's model


@pytest.mark.parametrize("protocol", [RT, LIVE])
def test_a_relay_that_keeps_no_passthrough_holds_memory_for_responses_only(protocol: str) -> None:
    # The bridge's relay (keep_passthrough=False): a long session of pass-through messages (pings,
    # acknowledgements, rate limits) is counted by type, not kept; the responses are the same.
    import gc
    import tracemalloc

    ping: dict[str, Any]
    if protocol == RT:
        ping = {"type": "rate_limits.updated", "rate_limits": [{"name": "requests", "remaining": 9}]}
        served = [_j(e) for e in _rt_text_response("resp_1", "item_1", "Same.")]
    else:
        ping = {"sessionResumptionUpdate": {"newHandle": "h", "resumable": True}}
        served = [
            _j({"serverContent": {"modelTurn": {"parts": [{"text": "Same."}]}}}),
            _j({"serverContent": {"turnComplete": True}}),
        ]
    message = _j(ping)
    kept = ms.SessionBridge(protocol, protocol, model="m")
    lean = ms.SessionBridge(protocol, protocol, model="m", keep_passthrough=False)

    def grown(bridge: ms.SessionBridge, n: int) -> int:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            bridge.pass_upstream(message)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return after - before

    for bridge in (kept, lean):
        grown(bridge, 100)  # first-use state made
        for msg in served:
            bridge.pass_upstream(msg)
    assert grown(kept, 1000) > 1000 * 100  # each message kept: memory grows with the session
    assert grown(lean, 1000) < 1000 * 4  # counted only: not a byte a message kept
    assert lean.session.responses == kept.session.responses
    (ptype,) = {e.type for e in kept.session.events if e.kind == "server"}
    assert lean.session.unknown[ptype] == kept.session.unknown[ptype] == 1100
    assert not [e for e in lean.session.events if e.kind == "server"]


def test_the_relay_fast_path_refuses_a_translated_session() -> None:
    bridge = ms.SessionBridge(RT, LIVE, model="m")
    with pytest.raises(ms.LocalProtocolError, match="translated"):
        bridge.pass_client(_j({"type": "response.create"}))
    with pytest.raises(ms.LocalProtocolError, match="translated"):
        bridge.pass_upstream(_j({"setupComplete": {}}))


# ------------------------------------------------------------------ HTTP upstream


CHAT_STREAM = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Bon"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"jour."},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def test_a_realtime_client_over_an_http_upstream_turn_by_turn() -> None:
    side = Side(ms.SessionBridge(RT, "openai-chat", model="gpt-4o"))
    side.open()
    client, _ = side.take()
    assert client[0]["session"]["output_modalities"] == ["text"]
    side.send({"type": "session.update", "session": {"type": "realtime", "instructions": "French."}})
    side.send(
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        }
    )
    t = side.send({"type": "response.create"})
    assert t.request is not None
    assert t.request.body["messages"] == [
        {"role": "system", "content": "French."},
        {"role": "user", "content": "Hello"},
    ]
    assert t.request.body["stream"] is True
    assert t.request.body["model"] == "gpt-4o"
    side.take()
    out = side.bridge.upstream_http(CHAT_STREAM[:100])
    out.to_client += side.bridge.upstream_http(CHAT_STREAM[100:]).to_client
    out.to_client += side.bridge.upstream_http_end().to_client
    side._check(out)
    client, _ = side.take()
    assert _text_of(client) == "Bonjour."
    assert client[-1]["type"] == "response.done"
    # The next turn carries the answer in its history.
    side.send(
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Merci"}]},
        }
    )
    t = side.send({"type": "response.create"})
    assert t.request is not None
    assert [m["role"] for m in t.request.body["messages"]] == ["system", "user", "assistant", "user"]
    assert len(side.bridge.session.responses) == 1


def test_audio_is_refused_with_an_http_upstream() -> None:
    side = Side(ms.SessionBridge(RT, "anthropic", model="claude-x"))
    side.open()
    side.take()
    t = side.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(_pcm(10)).decode()})
    (error,) = _msgs(t.to_client)
    assert error["error"]["param"] == "input audio"
    t = side.send({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["audio"]}})
    (error,) = _msgs(t.to_client)
    assert error["error"]["param"] == "session.output_modalities"
    live_side = Side(ms.SessionBridge(LIVE, "openai-chat", model="gpt-4o"))
    t = live_side.send({"setup": {"model": "m", "generationConfig": {"responseModalities": ["AUDIO"]}}})
    assert t.close is not None
    assert "responseModalities" in t.close[1]
    silent = Side(ms.SessionBridge(LIVE, "openai-chat", model="gpt-4o"))
    t = silent.send({"setup": {"model": "m"}})  # Live answers in audio unless told otherwise
    assert t.close is not None
    assert "responseModalities" in t.close[1]


def test_a_live_client_over_an_http_upstream() -> None:
    side = Side(ms.SessionBridge(LIVE, "openai-chat", model="gpt-4o"))
    side.send({"setup": {"model": "m", "generationConfig": {"responseModalities": ["TEXT"]}}})
    client, _ = side.take()
    assert client == [{"setupComplete": {}}]
    t = side.send({"realtimeInput": {"text": "Hello"}})
    assert t.request is not None
    side._check(side.bridge.upstream_http(CHAT_STREAM))
    side._check(side.bridge.upstream_http_end())
    client, _ = side.take()
    assert _live_text(client) == "Bonjour."
    assert client[-1]["serverContent"] == {"turnComplete": True}


def test_a_cut_http_turn_ends_as_a_failure_the_client_sees() -> None:
    side = Side(ms.SessionBridge(RT, "openai-chat", model="gpt-4o"))
    side.open()
    side.send({"type": "response.create"})
    side.take()
    first = CHAT_STREAM.index(b"\n\n") + 2
    side._check(side.bridge.upstream_http(CHAT_STREAM[: first + 30]))  # cut inside the second chunk
    side._check(side.bridge.upstream_http_end())
    client, _ = side.take()
    assert _text_of(client) == "Bon"
    done = [e for e in client if e["type"] == "response.done"]
    assert [d["response"]["status"] for d in done] == ["failed"]
    assert [e["error"]["type"] for e in client if e["type"] == "error"] == ["cut"]
    assert side.bridge.session.responses[0].status == "failed"
    # Cut before anything arrived: the error alone, and the next turn can be asked for.
    side.send({"type": "response.create"})
    side._check(side.bridge.upstream_http(CHAT_STREAM[:20]))
    side._check(side.bridge.upstream_http_end())
    client, _ = side.take()
    assert _types(client) == ["error"]
    assert side.send({"type": "response.create"}).request is not None


@pytest.mark.parametrize("upstream", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_each_http_upstream_takes_the_session_as_turns(upstream: str) -> None:
    side = Side(ms.SessionBridge(RT, upstream, model="some-model"))
    side.open()
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
    side.send(
        {
            "type": "session.update",
            "session": {"type": "realtime", "instructions": "Be French.", "tools": tools},
        }
    )
    side.send(
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        }
    )
    t = side.send({"type": "response.create"})
    assert t.request is not None
    assert t.request.protocol == upstream
    assert t.request.dropped == []
    body = json.dumps(t.request.body)
    assert "Be French." in body
    assert "Hello" in body
    assert "get_weather" in body
    assert ms.validate(t.request.body, upstream) == []
    side.take()
    stream = ms.convert(CHAT_STREAM, to=upstream)
    side._check(side.bridge.upstream_http(stream))
    side._check(side.bridge.upstream_http_end())
    client, _ = side.take()
    assert _text_of(client) == "Bonjour."
    assert client[-1]["type"] == "response.done"
    assert client[-1]["response"]["status"] == "completed"


def _rt_audio_response(rid: str, audio: bytes, transcript: str) -> list[dict[str, Any]]:
    base = {"response_id": rid, "item_id": "item_a", "output_index": 0, "content_index": 0}
    item = {
        "id": "item_a",
        "object": "realtime.item",
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    done_item = {
        **item,
        "status": "completed",
        "content": [{"type": "output_audio", "transcript": transcript}],
    }
    return [
        {
            "type": "response.created",
            "event_id": "a1",
            "response": {"id": rid, "object": "realtime.response", "status": "in_progress", "output": []},
        },
        {
            "type": "response.output_item.added",
            "event_id": "a2",
            "response_id": rid,
            "output_index": 0,
            "item": item,
        },
        {
            "type": "response.content_part.added",
            "event_id": "a3",
            **base,
            "part": {"type": "audio", "transcript": ""},
        },
        {
            "type": "response.output_audio.delta",
            "event_id": "a4",
            **base,
            "delta": base64.b64encode(audio).decode(),
        },
        {"type": "response.output_audio_transcript.delta", "event_id": "a5", **base, "delta": transcript},
        {"type": "response.output_audio.done", "event_id": "a6", **base},
        {
            "type": "response.content_part.done",
            "event_id": "a7",
            **base,
            "part": {"type": "audio", "transcript": transcript},
        },
        {
            "type": "response.output_item.done",
            "event_id": "a8",
            "response_id": rid,
            "output_index": 0,
            "item": done_item,
        },
        {
            "type": "response.done",
            "event_id": "a9",
            "response": {
                "id": rid,
                "object": "realtime.response",
                "status": "completed",
                "output": [done_item],
            },
        },
    ]


@pytest.mark.parametrize("transcribe", [True, False])
def test_realtime_audio_reaches_a_live_client_with_a_transcript_only_if_asked(transcribe: bool) -> None:
    side = _live_on_realtime()
    setup: dict[str, Any] = {"model": "m", "generationConfig": {"responseModalities": ["AUDIO"]}}
    if transcribe:
        setup["outputAudioTranscription"] = {}
    side.send({"setup": setup})
    side.serve({"type": "session.updated", "event_id": "s1", "session": {"type": "realtime"}})
    side.send({"realtimeInput": {"text": "Say hi"}})
    side.take()
    answer = _pcm(4800)
    side.serve(*_rt_audio_response("resp_1", answer, "Hi."))
    client, _ = side.take()
    parts = [
        p for m in client for p in ((m.get("serverContent") or {}).get("modelTurn") or {}).get("parts", [])
    ]
    audio = b"".join(base64.b64decode(p["inlineData"]["data"]) for p in parts if "inlineData" in p)
    assert audio == answer  # Realtime's 24 kHz is what a Live client gets
    assert {p["inlineData"]["mimeType"] for p in parts if "inlineData" in p} == {"audio/pcm;rate=24000"}
    transcripts = [
        m["serverContent"]["outputTranscription"]["text"]
        for m in client
        if "outputTranscription" in m.get("serverContent", {})
    ]
    assert transcripts == (["Hi."] if transcribe else [])


def test_a_broken_client_message_is_answered_in_the_client_protocol() -> None:
    realtime = ms.SessionBridge(RT, LIVE, model="m")
    t = realtime.from_client(b"{not json")
    (error,) = _msgs(t.to_client)
    oracles.realtime_server_event(error)
    assert error["error"]["type"] == "invalid_request_error"
    assert t.to_upstream == []
    assert t.close is None
    live_client = ms.SessionBridge(LIVE, RT, model="m")
    t = live_client.from_client(_j({"setup": {}, "clientContent": {}}))
    assert t.close is not None
    assert t.close[0] == 1007


def test_a_broken_upstream_message_is_a_remote_protocol_error() -> None:
    bridge = ms.SessionBridge(RT, LIVE, model="m")
    with pytest.raises(ms.RemoteProtocolError):
        bridge.from_upstream(b"{not json")


def test_the_same_protocol_forwards_what_it_cannot_read_and_says_the_session_stopped() -> None:
    bridge = ms.SessionBridge(RT, RT, model="m")
    odd = _j({"no": "type"})
    assert bridge.from_client(odd).to_upstream == [odd]
    (rec,) = bridge.drops.records
    assert rec.kind == "unknown"
    assert "the rest of the Session" in rec.what
    served = _j(_rt_text_response("resp_1", "item_1", "Still relayed.")[0])
    assert bridge.from_upstream(served).to_client == [served]


def test_a_realtime_call_cut_by_the_server_still_ends_the_live_turn() -> None:
    side = _live_on_realtime()
    _setup(side)
    side.send(
        {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Paris?"}]}], "turnComplete": True}}
    )
    side.take()
    created, added, delta, *_, done = _rt_call_response("resp_1", status="cancelled")
    delta["delta"] = '{"ci'  # the arguments stop half-way: the call never ended
    done["response"]["status_details"] = {"type": "cancelled", "reason": "turn_detected"}
    side.serve(created, added, delta, done)
    client, _ = side.take()
    assert not [m for m in client if "toolCall" in m]  # a cut call is never a call to run
    assert client[-1]["serverContent"]["turnComplete"] is True  # the Live client's turn ends
    assert any("cut before they ended" in d.what for d in side.dropped)
    (response,) = side.bridge.session.responses
    assert response.status == "incomplete"
