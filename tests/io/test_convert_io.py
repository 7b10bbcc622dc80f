"""The async and sync converters are the sans-IO StreamConverter behind a reader: the same
fail-closed rule and the same lossy reporting apply to them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

import maas_stream as ms
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

SIGNED_UNKNOWN = RECORDINGS / "anthropic" / "unknown_stateful_block.sse"
THINKING = RECORDINGS / "anthropic" / "thinking_parallel_tools.sse"


async def chunks(data: bytes, size: int = 97) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def test_aconvert_fails_closed_like_the_sans_io_converter() -> None:
    data = SIGNED_UNKNOWN.read_bytes()
    with pytest.raises(ms.ConversionError) as sync_info:
        ms.convert(data, to="openai-chat")
    with pytest.raises(ms.ConversionError) as async_info:
        async for _ in ms.aconvert(chunks(data), to="openai-chat"):
            pass
    assert async_info.value.event_type == sync_info.value.event_type


async def test_aconvert_reports_and_logs_what_it_drops(caplog: pytest.LogCaptureFixture) -> None:
    data = THINKING.read_bytes()
    lossy: list[ms.Dropped] = []
    with caplog.at_level(logging.WARNING, logger="maas_stream"):
        out = b"".join([b async for b in ms.aconvert(chunks(data), to="openai-chat", lossy=lossy)])
    assert out == ms.convert(data, to="openai-chat")
    assert any("reasoning" in line for line in map(str, lossy))
    assert "dropped" in caplog.text


def test_iter_convert_fails_closed_too() -> None:
    data = SIGNED_UNKNOWN.read_bytes()
    with pytest.raises(ms.ConversionError):
        for _ in ms.io.iter_convert([data[:200], data[200:]], to="gemini"):
            pass
