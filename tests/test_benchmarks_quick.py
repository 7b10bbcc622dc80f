"""The benchmarks run: ``benchmarks/run_all.py --quick`` (tiny sizes) ends well and prints its table.

Figures are not checked (a shared CI machine makes timings meaningless): only that every
benchmark ran and reported its ratios, so a benchmark broken by a change is seen in CI.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the bridge benchmark reads /proc (Linux)")
def test_every_benchmark_runs_in_quick_mode() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick", "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout.splitlines()
    benches = {
        line.split()[0].rstrip(",")
        for line in table[table.index(next(x for x in table if x.startswith("benchmark"))) + 1 :]
    }
    for name in (
        "bridge",
        "e2e",
        "openai-chat",
        "anthropic",
        "gemini",
        "openai-responses",
        "detection",
        "tiny",
    ):
        assert name in benches, f"{name} reported nothing:\n{proc.stdout[-3000:]}"
