"""Periodic signed checkpoints of runs that wait for a person, on SQLite and PostgreSQL: a
waiting run whose newest checkpoint is older than the interval gets a fresh one of the same
head, an ended run none; two hosts on one database sign each period once; the bundle of such
a run verifies, and a tamper after the last checkpoint is located."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from tests.host._graphs import approval_graph
from tests.host._support import start
from tests.proof import _attacks as attack
from wop_langgraph._clock import iso_z, utcnow
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.proof.keys import ReceiptKeys, generate_seed
from wop_langgraph.proof.verify import verify_bundle
from wop_langgraph.store.engine import reading
from wop_langgraph.store.events import read_events
from wop_langgraph.store.receipts import StoredReceipt, read_receipts

BOB = Principal("acme", "bob", frozenset({"approvals:respond"}))
KEYS = ReceiptKeys.parse(f"k1={generate_seed()}")
HOUR = 3600.0


class Clock:
    """A host clock the test moves."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def made(db_url: str, clock: Clock) -> WopHost:
    # The timer looks once at start (before any key), then not within the test.
    host = WopHost.from_url(db_url, clock=clock, deadline_recheck_seconds=HOUR)
    host.use_receipt_keys(KEYS, checkpoint_every=HOUR)
    return host


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def host(db_url: str, clock: Clock) -> Iterator[WopHost]:
    host = made(db_url, clock)
    yield host
    host.close()
    host.saver.close()


def checkpoints(host: WopHost, run_id: str) -> list[StoredReceipt]:
    with reading(host.engine) as conn:
        return [r for r in read_receipts(conn, run_id) if r.kind == "checkpoint"]


def head(host: WopHost, run_id: str) -> tuple[int, str | None]:
    with reading(host.engine) as conn:
        last = read_events(conn, run_id)[-1]
    return last.sequence, last.chain_hash


def test_a_waiting_run_gets_a_newer_checkpoint_of_the_same_head(host: WopHost, clock: Clock) -> None:
    run_id, _ = start(host, approval_graph())
    sequence, _ = head(host, run_id)
    assert [c.name for c in checkpoints(host, run_id)] == [f"checkpoint/{sequence}"]  # the drive's

    clock.advance(HOUR - 1)
    assert host.checkpoint_waiting() == 0  # not due yet
    clock.advance(2)
    assert host.checkpoint_waiting() == 1
    assert host.checkpoint_waiting() == 0  # fresh now
    clock.advance(HOUR + 1)
    assert host.checkpoint_waiting() == 1
    found = checkpoints(host, run_id)
    # The drive's checkpoint and the newest periodic one (it replaced the first periodic one).
    assert [c.name for c in found] == [f"checkpoint/{sequence}", f"checkpoint/{sequence}/2"]
    assert head(host, run_id) == (sequence, head(host, run_id)[1])

    report = host.verify(run_id)
    assert report.ok, report.to_json()
    assert report.checkpoints == 2
    assert report.covered_to == sequence
    assert report.newest_checkpoint_at == iso_z(clock.now)
    offline = verify_bundle(host.export_proof(run_id), KEYS.public())
    assert offline.ok and offline.newest_checkpoint_at == iso_z(clock.now)


def test_a_run_that_ended_gets_none_after_its_final_one(host: WopHost, clock: Clock) -> None:
    run_id, _ = start(host, approval_graph())
    waiting, _ = start(host, approval_graph())
    assert host.resolve(run_id, "review", {"action": "accept"}, BOB)["status"] == "completed"
    final = [c.name for c in checkpoints(host, run_id)]
    clock.advance(HOUR + 1)
    assert host.checkpoint_waiting() == 1  # the waiting one only
    assert [c.name for c in checkpoints(host, run_id)] == final
    assert len(checkpoints(host, waiting)) == 2


def test_without_keys_nothing_is_signed(host: WopHost, clock: Clock) -> None:
    run_id, _ = start(host, approval_graph())
    host.use_receipt_keys(None)
    clock.advance(HOUR + 1)
    assert host.checkpoint_waiting() == 0
    assert len(checkpoints(host, run_id)) == 1


def test_the_sweep_signs_what_is_due(host: WopHost, clock: Clock) -> None:
    run_id, _ = start(host, approval_graph())
    clock.advance(HOUR + 1)
    host.sweep()
    assert len(checkpoints(host, run_id)) == 2


def refresh(host: WopHost, barrier: threading.Barrier, signed: list[int]) -> None:
    barrier.wait()  # both hosts look at once
    signed.append(host.checkpoint_waiting())


def test_two_hosts_on_one_database_sign_each_period_once(db_url: str, clock: Clock) -> None:
    first, second = made(db_url, clock), made(db_url, clock)
    try:
        runs = [start(first, approval_graph())[0] for _ in range(3)]
        for round_ in range(3):
            clock.advance(HOUR + 1)
            signed: list[int] = []
            barrier = threading.Barrier(2)
            threads = [threading.Thread(target=refresh, args=(h, barrier, signed)) for h in (first, second)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert sum(signed) == len(runs), (round_, signed)
            for run_id in runs:
                names = [c.name for c in checkpoints(first, run_id)]
                assert len(names) == 2 and names[-1].endswith(f"/{round_ + 1}"), names
        assert second.checkpoint_waiting() == 0  # nothing due: the other host signed it
        for run_id in runs:
            assert second.verify(run_id).ok
    finally:
        for host in (first, second):
            host.close()
        second.saver.close()
        first.saver.close()


def test_a_tamper_after_the_last_periodic_checkpoint_is_located(host: WopHost, clock: Clock) -> None:
    run_id, _ = start(host, approval_graph())
    clock.advance(HOUR + 1)
    assert host.checkpoint_waiting() == 1
    sequence, _ = head(host, run_id)
    bundle = host.export_proof(run_id)
    assert verify_bundle(bundle, KEYS.public()).ok

    payload = attack.payload_at(host.engine, run_id, sequence)
    attack.edit_payload(host.engine, run_id, sequence, {**payload, "forged": True})
    attack.rechain(host.engine, run_id)  # a careful attacker: the chain alone agrees
    report = verify_bundle(host.export_proof(run_id), KEYS.public())
    assert report.first_broken == sequence
    assert {p.code for p in report.problems} == {"checkpoint-mismatch"}
    assert host.verify(run_id).first_broken == sequence


def test_the_deadline_timer_signs_them_by_itself(db_url: str) -> None:
    host = WopHost.from_url(db_url, deadline_recheck_seconds=0.05)
    try:
        host.use_receipt_keys(KEYS, checkpoint_every=0.3)
        run_id, _ = start(host, approval_graph())
        sequence, _ = head(host, run_id)
        give_up = time.monotonic() + 20
        while len(checkpoints(host, run_id)) < 2 and time.monotonic() < give_up:
            time.sleep(0.05)
        names = [c.name for c in checkpoints(host, run_id)]
        assert names[0] == f"checkpoint/{sequence}" and names[1].startswith(f"checkpoint/{sequence}/")
    finally:
        host.close()
        host.saver.close()


def test_the_interval_must_be_positive(host: WopHost) -> None:
    with pytest.raises(ValueError, match="checkpoint_every"):
        host.use_receipt_keys(KEYS, checkpoint_every=0)
