"""The SDKs' realtime clients across protocols: each official client against the OTHER protocol.

openai's ``client.realtime.connect`` talks to the bridge in front of a Gemini Live upstream
(``FakeLive``), google-genai's ``client.aio.live.connect`` in front of an OpenAI Realtime
upstream (``FakeRealtime``); the session translator (``maas_stream._session_bridge``) carries
each turn across. Covered here: a tool round trip, a cancelled call, a recoverable error, and
(Live client) an audio turn with the rates checked both ways. Every server event the openai
client receives validates against the SDK's own event union; google-genai parses each message
into its ``LiveServerMessage``. (A text turn and the openai client's audio turn over Live are in
``test_realtime_bridge``.)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from google import genai
from google.genai import types as genai_types

from tests.bridge.realtime_fakes import (
    ANSWER,
    AUDIO_OUT,
    BRIDGE_KEY,
    TOOL_ANSWER,
    FakeLive,
    FakeRealtime,
    serving,
    tls_files,
)
from tests.bridge.test_realtime_bridge import (
    LIMIT,
    LIVE_MODEL,
    TEXT_CONFIG,
    Events,
    bridge,
    live_upstream,
    openai_client,
    realtime_upstream,
    settled,
    text_of,
    user_text,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from maas_stream.bridge import BridgeApp

pytestmark = pytest.mark.anyio

TOOLS: Any = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


# ---------------------------------------------------------------------------------- openai over Live


@pytest.fixture
async def over_live() -> AsyncIterator[tuple[FakeLive, int, BridgeApp]]:
    async with FakeLive() as fake:
        app = bridge(live_upstream(fake))
        async with serving(app) as port:
            yield fake, port, app


async def test_openai_tool_round_trip_over_live(over_live: tuple[FakeLive, int, BridgeApp]) -> None:
    fake, port, app = over_live
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model=LIVE_MODEL) as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.session.update(
                session={"type": "realtime", "output_modalities": ["text"], "tools": TOOLS}
            )
            await conn.conversation.item.create(item=user_text("weather in Paris?"))  # type: ignore[arg-type]
            await conn.response.create()
            first = (await events.until("response.done"))[-1]
            (call,) = first.response.output
            await conn.conversation.item.create(
                item={"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 18}'}
            )
            await conn.response.create()
            second = await events.until("response.done")
    await settled(app)
    assert (call.type, call.name, call.status) == ("function_call", "get_weather", "completed")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert call.call_id == "fc-1"  # Live's call id is the client's call_id
    assert text_of(second) == TOOL_ANSWER
    assert second[-1].response.status == "completed"
    setup = fake.seen.messages[0]["setup"]
    assert setup["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    (result,) = [m["toolResponse"] for m in fake.seen.messages if "toolResponse" in m]
    assert result == {
        "functionResponses": [{"id": "fc-1", "name": "get_weather", "response": {"temp_c": 18}}]
    }
    # Live answers a tool response by itself: the client's response.create is not a new turn
    assert [m for m in fake.seen.messages if "clientContent" in m][-1] == {
        "clientContent": {"turnComplete": True}
    }
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


async def test_openai_cancelled_call_over_live(over_live: tuple[FakeLive, int, BridgeApp]) -> None:
    fake, port, app = over_live
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model=LIVE_MODEL) as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.session.update(
                session={"type": "realtime", "output_modalities": ["text"], "tools": TOOLS}
            )
            await conn.conversation.item.create(item=user_text("slow weather"))  # type: ignore[arg-type]
            await conn.response.create()
            first = (await events.until("response.done"))[-1]
            deleted = (await events.until("conversation.item.deleted"))[-1]
            await conn.conversation.item.create(item=user_text("hi"))  # type: ignore[arg-type]
            await conn.response.create()
            after = await events.until("response.done")
    await settled(app)
    (call,) = first.response.output
    # Live's toolCall arrives whole, so the client got the call before Live cancelled it; the
    # cancellation is Realtime's removal of that call's item: the client must not run it.
    assert call.call_id == "fc-1"
    assert deleted.item_id == call.id
    assert not [m for m in fake.seen.messages if "toolResponse" in m]
    assert text_of(after) == ANSWER  # the session goes on
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


async def test_openai_recoverable_error_over_live(over_live: tuple[FakeLive, int, BridgeApp]) -> None:
    fake, port, app = over_live
    with anyio.fail_after(LIMIT):
        async with openai_client(port).realtime.connect(model=LIVE_MODEL) as conn:
            events = Events(conn)
            await events.until("session.created")
            await conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            await events.until("session.updated")
            # Live has no recoverable error message (its errors close the session), and no
            # counterpart of response.cancel: the bridge answers it with a Realtime error event
            await conn.response.cancel()
            error = (await events.until("error"))[-1]
            await conn.conversation.item.create(item=user_text("still there?"))  # type: ignore[arg-type]
            await conn.response.create()
            turn = await events.until("response.done")
    await settled(app)
    assert error.error.type == "invalid_request_error"
    assert error.error.param == "response.cancel"
    assert "google-live" in (error.error.message or "")
    assert text_of(turn) == ANSWER
    assert turn[-1].response.status == "completed"
    assert not any("response.cancel" in json.dumps(m) for m in fake.seen.messages)
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


# ---------------------------------------------------------------------------------- Live over Realtime


@pytest.fixture
async def over_realtime(tmp_path: Path) -> AsyncIterator[tuple[FakeRealtime, genai.Client, BridgeApp]]:
    cert, key, context = tls_files(tmp_path)
    async with FakeRealtime() as fake:
        app = bridge(realtime_upstream(fake))
        async with serving(app, tls=(cert, key)) as port:
            client = genai.Client(
                api_key=BRIDGE_KEY,
                http_options={"base_url": f"https://127.0.0.1:{port}", "async_client_args": {"ssl": context}},
            )
            yield fake, client, app


REALTIME_MODEL = "gpt-realtime"


async def test_live_audio_turn_over_realtime_is_resampled(
    over_realtime: tuple[FakeRealtime, genai.Client, BridgeApp],
) -> None:
    fake, client, app = over_realtime
    config: Any = {
        "response_modalities": ["AUDIO"],
        "realtime_input_config": {"automatic_activity_detection": {"disabled": True}},
    }
    samples = 3200  # 0.2 s of PCM16 at 16 kHz, Live's input rate; Realtime takes 24 kHz
    audio = bytes(range(256)) * (2 * samples // 256)
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=REALTIME_MODEL, config=config) as session:
            await session.send_realtime_input(activity_start=genai_types.ActivityStart())
            for i in range(0, len(audio), 1280):
                blob = genai_types.Blob(data=audio[i : i + 1280], mime_type="audio/pcm;rate=16000")
                await session.send_realtime_input(audio=blob)
            await session.send_realtime_input(activity_end=genai_types.ActivityEnd())
            messages = [m async for m in session.receive()]
    await settled(app)
    blobs = [
        p.inline_data
        for m in messages
        if m.server_content and m.server_content.model_turn
        for p in m.server_content.model_turn.parts or []
        if p.inline_data
    ]
    out = b"".join(b.data or b"" for b in blobs)
    assert {b.mime_type for b in blobs} == {"audio/pcm;rate=24000"}
    assert len(out) == len(AUDIO_OUT)  # Realtime's 24 kHz output is Live's output rate
    assert out == AUDIO_OUT
    assert abs(len(fake.audio_in) - 2 * samples * 3 // 2) <= 64  # resampled 16 -> 24 kHz
    update = fake.seen.messages[0]
    assert update["type"] == "session.update"
    assert update["session"]["output_modalities"] == ["audio"]
    assert update["session"]["audio"]["input"]["turn_detection"] is None  # manual turns
    assert [m["type"] for m in fake.seen.messages[-2:]] == ["input_audio_buffer.commit", "response.create"]
    assert messages[-1].server_content is not None
    assert messages[-1].server_content.turn_complete


LIVE_TOOLS: Any = [
    {
        "function_declarations": [
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
            }
        ]
    }
]


async def test_live_tool_round_trip_over_realtime(
    over_realtime: tuple[FakeRealtime, genai.Client, BridgeApp],
) -> None:
    fake, client, app = over_realtime
    config: Any = {"response_modalities": ["TEXT"], "tools": LIVE_TOOLS}
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=REALTIME_MODEL, config=config) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "weather?"}]})
            async for message in session.receive():  # a call does not end the turn: stop at it
                if message.tool_call is not None:
                    break
            assert message.tool_call is not None
            assert message.tool_call.function_calls is not None
            (call,) = message.tool_call.function_calls
            await session.send_tool_response(
                function_responses=[
                    genai_types.FunctionResponse(id=call.id, name=call.name, response={"temp_c": 18})
                ]
            )
            answer = [m async for m in session.receive()]
    await settled(app)
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
    assert "".join(m.text or "" for m in answer) == TOOL_ANSWER
    assert fake.seen.messages[0]["session"]["tools"][0]["name"] == "get_weather"
    assert [m["type"] for m in fake.seen.messages[-2:]] == ["conversation.item.create", "response.create"]
    assert fake.seen.messages[-2]["item"] == {
        "type": "function_call_output",
        "call_id": call.id,
        "output": '{"temp_c":18}',
    }
    assert call.id == "call_4"  # the upstream's call_id travels as Live's call id
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


async def test_live_call_cut_by_the_realtime_upstream_is_never_a_call(
    over_realtime: tuple[FakeRealtime, genai.Client, BridgeApp],
) -> None:
    fake, client, app = over_realtime
    config: Any = {"response_modalities": ["TEXT"], "tools": LIVE_TOOLS}
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=REALTIME_MODEL, config=config) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "halt weather"}]})
            cut = [m async for m in session.receive()]
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "hi"}]})
            after = [m async for m in session.receive()]
    await settled(app)
    done = [m for m in fake.seen.messages if m["type"] == "response.create"]
    assert len(done) == 2
    # the upstream's response.done listed the call incomplete: Live calls are whole, so the
    # client never gets it (no toolCall to run), and its turn still ends
    assert [m.tool_call for m in cut if m.tool_call is not None] == []
    assert cut[-1].server_content is not None
    assert cut[-1].server_content.turn_complete
    assert "".join(m.text or "" for m in after) == ANSWER
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)


async def test_live_recoverable_realtime_error_keeps_the_session(
    over_realtime: tuple[FakeRealtime, genai.Client, BridgeApp],
) -> None:
    fake, client, app = over_realtime
    with anyio.fail_after(LIMIT):
        async with client.aio.live.connect(model=REALTIME_MODEL, config=TEXT_CONFIG) as session:
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "oops"}]})
            # the upstream answers an error event (recoverable) and no response: Live has no
            # error message, so the client gets nothing for it; the next turn works
            await session.send_client_content(turns={"role": "user", "parts": [{"text": "hi"}]})
            messages = [m async for m in session.receive()]
    await settled(app)
    assert "".join(m.text or "" for m in messages) == ANSWER
    assert messages[-1].server_content is not None
    assert messages[-1].server_content.turn_complete
    texts = [
        m["item"]["content"][0]["text"] for m in fake.seen.messages if m["type"] == "conversation.item.create"
    ]
    assert texts == ["oops", "hi"]
    assert (app.stats.streams, app.stats.stream_errors) == (1, 0)
