"""What a decision's receipts cost on the resolve path: CPU time per ``resolve`` (a single
approval, ``wait=False``: the decision's transaction and whatever signs its receipt, no
drive) with receipt keys, on a baseline source tree (``--baseline-src``, e.g. a checkout
where the receipt is signed after the commit, in a transaction of its own) and on this one,
in child processes of the same Python, alternating pair after pair.

This process's CPU time per resolve is the figure (steadier than wall time on a shared
machine; on PostgreSQL it leaves the server's share out). ``--statements`` counts the
statements per resolve instead, on SQLite (a statement listener puts every statement on
SQLAlchemy's slower path: not for timing). Each figure is the median over ``--pairs``::

    python benchmarks/receipt_resolve.py --baseline-src /path/to/baseline/src --pairs 5
    python benchmarks/receipt_resolve.py --baseline-src ... --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
_LINE = re.compile(r"^(sqlite|postgres) cpu ([\d.]+) us wall ([\d.]+) us statements ([\d.-]+)$")


def child(backend: str, postgres: str | None, resolves: int, warmup: int, counted: bool) -> None:
    """Create ``warmup + resolves`` waiting runs, resolve them, print the per-resolve figures."""
    from sqlalchemy import event

    from _graphs import approval_builder
    from _harness import database
    from wop_langgraph import Principal, WopHost
    from wop_langgraph.proof.keys import ReceiptKeys, generate_seed

    alice = Principal("acme", "alice", frozenset({"approvals:respond", "runs:write"}))
    with database(backend, postgres) as url:
        host = WopHost.from_url(url)
        host.use_receipt_keys(ReceiptKeys.parse(f"r1={generate_seed()}"))
        host.register("approval", approval_builder().compile())
        runs = [host.create_run("approval", {}, owner=alice)["runId"] for _ in range(warmup + resolves)]
        statements = [0]

        def count(*_: object) -> None:
            statements[0] += 1

        for run_id in runs[:warmup]:
            host.resolve(run_id, "approve", {"action": "accept"}, alice, wait=False)
        if counted:
            event.listen(host.engine, "before_cursor_execute", count)
        cpu, wall = time.process_time(), time.perf_counter()
        for run_id in runs[warmup:]:
            host.resolve(run_id, "approve", {"action": "accept"}, alice, wait=False)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if counted:
            event.remove(host.engine, "before_cursor_execute", count)
        host.close()
        host.saver.close()
    per = 1e6 / resolves
    shown = statements[0] / resolves if counted else -1
    print(f"{backend} cpu {cpu * per:.1f} us wall {wall * per:.1f} us statements {shown:.2f}")


def _run(src: Path, backend: str, args: argparse.Namespace) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", backend]
    command += ["--resolves", str(args.resolves), "--warmup", str(args.warmup)]
    if args.postgres:
        command += ["--postgres", args.postgres]
    if args.statements:
        command.append("--statements")
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if found := _LINE.match(line):
            return float(found[2]), float(found[3]), float(found[4])
    raise RuntimeError(f"no figures in {out!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-src", type=Path, help="the src/ of the tree to compare with")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--resolves", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (default: SQLite only)")
    parser.add_argument("--statements", action="store_true", help="count statements (not timed)")
    parser.add_argument("--child", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.postgres, args.resolves, args.warmup, args.statements)
        return 0
    if args.baseline_src is None:
        parser.error("--baseline-src is required")
    backends = ["sqlite"] + (["postgres"] if args.postgres and not args.statements else [])
    for backend in backends:
        figures: dict[str, list[tuple[float, float, float]]] = {"baseline": [], "this tree": []}
        for _ in range(args.pairs):
            figures["baseline"].append(_run(args.baseline_src, backend, args))
            figures["this tree"].append(_run(SRC, backend, args))
        medians = {
            side: tuple(statistics.median(f[i] for f in runs) for i in range(3))
            for side, runs in figures.items()
        }
        for side, (cpu, wall, statements) in medians.items():
            shown = f"  statements {statements:.2f}" if args.statements else ""
            print(f"{backend:8} {side:10} cpu {cpu:8.1f} us/resolve  wall {wall:8.1f} us{shown}")
        ratio = medians["this tree"][0] / medians["baseline"][0]
        print(f"{backend:8} cpu this tree / baseline: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
