"""Small per-stream holders: the containers a stream's state uses, sized for the common case.

Thousands of streams may be idle at once, and most hold one message of one part: so the state a
stream rarely needs starts as one shared read-only empty map (:data:`EMPTY`, written through
:func:`writable`), a map that mostly holds one entry holds it inline (:class:`KeyMap`), a holder of
keyed items in order keeps a map by key only from its second item (:func:`find_keyed`,
:func:`add_keyed`), and a list is made with its first item (:data:`NO_ITEMS` until then). This is
these rules' one home; measured in ``benchmarks/bench_memory.py``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from collections.abc import Hashable

    from .events import Key

__all__ = ["EMPTY", "NO_ITEMS", "KeyMap", "add_keyed", "find_keyed", "writable"]

V = TypeVar("V")

_K = TypeVar("_K")
_V = TypeVar("_V")

EMPTY: Final = cast("dict[Any, Any]", MappingProxyType({}))
"""The state a stream rarely needs (tool calls, held annotations, explicit choices...) before its
first entry: one shared, read-only empty mapping instead of an empty dict per stream (64 bytes
each, thousands of idle streams). Reading it (``in``, ``get``, iterating) works; a write fails at
once, so each write goes through :func:`writable`."""


def writable(state: dict[_K, _V]) -> dict[_K, _V]:
    """``state`` to write to: a dict of its own in place of the shared :data:`EMPTY`."""
    return {} if state is EMPTY else state


_NO_KEY: Final = object()
"""The key of an empty :class:`KeyMap` (equal to no key)."""


class KeyMap(Generic[V]):
    """A map from stream keys to states with the one-entry case held inline.

    Most streams have one message of one part, and a one-entry ``dict`` costs 224 bytes (its
    table has room for eight) where this costs 56, in every idle stream; a ``dict`` is made only
    for a second key. It does what its users ask of a map: :meth:`get`, item setting and
    :meth:`values`.
    """

    __slots__ = ("_key", "_more", "_value")

    def __init__(self) -> None:
        self._key: Any = _NO_KEY
        self._value: V | None = None
        self._more: dict[Hashable, V] | None = None

    def get(self, key: Hashable) -> V | None:
        """The value of ``key``, or ``None``."""
        more = self._more
        if more is not None:
            return more.get(key)
        return self._value if key == self._key else None

    def keys(self) -> list[Hashable]:
        """The keys, in the order they came."""
        if self._more is not None:
            return list(self._more)
        return [] if self._key is _NO_KEY else [self._key]

    def values(self) -> list[V]:
        """The values, in the order their keys came."""
        if self._more is not None:
            return list(self._more.values())
        return [] if self._key is _NO_KEY else [cast("V", self._value)]

    def __setitem__(self, key: Hashable, value: V) -> None:
        more = self._more
        if more is not None:
            more[key] = value
        elif self._key is _NO_KEY or key == self._key:
            self._key, self._value = key, value
        else:
            self._more = {self._key: cast("V", self._value), key: value}
            self._key, self._value = _NO_KEY, None


NO_ITEMS: Final = cast("list[Any]", ())
"""The items of a holder before its first (parts, messages, responses): one shared empty sequence,
never written (a tuple: a write fails at once); the first item makes the list, as ``[item]``
(64 bytes, where an empty list appended to holds room for four: 88)."""


class _Keyed(Protocol):
    key: Key


_I = TypeVar("_I", bound=_Keyed)


def find_keyed(items: list[_I], by_key: dict[Key, _I] | None, key: Key) -> _I | None:
    """The item at ``key`` (the latest one added there), or ``None`` (:func:`add_keyed`'s holders).

    A holder of keyed items in order (a message's parts, a stream's messages) keeps a map by key
    only from its second item: most hold one, found by its own key.
    """
    if by_key is not None:
        return by_key.get(key)
    if items:
        first = items[0]
        if first.key == key:
            return first
    return None


def add_keyed(
    items: list[_I], by_key: dict[Key, _I] | None, item: _I
) -> tuple[list[_I], dict[Key, _I] | None]:
    """``items`` and ``by_key`` with ``item`` appended: the first makes the list, the second the map."""
    if not items:
        return [item], None
    items.append(item)
    if by_key is None:
        first = items[0]
        by_key = {first.key: first}
    by_key[item.key] = item
    return items, by_key
