"""The invariants every stream decoder keeps, written once and used by every property test.

* Chunking never matters: the whole stream, 1-byte chunks, any random cuts, CRLF line ends with
  every CR and LF in different chunks, all aggregate to the identical canonical response.
* A snapshot taken mid-stream is a prefix of the final response.
* Re-encoding to the same protocol is lossless and stable: decode(encode(x)) == x and encoding
  the re-encoded bytes again gives the same bytes.
* Honest errors: bad provider input ends in a response or in ``RemoteProtocolError`` (never
  any other error, not even another ``ProtocolError``); misuse of a finished or failed decoder
  or aggregator is ``LocalProtocolError``.

This module owns the comparisons; it holds no test data and no SDK. Helpers raise
``AssertionError`` with what differed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import maas_stream as ms

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def canonical(data: bytes | Iterable[bytes], protocol: str) -> Any:
    """The aggregated response of ``data`` as plain builtins (for ``==`` and readable diffs)."""
    return msgspec.to_builtins(ms.aggregate(data, protocol=protocol))


def chunked(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at every position in ``cuts`` (taken modulo ``len(data) + 1``)."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def one_byte(data: bytes) -> list[bytes]:
    """``data`` as 1-byte chunks."""
    return [data[i : i + 1] for i in range(len(data))]


def with_crlf(data: bytes) -> bytes:
    """``data`` with every line end (LF or CRLF) written as CRLF."""
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def split_cr_lf(data: bytes) -> list[bytes]:
    """``data`` cut after every CR, so each CRLF arrives as CR in one chunk and LF in the next."""
    return chunked(data, [i + 1 for i, byte in enumerate(data) if byte == 0x0D])


def assert_same_under_chunks(data: bytes, protocol: str, chunks: list[bytes]) -> None:
    """``chunks`` (a chunking of ``data``) aggregate exactly like ``data`` in one piece."""
    assert b"".join(chunks) == data, "the chunks are not a chunking of the data"
    assert canonical(chunks, protocol) == canonical(data, protocol)


def assert_one_byte_chunks(data: bytes, protocol: str) -> None:
    """1-byte chunks aggregate exactly like the whole stream."""
    assert_same_under_chunks(data, protocol, one_byte(data))


def assert_crlf_splits(data: bytes, protocol: str) -> None:
    """CRLF line ends, split between CR and LF, aggregate exactly like the original bytes.

    JSON-lines protocols keep their line ends (a CR there would be inside the JSON text's
    trailing whitespace, which proves nothing about framing); their CRs are split as found.
    """
    expected = canonical(data, protocol)
    crlf = with_crlf(data) if ms.get_protocol(protocol).framing == "sse" else data
    assert canonical(split_cr_lf(crlf), protocol) == expected


def assert_snapshots_are_prefixes(data: bytes, protocol: str, *, pieces: int = 7) -> None:
    """Every snapshot taken while feeding ``data`` in ``pieces`` chunks is a prefix of the end.

    Prefix means: no more messages or parts than the final response, the same part types in
    the same places, and each text-like field a prefix of its final value.
    """
    agg = ms.StreamAggregator(protocol)
    step = max(1, len(data) // pieces)
    snapshots = []
    for i in range(0, len(data), step):
        agg.feed(data[i : i + step])
        snapshots.append(agg.snapshot())
    final = agg.finish()
    for snap in snapshots:
        assert len(snap.messages) <= len(final.messages)
        for old, new in zip(snap.messages, final.messages, strict=False):
            assert isinstance(old.content, list)
            assert isinstance(new.content, list)
            assert len(old.content) <= len(new.content)
            for a, b in zip(old.content, new.content, strict=False):
                assert type(a) is type(b), (a, b)
                for field in ("text", "arguments", "data", "transcript"):
                    x, y = getattr(a, field, None), getattr(b, field, None)
                    if isinstance(x, str) and isinstance(y, str):
                        assert y.startswith(x), (field, x, y)


_DELTA_CONTENT: dict[type[Any], str] = {
    ms.events.TextDelta: "text",
    ms.events.RefusalDelta: "text",
    ms.events.ReasoningDelta: "text",
    ms.events.ArgumentsDelta: "delta",
}


def assert_content_only_as_deltas(data: bytes, protocol: str) -> None:
    """In emit mode no ``PartStart`` carries content, and each part's deltas add up to it.

    That is what lets every encoder write content from deltas alone: the text / arguments of
    each part of the final response is exactly the concatenation of its emitted deltas.
    """
    agg = ms.StreamAggregator(protocol, emit=True)
    events = agg.feed(data) + agg.finish_events()
    response = agg.finish()
    sent: dict[tuple[Any, Any], list[str]] = {}
    for event in events:
        if isinstance(event, ms.events.PartStart):
            value = event.value
            field = "arguments" if isinstance(value, ms.ToolCallPart) else "text"
            if isinstance(value, ms.TextPart | ms.RefusalPart | ms.ReasoningPart | ms.ToolCallPart):
                assert not getattr(value, field), f"PartStart {event.message}/{event.part} carries {field}"
            sent.setdefault((event.message, event.part), [])
        content = _DELTA_CONTENT.get(type(event))
        if content is not None:
            key = (getattr(event, "message"), getattr(event, "part"))  # noqa: B009 - any delta type
            sent.setdefault(key, []).append(getattr(event, content))
    for m, message in enumerate(response.messages):
        for p, part in enumerate(message.content if isinstance(message.content, list) else []):
            if isinstance(part, ms.ToolCallPart):
                final = part.arguments
            elif isinstance(part, ms.TextPart | ms.RefusalPart | ms.ReasoningPart):
                final = part.text or ""
            else:
                continue
            assert "".join(sent.get((m, p), [])) == final, f"message {m} part {p}: deltas != final content"


def reencode(data: bytes | Iterable[bytes], protocol: str) -> tuple[bytes, list[ms.Dropped]]:
    """``data`` converted to its own protocol, and what the conversion reported dropped."""
    conv = ms.StreamConverter(protocol, protocol=protocol)
    chunks = [data] if isinstance(data, bytes) else list(data)
    out = b"".join(conv.feed(chunk) for chunk in chunks) + conv.finish()
    return out, conv.lossy


def assert_same_protocol_round_trip(
    data: bytes,
    protocol: str,
    *,
    chunks: list[bytes] | None = None,
    normalize: Callable[[Any], Any] = lambda x: x,
) -> None:
    """decode(encode(x)) == x for the same protocol, nothing dropped, and re-encoding is stable.

    ``chunks`` feeds the converter a chunking of ``data`` instead of the whole; ``normalize``
    removes what the protocol legitimately does not carry from both sides before comparing.
    """
    once, dropped = reencode(chunks if chunks is not None else data, protocol)
    assert [str(d) for d in dropped] == []
    assert normalize(canonical(once, protocol)) == normalize(canonical(data, protocol))
    twice, dropped = reencode(once, protocol)
    assert [str(d) for d in dropped] == []
    assert twice == once, "re-encoding the re-encoded stream changed it"


def assert_decodes_or_remote_error(data: bytes, protocol: str) -> ms.Response | None:
    """Bad input ends in a response of ``protocol`` or in ``RemoteProtocolError``, nothing else.

    Returns the response, or ``None`` when the input was refused. Any other exception (a
    ``LocalProtocolError``, a ``KeyError`` ...) propagates and fails the test: it is either a
    bug or a refusal that blames the caller for the provider's bytes.
    """
    try:
        response = ms.aggregate(data, protocol=protocol)
    except ms.RemoteProtocolError as exc:
        refused = exc
    else:
        assert response.protocol == protocol
        assert response.status in ("completed", "incomplete", "failed", "in_progress")
        return response
    assert refused.protocol in (protocol, None), refused.protocol
    return None


def assert_misuse_is_local_error(protocol: str, data: bytes, *, fail_with: bytes | None = None) -> None:
    """Feeding (bytes or a message) after ``finish()`` or after an error is ``LocalProtocolError``.

    Checks the protocol's own decoder and the ``StreamAggregator`` around it. ``data`` is a
    valid stream; ``fail_with`` is input that makes the decoder raise ``RemoteProtocolError``.
    """
    spec = ms.get_protocol(protocol)
    websocket = spec.framing == "jsonl"

    def misuse(target: Any) -> None:
        with pytest.raises(ms.LocalProtocolError):
            target.feed(data)
        if websocket:
            with pytest.raises(ms.LocalProtocolError):
                target.feed_message(b"{}")
        with pytest.raises(ms.LocalProtocolError):
            target.finish()

    decoder = spec.decoder()
    decoder.feed(data)
    decoder.finish()
    misuse(decoder)

    agg = ms.StreamAggregator(protocol)
    agg.feed(data)
    agg.finish()
    misuse(agg)

    if fail_with is not None:
        for target in (spec.decoder(), ms.StreamAggregator(protocol)):
            with pytest.raises(ms.RemoteProtocolError):
                target.feed(fail_with)
            misuse(target)
