"""Progress of a recording: events so far, bytes, elapsed time, time to first event.

:class:`RecordProgress` is fed the chunks a recording receives (``maas-stream record`` does it).
On a terminal it keeps one live line up to date on stderr (with ``rich`` when it is installed,
else a plain line rewritten after a carriage return); :meth:`RecordProgress.summary` is the one line said
at the end, terminal or not.

Events are counted by framing only (SSE events, or JSON lines for websocket protocols): it must
not contain protocol logic.
"""

from __future__ import annotations

import shutil
import time
from typing import IO, TYPE_CHECKING, Any, Literal

import anyio

from .._exceptions import MaasStreamError
from ..sse import Decoder

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["RecordProgress", "arun_with_progress", "format_bytes"]

_REDRAW = 0.1
"""Seconds between two redraws of the live line caused by chunks (a fast stream redraws no
more often than this)."""
_TICK = 0.25
"""Seconds between two redraws while no chunk arrives, so that the elapsed time keeps moving."""


def format_bytes(n: int) -> str:
    """``n`` bytes for a person: ``812 B``, ``12.3 KiB``, ``4.0 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


class RecordProgress:
    """Counts a recording as it arrives and shows it on a terminal.

    Usage::

        progress = RecordProgress(sys.stderr, framing="sse")  # the clock starts here
        for chunk in chunks:
            progress.feed(chunk)
        progress.close()
        print(progress.summary("recordings/openai-chat/case.sse"), file=sys.stderr)

    Args:
        out: Where the live line goes (stderr).
        framing: ``"sse"`` counts SSE events; ``"jsonl"`` counts lines (websocket messages).
        live: Draw the live line; by default when ``out`` is a terminal.
        rich: Draw it with ``rich``; by default when ``rich`` is installed. Without it, a plain
            line is rewritten after a carriage return.
        clock: Seconds, monotonic (for tests).

    Raises:
        ModuleNotFoundError: ``rich=True`` and ``rich`` is not installed.
    """

    def __init__(
        self,
        out: IO[str],
        *,
        framing: Literal["sse", "jsonl"] = "sse",
        live: bool | None = None,
        rich: bool | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._out = out
        self._clock = clock
        self._t0 = clock()
        self._sse = Decoder() if framing == "sse" else None
        self._counting = True
        self.events = 0
        """Complete events (SSE events, or JSON lines) received so far."""
        self.bytes = 0
        """Bytes received so far."""
        self.chunks = 0
        """Chunks received so far."""
        self.first_event: float | None = None
        """Seconds from the start to the end of the first complete event, once there is one."""
        self._end: float | None = None
        self._drawn_at: float | None = None
        self._width = 0
        self._live: Any = None
        if live is None:
            isatty = getattr(out, "isatty", None)
            live = bool(isatty is not None and isatty())
        self.live = live
        """Whether a live line is drawn."""
        if live and rich is not False:
            self._live = _rich_live(out)
            if self._live is None and rich:
                raise ModuleNotFoundError("rich is not installed: pip install 'maas-stream[inspect]'")

    @property
    def elapsed(self) -> float:
        """Seconds since the start (frozen by :meth:`close`)."""
        return (self._end if self._end is not None else self._clock()) - self._t0

    def feed(self, chunk: bytes) -> None:
        """Count one chunk as it arrived, and redraw the live line (at most every 0.1 s)."""
        if not chunk:
            return
        self.chunks += 1
        self.bytes += len(chunk)
        found = chunk.count(b"\n")
        if self._sse is not None:
            try:
                found = len(self._sse.feed_raw(chunk))
            except MaasStreamError:
                # Not SSE after all (an error body, an oversized event): the recording goes on,
                # only the count stops; the protocol check after the recording says what it was.
                self._sse = None
                self._counting = False
        if not self._counting:
            found = 0
        if found and self.first_event is None:
            self.first_event = self.elapsed
        self.events += found
        now = self._clock()
        if self._drawn_at is None or now - self._drawn_at >= _REDRAW:
            self.draw()

    def line(self) -> str:
        """The live line's text: events, bytes, elapsed time and time to first event."""
        first = (
            "waiting for the first event"
            if self.first_event is None
            else f"first after {self.first_event:.2f} s"
        )
        noun = "event" if self.events == 1 else "events"
        return f"recording: {self.events} {noun}, {format_bytes(self.bytes)}, {self.elapsed:.1f} s ({first})"

    def draw(self) -> None:
        """Redraw the live line now (nothing when it is not live or closed)."""
        if not self.live or self._end is not None:
            return
        self._drawn_at = self._clock()
        text = self.line()
        if self._live is not None:
            if not self._live.is_started:
                self._live.start()
            from rich.text import Text  # plain: no number highlighting

            self._live.update(Text(text), refresh=True)
            return
        # Never wider than the terminal: a wrapped line cannot be rewritten after a carriage return.
        text = text[: max(20, shutil.get_terminal_size().columns - 1)]
        pad = max(0, self._width - len(text))
        self._out.write(f"\r{text}{' ' * pad}")
        self._out.flush()
        self._width = len(text)

    async def atick(self) -> None:
        """Redraw the live line every 0.25 s until cancelled (run it beside the recording)."""
        while self.live and self._end is None:
            self.draw()
            await anyio.sleep(_TICK)

    def close(self) -> None:
        """Stop the clock and take the live line off the terminal (idempotent)."""
        if self._end is not None:
            return
        self._end = self._clock()
        if self._live is not None:
            if self._live.is_started:
                self._live.stop()
        elif self.live and self._width:
            self._out.write(f"\r{' ' * self._width}\r")
            self._out.flush()

    def summary(self, path: str) -> str:
        """The one line said at the end (stops the clock if :meth:`close` was not called)."""
        self.close()
        noun = "event" if self.events == 1 else "events"
        first = "" if self.first_event is None else f", first event after {self.first_event:.2f} s"
        chunks = "chunk" if self.chunks == 1 else "chunks"
        return (
            f"recorded {self.events} {noun}, {format_bytes(self.bytes)} in {self.chunks} {chunks} "
            f"to {path} in {self.elapsed:.2f} s{first}"
        )


async def arun_with_progress(run: Callable[[], Awaitable[None]], progress: RecordProgress | None) -> None:
    """Await ``run()`` with ``progress``'s live line redrawn beside it, taken off the terminal at the end.

    Raises:
        Exception: Whatever ``run()`` raised, as itself (not inside an ``ExceptionGroup``).
    """
    if progress is None:
        await run()
        return
    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(progress.atick)
            try:
                await run()
            except Exception as exc:  # raised below as itself, not in the task group's ExceptionGroup
                failure = exc
            tg.cancel_scope.cancel()
    finally:
        progress.close()
    if failure is not None:
        raise failure


def _rich_live(out: IO[str]) -> Any:
    try:
        from rich.console import Console
        from rich.live import Live
    except ImportError:
        return None
    # Started at the first draw, so that nothing is redirected before the recording begins.
    return Live("", console=Console(file=out), auto_refresh=False, transient=True)
