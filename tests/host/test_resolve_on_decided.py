"""``WopHost.resolve(on_decided=...)``: the caller's write runs in the transaction that decides
the gate, so it commits with the decision or not at all, and never for a vote that decides
nothing (how the LangGraph API marks a thread updated on a resume without a transaction of its own)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import only_pending, start
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store.engine import Connection

ACCEPT = {"action": "accept"}
BOB = Principal("acme", "bob", frozenset({"approvals:respond"}))


class Refused(Exception):
    pass


@pytest.mark.parametrize("wait", [True, False])
def test_the_hook_sees_the_decision_in_its_transaction(host: WopHost, wait: bool) -> None:
    run_id, _ = start(host, approval_graph())
    seen: list[tuple[bool, str]] = []

    def hook(conn: Connection) -> None:
        status = conn.execute(
            text("SELECT status FROM wop_interrupts WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
        seen.append((conn.in_transaction(), str(status)))

    host.resolve(run_id, "review", ACCEPT, ALICE, wait=wait, on_decided=hook)
    assert seen == [(True, "resolved")]
    if not wait:
        host.run_until_idle()
    assert host.snapshot(run_id)["status"] == "completed"


@pytest.mark.parametrize("wait", [True, False])
def test_a_hook_that_raises_rolls_the_decision_back(host: WopHost, wait: bool) -> None:
    run_id, _ = start(host, approval_graph())

    def hook(conn: Connection) -> None:
        raise Refused

    with pytest.raises(Refused):
        host.resolve(run_id, "review", ACCEPT, ALICE, wait=wait, on_decided=hook)
    assert only_pending(host, run_id).node_id == "review"  # still pending, nothing applied
    assert host.snapshot(run_id)["status"] == "waiting-approval"
    host.resolve(run_id, "review", ACCEPT, ALICE)  # and it can still be decided
    assert host.snapshot(run_id)["status"] == "completed"


def test_a_vote_that_decides_nothing_does_not_call_the_hook(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    calls: list[str] = []
    host.resolve(run_id, "review", ACCEPT, BOB, on_decided=lambda conn: calls.append("bob"))
    assert calls == []  # one vote of two
    host.resolve(run_id, "review", ACCEPT, ALICE, on_decided=lambda conn: calls.append("alice"))
    assert calls == ["alice"]
    assert host.snapshot(run_id)["status"] == "completed"
