"""The relay's reader: :class:`RelayReader`, one loop over the source's iterator, each chunk written before the next read.

:func:`~._stream.aconvert_into` (the bridge's relay) reads a byte stream through it: the timing of
:class:`~._source.AsyncReader` is done inline in one ``async for`` over the source's iterator
(as :meth:`~._source.AsyncReader.drain` does for ``aaggregate``), not by a ``read()`` coroutine per
chunk, with the same checks, timeouts, errors and cancellation as a read. It must not contain
protocol logic: what is made of a chunk is the caller's ``feed``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import anyio.lowlevel

from ._checks import transport_error
from ._kinds import reframe
from ._source import AsyncReader

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._exceptions import StreamIOError

__all__ = ["RelayReader"]


class RelayReader(AsyncReader):
    """An :class:`~._source.AsyncReader` that can also :meth:`relay` a byte stream (same arguments)."""

    __slots__ = ()

    def relays(self) -> bool:
        """Whether :meth:`relay` can read this source: bytes, read on asyncio or without timeouts.

        (On trio with timeouts each read is timed by a cancel scope of its own: :meth:`read`.)
        """
        return self.kind == "bytes" and (not self._timed or self._loop is not None or self._on_asyncio())

    async def relay(
        self,
        feed: Callable[[bytes], bytes],
        write: Callable[[bytes], Awaitable[None]],
        sliced: Callable[[bytes], Awaitable[None]],
        *,
        size: int,
        burst: int,
    ) -> None:
        """Read the stream to its end: ``write`` what ``feed`` makes of each chunk before the next read.

        The errors are :meth:`read`'s, raised by the read that failed; what ``feed``, ``write`` or
        ``sliced`` raise goes on unchanged. Only the time spent waiting for the source counts
        towards the timeouts (a read begins when the last chunk's output was written).

        Args:
            feed: Makes the output of one chunk (``b""``: nothing to write).
            write: Awaited with each output.
            sliced: Awaited instead with a chunk longer than ``size`` bytes (fed in slices).
            size: See ``sliced``.
            burst: After this many chunks written without waiting for the source it yields
                once (fairness: a source and a client that never make it wait would hold the loop).

        Raises:
            ProviderHTTPError: As :meth:`read`; so do the others.
        """
        timed = self._timed
        task = None
        checkpoint = anyio.lowlevel.checkpoint
        reading = True  # (only a read's failure is the reader's to translate)
        turn = 0
        try:
            task = await self._open_loop()
            async for item in self._iter:
                reading = False
                self._since = None
                if type(item) is not bytes:
                    item = reframe(item)
                self.received += len(item)
                if len(item) > size:
                    await sliced(item)
                else:
                    out = feed(item)
                    if out:
                        await write(out)
                    out = b""  # neither is held while the next read waits
                    turn += 1
                    if turn >= burst:
                        turn = 0
                        await checkpoint()
                item = b""
                reading = True
                if timed:
                    self._begin_read()  # the next read begins (the timer does the rest)
            self._exhausted = True
        except BaseException as exc:
            if reading:
                self._exhausted = True  # an exception out of an async generator ends it
                error = self._read_error(exc, task)
                if error is not None:
                    raise error from (None if isinstance(exc, asyncio.CancelledError) else exc)
            raise
        finally:
            self._since = None

    def _read_error(self, exc: BaseException, task: asyncio.Task[Any] | None) -> StreamIOError | None:
        """The error a read's failure is raised as (``None``: the failure itself, as :meth:`read` does).

        A cancellation the timer sent is the timeout; a transport's error is translated.
        """
        if isinstance(exc, asyncio.CancelledError):
            return self._timed_out(task)
        return transport_error(exc, received=self.received)
