"""Vertex streamed function-call arguments (``partialArgs``) → JSON text fragments.

Vertex with ``streamFunctionCallArguments`` sends a call's arguments as a run of
``{jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue}`` fragments
(PROTOCOLS.md §4.7). :class:`ArgsWriter` turns that run into JSON text *as it arrives*: each
fragment yields the text to append (opening the objects and arrays its path needs, closing the
ones it left), so the canonical ``arguments`` grow like any other provider's argument deltas.
It also keeps the arguments as a value; when the fragments do not arrive in document order
(a path revisits a container already left) the streamed text would be wrong, and
:meth:`ArgsWriter.final_text` gives the text of the value instead.

Memory follows the bytes received, never a number inside them: arrays are kept sparse, an index
may run at most :data:`MAX_GAP` past an array's entries, a path at most :data:`MAX_DEPTH` deep;
past those, and for paths that index an object or name a member of an array, it raises
:class:`~maas_stream.RemoteProtocolError`.

It must not know events or the aggregator.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET

from ..._exceptions import RemoteProtocolError

if TYPE_CHECKING:
    from ._wire import PartialArg

__all__ = ["MAX_DEPTH", "MAX_GAP", "ArgsWriter", "parse_path"]

_SEGMENT: Final = re.compile(
    r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)
_encode: Final = msgspec.json.encode

MAX_DEPTH: Final = 100
"""The deepest ``partialArgs`` path accepted (deeper JSON arguments are refused)."""
MAX_GAP: Final = 64
"""How far an array index may run ahead of the entries so far (the holes become ``null``)."""

Segment = str | int


def parse_path(path: str) -> tuple[Segment, ...]:
    """Parse a JSONPath of names and indexes (``$.a.b[0]``, ``$['a b']``) into segments.

    Raises:
        RemoteProtocolError: The path is not of that form.
    """
    if not path.startswith("$"):
        raise RemoteProtocolError(f"partialArgs jsonPath {path!r} does not start with '$'")
    out: list[Segment] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if m is None:
            raise RemoteProtocolError(f"partialArgs jsonPath {path!r} is not a plain name/index path")
        name, index, quoted1, quoted2 = m.groups()
        if index is not None:
            if len(index) > 12:
                raise RemoteProtocolError(f"partialArgs jsonPath index {index[:20]}... is absurd")
            out.append(int(index))
        else:
            out.append(name if name is not None else (quoted1 if quoted1 is not None else quoted2))
        pos = m.end()
        if len(out) > MAX_DEPTH:
            raise RemoteProtocolError(f"partialArgs jsonPath deeper than {MAX_DEPTH} levels")
    return tuple(out)


class ArgsWriter:
    """Incremental JSON writer for one streamed call's ``partialArgs``."""

    __slots__ = (
        "_closed",
        "_closers",
        "_counts",
        "_in_order",
        "_open_string",
        "_path",
        "_started",
        "chunks",
        "value",
    )

    def __init__(self) -> None:
        self.chunks: list[str] = []
        """Every text fragment written so far, in order."""
        self.value: dict[str, Any] = {}
        """The arguments as a value, built from the same fragments."""
        self._path: list[Segment] = []
        self._counts: list[int] = [0]
        self._closers: list[str] = []
        self._open_string: tuple[Segment, ...] | None = None
        self._started = False
        self._in_order = True
        self._closed: set[tuple[Segment, ...]] = set()

    def feed(self, arg: PartialArg) -> str:
        """Apply one fragment; return the JSON text it adds.

        Raises:
            RemoteProtocolError: The fragment's path is malformed, or it has no value.
        """
        segs = parse_path(arg.json_path)
        if not segs:
            raise RemoteProtocolError("partialArgs jsonPath '$' (a whole-value fragment) is not supported")
        out: list[str] = []
        if not self._started:
            self._started = True
            out.append("{")
        if arg.string_value is not UNSET:
            fragment = arg.string_value
            if self._open_string != segs:
                self._close_string(out)
                self._enter(segs, out)
                out.append('"')
                self._open_string = segs
                self._store(segs, fragment, append=False)
            else:
                self._store(segs, fragment, append=True)
            out.append(_encode(fragment)[1:-1].decode())
            if not arg.will_continue:
                self._close_string(out)
        else:
            self._close_string(out)
            value: Any
            if arg.number_value is not UNSET:
                value = arg.number_value
            elif arg.bool_value is not UNSET:
                value = arg.bool_value
            elif arg.null_value is not UNSET:
                value = None
            else:
                raise RemoteProtocolError(f"partialArgs fragment for {arg.json_path!r} carries no value")
            self._enter(segs, out)
            out.append(_encode(value).decode())
            self._store(segs, value, append=False)
        text = "".join(out)
        self.chunks.append(text)
        return text

    def finish(self) -> str:
        """Close everything still open; return the closing text."""
        out: list[str] = []
        if not self._started:
            self._started = True
            out.append("{")
        self._close_string(out)
        while self._path:
            self._pop(out)
        out.append("}")
        text = "".join(out)
        self.chunks.append(text)
        return text

    @property
    def text(self) -> str:
        """The text written so far."""
        return "".join(self.chunks)

    def final_text(self) -> str | None:
        """After :meth:`finish`: ``None`` when the streamed text is right, else the value's text."""
        if self._in_order:
            return None
        return _encode(_plain(self.value)).decode()

    # ------------------------------------------------------------------ internals

    def _close_string(self, out: list[str]) -> None:
        if self._open_string is not None:
            out.append('"')
            self._open_string = None

    def _pop(self, out: list[str]) -> None:
        self._closed.add(tuple(self._path))
        self._path.pop()
        self._counts.pop()
        out.append(self._closers.pop())

    def _enter(self, segs: tuple[Segment, ...], out: list[str]) -> None:
        """Move to the container of the leaf ``segs[-1]`` and write its key (and comma)."""
        path = self._path
        common = 0
        limit = min(len(path), len(segs) - 1)
        while common < limit and path[common] == segs[common]:
            common += 1
        while len(path) > common:
            self._pop(out)
        for depth in range(common, len(segs)):
            seg = segs[depth]
            self._member(seg, out)
            if depth < len(segs) - 1:
                nxt = segs[depth + 1]
                is_list = isinstance(nxt, int)
                out.append("[" if is_list else "{")
                self._closers.append("]" if is_list else "}")
                path.append(seg)
                if tuple(path) in self._closed:
                    self._in_order = False  # a container re-entered after it was closed
                self._counts.append(0)

    def _member(self, seg: Segment, out: list[str]) -> None:
        count = self._counts[-1]
        if count:
            out.append(",")
        if isinstance(seg, int):
            if seg != count:
                self._in_order = False  # an index skipped or revisited: the text is not the value
        else:
            out.append(_encode(seg).decode())
            out.append(":")
        self._counts[-1] = count + 1

    def _store(self, segs: tuple[Segment, ...], value: Any, *, append: bool) -> None:
        node: Any = self.value
        for depth, seg in enumerate(segs[:-1]):
            child = _get(node, seg)
            if child is None:
                child = _Array() if isinstance(segs[depth + 1], int) else {}
                _put(node, seg, child)
            elif not isinstance(child, dict):
                raise RemoteProtocolError(
                    "partialArgs jsonPath goes into a value that is not an object or array"
                )
            node = child
        leaf = segs[-1]
        current = _get(node, leaf)
        if append:
            value = (current if isinstance(current, str) else "") + value
        elif leaf in node:
            self._in_order = False  # a value written twice: the streamed text has a duplicate key
        _put(node, leaf, value)


class _Array(dict[int, Any]):
    """A JSON array built from indexed fragments, kept sparse: memory follows what arrived.

    An index may run ahead of the entries so far by at most :data:`MAX_GAP` (the holes become
    ``null``), so an absurd index is refused instead of costing memory in proportion to it.
    """

    __slots__ = ()

    def as_list(self) -> list[Any]:
        out: list[Any] = [None] * (max(self) + 1 if self else 0)
        for index, item in self.items():
            out[index] = item
        return out


def _plain(value: Any) -> Any:
    """The built value as plain JSON values (sparse arrays as lists)."""
    if isinstance(value, _Array):
        return [_plain(v) for v in value.as_list()]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _get(node: dict[Any, Any], seg: Segment) -> Any:
    if isinstance(node, _Array) != isinstance(seg, int):
        raise RemoteProtocolError("partialArgs jsonPath indexes an object, or names a member of an array")
    return node.get(seg)


def _put(node: dict[Any, Any], seg: Segment, value: Any) -> None:
    if isinstance(node, _Array) and isinstance(seg, int) and seg not in node and seg > len(node) + MAX_GAP:
        raise RemoteProtocolError(f"partialArgs jsonPath index {seg} runs far past the array's end")
    node[seg] = value
