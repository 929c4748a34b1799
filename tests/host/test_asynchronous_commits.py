"""A subgraph's checkpoints commit asynchronously; what a pass records, synchronously (PostgreSQL).

A pass holds the run's own (top-level) saves and stores them in the transaction that records
what comes next (see ``test_held_saves``). A subgraph's saves are not held: inside a pass those
that record nothing (its checkpoints) commit without waiting for the WAL flush
(``SaverBase.committing_asynchronously``). Everything the pass records for others to see
(events, interrupts, the run's row) commits as before, after them, and so makes them durable in
the same flush.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from tests.host._graphs import ALICE, WORKFLOW, State, subgraph_graph
from tests.host._support import HostFactory
from tests.round_trips import statements
from wop_langgraph import request_approval
from wop_langgraph.host import WopHost

SWITCH = "set_config('synchronous_commit', 'off', true)"
ACCEPT = {"action": "accept", "feedback": "ship it"}
_RECORDS = ("wop_events", "wop_interrupts", "wop_runs")


def async_subgraph_graph() -> Pregel[Any, Any, Any, Any]:
    """``parent`` (a compiled subgraph whose async node ``child`` holds a gate) -> ``after``."""

    async def child(state: State) -> State:
        await asyncio.sleep(0)
        decision = request_approval("art-sub", "document", "Approve the child step?")
        return {"log": [f"child:{decision.action}"]}

    async def after(state: State) -> State:
        return {"log": ["after"]}

    inner = StateGraph(State)
    inner.add_node("child", child)
    inner.add_edge(START, "child")
    inner.add_edge("child", END)
    outer = StateGraph(State)
    outer.add_node("parent", inner.compile())
    outer.add_node("after", after)
    outer.add_edge(START, "parent")
    outer.add_edge("parent", "after")
    outer.add_edge("after", END)
    return outer.compile()


def _postgres_host(make_host: HostFactory, db_url: str, graph: Pregel[Any, Any, Any, Any]) -> WopHost:
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite's commits do not wait for a flush in any case")
    host = make_host()
    host.register(WORKFLOW, graph)
    return host


def _cycle(host: WopHost) -> None:
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    assert created["status"] == "waiting-approval", created
    result = host.resolve(created["runId"], "parent.child", ACCEPT, ALICE)
    assert result["status"] == "completed", result


def _assert_split(seen: list[tuple[str, bool, bool]]) -> None:
    checkpoints = [(s, in_tx) for s, in_tx, _ in seen if s.startswith("INSERT INTO wop_checkpoints ")]
    asynchronous = [s for s, _ in checkpoints if s.endswith(SWITCH)]
    # The subgraph's (two at least: its input and its first step) commit asynchronously; the
    # run's own ride in the pass's recording transactions.
    assert len(asynchronous) >= 2, checkpoints
    assert all(in_tx for s, in_tx in checkpoints if not s.endswith(SWITCH)), checkpoints
    recorded = [s for s, _, _ in seen if any(table in s for table in _RECORDS)]
    assert recorded and not any(SWITCH in s for s in recorded), recorded


@pytest.mark.parametrize("graph", [subgraph_graph, async_subgraph_graph], ids=["sync", "async"])
def test_a_pass_commits_a_subgraphs_checkpoints_asynchronously_and_records_synchronously(
    make_host: HostFactory, db_url: str, graph: Any
) -> None:
    host = _postgres_host(make_host, db_url, graph())
    with statements() as seen:
        _cycle(host)
    _assert_split(seen)


def test_an_async_graph_driven_from_a_running_loop_keeps_it(make_host: HostFactory, db_url: str) -> None:
    # A notebook cell: the pass's event loop runs on a thread of its own, in the caller's context.
    host = _postgres_host(make_host, db_url, async_subgraph_graph())

    async def cell() -> None:
        _cycle(host)

    with statements() as seen:
        asyncio.run(cell())
    _assert_split(seen)
