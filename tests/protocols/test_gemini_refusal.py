"""A refusal reaches a Gemini client as text: stream, body and history, read by google-genai."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

import maas_stream as ms
from maas_stream.protocols import gemini
from maas_stream.protocols._names import GEMINI
from tests.conftest import corpus, params, recordings
from tests.protocols.gemini_oracle import sdk_chunks

if TYPE_CHECKING:
    from pathlib import Path

REFUSING = [
    p
    for name in ("openai-chat", "openai-responses")
    for p in [*recordings(name), *corpus(name)]
    if b"refusal" in p.read_bytes()
    and any(
        isinstance(part, ms.RefusalPart) and part.text
        for m in ms.aggregate(p.read_bytes()).messages
        if not isinstance(m.content, str)
        for part in m.content
    )
]


FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "refusal": "SAFETY", "content_filter": "SAFETY"}
"""Gemini's finish for the canonical one: SAFETY only when the canonical finish is a refusal
or a filter, never because a refusal part was written."""


def _refusal(resp: ms.Response) -> str:
    return "".join(
        part.text
        for m in resp.messages
        if not isinstance(m.content, str)
        for part in m.content
        if isinstance(part, ms.RefusalPart)
    )


def _sdk_text(data: bytes) -> tuple[str, list[str | None]]:
    """The text google-genai's ``.text`` reports over all chunks, and the finish reasons seen."""
    chunks, error = sdk_chunks(data)
    assert error is None
    finishes: list[str | None] = []
    text = ""
    for chunk in chunks:
        text += chunk.text or ""
        for cand in chunk.candidates or ():
            if cand.finish_reason is not None:
                finishes.append(cand.finish_reason.value)
    return text, finishes


def test_there_are_refusals_to_convert() -> None:
    assert len(REFUSING) >= 2


@pytest.mark.parametrize("path", params(REFUSING))
def test_refusal_is_written_as_text_in_the_stream(path: Path) -> None:
    data = path.read_bytes()
    resp = ms.aggregate(data)
    refusal = _refusal(resp)
    conv = ms.StreamConverter(GEMINI, protocol=resp.protocol, fail_closed=False)
    out = conv.feed(data) + conv.finish()
    text, finishes = _sdk_text(out)
    assert refusal in text
    assert [r.kind for r in conv.lossy].count("refusal") == 1
    assert any(
        r.kind == "refusal" and r.what == "refusal sent as text (Gemini has no refusal part)"
        for r in conv.lossy
    )
    # The finish is the canonical one: SAFETY only for a refusal or content-filter finish.
    assert finishes[-1:] == [FINISH[resp.finish_reason or "stop"]]


@pytest.mark.parametrize("path", params(REFUSING))
def test_refusal_is_written_as_text_in_the_body(path: Path) -> None:
    resp = ms.aggregate(path.read_bytes())
    drops = ms.DropLog(GEMINI, resp.protocol)
    body = gemini.encode_response(resp, drops=drops)
    text, finishes = _sdk_text(b"data: " + json.dumps(body).encode() + b"\r\n\r\n")
    assert _refusal(resp) in text
    assert finishes == [FINISH[resp.finish_reason or "stop"]]
    assert [r.kind for r in drops.records].count("refusal") == 1
    # Read back, the refusal is the model's text.
    back = gemini.decode_response(body)
    assert _refusal(resp) in "".join(
        p.text
        for m in back.messages
        if not isinstance(m.content, str)
        for p in m.content
        if isinstance(p, ms.TextPart)
    )


def test_refusal_in_history_is_a_model_text_part() -> None:
    drops = ms.DropLog(GEMINI)
    messages = [
        ms.Message(role="user", content="do it"),
        ms.Message(role="assistant", content=[ms.RefusalPart(text="I can't help with that.")]),
        ms.Message(role="user", content="why?"),
    ]
    body = gemini.from_canonical(messages, drops=drops)
    model = [c for c in body["contents"] if c.get("role") == "model"]
    assert model == [{"role": "model", "parts": [{"text": "I can't help with that."}]}]
    assert [r.kind for r in drops.records] == ["refusal"]
    assert gemini.validate(body) == []
