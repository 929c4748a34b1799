"""The run engine: runs queued at commit, driven by workers, async nodes, truthful status, cancel.

Every test here uses real graphs on the test's real database; workers are real threads of a
real :class:`WopHost` (``start_workers``), and a caller that asks not to wait gets its answer
at commit, before any node of the graph ran.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, payloads, start
from wop_langgraph import request_approval
from wop_langgraph.host import WopHost

RESTING = {"completed", "failed", "cancelled", "waiting-approval", "waiting-input", "waiting-external"}


class State(TypedDict, total=False):
    log: list[str]
    decision: str


def until(predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    """Wait (bounded) until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def at_rest(host: WopHost, run_id: str, timeout: float = 15.0) -> dict[str, Any]:
    until(lambda: host.snapshot(run_id)["status"] in RESTING, timeout, f"run {run_id} to rest")
    return host.snapshot(run_id)


@pytest.fixture
def workers(make_host: HostFactory) -> Iterator[WopHost]:
    """A host with two worker threads (stopped afterwards)."""
    host = make_host()
    host.start_workers(2, poll_seconds=0.2, sweep_seconds=0)
    try:
        yield host
    finally:
        host.stop_workers()


def async_review_graph(after_gate: Callable[[], Any] | None = None) -> Pregel[Any, Any, Any, Any]:
    """write -> review (async, an approval) -> publish (async)."""

    async def write(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["write"]}

    async def review(state: State) -> dict[str, Any]:
        decision = request_approval("doc", "text/plain", "Publish?", artifact_data="draft")
        return {"decision": decision.action, "log": [*state["log"], "review"]}

    async def publish(state: State) -> dict[str, Any]:
        if after_gate is not None:
            await after_gate()
        return {"log": [*state["log"], "publish"]}

    graph = StateGraph(State)
    graph.add_node("write", write)
    graph.add_node("review", review)
    graph.add_node("publish", publish)
    graph.add_edge(START, "write")
    graph.add_edge("write", "review")
    graph.add_edge("review", "publish")
    graph.add_edge("publish", END)
    return graph.compile()


def test_async_nodes_run_and_resume(host: WopHost) -> None:
    run_id, snapshot = start(host, async_review_graph())
    assert snapshot["status"] == "waiting-approval", snapshot
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE)["status"] == "completed"
    final = host.snapshot(run_id)
    docs = events(host, run_id)
    (completed,) = payloads(docs, "run.completed")
    assert completed["outputs"]["log"] == ["write", "review", "publish"]
    assert final["status"] == "completed"


async def test_async_twins_from_an_event_loop(host: WopHost) -> None:
    host.register("async-review", async_review_graph())
    snapshot = await host.acreate_run("async-review", {}, owner=ALICE)
    assert snapshot["status"] == "waiting-approval"
    result = await host.aresolve(snapshot["runId"], "review", {"action": "accept"}, ALICE)
    assert result["status"] == "completed"
    assert (await host.asnapshot(snapshot["runId"]))["status"] == "completed"
    assert [e["type"] for e in await host.aevents(snapshot["runId"])][-1] == "run.completed"


def test_no_wait_answers_at_commit_and_a_worker_drives(workers: WopHost) -> None:
    gate_open = threading.Event()

    async def slow() -> None:
        await asyncio.to_thread(gate_open.wait, 10)

    workers.register("slow", async_review_graph(after_gate=slow))
    created = workers.create_run("slow", {}, owner=ALICE, wait=False)
    assert created["status"] in ("pending", "running")
    assert at_rest(workers, created["runId"])["status"] == "waiting-approval"
    answer = workers.resolve(created["runId"], "review", {"action": "accept"}, ALICE, wait=False)
    assert answer["status"] == "running"
    # publish is blocked: the run is truthfully running, and no currentNodeId claims a wait
    until(lambda: "node.resumed" in [e["type"] for e in workers.events(created["runId"])], what="resume")
    snapshot = workers.snapshot(created["runId"])
    assert snapshot["status"] == "running" and "currentNodeId" not in snapshot
    gate_open.set()
    assert at_rest(workers, created["runId"])["status"] == "completed"


def sync_sleeper(seconds: float, started: threading.Event) -> Pregel[Any, Any, Any, Any]:
    """One gate, then a node that sleeps (sync) in two steps."""

    def review(state: State) -> dict[str, Any]:
        request_approval("doc", "text/plain", "Go?", artifact_data="x")
        return {"log": ["review"]}

    def work(state: State) -> dict[str, Any]:
        started.set()
        time.sleep(seconds)
        return {"log": [*state["log"], "work"]}

    def more(state: State) -> dict[str, Any]:
        return {"log": [*state["log"], "more"]}

    graph = StateGraph(State)
    for name, fn in (("review", review), ("work", work), ("more", more)):
        graph.add_node(name, fn)
    graph.add_edge(START, "review")
    graph.add_edge("review", "work")
    graph.add_edge("work", "more")
    graph.add_edge("more", END)
    return graph.compile()


def test_cancel_stops_a_running_async_node_and_nothing_follows(workers: WopHost) -> None:
    entered = threading.Event()

    async def forever() -> None:
        entered.set()
        await asyncio.sleep(60)

    workers.register("forever", async_review_graph(after_gate=forever))
    run_id = workers.create_run("forever", {}, owner=ALICE, wait=False)["runId"]
    at_rest(workers, run_id)
    workers.resolve(run_id, "review", {"action": "accept"}, ALICE, wait=False)
    assert entered.wait(10)
    started = time.monotonic()
    assert workers.cancel(run_id)["status"] == "cancelled"
    assert time.monotonic() - started < 5  # the async node was cancelled, not waited for
    time.sleep(0.5)
    docs = events(workers, run_id)
    assert docs[-1]["type"] == "run.cancelled", [d["type"] for d in docs]
    assert not [d for d in docs if d.get("nodeId") == "publish" and d["type"] == "node.completed"]
    assert workers.snapshot(run_id)["status"] == "cancelled"


def test_cancel_stops_a_sync_node_at_its_next_step(workers: WopHost) -> None:
    started = threading.Event()
    workers.register("sleeper", sync_sleeper(1.0, started))
    run_id = workers.create_run("sleeper", {}, owner=ALICE, wait=False)["runId"]
    at_rest(workers, run_id)
    workers.resolve(run_id, "review", {"action": "accept"}, ALICE, wait=False)
    assert started.wait(10)
    workers.cancel(run_id)
    time.sleep(1.5)  # the sleeping node returns; its step is not followed by another
    docs = events(workers, run_id)
    types = [d["type"] for d in docs]
    assert types[-1] == "run.cancelled", types
    assert not [d for d in docs if d.get("nodeId") == "more"]


def parallel_gates(post_gate_seconds: float) -> Pregel[Any, Any, Any, Any]:
    """START -> a and b in parallel, each an approval; a does work after its gate; -> join."""

    def gate(name: str) -> Callable[[State], dict[str, Any]]:
        def node(state: State) -> dict[str, Any]:
            request_approval(f"doc-{name}", "text/plain", f"Approve {name}?", artifact_data=name)
            if name == "a":
                time.sleep(post_gate_seconds)
            return {}

        return node

    def join(state: State) -> dict[str, Any]:
        return {"log": ["joined"]}

    graph = StateGraph(State)
    graph.add_node("a", gate("a"))
    graph.add_node("b", gate("b"))
    graph.add_node("join", join)
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    graph.add_edge(["a", "b"], "join")
    graph.add_edge("join", END)
    return graph.compile()


@pytest.mark.slow
@pytest.mark.parametrize("gap", [0.5, 0.0], ids=["gap-0.5s", "simultaneous"])
def test_parallel_gates_never_fail_the_run(workers: WopHost, gap: float) -> None:
    workers.register("parallel", parallel_gates(post_gate_seconds=0.3))
    for _ in range(20):
        run_id = workers.create_run("parallel", {}, owner=ALICE, wait=False)["runId"]
        until(lambda rid=run_id: len(workers.pending_interrupts(rid)) == 2, what="both gates")
        answers: list[dict[str, Any]] = []

        def resolve(node: str, delay: float, rid: str = run_id, out: list[dict[str, Any]] = answers) -> None:
            time.sleep(delay)
            out.append(workers.resolve(rid, node, {"action": "accept"}, ALICE, wait=False))

        threads = [
            threading.Thread(target=resolve, args=("a", 0.0)),
            threading.Thread(target=resolve, args=("b", gap)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(15)
        assert [a["status"] for a in answers] == ["running", "running"]
        final = at_rest(workers, run_id, timeout=30)
        assert final["status"] == "completed", (final, [e["type"] for e in workers.events(run_id)])
        docs = events(workers, run_id)
        assert len(payloads(docs, "interrupt.requested")) == 2
        assert len(payloads(docs, "interrupt.resolved")) == 2
        assert payloads(docs, "run.completed")[0]["outputs"]["log"] == ["joined"]


def test_no_lock_files_are_left_beside_a_sqlite_database(host: WopHost, db_url: str) -> None:
    run_id, _ = start(host, async_review_graph())
    host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    if db_url.startswith("sqlite:///"):
        database = Path(db_url.removeprefix("sqlite:///"))
        assert database.exists()
        assert not [p for p in database.parent.iterdir() if p.name.endswith(".locks")]
