"""HangUp: the client's hang-up seen from ``receive`` stepped by callbacks (no watcher task)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from maas_stream.bridge._asgi import HangUp

pytestmark = pytest.mark.anyio


class Inbox:
    """A ``receive`` (an asyncio one, as uvicorn's) fed by the test; counts the ``receive()`` calls still pending."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.arrived = anyio.Event()
        self.pending = 0

    def put(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.arrived.set()

    async def receive(self) -> dict[str, Any]:
        self.pending += 1
        try:
            while not self.messages:
                await self.arrived.wait()
                self.arrived = anyio.Event()
            return self.messages.pop(0)
        finally:
            self.pending -= 1


async def test_a_disconnect_cancels_the_task_after_other_messages() -> None:
    box = Inbox()
    hangup = HangUp.start(box.receive)
    assert hangup is not None
    box.put({"type": "http.request", "body": b"late", "more_body": False})
    await anyio.sleep(0.01)
    assert not hangup.fired  # another message is passed over
    box.put({"type": "http.disconnect"})
    with pytest.raises(asyncio.CancelledError):
        await anyio.sleep(5)
    assert hangup.task.uncancel() == 0
    assert hangup.fired
    assert box.pending == 0


async def test_close_stops_watching_and_closes_the_pending_receive() -> None:
    box = Inbox()
    hangup = HangUp.start(box.receive)
    assert hangup is not None
    assert box.pending == 1
    hangup.close()
    assert box.pending == 0
    box.put({"type": "http.disconnect"})
    await anyio.sleep(0.01)
    assert not hangup.fired


async def test_a_failing_receive_is_a_client_gone() -> None:
    async def broken() -> dict[str, Any]:
        raise RuntimeError("the server cannot tell")

    hangup = HangUp.start(broken)
    assert hangup is not None
    with pytest.raises(asyncio.CancelledError):
        await anyio.sleep(5)
    hangup.task.uncancel()
    assert hangup.fired
