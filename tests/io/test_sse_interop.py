"""httpx-sse / httpx2 server-sent events as sources: EventSource objects and iterables of ServerSentEvent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import httpx2
import httpx_sse
import pytest

import maas_stream as ms
from maas_stream.io._kinds import reframe
from maas_stream.sse import Decoder

from ..conftest import recordings
from .loopback import send_recording, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

pytestmark = pytest.mark.anyio

# Named events (anthropic, responses) and the [DONE] sentinel (chat) all cross the re-framing.
CASES = [
    *(p for p in recordings("openai-chat") if p.stem == "readme_text_then_parallel_tools"),
    *(p for p in recordings("anthropic") if p.stem == "thinking_parallel_tools"),
    *recordings("openai-responses")[:1],
]
IDS = [f"{p.parent.name}/{p.stem}" for p in CASES]
DATA = {p: p.read_bytes() for p in CASES}


def expected(path: Path) -> ms.Response:
    return ms.aggregate(path.read_bytes(), protocol=path.parent.name)


def test_the_cases_exist() -> None:
    assert [p.parent.name for p in CASES] == ["openai-chat", "anthropic", "openai-responses"]


@pytest.mark.parametrize("path", CASES, ids=IDS)
async def test_httpx_sse_event_source_and_its_events_are_sources(path: Path) -> None:
    protocol = path.parent.name
    async with serve(send_recording(DATA[path])) as server, httpx.AsyncClient(trust_env=False) as c:
        async with httpx_sse.aconnect_sse(c, "POST", server.url, json={"stream": True}) as source:
            whole = await ms.aaggregate(source, protocol=protocol)
            assert source.response.is_closed
        async with httpx_sse.aconnect_sse(c, "POST", server.url, json={"stream": True}) as source:
            from_events = await ms.aaggregate(source.aiter_sse(), protocol=protocol)
        async with httpx_sse.aconnect_sse(c, "POST", server.url) as source:
            events = [ev async for ev in ms.astream(source.aiter_sse())]  # detected from the frames
    assert whole == expected(path)
    assert from_events == expected(path)
    agg = ms.StreamAggregator(protocol, emit=True)
    assert events == agg.feed(DATA[path]) + agg.finish_events()


@pytest.mark.parametrize("path", CASES, ids=IDS)
async def test_httpx2_event_source_and_its_events_are_sources(path: Path) -> None:
    protocol = path.parent.name
    async with serve(send_recording(DATA[path])) as server, httpx2.AsyncClient(trust_env=False) as c:
        async with c.sse(server.url, method="POST") as source:
            whole = await ms.aaggregate(source, protocol=protocol)
        async with c.sse(server.url, method="POST") as source:
            out = b"".join([f async for f in ms.aconvert(aiter(source), protocol=protocol, to=protocol)])
    assert whole == expected(path)
    assert ms.aggregate(out, protocol=protocol) == expected(path)


def test_sync_event_source_events_are_a_source() -> None:
    path = CASES[1]
    data = path.read_bytes()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    with httpx.Client(transport=httpx.MockTransport(handler)) as c:
        with httpx_sse.connect_sse(c, "POST", "http://test/v1/messages") as source:
            events = list(ms.stream(source.iter_sse(), protocol="anthropic"))
    agg = ms.StreamAggregator("anthropic", emit=True)
    assert events == agg.feed(data) + agg.finish_events()


def test_reframe_keeps_event_name_id_retry_and_multiline_data() -> None:
    for cls in (httpx_sse.ServerSentEvent, httpx2.ServerSentEvent):
        ev = cls(event="content_block_delta", data='{"a":\n 1}', id="7", retry=3000)
        frame = reframe(ev)
        assert frame == b'event: content_block_delta\nid: 7\nretry: 3000\ndata: {"a":\ndata:  1}\n\n'
        decoded = Decoder().feed(frame)
        assert [(e.event, e.data, e.id, e.retry) for e in decoded] == [
            ("content_block_delta", '{"a":\n 1}', "7", 3000)
        ]
        # The default event type is left out; the decoder reads it back as "message".
        assert reframe(cls(data="[DONE]")) == b"data: [DONE]\n\n"
        # An event without data is skipped by the decoder, as on the raw stream.
        assert Decoder().feed(reframe(cls(event="ping"))) == []


class _Chunk:  # the shape of an SDK's parsed chunk (no event / data)
    choices: tuple[Any, ...] = ()


async def _yielding(*items: object) -> AsyncIterator[object]:
    for item in items:
        yield item


@pytest.mark.parametrize(
    ("item", "hint"),
    [
        pytest.param("data: {}\n\n", r"yielded str: .*aiter_bytes\(\), not aiter_text\(\)", id="str"),
        pytest.param(_Chunk(), r"yielded _Chunk: .*with_streaming_response", id="sdk-chunk"),
    ],
)
async def test_an_iterable_of_something_else_is_a_clear_type_error(item: object, hint: str) -> None:
    with pytest.raises(TypeError, match=hint) as info:
        await ms.aaggregate(_yielding(item), protocol="openai-chat")
    assert "expected bytes chunks or server-sent events" in str(info.value)

    def sync() -> Iterator[object]:
        yield item

    with pytest.raises(TypeError, match=hint):
        list(ms.stream(sync(), protocol="openai-chat"))
