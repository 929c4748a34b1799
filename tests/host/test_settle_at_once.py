"""A pass settles its run in one statement, with no read of the run's work first.

A pass that suspended puts the run to rest at its oldest pending interrupt (the status follows
the interrupt's kind); a pass that ran the graph to its end consumes the resolution it
delivered, completes the run and appends ``run.completed`` together. Either statement changes
nothing of the run while a resolution awaits delivery (or, at the end, once the run ended
otherwise, say cancelled): then the pass reads the run's work as before and decides, so no
resolution is stranded and nothing follows a terminal event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.pregel import Pregel

from tests.host import _graphs
from tests.host._graphs import (
    ALICE,
    approval_graph,
    clarification_graph,
    external_event_graph,
    parallel_graph,
)
from tests.host._support import HostFactory, events, start
from wop_langgraph.host import WopHost
from wop_langgraph.host import driver as driver_module
from wop_langgraph.host.driver import GraphDriver
from wop_langgraph.store.engine import reading
from wop_langgraph.store.events import NewEvent, append
from wop_langgraph.store.interrupts import InterruptRecord, claim, insert_interrupt, interrupts_of_run

ACCEPT = {"action": "accept"}


@contextmanager
def work_reads() -> Iterator[list[int]]:
    """Counts the reads of a run's open work as a pass settles (the read the rest folds in)."""
    calls = [0]
    original = driver_module.open_work

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    driver_module.open_work = counted
    try:
        yield calls
    finally:
        driver_module.open_work = original


@pytest.mark.parametrize(
    ("graph", "status", "node"),
    [
        (approval_graph, "waiting-approval", "review"),
        (clarification_graph, "waiting-input", "clarify"),
        (external_event_graph, "waiting-external", "wait"),
    ],
)
def test_a_suspended_pass_rests_without_reading_its_work(
    make_host: HostFactory, graph: Any, status: str, node: str
) -> None:
    host = make_host()
    with work_reads() as reads:
        run_id, snap = start(host, graph())
    assert reads[0] == 0
    assert (snap["status"], snap.get("currentNodeId")) == (status, node)
    assert (host.snapshot(run_id)["status"], host.snapshot(run_id).get("currentNodeId")) == (status, node)
    assert [doc.get("nodeId") for doc in events(host, run_id) if doc["type"] == "interrupt.requested"] == [
        node
    ]


def test_parallel_gates_rest_at_the_oldest_pending_one(make_host: HostFactory) -> None:
    host = make_host()
    run_id, snap = start(host, parallel_graph())
    assert snap["status"] == "waiting-approval"
    oldest = host.pending_interrupts(run_id)[0]
    assert snap["currentNodeId"] == oldest.node_id


def test_a_resolution_awaiting_delivery_at_rest_is_delivered(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolution committed between the interrupt and the rest: the rest changes nothing,
    the pass goes again and delivers it; the other gate still waits. (The rest after the
    stream: the one in the interrupt's transaction is taken by test_rest_with_interrupt.)"""
    _graphs.reset_counts()
    monkeypatch.setattr(GraphDriver, "_resting_with_interrupt", lambda *_: None)
    host = make_host()
    graph: Pregel = parallel_graph()
    host.register("parallel", graph)
    original = GraphDriver._rest_at_once
    outcomes: list[bool] = []

    def resolve_first(self: GraphDriver, claim: Any, now: Any) -> bool:
        if not outcomes:  # the first rest of the run: answer "left" just before it
            host.resolve(self.run_id, "left", ACCEPT, ALICE, wait=False)
        outcomes.append(original(self, claim, now))
        return outcomes[-1]

    monkeypatch.setattr(GraphDriver, "_rest_at_once", resolve_first)
    snap = host.create_run("parallel", {}, owner=ALICE)
    run_id = snap["runId"]
    # Refused while "left" awaited delivery; the pass that delivered it rests as ever (it
    # marks the delivery consumed in the transaction that puts the run to rest).
    assert outcomes == [False]
    assert _graphs.count("left:past") == 1
    assert _graphs.count("right:past") == 0
    assert (snap["status"], snap["currentNodeId"]) == ("waiting-approval", "right")
    (pending,) = host.pending_interrupts(run_id)
    assert pending.node_id == "right"
    docs = events(host, run_id)
    assert [d.get("nodeId") for d in docs if d["type"] == "interrupt.resolved"] == ["left"]
    host.resolve(run_id, "right", ACCEPT, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
    assert _graphs.count("join") == 1


def _interrupts(host: WopHost, run_id: str) -> list[InterruptRecord]:
    with reading(host.engine) as conn:
        return interrupts_of_run(conn, run_id)


def test_a_pass_that_ends_completes_without_reading_its_work(make_host: HostFactory) -> None:
    host = make_host()
    run_id, _ = start(host, approval_graph())
    with work_reads() as reads:
        result = host.resolve(run_id, "review", ACCEPT, ALICE)
    assert reads[0] == 0
    assert result["status"] == "completed"
    docs = events(host, run_id)
    assert docs[-1]["type"] == "run.completed"
    assert docs[-1]["payload"]["outputs"]  # the graph's final state
    (gate,) = _interrupts(host, run_id)
    assert gate.consumed_at is not None
    assert host.run_until_idle() == 0  # out of the queue


def test_a_run_cancelled_as_its_graph_ends_stays_cancelled(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = make_host()
    run_id, _ = start(host, approval_graph())
    original = GraphDriver._complete_at_once
    outcomes: list[bool] = []

    def cancel_first(self: GraphDriver, *args: Any) -> bool:
        host.cancel(run_id, reason="changed my mind", wait=False)
        outcomes.append(original(self, *args))
        return outcomes[-1]

    monkeypatch.setattr(GraphDriver, "_complete_at_once", cancel_first)
    host.resolve(run_id, "review", ACCEPT, ALICE)
    assert outcomes == [False]
    assert host.snapshot(run_id)["status"] == "cancelled"
    types = [doc["type"] for doc in events(host, run_id)]
    assert types[-1] == "run.cancelled"
    assert "run.completed" not in types
    (gate,) = _interrupts(host, run_id)
    assert gate.consumed_at is not None
    assert host.run_until_idle() == 0


def test_a_resolution_awaiting_delivery_as_the_graph_ends_is_sorted_out_first(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolution of the run committed but not delivered when its graph ends (a stale
    question answered late): the end changes nothing, the pass goes again, finds the question
    gone from the graph, consumes the resolution, and then completes the run."""
    host = make_host()
    run_id, _ = start(host, approval_graph())
    original = GraphDriver._complete_at_once
    outcomes: list[bool] = []

    def answer_a_stale_question_first(self: GraphDriver, *args: Any) -> bool:
        if not outcomes:
            (gate,) = _interrupts(host, run_id)
            stale = dataclasses.replace(
                gate,
                interrupt_id=gate.interrupt_id + "-stale",
                key=gate.key + "-stale",
                lg_interrupt_id="0" * 32,
                status="pending",
                consumed_at=None,
                resolved_at=None,
            )
            told = [
                d for d in host.events(run_id) if d["type"] in ("interrupt.requested", "interrupt.resolved")
            ]
            renamed = {gate.interrupt_id: stale.interrupt_id, gate.key: stale.key}
            with host.engine.begin() as conn:
                insert_interrupt(conn, stale)
                assert claim(
                    conn, stale.interrupt_id, status="resolved", now=gate.created_at, resume_value=ACCEPT
                )
                append(  # as the recorder and the resolver would have told of it
                    conn,
                    run_id,
                    [
                        NewEvent(
                            d["type"],
                            {
                                k: renamed.get(v, v) if isinstance(v, str) else v
                                for k, v in d["payload"].items()
                            },
                            d.get("nodeId"),
                        )
                        for d in told
                    ],
                    now=gate.created_at,
                )
        outcomes.append(original(self, *args))
        return outcomes[-1]

    monkeypatch.setattr(GraphDriver, "_complete_at_once", answer_a_stale_question_first)
    result = host.resolve(run_id, "review", ACCEPT, ALICE)
    assert outcomes[0] is False
    assert result["status"] == "completed"
    assert [doc["type"] for doc in events(host, run_id)].count("run.completed") == 1
    assert all(record.consumed_at is not None for record in _interrupts(host, run_id))
