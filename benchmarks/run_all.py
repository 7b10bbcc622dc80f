"""Run every benchmark and print ONE table of ratios.

Run: ``python benchmarks/run_all.py`` (all of ``benchmarks/bench_*.py``, or those named, e.g.
``bridge e2e``); ``--quick`` runs each at tiny sizes only to check that it runs (CI does, through
``tests/test_benchmarks_quick.py``), and its figures mean nothing. Each benchmark runs in its own
process; its detailed output is shown unless ``--quiet``; the lines it marks with
``_harness.RATIO_MARK`` become the rows of the table. With ``--quick`` the benchmarks run side
by side (their figures are not meant to be read). ``--against DIR`` (a checkout) is passed on
to the benchmarks that take it (their source names ``--against``): they measure that checkout's
library beside this one. The exit code is non-zero when a benchmark failed or reported nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _harness import RATIO_MARK

HERE = Path(__file__).parent


def run(script: Path, flags: list[str], quiet: bool) -> tuple[list[dict[str, object]], str | None]:
    """The ratios one benchmark reported, and why it failed (``None`` when it did not)."""
    if "--against" in flags and "--against" not in script.read_text():
        at = flags.index("--against")
        flags = flags[:at] + flags[at + 2 :]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent / "src"), os.environ.get("PYTHONPATH")])),
    }
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(script), *flags],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE.parent,
        check=False,
    )
    rows = [
        json.loads(line[len(RATIO_MARK) :])
        for line in proc.stdout.splitlines()
        if line.startswith(RATIO_MARK)
    ]
    if not quiet:
        print(f"==> {script.name} ({time.perf_counter() - started:.1f}s)")
        print("\n".join(line for line in proc.stdout.splitlines() if not line.startswith(RATIO_MARK)))
    if proc.returncode != 0:
        return rows, f"exit {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    if not rows:
        return rows, "reported no ratio"
    return rows, None


def main() -> int:
    args = sys.argv[1:]
    against: list[str] = []
    if "--against" in args:  # its value is the next argument, not a benchmark's name
        at = args.index("--against")
        against, args = args[at : at + 2], args[:at] + args[at + 2 :]
    flags = [a for a in args if a.startswith("--") and a != "--quiet"] + against
    quiet = "--quiet" in args
    names = [a for a in args if not a.startswith("--")]
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in names]
    rows: list[dict[str, object]] = []
    failures: dict[str, str] = {}
    # Quick runs only check that each benchmark runs, so they may share the machine.
    with ThreadPoolExecutor(max_workers=4 if "--quick" in flags else 1) as pool:
        results = list(pool.map(lambda s: run(s, flags, quiet), scripts))
    for script, (got, failure) in zip(scripts, results, strict=True):
        rows += got
        if failure is not None:
            failures[script.name] = failure
    width = max((len(str(r["bench"])) for r in rows), default=10)
    mwidth = max((len(str(r["metric"])) for r in rows), default=10)
    print(f"\n{'benchmark':<{width}}  {'measure':<{mwidth}}  {'value':>9}  goal")
    for r in rows:
        value = float(r["value"])  # type: ignore[arg-type]
        print(f"{r['bench']!s:<{width}}  {r['metric']!s:<{mwidth}}  {value:>9.2f}  {r['goal']}")
    if "--quick" in flags:
        print("(--quick: tiny sizes, to check that each benchmark runs; the figures mean nothing)")
    for name, why in failures.items():
        print(f"FAILED {name}: {why}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
