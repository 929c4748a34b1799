"""A run created for a caller that drives it, its id minted by the call: its row and
``run.started`` are held by the drive and stored first by the drive's first transaction (the
one that records its first interrupt, or its end), not by a transaction of their own before
the graph starts; a first node that runs longer than ``FLUSH_AFTER_S`` finds them stored on
their own meanwhile. A process killed in the first node leaves nothing stuck: nothing at all
before they were stored, a run that recovery takes over after.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.config import get_config
from langgraph.pregel import Pregel
from sqlalchemy import func, select

from tests.host._first_node_child import ALICE, WORKFLOW, State, first_node_graph, gated_graph
from tests.host._support import HostFactory, events, killed_child
from wop_langgraph.host import WopHost, held_writes
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.store.run_tables import events_table, runs_table


def _blocking_graph(started: threading.Event, release: threading.Event, seen: list[str]) -> Pregel:
    """``first -> gate``; ``first`` tells its run id and waits for ``release``."""

    def first(state: State) -> State:
        seen.append(get_config()["configurable"]["thread_id"])
        started.set()
        assert release.wait(10), "the test did not release the first node"
        return {"n": 1}

    return gated_graph(first)


def _stored(host: WopHost, run_id: str) -> tuple[Any, int]:
    """The run's row (``None``: not stored) and how many events it has logged."""
    with host.engine.connect() as conn:
        row = conn.execute(select(runs_table).where(runs_table.c.run_id == run_id)).first()
        logged = conn.execute(
            select(func.count()).select_from(events_table).where(events_table.c.run_id == run_id)
        ).scalar_one()
    return row, int(logged)


@contextmanager
def _first_node_running(host: WopHost, **options: Any) -> Iterator[tuple[str, list[Any]]]:
    """A run of a graph whose first node waits, created on another thread: within the block
    the node runs (its run id, and the list the creation's answer goes to); the block's end
    lets the node go on and waits for the creation to return."""
    started, release, seen = threading.Event(), threading.Event(), []
    host.register("blocking", _blocking_graph(started, release, seen))
    answers: list[Any] = []

    def create() -> None:
        try:
            answers.append(host.create_run("blocking", {"n": 0}, owner=ALICE, **options))
        except BaseException as exc:  # handed to the test
            answers.append(exc)

    thread = threading.Thread(target=create)
    thread.start()
    try:
        assert started.wait(10)
        yield seen[0], answers
        assert thread.is_alive()  # the first node still ran throughout the block
    finally:
        release.set()
        thread.join(10)


def test_a_run_is_stored_by_its_drives_first_transaction(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)  # nothing stored on its own meanwhile
    host = make_host()
    with _first_node_running(host) as (run_id, answers):
        # The graph runs, and nothing of the run is stored yet: no row, no event.
        assert _stored(host, run_id) == (None, 0)
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
    host = make_host()
    given = mint_tenant_id("acme")
    with _first_node_running(host, run_id=given) as (run_id, answers):
        row, logged = _stored(host, given)
        assert run_id == given and row is not None and row.status == "running" and logged == 1
    assert answers[0]["status"] == "waiting-input"


def test_a_first_node_that_runs_longer_finds_its_run_stored_meanwhile(make_host: HostFactory) -> None:
    """What the drive holds is stored on its own once held ``FLUSH_AFTER_S``: the run's row,
    leased to this process and running, and ``run.started``, while the first node still runs."""
    host = make_host()
    with _first_node_running(host) as (run_id, answers):
        deadline = time.monotonic() + 10
        while (stored := _stored(host, run_id))[0] is None and time.monotonic() < deadline:
            time.sleep(0.01)
        row, logged = stored
        assert row is not None and row.status == "running" and row.lease_owner == host.executor.owner
        assert logged >= 1 and events(host, run_id)[0]["type"] == "run.started"
    assert answers[0]["status"] == "waiting-input"
    assert [e["type"] for e in events(host, run_id)].count("run.started") == 1


@pytest.mark.slow
def test_a_process_killed_in_the_first_node_before_the_run_was_stored_leaves_nothing(
    make_host: HostFactory, db_url: str
) -> None:
    run_id = killed_child("tests.host._first_node_child", "at-once", db_url, env=os.environ)
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
    run_id = killed_child("tests.host._first_node_child", "later", db_url, env=os.environ)
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


def test_a_node_that_reads_its_own_run_finds_it(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node may read its run through the host (a sub-workflow reads its parent's owner): the
    read stores what the creating drive holds first, as the timer would later."""
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)
    host = make_host()
    seen: list[dict[str, Any]] = []

    def first(state: State) -> State:
        seen.append(host.snapshot(get_config()["configurable"]["thread_id"]))
        return {"n": 1}

    host.register("reads-itself", gated_graph(first))
    created = host.create_run("reads-itself", {"n": 0}, owner=ALICE)
    (read,) = seen
    assert (read["runId"], read["status"]) == (created["runId"], "running")
    assert created["status"] == "waiting-input"
    assert [e["type"] for e in events(host, created["runId"])].count("run.started") == 1
