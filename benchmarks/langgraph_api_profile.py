"""Where the server's CPU goes in the LangGraph API client cycle of :mod:`langgraph_api`: a
per-thread ``cProfile`` on each thread's CPU clock, in ms per cycle by function.

The server (``wop-langgraph serve`` on SQLite, or ``--postgres``) runs under
:mod:`_thread_cpu_serve`; after a warm-up its profile is taken, then again after the measured
cycles, and the difference is printed: self (``tottime``) and total (``cumtime``) CPU ms per
cycle and calls per cycle, largest first. The profiler costs about one microsecond a Python call,
so its totals run ~5x the real CPU per cycle and call-heavy code looks larger than it is: read
shares and call counts, and confirm a change with ``langgraph_api.py``'s CPU ms/cycle.

    python benchmarks/langgraph_api_profile.py --cycles 10 --top 40
    python benchmarks/langgraph_api_profile.py --match 'wop/' --sort cumtime
    python benchmarks/langgraph_api_profile.py --callers 'json/__init__.py:299'
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import signal
import subprocess
import tempfile
import time
from typing import Any

from _harness import API_KEY, POSTGRES_ENV, database, server
from langgraph_api import GRAPH, TARGET, measure

Stats = dict[Any, tuple[Any, ...]]


def _name(key: tuple[str, int, str]) -> str:
    path, line, function = key
    path = re.sub(r".*site-packages/", "", path)
    path = re.sub(r".*/src/wop_langgraph/", "wop/", path)
    path = re.sub(r".*/lib/python3\.\d+/", "", path)
    return f"{path}:{line}({function})"


def _snapshot(process: subprocess.Popen[bytes], out: str, n: int) -> Stats:
    process.send_signal(signal.SIGUSR1)
    path = f"{out}.{n}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with open(path, "rb") as taken:
                stats: Stats = pickle.load(taken)
            return stats
        except (FileNotFoundError, EOFError, pickle.UnpicklingError):
            if time.monotonic() > deadline:
                raise SystemExit("the server wrote no profile within 60 s") from None
            time.sleep(0.2)


def _show(before: Stats, after: Stats, cycles: int, args: argparse.Namespace) -> None:
    rows = []
    for key, (_, calls, own, total, _callers) in after.items():
        old = before.get(key, (0, 0, 0.0, 0.0, {}))
        rows.append((own - old[2], total - old[3], calls - old[1], _name(key)))
    busy = sum(r[0] for r in rows if "acquire' of '_thread" not in r[3] and "wait" not in r[3])
    print(f"profiled CPU (less lock waits) {busy * 1000 / cycles:.2f} ms/cycle over {cycles} cycles")
    print(f"{'self ms':>8} {'total ms':>9} {'calls':>8}  function (per cycle)")
    column = 0 if args.sort == "tottime" else 1
    shown = 0
    for own, total, calls, name in sorted(rows, key=lambda r: -r[column]):
        if args.match and not re.search(args.match, name):
            continue
        print(f"{own * 1000 / cycles:8.3f} {total * 1000 / cycles:9.3f} {calls / cycles:8.1f}  {name}")
        shown += 1
        if shown >= args.top:
            break
    if args.callers:
        for key, (*_, callers) in after.items():
            if re.search(args.callers, _name(key)):
                print(f"== {_name(key)}: callers (whole run, including the warm-up)")
                for caller, figures in sorted(callers.items(), key=lambda c: -c[1][3])[:10]:
                    print(f"   {figures[1]:8d} calls {figures[3] * 1000:9.1f} ms total  {_name(caller)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--cycles", type=int, default=10, help="cycles per client")
    parser.add_argument("--postgres", help=f"profile on PostgreSQL (e.g. ${POSTGRES_ENV})")
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument("--sort", choices=["tottime", "cumtime"], default="tottime")
    parser.add_argument("--match", help="only functions whose name matches this regex")
    parser.add_argument("--callers", help="also list the callers of functions matching this regex")
    args = parser.parse_args()
    backend = "postgres" if args.postgres else "sqlite"
    with (
        tempfile.TemporaryDirectory(prefix="wop-profile-") as folder,
        database(backend, args.postgres) as url,
    ):
        out = os.path.join(folder, "profile")
        wrapper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_thread_cpu_serve.py")
        # (a profiled server starts slower than the plain one)
        with server(
            url,
            workers=4,
            env={"WOP_PROFILE_OUT": out},
            target=TARGET,
            program=(wrapper,),
            startup_seconds=120,
        ) as (base, process):
            measure("warm-up", f"{base}/langgraph", API_KEY, GRAPH, 4, 2, process)
            before = _snapshot(process, out, 0)
            figures = measure(
                "profiled", f"{base}/langgraph", API_KEY, GRAPH, args.clients, args.cycles, process
            )
            after = _snapshot(process, out, 1)
    print(f"{figures.cycles} cycles, {len(figures.errors)} errors; load {os.getloadavg()[0]:.2f}")
    for error in figures.errors[:3]:
        print(f"  {error}")
    if figures.cycles:
        _show(before, after, figures.cycles, args)


if __name__ == "__main__":
    main()
