"""Anthropic properties: chunking invariance, decode(encode(x)) == x, random bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maas_stream as ms
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

SOURCES = recordings("anthropic") + [p for p in corpus("anthropic") if p.stat().st_size < 40_000]
_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _whole(path: Path) -> Any:
    return msgspec.to_builtins(ms.aggregate(path.read_bytes(), protocol="anthropic"))


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points:
        out.append(data[last:p])
        last = p
    out.append(data[last:])
    return out


@_SETTINGS
@given(
    index=st.integers(min_value=0), cuts=st.lists(st.integers(min_value=0), max_size=40), crlf=st.booleans()
)
def test_any_chunking_gives_the_same_response(index: int, cuts: list[int], crlf: bool) -> None:
    path = SOURCES[index % len(SOURCES)]
    data = path.read_bytes()
    if crlf:
        data = data.replace(b"\n", b"\r\n")  # then some cuts fall between CR and LF
    expected = _whole(path)
    got = msgspec.to_builtins(ms.aggregate(_split(data, cuts), protocol="anthropic"))
    assert got == expected


def test_one_byte_chunks_give_the_same_response() -> None:
    for path in SOURCES[:6]:
        data = path.read_bytes()
        got = msgspec.to_builtins(
            ms.aggregate([data[i : i + 1] for i in range(len(data))], protocol="anthropic")
        )
        assert got == _whole(path)


@_SETTINGS
@given(index=st.integers(min_value=0), cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_decode_encode_decode_is_identity_under_any_chunking(index: int, cuts: list[int]) -> None:
    path = SOURCES[index % len(SOURCES)]
    data = path.read_bytes()
    out = ms.convert(_split(data, cuts), to="anthropic", protocol="anthropic")
    assert msgspec.to_builtins(ms.aggregate(out, protocol="anthropic")) == _whole(path)


_texts = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30)


@_SETTINGS
@given(
    pieces=st.lists(_texts, max_size=5),
    args=st.lists(_texts, max_size=4),
    thinking=st.lists(_texts, max_size=3),
    signature=st.text(alphabet="abcdefXYZ+/=0123", min_size=1, max_size=20),
)
def test_generated_streams_round_trip(
    pieces: list[str], args: list[str], thinking: list[str], signature: str
) -> None:
    from maas_stream import events as ev

    events: list[ev.Event] = [
        ev.ResponseStart(protocol="anthropic", id="msg_p", model="m"),
        ev.UsageUpdate(
            usage=ms.Usage(input_tokens=5, output_tokens=1, raw={"input_tokens": 5, "output_tokens": 1})
        ),
        ev.MessageStart(message=0, id="msg_p"),
        ev.PartStart(message=0, part=0, value=ms.ReasoningPart(text="")),
        *[ev.ReasoningDelta(message=0, part=0, text=t) for t in thinking],
        ev.SignatureDelta(message=0, part=0, signature=signature),
        ev.PartDone(message=0, part=0),
        ev.PartStart(message=0, part=1, value=ms.TextPart(text="")),
        *[ev.TextDelta(message=0, part=1, text=t) for t in pieces],
        ev.PartDone(message=0, part=1),
        ev.PartStart(message=0, part=2, value=ms.ToolCallPart(id="toolu_p", name="f", arguments="{}")),
        *[ev.ArgumentsDelta(message=0, part=2, delta=a) for a in args],
        ev.PartDone(message=0, part=2),
        ev.UsageUpdate(usage=ms.Usage(output_tokens=len(args) + 3, raw={"output_tokens": len(args) + 3})),
        ev.MessageDone(message=0, finish_reason="tool_calls", provider_finish_reason="tool_use"),
        ev.ResponseDone(finish_reason="tool_calls", provider_finish_reason="tool_use"),
    ]
    agg = ms.Aggregator("anthropic", emit=True)
    enc = ms.get_protocol("anthropic").encoder()
    out = b"".join(enc.encode(e) for e in agg.feed_all(events) + agg.finish_events())
    expected = agg.finish()
    got = ms.aggregate(out, protocol="anthropic")
    assert msgspec.to_builtins(got) == msgspec.to_builtins(expected)


@_SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes_raise_only_protocol_errors(data: bytes) -> None:
    try:
        resp = ms.aggregate(data, protocol="anthropic")
    except ms.ProtocolError:
        return
    assert resp.status in ("incomplete", "completed", "failed")


_frame_types = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
        "ping",
        "weird",
    ]
)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "index",
                    "delta",
                    "message",
                    "content_block",
                    "text",
                    "usage",
                    "error",
                    "partial_json",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@_SETTINGS
@given(frames=st.lists(st.tuples(_frame_types, _json_values), max_size=8))
def test_random_frames_raise_only_protocol_errors(frames: list[tuple[str, object]]) -> None:
    body = b"".join(
        b"event: "
        + name.encode()
        + b"\ndata: "
        + msgspec.json.encode({"type": name, "x": value} if name != "weird" else value)
        + b"\n\n"
        for name, value in frames
    )
    try:
        resp = ms.aggregate(body, protocol="anthropic")
    except ms.ProtocolError:
        return
    assert resp.protocol == "anthropic"
