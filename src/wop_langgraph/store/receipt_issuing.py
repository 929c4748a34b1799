"""Issuing a run's receipts: a decision receipt per ``interrupt.resolved``, a vote receipt per
counted vote, and a checkpoint of the log as it stands.

Issuing reads what the log holds and signs what has no receipt yet, so it is idempotent and
may run from any process: after a resolution commits, and after each drive of the run (a run
at rest, waiting for a person or ended, gets a checkpoint of its head then).
"""

from __future__ import annotations

from datetime import datetime

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.dsse import sign_envelope
from wop_langgraph.proof.keys import ReceiptKeys
from wop_langgraph.proof.statements import (
    checkpoint_statement,
    decision_statement,
    statement_bytes,
    vote_statements,
)
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.events import read_events
from wop_langgraph.store.interrupts import get_interrupt
from wop_langgraph.store.receipts import (
    StoredReceipt,
    insert_receipts,
    log_head,
    receipt_names,
)

__all__ = ["issue_receipts"]


def issue_receipts(conn: Connection, run_id: str, keys: ReceiptKeys, *, now: datetime) -> list[StoredReceipt]:
    """Sign and store, in ``conn``'s transaction, the receipts ``run_id`` lacks; returns them.

    Events logged before the chain existed (no chain value) get none.
    """
    names = receipt_names(conn, run_id)
    issued: list[StoredReceipt] = []

    def add(name: str, kind: str, sequence: int, statement: dict[str, object]) -> None:
        envelope = sign_envelope(statement_bytes(statement), keys)
        kid = envelope["signatures"][0]["keyid"]
        issued.append(StoredReceipt(run_id, name, kind, sequence, kid, envelope, now))

    for event in read_events(conn, run_id, types=["interrupt.resolved"]):
        if event.chain_hash is None:
            continue
        interrupt = get_interrupt(conn, str(event.payload.get("interruptId")))
        if interrupt is None:
            continue
        name = f"decision/{event.sequence}"
        if name not in names:
            add(name, "decision", event.sequence, decision_statement(event, interrupt.payload, interrupt.key))
        for voter, statement in vote_statements(event, interrupt.payload, interrupt.key):
            name = f"vote/{event.sequence}/{voter}"
            if name not in names:
                add(name, "vote", event.sequence, statement)
    last_sequence, closed = log_head(conn, run_id)
    last = read_events(conn, run_id, after=last_sequence - 1)
    if last and last[-1].chain_hash is not None and f"checkpoint/{last[-1].sequence}" not in names:
        statement = checkpoint_statement(last[-1], closed=closed, signed_at=iso_z(now))
        add(f"checkpoint/{last[-1].sequence}", "checkpoint", last[-1].sequence, statement)
    insert_receipts(conn, issued)
    return issued
