"""The in-toto Statements (v1) of decision receipts, vote receipts and checkpoints.

A decision receipt's subject is the digest of the exact ``InterruptPayload`` the reviewer was
shown; its predicate binds the decision to the run's log: the ``interrupt.resolved`` event's
sequence, its chain value and its digest. A vote receipt does the same for one counted vote of
a quorum (or delegated) decision: bound to the decision that counted it, or, signed when cast
for a vote that did not decide, to the run's last event at that moment (``decision: null``).
A checkpoint's subject is the run's chain head.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.chain import event_digest, json_digest
from wop_langgraph.protocol.quorum import VOTES_MEMBER

__all__ = [
    "CHECKPOINT",
    "DECISION",
    "STATEMENT",
    "VOTE",
    "Gate",
    "checkpoint_statement",
    "decision_statement",
    "digest_of_stored",
    "statement_bytes",
    "vote_statement",
    "vote_statements",
]


class StoredEvent(Protocol):
    """An event as a run's log holds it (the store's ``StoredEvent``; named here so that this
    package, which the store's append uses, does not import the store)."""

    @property
    def run_id(self) -> str: ...
    @property
    def sequence(self) -> int: ...
    @property
    def event_id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def payload(self) -> dict[str, Any]: ...
    @property
    def timestamp(self) -> datetime: ...
    @property
    def node_id(self) -> str | None: ...
    @property
    def causation_id(self) -> str | None: ...
    @property
    def schema_version(self) -> int: ...
    @property
    def chain_hash(self) -> str | None: ...


STATEMENT = "https://in-toto.io/Statement/v1"
DECISION = "https://wop-langgraph.dev/attestation/decision/v1"
VOTE = "https://wop-langgraph.dev/attestation/vote/v1"
CHECKPOINT = "https://wop-langgraph.dev/attestation/checkpoint/v1"


def digest_of_stored(event: StoredEvent) -> str:
    """The chain digest of a stored event (see :mod:`wop_langgraph.proof.chain`)."""
    return event_digest(
        run_id=event.run_id,
        event_id=event.event_id,
        type=event.type,
        payload=event.payload,
        timestamp=event.timestamp,
        node_id=event.node_id,
        causation_id=event.causation_id,
        schema_version=event.schema_version,
    )


def statement_bytes(statement: Mapping[str, Any]) -> bytes:
    """The bytes a statement is signed as (compact JSON; the verifier parses what was signed)."""
    return json.dumps(statement, separators=(",", ":"), ensure_ascii=False).encode()


def _statement(name: str, digest: str, predicate_type: str, predicate: dict[str, Any]) -> dict[str, Any]:
    return {
        "_type": STATEMENT,
        "subject": [{"name": name, "digest": {"sha256": digest}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }


def _bound(event: StoredEvent) -> dict[str, Any]:
    """What binds a receipt to the log: the run, the event's sequence, chain value and digest."""
    return {
        "runId": event.run_id,
        "sequence": event.sequence,
        "chainHash": event.chain_hash,
        "eventDigest": digest_of_stored(event),
    }


def decision_statement(event: StoredEvent, shown: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The statement of the decision ``event`` (an ``interrupt.resolved``) records, about the
    ``InterruptPayload`` ``shown`` to the reviewer (the interrupt's ``key`` names the gate)."""
    payload = event.payload
    votes = payload.get(VOTES_MEMBER) or []
    deciding = votes[-1] if votes else {}
    resolved_by = payload.get("resolvedBy")
    voter = deciding.get("voter") or (resolved_by or {}).get("subjectId")
    predicate = {
        **_bound(event),
        "nodeId": payload.get("nodeId", event.node_id),
        "interruptId": payload.get("interruptId"),
        "key": key,
        "kind": payload.get("kind"),
        "action": payload.get("action"),
        "decision": payload.get("decision"),
        "voter": voter,
        "delegate": deciding.get("delegate"),
        "resolvedBy": resolved_by,
        "decidedAt": iso_z(event.timestamp),
        "votes": len(votes),
    }
    return _statement(
        f"interrupt:{payload.get('interruptId')}", json_digest(dict(shown)), DECISION, predicate
    )


def vote_statements(
    event: StoredEvent, shown: Mapping[str, Any], key: str
) -> list[tuple[str, dict[str, Any]]]:
    """One ``(voter, statement)`` per vote the decision ``event`` counted (its ``x-votes``),
    each bound to ``event``."""
    payload = event.payload
    gate = Gate(payload.get("nodeId", event.node_id), payload.get("interruptId"), key, shown)
    decided_at = iso_z(event.timestamp)
    return [
        (str(vote.get("voter")), vote_statement(event, gate, vote, payload.get("decision"), decided_at))
        for vote in payload.get(VOTES_MEMBER) or []
    ]


@dataclass(frozen=True, slots=True)
class Gate:
    """The interrupt a vote is cast on: its node, id, key and the payload the voter was shown."""

    node_id: Any
    interrupt_id: Any
    key: str
    shown: Mapping[str, Any]


def vote_statement(
    anchor: StoredEvent, gate: Gate, vote: Mapping[str, Any], decision: Any, decided_at: str
) -> dict[str, Any]:
    """The statement of one counted ``vote`` (an ``x-votes`` entry) on ``gate``, bound to
    ``anchor``: the decision event that counted it, or, for a vote that did not decide (its
    ``decision`` then ``None``, ``decided_at`` when it was cast), the run's last event then."""
    data = gate.shown.get("data") if isinstance(gate.shown.get("data"), Mapping) else {}
    predicate = {
        **_bound(anchor),
        "nodeId": gate.node_id,
        "interruptId": gate.interrupt_id,
        "key": gate.key,
        "voter": vote.get("voter"),
        "delegate": vote.get("delegate"),
        "action": vote.get("action"),
        "override": bool(vote.get("override")),
        "decision": decision,
        "requiredApprovals": int((data or {}).get("requiredApprovals", 1)),
        "decidedAt": decided_at,
    }
    return _statement(f"interrupt:{gate.interrupt_id}", json_digest(dict(gate.shown)), VOTE, predicate)


def checkpoint_statement(last: StoredEvent, *, closed: bool, signed_at: str) -> dict[str, Any]:
    """The statement of a run's log up to ``last``: its sequence and chain head."""
    predicate = {
        "runId": last.run_id,
        "sequence": last.sequence,
        "chainHead": last.chain_hash,
        "closed": closed,
        "signedAt": signed_at,
    }
    return _statement(f"run:{last.run_id}", str(last.chain_hash), CHECKPOINT, predicate)
