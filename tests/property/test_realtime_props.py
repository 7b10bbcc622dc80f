"""Properties of google-interactions, google-live and openai-realtime.

* Detection works on any chunking of the SSE / JSON-lines bytes (the chunking invariance itself
  is covered for every protocol in ``test_chunking.py``).
* Random bytes and protocol-shaped random JSON frames raise only ``RemoteProtocolError`` (or
  decode).
* decode(encode(x)) == x for generated canonical content, through each of the three encoders.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maas_stream as ms
from maas_stream import ReasoningPart, TextPart, ToolCallPart
from maas_stream.events import (
    ArgumentsDelta,
    Event,
    MessageDone,
    MessageStart,
    PartDone,
    PartStart,
    ReasoningDelta,
    ResponseDone,
    ResponseStart,
    SignatureDelta,
    TextDelta,
)
from maas_stream.protocols import google_interactions, google_live, openai_realtime
from tests import invariants as inv
from tests.conftest import corpus, recordings

if TYPE_CHECKING:
    from pathlib import Path

PROTOCOLS = ("google-interactions", "google-live", "openai-realtime")
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _files() -> list[tuple[str, Path]]:
    out = []
    for proto in PROTOCOLS:
        small = [p for p in corpus(proto) if p.stat().st_size < 40_000]
        out += [(proto, p) for p in recordings(proto) + small]
    return out


FILES = _files()


def _dump(resp: ms.Response) -> bytes:
    return msgspec.json.encode(resp)


@pytest.mark.parametrize(("proto", "path"), [pytest.param(p, f, id=f"{p}/{f.name}") for p, f in FILES])
@SETTINGS
@given(cuts=st.lists(st.integers(min_value=0), max_size=40))
def test_detection_works_on_chunked_input(proto: str, path: Path, cuts: list[int]) -> None:
    raw = path.read_bytes()
    assert ms.aggregate(inv.chunked(raw, cuts)).protocol == proto


@pytest.mark.parametrize("proto", PROTOCOLS)
@SETTINGS
@given(raw=st.binary(max_size=300))
def test_random_bytes_decode_or_raise_remote_protocol_error(proto: str, raw: bytes) -> None:
    inv.assert_decodes_or_remote_error(raw, proto)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
KEYS = {
    "google-interactions": [
        "event_type",
        "index",
        "step",
        "delta",
        "interaction",
        "content",
        "error",
        "type",
        "text",
        "arguments",
        "signature",
        "annotations",
        "id",
        "name",
        "status",
        "usage",
        "call_id",
    ],
    "google-live": [
        "serverContent",
        "toolCall",
        "toolCallCancellation",
        "usageMetadata",
        "setupComplete",
        "modelTurn",
        "parts",
        "text",
        "inlineData",
        "turnComplete",
        "functionCalls",
        "ids",
        "toolResponse",
        "functionResponses",
        "inputTranscription",
        "outputTranscription",
        "interrupted",
        "clientContent",
    ],
    "openai-realtime": [
        "type",
        "item_id",
        "content_index",
        "delta",
        "item",
        "part",
        "response",
        "output",
        "call_id",
        "arguments",
        "name",
        "transcript",
        "error",
        "status",
        "usage",
        "id",
        "role",
        "content",
    ],
}
VALUES = {
    "google-interactions": [
        "step.start",
        "step.delta",
        "step.stop",
        "interaction.created",
        "interaction.completed",
        "content.start",
        "content.delta",
        "text",
        "thought",
        "function_call",
        "arguments_delta",
        "thought_signature",
        "google_search_call",
        "model_output",
        "requires_action",
    ],
    "google-live": ["AUDIO", "audio/pcm;rate=24000", "fc-1"],
    "openai-realtime": [
        "response.created",
        "response.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_audio.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "conversation.item.input_audio_transcription.completed",
        "function_call",
        "message",
        "text",
        "audio",
        "conversation.item.create",
        "function_call_output",
        "error",
    ],
}


def _shaped(proto: str) -> st.SearchStrategy[Any]:
    leaf = (
        st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(VALUES[proto]) | st.text(max_size=4)
    )
    return st.recursive(
        leaf,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS[proto]), inner, max_size=4)
        ),
        max_leaves=12,
    )


@pytest.mark.parametrize("proto", PROTOCOLS)
@SETTINGS
@given(data=st.data())
def test_random_frames_decode_or_raise_remote_protocol_error(proto: str, data: st.DataObject) -> None:
    frames = data.draw(st.lists(_shaped(proto) | JSON, min_size=1, max_size=6))
    if proto == "google-interactions":
        names = data.draw(
            st.lists(st.sampled_from(VALUES[proto][:7]), min_size=len(frames), max_size=len(frames))
        )
        raw = b"".join(
            b"event: " + n.encode() + b"\ndata: " + json.dumps(f).encode() + b"\n\n"
            for n, f in zip(names, frames, strict=True)
        )
    else:
        dirs = data.draw(
            st.lists(st.sampled_from(["server", "client"]), min_size=len(frames), max_size=len(frames))
        )
        raw = b"".join(
            json.dumps({"dir": d, "msg": f}).encode() + b"\n" for d, f in zip(dirs, frames, strict=True)
        )
    inv.assert_decodes_or_remote_error(raw, proto)


# ---------------------------------------------------------------- decode(encode(x)) == x

TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)
ARGS = st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4) | st.booleans(), max_size=3)
PART = st.one_of(
    st.tuples(st.just("text"), st.lists(TEXT, min_size=1, max_size=3)),
    st.tuples(
        st.just("call"),
        st.tuples(st.uuids().map(lambda u: f"call_{u.hex[:8]}"), st.sampled_from(["f", "get_x"]), ARGS),
    ),
    st.tuples(
        st.just("reasoning"),
        st.tuples(st.lists(TEXT, min_size=1, max_size=2), st.text("abcXYZ+/=", min_size=1, max_size=12)),
    ),
)


def _events(parts: list[tuple[str, Any]]) -> list[Event]:
    out: list[Event] = [ResponseStart(protocol="google-live", id="src_1"), MessageStart(message=0)]
    calls = False
    for j, (kind, body) in enumerate(parts):
        if kind == "text":
            out.append(PartStart(message=0, part=j, value=TextPart(text="")))
            out += [TextDelta(message=0, part=j, text=t) for t in body]
            out.append(PartDone(message=0, part=j, value=TextPart(text="".join(body))))
        elif kind == "call":
            calls = True
            call_id, name, args = body
            text = msgspec.json.encode(args).decode()
            out.append(PartStart(message=0, part=j, value=ToolCallPart(id=call_id, name=name, arguments="")))
            out += [
                ArgumentsDelta(message=0, part=j, delta=text[:3]),
                ArgumentsDelta(message=0, part=j, delta=text[3:]),
            ]
            out.append(PartDone(message=0, part=j, value=ToolCallPart(id=call_id, name=name, arguments=text)))
        else:
            texts, signature = body
            out.append(PartStart(message=0, part=j, value=ReasoningPart()))
            out += [ReasoningDelta(message=0, part=j, text=t) for t in texts]
            out.append(SignatureDelta(message=0, part=j, signature=signature))
            out.append(
                PartDone(message=0, part=j, value=ReasoningPart(text="".join(texts), signature=signature))
            )
    out.append(MessageDone(message=0))
    out.append(ResponseDone(finish_reason="tool_calls" if calls else "stop"))
    return out


def _expected(parts: list[tuple[str, Any]], target: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for kind, body in parts:
        if kind == "text":
            out.append(("text", "".join(body)))
        elif kind == "call":
            call_id, name, args = body
            out.append(("call", call_id, name, msgspec.json.encode(args).decode()))
        elif target != "openai-realtime":
            texts, signature = body
            # The events come from google-live: its signatures replay only to google-live.
            out.append(("reasoning", "".join(texts), signature if target == "google-live" else None))
    return _merge_texts(out)


def _merge_texts(items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    merged: list[tuple[Any, ...]] = []
    for item in items:
        if item[0] == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + item[1])
        else:
            merged.append(item)
    return merged


def _got(resp: ms.Response) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for m in resp.messages:
        for p in m.content if isinstance(m.content, list) else []:
            if isinstance(p, TextPart):
                out.append(("text", p.text))
            elif isinstance(p, ToolCallPart):
                out.append(("call", p.id, p.name, p.arguments))
            elif isinstance(p, ReasoningPart):
                out.append(("reasoning", p.text or "".join(p.summary or []), p.signature))
    return _merge_texts(out)


ENCODERS = {
    "google-interactions": google_interactions.StreamEncoder,
    "google-live": google_live.StreamEncoder,
    "openai-realtime": openai_realtime.StreamEncoder,
}


@pytest.mark.parametrize("target", PROTOCOLS)
@SETTINGS
@given(parts=st.lists(PART, min_size=1, max_size=5))
def test_decode_of_encode_is_identity(target: str, parts: list[tuple[str, Any]]) -> None:
    encoder = ENCODERS[target]()
    wire = b"".join(encoder.encode(e) for e in _events(parts)) + encoder.finish()
    resp = ms.aggregate(wire, protocol=target)
    assert resp.status == "completed"
    assert _got(resp) == _expected(parts, target)
