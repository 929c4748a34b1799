"""What psycopg sends to PostgreSQL meanwhile: each statement and each transaction command.

Tests that promise a number of round trips (one statement in autocommit, no ``BEGIN``) count
them here. Each entry is the statement's text with its whitespace folded, or the command
(``BEGIN ...``, ``COMMIT``) psycopg sends on its own; :func:`heads` gives their first words.
:func:`statements` tells, for each statement, whether it ran in a transaction or in autocommit
and whether it went out in a pipeline (many statements, one round trip).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import Engine


@contextmanager
def round_trips() -> Iterator[list[str]]:
    """The statements and commands psycopg sends within the block, in order."""
    sent: list[str] = []
    execute, command = psycopg.Cursor.execute, psycopg.Connection._exec_command

    def traced_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(" ".join(str(query).split()))
        return execute(self, query, *args, **kwargs)

    def traced_command(self: Any, cmd: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(bytes(cmd).decode() if isinstance(cmd, bytes | bytearray) else str(cmd))
        return command(self, cmd, *args, **kwargs)

    psycopg.Cursor.execute = traced_execute  # type: ignore[method-assign]
    psycopg.Connection._exec_command = traced_command  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.Connection._exec_command = command  # type: ignore[method-assign]


def heads(sent: list[str]) -> list[str]:
    """The first word of each, upper-cased (``SELECT``, ``WITH``, ``BEGIN`` ...)."""
    return [text.split(None, 1)[0].upper() for text in sent]


@contextmanager
def statements() -> Iterator[list[tuple[str, bool, bool]]]:
    """(statement, in a transaction, in a pipeline) for each statement psycopg runs meanwhile
    (not in a transaction: in autocommit, a transaction of its own)."""
    seen: list[tuple[str, bool, bool]] = []
    execute = psycopg.Cursor.execute

    def traced(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        piped = self.connection.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF
        seen.append((" ".join(str(query).split()), not self.connection.autocommit, piped))
        return execute(self, query, *args, **kwargs)

    psycopg.Cursor.execute = traced  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


@contextmanager
def traffic() -> Iterator[dict[str, int]]:
    """How much psycopg sends within the block: ``statements``, ``commands`` (``BEGIN``,
    ``COMMIT`` ... sent on their own), ``pipelines`` (outermost pipeline blocks, one round trip
    each) and ``round_trips`` (statements and commands outside a pipeline, plus the pipelines,
    plus one for each ``BEGIN`` a pipeline began with on psycopg's own connection class, which
    sends it with a sync and waits for its answer before the rest; the store's send it with the
    statement, see ``store/pg_connection.py``), filled in as the block ends."""
    counts = {"statements": 0, "commands": 0, "pipelines": 0, "round_trips": 0}
    piped_sent = [0]
    piped_begins = [0]
    execute, command, pipeline = (
        psycopg.Cursor.execute,
        psycopg.Connection._exec_command,
        psycopg.Connection.pipeline,
    )

    def piped(conn: Any) -> bool:
        return bool(conn.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF)

    def traced_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        counts["statements"] += 1
        piped_sent[0] += piped(self.connection)
        return execute(self, query, *args, **kwargs)

    def traced_command(self: Any, cmd: Any, *args: Any, **kwargs: Any) -> Any:
        counts["commands"] += 1
        in_pipeline = piped(self)
        piped_sent[0] += in_pipeline
        # (a savepoint's command is composed SQL, not bytes: never a BEGIN; on the store's
        # connections a BEGIN goes out with the statement after it: no round trip of its own)
        begin = isinstance(cmd, bytes | bytearray) and cmd.startswith(b"BEGIN")
        piped_begins[0] += in_pipeline and begin and not getattr(self, "wop_begins_with_statement", False)
        return command(self, cmd, *args, **kwargs)

    @contextmanager
    def traced_pipeline(self: Any) -> Iterator[Any]:
        outermost = not piped(self)
        with pipeline(self) as p:
            yield p
        counts["pipelines"] += outermost

    psycopg.Cursor.execute = traced_execute  # type: ignore[method-assign]
    psycopg.Connection._exec_command = traced_command  # type: ignore[method-assign]
    psycopg.Connection.pipeline = traced_pipeline  # type: ignore[method-assign,assignment]
    try:
        yield counts
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.Connection._exec_command = command  # type: ignore[method-assign]
        psycopg.Connection.pipeline = pipeline  # type: ignore[method-assign]
        sent = counts["statements"] + counts["commands"]
        counts["round_trips"] = sent - piped_sent[0] + counts["pipelines"] + piped_begins[0]


@contextmanager
def parsed_queries(engine: Engine) -> Iterator[list[bytes]]:
    """Each query psycopg converts from ``%(name)s`` placeholders meanwhile (it parses the SQL
    to do so; a raw cursor's ``$n`` SQL is sent as it is). Always empty off PostgreSQL."""
    parsed: list[bytes] = []
    if engine.dialect.name != "postgresql":
        yield parsed
        return
    from psycopg import _queries

    cached, uncached = _queries._query2pg, _queries._query2pg_nocache

    def counted(convert: Any) -> Any:
        def wrapper(query: bytes, encoding: str) -> Any:
            parsed.append(query)
            return convert(query, encoding)

        return wrapper

    _queries._query2pg, _queries._query2pg_nocache = counted(cached), counted(uncached)  # type: ignore[assignment]
    try:
        yield parsed
    finally:
        _queries._query2pg, _queries._query2pg_nocache = cached, uncached  # type: ignore[assignment]
