"""The statements and round trips of the full path (a run created, suspended at an approval,
resolved, completed): fixed numbers on each database, so that a change to how events are
appended (one statement per append on PostgreSQL, riding and held writes in its pipeline)
shows here if it costs a statement or a round trip more."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from tests.host._graphs import ALICE, WORKFLOW, approval_graph
from tests.host._support import HostFactory
from tests.round_trips import traffic
from wop_langgraph.host import WopHost, held_writes

ACCEPT = {"action": "accept", "feedback": "ship it"}

#: (statements, round trips) of a run's creation (to its approval's wait) and of its resolution
#: (to its completion), as measured before the event log's one append API (issue 37), less the
#: read of a new run's interrupts its first interrupt no longer makes (a run created in the drive
#: holds none): one statement and, on PostgreSQL, one round trip of the creation; and less a
#: round trip for each transaction on PostgreSQL, whose BEGIN goes with its first statement
#: (``store/pg_connection.py``; with psycopg's own connections (11, 5) and (14, 7)); and less
#: the statements merged when the saves a drive held are stored, a statement a table with the
#: interrupt's own writes (``store/held.py::run_held``): four of the creation's, two of the
#: resolution's; and less the creation's round trip of the run's rest, which goes in the
#: round trip of the interrupt's statement on PostgreSQL (``TaskWritesListener.resting``); and
#: less the creation's transaction of its own (its run's row and ``run.started``, held by the
#: drive and stored with its first transaction, ``WopHost._create_held``): a round trip on
#: PostgreSQL, and on SQLite its ``BEGIN`` and ``COMMIT`` and the counter row's statement
#: (``run.started`` is appended with the interrupt's events).
EXPECTED = {
    "postgresql": {"create": (7, 2), "resolve": (12, 5)},
    # (SQLite: in process, each statement a call of its own.)
    "sqlite": {"create": (16, 16), "resolve": (24, 24)},
}


@contextmanager
def _sqlite_statements(host: WopHost) -> Iterator[list[str]]:
    """Every statement SQLite runs for the host's engine within the block (its trace
    callback: watching the cursor would take the statements off the driver path)."""
    seen: list[str] = []

    def trace(dbapi: Any, *_: Any) -> None:
        if isinstance(dbapi, sqlite3.Connection):
            dbapi.set_trace_callback(seen.append)

    host.engine.pool.dispose()  # new connections, each traced from its checkout
    event.listen(host.engine, "checkout", trace)
    try:
        yield seen
    finally:
        event.remove(host.engine, "checkout", trace)
        host.engine.pool.dispose()


def _cycle(host: WopHost, db_url: str) -> dict[str, tuple[int, int]]:
    """(statements, round trips) of each half of one full-path cycle."""
    measured: dict[str, tuple[int, int]] = {}
    snap: dict[str, Any] = {}
    for half in ("create", "resolve"):

        def act(half: str = half) -> None:
            if half == "create":
                snap.update(host.create_run(WORKFLOW, {"log": []}, owner=ALICE))
                assert snap["status"] == "waiting-approval"
            else:
                assert host.resolve(snap["runId"], "review", ACCEPT, ALICE)["status"] == "completed"

        if db_url.startswith("sqlite"):
            with _sqlite_statements(host) as seen:
                act()
            # One writer, in process: every statement is a call, none is a network round trip.
            done = [s for s in seen if s.strip()]
            measured[half] = (len(done), len(done))
        else:
            with traffic() as counts:
                act()
            measured[half] = (counts["statements"] + counts["commands"], counts["round_trips"])
    return measured


def test_the_full_path_runs_its_known_statements_and_round_trips(
    make_host: HostFactory, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)  # nothing stored on its own meanwhile
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    _cycle(host, db_url)  # warm the pool and the statement caches
    measured = _cycle(host, db_url)
    dialect = "sqlite" if db_url.startswith("sqlite") else "postgresql"
    assert measured == EXPECTED[dialect]
