"""A pass whose interrupt is the last thing it records puts the run to rest in that transaction.

When the interrupting task is the only one of the pass still running (a synchronous stream
starts every task of a step before any runs, and LangGraph ends the pass with the step), the
interrupt's transaction also takes the run out of the queue and drops the lease, as the rest
after the stream would: one commit fewer. It changes nothing while a resolution awaits delivery
or more work was queued; then the pass settles as ever. With a sibling task still running, the
rest waits for the stream's end.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.pool import Pool

from tests.host import _graphs
from tests.host._graphs import ALICE, State, approval_graph, fan_in_graph
from tests.host._support import HostFactory, events
from tests.host.test_engine import until
from tests.round_trips import round_trips
from wop_langgraph.host.driver import GraphDriver
from wop_langgraph.nodes import request_approval
from wop_langgraph.store.engine import reading
from wop_langgraph.store.run_tables import runs_table

ACCEPT = {"action": "accept"}


@contextmanager
def sent_statements(db_url: str) -> Iterator[list[str]]:
    """The statements and transaction commands sent meanwhile, in order (``BEGIN``, ``COMMIT``
    included): psycopg's on PostgreSQL, SQLite's trace of connections opened meanwhile."""
    if not db_url.startswith("sqlite"):
        with round_trips() as sent:
            yield sent
        return
    sent = []

    def trace(dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.set_trace_callback(lambda sql: sent.append(" ".join(sql.split())))

    event.listen(Pool, "connect", trace)
    try:
        yield sent
    finally:
        event.remove(Pool, "connect", trace)


def _is_rest(statement: str) -> bool:
    """The rest at the run's oldest pending interrupt (``_rest_unless_work_statement``)."""
    return statement.startswith("UPDATE wop_runs") and "oldest.kind" in statement


def test_the_interrupts_transaction_puts_the_run_to_rest(make_host: HostFactory, db_url: str) -> None:
    with sent_statements(db_url) as sent:  # (before the host: SQLite traces connections it opens)
        host = make_host()
        host.register("approval", approval_graph())
        snap = host.create_run("approval", {}, owner=ALICE)
    assert (snap["status"], snap["currentNodeId"]) == ("waiting-approval", "review")
    # (on PostgreSQL the interrupt's insert is a WITH of the statement that logs it)
    recorded = max(i for i, s in enumerate(sent) if "INSERT INTO wop_interrupts" in s)
    after = sent[recorded:]
    commit = next(i for i, s in enumerate(after) if s.upper().startswith("COMMIT"))
    # The rest goes before the interrupt's COMMIT, and nothing writes the run after it.
    assert [s for s in after[:commit] if _is_rest(s)], after
    assert not [s for s in after[commit:] if s.startswith(("UPDATE", "INSERT", "WITH"))], after
    with reading(host.engine) as conn:
        row = conn.execute(select(runs_table).where(runs_table.c.run_id == snap["runId"])).one()
    assert (row.status, row.queued_at, row.lease_owner) == ("waiting-approval", None, None)
    assert host.run_until_idle() == 0  # out of the queue
    assert host.resolve(snap["runId"], "review", ACCEPT, ALICE)["status"] == "completed"


def test_a_resolution_committed_before_the_interrupts_transaction_is_delivered(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``left`` suspends; while ``right`` still runs, ``left`` is answered (the run is queued
    again). ``right``'s interrupt is then the last of the pass, but its transaction leaves the
    run queued: the pass goes again and delivers the answer, and the run waits on ``right``."""
    _graphs.reset_counts()
    host = make_host()
    run: list[str] = []

    def gate(name: str) -> Any:
        def node(state: State) -> State:
            if name == "right" and _graphs.count("answered") == 0:
                until(lambda: bool(run) and [i.node_id for i in host.pending_interrupts(run[0])] == ["left"])
                time.sleep(0.2)  # and the stream has told of left's suspension
                host.resolve(run[0], "left", ACCEPT, ALICE, wait=False)
                _graphs.bump("answered")
            decision = request_approval(f"art-{name}", "document", f"Approve {name}?")
            _graphs.bump(f"{name}:past")
            return {"log": [f"{name}:{decision.action}"]}

        return node

    host.register("parallel", fan_in_graph(gate))
    tried: list[tuple[str, list[str], Any]] = []
    original = GraphDriver._rest_with_interrupt

    def spied(self: GraphDriver, conn: Any, batch: Any, resting: Any = None) -> Any:
        running = list(self._tasks.names.values()) if self._tasks is not None else []
        tried.append((batch.task_path, running, original(self, conn, batch, resting)))
        return tried[-1][2]

    monkeypatch.setattr(GraphDriver, "_rest_with_interrupt", spied)
    snap = host.create_run("parallel", {}, owner=ALICE, wait=False)
    run.append(snap["runId"])
    host.run_until_idle()
    # right's interrupt was the last task of the pass, and its rest changed nothing.
    assert ("~__pregel_pull, right", ["right"], None) in tried, tried
    assert _graphs.count("left:past") == 1 and _graphs.count("right:past") == 0
    after = host.snapshot(run[0])
    assert (after["status"], after["currentNodeId"]) == ("waiting-approval", "right")
    assert [i.node_id for i in host.pending_interrupts(run[0])] == ["right"]
    assert [d.get("nodeId") for d in events(host, run[0]) if d["type"] == "interrupt.resolved"] == ["left"]
    assert host.resolve(run[0], "right", ACCEPT, ALICE)["status"] == "completed"
    assert _graphs.count("join") == 1


def test_with_a_sibling_still_running_the_rest_waits_for_the_streams_end(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``left`` suspends while ``right`` still runs: its transaction leaves the run in the
    queue; the run rests once the pass ends, at its oldest pending interrupt."""
    _graphs.reset_counts()
    host = make_host()

    def branch(name: str) -> Any:
        def node(state: State) -> State:
            if name == "right":
                time.sleep(0.3)
                return {"log": ["right"]}
            decision = request_approval(f"art-{name}", "document", f"Approve {name}?")
            return {"log": [f"{name}:{decision.action}"]}

        return node

    host.register("fan", fan_in_graph(branch))
    tried: list[tuple[str, Any]] = []
    original = GraphDriver._rest_with_interrupt

    def spied(self: GraphDriver, conn: Any, batch: Any, resting: Any = None) -> Any:
        tried.append((batch.task_path, original(self, conn, batch, resting)))
        return tried[-1][1]

    monkeypatch.setattr(GraphDriver, "_rest_with_interrupt", spied)
    snap = host.create_run("fan", {}, owner=ALICE)
    assert tried == [("~__pregel_pull, left", None)]
    assert (snap["status"], snap["currentNodeId"]) == ("waiting-approval", "left")
    ends = [d.get("nodeId") for d in events(host, snap["runId"]) if d["type"] == "node.completed"]
    assert ends == ["right"]  # logged before the run rested
    assert host.resolve(snap["runId"], "left", ACCEPT, ALICE)["status"] == "completed"
