"""The resolve contract's refusals: strict resume, unknown nodes, cancel, idempotency, tenants."""

from __future__ import annotations

import pytest

from tests.host._graphs import ALICE, approval_graph, count, parallel_graph
from tests.host._support import events, footprint, of_type, only_pending, payloads, start
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.protocol.errors import (
    IdempotencyKeyInvalid,
    IdempotencyKeyMismatch,
    IdTenantMismatch,
    InterruptAlreadyResolved,
    NotFound,
    RunTerminal,
)

ACCEPT = {"action": "accept"}
IDEM_KEY = "resolve-0123456789abcdefghij"


def test_resolving_twice_is_interrupt_already_resolved(host: WopHost) -> None:
    run_id, _ = start(host, parallel_graph())
    host.resolve(run_id, "left", ACCEPT, ALICE)
    assert host.snapshot(run_id)["status"] == "waiting-approval"  # right is still pending
    before = footprint(host, run_id)
    with pytest.raises(InterruptAlreadyResolved) as info:
        host.resolve(run_id, "left", ACCEPT, ALICE)
    assert (info.value.status, info.value.code) == (409, "interrupt_already_resolved")
    assert footprint(host, run_id) == before
    assert count("left:past") == 1


def test_resolve_after_completion_is_interrupt_already_resolved(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    host.resolve(run_id, "review", ACCEPT, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
    with pytest.raises(InterruptAlreadyResolved):
        host.resolve(run_id, "review", ACCEPT, ALICE)
    assert count("review:past") == 1
    assert len(payloads(events(host, run_id), "interrupt.resolved")) == 1


def test_resolving_a_node_without_interrupt_is_not_found(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    before = footprint(host, run_id)
    for node_id in ("no-such-node", "write", "publish"):
        with pytest.raises(NotFound) as info:
            host.resolve(run_id, node_id, ACCEPT, ALICE)
        assert (info.value.status, info.value.code) == (404, "not_found")
    assert footprint(host, run_id) == before


def test_resolving_an_unknown_run_is_not_found(host: WopHost) -> None:
    start(host, approval_graph())
    with pytest.raises(NotFound):
        host.resolve("acme/AAAAAAAAAAAAAAAAAAAAAA", "review", ACCEPT, ALICE)


def test_unknown_key_is_not_found(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    with pytest.raises(NotFound):
        host.resolve(run_id, "review", ACCEPT, ALICE, key=f"{run_id}:review:9:0")


# -- cancel ----------------------------------------------------------------------------------


def test_cancel_makes_pending_interrupts_unresolvable(host: WopHost) -> None:
    run_id, _ = start(host, parallel_graph())
    assert len(host.pending_interrupts(run_id)) == 2
    result = host.cancel(run_id, reason="user-cancelled", principal=ALICE)
    assert result == {"runId": run_id, "status": "cancelled"}
    snapshot = host.snapshot(run_id)
    assert snapshot["status"] == "cancelled"
    assert "currentNodeId" not in snapshot
    assert host.pending_interrupts(run_id) == []
    assert {r.status for r in host.interrupts(run_id)} == {"cancelled"}
    for node in ("left", "right"):
        with pytest.raises(InterruptAlreadyResolved) as info:
            host.resolve(run_id, node, ACCEPT, ALICE)
        assert info.value.status == 409
    docs = events(host, run_id)
    assert docs[-1]["type"] == "run.cancelled"
    assert docs[-1]["payload"] == {"reason": "user-cancelled", "cancelledBy": "alice"}
    assert not of_type(docs, "interrupt.resolved")
    assert count("left:past") == count("right:past") == count("join") == 0


def test_cancel_without_principal_or_reason(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    host.cancel(run_id)
    assert payloads(events(host, run_id), "run.cancelled") == [{}]


def test_cancelling_a_terminal_run_is_run_terminal(host: WopHost) -> None:
    cancelled, _ = start(host, approval_graph())
    host.cancel(cancelled)
    with pytest.raises(RunTerminal) as info:
        host.cancel(cancelled)
    assert (info.value.status, info.value.code) == (409, "run_terminal")

    completed, _ = start(host, approval_graph())
    host.resolve(completed, "review", ACCEPT, ALICE)
    with pytest.raises(RunTerminal):
        host.cancel(completed)
    assert len(of_type(events(host, cancelled), "run.cancelled")) == 1
    assert not of_type(events(host, completed), "run.cancelled")
    assert host.snapshot(completed)["status"] == "completed"


def test_cancelling_an_unknown_run_is_not_found(host: WopHost) -> None:
    with pytest.raises(NotFound):
        host.cancel("acme/AAAAAAAAAAAAAAAAAAAAAA")


# -- Idempotency-Key -------------------------------------------------------------------------


def test_idempotent_replay_returns_the_first_response_and_resolves_once(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    first = host.resolve(run_id, "review", ACCEPT, ALICE, idempotency_key=IDEM_KEY)
    assert first == {"runId": run_id, "nodeId": "review", "status": "completed", "outputs": first["outputs"]}
    second = host.resolve(run_id, "review", ACCEPT, ALICE, idempotency_key=IDEM_KEY)
    assert second == first
    docs = events(host, run_id)
    assert len(of_type(docs, "interrupt.resolved")) == 1
    assert len(of_type(docs, "run.completed")) == 1
    assert count("review:past") == 1


def test_idempotent_replay_of_a_parked_vote(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    bob = Principal("acme", "bob")
    first = host.resolve(run_id, "review", ACCEPT, bob, idempotency_key=IDEM_KEY)
    assert first["status"] == "waiting-approval"
    before = footprint(host, run_id)
    assert host.resolve(run_id, "review", ACCEPT, bob, idempotency_key=IDEM_KEY) == first
    assert footprint(host, run_id) == before


def test_same_idempotency_key_with_another_body_is_a_mismatch(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    host.resolve(run_id, "review", ACCEPT, ALICE, idempotency_key=IDEM_KEY)
    before = footprint(host, run_id)
    with pytest.raises(IdempotencyKeyMismatch) as info:
        host.resolve(run_id, "review", {"action": "reject"}, ALICE, idempotency_key=IDEM_KEY)
    assert (info.value.status, info.value.code) == (409, "idempotency_key_mismatch")
    assert footprint(host, run_id) == before


def test_malformed_idempotency_key_is_invalid(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    before = footprint(host, run_id)
    for bad_key in ("short", "has space in it 0123456789abc", "x" * 129, ""):
        with pytest.raises(IdempotencyKeyInvalid) as info:
            host.resolve(run_id, "review", ACCEPT, ALICE, idempotency_key=bad_key)
        assert (info.value.status, info.value.code) == (400, "idempotency_key_invalid")
    assert footprint(host, run_id) == before
    assert host.snapshot(run_id)["status"] == "waiting-approval"


def test_idempotent_replay_of_a_conflict_replays_the_conflict(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    host.resolve(run_id, "review", ACCEPT, ALICE)
    key = "conflict-0123456789abcdefghij"
    for _ in range(2):
        with pytest.raises(InterruptAlreadyResolved):
            host.resolve(run_id, "review", ACCEPT, ALICE, idempotency_key=key)


# -- tenants ---------------------------------------------------------------------------------


def test_principal_of_another_tenant_is_id_tenant_mismatch(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    intruder = Principal("globex", "alice", frozenset({"approvals:respond"}))
    before = footprint(host, run_id)
    with pytest.raises(IdTenantMismatch) as info:
        host.resolve(run_id, "review", ACCEPT, intruder)
    assert (info.value.status, info.value.code) == (403, "id_tenant_mismatch")
    assert footprint(host, run_id) == before
    only_pending(host, run_id, "review")
