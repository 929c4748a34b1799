"""The benchmarks still run (tiny sizes): figures come from running them by hand, not from tests.

Each script is run as a subprocess with sizes that finish in seconds; a test asserts it exits 0
and prints its table (timings are not asserted: targets belong to full runs, see
benchmarks/README.md). PostgreSQL parts run when ``WOP_TEST_POSTGRES_URL`` is set.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
POSTGRES = os.environ.get("WOP_TEST_POSTGRES_URL")
pytestmark = pytest.mark.slow


def _run(script: str, *args: str) -> str:
    path = os.pathsep.join(p for p in (str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_saver_benchmark_runs_every_saver_and_reports_ratios() -> None:
    out = _run("saver.py", "--iterations", "2", "--rounds", "1", "--warmup", "0")
    for name in ("SQLModelSaver[sqlite] / SqliteSaver", "SQLModelSaver[sqlite]+recorder / SqliteSaver"):
        assert name in out
    if POSTGRES:
        assert "SQLModelSaver[postgres]+recorder / PostgresSaver" in out


def test_postgres_costs_benchmark_reports_every_shape() -> None:
    out = _run("postgres_costs.py", "--operations", "5", "--rounds", "1", "--warmup", "1")
    if not POSTGRES:
        assert out == ""  # nothing to measure without a server (it says so on stderr)
        return
    for shape in ("select 1", "insert, autocommit", "begin, 2 inserts, commit", "2 inserts as one CTE"):
        assert shape in out


def test_append_benchmark_reports_every_mode() -> None:
    out = _run("append.py", "--operations", "50", "--rounds", "1", "--warmup", "0")
    for mode in ("append1", "append3", "once", "in_tx", "scores"):
        assert f"sqlite   {mode}" in out
    if POSTGRES:
        assert "postgres append1" in out


def test_full_path_benchmark_reports_ratios_and_a_profile() -> None:
    out = _run(
        "full_path.py", "--iterations", "2", "--rounds", "1", "--warmup", "0", "--profile",
        "--profile-cycles", "1", "--top", "3", "--split", "--split-cycles", "1", "--paired", "3",
    )  # fmt: skip
    assert "WopHost[sqlite] / LangGraph+SqliteSaver" in out
    assert "LangGraph+SQLModelSaver[sqlite] / LangGraph+SqliteSaver" in out  # the floor
    assert "headline: the graph a LangGraph user writes" in out and "load average" in out
    assert "WopHost[sqlite] node API / LangGraph+SqliteSaver node API" in out  # the secondary line
    assert "profile: WopHost[sqlite]" in out and "statements/cycle" in out
    pairs = out[out.index("paired: 3 cycles a side") :]
    headline = r"WopHost\[sqlite\] / LangGraph\+SqliteSaver +[\d.]+x  \([\d.]+ vs [\d.]+ ms a cycle"
    assert re.search(headline, pairs)
    split = out[out.index("where a cycle's time goes") :]
    assert "WopHost[sqlite]" in split and "db wait, caller" in split
    if POSTGRES:
        assert "WopHost[postgres] / LangGraph+PostgresSaver" in out
        assert "profile: WopHost[postgres]" in out
        assert "round trips/cycle" in out and "pipelined statements/cycle" in out  # held saves
        rows = split.splitlines()
        (row,) = [line for line in rows if "WopHost[postgres] " in line and "node API" not in line]
        assert float(row.split()[-2]) > 0  # the caller waited on PostgreSQL


def test_http_engine_benchmark_reports_resolve_and_create_latency() -> None:
    small = ("--clients", "2", "--rounds", "1", "--creates", "1", "--sleep", "0.1")
    out = _run("http_engine.py", *small)
    assert "sqlite resolve" in out and "sqlite POST /runs" in out
    assert "server cpu" in out and "client cpu" in out
    # The server's CPU per request, split into user and system time, adds up to the total.
    (resolve,) = [line for line in out.splitlines() if line.startswith("sqlite resolve")]
    cells = resolve.split()
    total, (user, system) = float(cells[-3]), map(float, cells[-2].split("/"))
    assert abs(user + system - total) <= 0.11
    if POSTGRES:
        assert "postgres resolve" in out and "postgres POST /runs" in out
    assert "sqlite resolve" in _run("http_engine.py", *small, "--backend", "sqlite", "--client", "httpx")


@pytest.mark.skipif(not POSTGRES, reason="scale_out.py needs WOP_TEST_POSTGRES_URL")
def test_scale_out_benchmark_reports_the_ratio_of_worker_processes() -> None:
    out = _run(
        "scale_out.py", "--runs", "4", "--rounds", "1", "--step-sleep", "0.02", "--concurrency", "1",
        "--processes", "1", "2",
    )  # fmt: skip
    assert "2 / 1 processes:" in out


def test_idle_cost_benchmark_reports_worker_cpu_and_resolve_latency() -> None:
    out = _run(
        "idle_cost.py", "--small", "2", "--large", "5", "--samples", "2", "--idle-seconds", "0.5",
        "--settle", "0.5", "--setup-workers", "1",
    )  # fmt: skip
    assert "resolve p50 ratio 5 / 2 suspended" in out
    assert "idle worker process" in out


def test_sse_streams_benchmark_reports_latency_with_streams_open() -> None:
    out = _run(
        "sse_streams.py", "--streams", "3", "--runs", "1", "--requests", "3", "--rounds", "1",
        "--settle", "0.2",
    )  # fmt: skip
    assert "sqlite discovery" in out and "sqlite snapshot" in out
    if POSTGRES:
        assert "postgres discovery" in out and "postgres snapshot" in out


def test_tokens_benchmark_reports_every_mode_against_a_baseline(tmp_path: Path) -> None:
    baseline = tmp_path / "tokens_before.py"
    baseline.write_text((REPO / "src/wop_langgraph/tokens.py").read_text())
    out = _run("tokens.py", "--rounds", "1", "--tokens", "50", "--warmup", "5", "--baseline", str(baseline))
    for implementation in ("current", "baseline"):
        for mode in ("valid", "valid_distinct", "bad_mac", "oversized", "hmac.digest"):
            assert f"{implementation:<15} {mode:<14}" in out
    assert "current / baseline valid_distinct" in out and "one hmac.digest of its signed text" in out
    assert "target: valid_distinct >= 100,000/s" in out


def test_langgraph_api_benchmark_reports_each_backend() -> None:
    """Every server in every round: a rate per round (each server's steady window, see
    ``measure_round``)."""
    out = _run("langgraph_api.py", "--clients", "2", "--cycles", "3", "--rounds", "2")
    assert "wop sqlite" in out and "resume p99" in out and "CPU ms/cycle" in out
    assert "load average" in out and "x 2 rounds" in out
    assert re.search(r"wop sqlite\s+12\s", out), out  # 2 clients x 3 cycles x 2 measured rounds
    assert re.search(r"wop sqlite: cycles/s by round [\d.]+ [\d.]+$", out, re.MULTILINE), out
    if POSTGRES:
        assert "wop postgres" in out


def test_langgraph_api_rates_a_round_over_its_steady_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round's rate and latencies count the cycles that ended after every client had ended its
    first one and before the first client stopped; a round without such a window counts whole."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # (for the script's own imports)
    # Loaded under another name: ``langgraph_api`` is also the LangGraph server's package.
    spec = importlib.util.spec_from_file_location(
        "bench_langgraph_api", REPO / "benchmarks" / "langgraph_api.py"
    )
    assert spec is not None and spec.loader is not None
    langgraph_api = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, langgraph_api)  # (its dataclasses look it up)
    spec.loader.exec_module(langgraph_api)
    round_ = langgraph_api._Round()
    # Started at 0: client A ends cycles at 1, 2 and 3 s and stops; B ends its first at 2.5 s.
    round_.ended = [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (2.5, 40.0), (3.5, 50.0)]
    round_.first, round_.stopped = [1.0, 2.5], [3.0, 4.0]
    assert round_.window(0.0) == ([30.0], 0.5)
    alone = langgraph_api._Round()  # one client, one cycle: the whole round
    alone.ended, alone.first, alone.stopped = [(1.0, 10.0)], [1.0], [1.0]
    assert alone.window(0.0) == ([10.0], 1.0)


def test_langgraph_api_profile_lists_the_server_functions_per_cycle() -> None:
    out = _run("langgraph_api_profile.py", "--clients", "1", "--cycles", "2", "--top", "5", "--match", "wop/")
    assert "2 cycles, 0 errors" in out and "ms/cycle" in out
    assert "wop/" in out.split("function (per cycle)", 1)[1]


def test_receipts_benchmark_reports_sign_verify_and_a_large_run() -> None:
    out = _run("receipts.py", "--rounds", "1", "--receipts", "50", "--events", "300")
    assert "sign" in out and "verify" in out and "verify of a 300-event run" in out


def test_pg_begin_benchmark_pairs_the_two_connection_classes() -> None:
    server = ["--postgres", POSTGRES] if POSTGRES else []
    out = _run("pg_begin.py", "--cycles", "2", "--warmup", "1", *server)
    if not POSTGRES:
        assert out == ""  # nothing to measure without a server (it says so on stderr)
        return
    assert "psycopg's  connections" in out and "store's    connections" in out and "paired ratios" in out
    control = _run("pg_begin.py", "--cycles", "2", "--warmup", "1", "--control", "--postgres", POSTGRES)
    assert "A/A control" in control and "psycopg's" not in control


@pytest.mark.parametrize("change", ["held-rows", "rest-rides", "create-held"])
def test_cycle_changes_benchmark_pairs_a_cycle_before_and_with_a_change(change: str) -> None:
    """Each database's paired ratio, and what the change removes a cycle: less with it (the
    switch works), the same on both sides of the A/A control."""
    server = ["--postgres", POSTGRES] if POSTGRES else []
    out = _run("cycle_changes.py", "--change", change, "--cycles", "2", "--warmup", "1", *server)
    lines = [line for line in out.splitlines() if "paired ratios" in line]
    databases = ["sqlite", "postgres"]
    measured = {"held-rows": databases, "rest-rides": ["postgres"], "create-held": databases}[change]
    assert [line.split()[0] for line in lines] == [b for b in measured if POSTGRES or b == "sqlite"], out
    for line in lines:
        before, after = (float(n) for n in line.split(" a cycle ")[-1].split(";")[0].split(" / "))
        assert after < before, line
    if POSTGRES or change != "rest-rides":
        control = _run(
            "cycle_changes.py", "--change", change, "--cycles", "2", "--warmup", "1", "--control", *server
        )
        assert "A/A control" in control
        both = control.split(" a cycle ")[-1].split(";")[0].split(" / ")
        assert both[0] == both[1], control


def test_chain_overhead_benchmark_reports_chain_on_and_off_ratios() -> None:
    """Same tree, chain on and off: every workload has its wall and CPU ratios, then its paired
    ratio; the run checks with a probe append after each switch that the chain is on or off as
    switched."""
    args = ["--rounds", "2", "--operations", "10", "--warmup", "2", "--cycles", "1", "--cycles-warmup", "1"]
    args += ["--paired", "3"]
    out = _run("chain_overhead.py", *args, *(["--postgres", POSTGRES] if POSTGRES else []))
    backends = ["sqlite", "postgres"] if POSTGRES else ["sqlite"]
    sections = out.split("  paired: ")
    assert len(sections) == len(backends) + 1, out
    for backend, (rounds, paired) in zip(backends, itertools.pairwise(sections), strict=True):
        for workload in ("append1", "append3", "once", "in_tx", "scores", "full_path"):
            assert re.search(rf"{backend} {workload}\s+[\d.]+\s+[\d.]+\s+[\d.]+x\s+[\d.]+x", rounds), out
            assert re.search(rf"{backend} {workload}\s+[\d.]+\s+[\d.]+\s+[\d.]+x\s+\(us a call", paired), out
    assert "load average" in out


def test_chain_overhead_benchmark_times_the_chains_parts_where_they_run() -> None:
    """``--parts``: each part of the chain, timed in ``in_tx``'s appends, with its calls; the
    chain-less side's serialisation beside them."""
    args = ["--rounds", "1", "--operations", "10", "--warmup", "2", "--paired", "0", "--skip-full-path"]
    out = _run("chain_overhead.py", *args, "--parts", "3")
    assert re.search(r"parts: sqlite in_tx, 3 transactions a side .* timer's own \d+ ns", out), out
    parts = ("appended_digest", "payload's check", "astral-key check", "SHA-256", "chain_raw", "json.dumps")
    for part in parts:
        assert re.search(rf"{re.escape(part)}.*\s\d+ ns  \(\d+ calls\)", out), (part, out)


def test_chain_overhead_benchmark_reports_ratios_against_a_baseline_tree() -> None:
    out = _run(
        "chain_overhead.py",
        "--baseline-src",
        str(REPO / "src"),
        "--pairs",
        "1",
        "--operations",
        "20",
        "--skip-full-path",
    )
    assert "append sqlite append1" in out and "x  (" in out


def test_receipt_resolve_benchmark_reports_cpu_per_resolve_against_a_baseline_tree() -> None:
    args = ["--baseline-src", str(REPO / "src"), "--pairs", "1", "--resolves", "5", "--warmup", "1"]
    out = _run("receipt_resolve.py", *args)
    assert "sqlite   baseline   cpu" in out and "cpu this tree / baseline:" in out
    out = _run("receipt_resolve.py", *args, "--statements")
    assert "statements" in out


def test_served_instructions_benchmark_counts_a_served_resolve() -> None:
    """Under callgrind (six counts with a baseline tree take ~4 minutes: this tree alone)."""
    out = _run("served_instructions.py", "--resolves", "2", "--warmup", "1", "--idle", "3")
    found = re.search(r"this tree\s+([\d.]+) M  \(idle: ([\d.]+) M a second", out)
    assert found is not None and float(found.group(1)) > 0.5, out
