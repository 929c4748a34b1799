"""The LangGraph Server API's client cycle, through LangGraph's own Python SDK (``langgraph_sdk``).

Each of ``--clients`` concurrent clients (one thread each) repeats ``--cycles`` times: create a
thread, ``runs.wait`` with an input until the Agent Inbox-shaped graph
(``wop_langgraph.examples.agent_inbox``) waits on its ``HumanInterrupt``, then ``runs.wait``
with ``command.resume`` (accept) until the run ends. Reported per backend: cycles per second
(all clients' cycles over the wall time), the resume's p50 / p99 (the second ``runs.wait``:
the claim, the worker's drive to the end, the answer), and the server's CPU milliseconds per
cycle (its process, and for the reference its process tree, from ``/proc``: user + system time
over the measured cycles), the figure that holds on a loaded machine, where wall-clock rates lie.

Against ``wop-langgraph serve`` on SQLite and on PostgreSQL (``--postgres`` or
``$WOP_TEST_POSTGRES_URL``), durable; and against LangGraph's reference server on the same
graph, in the same run, with the ratios: ``--reference dev`` starts ``langgraph dev`` itself
(``langgraph-cli[inmem]``, the ``dev`` extra; in memory) over ``langgraph_compare/langgraph.json``,
``--reference-url`` names one already running the graph as ``--reference-graph``. Targets
(issue 35): cycles/s >= 1.5x the reference's on PostgreSQL and >= 2x on SQLite, resume p99 <=
half the reference's.

    python benchmarks/langgraph_api.py --clients 16 --cycles 10
    python benchmarks/langgraph_api.py --reference dev
    python benchmarks/langgraph_api.py --reference-url http://127.0.0.1:2024 --reference-graph inbox-email
"""

from __future__ import annotations

import argparse
import os
import subprocess
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field

from langgraph_sdk import get_sync_client

from _harness import (
    API_KEY,
    POSTGRES_ENV,
    backends,
    database,
    p50,
    percentile,
    row,
    server,
    tree_cpu_seconds,
)
from _reference import COMPARE_CONFIG, langgraph_dev

TARGET = "wop_langgraph.examples.agent_inbox:workflows"
GRAPH = "inbox-email"


@dataclass
class Figures:
    """One measured server: its cycles and resume latencies (ms)."""

    name: str
    cycles: int = 0
    seconds: float = 0.0
    resumes: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: The server's CPU seconds over the measured cycles (``None``: not measurable here).
    cpu: float | None = None
    #: The clients' (this process's) CPU seconds over the measured cycles.
    client_cpu: float = 0.0

    @property
    def rate(self) -> float:
        return self.cycles / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms(self) -> float | str:
        """The server's CPU milliseconds per cycle (``-`` when not measured)."""
        return self.cpu * 1000 / self.cycles if self.cpu is not None and self.cycles else "-"


def _client_loop(
    api_url: str, api_key: str | None, graph: str, cycles: int, into: Figures, lock: threading.Lock
) -> None:
    with get_sync_client(url=api_url, api_key=api_key) as client:
        for n in range(cycles):
            try:
                thread_id = client.threads.create()["thread_id"]
                asked = client.runs.wait(thread_id, graph, input={"to": f"c{n}", "body": "hello"})
                assert isinstance(asked, dict) and "__interrupt__" in asked, asked
                started = time.perf_counter()
                done = client.runs.wait(
                    thread_id, graph, command={"resume": [{"type": "accept", "args": None}]}
                )
                elapsed = (time.perf_counter() - started) * 1000
                assert isinstance(done, dict) and done.get("outcome") == "sent", done
            except Exception as exc:  # a failed cycle is reported, not fatal to the others
                with lock:
                    into.errors.append(repr(exc)[:200])
                continue
            with lock:
                into.cycles += 1
                into.resumes.append(elapsed)


def measure(
    name: str,
    api_url: str,
    api_key: str | None,
    graph: str,
    clients: int,
    cycles: int,
    process: subprocess.Popen[bytes] | None = None,
) -> Figures:
    """Run the cycle with ``clients`` concurrent clients (after one unmeasured warm-up cycle);
    ``process``: the server's, whose CPU time (with its descendants') is measured."""
    _client_loop(api_url, api_key, graph, 1, Figures("warm-up"), threading.Lock())
    figures, lock = Figures(name), threading.Lock()
    threads = [
        threading.Thread(target=_client_loop, args=(api_url, api_key, graph, cycles, figures, lock))
        for _ in range(clients)
    ]
    cpu_before = tree_cpu_seconds(process.pid) if process is not None else None
    client_before = time.process_time()
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    figures.seconds = time.perf_counter() - started
    figures.client_cpu = time.process_time() - client_before
    cpu_after = tree_cpu_seconds(process.pid) if process is not None else None
    if cpu_before is not None and cpu_after is not None:
        figures.cpu = cpu_after - cpu_before
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--cycles", type=int, default=10, help="cycles per client")
    parser.add_argument("--workers", type=int, default=4, help="in-process worker threads of the server")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV))
    parser.add_argument("--only", choices=["sqlite", "postgres"], help="measure one backend of ours")
    parser.add_argument(
        "--reference-url", help="a running LangGraph server with the same graph (langgraph dev)"
    )
    parser.add_argument(
        "--reference", choices=["dev"], help="start the reference server here: dev = langgraph dev"
    )
    parser.add_argument(
        "--reference-jobs",
        type=int,
        default=None,
        help="langgraph dev's --n-jobs-per-worker (its default if unset)",
    )
    parser.add_argument("--reference-graph", default=GRAPH)
    parser.add_argument("--reference-key", default=None, help="its API key, if it wants one")
    args = parser.parse_args()
    stack = ExitStack()
    reference_process = None
    if args.reference == "dev":
        args.reference_url, reference_process = stack.enter_context(
            langgraph_dev(COMPARE_CONFIG, jobs=args.reference_jobs)
        )

    with stack:
        _run(args, reference_process)


def _run(args: argparse.Namespace, reference_process: subprocess.Popen[bytes] | None) -> None:
    results: list[Figures] = []
    for backend in backends(args.postgres, args.only):
        with (
            database(backend, args.postgres) as url,
            server(url, workers=args.workers, target=TARGET) as (base, process),
        ):
            results.append(
                measure(
                    f"wop {backend}",
                    f"{base}/langgraph",
                    API_KEY,
                    GRAPH,
                    args.clients,
                    args.cycles,
                    process,
                )
            )
    reference = None
    if args.reference_url:
        reference = measure(
            "reference",
            args.reference_url,
            args.reference_key,
            args.reference_graph,
            args.clients,
            args.cycles,
            reference_process,
        )
        results.append(reference)

    widths = [14, 7, 9, 12, 14, 10, 10, 7]
    print(
        f"{args.clients} clients x {args.cycles} cycles (create thread, wait to the interrupt, resume, wait);"
        f" load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        row(
            [
                "server",
                "cycles",
                "cycles/s",
                "CPU ms/cycle",
                "(clients' CPU)",
                "resume p50",
                "resume p99",
                "errors",
            ],
            widths,
        )
    )
    for f in results:
        latencies = [p50(f.resumes), percentile(f.resumes, 0.99)] if f.resumes else ["-", "-"]
        clients_ms = f.client_cpu * 1000 / f.cycles if f.cycles else "-"
        print(row([f.name, f.cycles, f.rate, f.cpu_ms, clients_ms, *latencies, len(f.errors)], widths))
    for f in results:
        for error in f.errors[:3]:
            print(f"  {f.name}: {error}")
    if reference is not None and reference.resumes:
        for f in results:
            if f is reference or not f.resumes:
                continue
            rate = f.rate / reference.rate if reference.rate else float("inf")
            p99 = percentile(f.resumes, 0.99) / percentile(reference.resumes, 0.99)
            cpu = (
                f", CPU per cycle x{f.cpu_ms / reference.cpu_ms:.2f}"
                if isinstance(f.cpu_ms, float) and isinstance(reference.cpu_ms, float)
                else ""
            )
            print(f"{f.name} / reference: cycles/s x{rate:.2f}, resume p99 x{p99:.2f}{cpu}")


if __name__ == "__main__":
    main()
