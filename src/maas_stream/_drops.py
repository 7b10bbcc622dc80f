"""Structured drops: what a conversion could not carry, as records with a stable kind.

Every encoder (stream, response body, history) reports what its target cannot express through
one :class:`DropLog`. A drop is kept once per ``(kind, what)`` and counted, so a stream of a
thousand dropped signatures is one record with ``count=1000``, and nothing in the key is a
provider id (call ids and item ids go to ``where``, which is not part of the key): a counter
keyed by kind stays bounded however many calls a bridge serves.

It must not know any wire protocol or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final, get_args

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["DROP_KINDS", "DropKind", "DropLog", "Dropped"]

DropKind: TypeAlias = Literal[
    "reasoning",
    "encrypted_reasoning",
    "signature",
    "citation",
    "server_call",
    "tool_result",
    "media",
    "code",
    "refusal",
    "logprobs",
    "unknown",
    "session_frame",
    "message",
    "error",
    "field",
    "request_field",
]
"""What kind of thing was dropped. Stable: tools and dashboards may key on it.

* ``reasoning``: reasoning or thinking text or summaries the target cannot carry.
* ``encrypted_reasoning``: redacted or encrypted reasoning (opaque, provider-bound).
* ``signature``: a thinking or thought signature the target cannot take (foreign, or no field).
* ``citation``: a citation or annotation, or a field of one.
* ``server_call``: a server-side, hosted or MCP tool call, or its output.
* ``tool_result``: a tool result where the target has no place for it, or a field of one.
* ``media``: image, audio, file or transcript content.
* ``code``: executable code or its result.
* ``refusal``: a refusal the target cannot mark as one.
* ``logprobs``: token log-probabilities.
* ``unknown``: a part, item, block or frame of a type this library does not know.
* ``session_frame``: a session or client frame of a websocket protocol with no counterpart.
* ``message``: a whole message, choice, turn or response the target output cannot hold.
* ``error``: an in-band error the target has no way to express.
* ``field``: any other field of the output with no place in the target.
* ``request_field``: a request field the target provider cannot carry.
"""

DROP_KINDS: Final[frozenset[str]] = frozenset(get_args(DropKind))
"""Every :data:`DropKind`, for checks at run time."""

_MAX_WHERE: Final = 8
"""How many example locations a record keeps (the count goes on; memory does not)."""


@final
class Dropped(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing a conversion dropped, counted.

    ``str(record)`` is the line a human reads (``"reasoning (Chat Completions carries no
    reasoning), 3 times"``); the fields are for code. Two drops with the same ``kind`` and
    ``what`` are one record with a ``count``.
    """

    kind: DropKind
    """The stable category."""
    what: str
    """What was dropped and why, for humans. Never holds a provider id."""
    target: str
    """The protocol that could not carry it."""
    source: str | None = None
    """The protocol it came from, when known."""
    count: int = 1
    """How many times it was dropped."""
    where: tuple[str, ...] = ()
    """Up to eight example locations (``messages[3]``, a call id): not part of the key."""

    def __str__(self) -> str:
        text = self.what
        if self.where:
            text += f" [{', '.join(self.where)}]"
        if self.count > 1:
            text += f", {self.count} times"
        return text


class DropLog:
    """The drops of one conversion, one record per ``(kind, what)``.

    Encoders call :meth:`add`; callers read :attr:`records` (or iterate). Memory is bounded by
    the number of distinct ``(kind, what)`` pairs, never by how often they occur.

    Args:
        target: The protocol being written.
        source: The protocol being read, when known (it may be set later).
    """

    __slots__ = ("_counts", "_where", "source", "target")

    def __init__(self, target: str, source: str | None = None) -> None:
        self.target = target
        self.source = source
        # Made at the first drop (most conversions drop nothing: nothing per stream).
        self._counts: dict[tuple[DropKind, str], int] | None = None
        self._where: dict[tuple[DropKind, str], list[str]] | None = None

    def add(self, kind: DropKind, what: str, *, where: str | None = None, count: int = 1) -> None:
        """Record that ``what`` (of ``kind``) was dropped ``count`` more times.

        Args:
            kind: The stable category (see :data:`DropKind`).
            what: What and why, for humans; no provider ids (put those in ``where``).
            where: An example location (a message index, a call id), kept for the first eight.
            count: How many were dropped at once.
        """
        assert kind in DROP_KINDS, kind
        key = (kind, what)
        counts = self._counts
        if counts is None:
            counts = self._counts = {}
        counts[key] = counts.get(key, 0) + count
        if where is not None:
            if self._where is None:
                self._where = {}
            places = self._where.setdefault(key, [])
            if len(places) < _MAX_WHERE and where not in places:
                places.append(where)

    def extend(self, records: list[Dropped]) -> None:
        """Merge records from another log (their counts add up)."""
        for rec in records:
            for place in rec.where or (None,):
                self.add(rec.kind, rec.what, where=place, count=0)
            self._counts[(rec.kind, rec.what)] += rec.count  # type: ignore[index]  # (add made it)

    @property
    def records(self) -> list[Dropped]:
        """The drops so far, in the order each was first seen."""
        return [
            Dropped(
                kind=kind,
                what=what,
                target=self.target,
                source=self.source,
                count=count,
                where=tuple(self._where.get((kind, what), ())) if self._where is not None else (),
            )
            for (kind, what), count in (self._counts or {}).items()
        ]

    def by_kind(self) -> dict[str, int]:
        """Total drops per kind (what a metrics counter wants)."""
        out: dict[str, int] = {}
        for (kind, _), count in (self._counts or {}).items():
            out[kind] = out.get(kind, 0) + count
        return out

    def __len__(self) -> int:
        """How many distinct records there are."""
        return len(self._counts or ())

    def __bool__(self) -> bool:
        return bool(self._counts)

    def __iter__(self) -> Iterator[Dropped]:
        return iter(self.records)

    def lines(self) -> list[str]:
        """One human-readable line per record."""
        return [str(rec) for rec in self.records]
