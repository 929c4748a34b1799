"""``core.orchestrator.supervisor`` and ``core.dispatch``: a supervisor's decisions, gated on confidence.

Behaviour from the official fixtures conformance-orchestrator-low-confidence.json (CP-1) and
conformance-multi-agent-confidence-escalation.json (RFC 0039 §A), and the payload definitions
``runOrchestratorDecided``, ``coreWorkflowChainConfidenceEscalated`` and ``coreWorkflowChainEvent``
of schemas/v2/run-event-payloads.schema.json, appended under their v2 names (the root
``_typeIndex``): ``orchestrator.decided``, ``workflow-chain.confidence-escalated``,
``workflow-chain.event``. The two nodes form a loop (supervisor -> dispatch
-> supervisor); the supervisor heads it, and a ``terminate`` decision carried out by the dispatch
ends the run.

- The supervisor is a conformance mock: no model runs. Turn ``n`` (counted from its own last
  outputs) takes ``config.mockDispatchPlan[n]``; on the first turn ``config.mockPendingDecision``
  stands in when there is no plan; past the plan the decision is ``{"kind": "terminate"}``.
  With ``config.mockConfidence`` (the agent's confidence in its pending decision) it goes
  through :func:`~wop_langgraph.nodes.escalate_on_low_confidence` first: below the run's
  escalation threshold (0.7 by default) the decision is *held*, no ``orchestrator.decided``
  is appended, and the node suspends with ``low-confidence`` until a person ratifies or
  replaces it. Then ``orchestrator.decided {agentId, decision}`` is appended.
- The dispatch carries out its supervisor's decision. A ``next-worker`` decision whose
  ``confidence`` is below the spec floor (0.5) is escalated before anything is dispatched:
  ``workflow-chain.confidence-escalated`` (``escalationKind: "escalate"``: the host asks
  with its ``low-confidence`` interrupt, answered like an approval), then the same
  low-confidence gate with the floor as threshold. Each worker is then started as a child run
  (as ``core.subWorkflow`` starts one), between ``workflow-chain.event`` phases
  ``dispatch.began`` and ``child.<status>``. ``terminate`` ends the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wop_langgraph.definitions.model import NodeSpec
from wop_langgraph.definitions.node_types import NodeInvocation, NodeType
from wop_langgraph.nodes import escalate_on_low_confidence
from wop_langgraph.nodes.context import current_call
from wop_langgraph.protocol.errors import ValidationError, WopError

if TYPE_CHECKING:
    from wop_langgraph.host.runtime import WopHost

__all__ = ["CONFIDENCE_FLOOR", "DECISION_SCHEMA", "dispatch_type", "dispatch_workers", "supervisor_type"]

#: RFC 0039 §A: the spec's confidence floor below which a dispatch escalates.
CONFIDENCE_FLOOR = 0.5
#: What a person may put in place of a held or escalated decision: the members this host acts on
#: (orchestrator-decision.schema.json itself is not vendored here).
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["kind"],
    "properties": {
        "kind": {"type": "string", "minLength": 1},
        "nextWorkerIds": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
_TERMINATE: dict[str, Any] = {"kind": "terminate"}


def supervisor_type() -> NodeType:
    """The mock ``core.orchestrator.supervisor`` (pure: it decides, the dispatch acts)."""
    return NodeType(
        "core.orchestrator.supervisor",
        _supervise,
        check=_check_supervisor,
        entry=True,
        source="conformance/fixtures/conformance-orchestrator-low-confidence.json",
    )


def dispatch_type(host: WopHost) -> NodeType:
    """The ``core.dispatch`` node type, bound to the host that runs the workers' child runs."""

    def run(invocation: NodeInvocation) -> Mapping[str, Any]:
        return _dispatch(host, invocation)

    return NodeType(
        "core.dispatch",
        run,
        ends_run=lambda outputs: outputs.get("terminated") is True,
        source="conformance/fixtures/conformance-multi-agent-confidence-escalation.json",
    )


def dispatch_workers(definition: Mapping[str, Any]) -> list[str]:
    """The workflows a definition's supervisors may dispatch (their mock decisions name them)."""
    workers: list[str] = []
    for node in definition.get("nodes", []):
        if not isinstance(node, Mapping) or node.get("typeId") != "core.orchestrator.supervisor":
            continue
        config = node.get("config") if isinstance(node.get("config"), Mapping) else {}
        assert isinstance(config, Mapping)
        decisions = [*(config.get("mockDispatchPlan") or []), config.get("mockPendingDecision") or {}]
        for decision in decisions:
            if isinstance(decision, Mapping):
                workers.extend(str(w) for w in decision.get("nextWorkerIds") or [] if w not in workers)
    return workers


def _agent_id(spec: NodeSpec) -> str:
    agent = spec.document.get("agent")
    agent_id = agent.get("agentId") if isinstance(agent, Mapping) else None
    return str(agent_id or spec.node_id)


def _supervise(invocation: NodeInvocation) -> Mapping[str, Any]:
    config = invocation.config
    previous = invocation.outputs.get(invocation.node_id) or {}
    turn = int(previous.get("iteration", 0))
    plan = config.get("mockDispatchPlan") or []
    if turn < len(plan):
        decision: Any = dict(plan[turn])
    elif turn == 0 and not plan and isinstance(config.get("mockPendingDecision"), Mapping):
        decision = dict(config["mockPendingDecision"])
    else:
        decision = dict(_TERMINATE)
    agent_id = _agent_id(invocation.spec)
    confidence = config.get("mockConfidence")
    if turn == 0 and isinstance(confidence, (int, float)) and not isinstance(confidence, bool):
        decision["confidence"] = confidence
        # CP-1: below the threshold the decision is held (no orchestrator.decided yet).
        decision = escalate_on_low_confidence(
            agent_id, decision, float(confidence), decision_schema=DECISION_SCHEMA
        )
    current_call().emit(
        "orchestrator.decided", {"agentId": agent_id, "decision": decision}, discriminator=turn
    )
    return {"decision": decision, "iteration": turn + 1, "agentId": agent_id}


def _check_supervisor(spec: NodeSpec) -> None:
    plan = spec.config.get("mockDispatchPlan")
    if plan is not None and not (isinstance(plan, list) and all(isinstance(d, Mapping) for d in plan)):
        raise ValidationError(f"node {spec.node_id!r}: config.mockDispatchPlan must be an array of decisions")
    confidence = spec.config.get("mockConfidence")
    if confidence is not None and not (
        isinstance(confidence, (int, float)) and not isinstance(confidence, bool) and 0 <= confidence <= 1
    ):
        raise ValidationError(f"node {spec.node_id!r}: config.mockConfidence must be a number from 0 to 1")


def _decision_of(invocation: NodeInvocation) -> tuple[str, Mapping[str, Any]]:
    for source in invocation.sources:
        outputs = invocation.outputs.get(source) or {}
        if isinstance(outputs.get("decision"), Mapping):
            return source, outputs["decision"]
    raise ValidationError(
        f"node {invocation.node_id!r}: core.dispatch found no supervisor decision to carry out"
    )


def _dispatch(host: WopHost, invocation: NodeInvocation) -> Mapping[str, Any]:
    from wop_langgraph.definitions.subworkflow import run_child  # subworkflow imports this module

    call = current_call()
    supervisor, decision = _decision_of(invocation)
    confidence = decision.get("confidence")
    workers = [str(w) for w in decision.get("nextWorkerIds") or []]
    if (
        decision.get("kind") == "next-worker"
        and isinstance(confidence, (int, float))
        and math.isfinite(confidence)
        and confidence < CONFIDENCE_FLOOR
    ):
        escalated: dict[str, Any] = {
            "confidence": confidence,
            "floor": CONFIDENCE_FLOOR,
            "escalationKind": "escalate",
            "parentRunId": call.run_id,
            "originalDecision": dict(decision),
        }
        if workers:
            escalated["workerId"] = workers[0]
        call.emit("workflow-chain.confidence-escalated", escalated, discriminator=supervisor)
        agent = invocation.outputs.get(supervisor, {}).get("agentId")
        replaced = escalate_on_low_confidence(
            str(agent or supervisor),
            dict(decision),
            float(confidence),
            CONFIDENCE_FLOOR,
            decision_schema=DECISION_SCHEMA,
        )
        decision = replaced if isinstance(replaced, Mapping) else decision
        workers = [str(w) for w in decision.get("nextWorkerIds") or []]
    if decision.get("kind") != "next-worker":
        terminated = decision.get("kind") == "terminate"
        return {"decision": dict(decision), "dispatched": [], "terminated": terminated}
    dispatched = []
    for worker in dict.fromkeys(workers):
        chain = {"workerId": worker, "parentRunId": call.run_id}
        call.emit("workflow-chain.event", {"phase": "dispatch.began", **chain}, discriminator=worker)
        try:
            child = run_child(host, invocation, worker, fail_parent=False)
        except WopError as exc:
            failed = {"phase": "dispatch.failed", **chain, "error": exc.error_object()}
            call.emit("workflow-chain.event", failed, discriminator=[worker, "dispatch.failed"])
            raise
        phase = f"child.{child['childStatus']}"
        call.emit(
            "workflow-chain.event",
            {"phase": phase, "childRunId": child["childRunId"], **chain},
            discriminator=[worker, phase],
        )
        dispatched.append({"workerId": worker, **child})
    return {"decision": dict(decision), "dispatched": dispatched, "terminated": False}
