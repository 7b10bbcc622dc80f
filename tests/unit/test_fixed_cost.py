"""The fast paths that cut the fixed cost of an ``aggregate`` call give exactly what the slow ones give.

* A fresh SSE decoder's first chunk takes ``Decoder.feed_payloads``' whole-chunk split: the same
  frames, types and end state as the line machine (``feed_raw``), whole or byte by byte.
* Detection reads a plain first frame straight from the first bytes and otherwise frames slices
  (512 B, then doubling): the same protocol, or the same error, as framing byte by byte, for a
  first frame of any length, ending on either side of a slice boundary, after comments, blank
  lines or a BOM, with LF or CRLF endings.
* A list or tuple of chunks aggregates as the bytes do (it is not probed for an HTTP response).
* ``finish()`` without an encoder lets the aggregator close what is open: the same response as
  closing it first (``finish_events``, as a re-encoding sink does).

Over this project's recordings and the real captures of the corpus (read in place).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

import maas_stream as ms
from maas_stream._registry import Detector
from maas_stream.sse import Decoder
from tests.conftest import corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

SSE = ("openai-chat", "anthropic", "openai-responses", "gemini", "google-interactions")
JSONL = ("google-live", "openai-realtime")

OWN_SSE = [p for name in SSE for p in recordings(name)]
ALL_SSE = OWN_SSE + [p for name in SSE for p in corpus(name)]
ALL = ALL_SSE + [p for name in JSONL for p in recordings(name) + corpus(name)]

Frames = tuple[list[tuple[str, bytes]], bool, int]


def fast_split(chunks: list[bytes]) -> Frames:
    """Frames as the protocol decoders split them: ``feed_payloads``, ``feed_raw`` where it declines."""
    decoder = Decoder()
    out: list[tuple[str, bytes]] = []
    for chunk in chunks:
        got = decoder.feed_payloads(chunk)
        if got is None:
            out += [(event, data) for event, data, _, _ in decoder.feed_raw(chunk)]
        else:
            out += zip(got[1], got[0], strict=True)
    decoder.finish()
    return out, decoder.truncated, decoder.events


def line_machine(chunks: list[bytes]) -> Frames:
    """Frames as the line machine alone splits them (what a first chunk always took before)."""
    decoder = Decoder()
    out = [(event, data) for chunk in chunks for event, data, _, _ in decoder.feed_raw(chunk)]
    decoder.finish()
    return out, decoder.truncated, decoder.events


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def variants(data: bytes) -> dict[str, bytes]:
    """The recording, with CRLF endings, behind a BOM, behind a comment and blank lines."""
    return {
        "as is": data,
        "crlf": data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"),
        "bom": b"\xef\xbb\xbf" + data,
        "comment": b": keep-alive\n\n\n" + data,
    }


@pytest.mark.parametrize("path", params(ALL_SSE))
def test_first_chunk_split_is_the_line_machines(path: Path) -> None:
    for how, data in variants(path.read_bytes()).items():
        first_end = data.find(b"\n\n") + 2
        expected = line_machine([data])
        if len(data) <= 16_384:
            assert line_machine(bytewise(data)) == expected, how
        assert fast_split([data]) == expected, how
        for cut in (1, 3, first_end - 1, first_end, first_end + 1, len(data) // 2, len(data) - 1):
            chunks = [data[:cut], data[cut:]]
            assert fast_split(chunks) == line_machine(chunks) == expected, (how, cut)


def outcome(chunks: list[bytes], *, final: bool = True) -> str:
    """What detection says: the protocol, or the error's type and message."""
    detector = Detector()
    try:
        for chunk in chunks:
            name = detector.feed(chunk)
            if name is not None:
                return name
        return detector.finish() if final else "undecided"
    except ms.ProtocolDetectionError as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("path", params(ALL))
def test_detection_on_slices_is_detection_byte_by_byte(path: Path) -> None:
    data = path.read_bytes()
    cases = {"as is": data} if path.suffix == ".jsonl" else variants(data)
    for how, text in cases.items():
        head = text[:65_536]  # detection stops at the first frames; byte by byte only up to there
        expected = outcome(bytewise(head), final=len(head) == len(text))
        assert outcome([text], final=len(head) == len(text)) in (expected, "undecided"), how
        if expected in ms.protocol_names():
            assert outcome([text]) == expected, how
            assert outcome([text[:700], text[700:]]) == expected, how
    if outcome([data]) == path.parent.name:
        assert ms.aggregate(data) == ms.aggregate(data, protocol=path.parent.name)


def chat_frame(content_size: int) -> bytes:
    """One Chat chunk whose text delta is ``content_size`` bytes."""
    head = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    return (
        head + b'[{"index":0,"delta":{"content":"' + b"x" * content_size + b'"},"finish_reason":null}]}\n\n'
    )


def anthropic_frame(content_size: int) -> bytes:
    payload = {
        "type": "message_start",
        "message": {"id": "m" * content_size, "role": "assistant", "content": []},
    }
    return b"event: message_start\ndata: " + json.dumps(payload).encode() + b"\n\n"


SHAPES = {
    "chat": (chat_frame, b"", "openai-chat"),
    "chat crlf": (chat_frame, b"", "openai-chat"),
    "anthropic": (anthropic_frame, b"", "anthropic"),
    "anthropic crlf": (anthropic_frame, b"", "anthropic"),
    "after a comment": (chat_frame, b": OPENROUTER PROCESSING\n\n", "openai-chat"),
    "after blank lines": (anthropic_frame, b"\n\n\r\n", "anthropic"),
    "after a BOM": (chat_frame, b"\xef\xbb\xbf", "openai-chat"),
    "after [DONE]": (chat_frame, b"data: [DONE]\n\n", "openai-chat"),
    "after an id": (anthropic_frame, b"id: 7\n", "anthropic"),
}
ENDS = (200, 505, 510, 511, 512, 513, 514, 1024, 1535, 1536, 1537, 1538, 3584, 3585, 7000)
"""Where the first frame ends (its blank line's last byte), around the slices' boundaries."""


def first_frame(shape: str, end: int) -> bytes:
    """A stream whose first deciding frame ends ``end`` bytes in (two more frames follow)."""
    make, prefix, _ = SHAPES[shape]
    crlf = shape.endswith("crlf")
    frame = make(0)
    frame = make(max(0, end - len(prefix) - len(frame) - (frame.count(b"\n") if crlf else 0)))
    data = prefix + frame + chat_frame(3) + chat_frame(5)
    return data.replace(b"\n", b"\r\n") if crlf else data


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_detection_where_the_first_frame_ends(shape: str, end: int) -> None:
    data = first_frame(shape, end)
    expected = SHAPES[shape][2]
    assert outcome(bytewise(data)) == expected
    assert outcome([data]) == expected
    for cut in (end - 1, end, end + 1, 512, 513):
        assert outcome([data[:cut], data[cut:]]) == expected, cut


@pytest.mark.parametrize("end", [300, 600, 1600])
def test_a_first_frame_of_no_protocol_fails_alike(end: int) -> None:
    data = b"event: mystery\ndata: " + b"{" + b'"a":1,' * (end // 6) + b'"z":0}\n\ndata: {}\n\n'
    expected = outcome(bytewise(data))
    assert expected.startswith("ProtocolDetectionError: the first frame matches no known protocol")
    assert outcome([data]) == expected


LONE_CR = {
    "a comment after a lone CR": (b"\r: comment\n\n", "openai-chat"),
    "a data line after a lone CR": (b"\rdata: more\n\n", "openai-chat"),
    "a lone CR in CRLF": (b"\r\r\n\r\n", "openai-chat"),
    "an event line after a lone CR": (b"\revent: message_start\n\n", "anthropic"),
    "a data line after a lone CR in the event line": (b"", "ProtocolDetectionError"),
}


@pytest.mark.parametrize("case", list(LONE_CR))
def test_a_lone_cr_in_the_first_frame_is_a_line_break(case: str) -> None:
    tail, protocol = LONE_CR[case]
    if protocol == "anthropic":
        first = anthropic_frame(5).partition(b"\n")[2][:-2] + tail
    elif not tail:  # the event line ends at the CR: "x" is data, which is then not JSON
        first = anthropic_frame(5).replace(b"\ndata: ", b"\rdata: x\ndata: ", 1)
    else:
        first = chat_frame(5)[:-2] + tail
    data = first + chat_frame(3)
    assert outcome(bytewise(data)).startswith(protocol)
    assert outcome([data]) == outcome(bytewise(data))


@pytest.mark.parametrize("skipped", range(5, 10))
def test_frames_that_do_not_decide_count_once(skipped: int) -> None:
    data = b"data: [DONE]\n\n" * skipped + chat_frame(3)
    expected = outcome(bytewise(data))
    assert outcome([data]) == expected
    assert expected == "openai-chat" if skipped < 8 else "frames match no known protocol" in expected


@pytest.mark.parametrize("path", params(OWN_SSE + [p for name in JSONL for p in recordings(name)]))
def test_a_list_or_tuple_of_chunks_is_the_bytes(path: Path) -> None:
    data = path.read_bytes()
    protocol = path.parent.name
    chunks = [data[i : i + 97] for i in range(0, len(data), 97)]
    expected = ms.aggregate(data, protocol=protocol)
    assert ms.aggregate(chunks, protocol=protocol) == expected
    assert ms.aggregate(tuple(chunks), protocol=protocol) == expected
    assert ms.aggregate(iter(chunks), protocol=protocol) == expected
    views: list[object] = [memoryview(c) for c in chunks]  # accepted too, as bytes
    assert ms.aggregate(views, protocol=protocol) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("source", [["data: {}\n\n"], ("data: {}\n\n",), [b"data: [DONE]\n\n", 7]])
def test_a_list_or_tuple_of_other_things_is_refused_as_any_iterable(source: list[object]) -> None:
    with pytest.raises(TypeError) as got:
        ms.aggregate(source, protocol="openai-chat")  # type: ignore[arg-type]
    with pytest.raises(TypeError) as expected:
        ms.aggregate(iter(source), protocol="openai-chat")  # type: ignore[arg-type]
    assert str(got.value) == str(expected.value)
    assert "cannot aggregate an iterable that yielded" in str(got.value)


def closed_first(protocol: str, data: bytes, *, emit: bool) -> ms.Response:
    """The response when what is open is closed before ``finish`` (``finish_events``)."""
    agg = ms.StreamAggregator(protocol, emit=emit)
    agg.feed(data)
    agg.finish_events()
    return agg.finish()


@pytest.mark.parametrize("path", params(OWN_SSE))
def test_finish_closes_what_is_open_as_finish_events_did(path: Path) -> None:
    data = path.read_bytes()
    protocol = path.parent.name
    last = data.replace(b"\r\n", b"\n\n").rfind(b"\n\n")  # the last frame's blank line cut off
    results = []
    for cut in (len(data), len(data) // 3, len(data) // 2, 2 * len(data) // 3, max(last, 1)):
        head = data[:cut]
        agg = ms.StreamAggregator(protocol)
        agg.feed(head)
        got = agg.finish()
        assert got == closed_first(protocol, head, emit=True), cut
        assert got == closed_first(protocol, head, emit=False), cut
        results.append(got)
    assert results[1] != results[0]  # cut a third in, something was still open
