"""The event log: gap-free per-run sequences from 0, ordered reads, wire shape, concurrent appenders."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Boolean, Connection, Engine, bindparam, event, literal_column, select
from tests.official import validate_event
from tests.round_trips import round_trips
from tests.store._workers import BARRIER_TIMEOUT_S, append_worker, run_in_processes

from wop_langgraph._clock import as_utc, iso_z
from wop_langgraph.proof.chain import chain_next, event_digest
from wop_langgraph.store.engine import READ_ONLY, make_engine, one_statement
from wop_langgraph.store.events import (
    Appended,
    NewEvent,
    NextAppend,
    RideNotTaken,
    RidingWrite,
    RunLogClosed,
    Write,
    append,
    last_sequence,
    read_events,
)
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.run_tables import events_table, runs_table

NOW = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
RUN = "acme/run-0123456789abcdef"
OTHER_RUN = "acme/run-fedcba9876543210"


def log(i: int) -> NewEvent:
    return NewEvent(type="log.appended", payload={"level": "info", "message": f"m{i}"})


def append_to(engine: Engine, run_id: str, events: list[NewEvent]) -> list[int]:
    with engine.begin() as conn:
        return [e.sequence for e in append(conn, run_id, events, now=NOW).events]


def sequences(engine: Engine, run_id: str, **kwargs: object) -> list[int]:
    with engine.connect().execution_options(**{READ_ONLY: True}) as conn:
        return [e.sequence for e in read_events(conn, run_id, **kwargs)]  # type: ignore[arg-type]


def test_sequences_start_at_zero_and_are_gap_free(engine: Engine) -> None:
    assert append_to(engine, RUN, [log(0)]) == [0]
    assert append_to(engine, RUN, [log(1), log(2), log(3)]) == [1, 2, 3]
    assert append_to(engine, RUN, [log(4)]) == [4]
    assert append_to(engine, RUN, []) == []
    assert sequences(engine, RUN) == [0, 1, 2, 3, 4]


def test_sequences_are_per_run(engine: Engine) -> None:
    assert append_to(engine, RUN, [log(0), log(1)]) == [0, 1]
    assert append_to(engine, OTHER_RUN, [log(0)]) == [0]
    assert append_to(engine, RUN, [log(2)]) == [2]
    assert append_to(engine, OTHER_RUN, [log(1), log(2)]) == [1, 2]
    assert sequences(engine, RUN) == [0, 1, 2]
    assert sequences(engine, OTHER_RUN) == [0, 1, 2]
    with engine.connect() as conn:
        assert {e.run_id for e in read_events(conn, RUN)} == {RUN}
        assert [e.payload["message"] for e in read_events(conn, OTHER_RUN)] == ["m0", "m1", "m2"]


def test_stored_event_round_trips(engine: Engine) -> None:
    event = NewEvent(
        type="node.started",
        payload={"nodeId": "review", "typeId": "core.approval"},
        node_id="review",
        causation_id="cause-0123456789abcdef",
    )
    with engine.begin() as conn:
        (written,) = append(conn, RUN, [event], now=NOW).events
    with engine.connect() as conn:
        (read,) = read_events(conn, RUN)
    assert (read.run_id, read.sequence, read.event_id, read.type) == (RUN, 0, event.event_id, "node.started")
    assert read.payload == event.payload
    assert (read.node_id, read.causation_id, read.schema_version) == ("review", event.causation_id, 1)
    assert as_utc(read.timestamp) == NOW
    assert read.to_wire() == written.to_wire()


def test_read_after_returns_only_later_events_in_order(engine: Engine) -> None:
    append_to(engine, RUN, [log(i) for i in range(5)])
    append_to(engine, OTHER_RUN, [log(i) for i in range(7)])
    append_to(engine, RUN, [log(i) for i in range(5, 10)])
    assert sequences(engine, RUN) == list(range(10))
    assert sequences(engine, RUN, after=4) == [5, 6, 7, 8, 9]
    assert sequences(engine, RUN, after=8) == [9]
    assert sequences(engine, RUN, after=9) == []
    assert sequences(engine, RUN, after=100) == []
    with engine.connect() as conn:
        assert [e.payload["message"] for e in read_events(conn, RUN, after=6)] == ["m7", "m8", "m9"]


def test_read_limit_and_types(engine: Engine) -> None:
    kinds = ["log.appended", "node.started", "log.appended", "node.completed", "log.appended", "node.started"]
    append_to(engine, RUN, [NewEvent(type=kind, payload={"i": i}) for i, kind in enumerate(kinds)])
    assert sequences(engine, RUN, limit=2) == [0, 1]
    assert sequences(engine, RUN, after=1, limit=3) == [2, 3, 4]
    assert sequences(engine, RUN, limit=100) == [0, 1, 2, 3, 4, 5]
    assert sequences(engine, RUN, types=["log.appended"]) == [0, 2, 4]
    assert sequences(engine, RUN, types=("node.started", "node.completed")) == [1, 3, 5]
    assert sequences(engine, RUN, types=iter(["node.started"])) == [1, 5]
    assert sequences(engine, RUN, types=["log.appended"], after=0, limit=1) == [2]
    assert sequences(engine, RUN, types=["run.completed"]) == []


def test_last_sequence(engine: Engine) -> None:
    with engine.connect() as conn:
        assert last_sequence(conn, RUN) == -1
    append_to(engine, OTHER_RUN, [log(0), log(1), log(2)])
    with engine.connect() as conn:
        assert last_sequence(conn, RUN) == -1
        assert last_sequence(conn, OTHER_RUN) == 2
    append_to(engine, RUN, [log(0)])
    append_to(engine, RUN, [log(1), log(2), log(3), log(4)])
    with engine.connect() as conn:
        assert last_sequence(conn, RUN) == 4


def test_to_wire_is_a_valid_official_run_event(engine: Engine) -> None:
    events = [
        NewEvent(type="run.started", payload={"workflowId": "approve-expense"}),
        NewEvent(
            type="node.started",
            payload={"nodeId": "review", "typeId": "core.approval"},
            node_id="review",
        ),
        NewEvent(
            type="log.appended",
            payload={"level": "info", "message": "waiting for a reviewer"},
            node_id="review",
            causation_id="0123456789abcdef0123",
        ),
    ]
    with engine.begin() as conn:
        append(conn, RUN, events, now=NOW)
    with engine.connect() as conn:
        docs = [e.to_wire() for e in read_events(conn, RUN)]
    for doc in docs:
        validate_event(doc)
    assert [d["sequence"] for d in docs] == [0, 1, 2]
    assert {d["timestamp"] for d in docs} == {"2026-01-01T12:00:00.123Z"} == {iso_z(NOW)}
    assert [d["eventId"] for d in docs] == [e.event_id for e in events]
    assert {d["runId"] for d in docs} == {RUN}
    assert "nodeId" not in docs[0] and "causationId" not in docs[0]
    assert docs[1]["nodeId"] == "review" and "causationId" not in docs[1]
    assert docs[2]["causationId"] == "0123456789abcdef0123"


def test_wire_validation_catches_a_broken_envelope(engine: Engine) -> None:
    # The judge must be able to fail: prove it rejects what to_wire must never produce.
    with engine.begin() as conn:
        (event,) = append(conn, RUN, [log(0)], now=NOW).events
    doc = event.to_wire()
    validate_event(doc)
    for broken in ({**doc, "sequence": -1}, {**doc, "runId": "no-tenant"}, {**doc, "timestamp": "soon"}):
        with pytest.raises(AssertionError):
            validate_event(broken)


def test_rolled_back_append_gives_its_sequences_back(engine: Engine) -> None:
    # The first append of a run creates its counter row; rolling it back must not leave it behind.
    with engine.connect() as conn, conn.begin() as tx:
        assert [e.sequence for e in append(conn, RUN, [log(0), log(1)], now=NOW).events] == [0, 1]
        tx.rollback()
    assert sequences(engine, RUN) == []
    assert append_to(engine, RUN, [log(0), log(1)]) == [0, 1]

    with engine.connect() as conn, conn.begin() as tx:
        doomed = append(conn, RUN, [log(2), log(3), log(4)], now=NOW).events
        assert [e.sequence for e in doomed] == [2, 3, 4]
        tx.rollback()
    with pytest.raises(RuntimeError), engine.begin() as conn:
        append(conn, RUN, [log(2)], now=NOW)
        raise RuntimeError("the caller's work failed after the append")

    assert sequences(engine, RUN) == [0, 1]
    assert append_to(engine, RUN, [log(2)]) == [2]
    assert append_to(engine, RUN, [log(3)]) == [3]
    assert sequences(engine, RUN) == [0, 1, 2, 3]
    with engine.connect() as conn:
        assert [e.payload["message"] for e in read_events(conn, RUN)] == ["m0", "m1", "m2", "m3"]


def test_an_event_appended_once_is_logged_once(engine: Engine) -> None:
    replayed = log(1)
    append_to(engine, RUN, [log(0)])
    with engine.begin() as conn:
        assert append(conn, RUN, [replayed], now=NOW, once=True)
    with engine.begin() as conn:
        assert not append(conn, RUN, [replayed], now=NOW, once=True)
        assert append(conn, RUN, [log(2)], now=NOW, once=True)
    with engine.connect() as conn:
        logged = read_events(conn, RUN)
    assert [(e.sequence, e.payload["message"]) for e in logged] == [(0, "m0"), (1, "m1"), (2, "m2")]


def test_a_closed_log_refuses_appends_but_knows_what_it_holds(engine: Engine) -> None:
    logged_before = log(0)
    append_to(engine, RUN, [logged_before])
    with engine.begin() as conn:
        (ended,) = append(conn, RUN, [log(1)], now=NOW, close=True).events
    assert ended.sequence == 1
    with pytest.raises(RunLogClosed), engine.begin() as conn:
        append(conn, RUN, [log(2), log(3)], now=NOW)
    with pytest.raises(RunLogClosed), engine.begin() as conn:
        append(conn, RUN, [log(4)], now=NOW, once=True)
    with engine.begin() as conn:  # a replay of an event logged before the end is not an append
        assert not append(conn, RUN, [logged_before], now=NOW, once=True)
    assert sequences(engine, RUN) == [0, 1]
    assert append_to(engine, OTHER_RUN, [log(0)]) == [0]  # other runs' logs stay open


def test_an_append_is_one_statement_on_postgresql(engine: Engine) -> None:
    # PostgreSQL reserves the sequences and inserts the events in one round trip; SQLite (no
    # data-modifying CTEs, no round trip either) bumps the counter and then inserts.
    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        with engine.begin() as conn:
            statements.clear()
            append(conn, RUN, [log(0), log(1), log(2)], now=NOW)
            batch = len(statements)
            statements.clear()
            append(conn, RUN, [log(3)], now=NOW, once=True)
            once = len(statements)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    expected = 1 if engine.dialect.name == "postgresql" else 2
    assert (batch, once) == (expected, expected), statements
    assert sequences(engine, RUN) == [0, 1, 2, 3]


@contextlib.contextmanager
def first(conn: Connection, run_id: str, timed: list[tuple[NewEvent, datetime]]) -> Iterator[NextAppend]:
    """``timed`` to go first in the block's first append given what this yields, or on their own
    as the block ends (as a drive's held node starts do)."""
    ahead = NextAppend(run_id, list(timed))
    yield ahead
    ahead.append_left(conn)


def logged(engine: Engine, run_id: str) -> list[tuple[int, str, datetime]]:
    with engine.connect() as conn:
        return [(e.sequence, e.payload["message"], as_utc(e.timestamp)) for e in read_events(conn, run_id)]


def test_staged_events_go_first_in_the_next_appends_statement_with_their_own_times(engine: Engine) -> None:
    earlier = NOW - timedelta(seconds=1)
    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    append_to(engine, RUN, [log(0)])
    event.listen(engine, "before_cursor_execute", count)
    try:
        with engine.begin() as conn, first(conn, RUN, [(log(1), earlier), (log(2), earlier)]) as ahead:
            statements.clear()
            (third,) = append(conn, RUN, [log(3)], now=NOW, once=True, ahead=ahead).events
            appended = len(statements)
            (after,) = append(conn, RUN, [log(4)], now=NOW, ahead=ahead).events  # the first went already
    finally:
        event.remove(engine, "before_cursor_execute", count)
    # One statement on PostgreSQL; on SQLite the counter's bump and the insert.
    assert appended == (1 if engine.dialect.name == "postgresql" else 2), statements
    assert (third.sequence, after.sequence) == (3, 4)  # only the caller's events are returned
    assert logged(engine, RUN) == [
        (0, "m0", NOW),
        (1, "m1", earlier),
        (2, "m2", earlier),
        (3, "m3", NOW),
        (4, "m4", NOW),
    ]


def test_staged_events_already_logged_are_skipped_and_the_rest_appended_in_order(engine: Engine) -> None:
    replayed = log(1)
    append_to(engine, RUN, [log(0), replayed])
    with engine.begin() as conn, first(conn, RUN, [(replayed, NOW), (log(2), NOW)]) as ahead:
        (completed,) = append(conn, RUN, [log(3)], now=NOW, ahead=ahead).events
    assert completed.sequence == 3
    with engine.begin() as conn, first(conn, RUN, [(log(4), NOW)]) as ahead:
        assert not append(conn, RUN, [replayed], now=NOW, once=True, ahead=ahead)  # log(4) still goes
    assert [(seq, message) for seq, message, _ in logged(engine, RUN)] == [
        (0, "m0"),
        (1, "m1"),
        (2, "m2"),
        (3, "m3"),
        (4, "m4"),
    ]


def test_staged_events_are_appended_as_the_block_ends_if_nothing_was(engine: Engine) -> None:
    with engine.begin() as conn:
        with first(conn, RUN, [(log(0), NOW)]) as ahead, first(conn, OTHER_RUN, [(log(9), NOW)]) as other:
            append(conn, OTHER_RUN, [log(10)], now=NOW, ahead=ahead)  # another run's: this one's wait
            assert ahead.first and other.first  # neither taken: an append takes only its own run's
        assert append(conn, RUN, [log(1)], now=NOW).events[0].sequence == 1  # nothing staged now
    assert [m for _, m, _ in logged(engine, RUN)] == ["m0", "m1"]
    assert [m for _, m, _ in logged(engine, OTHER_RUN)] == ["m10", "m9"]


def test_staged_events_of_a_closed_log_are_dropped(engine: Engine) -> None:
    append_to(engine, RUN, [log(0)])
    with engine.begin() as conn:
        append(conn, RUN, [log(1)], now=NOW, close=True)
    with engine.begin() as conn, first(conn, RUN, [(log(2), NOW)]):
        pass  # appended on their own as the block ends: the closed log takes nothing, silently
    with pytest.raises(RunLogClosed), engine.begin() as conn, first(conn, RUN, [(log(3), NOW)]) as ahead:
        append(conn, RUN, [log(4)], now=NOW, once=True, ahead=ahead)
    assert [m for _, m, _ in logged(engine, RUN)] == ["m0", "m1"]


def assert_complete_log(
    engine: Engine, run_id: str, total: int, payload_keys: set[tuple[object, ...]]
) -> None:
    with engine.connect() as conn:
        events = read_events(conn, run_id)
        assert last_sequence(conn, run_id) == total - 1
    assert [e.sequence for e in events] == list(range(total))
    assert len({e.event_id for e in events}) == total
    found = {tuple(e.payload[k] for k in ("writer", "thread", "i")) for e in events}
    assert found == payload_keys


def test_concurrent_appenders_threads(engine: Engine) -> None:
    threads, per_thread = 8, 25
    barrier = threading.Barrier(threads)
    seen: dict[int, list[int]] = {t: [] for t in range(threads)}
    errors: list[BaseException] = []

    def appender(index: int) -> None:
        try:
            barrier.wait(BARRIER_TIMEOUT_S)
            for i in range(per_thread):
                event = NewEvent(type="log.appended", payload={"writer": "main", "thread": index, "i": i})
                with engine.begin() as conn:
                    (stored,) = append(conn, RUN, [event], now=NOW).events
                seen[index].append(stored.sequence)
                if i % 5 == 0:
                    # A concurrent transaction that rolls back must leave no hole behind.
                    with engine.connect() as conn, conn.begin() as tx:
                        append(conn, RUN, [log(-1)], now=NOW)
                        tx.rollback()
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=appender, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert errors == []
    total = threads * per_thread
    expected = {("main", t, i) for t in range(threads) for i in range(per_thread)}
    assert_complete_log(engine, RUN, total, expected)
    # Each thread appended in order, so its own sequences must rise.
    for sequence_list in seen.values():
        assert sequence_list == sorted(sequence_list)
    assert sorted(s for values in seen.values() for s in values) == list(range(total))


@pytest.mark.slow
def test_concurrent_appenders_two_processes_on_one_sqlite_file(sqlite_url: str) -> None:
    processes, threads, per_thread = 2, 4, 25
    setup = make_engine(sqlite_url)
    try:
        upgrade(setup)
    finally:
        setup.dispose()

    reports = run_in_processes(
        append_worker,
        lambda p, barrier, queue: (sqlite_url, RUN, f"p{p}", threads, per_thread, barrier, queue),
        processes,
        threads,
    )

    errors = [e for _, _, errs in reports for e in errs]
    assert errors == []
    assert not any("locked" in e for e in errors)
    total = processes * threads * per_thread
    results = [r for _, rs, _ in reports for r in rs]
    assert sorted(seq for _, _, seq in results) == list(range(total))

    engine = make_engine(sqlite_url)
    try:
        expected = {
            (f"p{p}", t, i) for p in range(processes) for t in range(threads) for i in range(per_thread)
        }
        assert_complete_log(engine, RUN, total, expected)
    finally:
        engine.dispose()


def test_payloads_and_times_read_back_as_the_column_types_write_them(engine: Engine) -> None:
    """The append writes SQLite's payload and timestamp text itself (the payload's canonical
    text, which the chain digest has just written): they read back as a row inserted through
    SQLAlchemy's own JSON and DateTime types does."""
    payloads: list[Any] = [
        {"b": 1, "a": [1.5, 0.1, 2**62, 10**25, None, True], "é": "ü\u2028\x01😀", "\ue000": {}},
        {"plain": "text", "n": 12},
        {},
    ]
    moments = [NOW, NOW.replace(microsecond=0), NOW.astimezone(timezone(timedelta(hours=2)))]
    with engine.begin() as conn:
        for offset, (payload, moment) in enumerate(zip(payloads, moments, strict=True)):
            append(conn, RUN, [NewEvent("log.appended", payload)], now=moment)
            conn.execute(
                events_table.insert().values(
                    run_id="acme/reference",
                    sequence=offset,
                    event_id=f"ref-{offset}",
                    type="log.appended",
                    payload=payload,
                    timestamp=moment,
                    schema_version=1,
                )
            )
    with engine.connect() as conn:
        read = read_events(conn, RUN)
        reference = read_events(conn, "acme/reference")
    assert [e.payload for e in read] == [e.payload for e in reference] == payloads
    assert [e.timestamp for e in read] == [e.timestamp for e in reference]


def test_timestamps_are_the_injected_clock(engine: Engine) -> None:
    later = NOW + timedelta(hours=1)
    append_to(engine, RUN, [log(0)])
    with engine.begin() as conn:
        append(conn, RUN, [log(1)], now=later)
    with engine.connect() as conn:
        assert [as_utc(e.timestamp) for e in read_events(conn, RUN)] == [NOW, later]


# -- a leading write ------------------------------------------------------------------------


@functools.cache
def _leading_insert() -> Any:
    """A run row's insert, as a leading write (parameters ``lead_<column>``)."""
    columns = ("run_id", "workflow_id", "tenant", "owner", "status", "created_at", "updated_at")
    return runs_table.insert().values(
        {c: bindparam(f"lead_{c}", type_=runs_table.c[c].type) for c in columns}
    )


def _leading(run_id: str) -> Write:
    row = {"run_id": run_id, "workflow_id": "wf", "tenant": "acme", "owner": {"subject": "alice"}}
    params = row | {"status": "pending", "created_at": NOW, "updated_at": NOW}
    return _leading_insert(), {f"lead_{name}": value for name, value in params.items()}


def _run_rows(engine: Engine, run_id: str) -> int:
    with engine.connect() as conn:
        return len(conn.execute(select(runs_table.c.run_id).where(runs_table.c.run_id == run_id)).all())


@contextlib.contextmanager
def _statements(engine: Engine) -> Iterator[list[str]]:
    """The statements sent to the database meanwhile (SQLite: traced; PostgreSQL: what psycopg
    sends, its transaction commands too)."""
    sent: list[str] = []
    if engine.dialect.name == "sqlite":
        with engine.connect() as probe:
            raw = probe.connection.driver_connection
        assert raw is not None
        raw.set_trace_callback(sent.append)
        try:
            yield sent
        finally:
            raw.set_trace_callback(None)
        return
    with round_trips() as sent:
        yield sent


def test_a_leading_write_commits_with_the_append_and_in_its_statement_on_postgres(engine: Engine) -> None:
    engine = make_engine(str(engine.url.render_as_string(hide_password=False)), pool_size=1, max_overflow=0)
    with _statements(engine) as sent, engine.begin() as conn:
        stored = append(conn, RUN, [log(0), log(1)], now=NOW, leading=_leading(RUN)).events
    assert [e.sequence for e in stored] == [0, 1]
    assert _run_rows(engine, RUN) == 1
    assert sequences(engine, RUN) == [0, 1]
    writes = [s for s in sent if s.lstrip().upper().startswith(("INSERT", "WITH"))]
    # PostgreSQL: one statement (the run, the counter, the events); SQLite: the run, the
    # counter, the events (the trace shows each row of a batch).
    assert len(writes) == (1 if engine.dialect.name == "postgresql" else 4), writes
    engine.dispose()


def test_a_leading_write_rolls_back_with_its_append(engine: Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as conn:
        append(conn, RUN, [log(0)], now=NOW, leading=_leading(RUN))
        raise RuntimeError("the caller fails after the append")
    assert _run_rows(engine, RUN) == 0
    assert sequences(engine, RUN) == []
    with engine.begin() as conn:  # the sequences were given back
        assert [e.sequence for e in append(conn, RUN, [log(1)], now=NOW, leading=_leading(RUN)).events] == [0]


def test_a_leading_write_runs_once_before_staged_and_closed_logs(engine: Engine) -> None:
    """With held events staged first it runs once; on a closed log the append refuses and the
    caller's transaction takes the write back with it."""
    start = NewEvent("node.started", {"nodeId": "a"}, node_id="a", event_id="start-a")
    with engine.begin() as conn, first(conn, RUN, [(start, NOW)]) as ahead:
        stored = append(conn, RUN, [log(0)], now=NOW, leading=_leading(RUN), ahead=ahead).events
    assert [e.type for e in stored] == ["log.appended"]
    assert _run_rows(engine, RUN) == 1
    assert sequences(engine, RUN) == [0, 1]
    with engine.begin() as conn:
        append(conn, OTHER_RUN, [NewEvent("run.completed", {"outputs": {}})], now=NOW, close=True)
    with pytest.raises(RunLogClosed), engine.begin() as conn:
        append(conn, OTHER_RUN, [log(1)], now=NOW, leading=_leading(OTHER_RUN))
    assert _run_rows(engine, OTHER_RUN) == 0
    assert sequences(engine, OTHER_RUN) == [0]


# -- a riding write (PostgreSQL) --------------------------------------------------------------


def _gated_run_insert(gate: Any, _arg: Any) -> Any:
    """A run row's insert (parameters ``lead_<column>``), one row per row of ``gate``."""
    columns = ("run_id", "workflow_id", "tenant", "owner", "status", "created_at", "updated_at")
    source = select(*(bindparam(f"lead_{c}", type_=runs_table.c[c].type) for c in columns)).select_from(gate)
    return runs_table.insert().from_select(list(columns), source)


def _ride(run_id: str) -> RidingWrite:
    return _gated_run_insert, None, _leading(run_id)[1]


def _postgres_only(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("a riding write joins an append's statement on PostgreSQL only")


def test_a_riding_write_goes_in_the_appends_statement_in_autocommit(engine: Engine) -> None:
    _postgres_only(engine)
    ahead = NextAppend(RUN, ride=_ride(RUN))
    with _statements(engine) as sent, one_statement(engine) as conn, conn.begin():
        assert not ahead.rode
        stored = append(conn, RUN, [log(0), log(1)], now=NOW, ahead=ahead).events
        assert ahead.rode
    assert [e.sequence for e in stored] == [0, 1]
    assert _run_rows(engine, RUN) == 1
    assert sequences(engine, RUN) == [0, 1]
    writes = [s for s in sent if s.lstrip().upper().startswith(("INSERT", "WITH"))]
    assert len(writes) == 1, writes  # the run, the counter and the events


def test_a_riding_write_runs_only_if_the_append_logs(engine: Engine) -> None:
    """A closed log, or a once-only event logged already: the append raises and the write did
    not run either (in autocommit, so nothing rolled it back: it never ran)."""
    _postgres_only(engine)
    with engine.begin() as conn:
        append(conn, OTHER_RUN, [NewEvent("run.completed", {"outputs": {}})], now=NOW, close=True)
    with pytest.raises(RideNotTaken), one_statement(engine) as conn, conn.begin():
        append(conn, OTHER_RUN, [log(1)], now=NOW, ahead=NextAppend(OTHER_RUN, ride=_ride(OTHER_RUN)))
    assert _run_rows(engine, OTHER_RUN) == 0
    assert sequences(engine, OTHER_RUN) == [0]

    done = NewEvent("node.completed", {"nodeId": "a"}, node_id="a", event_id="end-a")
    with engine.begin() as conn:
        append(conn, RUN, [done], now=NOW, once=True)
    with pytest.raises(RideNotTaken), one_statement(engine) as conn, conn.begin():
        append(conn, RUN, [done], now=NOW, once=True, ahead=NextAppend(RUN, ride=_ride(RUN)))
    assert _run_rows(engine, RUN) == 0
    assert sequences(engine, RUN) == [0]


def test_a_riding_write_no_append_took_is_left_to_the_caller(engine: Engine) -> None:
    _postgres_only(engine)
    ahead = NextAppend(RUN, ride=_ride(RUN))
    with one_statement(engine) as conn, conn.begin():
        append(conn, OTHER_RUN, [log(0)], now=NOW, ahead=ahead)  # another run's log
        assert not ahead.rode
        append(conn, RUN, [log(1)], now=NOW)  # not given: nothing rides
    assert _run_rows(engine, RUN) == 0
    assert sequences(engine, RUN) == [0]


def test_a_gated_append_that_logs_nothing_leaves_what_was_staged_to_the_next_append(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("staged events go in the gated statement on PostgreSQL only")
    gate = select(literal_column("1").label("ok")).where(bindparam("open_gate", type_=Boolean))
    replayed = log(1)
    append_to(engine, RUN, [log(0), log(1)])
    append_to(engine, OTHER_RUN, [log(0), replayed])
    # The gate finds nothing: nothing is logged, and the staged go with the next append.
    with engine.begin() as conn, first(conn, RUN, [(log(2), NOW)]) as ahead:
        shut = (gate, {"open_gate": False})
        assert append(conn, RUN, [log(9)], now=NOW, gate=shut, ahead=ahead) == Appended([], None)
        append(conn, RUN, [log(3)], now=NOW, ahead=ahead)
    # A staged event was logged already (a replay): nothing is logged, RunLogClosed says so,
    # and the usual append logs the rest.
    with engine.begin() as conn, first(conn, OTHER_RUN, [(replayed, NOW), (log(2), NOW)]) as ahead:
        opened = (gate, {"open_gate": True})
        with pytest.raises(RunLogClosed):
            append(conn, OTHER_RUN, [log(3)], now=NOW, gate=opened, ahead=ahead)
        append(conn, OTHER_RUN, [log(3)], now=NOW, ahead=ahead)
    for run_id in (RUN, OTHER_RUN):
        assert [message for _, message, _ in logged(engine, run_id)] == ["m0", "m1", "m2", "m3"]


def test_every_append_returns_its_events_sequences_chain_values_and_digests(engine: Engine) -> None:
    """What a caller signing in the append's transaction needs (a receipt over the decision's
    event): each event as logged, with its chain value and digest, plain, once-only or gated."""
    gate = select(literal_column("7").label("ok")).where(bindparam("open_gate", type_=Boolean))
    with engine.begin() as conn:
        plain = append(conn, RUN, [log(0), log(1)], now=NOW)
        once = append(conn, RUN, [log(2)], now=NOW, once=True)
        with first(conn, RUN, [(log(3), NOW)]) as ahead:
            gated = append(conn, RUN, [log(4)], now=NOW, gate=(gate, {"open_gate": True}), ahead=ahead)
        shut = append(conn, RUN, [log(5)], now=NOW, gate=(gate, {"open_gate": False}))
    assert gated.row is not None and gated.row.ok == 7 and shut == Appended([], None) and not shut
    returned = [*plain.events, *once.events, *gated.events]
    assert [e.sequence for e in returned] == [0, 1, 2, 4]  # (3 went first, in the gated statement)
    with engine.connect() as conn:
        stored = {e.sequence: e for e in read_events(conn, RUN)}
    previous: str | None = None
    for sequence in range(5):
        digest = event_digest(
            run_id=RUN,
            event_id=stored[sequence].event_id,
            type="log.appended",
            payload=stored[sequence].payload,
            timestamp=stored[sequence].timestamp,
            node_id=None,
            causation_id=None,
            schema_version=1,
        )
        previous = chain_next(previous, digest)
        assert stored[sequence].chain_hash == previous
        for logged_event in returned:
            if logged_event.sequence == sequence:
                assert (logged_event.chain_hash, logged_event.digest) == (previous, digest)
