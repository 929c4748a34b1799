"""``request_approval(profile="openwop-interrupt-auth-required")`` in a hand-written graph.

The profile is host-side: it is stored with the interrupt (the server refuses signed-token
resolves of such a gate, tests/server/test_fixture_scenarios.py), never written into the
closed InterruptPayload; a bearer resolve by run still decides the gate.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from tests.host._graphs import ALICE
from tests.host._support import events, payloads, start
from tests.official import payload_errors
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import request_approval
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.store.interrupts import interrupts_of_run

AUTH_REQUIRED = "openwop-interrupt-auth-required"


class State(TypedDict, total=False):
    decision: str


def _graph(profile: str | None) -> Any:
    def gate(state: State) -> State:
        return {"decision": request_approval("doc", "text", "Publish?", profile=profile).action}

    g = StateGraph(State)
    g.add_node("gate", gate)
    g.add_edge(START, "gate")
    g.add_edge("gate", END)
    return g.compile()


def test_the_profile_is_stored_with_the_interrupt_and_not_in_its_payload(host: WopHost) -> None:
    run_id, snapshot = start(host, _graph(AUTH_REQUIRED))
    assert snapshot["status"] == "waiting-approval"
    with host.engine.connect() as conn:
        (record,) = interrupts_of_run(conn, run_id)
    assert record.profiles == [AUTH_REQUIRED]
    (requested,) = payloads(events(host, run_id), "interrupt.requested")
    assert "profile" not in requested["data"] and payload_errors("interrupt.requested", requested) == []
    assert host.resolve(run_id, "gate", {"action": "accept"}, ALICE)["status"] == "completed"


def test_a_gate_without_a_profile_stores_none(host: WopHost) -> None:
    run_id, _ = start(host, _graph(None))
    with host.engine.connect() as conn:
        (record,) = interrupts_of_run(conn, run_id)
    assert record.profiles is None


def test_an_unknown_profile_is_refused_before_suspending() -> None:
    with pytest.raises(ValidationError, match="unknown interrupt profile"):
        _graph("openwop-interrupt-quorum").invoke({})
