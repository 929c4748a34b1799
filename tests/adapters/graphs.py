"""What the adapter HTTP tests serve: the examples of every shape (``tests.adapters.graphs:WORKFLOWS``)."""

from __future__ import annotations

from typing import Any

from wop_langgraph.examples import agent_inbox, functional_api, hitl_agent, plain_interrupt

WORKFLOWS: dict[str, Any] = {
    agent_inbox.WORKFLOW_ID: agent_inbox.build_graph(),
    hitl_agent.WORKFLOW_ID: hitl_agent.build_agent(),
    plain_interrupt.WORKFLOW_ID: plain_interrupt.build_graph(),
    functional_api.WORKFLOW_ID: functional_api.publish_flow,
}
