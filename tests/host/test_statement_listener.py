"""A host whose engine has a statement listener (SQL logging, OpenTelemetry's SQLAlchemy
instrumentation) runs every operation, and the listener sees every statement, as the driver
path runs it.

Without a listener the store runs its compiled statements straight on the driver connection;
with one, SQLAlchemy runs them, so that the listener sees them (``store.statements``). The same
journey (create, resolve with and without waiting, a quorum, a cancel, a timeout, a fork) runs
both ways, and the statements each way ran are the same SQL, placeholders aside.

The checkpoint saver's statements (compiled in the driver's form) are left out: it runs them on
the driver connection whether a listener watches or not (``store._saver_tx``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import HostFactory, start
from wop_langgraph.host import Principal, WopHost, held_writes
from wop_langgraph.store.statements import Compiled

BOB = Principal("acme", "bob", frozenset({"approvals:respond"}))
CAROL = Principal("acme", "carol", frozenset({"approvals:respond"}))

_PLACEHOLDER = re.compile(r"\$\d+|%\(\w+\)s|\?|%s")


def _normalized(sql: str) -> str:
    """``sql`` with each placeholder as ``?`` (psycopg's ``$n`` on the driver path, ``%(name)s``
    through SQLAlchemy) and ``%`` unescaped."""
    return " ".join(_PLACEHOLDER.sub("?", sql).replace("%%", "%").split())


def journey(host: WopHost) -> None:
    """Every kind of write the resolver and the runtime make, each checked to have happened."""
    run_id, _ = start(host, approval_graph())
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE)["status"] == "completed"

    run_id, _ = start(host, approval_graph())
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE, wait=False)["status"] == "running"
    host.run_until_idle()
    assert host.snapshot(run_id)["status"] == "completed"
    forked = host.fork(run_id, mode="replay", principal=ALICE)
    host.run_until_idle()
    assert host.snapshot(forked["runId"])["status"] == "completed"

    run_id, _ = start(host, approval_graph(required_approvals=2))
    assert host.resolve(run_id, "review", {"action": "accept"}, BOB)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", {"action": "accept"}, CAROL)["status"] == "completed"

    run_id, _ = start(host, approval_graph())
    assert host.cancel(run_id, reason="user-cancelled", principal=ALICE)["status"] == "cancelled"

    run_id, _ = start(host, approval_graph(timeout=60))
    assert host.sweep(now=datetime.now(UTC) + timedelta(hours=1)) == 1
    host.run_until_idle()
    assert host.snapshot(run_id)["status"] == "failed"  # a timed-out approval is a rejection


@contextmanager
def on_the_driver(monkeypatch: pytest.MonkeyPatch, host: WopHost) -> Iterator[list[str]]:
    """Record the SQL of every statement run, without a listener: the compiled statements the
    store runs on the driver, and those SQLAlchemy runs (through its dialect, which no
    listener watches)."""
    ran: list[str] = []

    def recording(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def record(self: Compiled, *args: Any, **kwargs: Any) -> Any:
            if not self.driver_form:  # (the saver's: always on the driver, listener or not)
                ran.append(self.text)
            return method(self, *args, **kwargs)

        return record

    monkeypatch.setattr(Compiled, "execute", recording("execute", Compiled.execute))
    monkeypatch.setattr(Compiled, "execute_many", recording("execute_many", Compiled.execute_many))
    dialect = host.engine.dialect
    for name in ("do_execute", "do_executemany", "do_execute_no_params"):
        original = getattr(dialect, name)

        def through_sqlalchemy(cursor: Any, statement: str, *args: Any, _original: Any = original) -> Any:
            ran.append(statement)
            return _original(cursor, statement, *args)

        monkeypatch.setattr(dialect, name, through_sqlalchemy)
    yield ran
    monkeypatch.undo()


@contextmanager
def listened(host: WopHost) -> Iterator[list[str]]:
    """Record the SQL a ``before_cursor_execute`` listener on the host's engine sees."""
    seen: list[str] = []

    def listener(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(host.engine, "before_cursor_execute", listener)
    try:
        yield seen
    finally:
        event.remove(host.engine, "before_cursor_execute", listener)


def test_a_listened_host_runs_every_operation_and_sees_the_statements_of_the_driver_path(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing a drive holds is stored on its own (on a slow machine, a first node past
    # FLUSH_AFTER_S would store the run's row and run.started in statements of their own on
    # one side only). Set apart from ``monkeypatch``, which ``on_the_driver`` undoes.
    flush_after = held_writes.FLUSH_AFTER_S
    held_writes.FLUSH_AFTER_S = 60.0
    try:
        direct_host = make_host()
        with on_the_driver(monkeypatch, direct_host) as ran:
            journey(direct_host)
        watched_host = make_host()
        with listened(watched_host) as seen:
            journey(watched_host)
    finally:
        held_writes.FLUSH_AFTER_S = flush_after
    # A transaction's BEGIN is the driver's own on the driver path (SQLite's BEGIN IMMEDIATE),
    # shown to the listener when one watches.
    direct = {_normalized(sql) for sql in ran}
    shown = {_normalized(sql) for sql in seen if not sql.startswith("BEGIN")}
    assert len(direct) > 20  # (the journey's statements were all recorded)
    assert shown - direct == set(), "the listener saw statements the driver path does not run"
    assert direct - shown == set(), "the driver path ran statements the listener never saw"
