"""Verifying a run's proof offline: the bundle's events, receipts and checkpoints against the
public keys alone.

What is checked, and where a failure is located (the sequence named):

* the log: sequences 0, 1, 2, ... without a gap, each event's chain value recomputed from its
  canonical digest and its predecessor's stored value (an edited, deleted or moved event fails
  at its own position; the check resynchronises on the stored value, so each is found);
* each receipt and checkpoint: its DSSE signature by a trusted key (an unknown key, a bad
  signature or a revoked key is reported), its run, and the chain value and event digest it
  binds at its sequence (a log rewritten with recomputed chain values differs there);
* each decision: its subject is the digest of an ``interrupt.requested`` payload logged
  before it (what the reviewer was shown), every chained ``interrupt.resolved`` has a receipt
  (once the run has any), and a granted quorum has valid vote receipts of at least
  ``requiredApprovals`` granting voters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wop_langgraph.proof.chain import chain_next, json_digest, wire_digest
from wop_langgraph.proof.dsse import EnvelopeError, open_envelope
from wop_langgraph.proof.keys import PublicKeys
from wop_langgraph.proof.statements import CHECKPOINT, DECISION, STATEMENT, VOTE
from wop_langgraph.protocol.quorum import VOTES_MEMBER

__all__ = ["BUNDLE_FORMAT", "Problem", "Report", "verify_bundle"]

BUNDLE_FORMAT = "wop-langgraph/proof-bundle@1"
_GRANTING = ("accept", "edit-accept")


@dataclass(frozen=True, slots=True)
class Problem:
    """One failed check: where (a sequence of the log, when it has one), what, and why."""

    sequence: int | None
    code: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "code": self.code, "message": self.message}


@dataclass(slots=True)
class Report:
    """The outcome of a verification; ``ok`` when no check failed."""

    run_id: str
    events: int = 0
    unchained: int = 0
    receipts: int = 0
    checkpoints: int = 0
    covered_to: int | None = None
    #: When the newest valid checkpoint was signed (its ``signedAt``), if any.
    newest_checkpoint_at: str | None = None
    keys_pinned: bool = False
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first_broken(self) -> int | None:
        """The first sequence where a check failed (``None`` if none names one)."""
        located = [p.sequence for p in self.problems if p.sequence is not None]
        return min(located) if located else None

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "ok": self.ok,
            "firstBrokenSequence": self.first_broken,
            "events": self.events,
            "unchainedEvents": self.unchained,
            "receiptsVerified": self.receipts,
            "checkpointsVerified": self.checkpoints,
            "coveredToSequence": self.covered_to,
            "newestCheckpointAt": self.newest_checkpoint_at,
            "keysPinned": self.keys_pinned,
            "problems": [p.to_json() for p in sorted(self.problems, key=_order)],
        }


def _order(problem: Problem) -> tuple[int, str]:
    return (-1 if problem.sequence is None else problem.sequence, problem.code)


@dataclass(slots=True)
class _Log:
    """The bundle's events by position, with what the chain check found."""

    docs: list[Mapping[str, Any]]
    digests: list[str]
    consistent: list[bool]  # the stored chain value follows from the event and its predecessor
    _requested: dict[Any, list[tuple[int, str, Any]]] | None = None

    def stored(self, sequence: int) -> Any:
        return self.docs[sequence].get("chainHash")

    def requested(self, node: Any) -> list[tuple[int, str, Any]]:
        """The node's ``interrupt.requested`` events: (sequence, payload digest, payload)."""
        if self._requested is None:
            self._requested = {}
            for position, doc in enumerate(self.docs):
                if doc.get("type") == "interrupt.requested":
                    entry = (position, json_digest(doc.get("payload")), doc.get("payload"))
                    self._requested.setdefault(doc.get("nodeId"), []).append(entry)
        return self._requested.get(node, [])


def verify_bundle(bundle: Mapping[str, Any], keys: PublicKeys | None = None) -> Report:
    """Verify a proof bundle (see :mod:`wop_langgraph.proof.bundle`); ``keys`` pins the trusted
    public keys (otherwise the bundle's own are used, which proves integrity, not origin)."""
    run_id = str(bundle.get("runId"))
    report = Report(run_id, keys_pinned=keys is not None)
    if bundle.get("format") != BUNDLE_FORMAT:
        report.problems.append(Problem(None, "malformed", f"not a {BUNDLE_FORMAT} bundle"))
        return report
    if keys is None:
        try:
            keys = PublicKeys.from_jwks(bundle.get("keys"))
        except ValueError as exc:
            report.problems.append(Problem(None, "malformed", f"the bundle's keys: {exc}"))
            return report
    log = _check_log(run_id, list(bundle.get("events") or []), report)
    # interrupt -> (sequence bound, voter) of each valid granting vote receipt
    granting: dict[Any, set[tuple[int, str]]] = {}
    receipted: set[int] = set()
    for entry in bundle.get("receipts") or []:
        statement = _opened(entry, keys, report)
        if statement is not None and _check_bound(statement, log, run_id, report):
            predicate = statement["predicate"]
            sequence = int(predicate["sequence"])
            if statement["predicateType"] == DECISION:
                if _check_subject(statement, log, sequence, report):
                    receipted.add(sequence)
                    report.receipts += 1
            elif statement["predicateType"] == VOTE and _check_subject(statement, log, sequence, report):
                report.receipts += 1
                if predicate.get("action") in _GRANTING:
                    voter = (sequence, str(predicate.get("voter")))
                    granting.setdefault(predicate.get("interruptId"), set()).add(voter)
    for entry in bundle.get("checkpoints") or []:
        statement = _opened(entry, keys, report)
        checkpoint = statement is not None and statement["predicateType"] == CHECKPOINT
        if statement is not None and checkpoint and _check_checkpoint(statement, log, run_id, report):
            report.checkpoints += 1
            sequence = int(statement["predicate"]["sequence"])
            report.covered_to = max(sequence, report.covered_to or -1)
            signed_at = statement["predicate"].get("signedAt")
            if isinstance(signed_at, str) and signed_at > (report.newest_checkpoint_at or ""):
                report.newest_checkpoint_at = signed_at  # ISO 8601 UTC: orders as text
    if report.receipts or report.checkpoints:
        _check_decisions(log, receipted, granting, report)
    return report


def _check_log(run_id: str, docs: Sequence[Mapping[str, Any]], report: Report) -> _Log:
    log = _Log(list(docs), [], [])
    report.events = len(docs)
    previous: str | None = None
    chained = False
    for position, doc in enumerate(docs):
        digest = wire_digest(doc)
        log.digests.append(digest)
        sequence = doc.get("sequence")
        if sequence != position:
            report.problems.append(
                Problem(
                    position,
                    "sequence",
                    f"position {position} holds sequence {sequence!r}: an event is missing or moved",
                )
            )
        if doc.get("runId") != run_id:
            report.problems.append(
                Problem(position, "foreign-event", f"the event at {position} is of run {doc.get('runId')!r}")
            )
        stored = doc.get("chainHash")
        if stored is None:
            log.consistent.append(False)
            if chained:
                report.problems.append(
                    Problem(position, "chain", f"the event at {position} has lost its chain value")
                )
            else:
                report.unchained += 1  # logged before the chain existed
            continue
        expected = chain_next(previous, digest)
        log.consistent.append(expected == stored)
        if expected != stored:
            report.problems.append(
                Problem(
                    position,
                    "chain",
                    f"the event at {position} does not match its chain value: edited, moved, "
                    "or its predecessor removed",
                )
            )
        previous, chained = stored, True  # resynchronise: each tampered event is found
    return log


def _opened(entry: Any, keys: PublicKeys, report: Report) -> dict[str, Any] | None:
    """The statement of a receipt or checkpoint entry whose signature verifies (else reported)."""
    where = entry.get("sequence") if isinstance(entry, Mapping) else None
    where = where if isinstance(where, int) else None
    name = entry.get("name") if isinstance(entry, Mapping) else None
    try:
        opened = open_envelope(entry.get("envelope") if isinstance(entry, Mapping) else None, keys)
    except EnvelopeError as exc:
        report.problems.append(Problem(where, exc.reason, f"{name}: {exc}"))
        return None
    try:
        statement = json.loads(opened.body)
    except ValueError:
        report.problems.append(Problem(where, "malformed", f"{name}: the signed statement is not JSON"))
        return None
    if (
        not isinstance(statement, dict)
        or statement.get("_type") != STATEMENT
        or not isinstance(statement.get("predicate"), dict)
        or not isinstance(statement["predicate"].get("sequence"), int)
    ):
        report.problems.append(Problem(where, "malformed", f"{name}: not a receipt statement"))
        return None
    if opened.revoked:
        report.problems.append(
            Problem(
                statement["predicate"]["sequence"],
                "revoked-key",
                f"{name}: signed by revoked key {opened.kid!r}",
            )
        )
        return None
    return statement


def _check_bound(statement: Mapping[str, Any], log: _Log, run_id: str, report: Report) -> bool:
    """A receipt names this run and the event at its sequence as the log holds it."""
    predicate = statement["predicate"]
    sequence = predicate["sequence"]
    if predicate.get("runId") != run_id:
        report.problems.append(
            Problem(
                sequence, "foreign-receipt", f"a receipt at {sequence} is of run {predicate.get('runId')!r}"
            )
        )
        return False
    if not 0 <= sequence < len(log.docs):
        report.problems.append(
            Problem(sequence, "missing-event", f"a receipt names sequence {sequence}, not in the log")
        )
        return False
    if predicate.get("eventDigest") != log.digests[sequence] or predicate.get("chainHash") != log.stored(
        sequence
    ):
        report.problems.append(
            Problem(
                sequence,
                "receipt-mismatch",
                f"the event at {sequence} is not the one its receipt was signed for",
            )
        )
        return False
    return True


def _check_subject(statement: Mapping[str, Any], log: _Log, sequence: int, report: Report) -> bool:
    """The receipt's subject is a payload the log shows was requested before the decision."""
    digest = (statement.get("subject") or [{}])[0].get("digest", {}).get("sha256")
    node = statement["predicate"].get("nodeId")
    # At or before: a vote cast while the request was the log's last event is bound to it.
    if any(at <= sequence and found == digest for at, found, _ in log.requested(node)):
        return True
    report.problems.append(
        Problem(
            sequence,
            "payload-mismatch",
            f"the decision at {sequence} is bound to a payload the log does not show",
        )
    )
    return False


def _check_checkpoint(statement: Mapping[str, Any], log: _Log, run_id: str, report: Report) -> bool:
    predicate = statement["predicate"]
    sequence = predicate["sequence"]
    if predicate.get("runId") != run_id:
        report.problems.append(
            Problem(sequence, "foreign-receipt", f"a checkpoint is of run {predicate.get('runId')!r}")
        )
        return False
    if sequence >= len(log.docs):
        report.problems.append(
            Problem(
                len(log.docs), "truncated", f"a checkpoint covers sequence {sequence}; the log ends before it"
            )
        )
        return False
    if predicate.get("chainHead") != log.stored(sequence):
        report.problems.append(
            Problem(sequence, "checkpoint-mismatch", f"the log up to {sequence} is not the one checkpointed")
        )
        return False
    return True


def _check_decisions(
    log: _Log, receipted: set[int], granting: Mapping[Any, set[tuple[int, str]]], report: Report
) -> None:
    """Every chained decision has a receipt; a granted quorum has enough granting vote receipts:
    of its interrupt, bound at or before the decision (a vote is signed when cast, or with the
    decision that counted it), by voters whose granting votes the decision records."""
    for sequence, doc in enumerate(log.docs):
        if doc.get("type") != "interrupt.resolved" or doc.get("chainHash") is None:
            continue
        if sequence not in receipted:
            report.problems.append(
                Problem(sequence, "missing-receipt", f"the decision at {sequence} has no valid receipt")
            )
            continue
        payload = doc.get("payload") or {}
        votes = payload.get(VOTES_MEMBER) or []
        if not votes or payload.get("decision") != "granted" or any(v.get("override") for v in votes):
            continue
        required = _required(log, sequence, payload.get("nodeId"))
        counted = {str(v.get("voter")) for v in votes if v.get("action") in _GRANTING}
        receipted_votes = {
            voter
            for at, voter in granting.get(payload.get("interruptId"), set())
            if at <= sequence and voter in counted
        }
        if len(receipted_votes) < required:
            report.problems.append(
                Problem(
                    sequence,
                    "quorum",
                    f"the grant at {sequence} has {len(receipted_votes)} valid granting "
                    f"vote receipts of {required} required",
                )
            )


def _required(log: _Log, sequence: int, node: Any) -> int:
    for at, _, payload in reversed(log.requested(node)):
        if at < sequence:
            data = (payload or {}).get("data") or {}
            return int(data.get("requiredApprovals", 1))
    return 1
