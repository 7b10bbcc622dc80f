"""The stream encoder's output: SSE framing, sequence numbers and the list of output items.

:class:`Output` numbers every event from 0 (the SDK rejects a gap), writes ``event:`` / ``data:``
frames, and keeps the output items in order, each from ``output_item.added`` to
``output_item.done``; the terminal event's ``output`` is that list. A synthesized item id is the
item's output index (``msg_maas_0``), the same id the body encoder gives the same item.

It must not know canonical events or parts: the encoder and the part writers decide what to write.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final, cast

import msgspec

from .._template import HOLE, shared_template
from ._items_write import message_item

__all__ = ["NO_CONTENT", "REBUILT", "Item", "Output", "WholeItem", "appended", "members", "replaced"]

_json = msgspec.json.Encoder()


def _sse(kind: str, body: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + _json.encode(body) + b"\n\n"


PROGRESS: Final[dict[str, tuple[str, str]]] = {
    "web_search_call": ("response.web_search_call.in_progress", "response.web_search_call.completed"),
    "file_search_call": ("response.file_search_call.in_progress", "response.file_search_call.completed"),
    "code_interpreter_call": (
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.completed",
    ),
    "image_generation_call": (
        "response.image_generation_call.in_progress",
        "response.image_generation_call.completed",
    ),
    "mcp_call": ("response.mcp_call.in_progress", "response.mcp_call.completed"),
    "mcp_list_tools": ("response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed"),
}
"""The progress events a hosted tool's item gets when it opens and when it completes."""

NO_CONTENT: Final = cast("list[Any]", ())
"""An opened message item's content: one shared empty value (encoded ``[]``; never added to)."""

_PREFIX: Final = {"message": "msg", "function_call": "fc", "custom_tool_call": "fc", "reasoning": "rs"}


_IDS: Final[dict[tuple[str, int], str]] = {}
"""The ids given to items that have none, by prefix and output index: shared by every stream
(the first few indexes; a string of its own is 59 bytes a stream)."""


def _item_id(prefix: str, index: int) -> str:
    key = (prefix, index)
    found = _IDS.get(key)
    if found is None:
        found = f"{prefix}_maas_{index}"
        if index < 16:  # (bounded: four prefixes)
            _IDS[key] = found
    return found


REBUILT: Final = cast("dict[str, Any]", MappingProxyType({"type": "message"}))
"""The body of an open ``message`` item that has nothing but its id (and its in-progress status):
not kept (a dict is 184 bytes in every idle stream), rebuilt when read (:meth:`Output.output`)."""


def appended(items: Any, value: Any) -> Any:
    """``items`` with ``value`` at its end, to store in place of ``items`` (read with :func:`members`).

    The first is held bare, in no container (a 1-tuple is 48 bytes, a list 88: most streams
    have one output item of one content part), a list from the second on (then appended to in
    place). A value held is never a list nor a tuple (an item, a writer, a part's JSON).
    """
    if items is NO_CONTENT:
        return value
    if type(items) is list:
        items.append(value)
        return items
    return [items, value]


def members(items: Any) -> list[Any] | tuple[Any, ...]:
    """The values :func:`appended` stored, in order."""
    if items is NO_CONTENT or type(items) is list:
        return items
    return (items,)


def replaced(items: Any, index: int, value: Any) -> Any:
    """``items`` with its entry ``index`` replaced by ``value``, to store in place of ``items``."""
    if type(items) is list:
        items[index] = value
        return items
    assert index == 0, index
    return value


class Item:
    """One output item: its index, type and id, its body so far, and its content parts."""

    __slots__ = ("body", "content", "done", "id", "index", "message", "type")

    whole: bool = False
    """One canonical message is this whole item (a Responses source: :class:`WholeItem`)."""

    def __init__(self, index: int, type: str, id: str | None, message: int = -1) -> None:
        self.index = index
        """The output index (-1 until the item is opened)."""
        self.type = type
        self.id = id
        self.body: dict[str, Any] = {}
        self.content: Any = NO_CONTENT
        """A message item's content parts; an open part's place holds its writer (stored with
        :func:`appended`, read with :func:`members`)."""
        self.done = False
        self.message = message
        """The canonical message whose text this ``message`` item holds (-1: not told)."""


class WholeItem(Item):
    """An item that one canonical message of a Responses source is, whole."""

    __slots__ = ()

    whole = True


class Output:
    """Framing and the output item list of one encoded response."""

    __slots__ = ("items", "seq")

    def __init__(self) -> None:
        self.seq = 0
        self.items: Any = NO_CONTENT
        """The output items (stored with :func:`appended`, read with :func:`members`)."""

    def frame(self, kind: str, body: dict[str, Any]) -> bytes:
        """One SSE event of type ``kind`` (``body`` gets its ``type`` and ``sequence_number``)."""
        body["type"] = kind
        body["sequence_number"] = self.seq
        self.seq += 1
        return _sse(kind, body)

    @staticmethod
    def delta_frame(kind: str, body: dict[str, Any]) -> tuple[bytes, ...]:
        """The event :meth:`frame` writes, pre-encoded with the delta and the number left open.

        ``body`` holds ``HOLE[0]`` where the delta goes; :meth:`fill` writes the event of one
        delta. For the hot paths: a part streams many deltas of one shape.
        """
        body["type"] = kind
        body["sequence_number"] = HOLE[1]
        return shared_template(f"openai-responses sse {kind}", lambda value: _sse(kind, value), body, 2)

    def fill(self, frames: tuple[bytes, ...], delta: str) -> bytes:
        """The event of ``delta`` in a :meth:`delta_frame` (the same bytes :meth:`frame` writes)."""
        seq = self.seq
        self.seq = seq + 1
        return b"".join((frames[0], _json.encode(delta), frames[1], b"%d" % seq, frames[2]))

    def raw_frame(self, raw: dict[str, Any]) -> bytes:
        """A source event sent as it came, renumbered."""
        body = dict(raw)
        kind = str(body.get("type") or "unknown")
        body["sequence_number"] = self.seq
        self.seq += 1
        return _sse(kind, body)

    def open(self, item: Item, added: dict[str, Any]) -> bytes:
        """Give ``item`` the next output index and announce it (``added`` is its first body)."""
        item.index = len(members(self.items))
        self.items = appended(self.items, item)
        if item.id is None:
            item.id = _item_id(_PREFIX.get(item.type, "item"), item.index)
        body = dict(added)
        body["type"] = item.type
        body["id"] = item.id
        item.body = body
        frames = self.frame("response.output_item.added", {"output_index": item.index, "item": body})
        progress = PROGRESS.get(item.type)
        if progress is not None and item.whole:
            frames += self.frame(progress[0], {"output_index": item.index, "item_id": item.id})
        return frames

    def close(self, item: Item, body: dict[str, Any]) -> bytes:
        """End ``item`` with its final ``body``."""
        item.done = True
        item.body = body
        frames = b""
        progress = PROGRESS.get(item.type)
        if progress is not None and item.id is not None and body.get("status") == "completed":
            frames = self.frame(progress[1], {"output_index": item.index, "item_id": item.id})
        return frames + self.frame("response.output_item.done", {"output_index": item.index, "item": body})

    def output(self) -> list[dict[str, Any]]:
        """The output items so far (the terminal event's ``output``)."""
        return [
            message_item(item.id, "in_progress", NO_CONTENT) if item.body is REBUILT else item.body
            for item in members(self.items)
            if item.done or item.body
        ]
