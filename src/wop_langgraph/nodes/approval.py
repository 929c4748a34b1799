"""``request_approval``: suspend a node until reviewers decide on an artifact."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langgraph.errors import ParentCommand
from langgraph.types import Command

from wop_langgraph.nodes._once import warn_once
from wop_langgraph.nodes.context import NodeCall, current_call
from wop_langgraph.nodes.settlement import Delivery
from wop_langgraph.nodes.suspend import PROFILES, suspend
from wop_langgraph.protocol.errors import ApprovalRejected, CapabilityRequired, ValidationError
from wop_langgraph.protocol.quorum import VOTES_MEMBER

__all__ = ["ApprovalDecision", "request_approval"]

DEFAULT_ACTIONS = ("accept", "reject")

_log = logging.getLogger("wop_langgraph.nodes.approval")


@dataclass(frozen=True)
class ApprovalDecision:
    """The decided outcome of an approval gate.

    Attributes:
        action: ``accept``, ``edit-accept`` or ``refine`` (a reject raises instead, or routes).
        decision: ``granted`` or ``overridden``; ``None`` for ``refine``.
        feedback: the deciding reviewer's free-text feedback, if any.
        refine_feedback: the structured feedback of a ``refine``.
        edited_artifact_data: the artifact as edited by an ``edit-accept`` (on a quorum, the
            last edit made among the granting votes).
        resume_value: the deciding resume value as sent.
        votes: on a quorum (or a delegated vote), every vote counted, in arrival order
            (``voter``, ``action``, the voter's own ``editedArtifactData`` / ``refineFeedback``,
            ``delegate``); ``None`` otherwise.
    """

    action: str
    decision: str | None
    feedback: str | None = None
    refine_feedback: dict[str, Any] | None = None
    edited_artifact_data: Any = None
    resume_value: Any = None
    votes: list[dict[str, Any]] | None = None

    @property
    def granted(self) -> bool:
        """Whether the artifact may go ahead (accepted, edit-accepted or overridden)."""
        return self.decision in ("granted", "overridden")


def request_approval(
    artifact_id: str,
    artifact_type: str,
    title: str,
    *,
    actions: Sequence[str] = DEFAULT_ACTIONS,
    artifact_data: Any = None,
    description: str | None = None,
    required_approvals: int | None = None,
    approvers: Sequence[str] | None = None,
    rejection_policy: str | None = None,
    override_bypasses_quorum: bool | None = None,
    group_refs: Sequence[str] | None = None,
    role_refs: Sequence[str] | None = None,
    audience: dict[str, list[str]] | None = None,
    timeout: timedelta | float | None = None,
    on_timeout: str | None = None,
    profile: str | None = None,
) -> ApprovalDecision:
    """Suspend until the gate is decided; return the decision.

    A rejection (or a timeout, which always rejects) raises :class:`ApprovalRejected`
    (``approval_rejected``, never retried), unless the host registered a rejection route for
    this node, in which case the run continues at that node.

    Outside :class:`WopHost` (plain LangGraph, LangGraph Studio, ``langgraph dev``) the gate is
    decided by the one value given with ``Command(resume=...)``, e.g. ``{"action": "accept"}``,
    checked exactly as the host checks it. What needs the host is refused at the call with
    :class:`CapabilityRequired`, never silently weakened: a quorum (``required_approvals`` > 1)
    and approver eligibility (``approvers``, ``group_refs``, ``role_refs``) need authenticated
    principals. A ``timeout`` is carried in the payload (``timeoutMs``) but nothing enforces
    it; a reject raises :class:`ApprovalRejected` (there are no rejection routes), and a
    LangGraph ``RetryPolicy`` that retries ``WopError`` re-runs the node into the same reject.

    Raises:
        ApprovalRejected: the gate was rejected (or timed out) and no route continues past it.
        ValidationError: the payload is malformed, or (outside the host) the resume value is.
        CapabilityRequired: outside the host, a quorum or approver eligibility was asked for.

    ``profile="openwop-interrupt-auth-required"`` makes the gate answerable only by a bearer
    credential with ``approvals:respond`` (``POST /runs/{runId}/interrupts/{nodeId}``): its
    signed links may show the gate but not decide it. Another profile name is refused.

    ``on_timeout="approve"`` is emitted as ``"reject"``: a host MUST treat it so and SHOULD NOT
    emit it (interrupt.md); a warning is logged once per node id and process.
    """
    if profile is not None and profile not in PROFILES:
        raise ValidationError(
            f"unknown interrupt profile {profile!r} (known: {', '.join(sorted(PROFILES))})",
            details={"path": "profile"},
        )
    call = current_call()
    if not call.hosted:
        _refuse_host_only(required_approvals, approvers, group_refs, role_refs)
    if on_timeout == "approve":
        on_timeout = "reject"
        _warn_once(call.node_id)
    data: dict[str, Any] = {
        "artifactId": artifact_id,
        "artifactType": artifact_type,
        "title": title,
        "actions": list(actions),
    }
    optional = {
        "description": description,
        "artifactData": artifact_data,
        "onTimeout": on_timeout,
        "requiredApprovals": required_approvals,
        "approversList": list(approvers) if approvers is not None else None,
        "rejectionPolicy": rejection_policy,
        "overrideBypassesQuorum": override_bypasses_quorum,
        "approverGroupRefs": list(group_refs) if group_refs is not None else None,
        "approverRoleRefs": list(role_refs) if role_refs is not None else None,
        "audience": audience,
    }
    data.update({k: v for k, v in optional.items() if v is not None})
    profiles = [profile] if profile else []
    return _decision(call, title, suspend("approval", data, timeout=timeout, call=call, profiles=profiles))


def _decision(call: NodeCall, title: str, delivery: Delivery) -> ApprovalDecision:
    """The gate's outcome from its delivery (the host's, or one built outside the host)."""
    resolution = delivery.resolution
    if resolution.get("decision") == "rejected":
        route = call.rejection_route()
        if route is not None:
            # Continue at the route, as an any_failed edge would; a ParentCommand aimed at this
            # task's own graph is applied as the node's result and is never retried.
            if call.context is not None:  # the host logs the routed gate as a failed source
                call.context.routed_rejections.add(call.task_id)
            raise ParentCommand(Command(graph=call.task_ns, goto=route))
        reason = resolution.get("reason") or resolution.get("action")
        raise ApprovalRejected(
            f"approval {title!r} was rejected ({reason})",
            details={"nodeId": call.node_id, "action": resolution.get("action")},
        )
    value = delivery.resume_value if isinstance(delivery.resume_value, dict) else {}
    return ApprovalDecision(
        action=str(resolution.get("action")),
        decision=resolution.get("decision"),
        feedback=value.get("feedback"),
        refine_feedback=resolution.get("refineFeedback"),
        edited_artifact_data=resolution.get("editedArtifactData"),
        resume_value=delivery.resume_value,
        votes=resolution.get(VOTES_MEMBER),
    )


def _refuse_host_only(
    required_approvals: int | None,
    approvers: Sequence[str] | None,
    group_refs: Sequence[str] | None,
    role_refs: Sequence[str] | None,
) -> None:
    """Refuse, outside the host, what only the host can enforce (there is no principal here)."""
    if required_approvals is not None and required_approvals > 1:
        raise CapabilityRequired(
            f"required_approvals={required_approvals} needs WopHost: a quorum counts votes of "
            "authenticated principals, and plain LangGraph resumes with one anonymous value; "
            "register the graph with WopHost, or ask for one approval while developing",
            details={"capability": "approvalQuorum", "requires": "WopHost"},
        )
    named = {"approvers": approvers, "group_refs": group_refs, "role_refs": role_refs}
    restricted = sorted(name for name, refs in named.items() if refs)
    if restricted:
        raise CapabilityRequired(
            f"{', '.join(restricted)} need WopHost: who may decide is checked against the "
            "authenticated principal, and plain LangGraph has none; register the graph with "
            "WopHost, or leave the approvers out while developing",
            details={"capability": "approverEligibility", "requires": "WopHost"},
        )


def _warn_once(node_id: str) -> None:
    warn_once(
        _log,
        ("on_timeout=approve", node_id),
        "request_approval(on_timeout='approve') at node %r: a timeout never grants, so the gate is "
        "emitted with onTimeout 'reject' (pass on_timeout='reject' to silence this)",
        node_id,
    )
