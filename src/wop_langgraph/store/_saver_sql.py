"""The saver's SQL: built with SQLAlchemy Core, compiled once per dialect, run on the driver.

Each statement is written once as a Core construct and compiled for the engine's dialect into
a :class:`~wop_langgraph.store.statements.Compiled` in the driver's form (its values are the
codec's bytes and JSON text: no type processor runs) the first time a saver meets that
dialect; the hot path then runs it on the DBAPI cursor, skipping SQLAlchemy's per-execution
work. Only ``list`` compiles per call, because its filters vary.

What differs by dialect is spelled here and nowhere else: the upsert (each dialect's
``insert(...).on_conflict_do_update``), lists of ids (``= ANY(array)`` on PostgreSQL,
``IN (SELECT value FROM json_each(?))`` on SQLite), JSON parameters (``CAST(... AS JSONB)``)
and the metadata filter (JSONB containment / ``json_extract``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Text,
    and_,
    any_,
    bindparam,
    cast,
    delete,
    exists,
    false,
    func,
    literal,
    literal_column,
    null,
    select,
    true,
    type_coerce,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import CTE, Select

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table as W
from wop_langgraph.store.checkpoint_tables import checkpoints_table as C
from wop_langgraph.store.statements import Compiled, compile_statement

__all__ = [
    "CHECKPOINTS_PER_STATEMENT",
    "CONTROL_CHANNELS",
    "INTERRUPT",
    "NULL_TASK_ID",
    "WRITES_PER_STATEMENT",
    "Compiled",
    "Statements",
    "gated_writes_params",
    "gated_writes_upsert",
    "statements_for",
]

INTERRUPT = "__interrupt__"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
#: Writes that describe what happened to a task rather than what it produced (LangGraph's
#: ``pregel._task_status.CONTROL_WRITES``); any other write means the task finished.
CONTROL_CHANNELS = frozenset({"__error__", "__error_source_node__", INTERRUPT, "__resume__"})
#: Most write rows stored by one statement (9 binds each: within SQLite's oldest limit of 999).
WRITES_PER_STATEMENT = 100
#: Most checkpoints stored by one statement (8 binds each: within SQLite's oldest limit of 999).
CHECKPOINTS_PER_STATEMENT = 100
#: PostgreSQL: returned by a write statement run in autocommit, makes its commit asynchronous
#: (``synchronous_commit`` off for its own transaction only, set before the commit reads it):
#: the commit returns without waiting for the WAL flush. See
#: :meth:`~wop_langgraph.store._saver_base.SaverBase.committing_asynchronously`.
_COMMIT_ASYNCHRONOUSLY: ColumnElement[Any] = literal_column("set_config('synchronous_commit', 'off', true)")
# Metadata keys a DeltaChannel leaves behind; pruning must not cut such a thread's history.
_DELTA_MARKERS = ("counters_since_delta_snapshot", "delta_writes_versioned")

_CHECKPOINT_COLUMNS = (
    C.c.thread_id,
    C.c.checkpoint_ns,
    C.c.checkpoint_id,
    C.c.parent_checkpoint_id,
    C.c.type,
    C.c.checkpoint,
    C.c.metadata,
)
_WRITE_COLUMNS = (W.c.checkpoint_id, W.c.task_id, W.c.task_path, W.c.idx, W.c.channel, W.c.type, W.c.blob)


def _key(table: Any) -> ColumnElement[bool]:
    # Key binds are named tid/ns/cid: a bind named after a column of the table an INSERT or
    # UPDATE writes is reserved by SQLAlchemy for that column's value.
    return and_(
        table.c.thread_id == bindparam("tid"),
        table.c.checkpoint_ns == bindparam("ns"),
        table.c.checkpoint_id == bindparam("cid"),
    )


def _with_writes(checkpoint: CTE) -> Select[Any]:
    """The checkpoint row of ``checkpoint`` (kind 0), then every write of it (kind 1)."""
    cp = checkpoint.c
    rows = select(
        literal(0).label("kind"),
        *(cp[c.name] for c in _CHECKPOINT_COLUMNS),
        *(null().label(c.name) for c in _WRITE_COLUMNS[1:5]),
    )
    writes = select(
        literal(1),
        W.c.thread_id,
        W.c.checkpoint_ns,
        W.c.checkpoint_id,
        null(),
        W.c.type,
        W.c.blob,
        null(),
        W.c.task_id,
        W.c.task_path,
        W.c.idx,
        W.c.channel,
    ).select_from(
        W.join(
            checkpoint,
            and_(
                W.c.thread_id == cp.thread_id,
                W.c.checkpoint_ns == cp.checkpoint_ns,
                W.c.checkpoint_id == cp.checkpoint_id,
            ),
        )
    )
    # No ORDER BY (it would cost a sort): the reader picks the kind-0 row out itself.
    return select(union_all(rows, writes).subquery())


class Statements:
    """Every statement the saver runs, compiled for one dialect.

    Binds: ``tid``/``ns``/``cid`` for a checkpoint's key, ``ids`` for a list of thread or
    run ids (pass it through :meth:`id_list`), ``target`` for ``copy_thread``'s new thread;
    inserts take column names, the metadata as JSON text.
    """

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.postgres = dialect.name == "postgresql"
        insert = postgresql.insert if self.postgres else sqlite.insert
        sql = functools.partial(compile_statement, dialect=dialect, driver_form=True)

        values: dict[str, Any] = {c.name: bindparam(c.name) for c in C.columns}
        values["metadata"] = self._json_param("metadata")
        upsert_checkpoint = _on_conflict_of_checkpoints(insert(C).values(values))
        self.upsert_checkpoint = sql(upsert_checkpoint)
        self.upsert_checkpoint_asynchronously = (
            sql(upsert_checkpoint.returning(_COMMIT_ASYNCHRONOUSLY))
            if self.postgres
            else self.upsert_checkpoint
        )
        self._insert = insert
        self._upsert_checkpoints: dict[int, Compiled] = {1: self.upsert_checkpoint}
        # By row count, and whether the statement commits asynchronously.
        self._upsert_writes: dict[tuple[int, bool], tuple[Compiled, list[Any] | None]] = {}

        # get_tuple reads the checkpoint and its writes in ONE statement (one snapshot, one
        # round trip): the checkpoint row (kind 0) and its writes (kind 1).
        latest = (
            select(*_CHECKPOINT_COLUMNS)
            .where(C.c.thread_id == bindparam("tid"), C.c.checkpoint_ns == bindparam("ns"))
            .order_by(C.c.checkpoint_id.desc())
            .limit(1)
        )
        self.read_latest = sql(_with_writes(latest.cte("cp")))
        self.read_by_id = sql(_with_writes(select(*_CHECKPOINT_COLUMNS).where(_key(C)).cte("cp")))
        self.writes_of_checkpoints = sql(
            select(*_WRITE_COLUMNS).where(
                W.c.thread_id == bindparam("tid"),
                W.c.checkpoint_ns == bindparam("ns"),
                self._in_list(W.c.checkpoint_id),
            )
        )

        self.delete_thread_writes = sql(delete(W).where(W.c.thread_id == bindparam("tid")))
        self.delete_thread_checkpoints = sql(delete(C).where(C.c.thread_id == bindparam("tid")))
        of_runs = self._in_list(C.c.run_id)
        self.delete_run_writes = sql(
            delete(W).where(
                exists().where(
                    of_runs,
                    C.c.thread_id == W.c.thread_id,
                    C.c.checkpoint_ns == W.c.checkpoint_ns,
                    C.c.checkpoint_id == W.c.checkpoint_id,
                )
            )
        )
        self.delete_run_checkpoints = sql(delete(C).where(self._in_list(C.c.run_id)))

        target = cast(bindparam("target"), C.c.thread_id.type)
        self.thread_has_checkpoints = sql(select(literal(1)).where(C.c.thread_id == target).limit(1))
        self.copy_checkpoints = sql(
            insert(C).from_select(
                [c.name for c in C.columns],
                select(*[target if c.name == "thread_id" else c for c in C.columns]).where(
                    C.c.thread_id == bindparam("tid")
                ),
            )
        )
        self.copy_writes = sql(
            insert(W).from_select(
                [c.name for c in W.columns],
                select(*[target if c.name == "thread_id" else c for c in W.columns]).where(
                    W.c.thread_id == bindparam("tid")
                ),
            )
        )

        self.prune_keys = sql(
            select(C.c.thread_id, C.c.checkpoint_ns, C.c.checkpoint_id, C.c.parent_checkpoint_id).where(
                self._in_list(C.c.thread_id)
            )
        )
        i, o = W.alias("i"), W.alias("o")
        task_finished = exists().where(
            o.c.thread_id == i.c.thread_id,
            o.c.checkpoint_ns == i.c.checkpoint_ns,
            o.c.checkpoint_id == i.c.checkpoint_id,
            o.c.task_id == i.c.task_id,
            # Spelled out rather than NOT IN (...), which SQLAlchemy expands per execution.
            *(o.c.channel != channel for channel in sorted(CONTROL_CHANNELS)),
        )
        self.prune_pending = sql(
            select(i.c.thread_id, i.c.checkpoint_ns, i.c.checkpoint_id)
            .where(
                self._in_list(i.c.thread_id),
                i.c.channel == INTERRUPT,
                i.c.task_id != NULL_TASK_ID,
                ~task_finished,
            )
            .distinct()
        )
        has_marker: ColumnElement[bool] = false()
        for marker in _DELTA_MARKERS:
            if self.postgres:
                has_marker = has_marker | type_coerce(C.c.metadata, JSONB).has_key(marker)
            else:
                has_marker = has_marker | func.json_type(C.c.metadata, f"$.{marker}").is_not(None)
        self.prune_delta_threads = sql(
            select(C.c.thread_id).where(self._in_list(C.c.thread_id), has_marker).distinct()
        )
        self.delete_checkpoint = sql(delete(C).where(_key(C)))
        self.delete_checkpoint_writes = sql(delete(W).where(_key(W)))
        self.orphan_checkpoint = sql(update(C).where(_key(C)).values(parent_checkpoint_id=null()))

    def upsert_checkpoints(self, rows: Sequence[Mapping[str, Any]]) -> tuple[Compiled, Any]:
        """One statement storing up to :data:`CHECKPOINTS_PER_STATEMENT` checkpoints (each row
        as :attr:`upsert_checkpoint` takes its parameters), and its parameters laid out for the
        driver. Each replaces a checkpoint stored before under its key; the rows must have
        distinct keys (PostgreSQL refuses to update one row twice in a statement)."""
        count = len(rows)
        compiled = self._upsert_checkpoints.get(count)
        if compiled is None:
            compiled = self._upsert_checkpoints.setdefault(count, self._compile_upsert_checkpoints(count))
        if count == 1:
            return compiled, compiled.bind(rows[0])
        return compiled, compiled.bind(
            {f"{name}_{i}": value for i, row in enumerate(rows) for name, value in row.items()}
        )

    def _compile_upsert_checkpoints(self, count: int) -> Compiled:
        rows = []
        for i in range(count):
            values: dict[str, Any] = {c.name: bindparam(f"{c.name}_{i}") for c in C.columns}
            values["metadata"] = self._json_param(f"metadata_{i}")
            rows.append(values)
        statement = self._insert(C).values(rows)
        return compile_statement(_on_conflict_of_checkpoints(statement), self.dialect, driver_form=True)

    def upsert_writes(
        self, rows: Sequence[Sequence[Any]], *, asynchronously: bool = False
    ) -> tuple[Compiled, Sequence[Any] | Mapping[str, Any]]:
        """One statement storing up to :data:`WRITES_PER_STATEMENT` rows (each in the table's
        column order), and its parameters laid out for the driver.

        A special slot (negative idx: ``__error__``, ``__scheduled__``, ``__interrupt__``,
        ``__resume__``) is replaced in place, while an ordinary write already stored stays
        as it was: the ``WHERE`` turns its update into a no-op. The rows must have distinct
        keys (PostgreSQL refuses to update one row twice in a statement). ``asynchronously``
        (PostgreSQL): its transaction commits without waiting for the WAL flush, if the
        statement stored a row.
        """
        key = (len(rows), asynchronously and self.postgres)
        found = self._upsert_writes.get(key)
        if found is None:
            found = self._upsert_writes.setdefault(key, self._compile_upsert_writes(*key))
        compiled, tail = found
        values = [value for row in rows for value in row]
        if tail is None:  # named parameters
            return compiled, compiled.bind(_row_binds(values))
        return compiled, values + tail

    def _compile_upsert_writes(self, count: int, asynchronously: bool) -> tuple[Compiled, list[Any] | None]:
        """The upsert of ``count`` rows and, if its parameters are positional, the values of
        its own binds (the ``WHERE`` literal) that follow the rows'."""
        statement = _on_conflict_of_writes(
            self._insert(W).values(
                [{c.name: bindparam(f"{c.name}_{i}") for c in W.columns} for i in range(count)]
            )
        )
        if asynchronously:
            statement = statement.returning(_COMMIT_ASYNCHRONOUSLY)
        compiled = compile_statement(statement, self.dialect, driver_form=True)
        row_binds = _row_binds([None] * count * len(W.columns))
        if compiled.names is None:
            return compiled, None
        # Positional: the row values first, in order, then the WHERE literal; checked here so
        # a different layout from a future SQLAlchemy fails loudly rather than misplacing values.
        if compiled.names[: len(row_binds)] != tuple(row_binds):
            raise RuntimeError(f"unexpected parameter order for the writes upsert: {compiled.names}")
        return compiled, list(compiled.bind(row_binds))[len(row_binds) :]

    def id_list(self, ids: Sequence[str]) -> Any:
        """The value to bind as ``ids``: an array on PostgreSQL, JSON text for ``json_each``."""
        return list(ids) if self.postgres else json.dumps(list(ids))

    def list_checkpoints(
        self,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        checkpoint_id: str | None,
        metadata_filter: Mapping[str, Any] | None,
        before_id: str | None,
        after_key: tuple[str, str, str] | None,
        limit: int,
    ) -> Compiled:
        """One page of ``list``, newest first, resuming strictly after ``after_key``.

        The values are compiled in: bind the result with ``{}``. ``after_key`` is
        ``(checkpoint_id, thread_id, checkpoint_ns)`` of the previous page's last row; rows
        are ordered by that triple, descending, so paging neither repeats nor skips a row,
        even across threads.
        """
        conditions: list[ColumnElement[bool]] = []
        if thread_id is not None:
            conditions.append(C.c.thread_id == thread_id)
        if checkpoint_ns is not None:
            conditions.append(C.c.checkpoint_ns == checkpoint_ns)
        if checkpoint_id is not None:
            conditions.append(C.c.checkpoint_id == checkpoint_id)
        if before_id is not None:
            conditions.append(C.c.checkpoint_id < before_id)
        if after_key is not None:
            cid, tid, ns = after_key
            conditions.append(
                (C.c.checkpoint_id < cid)
                | ((C.c.checkpoint_id == cid) & (C.c.thread_id < tid))
                | ((C.c.checkpoint_id == cid) & (C.c.thread_id == tid) & (C.c.checkpoint_ns < ns))
            )
        if metadata_filter:
            conditions.extend(self._metadata_conditions(metadata_filter))
        statement = (
            select(*_CHECKPOINT_COLUMNS)
            .where(and_(true(), *conditions))
            .order_by(C.c.checkpoint_id.desc(), C.c.thread_id.desc(), C.c.checkpoint_ns.desc())
            .limit(limit)
        )
        return compile_statement(statement, self.dialect, driver_form=True)

    def _metadata_conditions(self, metadata_filter: Mapping[str, Any]) -> list[ColumnElement[bool]]:
        if self.postgres:
            # Containment: every filter key present with an equal JSON value.
            document = bindparam("filter", json.dumps(dict(metadata_filter)), type_=Text)
            return [type_coerce(C.c.metadata, JSONB).contains(cast(document, JSONB))]
        conditions: list[ColumnElement[bool]] = []
        for key, value in metadata_filter.items():
            if not isinstance(key, str) or '"' in key or "\\" in key:
                raise ValidationError(
                    f"metadata filter key {key!r} is not usable: keys are strings without quotes "
                    "or backslashes",
                    details={"path": "filter"},
                )
            extracted = func.json_extract(C.c.metadata, f'$."{key}"')
            if value is None:
                conditions.append(extracted.is_(None))
            elif isinstance(value, bool):
                conditions.append(extracted == (1 if value else 0))
            elif isinstance(value, (str, int, float)):
                conditions.append(extracted == value)
            else:
                # json_extract renders objects and arrays as compact JSON text.
                conditions.append(extracted == json.dumps(value, separators=(",", ":")))
        return conditions

    def _json_param(self, name: str) -> ColumnElement[Any]:
        param = bindparam(name, type_=Text)
        return cast(param, JSONB) if self.postgres else param

    def _in_list(self, column: ColumnElement[str]) -> ColumnElement[bool]:
        if self.postgres:
            return column == any_(bindparam("ids", type_=ARRAY(Text)))
        return column.in_(select(literal_column("value")).select_from(func.json_each(bindparam("ids"))))


_cache: dict[tuple[str, str, str], Statements] = {}


def statements_for(dialect: Dialect) -> Statements:
    """The statements of ``dialect``, compiled the first time it is asked for."""
    key = (dialect.name, dialect.driver, dialect.paramstyle)
    found = _cache.get(key)
    if found is None:
        found = _cache.setdefault(key, Statements(dialect))
    return found


def _row_binds(values: Sequence[Any]) -> dict[str, Any]:
    """The writes upsert's row parameters (``<column>_<i>``) holding ``values``, row by row."""
    names = [c.name for c in W.columns]
    return {f"{names[i % len(names)]}_{i // len(names)}": value for i, value in enumerate(values)}


def _on_conflict_of_checkpoints(statement: Any) -> Any:
    """The checkpoint upsert's conflict rule: the row stored last replaces the one before."""
    return statement.on_conflict_do_update(
        index_elements=list(C.primary_key.columns),
        set_={
            name: statement.excluded[name]
            for name in ("parent_checkpoint_id", "run_id", "type", "checkpoint", "metadata")
        },
    )


def _on_conflict_of_writes(statement: Any) -> Any:
    """The writes upsert's conflict rule (see :meth:`Statements.upsert_writes`)."""
    return statement.on_conflict_do_update(
        index_elements=list(W.primary_key.columns),
        set_={n: statement.excluded[n] for n in ("task_path", "channel", "type", "blob")},
        where=statement.excluded.idx < literal(0),
    )


def gated_writes_upsert(gate: Any, count: int) -> Any:
    """PostgreSQL: the upsert of ``count`` write rows (parameters ``ride_<column>_<i>``), each
    row stored once per row of ``gate``: with a gate of one row or none, only if it has one.

    The rows ride in an event append's statement (see
    :class:`wop_langgraph.store.events.NextAppend`), gated by its ``reserved`` CTE:
    a task's writes are stored exactly when its end is logged.
    """
    rows = [
        select(*(bindparam(f"ride_{c.name}_{i}", type_=c.type) for c in W.columns)).select_from(gate)
        for i in range(count)
    ]
    source = rows[0] if count == 1 else union_all(*rows)
    return _on_conflict_of_writes(postgresql.insert(W).from_select([c.name for c in W.columns], source))


def gated_writes_params(rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """The parameters of :func:`gated_writes_upsert` for ``rows`` (each in the table's column order)."""
    names = [c.name for c in W.columns]
    return {
        f"ride_{name}_{i}": value
        for i, row in enumerate(rows)
        for name, value in zip(names, row, strict=True)
    }
