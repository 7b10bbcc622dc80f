"""The relay's reader (:class:`RelayReader`): one loop over the source, each chunk written before the next.

:func:`~._stream.aconvert_into` (the bridge's relay) reads a byte stream through it: the timing of
:class:`~._source.AsyncReader` is done inline in one ``async for`` over the source's iterator
(as :meth:`~._source.AsyncReader.drain` does for ``aaggregate``), not by a ``read()`` coroutine per
chunk, with the same checks, timeouts, errors and cancellation as a read.

A source that hands its chunks over as they arrive (``maas_push``: the bridge's upstream
transport, ``_kinds.chunk_pusher``) has them fed and written in a callback of its own while the
loop waits (:class:`_Push`), when the caller can write without waiting (``write_now``): what
the loop would do with the chunk, without waking its task; from the first chunk after the
loop wrote its first output (the stream's start goes with it, a write that may wait). What
cannot be done there (a large chunk, output that must wait, an error) is the loop's when the
source yields the chunk.

It must not contain protocol logic: what is made of a chunk is the caller's ``feed``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import anyio.lowlevel

from ._checks import transport_error
from ._kinds import chunk_pusher, reframe
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
        write_now: Callable[[bytes], bool] | None = None,
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
            write_now: Writes an output at once and returns ``True``, or returns ``False``
                having written nothing (then ``write`` is awaited with it). With it, a source
                that hands its chunks over (the module's) has them fed and written as they come,
                once the loop has written the first output.

        Raises:
            ProviderHTTPError: As :meth:`read`; so do the others.
        """
        timed = self._timed
        task = None
        checkpoint = anyio.lowlevel.checkpoint
        reading = True  # (only a read's failure is the reader's to translate)
        turn = 0
        push: _Push | None = None
        pusher = chunk_pusher(self.source) if write_now is not None and self._response_iter else None
        try:
            task = await self._open_loop()
            async for item in self._iter:
                reading = False
                self._since = None
                left = None if push is None else push.left
                if left is not None:
                    # Fed in the source's callback already (counted there): what is left of it.
                    push.left = None  # type: ignore[union-attr]
                    if not isinstance(left, bytes):
                        raise left
                    await write(left)
                    left = None
                else:
                    if type(item) is not bytes:
                        item = reframe(item)
                    self.received += len(item)
                    if len(item) > size:
                        await sliced(item)
                    else:
                        out = feed(item)
                        if out:
                            await write(out)
                            if pusher is not None and push is None:
                                # The first output is written (the answer's start with it): the
                                # chunks after it are handed over.
                                assert write_now is not None
                                push = _Push(self, feed, write_now, size)
                                pusher(push.take)
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
            if pusher is not None:
                pusher(None)  # (no cycle left between the source and this reader)

    def _read_error(self, exc: BaseException, task: asyncio.Task[Any] | None) -> StreamIOError | None:
        """The error a read's failure is raised as (``None``: the failure itself, as :meth:`read` does).

        A cancellation the timer sent is the timeout; a transport's error is translated.
        """
        if isinstance(exc, asyncio.CancelledError):
            return self._timed_out(task)
        return transport_error(exc, received=self.received)


class _Push:
    """A relay's sink for a source that hands its chunks over (``maas_push``; the module's).

    :meth:`take` does what the relay's loop does with a chunk (count it, feed it, write its
    output, begin the next read), in the source's callback; what it cannot finish there is
    left (:attr:`left`) for the loop, which gets the chunk from the source next. (A callback
    is no place for an exception: none leaves it.)
    """

    __slots__ = ("_feed", "_reader", "_size", "_write_now", "left")

    def __init__(
        self,
        reader: RelayReader,
        feed: Callable[[bytes], bytes],
        write_now: Callable[[bytes], bool],
        size: int,
    ) -> None:
        self._reader = reader
        self._feed = feed
        self._write_now = write_now
        self._size = size
        self.left: bytes | Exception | None = None
        """What is left of a chunk taken in part: its output (to write) or an error (to raise)."""

    def take(self, chunk: bytes) -> bool:
        """Feed ``chunk`` and write its output at once; ``False``: the loop gets it (see :attr:`left`).

        A chunk larger than the relay's slice is not fed here (``False``, nothing left). It
        never raises: an error is left for the loop to raise.
        """
        if len(chunk) > self._size or self.left is not None:
            return False
        reader = self._reader
        reader._since = None
        reader.received += len(chunk)
        try:
            out = self._feed(chunk)
            if out and not self._write_now(out):
                self.left = out
                return False
            if reader._timed:
                reader._begin_read()  # the next read begins (the timer does the rest)
        except Exception as exc:
            self.left = exc
            return False
        return True
