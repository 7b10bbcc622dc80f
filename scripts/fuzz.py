"""The long fuzz run: ``python scripts/fuzz.py --inputs N [--seed S]``.

Feeds N mutated inputs (streams, response bodies, request bodies of all protocols; see
``tests/fuzz/harness.py``) through the fuzz contract with a fixed seed, and prints what came of
them: inputs run, results, protocol errors by type, and every broken contract by site with the
first input that broke it. Exits 1 when a contract broke.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]
sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))

from tests.fuzz import harness  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="how many inputs to run")
    parser.add_argument("--seed", type=int, default=20261202, help="the random seed (fixed by default)")
    parser.add_argument("--no-corpus", action="store_true", help="recordings only, not the shared corpus")
    parser.add_argument("--no-one-byte", action="store_true", help="skip feeding streams one byte at a time")
    parser.add_argument("--progress", type=int, default=0, help="print a line every this many inputs")
    args = parser.parse_args(argv)

    logging.getLogger("maas_stream").setLevel(logging.ERROR)  # drops are logged as warnings: millions
    seeds = harness.load_seeds(with_corpus=not args.no_corpus)
    r = random.Random(args.seed)
    tally = harness.Tally()
    start = time.monotonic()
    n = 0
    try:
        while n < args.inputs:
            harness.run_one(seeds, r, tally, byte_by_byte=not args.no_one_byte)
            n += 1
            if args.progress and n % args.progress == 0:
                print(
                    f"  {n} inputs, {len(tally.broken)} broken sites, {time.monotonic() - start:.0f} s",
                    flush=True,
                )
    except KeyboardInterrupt:  # SIGINT ends a long run early, with the counts so far
        print(f"interrupted after {n} inputs")
    seconds = time.monotonic() - start
    print(f"seed {args.seed}: {n} inputs in {seconds:.0f} s ({tally.inputs} checked)")
    print(f"results (whole ends): {tally.results}")
    print("protocol errors by type:")
    for name, count in sorted(tally.errors.items(), key=lambda kv: -kv[1]):
        print(f"  {name}: {count}")
    print(
        f"OTHER (broken contracts): {sum(c for c, _ in tally.broken.values())} at {len(tally.broken)} sites"
    )
    for key, (count, first) in sorted(tally.broken.items(), key=lambda kv: -kv[1][0]):
        print(f"  {count} x {key}")
        print(f"      first: {str(first)[:1500]}")
    return 1 if tally.broken else 0


if __name__ == "__main__":
    sys.exit(main())
