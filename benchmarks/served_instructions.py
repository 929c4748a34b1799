"""Instructions a served resolve costs the server, counted by callgrind: the same figure on a
quiet machine and a busy one, where HTTP timings here swing by 30% from run to run.

For each tree (this one; with ``--baseline-src``, that one too, e.g. a checkout of an older
commit, each with its own ``benchmarks/``): a fresh database holds suspended runs
(``gate_then_sleep``, driven to its gate in process), then ``wop-langgraph serve --workers 0``
runs under ``valgrind --tool=callgrind`` while ``--warmup`` resolves and then ``--resolves``
more are sent over HTTP, one at a time (``POST /runs/{id}/interrupts/approve``, what
``http_engine.py`` times); the same again with no measured resolve. The difference of the two
totals, divided by ``--resolves``, is the server's instructions per resolve: start-up and
shutdown cancel out. What the server does by the clock (a scan every second) does not, and
valgrind runs the requests ~50x slower than the clock: a third count, the server idle for
``--idle`` seconds, gives that rate (instructions per idle second, printed), and what it
would have done over the measured requests' seconds is subtracted. No worker drives the
resolved runs (``--workers 0``): this is the request alone. Under valgrind, OpenSSL computes
SHA-256 in software (the SHA extensions are not emulated), so hashing counts more than it
costs on such a CPU::

    python benchmarks/served_instructions.py --resolves 100
    python benchmarks/served_instructions.py --backend postgres \\
        --postgres postgresql://postgres@127.0.0.1:5432/test --baseline-src /path/to/old/src
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
_COLLECTED = re.compile(r"Collected : (\d+)")


def child(src: Path, backend: str, postgres: str | None, resolves: int, warmup: int, idle: float) -> None:
    """Serve ``src`` under callgrind, wait ``idle`` seconds, send ``warmup + resolves``
    resolves; print its total and the seconds from the server's first answer to its stop."""
    sys.path[:0] = [str(src), str(src.parent / "benchmarks")]
    os.environ["WOP_BENCH_SLEEP"] = "0"
    from _graphs import WORKFLOWS
    from _harness import AUTH, _env, database, free_port
    from http_engine import LightClient
    from wop_langgraph.host import Principal, WopHost
    from wop_langgraph.protocol.ids import project_id

    owner = Principal("acme", "alice", frozenset({"runs:create", "runs:read", "approvals:respond"}))
    with database(backend, postgres) as url, tempfile.TemporaryDirectory(prefix="wop-callgrind-") as folder:
        host = WopHost.from_url(url)
        host.register("gate_then_sleep", WORKFLOWS["gate_then_sleep"])
        count = warmup + resolves
        created = [host.create_run("gate_then_sleep", {"n": 0}, owner=owner) for _ in range(count)]
        runs = [snapshot["runId"] for snapshot in created]
        if runs and host.snapshot(runs[0])["status"] != "waiting-approval":
            raise SystemExit(f"a run did not suspend: {host.snapshot(runs[0])!r}")
        host.saver.close()
        host.engine.dispose()
        port = free_port()
        out = Path(folder) / "callgrind.out"
        env = _env({"WOP_BENCH_SLEEP": "0", "WOP_SWEEP_INTERVAL_SECONDS": "0", "PYTHONHASHSEED": "0"})
        env["PYTHONPATH"] = os.pathsep.join([str(src), env["PYTHONPATH"]])
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        command += ["-m", "wop_langgraph.cli", "serve", "_graphs:WORKFLOWS", "--db", url, "--port", str(port)]
        command += ["--log-level", "warning", "--workers", "0"]
        log = Path(folder) / "valgrind.log"
        with log.open("w") as err:
            server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
            try:
                _wait_until_served(port, server)
                started = time.monotonic()
                time.sleep(idle)
                client = LightClient(f"http://127.0.0.1:{port}", AUTH)
                for run_id in runs:
                    path = f"/runs/{project_id(run_id)}/interrupts/approve"
                    status, body = client.post(path, {"resumeValue": {"action": "accept"}})
                    if status != 200:
                        raise SystemExit(f"resolve answered {status}: {body.decode(errors='replace')}")
                phase = time.monotonic() - started
            finally:
                server.send_signal(signal.SIGINT)
                server.wait(600)
        found = _COLLECTED.search(log.read_text())
        if found is None:
            raise SystemExit(f"callgrind printed no total:\n{log.read_text()[-2000:]}")
        print(f"instructions {found.group(1)} seconds {phase:.3f}")


def _wait_until_served(port: int, server: subprocess.Popen[bytes], seconds: float = 900) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/.well-known/openwop")
            connection.getresponse().read()
            connection.close()
            return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the server did not answer within {seconds:g} s")


def _total(src: Path, args: argparse.Namespace, resolves: int, idle: float = 0) -> tuple[int, float]:
    """callgrind's total for a server of ``src`` that idled ``idle`` seconds and answered
    ``warmup + resolves`` resolves, and the seconds that took."""
    command = [sys.executable, __file__, "--child", "--src", str(src), "--backend", args.backend]
    command += ["--resolves", str(resolves), "--warmup", str(args.warmup), "--idle", str(idle)]
    command += ["--postgres", args.postgres] if args.postgres else []
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"^instructions (\d+) seconds ([\d.]+)$", proc.stdout, re.MULTILINE)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"the count for {src} failed:\n{proc.stderr[-3000:]}")
    return int(found.group(1)), float(found.group(2))


def per_resolve(src: Path, args: argparse.Namespace) -> tuple[float, float]:
    """The server's instructions per resolve of ``src``, its clock's work taken out, and that
    work's instructions per idle second: three counts side by side."""
    with ThreadPoolExecutor(3) as pool:
        measured = pool.submit(_total, src, args, args.resolves)
        empty = pool.submit(_total, src, args, 0)
        idle = pool.submit(_total, src, args, 0, args.idle)
        (total, seconds), (base, base_seconds), (idled, idle_seconds) = (
            measured.result(),
            empty.result(),
            idle.result(),
        )
    rate = max(0.0, (idled - base) / max(idle_seconds - base_seconds, 1e-9))
    return (total - base - rate * (seconds - base_seconds)) / args.resolves, rate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--resolves", type=int, default=100, help="measured resolves (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="resolves before them, in both counts")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres", default=os.environ.get("WOP_TEST_POSTGRES_URL"))
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of the idle count (default 30)")
    parser.add_argument("--baseline-src", type=Path, help="another tree's src/ to count the same way")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--src", type=Path, default=SRC, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.backend == "postgres" and not args.postgres:
        parser.error("--backend postgres needs --postgres URL (or WOP_TEST_POSTGRES_URL)")
    if args.child:
        child(args.src.resolve(), args.backend, args.postgres, args.resolves, args.warmup, args.idle)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: this benchmark counts instructions with callgrind")
    trees = [("this tree", SRC)] + ([("baseline", args.baseline_src.resolve())] if args.baseline_src else [])
    sizes = f"{args.resolves} resolves after {args.warmup}"
    print(f"server instructions per served resolve ({args.backend}, {sizes})")
    figures = {}
    for name, src in trees:
        figures[name], rate = per_resolve(src, args)
        print(f"  {name:10s} {figures[name] / 1e6:8.3f} M  (idle: {rate / 1e6:.2f} M a second; {src})")
    if args.baseline_src:
        print(f"  this tree / baseline: {figures['this tree'] / figures['baseline']:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
