"""A realtime session served from an HTTP upstream: turn by turn, one streaming request at a time.

When a session protocol's route goes to an HTTP upstream (a Realtime client on Chat Completions,
say), the session translator (:class:`~maas_stream._session_bridge.SessionBridge`) turns the
client's messages into turn requests, and each turn's stream back into the client's events.
:class:`Turns` holds what only such a session needs: the requests waiting to be sent, the task
group of its relay (the client's side, the turns, the idle watch: anyio, any backend), and one
turn's exchange with the upstream (its errors become the translator's error events). A websocket
upstream's session (``_pump``) holds none of it.

The session itself (``_realtime._Session``) keeps the handshake, the end and the record; this
module asks it to accept, to deliver a translator's output, to read the client and to finish.
It must not contain protocol logic.
"""

from __future__ import annotations

import logging
from time import monotonic
from typing import TYPE_CHECKING, Any

import anyio

from .._exceptions import MaasStreamError
from .._model import StreamError
from ..io import ProviderHTTPError, StreamIOError
from ..io._exceptions import error_summary
from ..io._source import AsyncReader
from ._metrics import scrub

if TYPE_CHECKING:
    from ._realtime import _Session

__all__ = ["Turns"]

log = logging.getLogger("maas_stream")


class Turns:
    """One session's turns with an HTTP upstream (see the module docstring).

    Args:
        session: The session served.
        upstream: The route's HTTP upstream (``open(body, model=...)``, ``protocol``, ``timeouts``).
        model: The model the turns name (the route's rename, or the client's).
    """

    __slots__ = ("_relaying", "_requested", "_requests", "model", "session", "upstream")

    def __init__(self, session: _Session, upstream: Any, model: str | None) -> None:
        self.session = session
        self.upstream = upstream
        self.model = model
        self._requests: list[Any] = []
        """Turn requests waiting to be sent (one turn at a time)."""
        self._requested = anyio.Event()
        """Set when a turn request is waiting."""
        self._relaying: anyio.CancelScope | None = None
        """The relay's task group, cancelled by the first end."""

    def put(self, request: Any) -> None:
        """Queue a turn request the translator made (sent when the turns before it are over)."""
        self._requests.append(request)
        self._requested.set()

    def stop(self) -> None:
        """Stop the relay (the session has ended)."""
        if self._relaying is not None:
            self._relaying.cancel()

    async def serve(self, first: str | bytes | None) -> None:
        """Serve the session, one turn (one streaming request) at a time, until it ends."""
        session = self.session
        translator = session.translator
        await session._accept()
        await session._deliver(None, translator.opening())
        if first is not None:
            await session._deliver(None, translator.from_client(first))
        if session.end is None:
            async with anyio.create_task_group() as tg:
                self._relaying = tg.cancel_scope
                tg.start_soon(session._client_to_upstream, None)
                tg.start_soon(self._run)
                if session.limits.idle_timeout is not None:
                    tg.start_soon(self._watch_idle)
        await session._finish(None)

    async def _run(self) -> None:
        while True:
            await self._requested.wait()
            self._requested = anyio.Event()
            while self._requests:
                await self._turn(self._requests.pop(0))

    async def _turn(self, request: Any) -> None:
        """One turn: the request to the HTTP upstream, its stream fed to the translator."""
        session, upstream = self.session, self.upstream
        stats, secrets = session.app.stats, session._secrets
        for rec in request.dropped:
            stats.dropped[rec.kind] += rec.count
            log.warning(
                "bridge session %s -> %s: not sent: %s", session.exchange.client, upstream.protocol, rec
            )
        timeouts = getattr(upstream, "timeouts", None)
        error: StreamError | None = None
        try:
            async with upstream.open(request.body, model=self.model) as source:
                reader = AsyncReader(
                    source,
                    idle_timeout=getattr(timeouts, "idle", None),
                    total_timeout=getattr(timeouts, "total", None),
                )
                while (chunk := await reader.read()) is not None:
                    session._last = monotonic()
                    data = chunk.encode() if isinstance(chunk, str) else chunk
                    await session._deliver(None, session.translator.upstream_http(data))
        except ProviderHTTPError as exc:
            what = f"upstream {upstream.protocol} answered {exc.status}: {error_summary(exc.body)}"
            error = StreamError(type="upstream_error", message=scrub(what, secrets), code=str(exc.status))
        except (StreamIOError, MaasStreamError) as exc:
            what = f"upstream {upstream.protocol}: {exc}"
            error = StreamError(type="upstream_error", message=scrub(what, secrets))
        if error is not None:
            log.warning("bridge session: a turn failed: %s", error.message)
        await session._deliver(None, session.translator.upstream_http_end(error=error))

    async def _watch_idle(self) -> None:
        """The session's idle limit (a task: any anyio backend)."""
        idle_left = self.session._idle_left
        while True:  # one deadline, moved forward by every message (no scope per receive)
            left = idle_left()
            if left <= 0:
                return
            await anyio.sleep(left)
