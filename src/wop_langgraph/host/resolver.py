"""The resolve contract: validate, check eligibility, count votes, claim once, record, enqueue.

One transaction reads the run's status and the node's interrupts (holding the interrupt rows),
checks everything that can refuse the request (run state, node, value, approver eligibility)
and decides: past its deadline the gate times out there and then (a late answer never grants);
otherwise it records a vote that does not decide the gate, or claims the interrupt (exactly one
caller wins the ``pending -> resolved`` compare-and-set), appends ``interrupt.resolved`` and puts
the run on the queue. A refusal raises inside the transaction, which rolls back: a refused
request changes nothing. A worker resumes the graph; the caller never waits for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from wop_langgraph._clock import as_utc
from wop_langgraph.adapters import normalize_resume
from wop_langgraph.host.delegation import Ballot, ballot_of
from wop_langgraph.host.eligibility import check_eligible
from wop_langgraph.host.proofs import Proofs
from wop_langgraph.host.validation import require_storable
from wop_langgraph.kinds import kind_of
from wop_langgraph.protocol.approval import ApprovalResume
from wop_langgraph.protocol.errors import (
    IdempotencyInFlight,
    IdempotencyKeyInvalid,
    IdempotencyKeyMismatch,
    IdTenantMismatch,
    InterruptAlreadyResolved,
    NotFound,
    WopError,
)
from wop_langgraph.protocol.keys import tenant_of
from wop_langgraph.protocol.principal import MembershipResolver, Principal
from wop_langgraph.protocol.quorum import Vote, approval_resolution, tally, vote_of
from wop_langgraph.store import idempotency
from wop_langgraph.store.engine import Connection, Engine, reading
from wop_langgraph.store.events import NewEvent, StoredEvent, append
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    claim_write,
    expired_pending,
    interrupts_at_node,
    interrupts_of_run,
    lock_interrupt,
    set_votes,
)
from wop_langgraph.store.run_queue import enqueue_write
from wop_langgraph.store.runs import TERMINAL_STATUSES
from wop_langgraph.store.statements import Reads

__all__ = ["IDEMPOTENCY_KEY_PATTERN", "EnqueueHook", "Resolver"]


class EnqueueHook(Protocol):
    """What a caller does where a resolution queues the run (to drive it without a claim)."""

    def reads(self, run_id: str) -> Reads | None:
        """Reads to run right after the statement that will queue ``run_id`` (in its round trip
        on PostgreSQL), whatever it finds; :meth:`queued` then has their rows."""

    def queued(self, conn: Connection, run_id: str) -> None:
        """Inside the transaction that queued ``run_id`` (it may still roll back)."""

    def committed(self) -> bool:
        """Right after that transaction committed (never called if it rolled back); whether the
        caller now holds the run's lease (then no worker is woken for it)."""


IDEMPOTENCY_KEY_PATTERN = re.compile(r"^[A-Za-z0-9._~-]{22,128}$")
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


@dataclass(frozen=True)
class ResolverSettings:
    """What the resolver needs of its host: the store, the clock, and whom to wake."""

    engine: Engine
    clock: Callable[[], datetime]
    ref_kinds: frozenset[str]
    membership: MembershipResolver | None
    #: Called after a transaction that queued a run has committed, with whether to wake a local
    #: worker for it (not when the caller holds the run's lease and drives it itself).
    on_enqueued: Callable[[str, bool], None]
    #: Signs a decision's (and a counted vote's) receipts in the transaction recording it.
    proofs: Proofs | None = None


class Resolver:
    """Resolves interrupts for one host."""

    def __init__(self, settings: ResolverSettings) -> None:
        self._s = settings

    def resolve(
        self,
        run_id: str,
        node_id: str,
        resume_value: Any,
        principal: Principal,
        *,
        idempotency_key: str | None = None,
        key: str | None = None,
        hook: EnqueueHook | None = None,
    ) -> dict[str, Any]:
        """Resolve or vote; honours ``idempotency_key`` (a replay returns the first response).

        ``hook`` is told where the deciding transaction queues the run, and when it commits.
        """
        if idempotency_key is None:
            return self._resolve(run_id, node_id, resume_value, principal, key, hook)
        if not IDEMPOTENCY_KEY_PATTERN.match(idempotency_key):
            raise IdempotencyKeyInvalid("Idempotency-Key must match ^[A-Za-z0-9._~-]{22,128}$")
        scope = principal.tenant
        endpoint = f"resolveInterruptByRun:{run_id}:{node_id}"
        digest = idempotency.request_hash("POST", endpoint, {"resumeValue": resume_value, "key": key})
        engine = self._s.engine
        now = self._s.clock()
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
            result = self._resolve(run_id, node_id, resume_value, principal, key, hook)
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
                        now=self._s.clock(),
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
                now=self._s.clock(),
            )
        return result

    def _resolve(
        self,
        run_id: str,
        node_id: str,
        resume_value: Any,
        principal: Principal,
        key: str | None,
        hook: EnqueueHook | None,
    ) -> dict[str, Any]:
        """Check and decide in one transaction (see the module docstring).

        Returns ``{runId, nodeId, status}``: ``running`` when the gate was decided, the run's
        status for a vote that did not decide it. A vote counts for the authenticated principal
        (or the approver a token was minted for): nothing in the resume value confers identity,
        except the voter a principal holding ``approvals:delegate`` names (host/delegation.py).
        """
        if tenant_of(run_id) != principal.tenant:
            raise IdTenantMismatch("the run id names another tenant than the caller's")
        with self._s.engine.begin() as conn:
            run_status, target = self._target(conn, run_id, node_id, key)
            parsed, resume_value, ballot = self._checked(target, resume_value, principal)
            decided, status = self._decide_in(conn, target, parsed, resume_value, ballot, hook)
        if decided:
            held = hook.committed() if hook is not None else False
            self._s.on_enqueued(run_id, not held)
        if status == "timed-out":
            raise InterruptAlreadyResolved(
                f"the interrupt at node {node_id!r} timed out before this answer arrived",
                details={"reason": "timeout"},
            )
        return {"runId": run_id, "nodeId": node_id, "status": status or run_status}

    def resolve_all(
        self, run_id: str, answers: Sequence[tuple[str, str | None, Any]], principal: Principal
    ) -> list[dict[str, Any]]:
        """Resolve (or vote on) several pending interrupts of ``run_id`` all or nothing.

        ``answers`` are ``(node_id, key, resume_value)``. Every answer is checked and decided in
        one transaction, so a refusal of any one (a bad value, an ineligible approver, a gate
        already settled or past its deadline) rolls back the others: nothing is applied. The
        nodes are locked in one order (by node, then key), so two concurrent batches over the
        same interrupts never deadlock: the second finds them resolved (409). Returns each
        answer's ``{runId, nodeId, status}``, in the order given.

        Raises:
            InterruptAlreadyResolved: an interrupt was settled already (or its deadline passed:
                the timer times it out, not this call). Anything :meth:`resolve` raises.
        """
        if tenant_of(run_id) != principal.tenant:
            raise IdTenantMismatch("the run id names another tenant than the caller's")
        order = sorted(range(len(answers)), key=lambda i: (answers[i][0], answers[i][1] or ""))
        results: dict[int, dict[str, Any]] = {}
        queued = False
        with self._s.engine.begin() as conn:
            for index in order:
                node_id, key, value = answers[index]
                run_status, target = self._target(conn, run_id, node_id, key)
                parsed, value, ballot = self._checked(target, value, principal)
                decided, status = self._decide_in(conn, target, parsed, value, ballot, None)
                if status == "timed-out":
                    raise InterruptAlreadyResolved(
                        f"the interrupt at node {node_id!r} is past its deadline; nothing was applied",
                        details={"reason": "timeout"},
                    )
                queued = queued or decided
                results[index] = {"runId": run_id, "nodeId": node_id, "status": status or run_status}
        if queued:
            self._s.on_enqueued(run_id, True)
        return [results[i] for i in range(len(answers))]

    def _target(
        self, conn: Connection, run_id: str, node_id: str, key: str | None
    ) -> tuple[str, InterruptRecord]:
        """The run's status and the pending interrupt a request addresses, held for the decision.

        Raises:
            NotFound: no such run, or no interrupt at the node (with ``key``: none with that key).
            InterruptAlreadyResolved: the run ended, or the node's interrupts are all settled.
        """
        run_status, rows = interrupts_at_node(conn, run_id, node_id)
        if run_status is None:
            raise NotFound(f"no run {run_id!r}")
        if run_status in TERMINAL_STATUSES:
            raise InterruptAlreadyResolved(
                f"run {run_id!r} is {run_status}; its interrupts can no longer be resolved",
                details={"runStatus": run_status},
            )
        if key is not None:
            rows = [r for r in rows if r.key == key]
        if not rows:
            raise NotFound(f"node {node_id!r} of run {run_id!r} has no interrupt")
        pending = [r for r in rows if r.is_pending]
        if not pending:
            # Timed out already (by the timer, a sweep or a read): answered as if this call had.
            timed_out = {"reason": "timeout"} if rows[-1].status == "expired" else None
            raise InterruptAlreadyResolved(
                f"the interrupt at node {node_id!r} was already {rows[-1].status}", details=timed_out
            )
        return run_status, pending[0]

    def _checked(
        self, target: InterruptRecord, resume_value: Any, principal: Principal
    ) -> tuple[ApprovalResume | None, Any, Ballot]:
        """The parsed approval (``None`` for other kinds), the value to record, and whom a vote
        counts for (:func:`~wop_langgraph.host.delegation.ballot_of`).

        Raises:
            ValidationError: the value does not fit the interrupt, or a delegate's voter is
                malformed. Forbidden: an ineligible approver (the named voter, for a delegate).
        """
        payload = target.payload
        require_storable(resume_value, "/resumeValue")
        resume_value = normalize_resume(payload, resume_value)
        received = self._s.clock()
        kind = kind_of(payload)
        resume_value = kind.prepare_resume(resume_value, received)
        parsed = kind.check_resume(payload, resume_value, received)
        if parsed is None:
            return None, resume_value, Ballot(principal)
        ballot = ballot_of(principal, parsed)
        check_eligible(
            payload["data"], ballot.voter, ref_kinds=self._s.ref_kinds, membership=self._s.membership
        )
        return parsed, resume_value, ballot

    def _decide_in(
        self,
        conn: Connection,
        current: InterruptRecord,
        parsed: ApprovalResume | None,
        resume_value: Any,
        ballot: Ballot,
        hook: EnqueueHook | None,
    ) -> tuple[bool, str | None]:
        """Time out, vote or claim ``current`` (read and held in ``conn``'s transaction).

        Returns (whether the run was queued, the run's status to report: ``running`` when the
        gate was decided, ``timed-out`` when the deadline had passed, ``None`` for a vote that
        did not decide). Counting and claiming under the row's hold means the vote that decides
        is the one whose value is recorded; a conflicting vote arriving meanwhile sees a closed
        gate (409). One vote per voter (the named voter, for a delegate): a repeat changes
        nothing, whoever casts it.
        """
        now = self._s.clock()
        if current.deadline is not None and as_utc(now) >= as_utc(current.deadline):
            self._decided(conn, current, _time_out(conn, current, now))
            _queued(conn, current.run_id, hook)
            return True, "timed-out"
        if parsed is not None and parsed.action == "ask":
            return False, None  # a question decides nothing (a late one timed out above)
        resolved_by = ballot.caster.subject()
        if parsed is None:
            then = None if hook is None else hook.reads(current.run_id)
            self._decided(
                conn, current, _claim_in(conn, current, resume_value, {}, resolved_by, now, then=then)
            )
            _queued(conn, current.run_id, hook)
            return True, "running"
        data = current.payload["data"]
        voter = ballot.voter.subject_id
        votes = [Vote.from_json(v) for v in current.votes or []]
        if any(v.voter == voter for v in votes):
            return False, None  # one vote per person: a repeat changes nothing
        override = ballot.voter.can_override and bool(data.get("overrideBypassesQuorum"))
        delegate = None if ballot.delegate is None else ballot.delegate.subject_id
        votes.append(vote_of(voter, parsed, override=override, delegate=delegate))
        required = int(data.get("requiredApprovals", 1))
        outcome = tally(
            votes,
            required_approvals=required,
            rejection_policy=str(data.get("rejectionPolicy", "single-veto")),
            override_bypasses_quorum=bool(data.get("overrideBypassesQuorum", False)),
        )
        recorded = [v.as_json() for v in votes]
        if not outcome.decided:
            set_votes(conn, current.interrupt_id, recorded)
            if self._s.proofs is not None:
                self._s.proofs.voted_in(conn, current, recorded[-1])
            return False, None
        resolution = approval_resolution(outcome, votes, required_approvals=required)
        then = None if hook is None else hook.reads(current.run_id)
        decision = _claim_in(
            conn, current, resume_value, resolution, resolved_by, now, votes=recorded, then=then
        )
        self._decided(conn, current, decision)
        _queued(conn, current.run_id, hook)
        return True, "running"

    def _decided(self, conn: Connection, current: InterruptRecord, logged: StoredEvent) -> None:
        """Sign the receipts of the decision on ``current`` that ``logged`` records (as the
        append logged it), in the transaction that logged it."""
        if self._s.proofs is not None:
            self._s.proofs.decided_in(conn, current, logged)

    def sweep(self, now: datetime) -> int:
        """Time out expired pending interrupts (see ``WopHost.sweep``); returns how many."""
        return len(self.time_out_due(now))

    def time_out_due(self, now: datetime, *, run_id: str | None = None) -> list[str]:
        """Time out the pending interrupts (of ``run_id``, if given) whose deadline passed at
        ``now``; returns the runs of those this call timed out, each once, in deadline order."""
        with reading(self._s.engine) as conn:
            expired = expired_pending(conn, now, limit=1000, run_id=run_id)
        timed_out: list[str] = []
        for record in expired:
            with self._s.engine.begin() as conn:
                current = lock_interrupt(conn, record.interrupt_id)
                if current is None or not current.is_pending:
                    continue  # another process (or a resolver) got there first
                self._decided(conn, current, _time_out(conn, current, now))
            if record.run_id not in timed_out:
                timed_out.append(record.run_id)
            self._s.on_enqueued(record.run_id, True)
        return timed_out


def _queued(conn: Connection, run_id: str, hook: EnqueueHook | None) -> None:
    """Tell ``hook`` that a claim queued ``run_id`` (see :func:`_claim_in`)."""
    if hook is not None:
        hook.queued(conn, run_id)


def _time_out(conn: Connection, target: InterruptRecord, now: datetime) -> StoredEvent:
    """Resolve an interrupt whose deadline passed: an approval is rejected, anything else
    expires. Returns the ``interrupt.resolved`` logged."""
    resolution = kind_of(target.payload).timeout_resolution
    return _claim_in(conn, target, None, dict(resolution), None, now, status="expired")


def _claim_in(
    conn: Connection,
    target: InterruptRecord,
    resume_value: Any,
    resolution: dict[str, Any],
    resolved_by: dict[str, Any] | None,
    now: datetime,
    *,
    status: str = "resolved",
    votes: list[dict[str, Any]] | None = None,
    then: Reads | None = None,
) -> StoredEvent:
    """Claim (pending -> resolved|expired), with the deciding ``votes`` if given, put the run
    on the queue (``running``: its graph moves again) and append the resolution events, in
    ``conn``; the claim, the queueing and the events are one statement on PostgreSQL (and
    ``then``'s reads go in its round trip). Returns the ``interrupt.resolved`` as logged.

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
    alias = kind_of(target.payload).resolved_alias(resolution)
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
    claiming = claim_write(
        target.interrupt_id,
        status="expired" if status == "expired" else "resolved",
        now=now,
        resume_value=resume_value,
        resolution=resolution,
        resolved_by=resolved_by,
        votes=votes,
    )
    # With ``then`` (the caller's claim of the run, in this transaction) no worker is told.
    queueing = enqueue_write(conn, target.run_id, now=now, running=True, notify=then is None)
    # The claim gates the events (one statement on PostgreSQL); a lost claim raises, and the
    # caller's transaction takes the queueing back.
    appended = append(conn, target.run_id, events, now=now, gate=claiming, leading=queueing, then=then)
    if appended.row is None:
        raise InterruptAlreadyResolved("the interrupt was already resolved by another caller")
    return appended.events[0]


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
