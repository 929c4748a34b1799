"""``start_thread_run``: the compare-and-set that makes a run a thread's current one, and the
run's listing with it (one round trip on PostgreSQL); a lost move, rolled back, leaves nothing.
``ThreadRunStart`` does the same sent ahead of the transaction's next statement (in its round
trip on PostgreSQL), its answer read after it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, select
from tests.round_trips import traffic

from wop_langgraph.store.held import stored_ahead
from wop_langgraph.store.lg_threads import (
    ThreadRunStart,
    get_thread,
    insert_thread,
    start_thread_run,
    thread_runs_table,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LISTED = datetime(2026, 1, 1, tzinfo=UTC)


class Lost(Exception):
    pass


def _arguments(run_id: str, expected: str | None) -> dict[str, Any]:
    return {
        "expected_run_id": expected,
        "run_id": run_id,
        "metadata": {"graph_id": "g"},
        "assistant_id": "a-1",
        "run_metadata": {"turn": run_id},
        "multitask_strategy": "reject",
        "now": NOW,
        "listed_at": LISTED if run_id == "r-2" else None,
    }


def _start_now(conn: Connection, run_id: str, expected: str | None) -> bool:
    return start_thread_run(conn, "t-1", **_arguments(run_id, expected))


def _start_ahead(conn: Connection, run_id: str, expected: str | None) -> bool:
    start = ThreadRunStart("t-1", **_arguments(run_id, expected))
    with stored_ahead(conn, [start]):
        get_thread(conn, "t-1")  # the statement it goes ahead of
    return start.won()


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # (SQLite stores it naive, in UTC)


def _listed(engine: Engine) -> list[tuple[str, str, dict[str, str], str]]:
    c = thread_runs_table.c
    with engine.connect() as conn:
        rows = conn.execute(select(c.run_id, c.thread_id, c.metadata, c.created_at).order_by(c.run_id))
        return [(r.run_id, r.thread_id, r.metadata, _aware(r.created_at)) for r in rows]


@pytest.mark.parametrize("_start", [_start_now, _start_ahead])
def test_a_won_move_lists_the_run_and_a_lost_one_rolled_back_leaves_nothing(
    engine: Engine, _start: Callable[[Connection, str, str | None], bool]
) -> None:
    with engine.begin() as conn:
        insert_thread(conn, "t-1", "acme", {}, now=NOW)
    with engine.begin() as conn:
        assert _start(conn, "r-1", None) is True
    with engine.begin() as conn:
        assert _start(conn, "r-2", "r-1") is True  # the next run, after r-1
    for stale in (None, "r-1"):  # a second input that read the thread before r-2 started
        with pytest.raises(Lost), engine.begin() as conn:
            if not _start(conn, f"r-3-{stale}", stale):
                raise Lost
    with engine.connect() as conn:
        row = get_thread(conn, "t-1")
    assert row is not None and (row.run_id, row.metadata) == ("r-2", {"graph_id": "g"})
    assert _listed(engine) == [
        ("r-1", "t-1", {"turn": "r-1"}, NOW),
        ("r-2", "t-1", {"turn": "r-2"}, LISTED),
    ]


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_start_sent_ahead_goes_in_the_round_trip_of_the_next_statement(engine: Engine) -> None:
    with engine.begin() as conn:
        insert_thread(conn, "t-1", "acme", {}, now=NOW)
    with engine.begin() as conn, traffic() as counts:
        assert _start_ahead(conn, "r-1", None) is True
    # The move, the listing and the read in one pipeline, with the transaction's BEGIN.
    assert (counts["statements"], counts["round_trips"]) == (3, 1), counts
