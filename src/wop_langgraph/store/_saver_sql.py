"""The saver's SQL, built once per dialect with SQLAlchemy Core and reused for every call.

Statements are constructed once (:func:`statements_for`) so SQLAlchemy's compiled cache hits
on every execution; only ``list`` builds its WHERE clause per call, because its filters vary.
The two dialect-specific pieces are the upsert (``ON CONFLICT``, spelled by each dialect's
``insert``) and the metadata filter (JSONB containment on PostgreSQL, ``json_extract`` on
SQLite).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Delete,
    Insert,
    Select,
    Update,
    and_,
    bindparam,
    cast,
    delete,
    exists,
    false,
    func,
    literal,
    select,
    true,
    type_coerce,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table as W
from wop_langgraph.store.checkpoint_tables import checkpoints_table as C

__all__ = ["CONTROL_CHANNELS", "INTERRUPT", "NULL_TASK_ID", "Statements", "statements_for"]

INTERRUPT = "__interrupt__"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
#: Writes that describe what happened to a task rather than what it produced (LangGraph's
#: ``pregel._task_status.CONTROL_WRITES``); any other write means the task finished.
CONTROL_CHANNELS = frozenset({"__error__", "__error_source_node__", INTERRUPT, "__resume__"})
# Metadata keys a DeltaChannel leaves behind; keep_latest must not cut such a thread's history.
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


def _same_checkpoint(table: Any = W) -> ColumnElement[bool]:
    # Key binds are named tid/ns/cid: a bind named after a column of the table an INSERT or
    # UPDATE writes is reserved by SQLAlchemy for that column's value.
    return and_(
        table.c.thread_id == bindparam("tid"),
        table.c.checkpoint_ns == bindparam("ns"),
        table.c.checkpoint_id == bindparam("cid"),
    )


@dataclass(frozen=True, slots=True)
class Statements:
    """Every statement the saver runs on one dialect.

    Binds: ``tid``/``ns``/``cid`` for a checkpoint's key, ``thread_ids``/``run_ids`` for
    expanding lists, ``target`` for ``copy_thread``'s new thread; inserts take column names.
    """

    dialect: str
    latest_checkpoint: Select[Any]
    checkpoint_by_id: Select[Any]
    writes_of_checkpoint: Select[Any]
    writes_of_checkpoints: Select[Any]
    upsert_checkpoint: Insert
    upsert_writes: Insert
    delete_thread_writes: Delete
    delete_thread_checkpoints: Delete
    delete_run_writes: Delete
    delete_run_checkpoints: Delete
    thread_has_checkpoints: Select[Any]
    copy_checkpoints: Insert
    copy_writes: Insert
    prune_keys: Select[Any]
    prune_pending: Select[Any]
    prune_delta_threads: Select[Any]
    delete_checkpoint: Delete
    delete_checkpoint_writes: Delete
    orphan_checkpoint: Update

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
    ) -> Select[Any]:
        """The page of ``list``: newest first, resuming strictly after ``after_key``.

        ``after_key`` is ``(checkpoint_id, thread_id, checkpoint_ns)`` of the last row of the
        previous page; rows are ordered by that triple, descending, so paging never repeats or
        skips a row even across threads.
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
            conditions.extend(_metadata_conditions(self.dialect, metadata_filter))
        return (
            select(*_CHECKPOINT_COLUMNS)
            .where(and_(true(), *conditions))
            .order_by(C.c.checkpoint_id.desc(), C.c.thread_id.desc(), C.c.checkpoint_ns.desc())
            .limit(limit)
        )


def _metadata_conditions(dialect: str, metadata_filter: Mapping[str, Any]) -> list[ColumnElement[bool]]:
    if dialect == "postgresql":
        # Containment: each filter key must be present with an equal JSON value.
        return [type_coerce(C.c.metadata, JSONB).contains(dict(metadata_filter))]
    conditions: list[ColumnElement[bool]] = []
    for key, value in metadata_filter.items():
        if not isinstance(key, str) or '"' in key or "\\" in key:
            raise ValidationError(
                f"metadata filter key {key!r} is not usable: keys are strings without quotes or "
                "backslashes",
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


@functools.cache
def statements_for(dialect: str) -> Statements:
    """The statements of ``dialect`` (``"sqlite"`` or ``"postgresql"``), built once."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert

    upsert_checkpoint = insert(C)
    upsert_checkpoint = upsert_checkpoint.on_conflict_do_update(
        index_elements=list(C.primary_key.columns),
        set_={
            name: upsert_checkpoint.excluded[name]
            for name in ("parent_checkpoint_id", "run_id", "type", "checkpoint", "metadata")
        },
    )
    # One statement serves the whole batch: a special slot (negative idx: __error__,
    # __scheduled__, __interrupt__, __resume__) is replaced in place, an ordinary write
    # that is already there stays as it was (the WHERE turns its update into a no-op).
    upsert_writes = insert(W)
    upsert_writes = upsert_writes.on_conflict_do_update(
        index_elements=list(W.primary_key.columns),
        set_={name: upsert_writes.excluded[name] for name in ("task_path", "channel", "type", "blob")},
        where=upsert_writes.excluded.idx < literal(0),
    )

    by_thread = C.c.thread_id == bindparam("tid")
    in_threads = C.c.thread_id.in_(bindparam("thread_ids", expanding=True))
    target = cast(bindparam("target"), C.c.thread_id.type)

    i = W.alias("i")
    o = W.alias("o")
    task_finished = exists().where(
        o.c.thread_id == i.c.thread_id,
        o.c.checkpoint_ns == i.c.checkpoint_ns,
        o.c.checkpoint_id == i.c.checkpoint_id,
        o.c.task_id == i.c.task_id,
        o.c.channel.not_in(sorted(CONTROL_CHANNELS)),
    )
    if dialect == "postgresql":
        has_delta_marker: ColumnElement[bool] = false()
        for marker in _DELTA_MARKERS:
            has_delta_marker = has_delta_marker | type_coerce(C.c.metadata, JSONB).has_key(marker)
    else:
        has_delta_marker = false()
        for marker in _DELTA_MARKERS:
            has_delta_marker = has_delta_marker | func.json_type(C.c.metadata, f"$.{marker}").is_not(None)

    return Statements(
        dialect=dialect,
        latest_checkpoint=select(*_CHECKPOINT_COLUMNS)
        .where(by_thread, C.c.checkpoint_ns == bindparam("ns"))
        .order_by(C.c.checkpoint_id.desc())
        .limit(1),
        checkpoint_by_id=select(*_CHECKPOINT_COLUMNS).where(_same_checkpoint(C)),
        writes_of_checkpoint=select(*_WRITE_COLUMNS).where(_same_checkpoint()),
        writes_of_checkpoints=select(*_WRITE_COLUMNS).where(
            W.c.thread_id == bindparam("tid"),
            W.c.checkpoint_ns == bindparam("ns"),
            W.c.checkpoint_id.in_(bindparam("cids", expanding=True)),
        ),
        upsert_checkpoint=upsert_checkpoint,
        upsert_writes=upsert_writes,
        delete_thread_writes=delete(W).where(W.c.thread_id == bindparam("tid")),
        delete_thread_checkpoints=delete(C).where(by_thread),
        delete_run_writes=delete(W).where(
            exists().where(
                C.c.run_id.in_(bindparam("run_ids", expanding=True)),
                C.c.thread_id == W.c.thread_id,
                C.c.checkpoint_ns == W.c.checkpoint_ns,
                C.c.checkpoint_id == W.c.checkpoint_id,
            )
        ),
        delete_run_checkpoints=delete(C).where(C.c.run_id.in_(bindparam("run_ids", expanding=True))),
        thread_has_checkpoints=select(literal(1)).where(C.c.thread_id == target).limit(1),
        copy_checkpoints=insert(C).from_select(
            [c.name for c in C.columns],
            select(*[target if c.name == "thread_id" else c for c in C.columns]).where(by_thread),
        ),
        copy_writes=insert(W).from_select(
            [c.name for c in W.columns],
            select(*[target if c.name == "thread_id" else c for c in W.columns]).where(
                W.c.thread_id == bindparam("tid")
            ),
        ),
        prune_keys=select(
            C.c.thread_id, C.c.checkpoint_ns, C.c.checkpoint_id, C.c.parent_checkpoint_id
        ).where(in_threads),
        prune_pending=select(i.c.thread_id, i.c.checkpoint_ns, i.c.checkpoint_id)
        .where(
            i.c.thread_id.in_(bindparam("thread_ids", expanding=True)),
            i.c.channel == INTERRUPT,
            i.c.task_id != NULL_TASK_ID,
            ~task_finished,
        )
        .distinct(),
        prune_delta_threads=select(C.c.thread_id).where(in_threads, has_delta_marker).distinct(),
        delete_checkpoint=delete(C).where(_same_checkpoint(C)),
        delete_checkpoint_writes=delete(W).where(_same_checkpoint()),
        orphan_checkpoint=update(C).where(_same_checkpoint(C)).values(parent_checkpoint_id=None),
    )
