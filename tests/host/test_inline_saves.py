"""A pass starts no thread for its saves.

A sync pass saves on the thread that drives it (see ``wop_langgraph.host._inline_saves``):
LangGraph would hand each save to a thread pool made for the pass. A step of several tasks
still runs them side by side, and a graph run outside a pass (by a node, or by the
application) gets LangGraph's own executor. An async pass, on an event loop of its own, awaits
its saves on threads kept for the process (``wop_langgraph._off_loop``), not on a default
executor made and shut down with each loop.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from tests.host._graphs import ALICE, WORKFLOW, State, approval_graph, count, fan_in_graph
from tests.host._support import HostFactory
from tests.host.test_engine import async_review_graph
from wop_langgraph.host._inline_saves import saving_inline

ACCEPT = {"action": "accept", "feedback": "ship it"}


@contextmanager
def threads_started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the threads started in this process within the block."""
    started: list[str] = []
    start = threading.Thread.start

    def recording_start(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)

    with monkeypatch.context() as patch:
        patch.setattr(threading.Thread, "start", recording_start)
        yield started


def test_a_pass_starts_no_thread_for_its_saves(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    host.create_run(WORKFLOW, {"log": []}, owner=ALICE)  # the host's own threads, if any, start here
    with threads_started(monkeypatch) as started:
        created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
        assert created["status"] == "waiting-approval", created
        result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
    assert result["status"] == "completed", result
    # LangGraph's executor would have started a thread or two in each of the two passes.
    assert started == []
    assert count("publish") == 1  # the first run still waits at its gate


def test_async_passes_reuse_kept_threads(make_host: HostFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    host = make_host()
    host.register("async-review", async_review_graph())
    first = host.create_run("async-review", {"log": []}, owner=ALICE)  # the host's own threads
    assert host.resolve(first["runId"], "review", ACCEPT, ALICE)["status"] == "completed"
    cycles = 5
    with threads_started(monkeypatch) as started:
        for _ in range(cycles):
            created = host.create_run("async-review", {"log": []}, owner=ALICE)
            assert created["status"] == "waiting-approval", created
            result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
            assert result["status"] == "completed", result
    # asyncio.to_thread would have started two to four threads in each of the ten passes. The
    # kept pools start a thread only when more calls overlap than ever before in the process.
    assert all(name.startswith(("wop-saver", "wop-task-events")) for name in started), started
    assert len(started) < cycles, started


def _meeting(barrier: threading.Barrier) -> Any:
    """A branch node that waits at ``barrier`` for the other branch to run meanwhile."""

    def meet(name: str) -> Any:
        def node(state: State) -> State:
            barrier.wait()  # raises BrokenBarrierError unless the other task runs meanwhile
            return {"log": [name]}

        return node

    return meet


def test_the_tasks_of_one_step_still_run_side_by_side(make_host: HostFactory) -> None:
    host = make_host()
    host.register("side-by-side", fan_in_graph(_meeting(threading.Barrier(2, timeout=10))))
    snapshot = host.create_run("side-by-side", {"log": []}, owner=ALICE)
    assert snapshot["status"] == "completed", snapshot
    events = host.events(snapshot["runId"])
    completed = sorted(e["payload"]["nodeId"] for e in events if e["type"] == "node.completed")
    assert completed == ["join", "left", "right"]


class _ThreadRecordingSaver(InMemorySaver):
    """LangGraph's in-memory saver, noting the threads its saves ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.save_threads: set[int] = set()

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self.save_threads.add(threading.get_ident())
        return super().put(*args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        self.save_threads.add(threading.get_ident())
        super().put_writes(*args, **kwargs)


def _one_node(name: str, saver: _ThreadRecordingSaver, run: Any = None) -> Pregel:
    """``START -> name -> END`` on ``saver``; the node calls ``run()`` if given, and logs its name."""

    def node(state: State) -> State:
        if run is not None:
            run()
        return {"log": [name]}

    g = StateGraph(State)
    g.add_node(name, node)
    g.add_edge(START, name)
    g.add_edge(name, END)
    return g.compile(checkpointer=saver)


def test_graphs_run_outside_a_pass_save_as_langgraph_does(make_host: HostFactory) -> None:
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    host.create_run(WORKFLOW, {"log": []}, owner=ALICE)  # the hook is in place from here on

    outside = _ThreadRecordingSaver()
    _one_node("step", outside).invoke(
        {"log": []}, {"configurable": {"thread_id": "outside"}}, durability="sync"
    )
    assert outside.save_threads and threading.get_ident() not in outside.save_threads

    # Inside a pass, only the pass's own saver is saved inline; a graph that a node runs
    # (here: another saver, and a loop that asks for its executor after the pass's) is not.
    inside, other = _ThreadRecordingSaver(), _ThreadRecordingSaver()
    nested = _one_node("step", other)
    outer = _one_node(
        "outer",
        inside,
        lambda: nested.invoke({"log": []}, {"configurable": {"thread_id": "nested"}}, durability="sync"),
    )
    with saving_inline(inside) as hooked:
        assert hooked
        outer.invoke({"log": []}, {"configurable": {"thread_id": "outer"}}, durability="sync")
    assert inside.save_threads == {threading.get_ident()}
    assert other.save_threads and threading.get_ident() not in other.save_threads
