"""The resolve contract: validate, check eligibility, count votes, claim once, record, resume.

Order matters: everything that can refuse a request (run state, tenant, node, value, approver
eligibility) runs read-only first, so a refused request changes nothing. Then one transaction
either records a vote that does not decide the gate, or claims the interrupt (exactly one
caller wins the ``pending -> resolved`` compare-and-set) and appends ``interrupt.resolved``.
Only after that commit is the graph resumed.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from wop_langgraph.adapters import normalize_resume
from wop_langgraph.host.driver import TERMINAL_STATUSES
from wop_langgraph.host.keys import tenant_of
from wop_langgraph.host.principal import MembershipResolver, Principal
from wop_langgraph.host.validation import check_resume_value, require_json
from wop_langgraph.protocol.approval import ApprovalResume, EditAcceptResume, RefineResume
from wop_langgraph.protocol.errors import (
    Forbidden,
    IdempotencyInFlight,
    IdempotencyKeyInvalid,
    IdempotencyKeyMismatch,
    IdTenantMismatch,
    InterruptAlreadyResolved,
    NotFound,
    WopError,
)
from wop_langgraph.protocol.quorum import Tally, Vote, tally
from wop_langgraph.store import idempotency
from wop_langgraph.store.events import NewEvent, append_events
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    claim,
    expired_pending,
    interrupts_of_run,
    lock_interrupt,
    set_votes,
)

if TYPE_CHECKING:
    from wop_langgraph.host.runtime import WopHost

__all__ = ["IDEMPOTENCY_KEY_PATTERN", "Resolver"]

IDEMPOTENCY_KEY_PATTERN = re.compile(r"^[A-Za-z0-9._~-]{22,128}$")
_RESOLVED_ALIAS = {
    "granted": "approval.granted",
    "rejected": "approval.rejected",
    "overridden": "approval.overridden",
}
#: Outcomes that must not be cached under an Idempotency-Key (SPEC_NOTES §4).
_NOT_CACHED = {
    "validation_error",
    "idempotency_key_invalid",
    "unauthenticated",
    "forbidden",
    "run_forbidden",
    "id_tenant_mismatch",
    "rate_limited",
    "internal_error",
}


class Resolver:
    """Resolves interrupts for one host."""

    def __init__(self, host: WopHost, membership: MembershipResolver | None) -> None:
        self._host = host
        self._membership = membership

    def resolve(
        self,
        run_id: str,
        node_id: str,
        resume_value: Any,
        principal: Principal,
        *,
        idempotency_key: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Resolve or vote; honours ``idempotency_key`` (a replay returns the first response)."""
        if idempotency_key is None:
            return self._resolve(run_id, node_id, resume_value, principal, key)
        if not IDEMPOTENCY_KEY_PATTERN.match(idempotency_key):
            raise IdempotencyKeyInvalid("Idempotency-Key must match ^[A-Za-z0-9._~-]{22,128}$")
        scope = principal.tenant
        endpoint = f"resolveInterruptByRun:{run_id}:{node_id}"
        digest = idempotency.request_hash("POST", endpoint, {"resumeValue": resume_value, "key": key})
        engine = self._host.engine
        now = self._host.clock()
        with engine.begin() as conn:
            started = idempotency.begin(
                conn, scope=scope, endpoint=endpoint, key=idempotency_key, digest=digest, now=now
            )
        if started.outcome is idempotency.BeginOutcome.REPLAY:
            assert started.response is not None
            if started.response.status_code >= 400:
                raise _replayed_error(started.response.body)
            return dict(started.response.body)
        if started.outcome is idempotency.BeginOutcome.MISMATCH:
            raise IdempotencyKeyMismatch("this Idempotency-Key was used with a different request")
        if started.outcome is idempotency.BeginOutcome.IN_FLIGHT:
            raise IdempotencyInFlight("a request with this Idempotency-Key is still being processed")
        try:
            result = self._resolve(run_id, node_id, resume_value, principal, key)
        except WopError as exc:
            with engine.begin() as conn:
                if exc.code in _NOT_CACHED or exc.status >= 500:
                    idempotency.release(conn, scope=scope, endpoint=endpoint, key=idempotency_key)
                else:
                    stored = idempotency.StoredResponse(exc.status, {}, exc.envelope())
                    idempotency.complete(
                        conn,
                        scope=scope,
                        endpoint=endpoint,
                        key=idempotency_key,
                        response=stored,
                        now=self._host.clock(),
                    )
            raise
        except BaseException:
            with engine.begin() as conn:
                idempotency.release(conn, scope=scope, endpoint=endpoint, key=idempotency_key)
            raise
        with engine.begin() as conn:
            idempotency.complete(
                conn,
                scope=scope,
                endpoint=endpoint,
                key=idempotency_key,
                response=idempotency.StoredResponse(200, {}, result),
                now=self._host.clock(),
            )
        return result

    def _resolve(
        self, run_id: str, node_id: str, resume_value: Any, principal: Principal, key: str | None
    ) -> dict[str, Any]:
        host = self._host
        if tenant_of(run_id) != principal.tenant:
            raise IdTenantMismatch("the run id names another tenant than the caller's")
        row = host._run_row(run_id)
        if row.status in TERMINAL_STATUSES:
            raise InterruptAlreadyResolved(
                f"run {run_id!r} is {row.status}; its interrupts can no longer be resolved",
                details={"runStatus": row.status},
            )
        target = self._target(run_id, node_id, key)
        payload = target.payload
        require_json(resume_value, "/resumeValue")
        resume_value = normalize_resume(payload, resume_value)
        parsed = check_resume_value(payload, resume_value, received_at=host.clock())
        now = host.clock()
        if parsed is not None:
            self._check_eligible(payload["data"], principal)
            if parsed.action == "ask":
                return {"runId": run_id, "nodeId": node_id, "status": host.snapshot(run_id)["status"]}
            if not self._vote(target, parsed, resume_value, principal, now):
                return {"runId": run_id, "nodeId": node_id, "status": host.snapshot(run_id)["status"]}
        else:
            self._claim(target, resume_value, {}, principal.subject(), now)
        host._drive(run_id)
        return {"runId": run_id, "nodeId": node_id, "status": host.snapshot(run_id)["status"]}

    def _target(self, run_id: str, node_id: str, key: str | None) -> InterruptRecord:
        with self._host.engine.connect() as conn:
            rows = interrupts_of_run(conn, run_id, node_id=node_id)
        if key is not None:
            rows = [r for r in rows if r.key == key]
        if not rows:
            raise NotFound(f"node {node_id!r} of run {run_id!r} has no interrupt")
        pending = [r for r in rows if r.is_pending]
        if not pending:
            raise InterruptAlreadyResolved(f"the interrupt at node {node_id!r} was already {rows[-1].status}")
        return pending[0]

    def _check_eligible(self, data: dict[str, Any], principal: Principal) -> None:
        """Refuse a principal the gate does not name (approvers, or groups/roles the host honours)."""
        ref_kinds = self._host.options.ref_kinds
        approvers = data.get("approversList") or []
        groups = data.get("approverGroupRefs") or [] if "group" in ref_kinds else []
        roles = data.get("approverRoleRefs") or [] if "role" in ref_kinds else []
        if not (approvers or groups or roles):
            return
        if principal.subject_id in approvers:
            return
        if (groups or roles) and self._membership is not None:
            held = self._membership(principal)
            if set(groups) & held.groups or set(roles) & held.roles:
                return
        raise Forbidden(
            f"{principal.subject_id!r} is not an eligible approver of this gate",
            details={"subjectId": principal.subject_id},
        )

    def _vote(
        self,
        target: InterruptRecord,
        parsed: ApprovalResume,
        resume_value: Any,
        principal: Principal,
        now: datetime,
    ) -> bool:
        """Record the vote and, if it decides the gate, claim it in the same transaction.

        Returns whether the gate is now decided. Counting and claiming under one row lock (one
        write transaction on SQLite) means the vote that decides is the one whose value and
        decision are recorded: a conflicting vote arriving meanwhile sees a closed gate (409).
        """
        data = target.payload["data"]
        voter = parsed.voter or principal.subject_id
        with self._host.engine.begin() as conn:
            current = lock_interrupt(conn, target.interrupt_id)
            if current is None or not current.is_pending:
                raise InterruptAlreadyResolved("the interrupt was resolved meanwhile")
            votes = [Vote.from_json(v) for v in current.votes or []]
            if any(v.voter == voter for v in votes):
                return False  # one vote per voter: a repeat changes nothing
            override = principal.can_override and bool(data.get("overrideBypassesQuorum"))
            votes.append(Vote(voter=voter, action=parsed.action, override=override))
            outcome = tally(
                votes,
                required_approvals=int(data.get("requiredApprovals", 1)),
                rejection_policy=str(data.get("rejectionPolicy", "single-veto")),
                override_bypasses_quorum=bool(data.get("overrideBypassesQuorum", False)),
            )
            set_votes(conn, target.interrupt_id, [v.as_json() for v in votes])
            if outcome.decided:
                resolution = _approval_resolution(outcome, parsed)
                self._claim_in(conn, target, resume_value, resolution, principal.subject(), now)
        return outcome.decided

    def _claim(
        self,
        target: InterruptRecord,
        resume_value: Any,
        resolution: dict[str, Any],
        resolved_by: dict[str, Any] | None,
        now: datetime,
        *,
        status: str = "resolved",
    ) -> None:
        """Claim the interrupt and append ``interrupt.resolved`` in a transaction of its own."""
        with self._host.engine.begin() as conn:
            self._claim_in(conn, target, resume_value, resolution, resolved_by, now, status=status)

    def _claim_in(
        self,
        conn: Connection,
        target: InterruptRecord,
        resume_value: Any,
        resolution: dict[str, Any],
        resolved_by: dict[str, Any] | None,
        now: datetime,
        *,
        status: str = "resolved",
    ) -> None:
        """Claim (pending -> resolved|expired) and append the resolution events in ``conn``.

        Raises:
            InterruptAlreadyResolved: another caller claimed it first.
        """
        event_payload: dict[str, Any] = {
            "nodeId": target.node_id,
            "interruptId": target.interrupt_id,
            "kind": target.kind,
            **resolution,
        }
        if resume_value is not None:
            event_payload["resumeValue"] = resume_value
        if resolved_by is not None:
            event_payload["resolvedBy"] = resolved_by
        events = [NewEvent("interrupt.resolved", event_payload, node_id=target.node_id)]
        alias = _RESOLVED_ALIAS.get(resolution.get("decision", "")) if target.kind == "approval" else None
        if target.kind == "clarification":
            alias = "clarification.resolved"
        if alias:
            events.append(NewEvent(alias, event_payload, node_id=target.node_id))
        if target.kind == "conversation.exchange" and status == "resolved":
            data = target.payload["data"]
            turn = data.get("turnIndex")
            if turn is None:
                turn = _turns_so_far(conn, target.run_id, data["conversationId"])
            exchanged: dict[str, Any] = {"conversationId": data["conversationId"], "turnIndex": turn}
            if resume_value is not None:
                exchanged["outcome"] = resume_value
            events.append(NewEvent("conversation.exchanged", exchanged, node_id=target.node_id))
        won = claim(
            conn,
            target.interrupt_id,
            status="expired" if status == "expired" else "resolved",
            now=now,
            resume_value=resume_value,
            resolution=resolution,
            resolved_by=resolved_by,
        )
        if not won:
            raise InterruptAlreadyResolved("the interrupt was already resolved by another caller")
        append_events(conn, target.run_id, events, now=now)

    def sweep(self, now: datetime) -> int:
        """Time out expired pending interrupts (see ``WopHost.sweep``)."""
        with self._host.engine.connect() as conn:
            expired = expired_pending(conn, now, limit=1000)
        runs: set[str] = set()
        timed_out = 0
        for record in expired:
            if record.kind == "approval":
                resolution = {"action": "timeout", "decision": "rejected", "reason": "timeout"}
            else:
                resolution = {"reason": "timeout"}
            try:
                self._claim(record, None, resolution, None, now, status="expired")
            except InterruptAlreadyResolved:
                continue  # another process (or a resolver) got there first
            timed_out += 1
            runs.add(record.run_id)
        for run_id in sorted(runs):
            self._host._drive(run_id)
        return timed_out


def _turns_so_far(conn: Connection, run_id: str, conversation_id: str) -> int:
    """How many exchanges of this conversation were already answered.

    Reads through the claim's own connection: a second connection would wait for the claim's
    write transaction on SQLite (``BEGIN IMMEDIATE``) until the busy timeout.
    """
    rows = interrupts_of_run(conn, run_id, statuses=["resolved"])
    return sum(
        1
        for r in rows
        if r.kind == "conversation.exchange" and r.payload["data"].get("conversationId") == conversation_id
    )


def _approval_resolution(outcome: Tally, parsed: ApprovalResume) -> dict[str, Any]:
    resolution: dict[str, Any] = {"action": outcome.action}
    if outcome.decision is not None:
        resolution["decision"] = outcome.decision
    if outcome.reason is not None:
        resolution["reason"] = outcome.reason
    if isinstance(parsed, RefineResume):
        resolution["refineFeedback"] = parsed.refine_feedback.to_wire()
    if isinstance(parsed, EditAcceptResume):
        resolution["editedArtifactData"] = parsed.edited_artifact_data
    return resolution


def _replayed_error(body: Any) -> WopError:
    """The stored final error of an idempotent replay, as the exception first raised."""
    classes = {cls.code: cls for cls in _all_subclasses(WopError)}
    cls = classes.get(str(body.get("error")), WopError)
    return cls(str(body.get("message") or "replayed error"), details=body.get("details"))


def _all_subclasses(cls: type[WopError]) -> list[type[WopError]]:
    found: list[type[WopError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found
