"""A node's start is logged with what comes next, or on its own while the node still runs.

``node.started`` / ``node.resumed`` of a sync graph's node task ride in the next transaction
that logs anything of the run (the one of the task's writes, usually), which saves a commit per
task. These tests hold that to the log's promises: a node that runs longer shows its start
while it runs; a start comes before everything its execution logs (its end, its interrupt, what
its node emits) and carries the time it started; every execution is opened once; nothing
follows a cancellation.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from tests.host._graphs import ALICE, WORKFLOW, approval_graph
from tests.host._support import HostFactory
from wop_langgraph.host import held_writes
from wop_langgraph.host.held_writes import FLUSH_AFTER_S
from wop_langgraph.nodes import escalate_on_low_confidence

ACCEPT = {"action": "accept", "feedback": "ship it"}


class _State(TypedDict, total=False):
    n: int


def _until(predicate: Any, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _types(host: Any, run_id: str) -> list[tuple[str, str | None]]:
    return [(e["type"], e.get("nodeId")) for e in host.events(run_id)]


def _one_node(name: str, node: Any) -> Any:
    """A compiled graph that runs ``node`` (named ``name``) once."""
    builder = StateGraph(_State)
    builder.add_node(name, node)
    builder.add_edge(START, name)
    builder.add_edge(name, END)
    return builder.compile()


def _held(running: threading.Event, release: threading.Event) -> Any:
    """A node that sets ``running``, then waits for ``release`` (which must come within 30 s)."""

    def slow(state: _State) -> _State:
        running.set()
        assert release.wait(30)
        return {"n": 1}

    return slow


def _assert_opened_before_closed(events: list[dict[str, Any]]) -> None:
    """Every node event follows its execution's start (``node.started`` / ``node.resumed``)."""
    opened: set[str] = set()
    for event in events:
        node = event.get("nodeId")
        if event["type"] in ("node.started", "node.resumed"):
            opened.add(node)
        elif node is not None:
            assert node in opened, f"{event['type']} of {node} before its start: {events}"


def test_a_quick_graph_logs_each_start_once_before_what_follows(make_host: HostFactory) -> None:
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    run_id = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)["runId"]
    host.resolve(run_id, "review", ACCEPT, ALICE)
    events = host.events(run_id)
    _assert_opened_before_closed(events)
    starts = [(e["type"], e["nodeId"]) for e in events if e["type"] in ("node.started", "node.resumed")]
    assert len(starts) == len(set(starts)), starts  # each execution opened once
    assert ("node.started", "review") in starts and ("node.resumed", "review") in starts
    for start in (e for e in events if e["type"] == "node.started"):
        end = next(e for e in events if e["type"] != "node.started" and e.get("nodeId") == start["nodeId"])
        assert start["timestamp"] <= end["timestamp"]  # stamped when the node started


def test_a_node_that_runs_longer_shows_its_start_while_it_runs(make_host: HostFactory) -> None:
    release = threading.Event()
    running = threading.Event()

    host = make_host()
    host.register("slow", _one_node("slow", _held(running, release)))
    host.start_workers(1, poll_seconds=0.05, sweep_seconds=0)
    try:
        run_id = host.create_run("slow", {}, owner=ALICE, wait=False)["runId"]
        assert running.wait(15)
        _until(lambda: ("node.started", "slow") in _types(host, run_id), what="the start")
        assert ("node.completed", "slow") not in _types(host, run_id)  # logged while it runs
        time.sleep(0.3)
        release.set()
        _until(lambda: host.snapshot(run_id)["status"] == "completed", what="the end")
        events = host.events(run_id)
        _assert_opened_before_closed(events)
        assert [e["type"] for e in events].count("node.started") == 1
        start = next(e for e in events if e["type"] == "node.started")
        end = next(e for e in events if e["type"] == "node.completed")
        gap = datetime.fromisoformat(end["timestamp"]) - datetime.fromisoformat(start["timestamp"])
        assert gap.total_seconds() >= 0.25  # stamped when the node started, not when logged
    finally:
        release.set()
        host.stop_workers()


def test_what_a_node_emits_comes_after_its_start(make_host: HostFactory) -> None:
    # escalate_on_low_confidence emits agent.decided from inside the node, before its writes.
    def decide(state: _State) -> _State:
        escalate_on_low_confidence("agent-1", {"answer": 42}, 0.99)
        return {"n": 1}

    host = make_host()
    host.register("decide", _one_node("decide", decide))
    run_id = host.create_run("decide", {}, owner=ALICE)["runId"]
    events = host.events(run_id)
    types = [(e["type"], e.get("nodeId")) for e in events]
    assert ("agent.decided", "decide") in types, types
    assert types.index(("node.started", "decide")) < types.index(("agent.decided", "decide"))
    _assert_opened_before_closed(events)


def test_nothing_is_logged_after_a_cancellation_of_a_running_node(make_host: HostFactory) -> None:
    release = threading.Event()
    running = threading.Event()
    builder = StateGraph(_State)
    builder.add_node("slow", _held(running, release))
    builder.add_node("after", lambda state: {"n": 2})
    builder.add_edge(START, "slow")
    builder.add_edge("slow", "after")
    builder.add_edge("after", END)
    host = make_host()
    host.register("slow", builder.compile())
    host.start_workers(1, poll_seconds=0.05, sweep_seconds=0)
    try:
        run_id = host.create_run("slow", {}, owner=ALICE, wait=False)["runId"]
        assert running.wait(15)
        host.cancel(run_id, principal=ALICE, wait=False)
        release.set()
        time.sleep(FLUSH_AFTER_S * 4)
        _until(lambda: not host.executor.driving, what="the drive to stop")
        types = [t for t, _ in _types(host, run_id)]
        assert types[-1] == "run.cancelled", types
        assert "node.started" not in types[types.index("run.cancelled") :]
    finally:
        release.set()
        host.stop_workers()


def test_a_cancelled_drive_drops_what_it_holds_at_once(make_host: HostFactory, monkeypatch: Any) -> None:
    """A node's start is held, and its end with its writes once it ends; the run is cancelled
    meanwhile, so the drive stops at that step boundary and drops them: nothing is logged after
    ``run.cancelled``, and the drive does not wait for a transaction to settle first."""
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)  # held until the node's end
    release = threading.Event()
    running = threading.Event()

    host = make_host()
    host.register("slow", _one_node("slow", _held(running, release)))
    host.start_workers(1, poll_seconds=0.05, sweep_seconds=0)
    try:
        run_id = host.create_run("slow", {}, owner=ALICE, wait=False)["runId"]
        assert running.wait(15)
        host.cancel(run_id, principal=ALICE, wait=False)
        _until(lambda: host.snapshot(run_id)["status"] == "cancelled", what="the cancel")
        released = time.monotonic()
        release.set()
        _until(lambda: not host.executor.driving, what="the drive to stop")
        assert time.monotonic() - released < 2.5
        types = [t for t, _ in _types(host, run_id)]
        assert types[-1] == "run.cancelled", types
        assert "node.completed" not in types, types
    finally:
        release.set()
        host.stop_workers()
