"""What the hash chain costs: event appends and the full path with the chain and without it.

By default both sides are this tree, in one process: the chain as shipped ("on"), and the
chain's computation replaced with constants ("off", see ``_chain_switch.py``: no digest, no
chain step, no read of the previous chain value; a benchmark-only switch, never a setting).
Every workload runs in rounds that alternate the two sides (the first side alternating too),
so a change in machine load falls on both, and each round lasts ``--round-ms`` at least (a
workload's operations per round are raised to that by its warm-up's pace: ``in_tx``'s 300
appends took 20-50 ms, where one time slice lost to another process swung a round by 20%
and the median of 12 ratios by several points); each ratio is the median of the per-round ratios
(on/off throughput, target >= 0.95: proof must be nearly free), by wall time and by this
process's CPU time (steady on a loaded machine; on PostgreSQL it leaves the server's share
out, where ``sha256`` of the chain runs). The workloads: ``append.py``'s modes (``append1``,
``append3``, ``once``, ``in_tx``, ``scores``) and ``full_path.py``'s WopHost cycle (create, suspend at
the gate, resolve, complete). Then every workload once more, paired (``--paired`` calls a side,
0 for none): its calls (an append, a transaction of ``in_tx``'s 50, a cycle) alternate one by
one, chain off and on, and the ratio is the median of the paired calls' ratios, which the VM's
drift (tens of percent within minutes) moves far less than a ratio of rounds. ``--parts N``
then times each part of the chain in ``in_tx``'s appends where it runs (``_chain_parts.py``: a
part costs two to four times its tight loop's time there)::

    python benchmarks/chain_overhead.py --rounds 12
    python benchmarks/chain_overhead.py --rounds 2 --paired 0 --skip-full-path --parts 300
    python benchmarks/chain_overhead.py --postgres postgresql://postgres@127.0.0.1:5432/test

``--baseline-src`` compares against another tree instead (a checkout of the commit before the
chain, say): ``append.py`` and ``full_path.py`` (each tree's own, where it has them) then run in
child processes, alternately on that tree and on this one, ``--pairs`` times (which mixes in
whatever else differs)::

    python benchmarks/chain_overhead.py --baseline-src /path/to/baseline/src --pairs 5
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TARGET = 0.95
_APPEND = re.compile(r"^(sqlite|postgres)\s+(\w+)\s+wall\s+([\d.]+) us/op.*\bcpu\s+([\d.]+) us/op")
_FULL = re.compile(r"^\s+(WopHost\[\w+\])\s+([\d.]+)$")

#: A workload: ``run(n)`` does ``n`` operations and returns how many it did.
Workload = Callable[[int], int]


# -- same tree, chain on and off, in this process ----------------------------------------------


@contextlib.contextmanager
def _backend(backend: str, postgres: str | None) -> Iterator[tuple[str, str]]:
    """(database URL for the appends, database URL for the full path) of ``backend``."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="wop-bench-") as folder:
            yield f"sqlite:///{folder}/append.db", f"sqlite:///{folder}/full.db"
        return
    from _postgres import scratch_database

    assert postgres is not None
    with scratch_database(postgres) as appends, scratch_database(postgres) as full:
        yield appends.render_as_string(hide_password=False), full.render_as_string(hide_password=False)


def _workloads(
    append_url: str, full_url: str, stack: contextlib.ExitStack
) -> tuple[dict[str, Workload], dict[str, Workload], Callable[[bool], None]]:
    """The workloads over the two databases; the append modes once more, over runs of their
    own (for the paired measurement: a run is appended to with the chain on, or off, never
    both, as in the rounds); and ``side(on)``, which switches the chain on or off and checks
    with an append that it is."""
    import _chain_switch
    import full_path
    from append import modes
    from wop_langgraph.proof.chain import GENESIS
    from wop_langgraph.store.engine import make_engine
    from wop_langgraph.store.events import NewEvent, append
    from wop_langgraph.store.migrations import upgrade

    engine = make_engine(append_url)
    stack.callback(engine.dispose)
    upgrade(engine)
    workloads: dict[str, Workload] = dict(modes(engine))
    others: dict[str, Workload] = dict(modes(engine))
    host = full_path._host(full_url)
    stack.callback(host.saver.close)
    cycle = full_path._host_cycle(host)

    def full(n: int) -> int:
        for _ in range(n):
            cycle()
        return n

    workloads["full_path"] = others["full_path"] = full
    probes = iter(range(1 << 30))

    def side(on: bool) -> None:
        (_chain_switch.chain_on if on else _chain_switch.chain_off)()
        with engine.begin() as conn:
            now = datetime.now(UTC)
            (probe,) = append(conn, f"acme/probe-{next(probes)}", [NewEvent("probe", {})], now=now).events
        if (probe.chain_hash == GENESIS) == on:
            raise AssertionError(f"the chain is not {'on' if on else 'off'} as switched")

    return workloads, others, side


def _timed(run: Workload, n: int) -> tuple[float, float]:
    """(wall, CPU) seconds per operation of ``run(n)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    done = run(n)
    return (time.perf_counter() - wall) / done, (time.process_time() - cpu) / done


def in_process(args: argparse.Namespace) -> int:
    """Measure each workload, chain on and off in alternating rounds, and print the ratios."""
    backends = ["sqlite"] + (["postgres"] if args.postgres else [])
    load = os.getloadavg()
    print(
        f"chain overhead: this tree, chain on vs off, {args.rounds} interleaved rounds per workload "
        f"(median; ratio = on/off throughput); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"({os.cpu_count()} cores)"
    )
    print(
        f"  {'workload':24s} {'on us/op':>10s} {'off us/op':>10s} {'wall':>6s} {'cpu':>6s}"
        "  (cpu on/off us/op)"
    )
    for backend in backends:
        with _backend(backend, args.postgres) as urls, contextlib.ExitStack() as stack:
            workloads, others, _side = _workloads(*urls, stack)
            for name, run in workloads.items():
                if name == "full_path" and args.skip_full_path:
                    continue
                count = args.cycles if name == "full_path" else args.operations
                warmup = args.cycles_warmup if name == "full_path" else args.warmup
                slowest = 0.0
                for on in (False, True):  # each side's statements built and warm
                    _side(on)
                    slowest = max(slowest, _timed(run, warmup)[0])
                count = max(count, math.ceil(args.round_ms / 1e3 / slowest))
                sides: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
                for round_ in range(args.rounds):
                    for on in (True, False) if round_ % 2 == 0 else (False, True):
                        _side(on)
                        sides[on].append(_timed(run, count))
                _side(True)
                pairs = list(zip(sides[True], sides[False], strict=True))
                ratio_wall = statistics.median(off[0] / on[0] for on, off in pairs)
                ratio_cpu = statistics.median(off[1] / on[1] for on, off in pairs)
                on_wall = 1e6 * statistics.median(w for w, _ in sides[True])
                off_wall = 1e6 * statistics.median(w for w, _ in sides[False])
                on_cpu = 1e6 * statistics.median(c for _, c in sides[True])
                off_cpu = 1e6 * statistics.median(c for _, c in sides[False])
                verdict = "meets" if min(ratio_wall, ratio_cpu) >= TARGET else "BELOW"
                print(
                    f"  {backend + ' ' + name:24s} {on_wall:10.1f} {off_wall:10.1f} {ratio_wall:5.2f}x "
                    f"{ratio_cpu:5.2f}x  ({on_cpu:.1f}/{off_cpu:.1f}; {verdict} the {TARGET}x target)"
                )
            if args.paired:
                print(
                    f"  paired: {args.paired} calls a side, chain off and on alternating one by one "
                    "(an append, a transaction of in_tx's, a cycle); median of the paired ratios"
                )
                for name, run in workloads.items():
                    if name != "full_path" or not args.skip_full_path:
                        _paired(f"{backend} {name}", (others[name], run), args.paired)
            if args.parts:
                _parts(backend, (others["in_tx"], workloads["in_tx"]), args.parts)
    after = os.getloadavg()
    print(f"  load average after: {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")
    return 0


def _alternate(runs: tuple[Workload, Workload], count: int) -> tuple[list[list[float]], float]:
    """``runs`` (chain off, chain on) called alternately one by one, a unit of work each call,
    ``count`` times a side, the chain switched before each (on again after): each side's times
    (ms) and the median of the paired ratios (``_harness.paired_cycles``)."""
    import _chain_switch
    from _harness import paired_cycles

    off, on = runs
    try:
        return paired_cycles(
            (lambda: off(1) and None, lambda: on(1) and None),
            count,
            max(count // 10, 3),
            before=(_chain_switch.chain_off, _chain_switch.chain_on),
        )
    finally:
        _chain_switch.chain_on()


def _paired(label: str, runs: tuple[Workload, Workload], count: int) -> None:
    """``runs`` (chain off, chain on) called alternately one by one, a unit of work each call,
    ``count`` times a side: the median of the paired ratios (off/on time, that is on/off
    throughput), which the VM's drift moves far less than a ratio of rounds."""
    times, ratio = _alternate(runs, count)
    off_ms, on_ms = (statistics.median(t) for t in times)
    verdict = "meets" if ratio >= TARGET else "BELOW"
    print(
        f"  {label:24s} {on_ms * 1e3:10.1f} {off_ms * 1e3:10.1f} {ratio:5.2f}x         "
        f"(us a call; {verdict} the {TARGET}x target)"
    )


def _parts(backend: str, runs: tuple[Workload, Workload], count: int) -> None:
    """What each part of the chain costs an ``in_tx`` append where it runs: ``count`` paired
    transactions of ``in_tx``'s (chain off and on alternating), every part timed (see
    ``_chain_parts.py``), in nanoseconds a call."""
    import _chain_parts

    with _chain_parts.timed_parts() as timings:
        _alternate(runs, count)
    print(
        f"  parts: {backend} in_tx, {count} transactions a side (paired), ns a call where it runs, "
        f"each with the timer's own {timings.timer_ns:.0f} ns"
    )
    for label, _, _ in _chain_parts.PARTS:
        cost = timings.per_call(label)
        shown = "never called" if cost is None else f"{cost:8.0f} ns  ({timings.calls[label]} calls)"
        print(f"    {label:44s} {shown}")


# -- against another tree, in child processes -------------------------------------------------


def _run(script: str, args: list[str], src: Path) -> dict[str, float]:
    """Throughput figures (ops/s) of one run of ``script`` with ``src`` first on the path: the
    script of ``src``'s tree (``../benchmarks``, each tree measured with its own API) where it
    has one, else this tree's."""
    scripts = src.resolve().parent / "benchmarks"
    scripts = scripts if (scripts / script).exists() else HERE
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{scripts}"}
    out = subprocess.run(
        [sys.executable, str(scripts / script), *args], env=env, capture_output=True, text=True, check=True
    ).stdout
    figures: dict[str, float] = {}
    for line in out.splitlines():
        if found := _APPEND.match(line):
            figures[f"append {found[1]} {found[2]}"] = 1e6 / float(found[3])
            figures[f"append {found[1]} {found[2]} (cpu)"] = 1e6 / float(found[4])
        elif found := _FULL.match(line):
            figures[f"full path {found[1]}"] = float(found[2])
    return figures


def against_tree(args: argparse.Namespace) -> int:
    """``append.py`` and ``full_path.py`` on ``--baseline-src`` and on this tree, alternately."""
    append_args = ["--rounds", "1", "--operations", str(args.operations), "--warmup", str(args.warmup)]
    full_args = ["--rounds", str(args.rounds), "--iterations", str(args.cycles), "--warmup", "3"]
    full_args.append("--no-secondary")
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
    load = os.getloadavg()
    print(
        f"chain overhead against {args.baseline_src}: median of {args.pairs} alternating runs per side "
        f"(ops/s; ratio this/baseline); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    for name in runs["baseline"]:
        base = statistics.median(runs["baseline"][name])
        chained = statistics.median(runs["chained"].get(name, [0.0]))
        ratio = chained / base
        verdict = "meets" if ratio >= TARGET else "BELOW"
        print(f"  {name:32s} {base:9.1f} {chained:9.1f}  {ratio:5.2f}x  ({verdict} the {TARGET}x target)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=12, help="interleaved rounds per workload")
    parser.add_argument("--operations", type=int, default=300, help="appends per round (append modes)")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured appends per side first")
    parser.add_argument("--cycles", type=int, default=10, help="full-path cycles per round")
    parser.add_argument(
        "--round-ms",
        type=float,
        default=150.0,
        help="operations per round raised until a round lasts this long (by the warm-up's pace)",
    )
    parser.add_argument("--cycles-warmup", type=int, default=3, help="unmeasured cycles per side first")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (default: SQLite only)")
    parser.add_argument("--skip-full-path", action="store_true")
    parser.add_argument(
        "--paired",
        type=int,
        default=300,
        help="then each workload's calls a side, chain off and on alternating one by one (0: none)",
    )
    parser.add_argument(
        "--parts",
        type=int,
        default=0,
        help="then time each part of the chain in in_tx's appends, over this many transactions a side",
    )
    parser.add_argument(
        "--baseline-src", type=Path, default=None, help="compare against this src/ (another tree) instead"
    )
    parser.add_argument("--pairs", type=int, default=5, help="with --baseline-src: runs per side")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_src is not None:
        return against_tree(args)
    if args.in_process:
        return in_process(args)
    # This tree's src/ first on the path, whatever is installed: measured in a child.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
    argv = sys.argv[1:] if argv is None else argv
    return subprocess.run(
        [sys.executable, str(Path(__file__)), *argv, "--in-process"], env=env, check=False
    ).returncode


if __name__ == "__main__":
    raise SystemExit(main())
