"""The timed readers' clock on asyncio: the loop's own time, read without a Python call when it can be."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest

from maas_stream.io._source import _asyncio_clock

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


def test_asyncio_own_loop_time_is_read_as_time_monotonic(loop: asyncio.AbstractEventLoop) -> None:
    assert _asyncio_clock(loop) is time.monotonic


def test_a_loop_time_patched_on_the_instance_is_kept(loop: asyncio.AbstractEventLoop) -> None:
    def fake() -> float:
        return 42.0

    loop.time = fake  # type: ignore[method-assign]
    assert _asyncio_clock(loop)() == 42.0  # the timer (call_at) reads this clock too


def test_a_loop_class_with_its_own_time_is_kept() -> None:
    class Shifted(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return time.monotonic() + 1000.0

    loop = Shifted()
    try:
        assert _asyncio_clock(loop)() > time.monotonic() + 900.0
    finally:
        loop.close()
