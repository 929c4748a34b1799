"""Approval policies given at registration: quorum and approvers for gates the graph's code cannot name.

An Agent Inbox ``HumanInterrupt`` or a ``HumanInTheLoopMiddleware`` request has no place for a
quorum or an approver list; ``register(..., approvals={node: ApprovalPolicy(...)})`` supplies
them without changing the graph, and the host enforces them as for ``request_approval``.
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from tests.adapters._support import outputs
from tests.host._graphs import ALICE
from tests.host._support import events, footprint, only_pending, payloads
from wop_langgraph.examples.agent_inbox import build_graph
from wop_langgraph.host import ApprovalPolicy, Principal, WopHost
from wop_langgraph.protocol.errors import Forbidden, ValidationError

BOB = Principal(ALICE.tenant, "bob", frozenset({"approvals:respond"}))
MALLORY = Principal(ALICE.tenant, "mallory", frozenset({"approvals:respond"}))
INPUTS = {"to": "ops@example.com", "body": "Release today"}
TWO_OF_ALICE_AND_BOB = ApprovalPolicy(required_approvals=2, approvers=["alice", "bob"])
_IDS = itertools.count()


def start(host: WopHost, graph: Any, approvals: dict[str, ApprovalPolicy], inputs: Any) -> str:
    workflow_id = f"policy-{next(_IDS)}"
    host.register(workflow_id, graph, approvals=approvals)
    return str(host.create_run(workflow_id, inputs, owner=ALICE)["runId"])


def tool_calls_graph() -> Any:
    """A node raising what ``HumanInTheLoopMiddleware`` raises for one tool call."""

    def review(state: dict[str, Any]) -> dict[str, Any]:
        request = {
            "action_requests": [{"name": "deploy", "args": {"env": "prod"}, "description": "Deploy?"}],
            "review_configs": [{"action_name": "deploy", "allowed_decisions": ["approve", "reject"]}],
        }
        return {"decisions": interrupt(request)}

    graph = StateGraph(dict)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile()


def test_a_registered_quorum_takes_two_people_on_an_agent_inbox_gate(host: WopHost) -> None:
    run_id = start(host, build_graph(), {"review": TWO_OF_ALICE_AND_BOB}, INPUTS)
    data = only_pending(host, run_id).payload["data"]
    assert (data["requiredApprovals"], data["approversList"]) == (2, ["alice", "bob"])
    assert data["artifactType"] == "langgraph.human-interrupt", "still the adapter's approval"
    (requested,) = payloads(events(host, run_id), "interrupt.requested")
    assert requested["data"]["requiredApprovals"] == 2

    accept = [{"type": "accept", "args": None}]
    assert host.resolve(run_id, "review", accept, ALICE)["status"] == "waiting-approval"
    before = footprint(host, run_id)
    assert host.resolve(run_id, "review", accept, ALICE)["status"] == "waiting-approval"
    assert footprint(host, run_id) == before, "one person is one vote"
    with pytest.raises(Forbidden):
        host.resolve(run_id, "review", accept, MALLORY)
    assert footprint(host, run_id) == before

    assert host.resolve(run_id, "review", accept, BOB)["status"] == "completed"
    assert outputs(host, run_id)["outcome"] == "sent"  # the node got the HumanResponse it expects
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert (resolved["decision"], resolved["resolvedBy"]["subjectId"]) == ("granted", "bob")


def test_a_registered_quorum_applies_to_middleware_tool_calls(host: WopHost) -> None:
    run_id = start(host, tool_calls_graph(), {"review": TWO_OF_ALICE_AND_BOB}, {})
    assert only_pending(host, run_id).payload["data"]["requiredApprovals"] == 2
    decisions = {"decisions": [{"type": "approve"}]}
    assert host.resolve(run_id, "review", decisions, ALICE)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", decisions, BOB)["status"] == "completed"
    assert outputs(host, run_id)["decisions"] == decisions


def test_a_registered_timeout_and_rejection_policy_are_carried(host: WopHost) -> None:
    policy = ApprovalPolicy(required_approvals=2, rejection_policy="majority", timeout=timedelta(hours=1))
    run_id = start(host, build_graph(), {"review": policy}, INPUTS)
    gate = only_pending(host, run_id)
    assert gate.payload["timeoutMs"] == 3_600_000 and gate.deadline is not None
    assert gate.payload["data"]["rejectionPolicy"] == "majority"


def test_without_a_policy_the_gate_is_a_single_approval(host: WopHost) -> None:
    other = start(host, build_graph(), {}, INPUTS)
    data = only_pending(host, other).payload["data"]
    assert "requiredApprovals" not in data and "approversList" not in data
    assert host.resolve(other, "review", {"action": "accept"}, MALLORY)["status"] == "completed"


def test_node_api_calls_keep_their_own_arguments(host: WopHost) -> None:
    from wop_langgraph.nodes import request_approval

    def gate(state: dict[str, Any]) -> dict[str, Any]:
        return {"granted": request_approval("doc", "document", "Publish?").granted}

    graph = StateGraph(dict)
    graph.add_node("gate", gate)
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    run_id = start(host, graph.compile(), {"gate": TWO_OF_ALICE_AND_BOB}, {})
    assert "requiredApprovals" not in only_pending(host, run_id).payload["data"]
    assert host.resolve(run_id, "gate", {"action": "accept"}, MALLORY)["status"] == "completed"


@pytest.mark.parametrize(
    ("approvals", "message"),
    [
        ({"nowhere": ApprovalPolicy(required_approvals=2)}, "approval policies name unknown nodes: nowhere"),
        ({"review": ApprovalPolicy(required_approvals=0)}, "requiredApprovals"),
        ({"review": ApprovalPolicy(rejection_policy="coin-flip")}, "rejectionPolicy"),
    ],
)
def test_a_policy_no_approval_can_carry_is_refused_at_registration(
    host: WopHost, approvals: dict[str, ApprovalPolicy], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        host.register("refused", build_graph(), approvals=approvals)
    assert "refused" not in host.registry
