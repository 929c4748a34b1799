"""Interrupt rows: insert-once by key, the exactly-once claim, votes, expiry, consumption, cancellation."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from tests.store._workers import BARRIER_TIMEOUT_S, claim_worker, run_in_processes

from wop_langgraph._clock import as_utc
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    cancel_pending,
    claim,
    expired_pending,
    get_interrupt,
    insert_interrupt,
    interrupts_at_node,
    interrupts_of_run,
    lock_interrupt,
    mark_consumed,
    resolved_unconsumed,
    set_votes,
)
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.run_tables import runs_table

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
RUN = "acme/run-0123456789abcdef"
OTHER_RUN = "acme/run-fedcba9876543210"


def record(name: str, *, run_id: str = RUN, minutes: int = 0, **fields: Any) -> InterruptRecord:
    base = InterruptRecord(
        interrupt_id=f"{run_id}/int-{name}",
        run_id=run_id,
        node_id=fields.pop("node_id", "review"),
        key=f"{run_id}:{name}",
        lg_interrupt_id=f"lg-{name}",
        task_id=f"task-{name}",
        kind="approval",
        payload={"kind": "approval", "prompt": f"approve {name}?"},
        created_at=NOW + timedelta(minutes=minutes),
    )
    return replace(base, **fields)


def insert(engine: Engine, *records: InterruptRecord) -> list[InterruptRecord]:
    with engine.begin() as conn:
        return [insert_interrupt(conn, r)[0] for r in records]


def fetch(engine: Engine, interrupt_id: str) -> InterruptRecord:
    with engine.connect() as conn:
        found = get_interrupt(conn, interrupt_id)
    assert found is not None
    return found


def resolve(engine: Engine, interrupt_id: str, value: Any, *, at: datetime = NOW) -> bool:
    with engine.begin() as conn:
        return claim(conn, interrupt_id, status="resolved", now=at, resume_value=value)


def ids(records: list[InterruptRecord]) -> list[str]:
    return [r.interrupt_id for r in records]


def insert_run(engine: Engine, run_id: str = RUN, status: str = "waiting-approval") -> None:
    owner = {"tenant": "acme", "subject": {"subjectId": "alice"}}
    with engine.begin() as conn:
        conn.execute(
            runs_table.insert().values(
                run_id=run_id, workflow_id="wf", tenant="acme", owner=owner, status=status,
                created_at=NOW, updated_at=NOW,
            )
        )  # fmt: skip


# --- insert ------------------------------------------------------------------------------------


def test_insert_is_idempotent_by_key(engine: Engine) -> None:
    original = record("a", deadline=NOW + timedelta(hours=1), checkpoint_ns="sub:1", visit_index=2, ordinal=1)
    with engine.begin() as conn:
        stored, inserted = insert_interrupt(conn, original)
    assert inserted is True
    assert stored.status == "pending" and stored.votes is None and stored.resume_value is None
    assert stored.payload == original.payload
    assert (stored.checkpoint_ns, stored.visit_index, stored.ordinal) == ("sub:1", 2, 1)
    assert as_utc(stored.deadline) == NOW + timedelta(hours=1)  # type: ignore[arg-type]

    replayed = replace(
        original,
        payload={"kind": "approval", "prompt": "something else"},
        node_id="other-node",
        deadline=None,
        created_at=NOW + timedelta(days=1),
    )
    with engine.begin() as conn:
        again, inserted_again = insert_interrupt(conn, replayed)
    assert inserted_again is False
    assert again == stored
    assert fetch(engine, original.interrupt_id) == stored
    with engine.connect() as conn:
        assert ids(interrupts_of_run(conn, RUN)) == [original.interrupt_id]


def test_replayed_insert_returns_the_resolved_row(engine: Engine) -> None:
    (original,) = insert(engine, record("a"))
    assert resolve(engine, original.interrupt_id, {"approved": True})
    with engine.begin() as conn:
        again, inserted = insert_interrupt(conn, record("a"))
    assert inserted is False
    assert again.status == "resolved" and again.resume_value == {"approved": True}


# --- claim -------------------------------------------------------------------------------------


def test_claim_moves_pending_to_final_once(engine: Engine) -> None:
    (row,) = insert(engine, record("a"))
    with engine.begin() as conn:
        assert claim(
            conn,
            row.interrupt_id,
            status="resolved",
            now=NOW + timedelta(minutes=5),
            resume_value={"approved": True},
            resolution={"decision": "approve"},
            resolved_by={"subjectId": "alice"},
        )
    won = fetch(engine, row.interrupt_id)
    assert won.status == "resolved"
    assert won.resume_value == {"approved": True}
    assert won.resolution == {"decision": "approve"}
    assert won.resolved_by == {"subjectId": "alice"}
    assert as_utc(won.resolved_at) == NOW + timedelta(minutes=5)  # type: ignore[arg-type]
    assert won.consumed_at is None


@pytest.mark.parametrize("first", ["resolved", "cancelled", "expired"])
def test_claim_on_a_final_row_returns_false_and_changes_nothing(engine: Engine, first: Any) -> None:
    (row,) = insert(engine, record("a"))
    with engine.begin() as conn:
        assert claim(conn, row.interrupt_id, status=first, now=NOW, resume_value={"first": True})
    before = fetch(engine, row.interrupt_id)
    assert before.status == first
    for second in ("resolved", "cancelled", "expired"):
        with engine.begin() as conn:
            assert not claim(
                conn,
                row.interrupt_id,
                status=second,
                now=NOW + timedelta(hours=1),
                resume_value={"second": True},
                resolution={"late": True},
                resolved_by={"subjectId": "mallory"},
            )
        assert fetch(engine, row.interrupt_id) == before


def test_claim_of_unknown_interrupt_is_false(engine: Engine) -> None:
    with engine.begin() as conn:
        assert not claim(conn, "acme/int-missing", status="resolved", now=NOW)


def test_claim_to_pending_is_refused(engine: Engine) -> None:
    (row,) = insert(engine, record("a"))
    with engine.begin() as conn, pytest.raises(ValueError):
        claim(conn, row.interrupt_id, status="pending", now=NOW)
    assert fetch(engine, row.interrupt_id) == row


def test_rolled_back_claim_leaves_the_interrupt_pending(engine: Engine) -> None:
    (row,) = insert(engine, record("a"))
    with engine.connect() as conn, conn.begin() as tx:
        assert claim(conn, row.interrupt_id, status="resolved", now=NOW, resume_value=1)
        tx.rollback()
    assert fetch(engine, row.interrupt_id) == row
    assert resolve(engine, row.interrupt_id, 2)
    assert fetch(engine, row.interrupt_id).resume_value == 2


def race_claimers(engine: Engine, interrupt_id: str, count: int) -> list[tuple[str, bool]]:
    barrier = threading.Barrier(count)
    results: list[tuple[str, bool]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def claimer(index: int) -> None:
        name = f"t{index}"
        try:
            with engine.connect() as conn:
                barrier.wait(BARRIER_TIMEOUT_S)
                with conn.begin():
                    won = claim(conn, interrupt_id, status="resolved", now=NOW, resume_value={"by": name})
            with lock:
                results.append((name, won))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == count
    return results


def test_fifty_concurrent_claimers_one_winner_postgres(postgres_url: str) -> None:
    engine = make_engine(postgres_url, pool_size=50, max_overflow=0)
    try:
        upgrade(engine)
        (row,) = insert(engine, record("a"))
        results = race_claimers(engine, row.interrupt_id, 50)
        winners = [name for name, won in results if won]
        assert len(winners) == 1
        assert fetch(engine, row.interrupt_id).resume_value == {"by": winners[0]}
    finally:
        engine.dispose()


def test_concurrent_claimers_one_winner_sqlite_threads(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url, pool_size=20, max_overflow=0)
    try:
        upgrade(engine)
        (row,) = insert(engine, record("a"))
        results = race_claimers(engine, row.interrupt_id, 20)
        winners = [name for name, won in results if won]
        assert len(winners) == 1
        assert fetch(engine, row.interrupt_id).resume_value == {"by": winners[0]}
    finally:
        engine.dispose()


@pytest.mark.slow
def test_claimers_in_two_processes_one_winner_sqlite(sqlite_url: str) -> None:
    processes, threads = 2, 25
    engine = make_engine(sqlite_url)
    try:
        upgrade(engine)
        (row,) = insert(engine, record("a"))

        reports = run_in_processes(
            claim_worker,
            lambda p, barrier, queue: (sqlite_url, row.interrupt_id, f"p{p}", threads, barrier, queue),
            processes,
            threads,
        )

        assert [e for _, _, errs in reports for e in errs] == []
        results = [r for _, rs, _ in reports for r in rs]
        assert len(results) == processes * threads
        winners = [name for name, won in results if won]
        assert len(winners) == 1
        final = fetch(engine, row.interrupt_id)
        assert final.status == "resolved"
        assert final.resume_value == {"by": winners[0]}
        assert final.resolved_by == {"claimer": winners[0]}
    finally:
        engine.dispose()


# --- votes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["lock_interrupt", "interrupts_at_node"])
def test_concurrent_voters_lose_no_vote(engine: Engine, reader: str) -> None:
    voters = 10
    insert_run(engine)
    (row,) = insert(engine, record("a", kind="approval"))

    def held(conn: Any) -> InterruptRecord | None:
        if reader == "lock_interrupt":
            return lock_interrupt(conn, row.interrupt_id)
        _, records = interrupts_at_node(conn, RUN, row.node_id)
        return records[0] if records else None

    barrier = threading.Barrier(voters)
    errors: list[BaseException] = []

    def vote(index: int) -> None:
        try:
            with engine.connect() as conn:
                barrier.wait(BARRIER_TIMEOUT_S)
                with conn.begin():
                    current = held(conn)
                    assert current is not None
                    # Widen the read-modify-write window: without the row lock, votes get lost.
                    time.sleep(0.02)
                    assert set_votes(conn, row.interrupt_id, [*(current.votes or []), {"voter": f"v{index}"}])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=vote, args=(i,)) for i in range(voters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    votes = fetch(engine, row.interrupt_id).votes
    assert votes is not None
    assert sorted(v["voter"] for v in votes) == sorted(f"v{i}" for i in range(voters))


def test_set_votes_only_on_pending(engine: Engine) -> None:
    pending, done = insert(engine, record("a"), record("b"))
    with engine.begin() as conn:
        assert set_votes(conn, pending.interrupt_id, [{"voter": "alice"}])
    assert fetch(engine, pending.interrupt_id).votes == [{"voter": "alice"}]
    assert resolve(engine, done.interrupt_id, True)
    with engine.begin() as conn:
        assert not set_votes(conn, done.interrupt_id, [{"voter": "late"}])
        assert lock_interrupt(conn, "acme/int-missing") is None
        locked = lock_interrupt(conn, done.interrupt_id)
    assert locked is not None and locked.votes is None and locked.status == "resolved"


# --- consumption, expiry, cancellation, listing -----------------------------------------------


def test_resolved_unconsumed_and_mark_consumed(engine: Engine) -> None:
    a, b, c, d, other = insert(
        engine, record("a"), record("b"), record("c"), record("d"), record("x", run_id=OTHER_RUN)
    )
    assert resolve(engine, b.interrupt_id, "b", at=NOW + timedelta(minutes=1))
    assert resolve(engine, a.interrupt_id, "a", at=NOW + timedelta(minutes=2))
    assert resolve(engine, other.interrupt_id, "x", at=NOW)
    with engine.begin() as conn:
        assert claim(conn, c.interrupt_id, status="cancelled", now=NOW)
        # d stays pending

    with engine.connect() as conn:
        assert ids(resolved_unconsumed(conn, RUN)) == [b.interrupt_id, a.interrupt_id]
        assert ids(resolved_unconsumed(conn)) == [other.interrupt_id, b.interrupt_id, a.interrupt_id]
        assert [r.resume_value for r in resolved_unconsumed(conn, RUN)] == ["b", "a"]

    later = NOW + timedelta(minutes=10)
    with engine.begin() as conn:
        assert mark_consumed(conn, [b.interrupt_id], now=later) == 1
        assert mark_consumed(conn, [b.interrupt_id, a.interrupt_id], now=later + timedelta(minutes=1)) == 1
        assert mark_consumed(conn, [a.interrupt_id, b.interrupt_id], now=later) == 0
        assert mark_consumed(conn, [], now=later) == 0
    assert as_utc(fetch(engine, b.interrupt_id).consumed_at) == later  # type: ignore[arg-type]
    assert as_utc(fetch(engine, a.interrupt_id).consumed_at) == later + timedelta(minutes=1)  # type: ignore[arg-type]
    with engine.connect() as conn:
        assert resolved_unconsumed(conn, RUN) == []
        assert ids(resolved_unconsumed(conn)) == [other.interrupt_id]
    assert fetch(engine, d.interrupt_id).status == "pending"


def test_expired_pending_finds_only_pending_past_deadline_oldest_first(engine: Engine) -> None:
    hour = timedelta(hours=1)
    rows = insert(
        engine,
        record("later", deadline=NOW + timedelta(seconds=1)),
        record("minus1h", deadline=NOW - hour),
        record("none"),
        record("now", deadline=NOW),
        record("minus2h", deadline=NOW - 2 * hour, run_id=OTHER_RUN),
        record("resolved", deadline=NOW - 3 * hour),
        record("cancelled", deadline=NOW - 4 * hour),
    )
    by_name = {r.interrupt_id.rsplit("-", 1)[-1]: r.interrupt_id for r in rows}
    assert resolve(engine, by_name["resolved"], True)
    with engine.begin() as conn:
        assert claim(conn, by_name["cancelled"], status="cancelled", now=NOW)

    with engine.connect() as conn:
        found = expired_pending(conn, NOW)
        assert ids(found) == [by_name["minus2h"], by_name["minus1h"], by_name["now"]]
        assert all(r.status == "pending" for r in found)
        assert ids(expired_pending(conn, NOW, limit=2)) == [by_name["minus2h"], by_name["minus1h"]]
        assert ids(expired_pending(conn, NOW - 90 * timedelta(minutes=1))) == [by_name["minus2h"]]
        assert ids(expired_pending(conn, NOW - 3 * hour)) == []
        assert len(expired_pending(conn, NOW + hour)) == 4


def test_cancel_pending_cancels_only_pending_of_the_run(engine: Engine) -> None:
    p1, p2, done, expired, elsewhere = insert(
        engine,
        record("p1"),
        record("p2", minutes=1),
        record("done"),
        record("expired"),
        record("elsewhere", run_id=OTHER_RUN),
    )
    assert resolve(engine, done.interrupt_id, {"ok": True})
    with engine.begin() as conn:
        assert claim(conn, expired.interrupt_id, status="expired", now=NOW)
    before_done = fetch(engine, done.interrupt_id)
    before_expired = fetch(engine, expired.interrupt_id)

    at = NOW + timedelta(minutes=30)
    with engine.begin() as conn:
        cancelled = cancel_pending(conn, RUN, now=at)
    assert sorted(cancelled) == sorted([p1.interrupt_id, p2.interrupt_id])
    for interrupt_id in cancelled:
        row = fetch(engine, interrupt_id)
        assert row.status == "cancelled"
        assert as_utc(row.resolved_at) == at  # type: ignore[arg-type]
        assert row.resume_value is None
    assert fetch(engine, done.interrupt_id) == before_done
    assert fetch(engine, expired.interrupt_id) == before_expired
    assert fetch(engine, elsewhere.interrupt_id).status == "pending"

    with engine.begin() as conn:
        assert cancel_pending(conn, RUN, now=at) == []


def _of_two_nodes_and_runs() -> list[InterruptRecord]:
    """Three interrupts of the review node (two in one execution), one of another node, one of
    another run, in an order that is not theirs."""
    return [
        record("second", minutes=1, visit_index=0, ordinal=1),
        record("first", minutes=1, visit_index=0, ordinal=0),
        record("third", minutes=2),
        record("on-other-node", minutes=0, node_id="notify"),
        record("elsewhere", run_id=OTHER_RUN),
    ]


def test_interrupts_of_run_filters_and_orders(engine: Engine) -> None:
    second, first, third, other_node, elsewhere = insert(engine, *_of_two_nodes_and_runs())
    assert resolve(engine, third.interrupt_id, True)
    with engine.connect() as conn:
        assert ids(interrupts_of_run(conn, RUN)) == ids([other_node, first, second, third])
        assert ids(interrupts_of_run(conn, RUN, node_id="review")) == ids([first, second, third])
        assert ids(interrupts_of_run(conn, RUN, statuses=["pending"])) == ids([other_node, first, second])
        assert ids(interrupts_of_run(conn, RUN, node_id="review", statuses=["resolved"])) == ids([third])
        assert ids(interrupts_of_run(conn, OTHER_RUN)) == ids([elsewhere])
        assert interrupts_of_run(conn, "acme/run-none0000000000000") == []


def test_interrupts_at_node_reads_the_run_status_with_the_nodes_interrupts(engine: Engine) -> None:
    insert_run(engine)
    second, first, third, _other_node, _elsewhere = insert(engine, *_of_two_nodes_and_runs())
    assert resolve(engine, third.interrupt_id, "yes")
    resolved = fetch(engine, third.interrupt_id)
    with engine.begin() as conn:
        status, records = interrupts_at_node(conn, RUN, "review")
        assert status == "waiting-approval"
        assert records == [first, second, resolved]  # whole records, as stored
        assert records[2].status == "resolved" and records[2].resume_value == "yes"
        # A node without interrupts still tells the run's status; an unknown run tells None.
        assert interrupts_at_node(conn, RUN, "nowhere") == ("waiting-approval", [])
        assert interrupts_at_node(conn, "acme/run-none0000000000000", "review") == (None, [])
        assert interrupts_at_node(conn, OTHER_RUN, "review") == (None, [])  # interrupts of no run row
