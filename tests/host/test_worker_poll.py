"""How idle workers find work: local wake-ups at once, one poller per pool for the rest.

An idle pool must not cost a query per worker thread per interval (10,000 suspended runs made
that a measurable share of a core): its worker threads sleep until woken, and one poller reads
the queue for what no wake-up announced, such as a run whose worker died.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import HostFactory


def until(predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    """Wait (bounded) until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_local_enqueue_wakes_a_worker_without_any_poll(make_host: HostFactory) -> None:
    host = make_host()
    host.register("approval", approval_graph())
    host.start_workers(2, poll_seconds=0, sweep_seconds=0)  # no poller: only the wake-up can help
    try:
        run_id = host.create_run("approval", {}, owner=ALICE, wait=False)["runId"]
        until(lambda: host.snapshot(run_id)["status"] == "waiting-approval", what="the gate")
    finally:
        host.stop_workers()


def test_a_run_whose_lease_ran_out_is_taken_by_the_poller(make_host: HostFactory) -> None:
    # A worker that claimed the run and died: no enqueue and no notification announce the run
    # again, so only the poller can find it once the lease has run out.
    dead = make_host(lease_seconds=0.5)
    dead.register("approval", approval_graph())
    run_id = dead.create_run("approval", {}, owner=ALICE, wait=False)["runId"]
    assert dead.executor.claim(run_id) is not None
    host = make_host()
    host.register("approval", approval_graph())
    host.start_workers(3, poll_seconds=0.1, sweep_seconds=0)
    try:
        until(lambda: host.snapshot(run_id)["status"] == "waiting-approval", what="the takeover")
    finally:
        host.stop_workers()


def test_idle_workers_leave_the_polling_to_one_poller(make_host: HostFactory) -> None:
    host = make_host()
    host.register("approval", approval_graph())
    readers: list[str] = []
    guard = threading.Lock()
    look = host.executor.has_claimable

    def recorded() -> bool:
        with guard:
            readers.append(threading.current_thread().name)
        return look()

    host.executor.has_claimable = recorded  # type: ignore[method-assign]

    def seen() -> list[str]:
        with guard:
            return list(readers)

    workers = {f"wop-worker-{i}" for i in range(4)}
    host.start_workers(4, poll_seconds=0.05, sweep_seconds=0)
    try:
        # Each worker looks once as it starts, finds nothing and sleeps until woken.
        until(lambda: workers <= set(seen()), what="every worker's first look")
        with guard:
            readers.clear()
        until(lambda: seen().count("wop-poll") >= 5, what="five idle polls")
        assert set(seen()) == {"wop-poll"}
    finally:
        host.stop_workers()


def test_a_lease_of_a_dead_local_process_is_reaped_and_announced(make_host: HostFactory) -> None:
    # A process of this machine died holding a long lease (a restart after a crash): the reap
    # frees it at once and announces the run, so an idle worker that never polls drives it.
    import subprocess
    import sys

    from sqlalchemy import update

    from wop_langgraph.store.run_tables import runs_table

    host = make_host()
    host.register("approval", approval_graph())
    run_id = host.create_run("approval", {}, owner=ALICE, wait=False)["runId"]
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_owner = host.executor.owner.rsplit(":", 2)[0] + f":{int(gone.stdout)}:0123456789ab"
    with host.engine.begin() as conn:  # leased for an hour to the exited process
        conn.execute(
            update(runs_table)
            .where(runs_table.c.run_id == run_id)
            .values(lease_owner=dead_owner, lease_until=host.clock() + timedelta(hours=1))
        )
    host.start_workers(2, poll_seconds=0, sweep_seconds=0)  # no poller: only an announcement helps
    try:
        time.sleep(0.3)
        assert host.snapshot(run_id)["status"] == "pending"  # the lease still holds it
        assert host.executor.reap_dead_local_leases() == 1
        until(lambda: host.snapshot(run_id)["status"] == "waiting-approval", what="the reaped run")
    finally:
        host.stop_workers()
