"""Anthropic properties: decode(encode(x)) == x under any chunking and for generated streams,
Anthropic-shaped random frames raise only ``RemoteProtocolError``. Chunking invariance and
random bytes are covered for every protocol in ``test_chunking.py``."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maas_stream as ms
from tests import invariants as inv
from tests.conftest import corpus, recordings

SOURCES = recordings("anthropic") + [p for p in corpus("anthropic") if p.stat().st_size < 40_000]
_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(index=st.integers(min_value=0), cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_decode_encode_decode_is_identity_under_any_chunking(index: int, cuts: list[int]) -> None:
    data = SOURCES[index % len(SOURCES)].read_bytes()
    inv.assert_same_protocol_round_trip(data, "anthropic", chunks=inv.chunked(data, cuts))


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
            usage=ms.Usage(
                input_tokens=5, output_tokens=1, total_tokens=6, raw={"input_tokens": 5, "output_tokens": 1}
            )
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
        # Canonical usage: total = input + output (the decoder derives it from Anthropic's counts).
        ev.UsageUpdate(
            usage=ms.Usage(
                output_tokens=len(args) + 3, total_tokens=len(args) + 8, raw={"output_tokens": len(args) + 3}
            )
        ),
        ev.MessageDone(message=0, finish_reason="tool_calls", provider_finish_reason="tool_use"),
        ev.ResponseDone(finish_reason="tool_calls", provider_finish_reason="tool_use"),
    ]
    agg = ms.Aggregator("anthropic", emit=True)
    enc = ms.get_protocol("anthropic").encoder()
    out = b"".join(enc.encode(e) for e in agg.feed_all(events) + agg.finish_events())
    expected = agg.finish()
    got = ms.aggregate(out, protocol="anthropic")
    assert msgspec.to_builtins(got) == msgspec.to_builtins(expected)


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
def test_random_frames_decode_or_raise_remote_protocol_error(frames: list[tuple[str, object]]) -> None:
    body = b"".join(
        b"event: "
        + name.encode()
        + b"\ndata: "
        + msgspec.json.encode({"type": name, "x": value} if name != "weird" else value)
        + b"\n\n"
        for name, value in frames
    )
    inv.assert_decodes_or_remote_error(body, "anthropic")
