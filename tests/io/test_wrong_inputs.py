"""Wrong input types are a TypeError that names what is accepted and what to do instead."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

import maas_stream as ms

from ..conftest import recordings

TOOLS = next(p for p in recordings("openai-chat") if p.stem == "readme_text_then_parallel_tools")
ACCEPTED = "expected bytes, or an iterable of bytes chunks"


class SdkStream:  # the shape of openai.Stream: iterable of parsed chunks, its response on .response
    def __init__(self, response: Any) -> None:
        self.response = response

    def __iter__(self) -> Any:
        return iter([object()])


class Chunk:
    pass


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(str(TOOLS), r"a str object: .*ms\.io\.replay\(path\)", id="path-string"),
        pytest.param(
            httpx2.Response(200, content=b"data: [DONE]\n\n"),
            r"a Response object: .*use ms\.stream\(\.\.\.\) or await ms\.aaggregate",
            id="sync-response",
        ),
        pytest.param(
            SdkStream(httpx2.Response(200, content=b"")),
            r"a SdkStream object: .*SDK streaming response",
            id="sdk-stream",
        ),
        pytest.param(3, r"a int object: expected bytes", id="int"),
        pytest.param([b"data: [DONE]\n\n", "x"], r"yielded a str object: .*iter_text", id="str-chunk"),
        pytest.param([Chunk()], r"yielded a Chunk object: .*raw streaming response", id="parsed-chunk"),
    ],
)
def test_aggregate_refuses_with_what_it_accepts(data: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message) as info:
        ms.aggregate(data, protocol="openai-chat")
    assert ACCEPTED in str(info.value)


def test_aggregate_still_takes_bytes_like_chunks() -> None:
    data = TOOLS.read_bytes()
    expected = ms.aggregate(data)
    chunks: list[Any] = [bytearray(data[:10]), memoryview(data[10:])]  # bytes-like works too
    assert ms.aggregate(chunks) == expected
    assert ms.aggregate(ms.io.replay(TOOLS)) == expected


@pytest.mark.anyio
async def test_astream_names_a_path_string_and_the_sync_twin() -> None:
    with pytest.raises(TypeError, match=r"got a path: read a recording with ms\.io\.areplay\(path\)"):
        await ms.aaggregate(str(TOOLS), protocol="openai-chat")
    with pytest.raises(TypeError, match=r"other kind of iterable: use ms\.stream"):
        await ms.aaggregate([TOOLS.read_bytes()], protocol="openai-chat")
    with pytest.raises(TypeError, match=r"other kind of iterable: use ms\.astream"):
        list(ms.stream(ms.io.areplay(TOOLS), protocol="openai-chat"))
