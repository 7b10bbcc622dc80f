"""The Responses encoder's text part templates: made once per (kind, item id, output index,
content index), shared by every stream, bounded, and writing what a fresh one writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import maas_stream as ms
from maas_stream.protocols._template import SHARED_MAX
from maas_stream.protocols.openai_responses import _text_writer

if TYPE_CHECKING:
    import pytest


def _chat(texts: list[str]) -> bytes:
    chunks = [
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    ]
    for text in texts:
        chunks.append(
            b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
            b'"delta":{"content":"' + text.encode() + b'"},"finish_reason":null}]}\n\n'
        )
    chunks.append(
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    return b"".join(chunks)


def test_a_text_part_writes_the_same_bytes_with_its_templates_made_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _chat(["Hel", "lo", " there"])
    shared = ms.convert(data, to="openai-responses", protocol="openai-chat")
    assert b"response.content_part.added" in shared
    assert shared.count(b"event: response.output_text.delta\n") == 3
    monkeypatch.setattr(_text_writer, "_PART_FRAMES", {})
    assert ms.convert(data, to="openai-responses", protocol="openai-chat") == shared
    assert list(_text_writer._PART_FRAMES) == [("text", "msg_maas_0", 0, 0)]


def test_the_text_part_templates_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _chat(["a", "b"])
    expected = ms.convert(data, to="openai-responses", protocol="openai-chat")
    full = {
        ("text", f"id_{n}", 0, 0): _text_writer._PART_FRAMES.get(("text", "msg_maas_0", 0, 0))
        for n in range(SHARED_MAX)
    }
    monkeypatch.setattr(_text_writer, "_PART_FRAMES", full)
    assert ms.convert(data, to="openai-responses", protocol="openai-chat") == expected
    assert len(_text_writer._PART_FRAMES) == 1  # emptied when full, then the new part's
