"""What the hash chain costs: ``append.py`` and ``full_path.py`` run alternately on a baseline
source tree without the chain (``--baseline-src``, e.g. a checkout of the commit before it) and
on this one, in child processes of the same Python, pair after pair.

Each figure is the median over ``--pairs`` runs of each side; the ratio is chained/baseline
throughput (target >= 0.95: proof must be nearly free). Alternating pairs spreads a change in
machine load over both sides::

    python benchmarks/chain_overhead.py --baseline-src /path/to/baseline/src --pairs 5
    python benchmarks/chain_overhead.py --baseline-src ... --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
_APPEND = re.compile(r"^(sqlite|postgres)\s+(\w+)\s+wall\s+([\d.]+) us/op.*\bcpu\s+([\d.]+) us/op")
_FULL = re.compile(r"^\s+(WopHost\[\w+\])\s+([\d.]+)$")


def _run(script: str, args: list[str], src: Path) -> dict[str, float]:
    """Throughput figures (ops/s) of one run of ``script`` with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    out = subprocess.run(
        [sys.executable, str(HERE / script), *args], env=env, capture_output=True, text=True, check=True
    ).stdout
    figures: dict[str, float] = {}
    for line in out.splitlines():
        if found := _APPEND.match(line):
            figures[f"append {found[1]} {found[2]}"] = 1e6 / float(found[3])
            # This process's CPU time: steadier than wall time on a shared machine (on
            # PostgreSQL it leaves the server's share out).
            figures[f"append {found[1]} {found[2]} (cpu)"] = 1e6 / float(found[4])
        elif found := _FULL.match(line):
            figures[f"full path {found[1]}"] = float(found[2])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--baseline-src", required=True, type=Path, help="the src/ of a tree without the chain"
    )
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--operations", type=int, default=1000, help="append.py operations per mode")
    parser.add_argument("--iterations", type=int, default=30, help="full_path.py cycles per contender")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (default: SQLite only)")
    parser.add_argument("--skip-full-path", action="store_true")
    args = parser.parse_args(argv)
    append_args = ["--rounds", "1", "--operations", str(args.operations), "--warmup", "100"]
    full_args = ["--rounds", "1", "--iterations", str(args.iterations), "--warmup", "3"]
    if args.postgres:
        append_args += ["--postgres", args.postgres]
        full_args += ["--postgres", args.postgres]
    else:
        append_args += ["--only", "sqlite"]
    runs: dict[str, dict[str, list[float]]] = {"baseline": {}, "chained": {}}
    for pair in range(args.pairs):
        sides = [("baseline", args.baseline_src), ("chained", SRC)]
        for side, src in sides if pair % 2 == 0 else sides[::-1]:
            figures = _run("append.py", append_args, src)
            if not args.skip_full_path:
                figures |= _run("full_path.py", full_args, src)
            for name, value in figures.items():
                runs[side].setdefault(name, []).append(value)
    print(f"chain overhead: median of {args.pairs} alternating runs per side (ops/s; ratio chained/baseline)")
    for name in runs["baseline"]:
        base = statistics.median(runs["baseline"][name])
        chained = statistics.median(runs["chained"].get(name, [0.0]))
        ratio = chained / base
        verdict = "meets" if ratio >= 0.95 else "BELOW"
        print(f"  {name:32s} {base:9.1f} {chained:9.1f}  {ratio:5.2f}x  ({verdict} the 0.95x target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
