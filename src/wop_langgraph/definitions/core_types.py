"""The core node types the official interrupt fixtures use, and the ones this host refuses.

Where each behaviour comes from (OpenWOP spec repository, openwop/openwop):

- ``core.noop``: conformance/fixtures.md (Noop: completes at once); outputs are its inputs.
- ``core.approvalGate``: spec/v2/core/interrupt.md (kind ``approval``; config members are the
  ``ApprovalData`` members of schemas/v2/suspend-request.schema.json, plus ``timeoutMs`` and
  ``profile``, spec/v1/interrupt-profiles.md, of which only ``openwop-interrupt-auth-required``);
  fixtures conformance-approval*.json, conformance-interrupt-quorum.json,
  conformance-interrupt-auth-required.json.
- ``core.clarificationGate``: interrupt.md (kind ``clarification``), conformance-clarification.json
  (answers are strings unless a question carries its own ``schema``).
- ``core.interrupt``: interrupt.md; ``config.kind`` + ``config.data`` are an InterruptPayload's
  ``kind`` and ``data`` (conformance-interrupt-external-event.json).
- ``core.conversationGate``: spec/v2/core/conversation.md and the conversation fixtures' descriptions
  (open, exchange, close; ``mockAutoResume`` is the host's conformance mock answering each turn);
  gated on the host's conversation capability.
- ``core.delay``: conformance-cancellable.json (sleeps ``inputs.delayMs``, 0..60000 ms). A timer,
  not a side effect: waiting is nothing "observable outside the run's own event log" (replay.md
  §Suppression rule 1), so a replay re-executes it live, for the full delay, like any pure node
  ("Pure nodes ... MUST re-execute live"). conformance-replay-ordinal-loop.json needs this: its
  fork re-runs a ``wait`` the cancelled source never finished, to reach ``effect``'s second
  execution. (conformance-replay-side-effect.json says "the registry declares ``core.delay``
  side-effecting" and so holds with ``core.conformance.hold`` instead; no spec text or pack
  manifest declaring it ``role: "side-effect"`` was found, and rule 4 binds only such a manifest.)
- ``core.conformance.hold``: conformance/CHANGELOG.md 2.44.4/2.44.5 (pure, completes after
  ``inputs.delayMs``, its outputs are exactly its resolved inputs).
- ``core.conformance.side-effect``: conformance-replay-side-effect.json (a reserved type the host
  classifies as side-effecting; its effect itself is irrelevant). Each performance has a new
  ``effectId``, so a replay's outcome is seen to be the recorded one, not performed again.
- ``core.subWorkflow``: spec/v2/core/execution.md §subWorkflow (definitions/subworkflow.py; bound
  to the host by ``load_definitions`` / ``register_definition``).
- ``core.conformance.mock-agent``: conformance-agent-low-confidence.json (``config.mockDecision``
  ``{decision, confidence}`` emitted as ``agent.decided`` by ``node.agent.agentId``; below the
  run's threshold it suspends ``low-confidence``).
- ``core.orchestrator.supervisor`` and ``core.dispatch``: definitions/orchestrator.py (the
  dispatch is bound to the host, like ``core.subWorkflow``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from wop_langgraph.definitions.model import NodeSpec
from wop_langgraph.definitions.node_types import NodeInvocation, NodeType, NodeTypeRegistry
from wop_langgraph.definitions.orchestrator import supervisor_type
from wop_langgraph.nodes import (
    ask,
    close_conversation,
    custom_interrupt,
    escalate_on_low_confidence,
    exchange,
    request_approval,
    start_conversation,
    wait_for_event,
)
from wop_langgraph.nodes.context import current_call
from wop_langgraph.nodes.suspend import PROFILES
from wop_langgraph.protocol.errors import ValidationError

__all__ = ["MAX_DELAY_MS", "default_node_types"]

MAX_DELAY_MS = 60_000
_REFUSED = {
    "core.subWorkflow": "it needs the host that runs its child runs: load it with WopHost.load_definitions "
    "or register_definition",
    "core.dispatch": "it needs the host that runs its workers' child runs: load it with "
    "WopHost.load_definitions or register_definition",
    "core.ai.structuredOutput": "this host runs no AI model nodes (no aiProviders, no mock provider)",
}


def default_node_types() -> NodeTypeRegistry:
    """A new registry with the core types; add your own with ``register``."""
    registry = NodeTypeRegistry()
    for node_type in (
        NodeType("core.noop", _noop, source="conformance/fixtures.md"),
        NodeType(
            "core.approvalGate",
            _approval_gate,
            check=_check_approval_gate,
            source="spec/v2/core/interrupt.md",
        ),
        NodeType(
            "core.clarificationGate",
            _clarification_gate,
            check=_check_questions,
            source="spec/v2/core/interrupt.md",
        ),
        NodeType("core.interrupt", _interrupt, check=_check_interrupt, source="spec/v2/core/interrupt.md"),
        NodeType(
            "core.conversationGate",
            _conversation_gate,
            requires=frozenset({"conversation"}),
            source="spec/v2/core/conversation.md",
        ),
        NodeType("core.delay", _delay, source="conformance/fixtures/conformance-cancellable.json"),
        NodeType("core.conformance.hold", _hold, source="conformance/CHANGELOG.md 2.44.4"),
        NodeType(
            "core.conformance.side-effect",
            _side_effect,
            side_effecting=True,
            source="conformance/fixtures/conformance-replay-side-effect.json",
        ),
        NodeType(
            "core.conformance.mock-agent",
            _mock_agent,
            check=_check_mock_agent,
            source="conformance/fixtures/conformance-agent-low-confidence.json",
        ),
        supervisor_type(),
    ):
        registry.register(node_type)
    for type_id, reason in _REFUSED.items():
        registry.refuse(type_id, reason)
    return registry


def _noop(invocation: NodeInvocation) -> Mapping[str, Any]:
    return dict(invocation.inputs)


def _approval_gate(invocation: NodeInvocation) -> Mapping[str, Any]:
    config = invocation.config
    return _approve(invocation.spec, config, invocation.inputs, profile=config.get("profile"))


def _approve(
    spec: NodeSpec, data: Mapping[str, Any], inputs: Mapping[str, Any], *, profile: str | None = None
) -> Mapping[str, Any]:
    decision = request_approval(
        str(data.get("artifactId") or spec.node_id),
        str(data.get("artifactType") or spec.document.get("artifactType") or "application/json"),
        str(data.get("title") or spec.document.get("name") or spec.node_id),
        actions=data.get("actions") or ("accept", "reject"),
        artifact_data=data.get("artifactData", inputs.get("artifact")),
        description=data.get("description"),
        required_approvals=data.get("requiredApprovals"),
        approvers=data.get("approversList"),
        rejection_policy=data.get("rejectionPolicy"),
        override_bypasses_quorum=data.get("overrideBypassesQuorum"),
        group_refs=data.get("approverGroupRefs"),
        role_refs=data.get("approverRoleRefs"),
        audience=data.get("audience"),
        timeout=_seconds(spec.config.get("timeoutMs", data.get("timeoutMs"))),
        on_timeout=data.get("onTimeout"),
        profile=profile,
    )
    outputs: dict[str, Any] = {"action": decision.action, "decision": decision.decision}
    if decision.feedback is not None:
        outputs["feedback"] = decision.feedback
    if decision.refine_feedback is not None:
        outputs["refineFeedback"] = decision.refine_feedback
    if decision.edited_artifact_data is not None:
        outputs["editedArtifactData"] = decision.edited_artifact_data
    return outputs


def _clarification_gate(invocation: NodeInvocation) -> Mapping[str, Any]:
    config = invocation.config
    # An answer is a string unless the question says otherwise (the fixture's resume schema is
    # {answers: {q1: string}}).
    questions = [{"schema": {"type": "string"}, **q} for q in config["questions"]]
    answers = ask(
        questions, context_type=config.get("contextType"), timeout=_seconds(config.get("timeoutMs"))
    )
    return {"answers": answers}


def _interrupt(invocation: NodeInvocation) -> Mapping[str, Any]:
    config = invocation.config
    kind, data = config["kind"], config.get("data") or {}
    timeout = _seconds(config.get("timeoutMs"))
    if kind == "external-event":
        return {"event": wait_for_event(data["eventType"], data["correlation"], timeout=timeout)}
    if kind == "clarification":
        return {"answers": ask(data["questions"], context_type=data.get("contextType"), timeout=timeout)}
    if kind == "approval":
        return _approve(invocation.spec, data, invocation.inputs)
    value = custom_interrupt(
        data["customKind"], data.get("payload"), resume_schema=config.get("resumeSchema"), timeout=timeout
    )
    return {"value": value}


def _conversation_gate(invocation: NodeInvocation) -> Mapping[str, Any]:
    config = invocation.config
    turns = int(config.get("turnCount", 1))
    conversation_id = start_conversation(title=config.get("title"))
    for turn in range(turns):
        if config.get("mockAutoResume"):
            # The conformance mock answers each turn itself: the turn completes without a person.
            current_call().emit(
                "conversation.exchanged",
                {"conversationId": conversation_id, "turnIndex": turn},
                discriminator=turn,
            )
        else:
            exchange(
                conversation_id,
                str(config.get("prompt") or "Your turn"),
                config.get("outcomeSchema"),
                turn_index=turn,
            )
    close_conversation(conversation_id, reason="max-turns", turn_count=turns)
    return {"conversationId": conversation_id, "turnCount": turns}


def _delay(invocation: NodeInvocation) -> Mapping[str, Any]:
    _sleep(invocation)
    return {}


def _hold(invocation: NodeInvocation) -> Mapping[str, Any]:
    _sleep(invocation)
    return dict(invocation.inputs)


def _side_effect(invocation: NodeInvocation) -> Mapping[str, Any]:
    return {"performed": True, "effectId": uuid.uuid4().hex}


def _mock_agent(invocation: NodeInvocation) -> Mapping[str, Any]:
    mock = invocation.config["mockDecision"]
    agent = invocation.spec.document.get("agent")
    agent_id = agent.get("agentId") if isinstance(agent, Mapping) else None
    decision = escalate_on_low_confidence(
        str(agent_id or invocation.node_id), mock.get("decision"), mock.get("confidence")
    )
    return {"decision": decision}


def _sleep(invocation: NodeInvocation) -> None:
    delay = invocation.inputs.get("delayMs", invocation.config.get("delayMs", 0))
    if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not 0 <= delay <= MAX_DELAY_MS:
        raise ValidationError(
            f"node {invocation.node_id!r}: delayMs must be a number from 0 to {MAX_DELAY_MS}, got {delay!r}"
        )
    time.sleep(delay / 1000)


def _seconds(timeout_ms: Any) -> float | None:
    return timeout_ms / 1000 if isinstance(timeout_ms, (int, float)) and timeout_ms > 0 else None


def _check_timeout(spec: NodeSpec) -> None:
    timeout = spec.config.get("timeoutMs")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
        raise ValidationError(f"node {spec.node_id!r}: config.timeoutMs must be an integer >= 0")


def _check_approval_gate(spec: NodeSpec) -> None:
    _check_timeout(spec)
    profile = spec.config.get("profile")
    if profile is not None and profile not in PROFILES:
        # Refused at load: a gate must never run with weaker protection than its definition asks.
        raise ValidationError(f"node {spec.node_id!r}: unknown interrupt profile {profile!r}")


def _check_questions(spec: NodeSpec) -> None:
    questions = spec.config.get("questions")
    if not isinstance(questions, list) or not questions:
        raise ValidationError(f"node {spec.node_id!r}: config.questions must be a non-empty array")
    _check_timeout(spec)


def _check_interrupt(spec: NodeSpec) -> None:
    kind = spec.config.get("kind")
    data = spec.config.get("data") or {}
    needed = {
        "external-event": ("eventType", "correlation"),
        "clarification": ("questions",),
        "approval": (),
        "custom": ("customKind",),
    }
    if kind not in needed:
        raise ValidationError(
            f"node {spec.node_id!r}: core.interrupt kind {kind!r} is not supported here "
            f"(supported: {', '.join(needed)}; conversation and credential kinds have their own nodes)"
        )
    missing = [m for m in needed[kind] if m not in data]
    if missing:
        raise ValidationError(f"node {spec.node_id!r}: core.interrupt {kind} needs config.data.{missing[0]}")
    _check_timeout(spec)


def _check_mock_agent(spec: NodeSpec) -> None:
    if not isinstance(spec.config.get("mockDecision"), Mapping):
        raise ValidationError(f"node {spec.node_id!r}: core.conformance.mock-agent needs config.mockDecision")
