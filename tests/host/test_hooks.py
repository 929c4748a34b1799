"""WopHost's public hooks: interrupt requested (in its transaction), run rested, run ended."""

from __future__ import annotations

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import start
from wop_langgraph.host import WopHost
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.interrupts import InterruptRecord, interrupts_of_run

ACCEPT = {"action": "accept"}


def test_hooks_see_a_request_each_rest_and_the_end(host: WopHost) -> None:
    requested: list[tuple[str, str, int]] = []
    rested: list[str] = []
    ended: list[tuple[str, str]] = []

    def on_requested(conn: Connection, record: InterruptRecord) -> None:
        # Called inside the recording transaction: the row is visible on ``conn`` already.
        seen = [r.interrupt_id for r in interrupts_of_run(conn, record.run_id)]
        requested.append((record.run_id, record.node_id, seen.count(record.interrupt_id)))

    host.on_interrupt_requested(on_requested)
    host.on_run_rested(rested.append)
    host.on_run_ended(lambda run_id, status: ended.append((run_id, status)))

    run_id, snapshot = start(host, approval_graph())
    assert snapshot["status"] == "waiting-approval"
    assert requested == [(run_id, "review", 1)]
    assert rested == [run_id]
    assert ended == []

    host.resolve(run_id, "review", ACCEPT, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
    assert ended == [(run_id, "completed")]
    assert rested == [run_id, run_id]
    assert len(requested) == 1


def test_a_cancellation_is_an_end(host: WopHost) -> None:
    ended: list[tuple[str, str]] = []
    host.on_run_ended(lambda run_id, status: ended.append((run_id, status)))
    run_id, _ = start(host, approval_graph())
    host.cancel(run_id)
    assert ended == [(run_id, "cancelled")]
