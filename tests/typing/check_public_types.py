"""Static checks of the public API's types: ``mypy --strict`` (run by CI over ``tests/``) fails
if any of these ``assert_type`` lines stops holding. Nothing here runs under pytest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_type

import maas_stream as ms
from maas_stream import events

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def check_sync_api(data: bytes, chunks: list[bytes], body: dict[str, Any]) -> None:
    response = ms.aggregate(data)
    assert_type(response, ms.Response)
    assert_type(ms.aggregate(chunks, protocol="openai-chat"), ms.Response)
    assert_type(response.status, ms.ResponseStatus)
    assert_type(response.finish_reason, ms.FinishReason | None)
    assert_type(response.messages, list[ms.Message])
    assert_type(response.usage, ms.Usage | None)
    assert_type(ms.convert(data, to="anthropic"), bytes)

    agg = ms.StreamAggregator("openai-chat", emit=True)
    assert_type(agg.feed(data), list[events.Event])
    assert_type(agg.snapshot(), ms.Response)
    assert_type(agg.finish(), ms.Response)

    conv = ms.StreamConverter("gemini", protocol="openai-chat")
    assert_type(conv.feed(data), bytes)
    assert_type(conv.lossy, list[ms.Dropped])

    lossy: list[ms.Dropped] = []
    assert_type(ms.encode_response(response, "anthropic", lossy=lossy), dict[str, Any])
    assert_type(ms.convert_history(body, to="gemini", protocol="openai-chat", lossy=lossy), dict[str, Any])

    assert_type(ms.to_canonical(body, "anthropic"), list[ms.Message])
    assert_type(ms.from_canonical([], "gemini"), dict[str, Any])
    assert_type(ms.validate(body, "openai-chat"), list[str])


def check_drops(conv: ms.StreamConverter) -> None:
    log = ms.DropLog("anthropic", "openai-chat")
    kind: ms.DropKind = "reasoning"
    log.add(kind, "reasoning (the target has no reasoning)", where="messages[0]")
    log.add("server_call", "server tool call 'web_search'", count=2)
    assert_type(log.records, list[ms.Dropped])
    assert_type(log.by_kind(), dict[str, int])
    assert_type(log.source, str | None)
    for record in conv.lossy:
        assert_type(record, ms.Dropped)
        assert_type(record.kind, ms.DropKind)
        assert_type(record.what, str)
        assert_type(record.target, str)
        assert_type(record.source, str | None)
        assert_type(record.count, int)
        assert_type(record.where, tuple[str, ...])
    log.extend(conv.lossy)


def check_parts(message: ms.Message) -> None:
    content = message.content
    if isinstance(content, str):
        assert_type(content, str)
        return
    for part in content:
        if isinstance(part, ms.ToolCallPart):
            assert_type(part.arguments, str)
            assert_type(part.kind, ms.ToolCallKind)
        elif isinstance(part, ms.ReasoningPart):
            assert_type(part.signature, str | None)


def check_errors(exc: ms.RemoteProtocolError) -> None:
    assert_type(exc.frame, int | None)
    assert_type(exc.partial, ms.Response | None)


async def check_async_api(source: AsyncIterator[bytes]) -> None:
    assert_type(await ms.aaggregate(source, protocol="anthropic"), ms.Response)
    async for event in ms.astream(source, protocol="anthropic"):
        assert_type(event, events.Event)
    async for frame in ms.aconvert(source, protocol="anthropic", to="openai-chat"):
        assert_type(frame, bytes)
