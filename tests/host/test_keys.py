"""Interrupt keys: stable across replay and recovery, new for a later visit, distinct per call."""

from __future__ import annotations

from typing import Any

import pytest

from tests.host._graphs import ALICE, approval_graph, count, loop_graph, subgraph_graph, two_asks_graph
from tests.host._support import HostFactory, events, only_pending, payloads, start
from wop_langgraph.host import WopHost


def test_recovery_by_a_new_host_keeps_key_and_interrupt_id(make_host: HostFactory) -> None:
    first = make_host()
    run_id, snapshot = start(first, approval_graph())
    before = only_pending(first, run_id)
    assert before.key == f"{run_id}:review:0:0"

    second = make_host()  # a "recovery": a fresh host over the same database
    second.register(snapshot["workflowId"], approval_graph())
    assert second.recover() == 0  # nothing was claimed, so nothing to deliver
    after = only_pending(second, run_id)
    assert (after.key, after.interrupt_id) == (before.key, before.interrupt_id)

    result = second.resolve(run_id, "review", {"action": "accept"}, ALICE)
    assert result == {"runId": run_id, "nodeId": "review", "status": "completed"}
    docs = events(second, run_id)
    requested = payloads(docs, "interrupt.requested")
    assert [p["key"] for p in requested] == [before.key]
    suspended = payloads(docs, "node.suspended")
    assert [(p["interruptId"], p["key"]) for p in suspended] == [(before.interrupt_id, before.key)]
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["interruptId"] == before.interrupt_id
    (resumed,) = payloads(docs, "node.resumed")
    assert resumed == {"nodeId": "review", "interruptId": before.interrupt_id}
    assert count("review:past") == 1


def test_loop_back_to_the_same_node_gets_a_new_key(host: WopHost) -> None:
    run_id, snapshot = start(host, loop_graph(rounds=2))
    assert snapshot["status"] == "waiting-input"
    first = only_pending(host, run_id)
    assert (first.key, first.visit_index, first.ordinal) == (f"{run_id}:gate:0:0", 0, 0)

    host.resolve(run_id, "gate", {"answers": {"q": "first"}}, ALICE)
    second = only_pending(host, run_id)
    assert (second.key, second.visit_index, second.ordinal) == (f"{run_id}:gate:1:0", 1, 0)
    assert second.interrupt_id != first.interrupt_id
    assert host.snapshot(run_id)["status"] == "waiting-input"
    docs = events(host, run_id)
    assert [p["key"] for p in payloads(docs, "interrupt.requested")] == [first.key, second.key]

    host.resolve(run_id, "gate", {"answers": {"q": "second"}}, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
    # The second visit never saw the first visit's answer.
    (completed,) = payloads(events(host, run_id), "run.completed")
    assert completed["outputs"]["log"] == ["first", "second"]
    assert count("gate:past") == 2
    keys = [r.key for r in host.interrupts(run_id)]
    assert sorted(keys) == sorted({first.key, second.key})


def test_two_interrupts_in_one_execution_get_distinct_ordinals(host: WopHost) -> None:
    run_id, _ = start(host, two_asks_graph())
    a = only_pending(host, run_id)
    assert (a.key, a.visit_index, a.ordinal) == (f"{run_id}:form:0:0", 0, 0)

    host.resolve(run_id, "form", {"answers": {"a": "x"}}, ALICE)
    b = only_pending(host, run_id)
    assert (b.key, b.visit_index, b.ordinal) == (f"{run_id}:form:0:1", 0, 1)
    assert b.interrupt_id != a.interrupt_id
    assert b.payload["data"]["questions"][0]["id"] == "b"

    host.resolve(run_id, "form", {"answers": {"b": "y"}}, ALICE)
    snapshot = host.snapshot(run_id)
    assert snapshot["status"] == "completed"
    (completed,) = payloads(events(host, run_id), "run.completed")
    assert completed["outputs"]["result"] == {"a": "x", "b": "y"}
    assert count("form:past") == 1
    assert [r.key for r in host.interrupts(run_id)] == [a.key, b.key]


def test_a_runs_first_interrupt_in_the_drive_that_created_it_reads_no_interrupts(
    host: WopHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run cannot hold one yet: the read is skipped, the key is as a read would make it.
    # A later interrupt (a drive of a resume) reads them, and so does the parent graph's copy of
    # a subgraph's interrupt (recorded after the subgraph's own, in the same drive).
    from wop_langgraph.host import recorder

    reads: list[str] = []
    known = recorder.known_interrupts

    def counted(conn: Any, run_id: str) -> list[Any]:
        reads.append(run_id)
        return known(conn, run_id)

    monkeypatch.setattr(recorder, "known_interrupts", counted)
    run_id, _ = start(host, two_asks_graph())
    assert reads == []
    assert only_pending(host, run_id).key == f"{run_id}:form:0:0"
    host.resolve(run_id, "form", {"answers": {"a": "x"}}, ALICE, wait=True)
    assert reads == [run_id]
    assert only_pending(host, run_id).key == f"{run_id}:form:0:1"

    reads.clear()
    run_id, snapshot = start(host, subgraph_graph())
    assert snapshot["status"] == "waiting-approval"
    assert reads == [run_id]  # the parent's copy, which finds the interrupt and records nothing
    assert [r.key for r in host.interrupts(run_id)] == [f"{run_id}:parent.child:0:0"]


def test_keys_are_unique_per_run_and_at_most_256_chars(host: WopHost) -> None:
    run_a, _ = start(host, loop_graph(rounds=1))
    run_b, _ = start(host, loop_graph(rounds=1))
    key_a = only_pending(host, run_a).key
    key_b = only_pending(host, run_b).key
    assert key_a != key_b
    assert 1 <= len(key_a) <= 256
