"""Writes kept for later: stored first by the next transaction that logs something of their run.

A saver that is told to hold a save (a checkpoint, a task's writes) hands over a
:data:`HeldWrite`: the save's statements, ready to run on whichever connection's transaction
takes it. :func:`storing` runs several of them in one go: on PostgreSQL in one pipeline (one
round trip for all of them, however many), elsewhere one after the other. A save made in that
transaction itself can go with them (:func:`stored_with_held`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection

__all__ = ["HeldWrite", "stored_with_held", "storing"]

#: ``conn.info`` key: a save of the transaction waiting to go with what :func:`storing` stores.
_JOINING_KEY = "wop_held_joining"

#: A save's statements, run inside the transaction of the connection given. It reads no result
#: back: on PostgreSQL its statements go out in a pipeline, whose results arrive at its end.
HeldWrite = Callable[[Connection], None]


def storing(conn: Connection, writes: Sequence[HeldWrite]) -> None:
    """Run ``writes`` in order in ``conn``'s (open) transaction; on PostgreSQL pipelined. A save
    waiting to go with them (:func:`stored_with_held`) goes last."""
    joining = conn.info.pop(_JOINING_KEY, None)
    if joining is not None:
        writes = [*writes, joining]
    if not writes:
        return
    if conn.dialect.name != "postgresql" or len(writes) == 1:
        for write in writes:
            write(conn)
        return
    driver = conn.connection.driver_connection
    assert driver is not None  # an open connection's
    with driver.pipeline():
        for write in writes:
            write(conn)


@contextmanager
def stored_with_held(conn: Connection, write: HeldWrite) -> Iterator[None]:
    """Within the block, ``write`` (a save of ``conn``'s transaction) goes with the next
    :func:`storing` in it, after what that stores (on PostgreSQL in its pipeline: the save's
    own round trip, and the ``BEGIN``'s when it is the transaction's first, are saved); if none
    comes, it runs as the block ends. If the block raises, it does not run (the caller rolls
    the transaction back)."""
    conn.info[_JOINING_KEY] = write
    try:
        yield
    finally:
        left = conn.info.pop(_JOINING_KEY, None)
    if left is not None:
        left(conn)
