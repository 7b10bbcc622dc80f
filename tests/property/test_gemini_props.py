"""Properties of the Gemini decoder and encoder: chunking, random bytes, decode(encode(x)) == x."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maas_stream as ms
from tests.conftest import corpus, params, recordings

if TYPE_CHECKING:
    from pathlib import Path

FILES = [*corpus("gemini"), *recordings("gemini")]
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _agg(chunks: list[bytes]) -> Any:
    return msgspec.to_builtins(ms.aggregate(chunks, protocol="gemini"))


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points:
        out.append(data[last:p])
        last = p
    out.append(data[last:])
    return out


@pytest.mark.parametrize("path", params(FILES))
def test_one_byte_chunks_and_cr_lf_splits(path: Path) -> None:
    data = path.read_bytes()
    whole = _agg([data])
    assert _agg([data[i : i + 1] for i in range(len(data))]) == whole
    crs = [i + 1 for i, b in enumerate(data) if b == 0x0D]
    assert _agg(_split(data, crs)) == whole


@pytest.mark.parametrize("path", params(FILES))
@SETTINGS
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12))
def test_any_chunking_same_result(path: Path, cuts: list[int]) -> None:
    data = path.read_bytes()
    assert _agg(_split(data, cuts)) == _agg([data])


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    try:
        resp = ms.aggregate(data, protocol="gemini")
    except ms.ProtocolError:
        return
    assert resp.protocol == "gemini"


@settings(max_examples=50, deadline=None)
@given(
    index=st.integers(min_value=0, max_value=2000),
    byte=st.integers(min_value=0, max_value=255),
    which=st.integers(min_value=0, max_value=100),
)
def test_corrupted_recordings_decode_or_raise_protocol_error(index: int, byte: int, which: int) -> None:
    files = recordings("gemini")
    data = bytearray(files[which % len(files)].read_bytes())
    data[index % len(data)] = byte
    try:
        resp = ms.aggregate(bytes(data), protocol="gemini")
    except ms.ProtocolError:
        return
    assert resp.protocol == "gemini"


# ---------------------------------------------------------------------- decode(encode(x)) == x

_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)
_sig = st.binary(min_size=1, max_size=12).map(lambda b: base64.b64encode(b).decode())
_args = st.dictionaries(
    st.sampled_from(["city", "n", "flag", "tags"]),
    st.one_of(_text, st.integers(-5, 5), st.booleans(), st.lists(_text, max_size=2)),
    max_size=3,
)


@st.composite
def _part(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "thought", "call", "call"]))
    part: dict[str, Any]
    if kind == "call":
        call: dict[str, Any] = {"name": draw(st.sampled_from(["f", "g"])), "args": draw(_args)}
        if draw(st.booleans()):
            call = {"id": "id_" + draw(st.text("abc123", min_size=1, max_size=4)), **call}
        part = {"functionCall": call}
    else:
        part = {"text": draw(_text)}
        if kind == "thought":
            part["thought"] = True
    if draw(st.integers(0, 3)) == 0:
        part["thoughtSignature"] = draw(_sig)
    return part


@st.composite
def _stream(draw: st.DrawFn) -> bytes:
    chunks = draw(st.lists(st.lists(_part(), min_size=1, max_size=3), min_size=1, max_size=6))
    seen: set[str] = set()
    frames = []
    for n, parts in enumerate(chunks):
        for p in parts:  # call ids are unique within a response
            fc = p.get("functionCall")
            if fc is not None and "id" in fc:
                if fc["id"] in seen:
                    del fc["id"]
                else:
                    seen.add(fc["id"])
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        body: dict[str, Any] = {"candidates": [cand], "modelVersion": "gemini-x", "responseId": "r"}
        if n == len(chunks) - 1:
            cand["finishReason"] = draw(st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY"]))
            body["usageMetadata"] = {"promptTokenCount": 3, "candidatesTokenCount": 4, "totalTokenCount": 7}
        frames.append(b"data: " + json.dumps(body).encode() + b"\r\n\r\n")
    return b"".join(frames)


@settings(max_examples=50, deadline=None)
@given(data=_stream())
def test_decode_encode_decode_is_identity(data: bytes) -> None:
    before = _agg([data])
    conv = ms.StreamConverter("gemini", protocol="gemini")
    out = conv.feed(data) + conv.finish()
    assert conv.lossy == []
    after = _agg([out])
    for resp in (before, after):
        resp["usage"].pop("raw")
    assert after == before
