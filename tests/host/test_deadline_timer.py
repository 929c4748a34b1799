"""Deadlines fire with nothing but a live host: no workers, no ``sweep()``, no resolve.

The host's own timer wakes at the next deadline (not on a short poll), applies the timeout and,
with no workers, drives the run to rest; a snapshot read past a deadline never shows the gate
as answerable. Every test reads the run's log (``events``), which applies nothing, to see what
the timer did by itself.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from sqlalchemy import event

from tests.host._graphs import ALICE, State, approval_graph, clarification_graph, count
from tests.host._support import HostFactory, events, payloads, start
from wop_langgraph.host import WopHost
from wop_langgraph.host.deadlines import DeadlineTimer
from wop_langgraph.nodes import request_approval
from wop_langgraph.protocol.errors import InterruptAlreadyResolved

#: Each gate's timeout; the timer must apply it within one wake-up after the deadline.
TIMEOUT_SECONDS = 1.0
#: Slack for a loaded machine: the run must have ended this long after its deadline.
SLACK_SECONDS = 5.0


def wait_for_type(host: WopHost, run_id: str, event_type: str, within: float) -> list[dict[str, Any]]:
    """The run's log once it holds ``event_type`` (read only: nothing is applied by reading it)."""
    deadline = time.monotonic() + within
    while True:
        docs = host.events(run_id)
        if any(d["type"] == event_type for d in docs):
            return docs
        assert time.monotonic() < deadline, f"no {event_type} within {within} s: {[d['type'] for d in docs]}"
        time.sleep(0.05)


def test_an_approval_times_out_on_an_idle_library_host(host: WopHost) -> None:
    run_id, snapshot = start(host, approval_graph(timeout=TIMEOUT_SECONDS))
    assert snapshot["status"] == "waiting-approval" and not host.has_workers
    asked = time.monotonic()
    wait_for_type(host, run_id, "run.failed", TIMEOUT_SECONDS + SLACK_SECONDS)
    assert time.monotonic() - asked >= TIMEOUT_SECONDS * 0.9  # at the deadline, not before
    docs = events(host, run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert (resolved["action"], resolved["decision"], resolved["reason"]) == (
        "timeout",
        "rejected",
        "timeout",
    )
    (failed,) = payloads(docs, "run.failed")
    assert (failed["error"]["code"], failed["failedNodeId"]) == ("approval_rejected", "review")
    assert count("publish") == 0
    assert host.snapshot(run_id)["status"] == "failed"
    with pytest.raises(InterruptAlreadyResolved) as late:
        host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    assert late.value.error_object()["details"] == {"runStatus": "failed"}


def test_a_clarification_expires_on_an_idle_library_host(host: WopHost) -> None:
    run_id, snapshot = start(host, clarification_graph(timeout=TIMEOUT_SECONDS))
    assert snapshot["status"] == "waiting-input"
    docs = wait_for_type(host, run_id, "run.failed", TIMEOUT_SECONDS + SLACK_SECONDS)
    (node_failed,) = payloads(docs, "node.failed")
    assert node_failed["error"]["code"] == "interrupt_expired"


def async_timed_graph() -> Any:
    """write -> review (an async node holding a gate of TIMEOUT_SECONDS) -> publish."""

    async def write(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["write"]}

    async def review(state: dict[str, Any]) -> dict[str, Any]:
        decision = request_approval(
            "doc", "text/plain", "Publish?", artifact_data="d", timeout=TIMEOUT_SECONDS
        )
        return {"log": [*state["log"], decision.action]}

    async def publish(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [*state["log"], "publish"]}

    graph = StateGraph(State)
    for name, body in (("write", write), ("review", review), ("publish", publish)):
        graph.add_node(name, body)
    graph.add_edge(START, "write")
    graph.add_edge("write", "review")
    graph.add_edge("review", "publish")
    graph.add_edge("publish", END)
    return graph.compile()


async def test_an_async_graph_times_out_on_an_idle_host_used_from_an_event_loop(host: WopHost) -> None:
    host.register("async-timed", async_timed_graph())
    snapshot = await host.acreate_run("async-timed", {}, owner=ALICE)
    assert snapshot["status"] == "waiting-approval"
    run_id = snapshot["runId"]
    deadline = time.monotonic() + TIMEOUT_SECONDS + SLACK_SECONDS
    while "run.failed" not in [d["type"] for d in await host.aevents(run_id)]:
        assert time.monotonic() < deadline, "the timer never timed the gate out"
        await asyncio.sleep(0.05)
    assert (await host.asnapshot(run_id))["status"] == "failed"
    await host.aclose()


def test_a_snapshot_past_the_deadline_never_shows_the_gate_answerable(make_host: HostFactory) -> None:
    # The host's clock jumps past the deadline; the timer, sleeping toward the deadline by the
    # wall clock, has not woken: the snapshot itself applies the timeout.
    now = [datetime.now(UTC)]
    host = make_host(clock=lambda: now[0])
    run_id, snapshot = start(host, approval_graph(timeout=60))
    assert snapshot["status"] == "waiting-approval"
    now[0] += timedelta(seconds=61)
    assert [d["type"] for d in host.events(run_id)].count("interrupt.resolved") == 0
    assert host.snapshot(run_id)["status"] not in ("waiting-approval", "waiting-input", "waiting-external")
    assert host.pending_interrupts(run_id) == []
    docs = wait_for_type(host, run_id, "run.failed", SLACK_SECONDS)  # the timer drives it on
    assert [p["reason"] for p in payloads(docs, "interrupt.resolved")] == ["timeout"]
    assert host.snapshot(run_id)["status"] == "failed"


def test_the_timer_sleeps_until_the_deadline_instead_of_polling(make_host: HostFactory) -> None:
    host = make_host()
    run_id, _ = start(host, approval_graph(timeout=3600))
    reads: list[str] = []

    def count_reads(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "min(" in statement.lower() and "deadline" in statement.lower():
            reads.append(statement)

    event.listen(host.engine, "before_cursor_execute", count_reads)
    try:
        time.sleep(1.5)
    finally:
        event.remove(host.engine, "before_cursor_execute", count_reads)
    assert len(reads) <= 1, reads  # an hour to go: the timer sleeps (it would wake for a poke)
    assert host.snapshot(run_id)["status"] == "waiting-approval"


def test_close_stops_the_timer(make_host: HostFactory) -> None:
    host = make_host()
    assert host._deadlines.running
    host.close()
    assert not host._deadlines.running
    run_id, _ = start(host, approval_graph(timeout=TIMEOUT_SECONDS))
    time.sleep(TIMEOUT_SECONDS + 1.0)
    assert "interrupt.resolved" not in [d["type"] for d in host.events(run_id)]  # no timer: nothing fired
    host.sweep()  # (the run ends, for the end-of-test checks)


def test_a_closed_store_ends_the_timer(db_url: str) -> None:
    host = WopHost.from_url(db_url)
    assert host._deadlines.running
    time.sleep(0.5)  # its first look at the deadlines is done: it sleeps
    host.saver.close()
    host._deadlines.poke()  # (as the next wake-up would, at the latest after recheck_seconds)
    deadline = time.monotonic() + SLACK_SECONDS
    while host._deadlines.running:
        assert time.monotonic() < deadline, "the timer outlived its store"
        time.sleep(0.05)


def test_closing_the_store_waits_for_the_timers_read_and_leaves_no_connection_open(db_url: str) -> None:
    """The store closed while the timer reads: the read finishes first, and nothing it opened
    outlives the engine (before, the read opened a connection in the disposed engine's new pool,
    which was garbage-collected open)."""
    host = WopHost.from_url(db_url)
    reading, go_on = threading.Event(), threading.Event()
    next_deadline = host._deadlines._next_deadline

    def held_read() -> datetime | None:
        reading.set()
        go_on.wait(SLACK_SECONDS)
        return next_deadline()

    host._deadlines._next_deadline = held_read  # type: ignore[method-assign]
    host._deadlines.poke()
    assert reading.wait(SLACK_SECONDS)
    releaser = threading.Timer(0.3, go_on.set)  # the read goes on while close() is under way
    releaser.start()
    host.saver.close()
    waited = go_on.is_set()
    releaser.join()
    assert waited, "close() returned while the timer was still reading"
    assert not host._deadlines.running
    assert host.engine.pool.checkedin() == 0 and host.engine.pool.checkedout() == 0


def test_the_timers_periodic_work_failing_does_not_stop_it_firing_deadlines() -> None:
    looks: list[int] = []
    fired = threading.Event()
    due = datetime.now(UTC) + timedelta(seconds=0.3)

    def periodic() -> None:
        looks.append(1)
        raise RuntimeError("the periodic work failed")

    def fire(now: datetime) -> int:
        fired.set()
        return 1

    timer = DeadlineTimer(
        next_deadline=lambda: None if fired.is_set() else due,
        fire=fire,
        clock=lambda: datetime.now(UTC),
        recheck_seconds=0.05,
        periodic=periodic,
    )
    timer.start()
    try:
        assert fired.wait(SLACK_SECONDS)
        time.sleep(0.2)
        assert len(looks) >= 3  # it went on looking, and calling the periodic work each time
    finally:
        timer.stop()
