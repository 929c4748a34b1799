"""LangGraph checkpointers over the store's database: ``SQLModelSaver`` and ``AsyncSQLModelSaver``.

Both implement the whole ``BaseCheckpointSaver`` of langgraph-checkpoint 4.x on SQLite or
PostgreSQL, in the same database (and, for ``put_writes``, the same transaction) as the
OpenWOP run tables. The two classes only differ in how they wait: every storage operation is
one function over a sync ``Connection`` in :mod:`wop_langgraph.store._saver_ops`, run
directly by :class:`SQLModelSaver` and on a worker thread by :class:`AsyncSQLModelSaver`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from wop_langgraph.protocol.errors import StoreError, ValidationError
from wop_langgraph.store import _saver_ops as ops
from wop_langgraph.store._saver_codec import Codec, checked, thread_key
from wop_langgraph.store._saver_sql import Sql, Statements, statements_for
from wop_langgraph.store._saver_tx import Tx, store_error, transaction
from wop_langgraph.store.engine import configure_sqlite, is_sqlite, make_engine
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.recording import WriteBatch, WriteRecorder

__all__ = ["AsyncSQLModelSaver", "SQLModelSaver"]

P = ParamSpec("P")
R = TypeVar("R")
Op = Callable[Concatenate[Tx, Statements, P], R]

#: Rows fetched per round trip while ``list`` iterates.
LIST_PAGE_SIZE = 100


class _SaverCore(BaseCheckpointSaver[str]):
    """Engine, serializer, recorder and the transaction runner both savers share."""

    def __init__(
        self,
        engine: Engine,
        *,
        serde: SerializerProtocol | None = None,
        recorder: WriteRecorder | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if engine.dialect.name not in ("sqlite", "postgresql"):
            raise ValidationError(
                f"the checkpoint store runs on SQLite or PostgreSQL, not {engine.dialect.name!r}",
                details={"path": "engine"},
            )
        if is_sqlite(engine):
            configure_sqlite(engine)
        self.engine = engine
        self.recorder = recorder
        self._sql = statements_for(engine.dialect)
        self._owns_engine = False
        self._closed = False

    @classmethod
    def from_url(
        cls,
        url: str | URL,
        *,
        serde: SerializerProtocol | None = None,
        recorder: WriteRecorder | None = None,
        **engine_options: Any,
    ) -> Self:
        """A saver on a new engine for ``url`` (``sqlite:///runs.db``, ``postgresql://...``).

        The saver owns that engine and disposes of it in :meth:`close`. Call ``setup()`` (or
        ``asetup()``) once before use to create or upgrade the schema.
        """
        saver = cls(make_engine(url, **engine_options), serde=serde, recorder=recorder)
        saver._owns_engine = True
        return saver

    def close(self) -> None:
        """Refuse further use; dispose of the engine if :meth:`from_url` created it."""
        self._closed = True
        if self._owns_engine:
            self.engine.dispose()

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """The version after ``current``: ``"<32-digit counter>.<16-digit random>"``.

        The same sortable strings LangGraph's memory, SQLite and Postgres savers produce, so a
        thread can move between them; integer versions are continued.
        """
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    @property
    def _codec(self) -> Codec:
        # Built per call from self.serde: with_allowlist() clones the saver and swaps serde.
        return Codec(self.serde)

    def _run(self, write: bool, what: str, op: Op[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        if self._closed:
            raise StoreError(f"{what} on a closed saver; create a new one")
        with transaction(self.engine, what, write=write) as tx:
            return op(tx, self._sql, *args, **kwargs)

    def _run_recorded(self, rows: list[dict[str, Any]], batch: WriteBatch) -> None:
        if self._closed:
            raise StoreError("put_writes on a closed saver; create a new one")
        recorder = self.recorder
        with transaction(self.engine, "put_writes", write=True, with_connection=recorder is not None) as tx:
            ops.store_writes(tx, self._sql, rows, recorder, batch)

    def _batch(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> tuple[list[dict[str, Any]], WriteBatch]:
        rows = self._codec.write_params(config, writes, task_id, task_path)
        first = rows[0] if rows else None
        thread_id, checkpoint_ns = thread_key(config)
        batch = WriteBatch(
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=first["checkpoint_id"] if first else str(config["configurable"]["checkpoint_id"]),
            task_id=task_id,
            task_path=task_path,
            writes=writes,
        )
        return rows, batch


def _list_query(
    sql: Statements,
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    after_key: tuple[str, str, str] | None,
    size: int,
) -> Sql:
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    checkpoint_ns = configurable.get("checkpoint_ns")
    checkpoint_id = configurable.get("checkpoint_id")
    before_id = get_checkpoint_id(before) if before else None
    return sql.list_checkpoints(
        thread_id=None if thread_id is None else checked("thread_id", thread_id),
        checkpoint_ns=None if checkpoint_ns is None else checked("checkpoint_ns", checkpoint_ns),
        checkpoint_id=None if checkpoint_id is None else checked("checkpoint_id", checkpoint_id),
        metadata_filter=filter,
        before_id=None if before_id is None else checked("checkpoint_id", before_id),
        after_key=after_key,
        limit=size,
    )


def _thread_ids(thread_ids: Sequence[str], what: str) -> list[str]:
    if isinstance(thread_ids, str):
        raise ValidationError(f"{what} takes a list of ids, not one string", details={"path": what})
    return [checked("thread_id", t) for t in thread_ids]


def _strategy(strategy: str) -> ops.PruneStrategy:
    if strategy == "keep_latest":
        return "keep_latest"
    if strategy == "delete":
        return "delete"
    raise ValidationError(
        f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'", details={"path": "strategy"}
    )


class SQLModelSaver(_SaverCore):
    """A synchronous LangGraph checkpointer on the store's SQLite or PostgreSQL database.

    Thread-safe: each call borrows a pooled connection for one short transaction. Writes
    on SQLite begin ``BEGIN IMMEDIATE`` and wait up to the busy timeout for the lock, so
    threads and processes sharing a file queue up instead of failing.

    Example:
        >>> saver = SQLModelSaver.from_url("sqlite:///runs.db")
        >>> saver.setup()
        >>> graph = builder.compile(checkpointer=saver)
    """

    def setup(self) -> int:
        """Create the schema, or upgrade it to the newest version; returns that version."""
        return self._run_setup()

    def _run_setup(self) -> int:
        if self._closed:
            raise StoreError("setup on a closed saver; create a new one")
        try:
            return upgrade(self.engine)
        except SQLAlchemyError as exc:
            raise store_error("setup", exc) from exc

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the namespace's latest without ``checkpoint_id``)."""
        thread_id, checkpoint_ns = thread_key(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None:
            checkpoint_id = checked("checkpoint_id", checkpoint_id)
        loaded = self._run(False, "get_tuple", ops.read_tuple, thread_id, checkpoint_ns, checkpoint_id)
        return None if loaded is None else self._codec.checkpoint_tuple(*loaded)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config``, ``filter`` (metadata equality) and ``before``, newest first.

        Rows are fetched a page at a time, each page in its own short transaction, so no
        connection is held while the caller works between items.
        """
        remaining = limit
        after: tuple[str, str, str] | None = None
        while remaining is None or remaining > 0:
            size = LIST_PAGE_SIZE if remaining is None else min(remaining, LIST_PAGE_SIZE)
            query = _list_query(self._sql, config, filter, before, after, size)
            page = self._run(False, "list", ops.read_page, query)
            for row, writes in page:
                yield self._codec.checkpoint_tuple(row, writes)
            if len(page) < size:
                return
            after = (page[-1][0][2], page[-1][0][0], page[-1][0][1])
            if remaining is not None:
                remaining -= len(page)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of ``config``'s checkpoint; returns its config."""
        params = self._codec.checkpoint_params(config, checkpoint, metadata)
        self._run(True, "put", ops.store_checkpoint, params)
        return {
            "configurable": {
                "thread_id": params["thread_id"],
                "checkpoint_ns": params["checkpoint_ns"],
                "checkpoint_id": params["checkpoint_id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes and, in the same transaction, hand them to the recorder."""
        rows, batch = self._batch(config, writes, task_id, task_path)
        self._run_recorded(rows, batch)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of ``thread_id``."""
        self._run(True, "delete_thread", ops.delete_thread, checked("thread_id", thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is in ``run_ids``."""
        ids = [checked("run_id", r) for r in _thread_ids(run_ids, "run_ids")]
        if ids:
            self._run(True, "delete_for_runs", ops.delete_runs, ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread into a new, empty thread."""
        source, target = checked("thread_id", source_thread_id), checked("thread_id", target_thread_id)
        self._run(True, "copy_thread", ops.copy_thread, source, target)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Delete old checkpoints of ``thread_ids``; never one that owns a pending interrupt.

        See :func:`wop_langgraph.store._saver_ops.prune` for exactly what is kept.
        """
        ids = _thread_ids(thread_ids, "thread_ids")
        chosen = _strategy(strategy)
        if ids:
            self._run(True, "prune", ops.prune, ids, chosen)


class AsyncSQLModelSaver(SQLModelSaver):
    """The asyncio twin of :class:`SQLModelSaver`: same storage, awaited on worker threads.

    Each ``a``-method runs the same storage operation as its sync twin in
    :func:`asyncio.to_thread`, so the event loop never blocks on the database. The sync
    methods keep working too (LangGraph calls ``get_tuple`` from sync code paths such as
    ``graph.get_state``).
    """

    async def asetup(self) -> int:
        """Create the schema, or upgrade it to the newest version; returns that version."""
        return await asyncio.to_thread(self.setup)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`SQLModelSaver.get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`SQLModelSaver.list`; pages are fetched on a worker thread."""
        pages = self.list(config, filter=filter, before=before, limit=limit)
        done = object()
        while True:
            item = await asyncio.to_thread(next, pages, done)
            if item is done:
                return
            yield item  # type: ignore[misc]

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`SQLModelSaver.put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`SQLModelSaver.put_writes` (the recorder runs on the worker thread)."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`SQLModelSaver.delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`SQLModelSaver.delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`SQLModelSaver.copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`SQLModelSaver.prune`."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
