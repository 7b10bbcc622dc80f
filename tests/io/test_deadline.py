"""``io._connect.deadline``: the time limit of ``aconnect`` and the bridge's body read.

On asyncio it is the standard library's ``asyncio.timeout`` (no anyio backend lookups per use),
on trio anyio's cancel scope; both behave alike: the block is cancelled and ``TimeoutError``
raised when the limit runs out, ``expired()`` tells that apart from the block's own
``TimeoutError``, and a cancellation from outside is not taken for the limit's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from maas_stream.io._connect import deadline

pytestmark = pytest.mark.anyio


async def _sleep_within(timer: Any, seconds: float) -> str:
    async with timer:
        await anyio.sleep(seconds)
    return "slept"


async def _raise_within(timer: Any) -> None:
    async with timer:
        raise TimeoutError("its own")


async def test_a_deadline_that_runs_out_cancels_the_block_and_raises_timeout() -> None:
    timer = deadline(0.05)
    with anyio.fail_after(5), pytest.raises(TimeoutError):
        await _sleep_within(timer, 10)
    assert timer.expired()


async def test_a_block_that_ends_in_time_is_not_expired() -> None:
    timer = deadline(5.0)
    assert await _sleep_within(timer, 0.01) == "slept"
    assert not timer.expired()


async def test_no_limit_never_expires() -> None:
    timer = deadline(None)
    assert await _sleep_within(timer, 0.01) == "slept"
    assert not timer.expired()


async def test_the_blocks_own_timeout_error_is_not_the_deadlines() -> None:
    timer = deadline(5.0)
    with pytest.raises(TimeoutError, match="its own"):
        await _raise_within(timer)
    assert not timer.expired()


async def test_an_outer_cancellation_is_not_taken_for_the_deadline() -> None:
    timer = deadline(10.0)
    with anyio.move_on_after(0.05) as outer:
        await _sleep_within(timer, 10)
    assert outer.cancelled_caught
    assert not timer.expired()


async def test_on_asyncio_it_is_the_standard_librarys_timeout(anyio_backend: str) -> None:
    timer = deadline(1.0)
    assert isinstance(timer, asyncio.Timeout) == (anyio_backend == "asyncio")
