"""Issuing a run's receipts: a decision receipt per ``interrupt.resolved``, a vote receipt per
counted vote, and a checkpoint of the log as it stands.

Issuing reads what the log holds and signs what has no receipt yet, so it is idempotent and
may run from any process: after a resolution commits, and after each drive of the run (a run
at rest, waiting for a person or ended, gets a checkpoint of its head then).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.dsse import sign_envelope
from wop_langgraph.proof.keys import ReceiptKeys
from wop_langgraph.proof.statements import (
    checkpoint_statement,
    decision_statement,
    statement_bytes,
    vote_statements,
)
from wop_langgraph.store.events import read_events
from wop_langgraph.store.interrupts import get_interrupt
from wop_langgraph.store.receipts import StoredReceipt, insert_receipts, receipts_table
from wop_langgraph.store.run_tables import event_counters_table

__all__ = ["issue_receipts"]


def issue_receipts(conn: Connection, run_id: str, keys: ReceiptKeys, *, now: datetime) -> list[StoredReceipt]:
    """Sign and store, in ``conn``'s transaction, the receipts ``run_id`` lacks; returns them.

    Events logged before the chain existed (no chain value) get none.
    """
    t = receipts_table
    names = set(conn.execute(select(t.c.name).where(t.c.run_id == run_id)).scalars())
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
    last = read_events(conn, run_id, after=_last_sequence(conn, run_id) - 1)
    if last and last[-1].chain_hash is not None and f"checkpoint/{last[-1].sequence}" not in names:
        counters = event_counters_table
        closed = bool(conn.execute(select(counters.c.closed).where(counters.c.run_id == run_id)).scalar())
        statement = checkpoint_statement(last[-1], closed=closed, signed_at=iso_z(now))
        add(f"checkpoint/{last[-1].sequence}", "checkpoint", last[-1].sequence, statement)
    insert_receipts(conn, issued)
    return issued


def _last_sequence(conn: Connection, run_id: str) -> int:
    counters = event_counters_table
    found = conn.execute(select(counters.c.next_sequence).where(counters.c.run_id == run_id)).scalar()
    return -1 if found is None else int(found) - 1
