"""Properties of the Gemini decoder and encoder: corrupted recordings raise only
``RemoteProtocolError``, decode(encode(x)) == x for generated streams. Chunking invariance and
random bytes are covered for every protocol in ``test_chunking.py``."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import invariants as inv
from tests.conftest import recordings


@settings(max_examples=50, deadline=None)
@given(
    index=st.integers(min_value=0, max_value=2000),
    byte=st.integers(min_value=0, max_value=255),
    which=st.integers(min_value=0, max_value=100),
)
def test_corrupted_recordings_decode_or_raise_remote_protocol_error(
    index: int, byte: int, which: int
) -> None:
    files = recordings("gemini")
    data = bytearray(files[which % len(files)].read_bytes())
    data[index % len(data)] = byte
    inv.assert_decodes_or_remote_error(bytes(data), "gemini")


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


def _without_raw_usage(resp: Any) -> Any:
    resp["usage"].pop("raw")
    return resp


@settings(max_examples=50, deadline=None)
@given(data=_stream())
def test_decode_encode_decode_is_identity(data: bytes) -> None:
    inv.assert_same_protocol_round_trip(data, "gemini", normalize=_without_raw_usage)
