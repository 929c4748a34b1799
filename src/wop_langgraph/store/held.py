"""Writes kept for later: stored first by the next transaction that logs something of their run.

A saver that is told to hold a save (a checkpoint, a task's writes) hands over a
:data:`HeldWrite`: the save's statements, ready to run on whichever connection's transaction
takes it. :func:`storing` runs several of them in one go: on PostgreSQL in one pipeline (one
round trip for all of them, however many), elsewhere one after the other. A save made in that
transaction itself can go with them (:func:`stored_with_held`). :func:`stored_ahead` goes
further on PostgreSQL: the saves wait for the next statement run on the driver in that
transaction (a :class:`~wop_langgraph.store.statements.DriverStatement`) and go in its
pipeline, so the saves cost no round trip of their own. Wherever they run, the saves of rows
into one table held next to each other (:class:`HeldRows`: the saver's checkpoints, its task
writes) go in one statement a table (:func:`run_held`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

from sqlalchemy import Connection

__all__ = [
    "HeldRows",
    "HeldWrite",
    "RowsInto",
    "run_held",
    "store_ahead",
    "stored_ahead",
    "stored_with_held",
    "storing",
]

#: ``conn.info`` key: a save of the transaction waiting to go with what :func:`storing` stores.
_JOINING_KEY = "wop_held_joining"
#: ``conn.info`` key: saves waiting to go out with the transaction's next driver statement.
_AHEAD_KEY = "wop_held_ahead"

#: A save's statements, run inside the transaction of the connection given. It reads no result
#: back: on PostgreSQL its statements go out in a pipeline, whose results arrive at its end.
HeldWrite = Callable[[Connection], None]


class RowsInto(Hashable, Protocol):
    """Where :class:`HeldRows` go: one table, and how rows are stored in it."""

    def store(self, conn: Connection, rows: Sequence[Any]) -> None:
        """Store ``rows`` (those of one save, or of several in the order they were made) in
        ``conn``'s transaction, as storing each save's rows in turn would leave the table."""


@dataclass(frozen=True, slots=True)
class HeldRows:
    """A save of rows into one table: a :data:`HeldWrite` that :func:`run_held` stores in one
    statement with the saves into the same table held next to it."""

    into: RowsInto
    rows: Sequence[Any]

    def __call__(self, conn: Connection) -> None:
        self.into.store(conn, self.rows)


def run_held(conn: Connection, writes: Sequence[HeldWrite]) -> None:
    """Run ``writes`` in ``conn``'s transaction, as running each in turn would: the rows of
    :class:`HeldRows` held next to each other go to their tables together, a statement a table
    (each table's rows stored as its ``into`` merges them; tables apart, their order is moot)."""
    merged: dict[RowsInto, list[Any]] = {}
    for write in writes:
        if isinstance(write, HeldRows):
            merged.setdefault(write.into, []).extend(write.rows)
            continue
        _store_merged(conn, merged)
        write(conn)
    _store_merged(conn, merged)


def _store_merged(conn: Connection, merged: dict[RowsInto, list[Any]]) -> None:
    for into, rows in merged.items():
        into.store(conn, rows)
    merged.clear()


def storing(conn: Connection, writes: Sequence[HeldWrite]) -> None:
    """Run ``writes`` in order in ``conn``'s (open) transaction; on PostgreSQL pipelined. A save
    waiting to go with them (:func:`stored_with_held`) goes last."""
    joining = conn.info.pop(_JOINING_KEY, None)
    if joining is not None:
        writes = [*writes, joining]
    if not writes:
        return
    if conn.dialect.name != "postgresql" or len(writes) == 1:
        run_held(conn, writes)
        return
    driver = conn.connection.driver_connection
    assert driver is not None  # an open connection's
    with driver.pipeline():
        run_held(conn, writes)


@contextmanager
def stored_with_held(conn: Connection, write: HeldWrite) -> Iterator[None]:
    """Within the block, ``write`` (a save of ``conn``'s transaction) goes with the next
    :func:`storing` in it, after what that stores (on PostgreSQL in its pipeline: the save's
    own round trip is saved; a transaction's ``BEGIN`` keeps its own, see :func:`stored_ahead`);
    if none comes, it runs as the block ends. If the block raises, it does not run (the caller
    rolls the transaction back)."""
    conn.info[_JOINING_KEY] = write
    try:
        yield
    finally:
        left = conn.info.pop(_JOINING_KEY, None)
    if left is not None:
        left(conn)


@contextmanager
def stored_ahead(conn: Connection, writes: Sequence[HeldWrite]) -> Iterator[None]:
    """:func:`storing` of ``writes``, on PostgreSQL sent with the block's next statement.

    Within the block, the first statement run on the driver in ``conn``'s transaction sends
    ``writes`` (and a save waiting to go with them, :func:`stored_with_held`) ahead of itself
    in one pipeline: one round trip for them all (after the transaction's ``BEGIN``, which
    psycopg sends and waits for first, in a pipeline too). Whatever is left is stored
    as the block ends. If the block raises, nothing left runs (the caller rolls back).
    Elsewhere (SQLite) they are stored at once, as :func:`storing` does.
    """
    joining = conn.info.pop(_JOINING_KEY, None)
    if joining is not None:
        writes = [*writes, joining]
    if conn.dialect.name != "postgresql" or not writes:
        storing(conn, writes)
        yield
        return
    # (``conn.info`` outlives the checkout: whatever happens, nothing is left in it.)
    conn.info[_AHEAD_KEY] = list(writes)
    try:
        yield
    finally:
        left = conn.info.pop(_AHEAD_KEY, None)
    if left:
        storing(conn, left)


def store_ahead(conn: Connection) -> list[HeldWrite]:
    """What waits to go ahead of ``conn``'s next statement (:func:`stored_ahead`), taken: the
    caller runs it, in its own pipeline before its statement. Empty when nothing waits, and
    inside a savepoint (whose rollback would undo the saves: they wait for the block's end)."""
    info = conn.info
    if _AHEAD_KEY not in info or conn.in_nested_transaction():
        return []
    return cast(list[HeldWrite], info.pop(_AHEAD_KEY))
