from __future__ import annotations

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
