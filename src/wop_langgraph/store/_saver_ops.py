"""The saver's storage operations, each written once over an open transaction.

Every function runs inside a transaction its caller opened
(:meth:`~wop_langgraph.store._saver_tx.Database.transaction`; ``SQLModelSaver`` on the
calling thread, ``AsyncSQLModelSaver`` on a worker thread), takes already validated and
serialised parameters and returns raw rows; nothing here serialises or deserialises, which
keeps transactions short and serves both savers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from sqlalchemy import Connection

from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.store._saver_codec import CheckpointRow, WriteParams, WriteRow
from wop_langgraph.store._saver_sql import (
    CHECKPOINTS_PER_STATEMENT,
    WRITES_PER_STATEMENT,
    Compiled,
    Statements,
)
from wop_langgraph.store._saver_tx import Tx
from wop_langgraph.store.held import HeldRows, stored_with_held
from wop_langgraph.store.recording import WriteBatch, WriteRecorder

__all__ = [
    "CheckpointsInto",
    "PruneStrategy",
    "WritesInto",
    "copy_thread",
    "delete_runs",
    "delete_thread",
    "loaded_of",
    "prune",
    "read_page",
    "read_tuple",
    "store_checkpoint",
    "store_writes",
]

PruneStrategy = Literal["keep_latest", "delete"]
Loaded = tuple[CheckpointRow, list[WriteRow]]
_Key = tuple[str, str, str]


def read_tuple(
    tx: Tx, sql: Statements, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
) -> Loaded | None:
    """The row of one checkpoint (the latest of the namespace without an id) and its writes.

    One statement returns both: the checkpoint row (kind 0) and one row per write (kind 1).
    """
    if checkpoint_id is None:
        found = tx.rows(sql.read_latest, {"tid": thread_id, "ns": checkpoint_ns})
    else:
        found = tx.rows(sql.read_by_id, {"tid": thread_id, "ns": checkpoint_ns, "cid": checkpoint_id})
    return loaded_of(found)


def loaded_of(found: Sequence[Sequence[Any]]) -> Loaded | None:
    """What :func:`read_tuple` returns, from the rows of its statement."""
    checkpoint = [r for r in found if r[0] == 0]
    if not checkpoint:
        return None
    _, *row, _, _, _, _ = checkpoint[0]
    writes = [(r[3], r[8], r[9], r[10], r[11], r[5], r[6]) for r in found if r[0] == 1]
    return cast(CheckpointRow, tuple(row)), cast(list[WriteRow], writes)


def read_page(tx: Tx, sql: Statements, query: Compiled) -> list[Loaded]:
    """The rows ``query`` selects, each with its writes (one writes query per namespace)."""
    rows = cast(list[CheckpointRow], tx.rows(query))
    writes: dict[tuple[str, str, str], list[WriteRow]] = {(r[0], r[1], r[2]): [] for r in rows}
    for thread_id, checkpoint_ns in dict.fromkeys((r[0], r[1]) for r in rows):
        ids = [r[2] for r in rows if r[0] == thread_id and r[1] == checkpoint_ns]
        found = tx.rows(
            sql.writes_of_checkpoints, {"tid": thread_id, "ns": checkpoint_ns, "ids": sql.id_list(ids)}
        )
        for write in cast(list[WriteRow], found):
            writes[(thread_id, checkpoint_ns, write[0])].append(write)
    return [(row, writes[(row[0], row[1], row[2])]) for row in rows]


def store_checkpoint(tx: Tx, sql: Statements, params: dict[str, Any], asynchronously: bool = False) -> None:
    """Insert a checkpoint, replacing one stored before under the same key (``asynchronously``:
    see :meth:`~wop_langgraph.store._saver_base.SaverBase.committing_asynchronously`)."""
    tx.execute(sql.upsert_checkpoint_asynchronously if asynchronously else sql.upsert_checkpoint, params)


def store_writes(
    tx: Tx,
    sql: Statements,
    rows: list[WriteParams],
    recorder: WriteRecorder | None,
    batch: WriteBatch,
    asynchronously: bool = False,
) -> None:
    """Store a batch of task writes, then hand the batch to ``recorder`` in the same transaction
    (or, if it stores something first, with that: ``WriteRecorder.stores_first``).

    Special slots are replaced in place, ordinary writes are kept if already stored (see
    ``Statements.upsert_writes``); a batch of up to ``WRITES_PER_STATEMENT`` rows is one
    statement. If the recorder raises, the transaction rolls back and none of the batch is
    stored. ``asynchronously`` (without a recorder only): see
    :meth:`~wop_langgraph.store._saver_base.SaverBase.committing_asynchronously`.
    """
    asynchronously = asynchronously and recorder is None
    stores_first = getattr(recorder, "stores_first", None)
    if recorder is None or not (callable(stores_first) and stores_first(batch)):
        _upsert_writes(tx, sql, rows, asynchronously)
        if recorder is not None:
            recorder.record(tx.connection, batch)
        return
    # With the saves the recorder stores first (what a drive held), in their statements.
    with stored_with_held(tx.connection, HeldRows(WritesInto(sql), rows)):
        recorder.record(tx.connection, batch)


def _upsert_writes(
    tx: Tx, sql: Statements, rows: Sequence[WriteParams], asynchronously: bool = False
) -> None:
    """Upsert ``rows`` (distinct keys), :data:`WRITES_PER_STATEMENT` a statement."""
    for start in range(0, len(rows), WRITES_PER_STATEMENT):
        chunk = rows[start : start + WRITES_PER_STATEMENT]
        tx.execute_bound(*sql.upsert_writes(chunk, asynchronously=asynchronously))


@dataclass(frozen=True, slots=True)
class CheckpointsInto:
    """The checkpoints table, for saves held to store later (:class:`~wop_langgraph.store.held.
    HeldRows` of :func:`store_checkpoint`'s parameters): several stored in one statement."""

    sql: Statements

    def store(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Upsert ``rows`` in order: of two under one key, the later replaces the earlier, as
        two upserts in turn would."""
        latest = {(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]): r for r in rows}
        kept = list(latest.values())
        tx = Tx.of(conn)
        for start in range(0, len(kept), CHECKPOINTS_PER_STATEMENT):
            tx.execute_bound(*self.sql.upsert_checkpoints(kept[start : start + CHECKPOINTS_PER_STATEMENT]))


@dataclass(frozen=True, slots=True)
class WritesInto:
    """The writes table, for saves held to store later (:class:`~wop_langgraph.store.held.
    HeldRows` of :func:`store_writes`'s rows): several batches stored in one statement."""

    sql: Statements

    def store(self, conn: Connection, rows: Sequence[WriteParams]) -> None:
        """Upsert ``rows`` in order, as batch after batch would: of two under one key, an
        ordinary write keeps the earlier (later ones are no-ops), a special slot (negative
        ``idx``) the later."""
        kept: dict[tuple[Any, ...], WriteParams] = {}
        for row in rows:
            key = tuple(row[:5])  # thread, namespace, checkpoint, task, idx
            if row[4] < 0 or key not in kept:
                kept[key] = row
        _upsert_writes(Tx.of(conn), self.sql, list(kept.values()))


def delete_thread(tx: Tx, sql: Statements, thread_id: str) -> None:
    """Delete every checkpoint and write of a thread, in all namespaces."""
    tx.execute(sql.delete_thread_writes, {"tid": thread_id})
    tx.execute(sql.delete_thread_checkpoints, {"tid": thread_id})


def delete_runs(tx: Tx, sql: Statements, run_ids: list[str]) -> None:
    """Delete the checkpoints whose metadata ``run_id`` is one of ``run_ids``, with their writes."""
    ids = sql.id_list(run_ids)
    tx.execute(sql.delete_run_writes, {"ids": ids})
    tx.execute(sql.delete_run_checkpoints, {"ids": ids})


def copy_thread(tx: Tx, sql: Statements, source: str, target: str) -> None:
    """Copy every checkpoint and write of ``source`` into the empty thread ``target``.

    Raises:
        ValidationError: ``target`` is ``source`` or already has checkpoints (nothing copied).
    """
    if source == target:
        raise ValidationError("copy_thread needs two different threads", details={"path": "target"})
    if tx.rows(sql.thread_has_checkpoints, {"target": target}):
        raise ValidationError(
            f"thread {target!r} already has checkpoints; copy_thread only fills an empty thread "
            "(delete_thread it first)",
            details={"path": "target"},
        )
    tx.execute(sql.copy_checkpoints, {"tid": source, "target": target})
    tx.execute(sql.copy_writes, {"tid": source, "target": target})


def prune(tx: Tx, sql: Statements, thread_ids: list[str], strategy: PruneStrategy) -> None:
    """Delete old checkpoints (and their writes) of ``thread_ids``, keeping what is still needed.

    ``keep_latest`` keeps the latest checkpoint of every namespace; ``delete`` keeps none.
    Both always keep a checkpoint that owns a pending interrupt: it has an ``__interrupt__``
    write from a task (not the ``NULL_TASK_ID`` input pseudo-task) that has no output write,
    i.e. no write on a channel other than ``__interrupt__``, ``__resume__``, ``__error__``,
    ``__error_source_node__``. That is LangGraph's own rule (``pregel._task_status``): a
    task that finished always records an output write, and its slot -3 holds the latest
    question while it is unfinished, so such a question still waits for an answer (a task
    holding ``__resume__`` answers but no output is waiting on its next question or has not
    finished replaying, and is kept too). A kept checkpoint whose parent is deleted is left
    without a parent; each checkpoint row holds the full state, so it still loads and resumes.

    Raises:
        ValidationError: a thread uses a ``DeltaChannel`` and pruning would cut the ancestor
            history its values are rebuilt from; nothing is pruned.
    """
    ids = {"ids": sql.id_list(thread_ids)}
    keys = cast(list[tuple[str, str, str, str | None]], tx.rows(sql.prune_keys, ids))
    pending = cast(set[_Key], set(tx.rows(sql.prune_pending, ids)))
    keep = set(pending)
    if strategy == "keep_latest":
        latest: dict[tuple[str, str], str] = {}
        for thread_id, checkpoint_ns, checkpoint_id, _ in keys:
            if checkpoint_id > latest.get((thread_id, checkpoint_ns), ""):
                latest[(thread_id, checkpoint_ns)] = checkpoint_id
        keep.update((t, ns, cid) for (t, ns), cid in latest.items())
    doomed = {(t, ns, cid) for t, ns, cid, _ in keys if (t, ns, cid) not in keep}
    if not doomed:
        return
    _refuse_delta_threads(tx, sql, sorted({k[0] for k in keep if any(d[0] == k[0] for d in doomed)}))
    doomed_params = [{"tid": t, "ns": ns, "cid": cid} for t, ns, cid in sorted(doomed)]
    tx.execute_many(sql.delete_checkpoint_writes, doomed_params)
    tx.execute_many(sql.delete_checkpoint, doomed_params)
    orphans = [
        {"tid": t, "ns": ns, "cid": cid}
        for t, ns, cid, parent in keys
        if (t, ns, cid) in keep and parent is not None and (t, ns, parent) in doomed
    ]
    if orphans:
        tx.execute_many(sql.orphan_checkpoint, orphans)


def _refuse_delta_threads(tx: Tx, sql: Statements, thread_ids: Sequence[str]) -> None:
    if not thread_ids:
        return
    delta = sorted(r[0] for r in tx.rows(sql.prune_delta_threads, {"ids": sql.id_list(thread_ids)}))
    if delta:
        raise ValidationError(
            "prune would cut the history a DeltaChannel rebuilds its value from, in thread(s) "
            f"{', '.join(map(repr, delta))}; nothing was pruned",
            details={"path": "thread_ids", "threads": delta},
        )
