"""Graph shapes: parallel gates in one step, subgraphs, ``Send`` fan-out, static breakpoints."""

from __future__ import annotations

import pytest
from langgraph.graph import START, StateGraph

from tests.host._graphs import (
    ALICE,
    breakpoint_graph,
    count,
    parallel_graph,
    send_graph,
    subgraph_graph,
)
from tests.host._support import HostFactory, events, of_type, only_pending, payloads, start
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import InterruptAlreadyResolved, NotFound, ValidationError

ACCEPT = {"action": "accept"}


@pytest.mark.parametrize("order", [("left", "right"), ("right", "left")])
def test_two_gates_in_one_step_resolve_independently(host: WopHost, order: tuple[str, str]) -> None:
    run_id, snapshot = start(host, parallel_graph())
    assert snapshot["status"] == "waiting-approval"
    pending = host.pending_interrupts(run_id)
    assert sorted(r.node_id for r in pending) == ["left", "right"]
    assert len({r.key for r in pending}) == 2
    keys = {r.node_id: r.key for r in pending}

    first, second = order
    assert host.resolve(run_id, first, ACCEPT, ALICE)["status"] == "waiting-approval"
    # The other gate is untouched: same key, still pending, and its node has not run past it.
    assert only_pending(host, run_id).key == keys[second]
    assert count(f"{first}:past") == 1
    assert count(f"{second}:past") == 0
    assert count("join") == 0

    assert host.resolve(run_id, second, ACCEPT, ALICE)["status"] == "completed"
    assert count("left:past") == count("right:past") == count("join") == 1
    docs = events(host, run_id)
    assert sorted(p["nodeId"] for p in payloads(docs, "interrupt.resolved")) == ["left", "right"]
    (completed,) = payloads(docs, "run.completed")
    assert sorted(completed["outputs"]["log"]) == ["join", "left:accept", "right:accept"]


def test_subgraph_gate_is_addressed_as_parent_dot_child(host: WopHost) -> None:
    # "parent.child": the official nodeId grammar admits no "/" (ids.schema.json#/$defs/nodeId).
    run_id, snapshot = start(host, subgraph_graph())
    assert snapshot["status"] == "waiting-approval"
    assert snapshot["currentNodeId"] == "parent.child"
    gate = only_pending(host, run_id)
    assert gate.node_id == "parent.child"
    assert gate.key == f"{run_id}:parent.child:0:0"
    with pytest.raises(NotFound):
        host.resolve(run_id, "child", ACCEPT, ALICE)

    assert host.resolve(run_id, "parent.child", ACCEPT, ALICE)["status"] == "completed"
    docs = events(host, run_id)
    assert len(payloads(docs, "interrupt.requested")) == 1  # not again for the parent's copy
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["nodeId"] == "parent.child"
    assert count("child:past") == 1
    assert count("after") == 1


def test_send_fan_out_gates_are_each_resolvable_by_key(host: WopHost) -> None:
    items = ["a", "b", "c"]
    run_id, _ = start(host, send_graph(items))
    pending = host.pending_interrupts(run_id)
    assert len(pending) == 3
    assert {r.node_id for r in pending} == {"worker"}
    assert len({r.key for r in pending}) == 3
    assert len({r.interrupt_id for r in pending}) == 3
    by_item = {r.payload["data"]["artifactId"]: r.key for r in pending}
    assert set(by_item) == {"art-a", "art-b", "art-c"}

    for item in reversed(items):
        key = by_item[f"art-{item}"]
        result = host.resolve(run_id, "worker", ACCEPT, ALICE, key=key)
        assert count(f"worker:{item}:past") == 1
        with pytest.raises(InterruptAlreadyResolved):
            host.resolve(run_id, "worker", ACCEPT, ALICE, key=key)
        # The other workers' keys did not move.
        assert {r.key for r in host.pending_interrupts(run_id)} <= set(by_item.values())
    assert result["status"] == "completed"
    assert all(count(f"worker:{item}:past") == 1 for item in items)
    docs = events(host, run_id)
    assert sorted(p["key"] for p in payloads(docs, "interrupt.requested")) == sorted(by_item.values())
    assert len(of_type(docs, "interrupt.resolved")) == 3
    (completed,) = payloads(docs, "run.completed")
    assert sorted(completed["outputs"]["log"]) == ["a:accept", "b:accept", "c:accept"]


def test_static_breakpoint_graph_is_refused(make_host: HostFactory) -> None:
    host = make_host()
    with pytest.raises(ValidationError):
        host.register("breakpoints", breakpoint_graph())
    with pytest.raises(NotFound):
        host.create_run("breakpoints", {}, owner=ALICE)


def test_an_uncompiled_state_graph_is_refused_with_call_compile(make_host: HostFactory) -> None:
    """Registering the builder instead of ``builder.compile()`` says so, and registers nothing."""
    host = make_host()
    builder = StateGraph(dict)
    builder.add_node("step", lambda state: state)
    builder.add_edge(START, "step")
    with pytest.raises(TypeError, match=r"StateGraph that was not compiled; call \.compile\(\)"):
        host.register("uncompiled", builder)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a compiled graph"):
        host.register("not-a-graph", {"step": 1})  # type: ignore[arg-type]
    assert host.registry.workflow_ids() == []
    host.register("compiled", builder.compile())
    assert host.registry.workflow_ids() == ["compiled"]
