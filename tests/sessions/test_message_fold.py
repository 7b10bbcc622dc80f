"""A websocket message folded directly (``feed_message`` without ``emit``) leaves what its events would.

``StreamAggregator.feed_message`` folds a common message (a Realtime delta or quiet ``.done``, a
Live delta, call or turn end) straight into its part (``JSONLinesStreamDecoder.feed_message_into``,
each protocol's ``fold_one``). The reference is the same feed with no message folded (``fold_one``
answering ``False``: every message goes ``feed_message`` and the aggregator gets its events): the
Session, the errors and their partial results, and a same-protocol bridge's record and drops must
be the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream._stream_aggregator import StreamAggregator
from maas_stream.protocols._jsonl import JSONLinesStreamDecoder

ROOT = Path(__file__).resolve().parents[2] / "recordings"
RECORDINGS = sorted(p for name in ("openai-realtime", "google-live") for p in (ROOT / name).glob("*.jsonl"))
DELTA = '{"type":"response.output_text.delta","item_id":"it1","content_index":0,"delta":"%s"}'


def _messages(path: Path, as_bytes: bool) -> list[tuple[str, str | bytes]]:
    out: list[tuple[str, str | bytes]] = []
    for line in path.read_text().splitlines():
        if line.strip():
            frame = json.loads(line)
            text = json.dumps(frame["msg"], separators=(",", ":"))
            out.append((frame["dir"], text.encode() if as_bytes else text))
    return out


def _no_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(JSONLinesStreamDecoder, "fold_one", lambda self, msg, direction: False)
    for cls in JSONLinesStreamDecoder.__subclasses__():
        for sub in [
            cls,
            *cls.__subclasses__(),
            *(s for c in cls.__subclasses__() for s in c.__subclasses__()),
        ]:
            if "fold_one" in vars(sub):
                monkeypatch.setattr(sub, "fold_one", lambda self, msg, direction: False)


def _feed(protocol: str, messages: list[tuple[str, Any]], keep: bool) -> tuple[bytes, list[str]]:
    """The session (as JSON) and each error (type, message, partial) of a message-by-message feed."""
    agg = StreamAggregator(protocol, keep_passthrough=keep)
    errors: list[str] = []
    for direction, msg in messages:
        try:
            assert agg.feed_message(msg, direction=direction) == []
        except ms.ProtocolError as exc:
            partial = msgspec.json.encode(exc.partial).decode() if exc.partial is not None else None
            errors.append(f"{type(exc).__name__}: {exc} / {partial}")
    try:
        agg.finish()
    except ms.ProtocolError as exc:
        errors.append(f"finish {type(exc).__name__}: {exc}")
    return msgspec.json.encode(agg.session()), errors


def _both(
    monkeypatch: pytest.MonkeyPatch, protocol: str, messages: list[tuple[str, Any]], keep: bool
) -> tuple[tuple[bytes, list[str]], tuple[bytes, list[str]]]:
    folded = _feed(protocol, messages, keep)
    with monkeypatch.context() as m:
        _no_fold(m)
        reference = _feed(protocol, messages, keep)
    return folded, reference


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_recording_folds_as_its_events(
    monkeypatch: pytest.MonkeyPatch, path: Path, keep: bool, as_bytes: bool
) -> None:
    messages = _messages(path, as_bytes)
    folded, reference = _both(monkeypatch, path.parent.name, messages, keep)
    assert folded == reference
    # And as the recording's lines fold (aggregate_session).
    if keep:
        whole = ms.aggregate_session(path.read_bytes(), protocol=path.parent.name)
        assert folded[0] == msgspec.json.encode(whole)


def _realtime_turn() -> list[tuple[str, str]]:
    created = {"type": "response.created", "response": {"id": "r1", "status": "in_progress", "output": []}}
    item = {"type": "message", "id": "it1", "role": "assistant", "content": []}
    return [
        ("server", json.dumps({"type": "session.created", "session": {"model": "gpt-realtime"}})),
        ("server", json.dumps(created)),
        ("server", json.dumps({"type": "response.output_item.added", "item": item})),
        (
            "server",
            json.dumps(
                {
                    "type": "response.content_part.added",
                    "item_id": "it1",
                    "content_index": 0,
                    "part": {"type": "text", "text": ""},
                }
            ),
        ),
        ("server", DELTA % "Hel"),
        ("server", DELTA % "lo"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        '{"type":"response.output_text.delta","item_id":"it1","content_index":0,"delta":',  # no JSON
        '{"type":"response.output_text.delta","item_id":"it1","content_index":"x","delta":"a"}',
        '{"item_id":"it1"}',  # no type
        "[1,2]",
    ],
)
def test_bad_realtime_message_fails_as_its_events(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    messages = [*_realtime_turn(), ("server", bad), ("server", DELTA % " again")]
    folded, reference = _both(monkeypatch, "openai-realtime", messages, True)
    assert folded == reference
    assert len(folded[1]) == 3  # the bad message, then the decoder refusing the next one and finish
    assert '"Hello"' in folded[1][0]  # the partial response holds the deltas folded before it


@pytest.mark.parametrize(
    "bad",
    [
        '{"serverContent":{"modelTurn":{"parts":[{"text":',
        '{"serverContent":{"modelTurn":{"parts":[{"text":5}]}}}',
        '{"toolCall":{"functionCalls":[{"name":5}]}}',
    ],
)
def test_bad_live_message_fails_as_its_events(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    text = '{"serverContent":{"modelTurn":{"parts":[{"text":"%s"}]}}}'
    messages = [
        ("client", '{"setup":{"model":"models/gemini-live"}}'),
        ("server", '{"setupComplete":{}}'),
        ("server", text % "Hel"),
        ("server", text % "lo"),
        ("server", bad),
        ("server", text % " again"),
    ]
    folded, reference = _both(monkeypatch, "google-live", messages, False)
    assert folded == reference
    assert len(folded[1]) == 3  # the bad message, then the decoder refusing the next one and finish
    assert '"Hello"' in folded[1][0]


def test_bridge_records_as_its_events(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [*_realtime_turn(), ("server", '{"item_id":"it1"}'), ("server", DELTA % " again")]

    def record() -> tuple[bytes, str]:
        bridge = ms.SessionBridge("openai-realtime", "openai-realtime", model="m", keep_passthrough=False)
        for direction, msg in messages:
            if direction == "server":
                bridge.pass_upstream(msg)
            else:
                bridge.pass_client(msg)
        return msgspec.json.encode(bridge.session), repr(bridge.drops.records)

    folded = record()
    with monkeypatch.context() as m:
        _no_fold(m)
        reference = record()
    assert folded == reference
    assert "cannot read" in folded[1]


def test_http_protocol_refuses_messages_every_time() -> None:
    agg = StreamAggregator("openai-chat")
    for _ in range(2):
        with pytest.raises(ms.LocalProtocolError, match="not a websocket protocol"):
            agg.feed_message('{"a":1}')


@pytest.mark.parametrize("protocol", ["openai-realtime", "google-live"])
def test_fail_between_messages_forgets_the_folded_part(
    monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    if protocol == "openai-realtime":
        messages = _realtime_turn()
        late = DELTA % " late"
    else:
        text = '{"serverContent":{"modelTurn":{"parts":[{"text":"%s"}]}}}'
        messages = [("server", '{"setupComplete":{}}'), ("server", text % "Hel"), ("server", text % "lo")]
        late = text % " late"

    def run() -> tuple[bytes, list[str]]:
        agg = StreamAggregator(protocol)
        for direction, msg in messages:
            agg.feed_message(msg, direction=direction)
        agg.fail(ms.StreamError(type="upstream_closed", message="gone"))
        errors: list[str] = []
        try:
            agg.feed_message(late)  # after the failure: never into the part folded before it
        except ms.ProtocolError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        return msgspec.json.encode(agg.session()), errors

    folded = run()
    with monkeypatch.context() as m:
        _no_fold(m)
        reference = run()
    assert folded == reference
    assert b" late" not in folded[0]
