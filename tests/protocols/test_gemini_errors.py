"""Honest errors: bad Gemini input raises RemoteProtocolError, and nothing else.

Wrong JSON types, arguments that are not UTF-8 or not an object, absurd ``partialArgs`` paths
and JSON nested past what can be decoded are the provider's fault: the decoder says so with
:class:`~maas_stream.RemoteProtocolError` (never ``TypeError``, ``KeyError``,
``UnicodeDecodeError``, ``RecursionError`` or ``MemoryError``), and an absurd array index costs
memory in proportion to the bytes received, not to the index.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream.protocols import gemini
from tests import invariants as inv
from tests.conftest import recordings


def _sse(*chunks: dict[str, Any] | bytes) -> bytes:
    out = b""
    for chunk in chunks:
        out += b"data: " + (chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()) + b"\r\n\r\n"
    return out


def _cand(parts: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "candidates": [{"index": 0, "content": {"role": "model", "parts": parts}, **extra}],
        "responseId": "r",
    }


def _streamed(*paths: tuple[str, Any]) -> bytes:
    frags = [
        {"jsonPath": p, **({"stringValue": v} if isinstance(v, str) else {"numberValue": v})}
        for p, v in paths
    ]
    return _sse(
        _cand([{"functionCall": {"name": "f", "willContinue": True}}]),
        _cand([{"functionCall": {"partialArgs": frags, "willContinue": True}}]),
        _cand([{"functionCall": {}}], finishReason="STOP"),
    )


def _raises_remote(data: bytes) -> ms.RemoteProtocolError:
    with pytest.raises(ms.RemoteProtocolError) as info:
        ms.aggregate(data, protocol="gemini")
    assert type(info.value) is ms.RemoteProtocolError
    return info.value


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param({"candidates": "x"}, id="candidates-string"),
        pytest.param({"candidates": [{"index": "0"}]}, id="index-string"),
        pytest.param(_cand([{"text": 1}]), id="text-number"),
        pytest.param(_cand([{"thought": "yes", "text": "a"}]), id="thought-string"),
        pytest.param(_cand([{"functionCall": "f"}]), id="call-string"),
        pytest.param(_cand([{"functionCall": {"name": "f", "args": "x"}}]), id="args-string"),
        pytest.param(_cand([{"functionCall": {"name": "f", "args": [1, 2]}}]), id="args-list"),
        pytest.param(_cand([{"functionResponse": [1]}]), id="function-response-list"),
        pytest.param(_cand([{"toolCall": "search"}]), id="tool-call-string"),
        pytest.param(_cand([{"inlineData": {"data": 5}}]), id="inline-data-number"),
        pytest.param(
            _cand([{"functionCall": {"name": "f", "partialArgs": {"jsonPath": "$.a"}}}]), id="partial-object"
        ),
        pytest.param({"promptFeedback": ["SAFETY"]}, id="feedback-list"),
        pytest.param({"modelStatus": "stable", "candidates": []}, id="model-status-string"),
    ],
)
def test_wrong_json_types_raise_remote_protocol_error(chunk: dict[str, Any]) -> None:
    err = _raises_remote(_sse(_cand([{"text": "ok"}]), chunk))
    assert err.frame == 2
    # What the frames before the bad one decoded to is kept: folded into the partial response.
    assert err.partial is not None
    assert err.partial.messages[0].content == [ms.TextPart(text="ok")]


def test_invalid_utf8_in_whole_arguments() -> None:
    bad = b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"q":"\xff\xfe"}}}]}}]}'
    assert "UTF-8" in str(_raises_remote(_sse(bad)))


def test_invalid_utf8_in_streamed_arguments() -> None:
    bad = b'{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.q","stringValue":"\xc3("}]}}]}}]}'
    _raises_remote(_sse(_cand([{"functionCall": {"name": "f", "willContinue": True}}]), bad))


def test_json_nested_too_deeply() -> None:
    deep = b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":' + b'{"a":' * 3000
    deep += b"1" + b"}" * 3000 + b"}}]}}]}"
    _raises_remote(_sse(deep))


def test_absurd_array_index_costs_no_memory() -> None:
    tracemalloc.start()
    try:
        err = _raises_remote(_streamed(("$.a[100000000]", "x")))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "index" in str(err)
    assert peak < 2_000_000  # a list of 10**8 slots would be 800 MB


def test_huge_index_digits_refused() -> None:
    _raises_remote(_streamed(("$.a[" + "9" * 5000 + "]", 1)))


def test_small_gaps_are_filled_with_null() -> None:
    resp = ms.aggregate(_streamed(("$.a[0]", 1), ("$.a[3]", 2)), protocol="gemini")
    call = resp.messages[0].content[0]
    assert isinstance(call, ms.ToolCallPart)
    assert json.loads(call.arguments) == {"a": [1, None, None, 2]}


def test_far_index_after_many_entries_is_refused() -> None:
    entries = [(f"$.a[{i}]", i) for i in range(10)]
    resp = ms.aggregate(_streamed(*entries, ("$.a[70]", 1)), protocol="gemini")
    assert resp.status == "completed"
    _raises_remote(_streamed(*entries, ("$.a[80]", 1)))


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("$" + ".a" * 101, id="too-deep"),
        pytest.param("$[0]", id="root-array"),
        pytest.param("$.a.b", id="into-a-string"),
        pytest.param("$.x[0]", id="object-indexed"),
        pytest.param("$.o.k", id="array-named"),
    ],
)
def test_bad_paths_raise_remote_protocol_error(path: str) -> None:
    _raises_remote(_streamed(("$.a", "s"), ("$.x.k", 1), ("$.o[0]", 1), (path, 1)))


# ---------------------------------------------------------------------- properties

_json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_FIELDS = [
    ("candidates",),
    ("candidates", 0),
    ("candidates", 0, "index"),
    ("candidates", 0, "finishReason"),
    ("candidates", 0, "content"),
    ("candidates", 0, "content", "parts"),
    ("candidates", 0, "content", "parts", 0),
    ("candidates", 0, "content", "parts", 0, "text"),
    ("candidates", 0, "content", "parts", 0, "thoughtSignature"),
    ("candidates", 0, "content", "parts", 1, "functionCall"),
    ("candidates", 0, "content", "parts", 1, "functionCall", "args"),
    ("candidates", 0, "content", "parts", 1, "functionCall", "name"),
    ("candidates", 0, "content", "parts", 1, "functionCall", "partialArgs"),
    ("candidates", 0, "content", "parts", 1, "functionCall", "willContinue"),
    ("candidates", 0, "groundingMetadata"),
    ("candidates", 0, "citationMetadata"),
    ("usageMetadata",),
    ("usageMetadata", "candidatesTokenCount"),
    ("promptFeedback",),
    ("error",),
    ("modelVersion",),
]


def _base() -> dict[str, Any]:
    parts = [
        {"text": "hi", "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "f", "args": {"a": 1}, "willContinue": True}},
    ]
    return {**_cand(parts, finishReason="STOP"), "usageMetadata": {"promptTokenCount": 1}}


@settings(max_examples=300, deadline=None)
@given(
    where=st.sampled_from(_FIELDS), value=_json_value, target=st.sampled_from([None, "gemini", "openai-chat"])
)
def test_any_value_anywhere_decodes_or_raises_remote_protocol_error(
    where: tuple[Any, ...], value: Any, target: str | None
) -> None:
    chunk: Any = _base()
    node = chunk
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    data = _sse(chunk, _cand([{"functionCall": {"partialArgs": [{"jsonPath": "$.b", "numberValue": 1}]}}]))
    # A result, or RemoteProtocolError (the one exception bad input deserves); anything else fails.
    response = inv.assert_decodes_or_remote_error(data, "gemini")
    if response is not None and target is not None:
        out = ms.convert(data, to=target, protocol="gemini", fail_closed=False)
        assert ms.aggregate(out, protocol=target).protocol == target


@settings(max_examples=200, deadline=None)
@given(
    which=st.integers(min_value=0, max_value=100),
    index=st.integers(min_value=0, max_value=5000),
    byte=st.sampled_from([0x00, 0x22, 0x5C, 0x7B, 0x7D, 0x80, 0xC3, 0xFF]),
)
def test_corrupted_bytes_decode_or_raise_remote_protocol_error(which: int, index: int, byte: int) -> None:
    files = recordings("gemini")
    data = bytearray(files[which % len(files)].read_bytes())
    data[index % len(data)] = byte
    # A result of the protocol, or RemoteProtocolError naming it; anything else fails the test.
    response = inv.assert_decodes_or_remote_error(bytes(data), "gemini")
    if response is not None:
        assert response.protocol == "gemini"


@settings(max_examples=200, deadline=None)
@given(where=st.sampled_from(_FIELDS), value=_json_value)
def test_decode_response_bad_bodies_raise_remote_protocol_error(where: tuple[Any, ...], value: Any) -> None:
    body: Any = _base()
    node = body
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    try:
        resp = gemini.decode_response(body)
    except ms.RemoteProtocolError:
        return  # the one exception bad input deserves; anything else fails the test
    assert resp.protocol == "gemini"
