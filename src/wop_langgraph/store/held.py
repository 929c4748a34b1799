"""Writes kept for later: stored first by the next transaction that logs something of their run.

A saver that is told to hold a save (a checkpoint, a task's writes) hands over a
:data:`HeldWrite`: the save's statements, ready to run on whichever connection's transaction
takes it. :func:`storing` runs several of them in one go: on PostgreSQL in one pipeline (one
round trip for all of them, however many), elsewhere one after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Connection

__all__ = ["HeldWrite", "storing"]

#: A save's statements, run inside the transaction of the connection given. It reads no result
#: back: on PostgreSQL its statements go out in a pipeline, whose results arrive at its end.
HeldWrite = Callable[[Connection], None]


def storing(conn: Connection, writes: Sequence[HeldWrite]) -> None:
    """Run ``writes`` in order in ``conn``'s (open) transaction; on PostgreSQL pipelined."""
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
