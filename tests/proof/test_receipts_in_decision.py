"""A decision's receipts, and a counted vote's, are written in the transaction that records
it, on SQLite and PostgreSQL: a committed decision or vote has its receipt at once (no drive
has run), a rolled-back one left neither."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, delete

from tests.host._graphs import approval_graph
from tests.host._support import start
from wop_langgraph._clock import utcnow
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.proof.keys import ReceiptKeys, generate_seed
from wop_langgraph.proof.verify import verify_bundle
from wop_langgraph.store.engine import reading
from wop_langgraph.store.events import read_events
from wop_langgraph.store.receipts import StoredReceipt, read_receipts, receipts_table

BOB = Principal("acme", "bob", frozenset({"approvals:respond"}))
CAROL = Principal("acme", "carol", frozenset({"approvals:respond"}))
KEYS = ReceiptKeys.parse(f"k1={generate_seed()}")


@pytest.fixture
def host(db_url: str) -> Iterator[WopHost]:
    made = WopHost.from_url(db_url)
    made.use_receipt_keys(KEYS)
    yield made
    made.close()
    made.saver.close()


def receipts(host: WopHost, run_id: str) -> dict[str, StoredReceipt]:
    with reading(host.engine) as conn:
        return {r.name: r for r in read_receipts(conn, run_id)}


def resolved_events(host: WopHost, run_id: str) -> list[int]:
    with reading(host.engine) as conn:
        return [e.sequence for e in read_events(conn, run_id, types=["interrupt.resolved"])]


def predicate(receipt: StoredReceipt) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(receipt.envelope["payload"]))
    return statement["predicate"]


class Boom(Exception):
    pass


def test_a_decision_rolled_back_after_its_append_leaves_neither_event_nor_receipt(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    before = receipts(host, run_id)
    seen: list[set[str]] = []

    def fail_after_append(conn: Connection) -> None:
        # Inside the deciding transaction, after the append: the receipt is already written.
        seen.append({r.name for r in read_receipts(conn, run_id)} - set(before))
        raise Boom

    with pytest.raises(Boom):
        host.resolve(run_id, "review", {"action": "accept"}, BOB, wait=False, on_decided=fail_after_append)
    (written,) = seen
    assert any(name.startswith("decision/") for name in written)
    assert resolved_events(host, run_id) == []
    assert receipts(host, run_id) == before  # rolled back with the decision

    host.resolve(run_id, "review", {"action": "accept"}, BOB, wait=False)  # no drive runs here
    (decided,) = resolved_events(host, run_id)
    stored = receipts(host, run_id)
    assert predicate(stored[f"decision/{decided}"])["sequence"] == decided
    assert host.snapshot(run_id)["status"] == "running"  # nothing drove it: the commit signed it


def test_a_vote_that_does_not_decide_has_its_receipt_when_the_request_returns(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    with reading(host.engine) as conn:
        head = read_events(conn, run_id)[-1]
    assert host.resolve(run_id, "review", {"action": "accept"}, BOB)["status"] == "waiting-approval"
    votes = {name: r for name, r in receipts(host, run_id).items() if r.kind == "vote"}
    (name,) = votes
    assert name.endswith("/bob")
    vote = predicate(votes[name])
    assert (vote["voter"], vote["action"], vote["decision"]) == ("bob", "accept", None)
    assert (vote["sequence"], vote["chainHash"]) == (head.sequence, head.chain_hash)  # the log when cast
    assert host.resolve(run_id, "review", {"action": "accept"}, CAROL)["status"] == "completed"

    report = host.verify(run_id)
    assert report.ok, report.to_json()
    assert report.receipts == 3  # the decision, bob's vote when cast, carol's with the decision
    assert verify_bundle(host.export_proof(run_id), KEYS.public()).ok

    # The threshold still holds: without bob's receipt the grant has one of two.
    (decided,) = resolved_events(host, run_id)
    with host.engine.begin() as conn:
        conn.execute(delete(receipts_table).where(receipts_table.c.name == name))
    report = host.verify(run_id)
    assert report.first_broken == decided
    assert {p.code for p in report.problems} == {"quorum"}


def test_a_timeout_is_signed_in_the_transaction_that_times_the_gate_out(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(timeout=60))
    assert host.sweep(utcnow() + timedelta(seconds=61), wait=False) == 1  # times out; drives nothing
    (decided,) = resolved_events(host, run_id)
    decision = predicate(receipts(host, run_id)[f"decision/{decided}"])
    assert (decision["action"], decision["decision"]) == ("timeout", "rejected")


def test_a_drive_signs_a_decision_recorded_while_no_key_was_configured(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    host.use_receipt_keys(None)
    host.resolve(run_id, "review", {"action": "accept"}, BOB, wait=False)
    (decided,) = resolved_events(host, run_id)
    assert f"decision/{decided}" not in receipts(host, run_id)
    host.use_receipt_keys(KEYS)
    host.run_until_idle()  # the drive's end signs what the log holds without a receipt
    assert f"decision/{decided}" in receipts(host, run_id)
    report = host.verify(run_id)
    assert report.ok, report.to_json()
