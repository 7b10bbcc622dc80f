"""OpenAI Realtime: server events are read typed by their ``type`` (a msgspec tag per event type).

A recorded line (``feed``) and a websocket message (``feed_message``) give the same events,
whether the type is a streamed delta, a handled event, a common session event or one the
decoder does not name (read untagged and kept whole).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from maas_stream import RemoteProtocolError
from maas_stream import events as ev
from maas_stream.protocols.openai_realtime import StreamDecoder

SESSION: dict[str, Any] = {"type": "session.created", "session": {"model": "gpt-realtime"}}
ITEM: dict[str, Any] = {"id": "m1", "type": "message", "role": "assistant", "content": []}
MESSAGES: list[dict[str, Any]] = [
    SESSION,
    {"type": "rate_limits.updated", "rate_limits": [{"name": "tokens", "remaining": 9}]},
    {"type": "response.created", "response": {"id": "r1", "status": "in_progress", "output": []}},
    {"type": "response.output_item.added", "item": ITEM},
    {"type": "response.content_part.added", "item_id": "m1", "content_index": 0, "part": {"type": "text"}},
    {"type": "response.output_text.delta", "item_id": "m1", "content_index": 0, "delta": "Hel"},
    {"type": "response.text.delta", "item_id": "m1", "content_index": 0, "delta": "lo"},
    {"type": "response.mcp_call.in_progress", "item_id": "x1", "output_index": 1},
    {"type": "response.content_part.added", "item_id": "m1", "content_index": 1, "part": {"type": "audio"}},
    {"type": "response.output_audio.delta", "item_id": "m1", "content_index": 1, "delta": "AAAA"},
    {"type": "response.audio_transcript.delta", "item_id": "m1", "content_index": 1, "delta": "hi"},
    {"type": "response.output_text.done", "item_id": "m1", "content_index": 0, "text": "Hello"},
    {"type": "response.output_item.done", "item": {**ITEM, "status": "completed"}},
    {"type": "response.done", "response": {"id": "r1", "status": "completed", "output": []}},
]


def recorded(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(msgspec.json.encode({"dir": "server", "msg": m}) + b"\n" for m in messages)


def by_message(messages: list[dict[str, Any]]) -> list[ev.Event]:
    decoder = StreamDecoder()
    return [e for m in messages for e in decoder.feed_message(json.dumps(m))]


def test_recorded_lines_and_messages_give_the_same_events() -> None:
    fed = StreamDecoder().feed(recorded(MESSAGES))
    assert fed == by_message(MESSAGES)
    texts = [e.text for e in fed if isinstance(e, ev.TextDelta)]
    assert texts == ["Hel", "lo"]  # both the GA and the beta name
    audio = [(e.data, e.transcript) for e in fed if isinstance(e, ev.AudioDelta)]
    assert audio == [("AAAA", None), (None, "hi")]


@pytest.mark.parametrize("kind", ["rate_limits.updated", "response.mcp_call.in_progress"])
def test_a_session_or_unnamed_type_is_kept_whole(kind: str) -> None:
    msg = next(m for m in MESSAGES if m["type"] == kind)
    unknown = [e for e in StreamDecoder().feed(recorded(MESSAGES)) if isinstance(e, ev.UnknownEvent)]
    assert [e.raw for e in unknown if e.provider_type == kind] == [msg]


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "response.output_text.delta", "item_id": "m1", "delta": 5},
        {"type": "response.created", "response": "r1"},
        {"type": 7},
    ],
)
def test_a_bad_message_fails_both_ways(bad: dict[str, Any]) -> None:
    with pytest.raises(RemoteProtocolError):
        StreamDecoder().feed(recorded([SESSION, bad]))
    with pytest.raises(RemoteProtocolError):
        by_message([SESSION, bad])


def test_every_type_the_decoder_handles_is_read_typed() -> None:
    from maas_stream.protocols.openai_realtime import _decode, _wire

    assert set(_decode._HANDLERS) <= set(_wire._NAMED)
    assert set(_decode._DELTAS) == set(_wire.DELTAS)
    assert not set(_wire.DELTAS) & set(_wire._NAMED)
