"""Memory is bounded by the bytes received, not by the indexes they name.

A real recording has every index of one kind raised by 10**8 (so the stream stays consistent:
each frame names the same huge index its siblings name); aggregating it, and converting it to
every target, must peak under 2 MB above what the same calls need for the original stream: a
decoder or an encoder that pre-fills a list up to the index would need hundreds of MB.
Measured with ``tracemalloc`` (allocations, not time). Bad input may end in
``RemoteProtocolError``; the memory bound holds either way.
"""

from __future__ import annotations

import re
import tracemalloc
from typing import TYPE_CHECKING, Any

import pytest

import maas_stream as ms
from tests.conftest import recordings
from tests.fuzz.harness import PROTOCOLS, frames_of, stream_of

if TYPE_CHECKING:
    from collections.abc import Callable

BIG = 10**8
LIMIT = 2 * 1024 * 1024


def _shift(value: Any, key: str, parent: str | None, under: str | None = None) -> tuple[Any, int]:
    """``value`` with every integer ``key`` raised by BIG (only in dicts that are items of a
    list named ``parent``, when given); and how many were raised."""
    count = 0
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if (
                k == key
                and isinstance(v, int)
                and not isinstance(v, bool)
                and (parent is None or under == parent)
            ):
                out[k] = v + BIG
                count += 1
            else:
                out[k], n = _shift(v, key, parent, k if isinstance(v, list) else None)
                count += n
        return out, count
    if isinstance(value, list):
        items = []
        for v in value:
            item, n = _shift(v, key, parent, under)
            items.append(item)
            count += n
        return items, count
    return value, 0


def _json_path(value: Any) -> tuple[Any, int]:
    """Every Gemini ``partialArgs`` jsonPath array subscript raised by BIG."""
    if isinstance(value, dict):
        pairs = [(k, _json_path(v)) if k != "jsonPath" else (k, _subscript(v)) for k, v in value.items()]
        return {k: v for k, (v, _) in pairs}, sum(n for _, (_, n) in pairs)
    if isinstance(value, list):
        pairs2 = [_json_path(v) for v in value]
        return [v for v, _ in pairs2], sum(n for _, n in pairs2)
    return value, 0


def _subscript(path: Any) -> tuple[Any, int]:
    if not isinstance(path, str) or "[" not in path:
        return path, 0
    return re.sub(r"\[(\d+)\]", lambda m: f"[{int(m.group(1)) + BIG}]", path), 1


CASES: list[tuple[str, str, Callable[[Any], tuple[Any, int]]]] = [
    ("openai-chat", "choices[].index", lambda v: _shift(v, "index", "choices")),
    ("openai-chat", "tool_calls[].index", lambda v: _shift(v, "index", "tool_calls")),
    ("openai-responses", "output_index", lambda v: _shift(v, "output_index", None)),
    ("openai-responses", "content_index", lambda v: _shift(v, "content_index", None)),
    ("openai-responses", "summary_index", lambda v: _shift(v, "summary_index", None)),
    ("anthropic", "content block index", lambda v: _shift(v, "index", None)),
    ("gemini", "candidates[].index", lambda v: _shift(v, "index", "candidates")),
    ("gemini", "partialArgs jsonPath", _json_path),
    ("google-interactions", "step index", lambda v: _shift(v, "index", None)),
    ("openai-realtime", "output_index", lambda v: _shift(v, "output_index", None)),
    ("openai-realtime", "content_index", lambda v: _shift(v, "content_index", None)),
]


def _huge(protocol: str, change: Callable[[Any], tuple[Any, int]]) -> tuple[bytes, bytes]:
    """The first recording where ``change`` raises an index: (original bytes, changed bytes).

    Gemini's candidate index 0 is often left out; a recording is taken only where it is there.
    """
    for path in recordings(protocol):
        frames = frames_of(protocol, path.read_bytes())
        changed, total = [], 0
        for head, value in frames:
            new, n = change(value)
            changed.append((head, new))
            total += n
        if total:
            return stream_of(protocol, frames), stream_of(protocol, changed)
    pytest.fail(f"no {protocol} recording has that index")


def _peak(run: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            run()
        except ms.RemoteProtocolError:
            pass
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _aggregate(data: bytes, protocol: str) -> Callable[[], object]:
    return lambda: ms.aggregate(data, protocol=protocol)


def _convert(data: bytes, protocol: str, target: str) -> Callable[[], object]:
    def run() -> bytes:
        conv = ms.StreamConverter(to=target, protocol=protocol, fail_closed=False)
        return conv.feed(data) + conv.finish()

    return run


PEAKS: dict[str, int] = {}  # filled as the tests run; scripts/fuzz.py --memory prints them


@pytest.mark.parametrize(("protocol", "kind", "change"), CASES, ids=[f"{p}:{k}" for p, k, _ in CASES])
@pytest.mark.parametrize("target", [None, *PROTOCOLS], ids=["aggregate", *(f"to-{t}" for t in PROTOCOLS)])
def test_a_huge_index_costs_memory_by_bytes_not_by_index(
    protocol: str, kind: str, change: Callable[[Any], tuple[Any, int]], target: str | None
) -> None:
    plain, huge = _huge(protocol, change)

    def make(data: bytes) -> Callable[[], object]:
        return _aggregate(data, protocol) if target is None else _convert(data, protocol, target)

    make(plain)()  # warm up: lazy imports and caches are not the stream's cost
    before = _peak(make(plain))
    after = _peak(make(huge))
    PEAKS[f"{protocol}:{kind}:{target or 'aggregate'}"] = after
    assert after - before < LIMIT, f"{kind}={BIG}+: peak {after / 1e6:.1f} MB against {before / 1e6:.2f} MB"
