"""A caller that waits drives its run itself, on the lease it took where the run was queued.

``create_run(wait=True)`` inserts the run leased to its process, and a deciding
``resolve(wait=True)`` takes the lease in the transaction that queues the run. These tests hold
that path to the queue's promises: the lease is renewed from the moment it is taken (a slow
commit does not let a worker of another host drive the run too), a failed create leaves no
lease held, and the answers are the run's state at rest.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Connection, select

from tests.host._graphs import ALICE, WORKFLOW, approval_graph, count
from tests.host._support import HostFactory
from wop_langgraph.store.run_tables import runs_table

ACCEPT = {"action": "accept", "feedback": "ship it"}


def test_a_slow_create_keeps_its_lease_from_workers_of_another_host(make_host: HostFactory) -> None:
    # The creator's lease lasts 0.6 s and its transaction takes 1 s more after the lease was
    # taken: without renewal from that moment, the other host's workers would claim the run at
    # commit and drive it beside the creator.
    creator = make_host(lease_seconds=0.6)
    creator.register(WORKFLOW, approval_graph())
    other = make_host()
    other.register(WORKFLOW, approval_graph())
    other.start_workers(2, poll_seconds=0.05, sweep_seconds=0)
    try:

        def slow_commit(conn: Connection, snapshot: dict[str, Any]) -> None:
            time.sleep(1.0)

        snapshot = creator.create_run(WORKFLOW, {"log": []}, owner=ALICE, on_commit=slow_commit)
        assert snapshot["status"] == "waiting-approval", snapshot
        assert count("write") == 1
        assert count("review:run") == 1
    finally:
        other.stop_workers()


def test_waiting_answers_are_the_runs_state_at_rest(make_host: HostFactory) -> None:
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    assert created == host.snapshot(created["runId"])
    assert created["currentNodeId"] == "review"

    result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
    assert result["status"] == "completed" == host.snapshot(created["runId"])["status"]
    assert count("publish") == 1


def test_a_failed_create_holds_no_lease_and_stores_nothing(make_host: HostFactory) -> None:
    host = make_host()
    host.register(WORKFLOW, approval_graph())

    def refuse(conn: Connection, snapshot: dict[str, Any]) -> None:
        raise RuntimeError("the caller's own write failed")

    try:
        host.create_run(WORKFLOW, {"log": []}, owner=ALICE, on_commit=refuse)
    except RuntimeError:
        pass
    else:  # pragma: no cover - the assertion below explains
        raise AssertionError("on_commit's failure must reach the caller")
    with host.engine.connect() as conn:
        assert conn.execute(select(runs_table.c.run_id)).first() is None
    assert host.executor.driving == frozenset()  # the lease it took for the drive is gone too
    assert count("write") == 0
