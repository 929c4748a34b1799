"""Timeouts: the sweep rejects expired approvals (whatever onTimeout says) and expires the other kinds."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from tests.host._graphs import ALICE, approval_graph, clarification_graph, count
from tests.host._support import HostFactory, events, of_type, payloads, start
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import InterruptAlreadyResolved


def later(seconds: float = 3600) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


@pytest.mark.parametrize("on_timeout", [None, "approve", "escalate"])
def test_expired_approval_is_rejected(host: WopHost, on_timeout: str | None) -> None:
    run_id, _ = start(host, approval_graph(timeout=60, on_timeout=on_timeout))
    (gate,) = host.pending_interrupts(run_id)
    assert gate.payload["timeoutMs"] == 60_000
    # "approve" is emitted as "reject" (a host MUST treat it so and SHOULD NOT emit it).
    assert gate.payload["data"].get("onTimeout") == ("reject" if on_timeout == "approve" else on_timeout)

    assert host.sweep(now=datetime.now(UTC)) == 0  # not yet
    assert host.sweep(now=later()) == 1
    docs = events(host, run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["action"] == "timeout"
    assert resolved["decision"] == "rejected"
    assert resolved["reason"] == "timeout"
    assert "resolvedBy" not in resolved
    assert len(of_type(docs, "approval.rejected")) == 1
    (run_failed,) = payloads(docs, "run.failed")
    assert (run_failed["error"]["code"], run_failed["failedNodeId"]) == ("approval_rejected", "review")
    (node_failed,) = payloads(docs, "node.failed")
    assert node_failed["error"]["code"] == "approval_rejected"
    snapshot = host.snapshot(run_id)
    assert (snapshot["status"], snapshot["error"]["code"]) == ("failed", "approval_rejected")
    assert count("review:past") == 0
    assert count("publish") == 0
    with pytest.raises(InterruptAlreadyResolved):
        host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    assert host.sweep(now=later(7200)) == 0


def test_approval_resolved_before_its_deadline_completes(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(timeout=60))
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE)["status"] == "completed"
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert resolved["action"] == "accept" and resolved["resolvedBy"]["subjectId"] == "alice"
    assert count("publish") == 1


def test_approval_without_timeout_never_expires(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    assert host.sweep(now=later(10 * 365 * 86400)) == 0
    assert host.snapshot(run_id)["status"] == "waiting-approval"


def test_timed_out_approval_follows_its_rejection_route(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(timeout=60, routed=True), rejection_routes={"review": "revise"})
    assert host.sweep(now=later()) == 1
    assert count("revise") == 1
    assert host.snapshot(run_id)["status"] == "completed"


def test_expired_clarification_fails_its_node(host: WopHost) -> None:
    run_id, _ = start(host, clarification_graph(timeout=60))
    assert host.sweep(now=later()) == 1
    docs = events(host, run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["reason"] == "timeout"
    assert "resolvedBy" not in resolved
    (node_failed,) = payloads(docs, "node.failed")
    assert (node_failed["nodeId"], node_failed["error"]["code"]) == ("clarify", "interrupt_expired")
    (run_failed,) = payloads(docs, "run.failed")
    assert run_failed["error"]["code"] == "interrupt_expired"
    assert host.snapshot(run_id)["status"] == "failed"
    assert [r.status for r in host.interrupts(run_id)] == ["expired"]
    assert count("clarify:past") == 0


@pytest.mark.slow
def test_concurrent_sweeps_time_each_interrupt_out_once(make_host: HostFactory) -> None:
    hosts = [make_host(), make_host()]
    run_ids = []
    for index in range(3):
        graph = approval_graph(timeout=60) if index % 2 == 0 else clarification_graph(timeout=60)
        run_id, snapshot = start(hosts[0], graph)
        hosts[1].register(snapshot["workflowId"], graph)
        run_ids.append(run_id)
    now = later()
    barrier = threading.Barrier(4)
    swept: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def sweeper(host: WopHost) -> None:
        barrier.wait(30)
        try:
            n = host.sweep(now=now)
        except BaseException as exc:
            with lock:
                errors.append(exc)
            return
        with lock:
            swept.append(n)

    threads = [threading.Thread(target=sweeper, args=(h,)) for h in hosts * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sum(swept) == 3, swept
    for run_id in run_ids:
        assert host_status(hosts[0], run_id) == "failed"
        assert len(payloads(events(hosts[0], run_id), "interrupt.resolved")) == 1
        assert len(payloads(events(hosts[0], run_id), "run.failed")) == 1


def host_status(host: WopHost, run_id: str) -> str:
    status: str = host.snapshot(run_id)["status"]
    return status


def test_a_late_question_times_the_gate_out_too(make_host: HostFactory) -> None:
    now = [datetime.now(UTC)]
    host = make_host(clock=lambda: now[0])
    run_id, _ = start(host, approval_graph(timeout=60, actions=["accept", "reject", "ask"]))
    ask = {"action": "ask", "feedback": "Which version?"}
    assert host.resolve(run_id, "review", ask, ALICE)["status"] == "waiting-approval"  # in time
    assert not payloads(events(host, run_id), "interrupt.resolved")
    now[0] += timedelta(seconds=61)
    with pytest.raises(InterruptAlreadyResolved, match="timed out"):
        host.resolve(run_id, "review", ask, ALICE)
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert (resolved["action"], resolved["decision"], resolved["reason"]) == (
        "timeout",
        "rejected",
        "timeout",
    )
    assert host.snapshot(run_id)["status"] == "failed"


@pytest.mark.parametrize("kind", ["approval", "clarification"])
def test_a_late_answer_times_the_gate_out_with_no_sweep(make_host: HostFactory, kind: str) -> None:
    """The deadline is decided in the resolve's own transaction: no sweep ran, the answer came late."""
    now = [datetime.now(UTC)]
    host = make_host(clock=lambda: now[0])
    graph = approval_graph(timeout=60) if kind == "approval" else clarification_graph(timeout=60)
    run_id, _ = start(host, graph)
    (gate,) = host.pending_interrupts(run_id)
    value = {"action": "accept"} if kind == "approval" else {"answers": {"colour": "red", "copies": 1}}
    now[0] += timedelta(seconds=61)  # past the deadline by a second; the sweep never runs
    with pytest.raises(InterruptAlreadyResolved, match="timed out"):
        host.resolve(run_id, gate.node_id, value, ALICE)
    docs = events(host, run_id)
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["reason"] == "timeout" and "resumeValue" not in resolved
    if kind == "approval":
        assert (resolved["action"], resolved["decision"]) == ("timeout", "rejected")
    assert host.snapshot(run_id)["status"] == "failed"  # the late accept granted nothing
    assert count("publish") == 0
    with pytest.raises(InterruptAlreadyResolved):  # and a retry is answered the same way
        host.resolve(run_id, gate.node_id, value, ALICE)
