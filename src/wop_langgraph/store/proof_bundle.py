"""A run's proof bundle: everything an auditor needs to verify it offline.

``{"format", "runId", "exportedAt", "events": [RunEventDoc + chainHash], "receipts":
[{name, kind, sequence, envelope}], "checkpoints": [...], "keys": <JWKS-style document>}``.
The keys in a bundle prove integrity only; an auditor pins the host's published keys
(``wop-langgraph verify BUNDLE --keys FILE``) to prove origin.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.chain import json_digest
from wop_langgraph.proof.keys import PublicKeys
from wop_langgraph.proof.verify import BUNDLE_FORMAT, Problem, Report, verify_bundle
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.events import read_events
from wop_langgraph.store.interrupts import get_interrupt
from wop_langgraph.store.receipts import read_receipts

__all__ = ["export_bundle", "verify_stored"]


def export_bundle(conn: Connection, run_id: str, keys: PublicKeys | None, *, now: datetime) -> dict[str, Any]:
    """The bundle of ``run_id`` as its database holds it."""
    events = [event.to_wire() | {"chainHash": event.chain_hash} for event in read_events(conn, run_id)]
    receipts: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    for stored in read_receipts(conn, run_id):
        entry = {
            "name": stored.name,
            "kind": stored.kind,
            "sequence": stored.sequence,
            "envelope": stored.envelope,
        }
        (checkpoints if stored.kind == "checkpoint" else receipts).append(entry)
    return {
        "format": BUNDLE_FORMAT,
        "runId": run_id,
        "exportedAt": iso_z(now),
        "events": events,
        "receipts": receipts,
        "checkpoints": checkpoints,
        "keys": (keys or PublicKeys({})).to_jwks(),
    }


def verify_stored(conn: Connection, run_id: str, keys: PublicKeys, *, now: datetime) -> Report:
    """Verify ``run_id`` in place: its bundle against ``keys``, and each decision receipt
    against the interrupt row the reviewer's page is rendered from (a swapped artifact)."""
    bundle = export_bundle(conn, run_id, keys, now=now)
    report = verify_bundle(bundle, keys)
    for entry in bundle["receipts"]:
        if entry["kind"] != "decision":
            continue
        sequence = entry["sequence"]
        doc = bundle["events"][sequence] if 0 <= sequence < len(bundle["events"]) else None
        interrupt_id = (doc or {}).get("payload", {}).get("interruptId")
        record = None if interrupt_id is None else get_interrupt(conn, str(interrupt_id))
        if record is None:
            continue
        statement = json.loads(base64.b64decode(entry["envelope"]["payload"]))
        if statement["subject"][0]["digest"]["sha256"] != json_digest(record.payload):
            report.problems.append(
                Problem(
                    sequence,
                    "payload-mismatch",
                    f"interrupt {interrupt_id!r} no longer holds the payload its decision "
                    f"at {sequence} was bound to",
                )
            )
    return report
