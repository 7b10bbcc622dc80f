"""The benchmarks' flatness ratio measures both stream sizes alike (``benchmarks/_harness.py``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

ROOT = Path(__file__).resolve().parents[2]


def _harness() -> Any:
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module("_harness")


def test_both_sizes_run_equal_events_equally_often_interleaved(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = _harness()
    runs: list[str] = []

    def counting(protocol: str) -> Callable[[list[bytes]], object]:
        def run(chunks: list[bytes]) -> object:
            runs.append(chunks[0].decode())
            return None

        return run

    monkeypatch.setattr(harness, "aggregate", counting)
    harness.per_event_pair("p", ([b"s"], 2_000), ([b"L"], 30_000))
    rounds = runs.count("L")
    assert rounds > 1
    assert runs.count("s") == 15 * rounds  # each small sample is as many events as a large one
    samples = "".join(runs).replace("s" * 15, "S")
    assert samples == "LSSL" * (rounds // 2) + "LS" * (rounds % 2)  # interleaved, the order alternating


def test_flatness_uses_the_streams_measure_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = _harness()
    seen: list[tuple[object, ...]] = []
    monkeypatch.setattr(harness, "_STREAMS", {"p": [([b"a"], 1), ([b"b"], 2), ([b"c"], 3)]})

    def pair(*args: object) -> float:
        seen.append(args)
        return 1.25

    monkeypatch.setattr(harness, "per_event_pair", pair)
    assert harness.flatness("p", {"per_event": 1.0}, {"per_event": 2.0}) == 1.25
    assert seen == [("p", ([b"b"], 2), ([b"c"], 3))]
