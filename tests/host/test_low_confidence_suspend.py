"""The low-confidence ``node.suspended`` carries agentId, threshold and observed (in the schema's hatch)."""

from __future__ import annotations

from tests.host._graphs import approval_graph, low_confidence_graph
from tests.host._support import events, payloads, start
from tests.official import payload_errors
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.event_payloads import NodeSuspended


def test_low_confidence_suspension_names_the_agent_threshold_and_observation(host: WopHost) -> None:
    run_id, _ = start(host, low_confidence_graph(), {"decision": "route-a", "confidence": 0.25})
    (suspended,) = payloads(events(host, run_id), "node.suspended")
    assert suspended["reason"] == "low-confidence"
    assert (suspended["x-agentId"], suspended["x-threshold"], suspended["x-observed"]) == (
        "triage-agent",
        0.7,
        0.25,
    )
    # The official def is closed: the values may only ride in its extension hatch.
    assert payload_errors("node.suspended", suspended) == []
    assert payload_errors("node.suspended", {**suspended, "agentId": "triage-agent"}) != []
    assert NodeSuspended.model_validate(suspended).extensions == {
        "x-agentId": "triage-agent",
        "x-threshold": 0.7,
        "x-observed": 0.25,
    }


def test_other_kinds_carry_no_extension_members(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    (suspended,) = payloads(events(host, run_id), "node.suspended")
    assert set(suspended) == {"nodeId", "interruptId", "kind", "reason", "key"}
