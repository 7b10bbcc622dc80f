"""Background responses and stored streams: runs in the lifespan task group, replay, resumption, cancel.

:class:`Background` is the part of :class:`~maas_stream.bridge._stateful.Stateful` that keeps a
response running after its request is answered (``background: true``):

* :meth:`Background.launch` writes the record ``queued`` and answers at once (the queued
  response, or the stored events as they are written when the request streams); the upstream
  exchange runs in a task of the app's lifespan (:meth:`Background.running`), or in the request
  itself when there is no lifespan.
* The run marks the record ``in_progress``, appends every encoded event to the store, and ends
  it in a terminal state whatever happens: its answer's status, ``cancelled``, or ``failed``
  with a ``response.failed`` event appended (a bridge bug is logged, never lost in the task
  group).
* ``POST .../cancel`` (:meth:`Background._cancel`) asks the store, so that the process running
  it stops at its next event, and waits (bounded) for the terminal state.
* :meth:`Background._replay` streams a record's stored events after ``N`` and tails it until it
  ends (``GET ...?stream=true&starting_after=N``, any process sharing the store).

It must not read a request's stateful fields, expand a history or decide who may see a record
(``Stateful`` does), nor convert streams (the ``run`` it is given does).
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from .._bodies import encode_response
from .._model import Response, StreamError
from ._asgi import send_json, watch_disconnect
from ._request import Rejected
from ._store import TERMINAL, Store, StoredResponse, StoreFullError
from ._stored_bodies import response_body

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping

    from .._registry import ProtocolSpec
    from ._stateful import Turn

    Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
    Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

__all__ = ["Background", "sse_events"]

log = logging.getLogger("maas_stream")

_SSE: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def sse_events(frames: list[bytes]) -> list[bytes]:
    """SSE events one by one (the encoder's frames may hold several)."""
    data = b"".join(frames)
    return [e + b"\n\n" for e in data.split(b"\n\n") if e.strip()]


class Background:
    """Background runs and stored-event replay on a store (see the module doc).

    A base of :class:`~maas_stream.bridge._stateful.Stateful`, which sets the attributes.
    """

    store: Store
    """Where responses are kept."""
    spec: ProtocolSpec
    """The Responses spec (background responses are written in its protocol)."""
    _tasks: anyio.abc.TaskGroup | None
    _running: dict[str, anyio.CancelScope]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The task group background responses run in (the app's lifespan holds it)."""
        async with anyio.create_task_group() as tg:
            self._tasks = tg
            try:
                yield
            finally:
                self._tasks = None
                tg.cancel_scope.cancel()  # each task records its response as failed

    async def launch(
        self, turn: Turn, run: Callable[[Send], Awaitable[Response | None]], receive: Receive, send: Send
    ) -> None:
        """Start a background response and answer the request (queued, or its stream)."""
        record = turn.record("queued", self.store.expiry())
        try:
            await self.store.put(record)
        except StoreFullError as exc:
            raise Rejected(413, str(exc)) from None
        if self._tasks is not None:
            self._tasks.start_soon(self._background, turn, record, run)
        if turn.stream:
            if self._tasks is None:  # no lifespan: the request runs it, and streams it
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._background, turn, record, run)
                    await self._replay(record.id, record.owner, -1, receive, send)
                return
            await self._replay(record.id, record.owner, -1, receive, send)
            return
        await send_json(send, 200, response_body(record, (), self.spec.name))
        if self._tasks is None:
            # No lifespan task group: the response is run after the answer, in this request.
            await self._background(turn, record, run)

    async def _background(
        self, turn: Turn, record: StoredResponse, run: Callable[[Send], Awaitable[Response | None]]
    ) -> None:
        # Whatever happens stays in this task: the lifespan's task group must outlive it.
        try:
            await self._run_background(turn, record, run)
        except Exception:
            log.exception("bridge: background response %s could not be recorded", turn.id)

    async def _run_background(
        self, turn: Turn, record: StoredResponse, run: Callable[[Send], Awaitable[Response | None]]
    ) -> None:
        frames: list[bytes] = []
        record.status = "in_progress"
        await self.store.put(record)
        scope = anyio.CancelScope()
        self._running[turn.id] = scope

        async def write(message: MutableMapping[str, Any]) -> None:
            if message["type"] != "http.response.body" or not message.get("body"):
                return
            frames.append(message["body"])
            events = sse_events(frames)
            frames.clear()
            if events and await self.store.append(turn.id, events):
                scope.cancel()  # a cancel asked in another process

        response: Response | None = None
        error: str | None = None
        try:
            with scope:
                response = await run(write)
        except Rejected as exc:
            error = exc.message
        except Exception as exc:  # a bug: the record says failed, the log says where
            log.exception("bridge: background response %s failed", turn.id)
            error = f"internal error in the bridge ({type(exc).__name__})"
        finally:
            self._running.pop(turn.id, None)
            with anyio.CancelScope(shield=True):
                await self._finish(turn, record, response, error, scope.cancel_called)

    async def _finish(
        self,
        turn: Turn,
        record: StoredResponse,
        response: Response | None,
        error: str | None,
        cancelled: bool,
    ) -> None:
        current = await self.store.get(turn.id, turn.owner)
        if current is None:
            return  # deleted meanwhile
        if response is not None:
            current.upstream_id = response.id
            current.response = msgspec.structs.replace(response, id=turn.id)
            current.status = response.status if response.status != "in_progress" else "failed"
        if cancelled:
            current.status = "cancelled"
        elif error is not None or current.status not in TERMINAL:
            failed = Response(
                protocol=self.spec.name,
                id=turn.id,
                model=record.request.envelope.model,
                status="failed",
                messages=current.response.messages if current.response is not None else [],
                error=StreamError(type="server_error", message=error or "the bridge stopped the response"),
            )
            current.response, current.status = failed, "failed"
            body = encode_response(failed, self.spec.name)
            seq = len(await self.store.events(turn.id))
            event = {"type": "response.failed", "sequence_number": seq, "response": body}
            await self.store.append(
                turn.id, [b"event: response.failed\ndata: " + json.dumps(event).encode() + b"\n\n"]
            )
        try:
            await self.store.put(current)
        except StoreFullError as exc:
            log.warning("bridge: background response %s: final state not stored: %s", turn.id, exc)

    async def _replay(self, rid: str, owner: str, after: int, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": _SSE})
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
            async for _, data in self.store.tail(rid, owner, after):
                await send({"type": "http.response.body", "body": data, "more_body": True})
            tg.cancel_scope.cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _cancel(self, record: StoredResponse) -> dict[str, Any]:
        if not record.background:
            raise Rejected(400, "only a background response can be cancelled")
        if record.status not in TERMINAL:
            await self.store.request_cancel(record.id)
            scope = self._running.get(record.id)
            if scope is not None:
                scope.cancel()
            with anyio.move_on_after(10):
                while record.status not in TERMINAL:
                    await self.store.wait(record.id, 1 << 62, self.store.poll)
                    found = await self.store.get(record.id, record.owner)
                    if found is None:
                        break
                    record = found
        return response_body(record, (), self.spec.name)
