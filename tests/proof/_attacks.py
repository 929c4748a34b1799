"""Tampering with a run's stored proof the way an attacker with write access would: SQL
statements on the database, no library calls in between."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, delete, select, update

from wop_langgraph.proof.chain import chain_next
from wop_langgraph.proof.dsse import sign_envelope
from wop_langgraph.proof.keys import ReceiptKeys
from wop_langgraph.proof.statements import digest_of_stored, statement_bytes
from wop_langgraph.store.events import StoredEvent, read_events
from wop_langgraph.store.interrupts import interrupts_of_run
from wop_langgraph.store.receipts import receipts_table
from wop_langgraph.store.run_tables import events_table, interrupts_table

E = events_table
R = receipts_table


def sequence_of(engine: Engine, run_id: str, event_type: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(E.c.sequence)
                .where(E.c.run_id == run_id, E.c.type == event_type)
                .order_by(E.c.sequence)
            )
            .scalars()
            .first()
        )


def payload_at(engine: Engine, run_id: str, sequence: int) -> dict[str, Any]:
    with engine.connect() as conn:
        found = conn.execute(
            select(E.c.payload).where(E.c.run_id == run_id, E.c.sequence == sequence)
        ).scalar()
        assert isinstance(found, dict)
        return found


def edit_payload(engine: Engine, run_id: str, sequence: int, payload: dict[str, Any]) -> None:
    with engine.begin() as conn:
        conn.execute(update(E).where(E.c.run_id == run_id, E.c.sequence == sequence).values(payload=payload))


def delete_event(engine: Engine, run_id: str, sequence: int) -> None:
    with engine.begin() as conn:
        conn.execute(delete(E).where(E.c.run_id == run_id, E.c.sequence == sequence))


def swap_events(engine: Engine, run_id: str, first: int) -> None:
    """Exchange the sequences of ``first`` and ``first + 1``."""
    with engine.begin() as conn:
        for old, new in ((first, -1), (first + 1, first), (-1, first + 1)):
            conn.execute(update(E).where(E.c.run_id == run_id, E.c.sequence == old).values(sequence=new))


def rechain(engine: Engine, run_id: str) -> None:
    """Recompute every stored chain value from the (edited) events: a careful attacker."""
    with engine.begin() as conn:
        head = None
        for event in read_events(conn, run_id):
            head = chain_next(head, digest_of_stored(event))
            conn.execute(
                update(E).where(E.c.run_id == run_id, E.c.sequence == event.sequence).values(chain_hash=head)
            )


def resign(engine: Engine, run_id: str, keys: ReceiptKeys, *, since: int) -> None:
    """Re-sign the run's receipts and checkpoints from sequence ``since`` on with ``keys``,
    binding them to the log as it now stands (what an attacker with a key of their own can do)."""
    import base64
    import json

    with engine.begin() as conn:
        by_sequence: dict[int, StoredEvent] = {e.sequence: e for e in read_events(conn, run_id)}
        for row in conn.execute(select(R).where(R.c.run_id == run_id, R.c.sequence >= since)).all():
            statement = json.loads(base64.b64decode(row.envelope["payload"]))
            predicate = statement["predicate"]
            event = by_sequence[predicate["sequence"]]
            if "chainHead" in predicate:
                predicate["chainHead"] = event.chain_hash
                statement["subject"][0]["digest"]["sha256"] = event.chain_hash
            else:
                predicate["chainHash"] = event.chain_hash
                predicate["eventDigest"] = digest_of_stored(event)
            envelope = sign_envelope(statement_bytes(statement), keys)
            conn.execute(
                update(R)
                .where(R.c.run_id == run_id, R.c.name == row.name)
                .values(envelope=envelope, kid=keys.signing_kid)
            )


def replace_receipt(engine: Engine, run_id: str, name: str, other_run: str) -> None:
    with engine.begin() as conn:
        other = conn.execute(select(R.c.envelope).where(R.c.run_id == other_run, R.c.name == name)).scalar()
        conn.execute(update(R).where(R.c.run_id == run_id, R.c.name == name).values(envelope=other))


def swap_artifact(engine: Engine, run_id: str, text: str) -> None:
    with engine.begin() as conn:
        (record,) = interrupts_of_run(conn, run_id)
        payload = dict(record.payload)
        payload["data"] = {**payload["data"], "artifactData": {"text": text}}
        conn.execute(
            update(interrupts_table)
            .where(interrupts_table.c.interrupt_id == record.interrupt_id)
            .values(payload=payload)
        )
