from __future__ import annotations

import itertools

import httpx_sse
import pytest
from httpx_sse._decoders import SSEDecoder
from hypothesis import given, settings
from hypothesis import strategies as st

from maas_stream import EventTooLargeError, LocalProtocolError
from maas_stream.sse import Decoder, Encoder, ServerSentEvent


def decode(data: bytes, chunk: int | None = None) -> list[ServerSentEvent]:
    decoder = Decoder()
    out: list[ServerSentEvent] = []
    if chunk is None:
        out += decoder.feed(data)
    else:
        for i in range(0, len(data), chunk):
            out += decoder.feed(data[i : i + chunk])
    out += decoder.finish()
    return out


def test_protocols_md_edge_case_example() -> None:
    # PROTOCOLS.md §7.3, byte for byte.
    data = (
        b"\xef\xbb\xbf: keep-alive\r\n"
        b"event: message_start\r"
        b'data: {"type":"message_start",\n'
        b'data:"message":{}}\r\n'
        b"\r\n"
        b"id: 7\n"
        b"retry: 3000\n"
        b"\n"
        b"data\n"
        b"\n"
        b"event: delta\n"
        b"data:  two-spaces\n"
    )
    for chunk in (None, 1, 2, 3, 5):
        events = decode(data, chunk)
        assert [(e.event, e.data, e.id) for e in events] == [
            ("message_start", '{"type":"message_start",\n"message":{}}', ""),
            ("message", "", "7"),
        ], chunk
        assert events[1].retry is None  # retry was set on the data-less block, not on this one


def test_retry_is_reported_on_the_event_that_sets_it() -> None:
    (event,) = decode(b"retry: 1500\ndata: x\n\n")
    assert event.retry == 1500
    (event,) = decode(b"retry: 15x0\ndata: x\n\n")
    assert event.retry is None


def test_id_persists_and_nul_is_ignored() -> None:
    events = decode(b"id: a\ndata: 1\n\ndata: 2\n\nid: b\x00c\ndata: 3\n\nid\ndata: 4\n\n")
    assert [e.id for e in events] == ["a", "a", "a", ""]


def test_truncated_event_is_discarded_and_reported() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: one\n\ndata: [DONE]") == [ServerSentEvent(data="one")]
    assert decoder.finish() == []
    assert decoder.truncated
    decoder = Decoder()
    decoder.feed(b"data: one\n\n")
    decoder.finish()
    assert not decoder.truncated


def test_cr_at_chunk_end_then_lf_is_one_line_break() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == [ServerSentEvent(data="a")]
    assert decoder.feed(b"\ndata: b\r\r") == [ServerSentEvent(data="b")]


def test_bom_split_across_chunks_is_stripped_once() -> None:
    data = b"\xef\xbb\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\n"
    events = decode(data, 1)
    assert events[0].data == "x"
    # A BOM later in the stream is not a BOM: it starts a field name, which is unknown.
    assert len(events) == 1


def test_utf8_split_inside_a_character() -> None:
    data = "data: héllo wörld ✓\n\n".encode()
    assert decode(data, 1)[0].data == "héllo wörld ✓"


def test_invalid_utf8_is_replaced_not_raised() -> None:
    (event,) = decode(b"data: \xff\xfeok\n\n")
    assert event.data == "\ufffd\ufffdok"


def test_event_size_limit() -> None:
    decoder = Decoder(max_event_size=100)
    with pytest.raises(EventTooLargeError) as info:
        decoder.feed(b"data: " + b"x" * 200)
    assert "100" in str(info.value)
    with pytest.raises(LocalProtocolError):
        decoder.feed(b"\n\n")


def test_limit_also_counts_multi_line_data() -> None:
    decoder = Decoder(max_event_size=100)
    for _ in range(9):  # 9 x 11 bytes fit in 100
        assert decoder.feed(b"data: 0123456789\n") == []
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"data: 0123456789\n")


def test_feed_after_finish_is_misuse() -> None:
    decoder = Decoder()
    decoder.finish()
    with pytest.raises(LocalProtocolError):
        decoder.feed(b"data: x\n\n")
    with pytest.raises(LocalProtocolError):
        decoder.finish()


def test_encoder_round_trip_including_line_breaks() -> None:
    encoder = Encoder()
    data = encoder.encode("a\nb\r\nc", event="x", id="9", retry=10) + encoder.comment("ping")
    data += encoder.encode_bytes(b'{"k":1}', event="y") + encoder.encode_bytes(b"z")
    events = decode(data)
    assert [(e.event, e.data, e.id) for e in events] == [
        ("x", "a\nb\nc", "9"),
        ("y", '{"k":1}', "9"),
        ("message", "z", "9"),
    ]
    assert events[0].retry == 10


def test_encoder_rejects_line_breaks_in_fields() -> None:
    with pytest.raises(LocalProtocolError):
        Encoder().encode("x", event="a\nb")
    with pytest.raises(LocalProtocolError):
        Encoder().encode("x", id="a\x00")


# --------------------------------------------------------------------- differential vs httpx-sse


def httpx_sse_decode(data: bytes) -> list[tuple[str, str, str]]:
    """httpx-sse's own decoder, fed line by line as its iter_sse does.

    httpx-sse dispatches a block that set only ``id`` or ``retry`` as an empty event; the
    standard dispatches nothing there (PROTOCOLS.md §7.2 notes the same deviation in the openai
    SDK). That one deviation is removed here so the rest can be compared exactly.
    """
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    decoder = SSEDecoder()
    out = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line and not decoder._data:
            decoder._event = ""
            decoder._retry = None
            continue
        sse = decoder.decode(line)
        if sse is not None:
            out.append((sse.event, sse.data, sse.id))
    return out


field = st.sampled_from(["data", "event", "id", "retry", ":", "x"])
value = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\x00"), max_size=12
)
line = st.one_of(
    st.tuples(field, st.sampled_from([": ", ":", ""]), value).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
    st.just(""),
)
ending = st.sampled_from(["\n", "\r\n", "\r"])
stream = st.lists(st.tuples(line, ending), max_size=40).map(lambda ls: "".join(a + b for a, b in ls) + "\n\n")


@settings(max_examples=200, deadline=None)
@given(stream, st.integers(min_value=1, max_value=17))
def test_differential_against_httpx_sse(text: str, chunk: int) -> None:
    data = text.encode()
    ours = [(e.event, e.data, e.id) for e in decode(data, chunk)]
    assert ours == httpx_sse_decode(data)


def test_httpx_sse_is_importable_for_the_io_layer() -> None:
    assert hasattr(httpx_sse, "aconnect_sse")


# --------------------------------------------------------------------- feed_payloads == feed_raw

common_event = st.one_of(
    st.tuples(st.just(""), value).map(lambda t: f"data: {t[1]}"),
    st.tuples(st.sampled_from(["delta", "error", "", "x y"]), value).map(
        lambda t: f"event: {t[0]}\ndata: {t[1]}"
    ),
    line,  # now and then something the line machine must read
)
common_stream = st.tuples(
    st.lists(common_event, max_size=30), st.sampled_from(["\n", "\r\n", "\r", "mixed"])
).map(
    lambda t: "".join(
        (e + "\n\n").replace("\n", ["\n", "\r\n"][i % 2] if t[1] == "mixed" else t[1])
        for i, e in enumerate(t[0])
    )
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=400, deadline=None)
@given(common_stream, st.lists(st.integers(min_value=0, max_value=10_000), max_size=12), st.booleans())
def test_feed_payloads_splits_as_feed_raw_does(text: str, cuts: list[int], cut_short: bool) -> None:
    """Each chunk through feed_payloads, or feed_raw where it says None: the same events, count, cut."""
    data = text.encode()
    if cut_short and data:
        data = data[: len(data) * 2 // 3]  # a stream cut inside an event
    reference, decoder = Decoder(), Decoder()
    expected: list[tuple[str, bytes]] = []
    got: list[tuple[str, bytes]] = []
    for chunk in _chunks(data, cuts):
        expected += [(event, payload) for event, payload, _, _ in reference.feed_raw(chunk)]
        fast = decoder.feed_payloads(chunk)
        if fast is None:
            got += [(event, payload) for event, payload, _, _ in decoder.feed_raw(chunk)]
        else:
            payloads, names = fast
            assert len(names) == len(payloads)
            got += [(names[i], p) for i, p in enumerate(payloads)]
    reference.finish()
    decoder.finish()
    assert got == expected
    assert (decoder.truncated, decoder.events) == (reference.truncated, reference.events)


@pytest.mark.parametrize(
    ("chunk", "taken"),
    [
        (b"data: {}\n\n", True),
        (b"data: \n\n", True),
        (b"data: {}\r\n\r\n", True),
        (b"data: {\r}\n\n", False),  # a lone CR ends a line
        (b"data: {}\r\n\n", False),  # mixed endings
        (b"data: {}\n\ndata: [", True),  # not alone: the whole-chunk split takes it
        (b"data: 1\ndata: 2\n\n", False),  # two data lines
        (b"data: {}\n", False),  # not ended
        (b"data:{}\n\n", False),  # no space after the colon: the line machine
        (b"event: delta\ndata: {}\n\n", True),
        (b"event: \ndata: {}\n\n", True),  # an empty type is "message"
        (b"event: a\ndata: {}\r\n\r\n", False),  # CR: the line machine
        (b"event: a\ndata: 1\ndata: 2\n\n", False),
        (b"event: a\nid: 3\ndata: 1\n\n", False),
        (b"event: a\n\n", False),  # no data: no event
        (b"event: a\ndata: {}\n", False),  # not ended
    ],
)
def test_a_lone_event_chunk_splits_as_feed_raw_does(chunk: bytes, taken: bool) -> None:
    """A chunk of one whole one-line event (a slow network's) is taken whole, or left to feed_raw."""
    reference, decoder = Decoder(), Decoder()
    for d in (reference, decoder):
        d.feed_raw(b"data: 0\n\n")  # past the BOM check
    expected = [(event, payload) for event, payload, _, _ in reference.feed_raw(chunk)]
    fast = decoder.feed_payloads(chunk)
    assert (fast is not None) == taken
    got = [(event, payload) for event, payload, _, _ in decoder.feed_raw(chunk)] if fast is None else []
    if fast is not None:
        got = list(zip(fast[1], fast[0], strict=True))
    assert got == expected
    assert decoder.events == reference.events
    tail = b"data: end\n\n"
    assert decoder.feed_raw(tail)[0][:2] == reference.feed_raw(tail)[0][:2]


def test_feed_payloads_takes_the_common_shapes_whole() -> None:
    lf = b"data: {}\n\nevent: delta\ndata: [1]\n\n"
    crlf = b"data: {}\r\n\r\ndata: [1]\r\n\r\n"
    for data in (b"data: {}\n\ndata: [1]\n\n", crlf):
        decoder = Decoder()
        decoder.feed_raw(b"\n")  # past the BOM check
        got = decoder.feed_payloads(data)
        assert got is not None
        assert (got[0], list(got[1])) == ([b"{}", b"[1]"], ["message", "message"])
    decoder = Decoder()
    decoder.feed_raw(b"\n")
    got = decoder.feed_payloads(b"event: a\ndata: {}\n\nevent: b\ndata: [1]\n\nevent: c\ndata: [")
    assert got is not None
    assert (got[0], list(got[1])) == ([b"{}", b"[1]"], ["a", "b"])
    got = decoder.feed_payloads(b"2]\n\n")  # the kept "event:" line and the data's start, then its end
    assert got is not None
    assert (got[0], list(got[1])) == ([b"[2]"], ["c"])
    assert decoder.feed_payloads(lf.replace(b"data: [1]", b"data: [1]\ndata: 2")) is None  # two data lines
    assert decoder.feed_payloads(b"data: 1\r\n\r\ndata: 2\n\n") is None  # mixed line endings
