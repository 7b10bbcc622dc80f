"""The re-encoding hot paths write what the per-event paths write, byte for byte.

Pre-encoded frames (``protocols/_template``) replace a dict and an encode per delta; the
converter hands a frame's events on in one list (``EmittingAggregator.feed_all``) and keeps no
copy of a one-response stream. Each test here compares a fast path with the slow one it
replaces, on values that stress JSON escaping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms
from maas_stream._registry import get_protocol
from maas_stream._split import Splitter
from maas_stream.protocols._template import HOLE, template
from maas_stream.protocols.openai_realtime._writer import ResponseWriter
from maas_stream.protocols.openai_responses._output import Output
from tests.conftest import RECORDINGS, corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

VALUES = ["", "plain", 'quote " and \\ backslash', "new\nline\ttab", "é 中文 🙂", "\x00\x1f", "</script>"]
"""Delta values whose JSON encoding escapes something (or nothing)."""

_json = msgspec.json.Encoder()


def _sse(body: Any) -> bytes:
    return b"data: " + _json.encode(body) + b"\n\n"


def _filled(frames: tuple[bytes, ...], *values: bytes) -> bytes:
    out = [frames[0]]
    for value, fragment in zip(values, frames[1:], strict=True):
        out += [value, fragment]
    return b"".join(out)


@pytest.mark.parametrize("value", VALUES)
def test_a_filled_template_is_the_encoded_body(value: str) -> None:
    body = {"id": "x", "choices": [{"index": 0, "delta": {"content": HOLE[0]}, "n": HOLE[1]}], "z": None}
    frames = template(_sse, body, 2)
    expected = {"id": "x", "choices": [{"index": 0, "delta": {"content": value}, "n": 7}], "z": None}
    assert _filled(frames, _json.encode(value), b"7") == _sse(expected)


@pytest.mark.parametrize(
    ("body", "holes"),
    [
        ({"a": "no marker"}, 1),
        ({"a": HOLE[0], "b": HOLE[0]}, 1),
        ({"a": HOLE[1], "b": HOLE[0]}, 2),
    ],
    ids=["missing", "repeated", "out-of-order"],
)
def test_a_template_without_each_marker_once_in_order_is_refused(body: dict[str, Any], holes: int) -> None:
    with pytest.raises(ValueError, match="exactly once"):
        template(_sse, body, holes)


@pytest.mark.parametrize("value", VALUES)
def test_responses_delta_frames_number_and_write_like_frame(value: str) -> None:
    fast, slow = Output(), Output()
    fast.seq = slow.seq = 41
    frames = Output.delta_frame(
        "response.output_text.delta", {"item_id": "m", "delta": HOLE[0], "logprobs": []}
    )
    assert fast.fill(frames, value) == slow.frame(
        "response.output_text.delta", {"item_id": "m", "delta": value, "logprobs": []}
    )
    assert fast.fill(frames, value) == slow.frame(
        "response.output_text.delta", {"item_id": "m", "delta": value, "logprobs": []}
    )
    assert fast.seq == slow.seq == 43


@pytest.mark.parametrize("value", VALUES)
def test_realtime_delta_events_are_the_events_the_writer_builds(value: str) -> None:
    fast, slow = ResponseWriter(), ResponseWriter()
    for writer in (fast, slow):
        writer.open(None)
    item_fast, _ = fast.add("message", "item_1", None)
    item_slow, _ = slow.add("message", "item_1", None)
    index, _ = fast.content(item_fast, "text")
    slow.content(item_slow, "text")
    for _ in range(2):  # the second one from the kept template
        base = {"response_id": slow.response, "item_id": "item_1", "output_index": 0, "content_index": index}
        expected = slow.event({"type": "response.output_text.delta", **base, "delta": value})
        assert fast.text(item_fast, index, value) == expected
    # What was streamed is what the part lists when it is done.
    assert fast.content_done(item_fast, index, "text").count(_json.encode(value * 2)) == 2


@pytest.mark.parametrize("value", VALUES)
def test_chat_audio_deltas_are_the_chunks_the_encoder_builds(value: str) -> None:
    """A Chat audio part's data and transcript deltas (pre-encoded): the chunk ``_chunk`` writes."""
    from maas_stream import events as ev

    enc: Any = get_protocol("openai-chat").encoder()  # (its _chunk: the general way)
    start: list[ev.Event] = [
        ev.ResponseStart(protocol="openai-realtime", id="resp_1", model="m"),
        ev.MessageStart(message=0, role="assistant"),
        ev.PartStart(message=0, part=0, value=ms.AudioPart()),
    ]
    for event in start:
        enc.encode(event)
    for _ in range(2):  # the second one from the kept template
        for delta, audio in (
            (ev.AudioDelta(message=0, part=0, data=value), {"data": value}),
            (ev.AudioDelta(message=0, part=0, transcript=value), {"transcript": value}),
        ):
            expected = enc._chunk(0, {"audio": audio}) if value else b""
            assert enc.encode(delta) == expected
    both = ev.AudioDelta(message=0, part=0, data="d", transcript=value)  # the general way
    assert enc.encode(both) == enc._chunk(
        0, {"audio": {"data": "d", "transcript": value} if value else {"data": "d"}}
    )


def _streams() -> list[tuple[str, Path]]:
    found = [(p, f) for p in ms.protocol_names() for f in [*recordings(p), *corpus(p)][:6]]
    return found or [("openai-chat", RECORDINGS / "openai-chat" / "missing.sse")]


@pytest.mark.parametrize(("protocol", "path"), _streams(), ids=lambda v: getattr(v, "name", v))
def test_feed_all_hands_on_what_feed_does_per_event(protocol: str, path: Path) -> None:
    data = path.read_bytes()
    decoder = get_protocol(protocol).decoder()
    try:
        source = decoder.feed(data) + decoder.finish()
    except ms.ProtocolError:
        pytest.skip("the stream is cut or invalid on purpose")
    per_event = ms.Aggregator(protocol, emit=True)
    batch = ms.Aggregator(protocol, emit=True)
    expected = [out for event in source for out in per_event.feed(event)]
    assert batch.feed_all(source) == expected
    assert batch.finish() == per_event.finish()


@pytest.mark.parametrize("target", ["openai-chat", "anthropic", "gemini", "openai-realtime"])
def test_a_one_response_converter_keeps_no_copy_of_its_output(target: str) -> None:
    data = next(p for p in recordings("openai-chat")).read_bytes()
    conv = ms.StreamConverter(target, protocol="openai-chat")
    out = conv.feed(data) + conv.finish()
    assert out == ms.convert(data, to=target, protocol="openai-chat")
    assert conv.streams == []  # the caller has the one stream; nothing kept
    assert ms.convert_session(data, to=target, protocol="openai-chat") == [out]


def _session_streams() -> list[tuple[str, Path]]:
    return [(p, f) for p in ("openai-realtime", "google-live") for f in [*recordings(p), *corpus(p)]]


def _per_event(self: Splitter, events: list[Any]) -> bytes:
    return b"".join([self._event(event) for event in events])


@pytest.mark.parametrize("target", ["openai-chat", "openai-responses", "anthropic", "gemini"])
@pytest.mark.parametrize(("protocol", "path"), _session_streams(), ids=lambda v: getattr(v, "name", v))
def test_a_split_session_writes_what_its_per_event_path_writes(
    protocol: str, path: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Splitter.encode``'s batch of content deltas: the same streams, bytes and drops.

    Fed whole and in 7-byte pieces (a piece completes a few lines, a batch is short).
    """
    data = path.read_bytes()

    def run(pieces: list[bytes]) -> tuple[list[bytes], bytes, list[Any]]:
        conv = ms.StreamConverter(to=target, protocol=protocol, fail_closed=False)
        out = b"".join([conv.feed(piece) for piece in pieces]) + conv.finish()
        return conv.streams, out, conv.lossy

    for pieces in ([data], [data[i : i + 7] for i in range(0, len(data), 7)]):
        fast = run(pieces)
        with monkeypatch.context() as patched:
            patched.setattr(Splitter, "encode", _per_event)
            slow = run(pieces)
        assert fast == slow
        assert fast[0], "the session wrote no response stream"


def _long_anthropic(deltas: int) -> bytes:
    """An Anthropic stream of one text block then one tool call, each of ``deltas`` small deltas."""

    def ev(kind: str, body: dict[str, Any]) -> bytes:
        return f"event: {kind}\n".encode() + _sse({"type": kind, **body})

    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
    out = [ev("message_start", {"message": {**message, "usage": {"input_tokens": 1, "output_tokens": 1}}})]
    out.append(ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}))
    out += [
        ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": f"w{i} é\n"}})
        for i in range(deltas)
    ]
    out.append(ev("content_block_stop", {"index": 0}))
    call = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    out.append(ev("content_block_start", {"index": 1, "content_block": call}))
    out.append(
        ev(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a": "'}},
        )
    )
    out += [
        ev(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": f"x{i}"}},
        )
        for i in range(deltas)
    ]
    out.append(
        ev("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta", "partial_json": '"}'}})
    )
    out.append(ev("content_block_stop", {"index": 1}))
    out.append(ev("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}))
    out.append(ev("message_stop", {}))
    return b"".join(out)


@pytest.mark.parametrize("target", ["openai-responses", "openai-realtime", "google-live"])
def test_encoders_join_their_fragments_as_they_come(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What an encoder keeps of a long part (to write its end) is joined as it comes, same bytes.

    The encoders keep a part's text or arguments through ``_accumulate.add_fragment`` (or its
    inlined form, ``compact`` past ``FRAGMENTS`` pieces), so they hold a few pieces, not one
    ``str`` per delta; written with plain appends, the output is the same, byte for byte, whole
    and in pieces.
    """
    import maas_stream.protocols.google_live._encode as live_encode
    import maas_stream.protocols.openai_realtime._writer as realtime_writer
    import maas_stream.protocols.openai_responses._encode as responses_encode
    import maas_stream.protocols.openai_responses._text_writer as responses_text
    import maas_stream.protocols.openai_responses._writers as responses_writers

    data = _long_anthropic(2_000)

    def run(pieces: list[bytes]) -> bytes:
        conv = ms.StreamConverter(target, protocol="anthropic")
        return b"".join([conv.feed(piece) for piece in pieces]) + conv.finish()

    for pieces in ([data], [data[i : i + 4096] for i in range(0, len(data), 4096)]):
        joined = run(pieces)
        with monkeypatch.context() as patched:
            for module in (live_encode, realtime_writer, responses_writers, responses_text, responses_encode):
                if hasattr(module, "add_fragment"):
                    patched.setattr(module, "add_fragment", lambda buf, text: buf.append(text))
                if hasattr(module, "compact"):  # (where add_fragment is inlined)
                    patched.setattr(module, "compact", lambda buf: None)
            appended = run(pieces)
        assert joined == appended
        parts = [
            part for message in ms.aggregate(joined, protocol=target).messages for part in message.content
        ]
        texts = [part.text for part in parts if isinstance(part, ms.TextPart)]
        calls = [part.arguments for part in parts if isinstance(part, ms.ToolCallPart)]
        assert texts == ["".join(f"w{i} é\n" for i in range(2_000))]
        assert [msgspec.json.decode(call) for call in calls] == [
            {"a": "".join(f"x{i}" for i in range(2_000))}
        ]


def test_a_responses_text_part_holds_few_pieces() -> None:
    """The Responses encoder's own copy of a 2,000-delta text part is a few pieces, not 2,000.

    (An encoder fed events keeps what it wrote; a converter's reads its aggregator's, below.)
    """
    from maas_stream.protocols.openai_responses import StreamEncoder
    from maas_stream.protocols.openai_responses._text_writer import TextWriter

    data = _long_anthropic(2_000)
    source = ms.StreamAggregator("anthropic", emit=True)
    encoder: Any = StreamEncoder()
    for event in source.feed(data[: data.index(b"content_block_stop")]):
        encoder.encode(event)
    writers = [w for w in (encoder._hot, *encoder._parts.values()) if isinstance(w, TextWriter)]
    assert len(writers) == 1
    assert type(writers[0]) is TextWriter
    assert 0 < len(writers[0].sent) < 64
    assert "".join(writers[0].sent) == "".join(f"w{i} é\n" for i in range(2_000))


def test_a_converter_keeps_a_responses_text_part_once() -> None:
    """In a converter the text part's writer keeps no copy: it counts what it wrote.

    The output is the same bytes as an encoder's that kept its own copy (a part ended early:
    tests/convert/test_responses_shared_text.py).
    """
    from maas_stream.protocols.openai_responses import StreamEncoder
    from maas_stream.protocols.openai_responses._text_writer import SharedTextWriter, TextWriter

    data = _long_anthropic(2_000)
    cut = data[: data.index(b"content_block_stop")]
    conv = ms.StreamConverter("openai-responses", protocol="anthropic")
    out = conv.feed(cut)
    encoder: Any = conv._encoder
    writers = [w for w in (encoder._hot, *encoder._parts.values()) if isinstance(w, TextWriter)]
    assert len(writers) == 1
    assert type(writers[0]) is SharedTextWriter
    count: object = writers[0].sent
    assert count == len("".join(f"w{i} é\n" for i in range(2_000)))  # a count, no text
    out += conv.finish()

    source = ms.StreamAggregator("anthropic", emit=True)
    kept = StreamEncoder()
    own = b"".join([kept.encode(e) for e in [*source.feed(cut), *source.finish_events()]]) + kept.finish()
    assert out == own
