"""SIGKILL a ``wop-langgraph worker`` process at random moments: nothing stuck, nothing applied twice.

Each trial starts real worker processes over the test's database, creates runs and resolves
their gates while the workers drive them, kills one worker with SIGKILL at a random moment
(before a first interrupt, inside a resumed node, between a claim and its delivery), then
starts a fresh worker. Every run must end completed with the decision that was answered 200,
with one ``interrupt.requested`` and one ``interrupt.resolved`` per key.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.host._crash_graphs import WORKFLOW, WORKFLOWS
from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, payloads
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import InterruptAlreadyResolved

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("WOP_CRASH_TRIALS", "6"))
RUNS_PER_TRIAL = 3


@contextmanager
def worker(db_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """A ``wop-langgraph worker`` process with short leases, killed (if alive) afterwards."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [
        sys.executable,
        "-m",
        "wop_langgraph.cli",
        "worker",
        "tests.host._crash_graphs:WORKFLOWS",
        "--db",
        db_url,
        "--concurrency",
        "2",
        "--poll-seconds",
        "0.2",
        "--sweep-seconds",
        "0.5",
        "--lease-seconds",
        "3",
    ]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def settle(host: WopHost, run_ids: list[str], timeout: float = 60.0) -> None:
    """Answer every gate that waits and wait until every run completed (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        statuses = {rid: host.snapshot(rid)["status"] for rid in run_ids}
        if all(s == "completed" for s in statuses.values()):
            return
        assert time.monotonic() < deadline, f"runs stuck: {statuses}"
        for rid, status in statuses.items():
            if status == "waiting-approval":
                with suppress(InterruptAlreadyResolved):
                    host.resolve(rid, "review", {"action": "accept"}, ALICE, wait=False)
        time.sleep(0.1)


def test_random_sigkills_of_a_worker_leave_nothing_stuck(make_host: HostFactory, db_url: str) -> None:
    host = make_host()
    host.register(WORKFLOW, WORKFLOWS[WORKFLOW])
    rng = random.Random(20261202)
    run_ids: list[str] = []
    answered: set[str] = set()
    for _ in range(TRIALS):
        with worker(db_url) as victim:
            batch = [
                host.create_run(WORKFLOW, {}, owner=ALICE, wait=False)["runId"] for _ in range(RUNS_PER_TRIAL)
            ]
            run_ids += batch
            started = time.monotonic()  # the worker process is up once it takes a run
            while all(host.snapshot(rid)["status"] == "pending" for rid in batch):
                assert time.monotonic() - started < 120, "the worker never took a run"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.0))
            for rid in batch:
                if host.pending_interrupts(rid):
                    host.resolve(rid, "review", {"action": "accept"}, ALICE, wait=False)
                    answered.add(rid)
            time.sleep(rng.uniform(0.0, 0.6))
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
    with worker(db_url):
        settle(host, run_ids)
    for rid in run_ids:
        docs = events(host, rid)
        requested = Counter(p["key"] for p in payloads(docs, "interrupt.requested"))
        resolved = Counter(p["key"] for p in payloads(docs, "interrupt.resolved") if "key" in p)
        assert set(requested.values()) == {1}, requested
        assert len(payloads(docs, "interrupt.resolved")) == 1
        assert not resolved or set(resolved.values()) == {1}
        (completed,) = payloads(docs, "run.completed")
        assert completed["outputs"]["log"] == ["write", "review", "publish"]
        assert completed["outputs"]["decision"] == "accept"
        assert docs[-1]["type"] == "run.completed"
    assert answered, "the trials never resolved a gate before the kill"


def test_a_server_killed_during_post_runs_loses_no_acknowledged_run(
    db_url: str, make_host: HostFactory
) -> None:
    """SIGKILL the server while clients create runs: every run answered 201 ends or waits after restart."""
    import httpx

    from tests.server.conftest import ALICE as ALICE_HEADERS
    from tests.server.process import served_process

    acknowledged: list[str] = []
    rng = random.Random(7)
    for _ in range(2):
        with served_process(db_url, target="tests.host._crash_graphs:WORKFLOWS") as (base, process):
            stop = time.monotonic() + rng.uniform(0.3, 1.5)

            def create(stop: float = stop, base: str = base) -> None:
                with httpx.Client(base_url=base, timeout=10) as client:
                    while time.monotonic() < stop + 5:
                        try:
                            response = client.post(
                                "/runs", json={"workflowId": WORKFLOW}, headers=ALICE_HEADERS
                            )
                        except httpx.TransportError:
                            return  # the server died under this request: no 201, no promise
                        if response.status_code == 201:
                            acknowledged.append(response.json()["runId"])

            clients = [threading.Thread(target=create) for _ in range(4)]
            for client in clients:
                client.start()
            time.sleep(max(0.0, stop - time.monotonic()))
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            for client in clients:
                client.join(30)
    assert acknowledged
    host = make_host()
    host.register(WORKFLOW, WORKFLOWS[WORKFLOW])
    with worker(db_url):
        settle(host, acknowledged, timeout=120)
    for rid in acknowledged:
        docs = events(host, rid)
        assert len(payloads(docs, "interrupt.requested")) == 1
        assert docs[-1]["type"] == "run.completed"
