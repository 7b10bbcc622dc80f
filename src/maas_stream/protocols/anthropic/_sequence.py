"""Anthropic output blocks in sequence: one block open at a time, the SSE frames that write them.

Anthropic blocks are strictly sequential (a block stops before the next starts), while a source
may interleave its parts (parallel Chat tool calls). :class:`Sequencer` keeps one block open:
a ``soft`` block (text, foreign thinking) is closed as soon as another part starts (more
content later opens a continuation block), a hard one (a tool call, Anthropic's own thinking)
is held open and a part that starts meanwhile waits, its deltas buffered, until it closes.

It owns block indices and frame bytes only: what a block holds is decided by the mapping
(``_blocks``) and the encoder (``_encode``). It must not read canonical parts or do IO.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final

import msgspec

__all__ = ["Block", "Sequencer", "frame"]

_json = msgspec.json.Encoder()

_DELTA_HEAD: Final = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_FAST: Final = {
    "text": b',"delta":{"type":"text_delta","text":',
    "args": b',"delta":{"type":"input_json_delta","partial_json":',
    "thinking": b',"delta":{"type":"thinking_delta","thinking":',
}
"""The hot deltas, written without building a dict."""
_TAIL: Final = b"}}\n\n"


def _delta(index: int, fast: bytes, payload: Any) -> bytes:
    """A hot delta of block ``index`` (``fast`` is its ``_FAST`` middle), written without a dict."""
    return b"".join((_DELTA_HEAD, b"%d" % index, fast, _json.encode(payload), _TAIL))


def frame(name: str, body: dict[str, Any]) -> bytes:
    """One SSE event."""
    return b"event: " + name.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"


class Block:
    """One output content block (or a part that waits to become one)."""

    __slots__ = ("index", "kind", "lazy", "pending", "raw", "signature", "soft", "start", "stopped")

    def __init__(self, kind: str, start: dict[str, Any], *, lazy: bool = False, soft: bool = False) -> None:
        self.kind = kind
        """``text``, ``thinking``, ``redacted``, ``tool`` or ``raw`` (a block written whole)."""
        self.start = start
        """The ``content_block_start`` block."""
        self.lazy = lazy
        """Open only when content arrives (foreign reasoning: an empty one is never written)."""
        self.soft = soft
        """May be closed early when another part starts; more content then opens a new block."""
        self.index = -1
        self.pending: list[tuple[str, Any]] = []
        self.signature: str | None = None
        """The thinking signature written so far."""
        self.stopped = False
        self.raw: Any = None
        """A raw block's value as started (a later final value is written as its delta)."""

    def again(self) -> Block:
        """A continuation block of a soft block that was closed early."""
        return Block(self.kind, self.start, lazy=self.lazy, soft=True)


DROPPED: Final = Block("drop", {})
"""Stands for a part that has no output block."""


class Sequencer:
    """Writes blocks one at a time, in order, holding back what cannot be written yet."""

    __slots__ = ("_active", "_next", "_queue", "last")

    def __init__(self) -> None:
        self._active: Block | None = None
        self._queue: deque[Block] = deque()
        self._next = 0
        self.last = -1
        """The index of the last block opened (``-1`` before the first)."""

    @property
    def current(self) -> int:
        """The index a delta with no block of its own goes to (the open one, else the last)."""
        block = self._active
        return block.index if block is not None and block.index >= 0 else max(self.last, 0)

    def add(self, block: Block) -> bytes:
        """A new part's block: opened now, or queued behind the open hard block."""
        out = b""
        active = self._active
        if active is not None and active.soft and not self._queue:
            out = self._render(active, ("stop", None))
        if self._active is None:
            self._active = block
            return out + (b"" if block.lazy else self._open(block))
        self._queue.append(block)
        return out

    def submit(self, block: Block, kind: str, payload: Any = None) -> bytes:
        """Write (or buffer, if the block waits) one operation: a delta or ``stop``.

        ``kind`` is ``text``, ``args``, ``thinking`` (the fast deltas), ``delta`` (any other
        delta object) or ``stop`` (``payload="cut"`` leaves the block without its stop).
        """
        if block is not self._active:
            block.pending.append((kind, payload))
            return b""
        fast = _FAST.get(kind)
        if fast is not None and block.index >= 0:
            return _delta(block.index, fast, payload)  # the hot path: a delta of the open block
        out = self._render(block, (kind, payload))
        if self._active is None:
            out += self._advance()
        return out

    def flush(self) -> bytes:
        """Write out every held block as it stands (end of response or error)."""
        out: list[bytes] = []
        while self._queue:
            self._active = None
            out.append(self._advance())
        return b"".join(out)

    def _open(self, block: Block) -> bytes:
        block.index = self._next
        self._next += 1
        self.last = block.index
        body = {"type": "content_block_start", "index": block.index, "content_block": block.start}
        return frame("content_block_start", body)

    def _render(self, block: Block, op: tuple[str, Any]) -> bytes:
        kind, payload = op
        if kind == "stop":
            self._active = None
            block.stopped = True
            if block.index < 0 or payload == "cut":
                return b""
            return frame("content_block_stop", {"type": "content_block_stop", "index": block.index})
        head = self._open(block) if block.index < 0 else b""
        fast = _FAST.get(kind)
        if fast is not None:
            return head + _delta(block.index, fast, payload)
        body = {"type": "content_block_delta", "index": block.index, "delta": payload}
        return head + frame("content_block_delta", body)

    def _advance(self) -> bytes:
        out: list[bytes] = []
        while self._active is None and self._queue:
            block = self._queue.popleft()
            self._active = block
            if not block.lazy:
                out.append(self._open(block))
            ops, block.pending = block.pending, []
            out.extend(self._render(block, op) for op in ops)
        return b"".join(out)
