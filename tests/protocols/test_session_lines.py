"""Session decoders' recorded-line path (``feed``) against their message path (``feed_message``).

``feed`` splits JSON lines and decodes each server line typed in one pass, envelope included;
``feed_message`` takes one websocket message at a time through ``on_message``. The events must
be the same whatever the chunking, and a bad line must fail the same way: named, with the events
of the lines before it (and none of its own).
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from maas_stream import events as ev
from maas_stream._aggregate import Aggregator
from maas_stream._model import AudioPart
from maas_stream.protocols import google_live as gl
from maas_stream.protocols import openai_realtime as rt
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

DECODERS: dict[str, type[rt.StreamDecoder | gl.StreamDecoder]] = {
    "openai-realtime": rt.StreamDecoder,
    "google-live": gl.StreamDecoder,
}

REALTIME_TEXT = {
    "type": "response.output_text.delta",
    "item_id": "item_1",
    "content_index": 0,
    "delta": "Hi",
}
LIVE_TEXT = {"serverContent": {"modelTurn": {"parts": [{"text": "Hi"}]}}}


def line(direction: str, msg: Any) -> bytes:
    return json.dumps({"dir": direction, "msg": msg}).encode() + b"\n"


def by_message(protocol: str, data: bytes) -> list[ev.Event]:
    """The events of a recording fed one websocket message at a time (no line framing)."""
    decoder = DECODERS[protocol]()
    out: list[ev.Event] = []
    for text in data.splitlines():
        if text.strip():
            frame = json.loads(text)
            out += decoder.feed_message(json.dumps(frame["msg"]).encode(), direction=frame["dir"])
    return out + decoder.finish()


def by_lines(protocol: str, data: bytes, size: int) -> list[ev.Event]:
    """The events of a recording fed as byte chunks of ``size``."""
    decoder = DECODERS[protocol]()
    out: list[ev.Event] = []
    for i in range(0, len(data), size):
        out += decoder.feed(data[i : i + size])
    return out + decoder.finish()


def files() -> list[object]:
    paths: list[Path] = []
    for protocol in DECODERS:
        paths += recordings(protocol) + corpus(protocol)
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in paths]


@pytest.mark.parametrize("path", files())
@pytest.mark.parametrize("size", [1, 97, 1 << 20])
def test_recorded_lines_decode_as_their_messages(path: Path, size: int) -> None:
    data = path.read_bytes()
    expected = by_message(path.parent.name, data)
    assert expected
    assert by_lines(path.parent.name, data, size) == expected


@pytest.mark.parametrize(
    ("protocol", "server"),
    [("openai-realtime", REALTIME_TEXT), ("google-live", LIVE_TEXT)],
)
def test_blank_and_crlf_lines_change_nothing(protocol: str, server: dict[str, Any]) -> None:
    plain = line("server", server) * 3
    odd = b"\n  \n" + line("server", server).replace(b"\n", b"\r\n") + b"\t\n" + line("server", server) * 2
    expected = by_lines(protocol, plain, 1 << 20)
    assert [type(e) for e in expected].count(ev.TextDelta) == 3
    assert by_lines(protocol, odd, 1 << 20) == expected
    assert by_lines(protocol, odd, 3) == expected


def _bad_line_case(protocol: str) -> tuple[bytes, bytes]:
    """Two good lines, then a line whose handler emits events before it finds the fault."""
    if protocol == "openai-realtime":
        good = line("server", REALTIME_TEXT) * 2
        bad_call = {"id": "item_f", "type": "function_call", "call_id": 7, "name": "f", "arguments": ""}
        bad = line("server", {"type": "response.output_item.added", "item": bad_call})
    else:
        good = line("server", LIVE_TEXT) * 2
        calls = {"functionCalls": [{"id": 7, "name": "f", "args": {}}]}
        bad = line("server", {**LIVE_TEXT, "toolCall": calls})
    return good, bad


@pytest.mark.parametrize("protocol", list(DECODERS))
def test_a_bad_line_fails_with_the_events_before_it_and_none_of_its_own(protocol: str) -> None:
    good, bad = _bad_line_case(protocol)
    before = DECODERS[protocol]().feed(good)
    decoder = DECODERS[protocol]()
    with pytest.raises(ms.RemoteProtocolError) as info:
        decoder.feed(good + bad + good)
    assert info.value.events == before
    assert info.value.frame == 3
    assert info.value.protocol == protocol
    with pytest.raises(ms.LocalProtocolError):
        decoder.feed(good)


@pytest.mark.parametrize(
    ("protocol", "bad"),
    [
        ("openai-realtime", {"type": "response.output_text.delta", "item_id": "item_1", "delta": 5}),
        ("google-live", {"serverContent": {"modelTurn": {"parts": [{"text": 5}]}}}),
        ("openai-realtime", None),
        ("google-live", None),
    ],
)
def test_a_mistyped_or_null_server_message_is_a_named_frame_error(protocol: str, bad: Any) -> None:
    good = line("server", REALTIME_TEXT if protocol == "openai-realtime" else LIVE_TEXT)
    before = DECODERS[protocol]().feed(good)
    with pytest.raises(ms.RemoteProtocolError) as info:
        DECODERS[protocol]().feed(good + line("server", bad))
    assert info.value.frame == 2
    assert info.value.events == before


def test_client_lines_between_server_lines_keep_their_place() -> None:
    data = (
        line("client", {"setup": {"model": "models/gemini-live"}})
        + line("server", LIVE_TEXT)
        + line("server", {"toolCall": {"functionCalls": [{"id": "c1", "name": "f", "args": {}}]}})
        + line("client", {"toolResponse": {"functionResponses": [{"id": "c1", "name": "f", "response": {}}]}})
        + line("server", LIVE_TEXT)
    )
    out = by_lines("google-live", data, 1 << 20)
    assert out == by_message("google-live", data)
    start = next(e for e in out if isinstance(e, ev.ResponseStart))
    assert start.model == "models/gemini-live"  # the client setup line came first
    tool = [i for i, e in enumerate(out) if isinstance(e, ev.MessageStart) and e.role == "tool"]
    texts = [i for i, e in enumerate(out) if isinstance(e, ev.TextDelta)]
    assert len(tool) == 1
    assert texts[0] < tool[0] < texts[1]


# ---------------------------------------------------------------- the direct fold (aggregate-only consumers)


class Counting(ms.StreamAggregator):
    """Counts the events applied the normal way (the rest went straight into the parts)."""

    applied = 0

    def consume(self, events: list[ev.Event]) -> None:
        self.applied += len(events)
        super().consume(events)


def by_events(protocol: str, data: bytes, size: int) -> tuple[ms.Response, int]:
    """The event path: the aggregate of a recording fed in chunks of ``size``, and its event count."""
    decoder = DECODERS[protocol]()
    agg = Aggregator(protocol)
    count = 0
    for i in range(0, len(data), size):
        events = decoder.feed(data[i : i + size])
        count += len(events)
        agg.consume(events)
    events = decoder.finish()
    agg.consume(events)
    return agg.finish(), count + len(events)


def folded(protocol: str, data: bytes, size: int) -> tuple[ms.Response, int]:
    """The direct fold (``ms.aggregate``'s way): the aggregate, and how many events it still applied."""
    agg = Counting(protocol)
    for i in range(0, len(data), size):
        agg.feed(data[i : i + size])
    return agg.finish(), agg.applied


@pytest.mark.parametrize("path", files())
@pytest.mark.parametrize("size", [1, 97, 1 << 20])
def test_folded_deltas_aggregate_the_same(path: Path, size: int) -> None:
    data = path.read_bytes()
    expected, count = by_events(path.parent.name, data, size)
    got, fewer = folded(path.parent.name, data, size)
    assert got == expected
    assert fewer <= count


@pytest.mark.parametrize(
    ("protocol", "delta"),
    [
        ("openai-realtime", lambda i: {**REALTIME_TEXT, "delta": f"w{i} "}),
        ("google-live", lambda i: {"serverContent": {"modelTurn": {"parts": [{"text": f"w{i} "}]}}}),
        ("google-live", lambda i: {"serverContent": {"outputTranscription": {"text": f"w{i} "}}}),
    ],
)
def test_the_deltas_of_an_open_part_apply_no_event(protocol: str, delta: Any) -> None:
    agg = Counting(protocol)
    agg.feed(line("server", delta(0)))  # the session and the part start: events
    started = agg.applied
    assert started > 0
    agg.feed(b"".join(line("server", delta(i)) for i in range(1, 51)))
    assert agg.applied == started  # fifty deltas, straight into the part
    response = agg.finish()
    assert response == by_events(protocol, b"".join(line("server", delta(i)) for i in range(51)), 1 << 20)[0]
    parts = [p for m in response.messages if isinstance(m.content, list) for p in m.content]
    texts = [getattr(p, "text", None) or getattr(p, "transcript", None) for p in parts]
    assert "".join(f"w{i} " for i in range(51)) in texts


@pytest.mark.parametrize("protocol", list(DECODERS))
def test_padded_base64_audio_folds_as_bytes_not_text(protocol: str) -> None:
    chunks = ["AQI=", "AwQ=", "BQYH", "CAkK"]  # bytes 1..10; the first two are padded
    if protocol == "openai-realtime":
        base = {"type": "response.output_audio.delta", "item_id": "item_1", "content_index": 0}
        data = b"".join(line("server", {**base, "delta": c}) for c in chunks)
    else:
        parts = [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": c}} for c in chunks]
        data = b"".join(line("server", {"serverContent": {"modelTurn": {"parts": [p]}}}) for p in parts)
    expected, _ = by_events(protocol, data, 1 << 20)
    got, _ = folded(protocol, data, 1 << 20)
    assert got == expected
    audio = [p for m in got.messages if isinstance(m.content, list) for p in m.content]
    assert [base64.b64decode(p.data) for p in audio if isinstance(p, AudioPart) and p.data] == [
        bytes(range(1, 11))
    ]


@pytest.mark.parametrize("protocol", list(DECODERS))
def test_folded_bad_line_keeps_the_deltas_before_it_and_none_of_its_own(protocol: str) -> None:
    good, bad = _bad_line_case(protocol)
    with pytest.raises(ms.RemoteProtocolError) as plain:
        DECODERS[protocol]().feed(good + bad)
    agg = Counting(protocol)
    agg.feed(good)
    with pytest.raises(ms.RemoteProtocolError) as folded_error:
        agg.feed(good + bad)
    assert plain.value.frame == 3
    assert folded_error.value.frame == 5  # two good lines fed before
    partial = folded_error.value.partial
    assert partial is not None
    texts = [
        p.text
        for m in partial.messages
        if isinstance(m.content, list)
        for p in m.content
        if hasattr(p, "text")
    ]
    assert "".join(t for t in texts if t) == "HiHiHiHi"
