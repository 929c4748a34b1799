"""PostgreSQL: the hot path's lookups by id are planned as index scans where the planner knows
nothing of a table yet (a new database, never analysed) and keeps one plan for a prepared
statement, its generic plan, however large the table grows.

Measured before: a resolve's check that its events were not logged yet (``event_id IN
(...)``) was planned as a scan of every event, and an interrupt's move of its run to waiting
(a join on the new interrupt's run id) as a scan of every run; prepared by psycopg and kept,
those plans cost a resolve 1.2-3 ms at 3,600 events (``auto_explain``), growing with the log
until the table was first analysed.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine

from wop_langgraph.store._event_sql import reserve_statement
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.interrupts import InterruptRecord, inserting_gate, waiting_params
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.statements import driver_statement

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's planner: SQLite looks a unique column's values up by its index")
    made = make_engine(db_url)
    upgrade(made)
    yield made
    made.dispose()


def generic_plan(engine: Engine, statement: Any, params: dict[str, Any]) -> str:
    """``EXPLAIN`` of the generic plan PostgreSQL keeps for ``statement`` once prepared."""
    with engine.connect() as conn:
        compiled = driver_statement(statement).compiled(conn.dialect)
        values = compiled.bound(params, conn)
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        driver.execute(f"PREPARE probe AS {compiled.text}")
        cursor = psycopg.ClientCursor(driver)
        cursor.execute("EXPLAIN EXECUTE probe(" + ", ".join(["%s"] * len(values)) + ")", values)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        conn.rollback()
    return plan


def test_a_once_only_append_looks_its_events_up_by_id(engine: Engine) -> None:
    ids = {f"once_id_{offset}": f"event-{offset}" for offset in range(3)}
    params = {"run_id": "acme/run", "count": 1, "digest_0": "0" * 64, **ids}
    plan = generic_plan(engine, reserve_statement("postgresql", False, False, 3, 1), params)
    assert "wop_events" in plan and "Seq Scan on wop_events" not in plan, plan


def test_a_new_interrupt_moves_its_run_by_its_key(engine: Engine) -> None:
    record = InterruptRecord(
        interrupt_id="acme/i",
        run_id="acme/run",
        node_id="review",
        key="k",
        lg_interrupt_id="lg",
        task_id="task",
        kind="approval",
        payload={},
        created_at=NOW,
    )
    statement, params = inserting_gate(record, waiting_params("acme/run", "waiting-approval", "review", NOW))
    plan = generic_plan(engine, statement, params)
    assert "wop_runs" in plan and "Seq Scan on wop_runs" not in plan, plan
