"""``HeldWrites``: what a drive holds is stored in order by the next transaction that takes it,
held again when that transaction rolls back, and refused once the drive is over."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, text

from wop_langgraph.host import held_writes
from wop_langgraph.host.held_writes import HeldWrites
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.held import HeldWrite


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'held.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE marks (n INTEGER)"))
    return engine


def _mark(n: int) -> HeldWrite:
    def write(conn: Connection) -> None:
        conn.execute(text("INSERT INTO marks (n) VALUES (:n)"), {"n": n})

    return write


def _marks(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [int(n) for (n,) in conn.execute(text("SELECT n FROM marks ORDER BY rowid"))]


def test_held_writes_are_stored_in_order_by_the_next_transaction(engine: Engine) -> None:
    held = HeldWrites(engine, "run-1")
    for n in (1, 2, 3):
        assert held.hold_write(_mark(n))
    assert held.holding() and _marks(engine) == []
    with held.logging() as (conn, _):
        conn.execute(text("INSERT INTO marks (n) VALUES (4)"))  # what the transaction records
    assert _marks(engine) == [1, 2, 3, 4]
    assert not held.holding()


def test_what_a_transaction_that_rolled_back_took_is_held_again(engine: Engine) -> None:
    held = HeldWrites(engine, "run-1")
    held.hold_write(_mark(1))
    with pytest.raises(RuntimeError), held.logging():
        raise RuntimeError("the transaction's own write failed")
    assert _marks(engine) == [] and held.holding()
    tries: list[int] = []

    def flaky(conn: Connection) -> None:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("the held write failed")
        conn.execute(text("INSERT INTO marks (n) VALUES (2)"))

    held.hold_write(flaky)
    with pytest.raises(RuntimeError, match="the held write failed"), held.logging():
        pass
    assert _marks(engine) == [] and held.holding()  # nothing of it stored, all of it held
    held.flush()
    assert _marks(engine) == [1, 2] and not held.holding()


def test_nothing_is_held_once_the_drive_is_over(engine: Engine) -> None:
    held = HeldWrites(engine, "run-1")
    held.hold_write(_mark(1))
    held.close()  # the run was stopped: what was held is dropped
    assert not held.holding()
    assert not held.hold_write(_mark(2))  # the saver stores it itself
    held.flush()
    assert _marks(engine) == []


def test_what_is_held_briefly_is_stored_on_time_behind_a_longer_wait(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One timer thread serves every drive: a wait due sooner than those it already has must wake it.
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 30.0)
    later = HeldWrites(engine, "run-1")
    later.hold_write(_mark(1))
    time.sleep(0.2)  # the timer now sleeps until that wait is due
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 0.05)
    sooner = HeldWrites(engine, "run-2")
    sooner.hold_write(_mark(2))
    deadline = time.monotonic() + 5
    while _marks(engine) != [2]:
        assert time.monotonic() < deadline, "the brief wait was kept behind the longer one"
        time.sleep(0.01)
    later.close()
