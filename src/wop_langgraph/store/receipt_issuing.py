"""Issuing a run's receipts: a decision receipt per ``interrupt.resolved``, a vote receipt per
counted vote, and checkpoints of the log as it stands.

The resolver signs a decision's receipts (and a counted vote's, when the vote does not decide)
in the transaction that records it (:func:`issue_decision`, :func:`issue_vote`): a committed
decision has them, a rolled-back one never had. :func:`issue_receipts`, after each drive, signs
a checkpoint of the run's head and whatever the log holds without a receipt (decisions recorded
while no key was configured, a replay fork's copied answers); :func:`refresh_checkpoint`
re-signs the head of a run that waits. All of it is idempotent (a receipt's name is unique per
run) and may run from any process.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.dsse import sign_envelope
from wop_langgraph.proof.keys import ReceiptKeys
from wop_langgraph.proof.statements import (
    Gate,
    checkpoint_statement,
    decision_statement,
    statement_bytes,
    vote_statement,
    vote_statements,
)
from wop_langgraph.protocol.quorum import VOTES_MEMBER
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.events import StoredEvent, read_events
from wop_langgraph.store.interrupts import InterruptRecord, get_interrupt
from wop_langgraph.store.receipts import (
    StoredReceipt,
    checkpoints_at,
    delete_receipts,
    insert_receipts,
    log_head,
    receipt_names,
)
from wop_langgraph.store.run_tables import events_table

__all__ = ["issue_decision", "issue_receipts", "issue_vote", "refresh_checkpoint"]


class _Signer:
    """Signs statements of one run with ``keys``, collecting the receipts to store."""

    def __init__(self, run_id: str, keys: ReceiptKeys, now: datetime) -> None:
        self.run_id = run_id
        self.keys = keys
        self.now = now
        self.issued: list[StoredReceipt] = []

    def add(self, name: str, kind: str, sequence: int, statement: dict[str, object]) -> None:
        envelope = sign_envelope(statement_bytes(statement), self.keys)
        kid = envelope["signatures"][0]["keyid"]
        self.issued.append(StoredReceipt(self.run_id, name, kind, sequence, kid, envelope, self.now))

    def store(self, conn: Connection) -> list[StoredReceipt]:
        insert_receipts(conn, self.issued)
        return self.issued


def vote_name(interrupt_id: str, voter: str) -> str:
    """The receipt name of ``voter``'s vote on an interrupt (one vote per voter and gate)."""
    return f"vote/{interrupt_id}/{voter}"


def issue_decision(
    conn: Connection, interrupt: InterruptRecord, event: StoredEvent, keys: ReceiptKeys, *, now: datetime
) -> list[StoredReceipt]:
    """Sign and store, in ``conn``'s transaction, the receipts of the decision the just appended
    ``interrupt.resolved`` ``event`` records (as the append logged it: no read-back): the
    decision's, and each counted vote's that has none yet (the vote that decided; earlier votes
    got theirs when cast)."""
    if event.chain_hash is None:
        return []
    signer = _Signer(event.run_id, keys, now)
    statement = decision_statement(event, interrupt.payload, interrupt.key)
    signer.add(f"decision/{event.sequence}", "decision", event.sequence, statement)
    if event.payload.get(VOTES_MEMBER):
        names = receipt_names(conn, event.run_id)
        _add_votes(signer, event, interrupt, names)
    return signer.store(conn)


def issue_vote(
    conn: Connection, interrupt: InterruptRecord, vote: Mapping[str, Any], keys: ReceiptKeys, *, now: datetime
) -> list[StoredReceipt]:
    """Sign and store, in ``conn``'s transaction, the receipt of ``vote`` (an ``x-votes``
    entry) counted on ``interrupt`` without deciding it, bound to the run's last event (the
    log as it stood when the vote was cast)."""
    anchor = _last_event(conn, interrupt.run_id)
    if anchor is None or anchor.chain_hash is None:
        return []
    signer = _Signer(interrupt.run_id, keys, now)
    gate = Gate(interrupt.node_id, interrupt.interrupt_id, interrupt.key, interrupt.payload)
    statement = vote_statement(anchor, gate, vote, None, iso_z(now))
    signer.add(vote_name(interrupt.interrupt_id, str(vote.get("voter"))), "vote", anchor.sequence, statement)
    return signer.store(conn)


def issue_receipts(conn: Connection, run_id: str, keys: ReceiptKeys, *, now: datetime) -> list[StoredReceipt]:
    """Sign and store, in ``conn``'s transaction, the receipts ``run_id`` lacks and a
    checkpoint of its head (unless it has one); returns them.

    Events logged before the chain existed (no chain value) get none.
    """
    names = receipt_names(conn, run_id)
    signer = _Signer(run_id, keys, now)
    for event in read_events(conn, run_id, types=["interrupt.resolved"]):
        if event.chain_hash is None:
            continue
        interrupt = get_interrupt(conn, str(event.payload.get("interruptId")))
        if interrupt is None:
            continue
        name = f"decision/{event.sequence}"
        if name not in names:
            signer.add(
                name, "decision", event.sequence, decision_statement(event, interrupt.payload, interrupt.key)
            )
        _add_votes(signer, event, interrupt, names)
    last_sequence, closed = log_head(conn, run_id)
    last = read_events(conn, run_id, after=last_sequence - 1)
    if last and last[-1].chain_hash is not None and checkpoint_name(last[-1].sequence, 0) not in names:
        statement = checkpoint_statement(last[-1], closed=closed, signed_at=iso_z(now))
        signer.add(checkpoint_name(last[-1].sequence, 0), "checkpoint", last[-1].sequence, statement)
    return signer.store(conn)


def _add_votes(signer: _Signer, event: StoredEvent, interrupt: InterruptRecord, names: set[str]) -> None:
    """Sign the counted votes of the decision ``event`` that have no receipt yet (under either
    name: bound to the decision, or to the log when cast), bound to the decision."""
    for voter, statement in vote_statements(event, interrupt.payload, interrupt.key):
        name = vote_name(interrupt.interrupt_id, voter)
        if name not in names and f"vote/{event.sequence}/{voter}" not in names:
            signer.add(name, "vote", event.sequence, statement)


def checkpoint_name(sequence: int, index: int) -> str:
    """The name of a run's ``index``-th checkpoint of the log up to ``sequence``: ``0`` is the
    one signed when a drive rested there, later ones are periodic (``checkpoint/<seq>/<n>``)."""
    return f"checkpoint/{sequence}" if index == 0 else f"checkpoint/{sequence}/{index}"


def refresh_checkpoint(
    conn: Connection, run_id: str, keys: ReceiptKeys, *, now: datetime, older_than: datetime
) -> StoredReceipt | None:
    """Sign a fresh checkpoint of ``run_id``'s head if its log is open and its newest checkpoint
    of that head was signed before ``older_than``; returns it (``None``: nothing was due, or
    another process stored this period's first).

    The claim is the insert: the next periodic checkpoint of a head has one name, so of two
    processes that both found it due one stores it and the other's insert does nothing (its
    signature, ~0.1 ms, is wasted; no second row). The periodic checkpoint it supersedes (same
    head, same ``closed``, signed earlier) is deleted: the newer one states all it did.
    """
    last_sequence, closed = log_head(conn, run_id)
    if closed or last_sequence < 0:
        return None
    last = read_events(conn, run_id, after=last_sequence - 1)
    if not last or last[-1].chain_hash is None:
        return None
    existing = checkpoints_at(conn, run_id, last_sequence)  # (name, created_at), newest last
    if existing and existing[-1][1] >= older_than:
        return None
    index = 1 + max((_index(name) for name, _ in existing), default=-1)
    signer = _Signer(run_id, keys, now)
    statement = checkpoint_statement(last[-1], closed=False, signed_at=iso_z(now))
    signer.add(checkpoint_name(last_sequence, index), "checkpoint", last_sequence, statement)
    if not insert_receipts(conn, signer.issued):
        return None
    delete_receipts(conn, run_id, [name for name, _ in existing if _index(name) > 0])
    return signer.issued[0]


def _index(name: str) -> int:
    parts = name.split("/")
    return int(parts[2]) if len(parts) > 2 else 0


def _last_event(conn: Connection, run_id: str) -> StoredEvent | None:
    t = events_table
    query = select(t).where(t.c.run_id == run_id).order_by(t.c.sequence.desc()).limit(1)
    row = conn.execute(query).first()
    return None if row is None else StoredEvent(**row._mapping)
