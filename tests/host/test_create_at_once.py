"""Creating a run on PostgreSQL is one statement in autocommit: the run's row, the queue's
``NOTIFY`` (for a run left to the workers) and ``run.started``, with no ``BEGIN``/``COMMIT``.

A run created for a waiting caller is leased to it, so no worker is told of it; its id minted
by the call, its row and ``run.started`` go first in its drive's first transaction instead. A resolution's
claim, the run's queueing and the events that tell of them are one statement of the resolving
transaction, and each pass stores its saves in the one transaction that settles it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.host._graphs import ALICE, approval_graph
from tests.round_trips import heads, round_trips
from wop_langgraph.host import WopHost, held_writes
from wop_langgraph.protocol.errors import NotFound
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.store.run_queue import QUEUE_CHANNEL


@pytest.fixture
def pg_host(postgres_url: str) -> Iterator[WopHost]:
    host = WopHost.from_url(postgres_url)
    host.register("approval", approval_graph())
    try:
        yield host
    finally:
        host.saver.close()


def queue_notices(listener: psycopg.Connection[Any]) -> list[str]:
    return [note.payload for note in listener.notifies(timeout=0.5) if note.channel == QUEUE_CHANNEL]


def test_a_run_left_to_the_workers_is_created_in_one_statement_that_tells_them(
    pg_host: WopHost, postgres_url: str
) -> None:
    pg_host.create_run("approval", {}, owner=ALICE, wait=False)  # warm the pool and the statement cache
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as listener:
        listener.execute(f"LISTEN {QUEUE_CHANNEL}")
        with round_trips() as sent:
            snap = pg_host.create_run("approval", {"n": 1}, owner=ALICE, wait=False)
        assert heads(sent) == ["WITH"], sent
        assert queue_notices(listener) == [snap["runId"]]
    assert snap["status"] == "pending"
    started = [e for e in pg_host.events(snap["runId"]) if e["type"] == "run.started"]
    assert [e["sequence"] for e in started] == [0]
    assert pg_host.run_until_idle() >= 1
    assert pg_host.snapshot(snap["runId"])["status"] == "waiting-approval"


def test_a_run_created_for_a_waiting_caller_tells_no_worker(pg_host: WopHost, postgres_url: str) -> None:
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as listener:
        listener.execute(f"LISTEN {QUEUE_CHANNEL}")
        snap = pg_host.create_run("approval", {}, owner=ALICE)
        assert snap["status"] == "waiting-approval"
        assert snap["runId"] not in queue_notices(listener)


def test_a_create_with_a_write_of_its_own_commits_it_in_the_same_transaction(pg_host: WopHost) -> None:
    seen: list[str] = []

    def record(conn: Any, snapshot: dict[str, Any]) -> None:
        seen.append(snapshot["runId"])
        raise RuntimeError("the caller's own write failed")

    with pytest.raises(RuntimeError):
        pg_host.create_run("approval", {}, owner=ALICE, wait=False, on_commit=record)
    (run_id,) = seen
    with pytest.raises(NotFound):  # nothing of the run committed
        pg_host.snapshot(run_id)


def test_a_cycle_opens_a_transaction_per_pass_and_one_for_the_resolution(
    pg_host: WopHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The creation has no transaction of its own (the run's row goes first in its drive's);
    each pass's saves and node ends ride in the transaction that records how it stopped (the
    interrupt, with the run's rest; the run's end)."""
    # Nothing stored on its own, however slow the machine: only by the pass's transactions.
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)
    pg_host.create_run("approval", {}, owner=ALICE)  # warm the pool and the statement caches
    with round_trips() as created:
        snap = pg_host.create_run("approval", {}, owner=ALICE)
    assert snap["status"] == "waiting-approval"
    with round_trips() as resolved:
        done = pg_host.resolve(snap["runId"], "review", {"action": "accept"}, ALICE)
    assert done["status"] == "completed"
    # One transaction, the interrupt's: the run's row first (psycopg's BEGIN goes out with it),
    # what the pass held, the interrupt's statement, the run's rest; nothing follows its COMMIT.
    assert heads(created).count("BEGIN") == 1, created
    assert created[0].startswith("INSERT INTO wop_runs"), created
    assert heads(created)[-2:] == ["UPDATE", "COMMIT"], created
    # The interrupt's insert, the run's wait and the events that tell of them: one statement.
    (recorded,) = [text for text in created if "INSERT INTO wop_interrupts" in text]
    assert recorded.startswith("WITH") and "INSERT INTO wop_events" in recorded, created
    # The resolution's transaction: the interrupt read (psycopg's BEGIN goes out as it runs),
    # the claim with the run's queueing and its events in one statement, the caller's lease on
    # the run with the reads of its work and its checkpoint. Then the transaction of the
    # pass's end, which reads no checkpoint.
    assert heads(resolved).count("BEGIN") == 2, resolved
    assert heads(resolved)[:7] == ["SELECT", "BEGIN", "WITH", "UPDATE", "SELECT", "WITH", "COMMIT"], resolved
    assert sum(text.startswith("WITH cp AS") for text in resolved) == 1, resolved  # (the sixth, above)
    ends = [e for e in pg_host.events(snap["runId"]) if e["type"] == "node.completed"]
    assert [e["nodeId"] for e in ends] == ["write", "review", "publish"]


@pytest.mark.parametrize("how", ["workers", "caller", "caller, id given out"])
def test_a_run_is_durable_when_its_creation_returns_though_a_waiting_callers_commits_without_a_flush(
    pg_host: WopHost, postgres_url: str, how: str
) -> None:
    """A run the caller drives is told of to no one until the drive's first commit, which is
    synchronous: the call returns with the run's row flushed. Its id minted by the call, the
    row has no transaction of its own (it goes first in the drive's); an id given out before
    (a LangGraph API client has it), it is committed first, without waiting for the WAL
    flush. A run left to the workers is answered at once: its creation waits for the flush."""
    wait = how != "workers"

    def create() -> None:
        given = {"run_id": mint_tenant_id("acme")} if how == "caller, id given out" else {}
        pg_host.create_run("approval", {}, owner=ALICE, wait=wait, **given)

    create()  # warm the pool and the statement caches
    with (
        psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as side,
        round_trips() as sent,
    ):
        written: list[int] = []
        execute = psycopg.Cursor.execute

        def noting(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            result = execute(self, query, *args, **kwargs)
            if not written and self.connection is not side:  # the creation: where the WAL is now
                written.append(_lsn(side, "pg_current_wal_insert_lsn"))
            return result

        psycopg.Cursor.execute = noting  # type: ignore[method-assign]
        try:
            create()
        finally:
            psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        assert _lsn(side, "pg_current_wal_flush_lsn") >= written[0]
    creation = sent[0]
    if how == "caller":
        assert creation.startswith("INSERT INTO wop_runs") and heads(sent)[1] == "BEGIN", sent
        assert not any("set_config" in text for text in sent), sent
    else:
        assert creation.startswith("WITH") and ("set_config" in creation) is wait, creation


def _lsn(conn: psycopg.Connection[Any], function: str) -> int:
    row = conn.execute(f"SELECT {function}() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])
