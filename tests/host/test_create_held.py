"""A run created for a caller that drives it, its id minted by the call: its row and
``run.started`` are held by the drive and stored first by the drive's first transaction (the
one that records its first interrupt, or its end), not by a transaction of their own before
the graph starts; a first node that runs longer than ``FLUSH_AFTER_S`` finds them stored on
their own meanwhile. A process killed in the first node leaves nothing stuck: nothing at all
before they were stored, a run that recovery takes over after.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from sqlalchemy import func, select

from tests.host._first_node_child import ALICE, WORKFLOW, first_node_graph
from tests.host._support import HostFactory, events
from wop_langgraph.host import WopHost, held_writes
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.store.run_tables import events_table, runs_table

ROOT = Path(__file__).resolve().parents[2]


class State(TypedDict, total=False):
    n: int
    answer: Any


def _blocking_graph(started: threading.Event, release: threading.Event, seen: list[str]) -> Pregel:
    """``first -> gate``; ``first`` tells its run id and waits for ``release``."""

    def first(state: State) -> State:
        seen.append(get_config()["configurable"]["thread_id"])
        started.set()
        assert release.wait(10), "the test did not release the first node"
        return {"n": 1}

    def gate(state: State) -> State:
        return {"answer": interrupt({"question": "go on?"})}

    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("gate", gate)
    g.add_edge(START, "first")
    g.add_edge("first", "gate")
    g.add_edge("gate", END)
    return g.compile()


def _stored(host: WopHost, run_id: str) -> tuple[Any, int]:
    """The run's row (``None``: not stored) and how many events it has logged."""
    with host.engine.connect() as conn:
        row = conn.execute(select(runs_table).where(runs_table.c.run_id == run_id)).first()
        logged = conn.execute(
            select(func.count()).select_from(events_table).where(events_table.c.run_id == run_id)
        ).scalar_one()
    return row, int(logged)


def _create_in_thread(host: WopHost, **options: Any) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []

    def create() -> None:
        try:
            answers.append(host.create_run("blocking", {"n": 0}, owner=ALICE, **options))
        except BaseException as exc:  # handed to the test
            answers.append(exc)

    thread = threading.Thread(target=create)
    thread.start()
    return thread, answers


def test_a_run_is_stored_by_its_drives_first_transaction(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)  # nothing stored on its own meanwhile
    started, release, seen = threading.Event(), threading.Event(), []
    host = make_host()
    host.register("blocking", _blocking_graph(started, release, seen))
    thread, answers = _create_in_thread(host)
    try:
        assert started.wait(10)
        (run_id,) = seen
        # The graph runs, and nothing of the run is stored yet: no row, no event.
        assert _stored(host, run_id) == (None, 0)
    finally:
        release.set()
        thread.join(10)
    (snapshot,) = answers
    assert snapshot["runId"] == run_id and snapshot["status"] == "waiting-input", snapshot
    row, _ = _stored(host, run_id)
    assert row.status == "waiting-input" and row.tenant == "acme"
    logged = events(host, run_id)
    assert [e["type"] for e in logged][:3] == ["run.started", "node.started", "node.completed"], logged
    assert logged[0]["sequence"] == 0 and logged[0]["payload"]["workflowId"] == "blocking"


def test_a_run_whose_id_was_given_out_is_stored_before_its_graph_starts(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id minted earlier may be known to others (a LangGraph API client has it): the run's
    row is committed before the graph starts, as before."""
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)
    started, release, seen = threading.Event(), threading.Event(), []
    host = make_host()
    host.register("blocking", _blocking_graph(started, release, seen))
    given = mint_tenant_id("acme")
    thread, answers = _create_in_thread(host, run_id=given)
    try:
        assert started.wait(10)
        row, logged = _stored(host, given)
        assert row is not None and row.status == "running" and logged == 1
    finally:
        release.set()
        thread.join(10)
    assert answers[0]["status"] == "waiting-input"


def test_a_first_node_that_runs_longer_finds_its_run_stored_meanwhile(make_host: HostFactory) -> None:
    """What the drive holds is stored on its own once held ``FLUSH_AFTER_S``: the run's row,
    leased to this process and running, and ``run.started``, while the first node still runs."""
    started, release, seen = threading.Event(), threading.Event(), []
    host = make_host()
    host.register("blocking", _blocking_graph(started, release, seen))
    thread, answers = _create_in_thread(host)
    try:
        assert started.wait(10)
        (run_id,) = seen
        deadline = time.monotonic() + 10
        while (stored := _stored(host, run_id))[0] is None and time.monotonic() < deadline:
            time.sleep(0.01)
        row, logged = stored
        assert row is not None and row.status == "running" and row.lease_owner == host.executor.owner
        assert logged >= 1 and not release.is_set() and thread.is_alive()
        assert events(host, run_id)[0]["type"] == "run.started"
    finally:
        release.set()
        thread.join(10)
    assert answers[0]["status"] == "waiting-input"
    assert [e["type"] for e in events(host, run_id)].count("run.started") == 1


def _killed_child(mode: str, url: str) -> str:
    """Run the child until its first node SIGKILLs it; the run id it printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.host._first_node_child", mode, url],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout.split()[0]


@pytest.mark.slow
def test_a_process_killed_in_the_first_node_before_the_run_was_stored_leaves_nothing(
    make_host: HostFactory, db_url: str
) -> None:
    run_id = _killed_child("at-once", db_url)
    host = make_host()
    host.register(WORKFLOW, first_node_graph())
    assert _stored(host, run_id) == (None, 0)
    assert host.recover() == 0  # nothing to take over, nothing stuck
    with host.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(runs_table)).scalar_one() == 0


@pytest.mark.slow
def test_a_process_killed_in_the_first_node_after_the_run_was_stored_is_taken_over(
    make_host: HostFactory, db_url: str
) -> None:
    run_id = _killed_child("later", db_url)
    host = make_host()
    host.register(WORKFLOW, first_node_graph())
    row, _ = _stored(host, run_id)
    assert row is not None and row.status == "running"
    assert host.recover() >= 1  # the dead process's lease is taken over, the run driven again
    assert host.snapshot(run_id)["status"] == "waiting-input"
    logged = [e["type"] for e in events(host, run_id)]
    assert logged[0] == "run.started" and logged.count("run.started") == 1, logged
    host.resolve(run_id, "gate", "yes", ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
