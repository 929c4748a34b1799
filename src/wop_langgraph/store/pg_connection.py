"""PostgreSQL connections whose transactions begin without a round trip of their own.

psycopg opens a transaction implicitly: the first statement on an idle connection (outside
autocommit) sends ``BEGIN`` first and waits for its answer, in a pipeline too, where it follows
the ``BEGIN`` with a sync (psycopg PR #401: a pipeline that reads a result before its sync
would otherwise see the connection idle again and send a second ``BEGIN``). So every
transaction pays a round trip before its first statement leaves, and it is the round trip that
finds the server process idle after the caller's own work (a graph step, a request): three of
the full path's four transactions (the fourth is one statement, in autocommit).

:func:`connection_class` sends that ``BEGIN`` in the pipeline of the statement that needs it,
with no sync between them: both go out together, and the pipeline's end brings both answers.
The store opens such a pipeline for a transaction's first statement
(``statements.Compiled.execute``, see :func:`begins_with_statement`), and its other pipelines
(held saves, statements sent together) begin the same way. What PR #401 guards against, a read
inside the pipeline before its sync, is then at worst a second ``BEGIN`` inside the
transaction, which PostgreSQL answers with a warning and ignores. Outside a pipeline, and in
autocommit, nothing changes.
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import Any

__all__ = ["begins_with_statement", "connection_class"]

#: The psycopg internals the class relies on; without one of them psycopg's own class serves.
_PSYCOPG_INTERNALS = ("_start_query", "_exec_command", "_get_tx_start_command")


@functools.cache
def connection_class() -> type[Any] | None:
    """psycopg's ``Connection`` whose implicit ``BEGIN`` in a pipeline goes with the statement
    that needs it; ``None`` without psycopg, or when psycopg no longer has the internals it
    relies on (then psycopg's own class serves, one round trip more a transaction)."""
    try:
        import psycopg
        from psycopg import pq
    except ImportError:
        return None
    if not all(callable(getattr(psycopg.Connection, name, None)) for name in _PSYCOPG_INTERNALS):
        return None
    idle, piped_off = pq.TransactionStatus.IDLE, pq.PipelineStatus.OFF

    class BeginningWithStatement(psycopg.Connection[Any]):
        """A psycopg connection whose transactions begin in the pipeline of their first statement."""

        #: Read by :func:`begins_with_statement`.
        wop_begins_with_statement = True

        def _start_query(self) -> Generator[Any, Any, None]:
            pgconn = self.pgconn
            if pgconn.pipeline_status == piped_off or self.autocommit or pgconn.transaction_status != idle:
                yield from super()._start_query()
                return
            # Queued, not synced: it goes out with the statement that follows.
            yield from self._exec_command(self._get_tx_start_command())

    return BeginningWithStatement


def begins_with_statement(driver: Any) -> bool:
    """Whether a statement run now on ``driver`` (a DBAPI connection) would begin a transaction
    that a pipeline sends with it: one of :func:`connection_class`'s, idle, outside autocommit
    and outside a pipeline."""
    if not getattr(driver, "wop_begins_with_statement", False) or driver.autocommit:
        return False
    pgconn = driver.pgconn
    # (0: libpq's PQ_PIPELINE_OFF and PQTRANS_IDLE)
    return bool(pgconn.pipeline_status == 0 and pgconn.transaction_status == 0)
