"""The saver runs its statements on the store's one statement engine (``store/statements.py``).

Its statements are compiled in the driver's form (its values are the codec's bytes and JSON
text already) but are the engine's own: bound and run the same way, failing the same way, sent
on psycopg as the rest of the store sends them (``$n`` SQL never parsed, ``BEGIN`` on its own
before a transaction's first statement).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from tests.round_trips import heads, parsed_queries, statements
from tests.store.conftest import config_of, make_checkpoint, new_thread, put_chain

from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store import SQLModelSaver
from wop_langgraph.store._saver_sql import Statements, statements_for
from wop_langgraph.store._saver_tx import Tx
from wop_langgraph.store.checkpoint_tables import checkpoints_table
from wop_langgraph.store.statements import Compiled, driver_statement


def _every_statement(sql: Statements) -> dict[str, Any]:
    """The saver's statements: its fixed ones, a writes upsert and a page of ``list``."""
    fixed = {name: value for name, value in vars(sql).items() if not name.startswith("_")}
    fixed.pop("dialect"), fixed.pop("postgres")
    page = sql.list_checkpoints(
        thread_id="t",
        checkpoint_ns="",
        checkpoint_id=None,
        metadata_filter={"source": "loop"},
        before_id=None,
        after_key=("c", "t", ""),
        limit=3,
    )
    writes = [
        sql.upsert_writes([[f"v{i}"] * 9 for i in range(n)], asynchronously=a)[0]
        for n in (1, 7)
        for a in (False, True)
    ]
    return fixed | {"list page": page} | {f"upsert writes {i}": w for i, w in enumerate(writes)}


def test_the_savers_statements_are_the_engines_compiled_in_the_driver_form(saver: SQLModelSaver) -> None:
    every = _every_statement(statements_for(saver.engine.dialect))
    assert len(every) > 20
    for name, statement in every.items():
        assert isinstance(statement, Compiled), name
        assert statement.driver_form, name  # no type processor between the codec and the driver
    # Everything else the store runs is compiled by the same engine, with its types' processors.
    insert_row = driver_statement(insert(checkpoints_table)).compiled(saver.engine.dialect)
    assert isinstance(insert_row, Compiled) and not insert_row.driver_form


def test_a_saver_cycle_on_postgresql_sends_sql_psycopg_never_parses(saver: SQLModelSaver) -> None:
    if saver.engine.dialect.name != "postgresql":
        pytest.skip("psycopg's placeholder parsing")
    thread = new_thread()
    # Ten writes are 90 parameters: psycopg would parse ``%(name)s`` SQL on every execution.
    writes = [(f"channel{i}", {"i": i, "text": "é" * i}) for i in range(10)]
    with parsed_queries(saver.engine) as parsed:
        (stored,) = put_chain(saver, thread, 1)
        saver.put_writes(stored, writes, "task-1")
        found = saver.get_tuple(config_of(thread))
        listed = list(saver.list(config_of(thread), filter={"source": "loop"}))
        saver.delete_thread(thread)
    assert parsed == []
    assert (
        found is not None
        and found.config["configurable"]["checkpoint_id"] == stored["configurable"]["checkpoint_id"]
    )
    assert sorted(found.pending_writes) == sorted(("task-1", c, v) for c, v in writes)
    assert [t.config for t in listed] == [found.config]
    assert saver.get_tuple(config_of(thread)) is None


def test_a_saver_transaction_begins_with_its_first_statement(
    saver: SQLModelSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    if saver.engine.dialect.name != "postgresql":
        pytest.skip("psycopg's BEGIN")
    import psycopg

    commands: list[tuple[str, bool]] = []  # (command, sent in a pipeline)
    command = psycopg.Connection._exec_command

    def traced(self: psycopg.Connection[Any], cmd: Any, *args: Any, **kwargs: Any) -> Any:
        commands.append((bytes(cmd).decode(), self.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF))
        return command(self, cmd, *args, **kwargs)

    thread = new_thread()
    put_chain(saver, thread, 2)
    monkeypatch.setattr(psycopg.Connection, "_exec_command", traced)
    with statements() as seen:
        saver.delete_thread(thread)  # two statements in BEGIN ... COMMIT
    # The BEGIN goes in the pipeline of the first statement (one round trip: see
    # ``store/pg_connection.py``), the second statement and the COMMIT on their own.
    assert [(heads([c])[0], piped) for c, piped in commands] == [("BEGIN", True), ("COMMIT", False)]
    assert [(in_transaction, piped) for _, in_transaction, piped in seen] == [(True, True), (True, False)]
    assert saver.get_tuple(config_of(thread)) is None


def _row(thread: str) -> dict[str, Any]:
    return {
        "thread_id": thread,
        "checkpoint_ns": "",
        "checkpoint_id": str(uuid.uuid4()),
        "parent_checkpoint_id": None,
        "run_id": None,
        "type": None,  # NOT NULL: the insert fails in the database
        "checkpoint": b"\x00",
        "metadata": "{}",
    }


def test_a_saver_statement_fails_as_the_rest_of_the_store_fails(saver: SQLModelSaver) -> None:
    sql = statements_for(saver.engine.dialect)
    row = _row(new_thread())
    # In a Connection's transaction: SQLAlchemy's error, as a statement of the run ledger gets.
    failures = []
    for statement in ("saver", "driver"):
        with pytest.raises(IntegrityError) as raised, saver.engine.begin() as conn:
            if statement == "saver":
                Tx.of(conn).execute(sql.upsert_checkpoint, row)
            else:
                driver_statement(insert(checkpoints_table)).rows(conn, row | {"metadata": {}})
        failures.append(type(raised.value.orig))
    assert failures[0] is failures[1], failures
    assert issubclass(failures[0], saver.engine.dialect.loaded_dbapi.Error)
    # Through the saver's own transactions (a bare DBAPI connection): a StoreError caused by
    # the driver's error, and the connection still works.
    with pytest.raises(StoreError) as stored, saver._db.transaction("put", write=True) as tx:
        tx.execute(sql.upsert_checkpoint, row)
    assert type(stored.value.__cause__) is failures[0]
    thread = new_thread()
    saver.put(config_of(thread), make_checkpoint(), {"source": "loop", "step": 0}, {})  # type: ignore[typeddict-item]
    assert saver.get_tuple(config_of(thread)) is not None
