"""Decision receipts and the hash chain against real attacks, on SQLite and PostgreSQL.

Each attack is SQL on the run's database; ``host.verify`` (and the offline verifier, on the
exported bundle with the host's pinned keys) must fail and name the sequence where it happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.host._graphs import approval_graph
from tests.host._support import start
from tests.proof import _attacks as attack
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.proof.keys import PublicKeys, ReceiptKeys, generate_seed
from wop_langgraph.proof.verify import Report, verify_bundle

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


def quorum_run(host: WopHost) -> str:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    host.resolve(run_id, "review", {"action": "accept"}, BOB)
    assert host.resolve(run_id, "review", {"action": "accept"}, CAROL)["status"] == "completed"
    return run_id


def checked(host: WopHost, run_id: str, keys: PublicKeys | None = None) -> Report:
    """``host.verify``, and the offline verifier on the exported bundle: the same verdict."""
    report = host.verify(run_id)
    offline = verify_bundle(host.export_proof(run_id), keys or KEYS.public())
    assert offline.first_broken == report.first_broken or not offline.ok
    return report


def codes(report: Report) -> set[str]:
    return {p.code for p in report.problems}


def test_an_untouched_run_verifies_with_its_receipts_and_checkpoint(host: WopHost) -> None:
    run_id = quorum_run(host)
    report = checked(host, run_id)
    assert report.ok, report.to_json()
    assert report.receipts == 3  # the decision and its two counted votes
    assert report.checkpoints >= 1
    assert report.covered_to == report.events - 1  # the run's end is checkpointed
    assert report.unchained == 0
    bundle = host.export_proof(run_id)
    assert {r["kind"] for r in bundle["receipts"]} == {"decision", "vote"}
    assert verify_bundle(bundle).ok  # the bundle's own keys


def test_edit_an_event_payload(host: WopHost) -> None:
    run_id = quorum_run(host)
    at = attack.sequence_of(host.engine, run_id, "node.completed")
    attack.edit_payload(host.engine, run_id, at, {**attack.payload_at(host.engine, run_id, at), "x": 1})
    report = checked(host, run_id)
    assert report.first_broken == at
    assert "chain" in codes(report)


def test_delete_an_event(host: WopHost) -> None:
    run_id = quorum_run(host)
    at = attack.sequence_of(host.engine, run_id, "node.completed")
    attack.delete_event(host.engine, run_id, at)
    report = checked(host, run_id)
    assert report.first_broken == at


def test_delete_the_last_event(host: WopHost) -> None:
    run_id = quorum_run(host)
    last = host.verify(run_id).events - 1
    attack.delete_event(host.engine, run_id, last)
    report = checked(host, run_id)
    assert report.first_broken == last
    assert "truncated" in codes(report)


def test_reorder_two_events(host: WopHost) -> None:
    run_id = quorum_run(host)
    at = attack.sequence_of(host.engine, run_id, "node.started")
    attack.swap_events(host.engine, run_id, at)
    report = checked(host, run_id)
    assert report.first_broken == at


def test_swap_the_artifact_the_reviewer_approved(host: WopHost) -> None:
    run_id = quorum_run(host)
    decided = attack.sequence_of(host.engine, run_id, "interrupt.resolved")
    attack.swap_artifact(host.engine, run_id, "a different draft")
    report = host.verify(run_id)
    assert report.first_broken == decided
    assert codes(report) == {"payload-mismatch"}


@pytest.mark.parametrize("rechained", [False, True], ids=["edited", "edited-and-rechained"])
def test_change_a_voter(host: WopHost, rechained: bool) -> None:
    run_id = quorum_run(host)
    decided = attack.sequence_of(host.engine, run_id, "interrupt.resolved")
    payload: dict[str, Any] = attack.payload_at(host.engine, run_id, decided)
    payload["x-votes"][0]["voter"] = "mallory"
    attack.edit_payload(host.engine, run_id, decided, payload)
    if rechained:
        attack.rechain(host.engine, run_id)  # the chain alone now agrees: the receipts do not
    report = checked(host, run_id)
    assert report.first_broken == decided
    assert ("receipt-mismatch" if rechained else "chain") in codes(report)


def test_replace_a_receipt_with_one_from_another_run(host: WopHost) -> None:
    run_id, other = quorum_run(host), quorum_run(host)
    decided = attack.sequence_of(host.engine, run_id, "interrupt.resolved")
    attack.replace_receipt(host.engine, run_id, f"decision/{decided}", other)
    report = checked(host, run_id)
    assert report.first_broken == decided
    assert {"foreign-receipt", "missing-receipt"} <= codes(report)


@pytest.mark.parametrize("kid", ["k1", "evil"], ids=["same-kid", "unknown-kid"])
def test_rewrite_and_resign_with_an_unknown_key(host: WopHost, kid: str) -> None:
    run_id = quorum_run(host)
    decided = attack.sequence_of(host.engine, run_id, "interrupt.resolved")
    payload = attack.payload_at(host.engine, run_id, decided)
    payload["x-votes"][1]["voter"] = "mallory"
    attack.edit_payload(host.engine, run_id, decided, payload)
    attack.rechain(host.engine, run_id)
    attack.resign(host.engine, run_id, ReceiptKeys.parse(f"{kid}={generate_seed()}"), since=decided)
    report = checked(host, run_id)
    assert report.first_broken == decided
    assert codes(report) & {"bad-signature", "unknown-key"}
    assert "missing-receipt" in codes(report)


def test_rotation_keeps_old_receipts_and_revocation_reports_them(host: WopHost) -> None:
    old_run = quorum_run(host)
    old_public = KEYS.public().to_jwks()["keys"][0]["x"]
    new_seed = generate_seed()
    host.use_receipt_keys(ReceiptKeys.parse(f"k2={new_seed},k1=pub:{old_public}"))
    new_run = quorum_run(host)
    assert host.verify(old_run).ok, host.verify(old_run).to_json()
    assert host.verify(new_run).ok
    kids = {r["envelope"]["signatures"][0]["keyid"] for r in host.export_proof(new_run)["receipts"]}
    assert kids == {"k2"}

    host.use_receipt_keys(ReceiptKeys.parse(f"k2={new_seed},k1=pub:{old_public}", revoked="k1"))
    revoked = host.verify(old_run)
    assert "revoked-key" in codes(revoked)
    assert host.verify(new_run).ok
    jwks = host.proofs.public_keys().to_jwks()
    assert [k.get("revoked", False) for k in jwks["keys"]] == [False, True]


async def test_the_async_forms_answer_as_the_sync_ones(host: WopHost) -> None:
    run_id = quorum_run(host)
    assert (await host.averify(run_id)).to_json() == host.verify(run_id).to_json()
    assert (await host.aexport_proof(run_id))["events"] == host.export_proof(run_id)["events"]
