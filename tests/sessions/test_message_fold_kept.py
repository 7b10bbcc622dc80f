"""Messages kept whole, and messages decoded once, fold per message as their events would.

``fold_one`` hands a session event kept whole (Realtime's ``conversation.item.*``,
``input_audio_buffer.*`` ...) and a client message (Realtime's client events, Live's
``clientContent``/``realtimeInput``) on as its one ``UnknownEvent`` without ``feed_message``;
Live folds a client's tool results between turns; any other message it decoded goes
``feed_message`` without being decoded again. The reference is the same feed with no message
folded (``tests/sessions/test_message_fold.py``): the Session, the errors and their partial
results must be the same, kept or only counted, as text or bytes.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from maas_stream._stream_aggregator import StreamAggregator
from tests.sessions.test_message_fold import _both, _realtime_turn

ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ping"}]}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}


def _rt(msg: Any) -> tuple[str, str]:
    return ("server", json.dumps(msg))


def _client(msg: Any) -> tuple[str, str]:
    return ("client", msg if isinstance(msg, str) else json.dumps(msg))


REALTIME_KEPT = [
    _client({"type": "conversation.item.create", "item": ITEM}),
    _rt({"type": "conversation.item.added", "event_id": "e1", "previous_item_id": None, "item": ITEM}),
    _rt({"type": "conversation.item.created", "previous_item_id": None, "item": {**ITEM, "id": "x"}}),
    _client({"type": "input_audio_buffer.append", "audio": "AAAA"}),
    _rt({"type": "input_audio_buffer.committed", "previous_item_id": None, "item_id": "i2"}),
    _rt({"type": "input_audio_buffer.speech_started", "audio_start_ms": 5, "item_id": "i2"}),
    _rt({"type": "rate_limits.updated", "rate_limits": []}),
    _rt({"type": "session.updated", "session": {"model": "gpt-realtime-2"}}),
    _rt({"type": "conversation.item.input_audio_transcription.delta", "item_id": "i2", "delta": "he"}),
    _client({"type": "response.create"}),
    _client({"type": "conversation.item.create", "item": OUTPUT}),
    _client({"type": "conversation.item.create", "item": "no object"}),
    _client({"type": "conversation.item.create", "item": {"type": 7}}),
    _client({"type": "input_audio_buffer.append", "audio": "AAAA", "item": 5}),
    _rt({"type": "output_audio_buffer.stopped", "response_id": "r1"}),
    _rt(
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": "i2",
            "transcript": "hey",
        }
    ),
    _rt({"type": "some.new_event", "x": 1}),
]


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize("where", ["between", "in a turn"])
def test_realtime_kept_and_client_messages_fold_as_their_events(
    monkeypatch: pytest.MonkeyPatch, keep: bool, as_bytes: bool, where: str
) -> None:
    head = _realtime_turn() if where == "in a turn" else _realtime_turn()[:1]
    messages: list[tuple[str, Any]] = [*head, *REALTIME_KEPT, *head[1:2]]
    if as_bytes:
        messages = [(d, m.encode()) for d, m in messages]
    folded, reference = _both(monkeypatch, "openai-realtime", messages, keep)
    assert folded == reference
    assert not folded[1]
    assert b"client.conversation.item.create" in folded[0]


@pytest.mark.parametrize(
    "bad",
    [
        _client("[1]"),
        _client("true"),
        _client("0"),
        _client("{}"),
        _client('{"type":5}'),
        _client('{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":5}}'),
        _client('{"type":'),
        ("server", '{"type":"conversation.item.added","item_id":5}'),  # typed: a field of the wrong type
        ("server", '{"type":"conversation.item.added","item":'),
    ],
)
def test_bad_kept_or_client_message_fails_as_its_events(monkeypatch: pytest.MonkeyPatch, bad: Any) -> None:
    messages = [*_realtime_turn(), bad, _client({"type": "response.create"})]
    folded, reference = _both(monkeypatch, "openai-realtime", messages, True)
    assert folded == reference
    assert folded[1]
    assert '"Hello"' in folded[1][0]


LIVE_TEXT = '{"serverContent":{"modelTurn":{"parts":[{"text":"%s"}]}}}'
LIVE_END = '{"serverContent":{"turnComplete":true}}'
LIVE_RESULTS = {"toolResponse": {"functionResponses": [{"id": "f1", "name": "f", "response": {"output": 1}}]}}


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_live_client_messages_fold_as_their_events(
    monkeypatch: pytest.MonkeyPatch, keep: bool, as_bytes: bool
) -> None:
    call = {"toolCall": {"functionCalls": [{"id": "f1", "name": "f", "args": {"a": 1}}]}}
    messages: list[tuple[str, Any]] = [
        _client({"setup": {"model": "models/gemini-live"}}),
        ("server", '{"setupComplete":{}}'),
        _client(
            {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "hi"}]}], "turnComplete": True}}
        ),
        _client({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "AAAA"}}}),
        _client({"realtime_input": {"text": "x"}}),
        _client({"somethingNew": 1}),
        ("server", LIVE_TEXT % "Hel"),
        _client(
            {"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "AAAA"}}}
        ),  # mid-turn
        ("server", LIVE_TEXT % "lo"),
        ("server", json.dumps(call)),
        _client(LIVE_RESULTS),  # between turns: folds
        ("server", LIVE_TEXT % "ok"),
        _client(LIVE_RESULTS),  # inside a turn: the normal way ends it
        _client({"tool_response": {"function_responses": [{"id": "f2", "name": "g", "response": {}}]}}),
        _client({"setup": {"model": "models/other"}}),
        ("server", LIVE_TEXT % "more"),
        ("server", LIVE_END),
        _client({"toolResponse": {"functionResponses": []}}),
    ]
    if as_bytes:
        messages = [(d, m.encode()) for d, m in messages]
    folded, reference = _both(monkeypatch, "google-live", messages, keep)
    assert folded == reference
    assert not folded[1]
    assert b"client.clientContent" in folded[0]


@pytest.mark.parametrize(
    "bad",
    [
        "[1]",
        "{}",
        '{"toolResponse":{"functionResponses":[{"id":5}]}}',
        '{"toolResponse":7}',
        '{"clientContent":',
    ],
)
def test_bad_live_client_message_fails_as_its_events(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    messages = [
        _client({"setup": {"model": "models/gemini-live"}}),
        ("server", '{"setupComplete":{}}'),
        ("server", LIVE_TEXT % "Hel"),
        ("server", LIVE_TEXT % "lo"),
        _client(bad),
        ("server", LIVE_TEXT % " again"),
    ]
    folded, reference = _both(monkeypatch, "google-live", messages, False)
    assert folded == reference
    assert folded[1]
    assert '"Hello"' in folded[1][0]


def test_kept_messages_take_the_fold_not_feed_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is the one taken: no ``feed_message`` for a kept or client message."""
    agg = StreamAggregator("openai-realtime")
    agg.feed_message(_realtime_turn()[0][1])
    decoder: Any = agg._decoder
    monkeypatch.setattr(type(decoder), "feed_message", lambda *a, **k: pytest.fail("not folded"))
    for direction, msg in REALTIME_KEPT[:7]:
        agg.feed_message(msg, direction=direction)
    assert decoder.frames == 8
    kept = [e.type for e in agg.session().events]
    assert kept[-7:] == [
        "client.conversation.item.create",
        "conversation.item.added",
        "conversation.item.created",
        "client.input_audio_buffer.append",
        "input_audio_buffer.committed",
        "input_audio_buffer.speech_started",
        "rate_limits.updated",
    ]
    assert decoder.fold_one("{}", "client") == {}  # no event of its own: feed_message says why


def test_counted_messages_are_not_decoded_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only counted (``keep_passthrough=False``): a kept message's type is read, nothing more.

    A client event goes by its type (and its item's, to tell a tool result), a session event
    by the type the typed decode read; neither is decoded whole for an event. What is counted
    is what the events would count (the test above compares the two).
    """
    from maas_stream.protocols.openai_realtime import _decode

    agg = StreamAggregator("openai-realtime", keep_passthrough=False)
    agg.feed_message(_realtime_turn()[0][1])
    monkeypatch.setattr(_decode, "_client_event", lambda raw: pytest.fail("decoded whole"))
    monkeypatch.setattr(msgspec.json, "decode", lambda *a, **k: pytest.fail("decoded whole"))
    for direction, msg in REALTIME_KEPT[:7]:
        agg.feed_message(msg, direction=direction)
    session = agg.session()
    unknown = session.unknown
    assert unknown["client.conversation.item.create"] == 1
    assert unknown["client.input_audio_buffer.append"] == 1
    assert unknown["rate_limits.updated"] == 1
    assert not [e for e in session.events if e.type in unknown]  # counted, not kept
    monkeypatch.undo()
    tool_result = _client({"type": "conversation.item.create", "item": OUTPUT})[1]
    assert _decode._client_kind(tool_result) is None  # a tool result is decoded whole (it is folded)
    assert _decode._client_kind('{"type": 5}') is None
    assert _decode._client_kind('{"audio": "AAAA"}') is None
    assert _decode._client_kind('{"type": "x", "item": 5}') is None  # the whole path says what it is
    assert _decode._client_kind('{"type": "x", "item": {"type": 5}}') == "client.x"


def test_counted_live_client_messages_make_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only counted: a Live client message (audio, text) is counted by its type, without an event."""
    from maas_stream.protocols.google_live import _decode

    agg = StreamAggregator("google-live", keep_passthrough=False)
    agg.feed_message(json.dumps({"setup": {"model": "models/gemini-live"}}), direction="client")
    agg.feed_message('{"setupComplete":{}}')
    monkeypatch.setattr(_decode, "kept_client", lambda *a: pytest.fail("an event made"))
    audio = {"realtimeInput": {"audio": {"data": "AAAA", "mimeType": "audio/pcm;rate=16000"}}}
    for _ in range(3):
        agg.feed_message(json.dumps(audio), direction="client")
    agg.feed_message(json.dumps({"realtime_input": {"text": "hi"}}), direction="client")
    agg.feed_message(json.dumps({"somethingNew": {}}), direction="client")
    unknown = agg.session().unknown
    assert unknown["client.realtimeInput"] == 4
    assert unknown["client.somethingNew"] == 1


def test_a_decoded_message_is_not_decoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``fold_one`` decoded reaches ``on_message``: the message decoder runs once per message."""
    from maas_stream.protocols.openai_realtime import _decode
    from maas_stream.protocols.openai_realtime._wire import message_decoder as real

    agg = StreamAggregator("openai-realtime")
    for _direction, msg in _realtime_turn()[:1]:
        agg.feed_message(msg)
    calls: list[Any] = []

    class Counting:
        def decode(self, msg: Any) -> Any:
            calls.append(msg)
            return real.decode(msg)

    monkeypatch.setattr(_decode, "message_decoder", Counting())
    for _direction, msg in _realtime_turn()[1:4]:
        agg.feed_message(msg)
    assert len(calls) == 3
