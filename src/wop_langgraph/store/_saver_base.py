"""The one implementation behind both savers: every ``BaseCheckpointSaver`` method, in sync form.

Each method validates and serialises its input (:mod:`._saver_codec`), runs one storage
operation (:mod:`._saver_ops`) in one short transaction (:mod:`._saver_tx`), and decodes
what came back. ``SQLModelSaver`` exposes these methods as they are; ``AsyncSQLModelSaver``
awaits the very same methods on worker threads.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Concatenate, NamedTuple, ParamSpec, Self, TypeVar, cast

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
from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from wop_langgraph.protocol.errors import StoreError, ValidationError
from wop_langgraph.store import _saver_ops as ops
from wop_langgraph.store._saver_codec import Codec, checked, thread_key
from wop_langgraph.store._saver_sql import (
    WRITES_PER_STATEMENT,
    Statements,
    gated_writes_params,
    gated_writes_upsert,
    statements_for,
)
from wop_langgraph.store._saver_tx import ConnectionLost, Database, Tx, driver_error, store_error
from wop_langgraph.store.appended import release_signals
from wop_langgraph.store.engine import configure_sqlite, is_sqlite, make_engine, normalize_url
from wop_langgraph.store.events import NextAppend, RideNotTaken
from wop_langgraph.store.held import HeldRows, RowsInto
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.recording import WriteBatch, WriteRecorder

__all__ = ["LIST_PAGE_SIZE", "PING_AFTER_IDLE", "SaverBase"]

#: A namespace's latest checkpoint as known just now (``None``: it has none), for the next read
#: of it in this context (see :meth:`SaverBase.handing_over`): (thread id, namespace, tuple) in
#: a one-item list, so that the read taking it empties it for the contexts copied from this one.
_Handover = tuple[str, str, CheckpointTuple | None]
_HANDED: ContextVar[list[_Handover] | None] = ContextVar("wop_handed", default=None)
#: Whether saves that record nothing commit asynchronously (see
#: :meth:`SaverBase.committing_asynchronously`).
_ASYNCHRONOUS_COMMITS: ContextVar[bool] = ContextVar("wop_asynchronous_commits", default=False)


def _take(handed: list[_Handover], thread_id: str, checkpoint_ns: str) -> _Handover | None:
    """The hand-over if it is of this thread and namespace and still there, else ``None``."""
    try:
        if handed[-1][:2] == (thread_id, checkpoint_ns):
            return handed.pop()
    except IndexError:  # taken by a concurrent read of the same context
        pass
    return None


P = ParamSpec("P")
R = TypeVar("R")

#: Checkpoints fetched per transaction while ``list`` iterates.
LIST_PAGE_SIZE = 100

#: Seconds a pooled PostgreSQL connection may sit idle before it is pinged on checkout.
PING_AFTER_IDLE = 1.0


class _Mode(NamedTuple):
    """How an operation runs: writes or not, one statement or several, retried or not."""

    write: bool
    # One-statement operations run in autocommit (no BEGIN/COMMIT round trips).
    atomic: bool
    # Retried once on a fresh connection when the first one turns out to be dead; only for
    # operations that are idempotent (running twice leaves what running once does).
    retry: bool = True


_READ_ONE = _Mode(write=False, atomic=False)
_READ = _Mode(write=False, atomic=True)
_WRITE_ONE = _Mode(write=True, atomic=False)
_WRITE = _Mode(write=True, atomic=True)
_WRITE_ONCE = _Mode(write=True, atomic=True, retry=False)


class SaverBase(BaseCheckpointSaver[str]):
    """Engine, serializer and recorder, and the sync implementation of every saver method."""

    def __init__(
        self,
        engine: Engine,
        *,
        serde: SerializerProtocol | None = None,
        recorder: WriteRecorder | None = None,
    ) -> None:
        """Use ``engine`` (SQLite or PostgreSQL); call ``setup()`` once before first use.

        Args:
            engine: the store's engine, ideally from :func:`~wop_langgraph.store.engine.make_engine`
                (a SQLite engine made elsewhere gets the store's pragmas for new connections).
            serde: LangGraph serializer (default ``JsonPlusSerializer``); an
                ``EncryptedSerializer`` encrypts every blob.
            recorder: receives every ``put_writes`` batch inside its transaction.
        """
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
        self._checkpoints = ops.CheckpointsInto(self._sql)
        self._writes = ops.WritesInto(self._sql)
        self._db = Database(engine)
        self._owns_engine = False
        self._closed = False
        #: Called by :meth:`close` first, while the store still works: a host over this store
        #: stops its deadline timer and workers there, so no thread of it opens a connection
        #: after the engine is disposed (one would be left open in the engine's new pool).
        self.on_close: list[Callable[[], None]] = []

    @classmethod
    def from_url(
        cls,
        url: str | URL,
        *,
        serde: SerializerProtocol | None = None,
        recorder: WriteRecorder | None = None,
        **engine_options: Any,
    ) -> Self:
        """A saver on a new engine for ``url``: ``sqlite:///runs.db``, ``postgresql://...``.

        ``engine_options`` go to :func:`~wop_langgraph.store.engine.make_engine`, with two
        defaults of the saver's own: on PostgreSQL a pooled connection is pinged only after
        sitting idle for :data:`PING_AFTER_IDLE` seconds (where dead connections come from)
        rather than on every checkout, a round trip saved per operation (pass
        ``ping_after_idle=None`` to ping always); and the pool does not roll back connections
        coming back to it, since every transaction the saver opens ends before it returns
        them. The saver owns the engine and disposes of it in :meth:`close`.
        """
        engine_options.setdefault("pool_reset_on_return", None)
        if normalize_url(url).get_backend_name() == "postgresql":
            engine_options.setdefault("ping_after_idle", PING_AFTER_IDLE)
        saver = cls(make_engine(url, **engine_options), serde=serde, recorder=recorder)
        saver._owns_engine = True
        return saver

    def setup(self) -> int:
        """Create the schema, or upgrade it to the newest version; returns that version."""
        self._check_open("setup")
        try:
            return upgrade(self.engine)
        except SQLAlchemyError as exc:
            raise store_error("setup", exc) from driver_error(exc)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (the store refuses further use)."""
        return self._closed

    def close(self) -> None:
        """Run the :attr:`on_close` callbacks, then refuse further use; dispose of the engine if
        :meth:`from_url` created it."""
        try:
            for callback in self.on_close:
                callback()
        finally:
            self._closed = True
            self._db.close()
            if self._owns_engine:
                release_signals(self.engine)  # its event listener (PostgreSQL) stops with it
                self.engine.dispose()

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """The version after ``current``: ``"<32-digit counter>.<16-digit random>"``.

        The sortable strings LangGraph's memory, SQLite and Postgres savers produce, so a
        thread's versions keep increasing across savers; integer versions are continued.
        """
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its namespace's latest without ``checkpoint_id``),
        with its pending writes in ``writes_sort_key`` order; ``None`` if there is none."""
        thread_id, checkpoint_ns = thread_key(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None:
            checkpoint_id = checked("checkpoint_id", checkpoint_id)
        else:
            handed = _HANDED.get()
            if handed is not None:
                taken = _take(handed, thread_id, checkpoint_ns)
                if taken is not None:
                    return taken[2]  # the handed checkpoint, or None: the thread has none
        loaded = self._run(_READ_ONE, "get_tuple", ops.read_tuple, thread_id, checkpoint_ns, checkpoint_id)
        return None if loaded is None else self._codec.checkpoint_tuple(*loaded)

    def reading_latest(self, conn: Connection, thread_id: str) -> Callable[[], CheckpointTuple | None]:
        """Send the read of ``thread_id``'s latest top-level checkpoint in ``conn``'s open
        transaction (in the pipeline open there, if one is) and return the function that
        answers it (as :meth:`get_tuple` would) once the statement's results are in.

        For a caller that reads it with other statements in one round trip, in the
        transaction that takes the run's lease, then hands it to the drive
        (:meth:`handing_over`).
        """
        self._check_open("get_tuple")
        read = self._sql.read_latest
        cursor = Tx.of(conn).execute(read, {"tid": thread_id, "ns": ""})

        def answer() -> CheckpointTuple | None:
            loaded = ops.loaded_of(read.fetch(cursor, conn)[0])
            return None if loaded is None else self._codec.checkpoint_tuple(*loaded)

        return answer

    @contextmanager
    def handing_over(self, config: RunnableConfig, saved: CheckpointTuple | None) -> Iterator[None]:
        """Within the block, the first read of the latest checkpoint of ``config``'s thread and
        namespace, in this context or a copy of it (an asyncio task, an ``asyncio.to_thread``
        call; not a plain thread, which starts with a context of its own), answers ``saved``
        (``None``: there is none) instead of reading the database.

        For a caller that knows the latest checkpoint (it read it, or it created the thread
        just now) and now has LangGraph read it again (a run's driver, before it streams the
        graph), while nothing else can write the thread (it holds the run's lease). Later
        reads, and reads of other threads or namespaces, read as usual.
        """
        thread_id, checkpoint_ns = thread_key(config)
        token = _HANDED.set([(thread_id, checkpoint_ns, saved)])
        try:
            yield
        finally:
            _HANDED.reset(token)

    @contextmanager
    def committing_asynchronously(self) -> Iterator[None]:
        """Within the block, in this context and copies of it, on PostgreSQL the saves that
        record nothing (a checkpoint; writes that no recorder takes) commit asynchronously:
        their commit returns without waiting for the WAL flush, about half the time of such a
        save. SQLite is unchanged (its commits do not wait for a flush either).

        For a caller that commits synchronously after them, before anything depends on them
        (a run's driver: the events, interrupts and the run's end that a pass records are
        ordinary commits). PostgreSQL flushes the WAL in order, so when such a later commit is
        durable, the saves before it are too; and the WAL writer flushes them within a fraction
        of a second in any case. Only a crash of the database server itself, between the save
        and that flush, loses them; it loses the latest saves of the pass as if the process
        had stopped before them, a state that the run's recovery continues from.
        """
        token = _ASYNCHRONOUS_COMMITS.set(True)
        try:
            yield
        finally:
            _ASYNCHRONOUS_COMMITS.reset(token)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config`` (thread, and namespace if given), ``filter`` (equal
        metadata values) and ``before``, newest first, at most ``limit``.

        Pages of :data:`LIST_PAGE_SIZE` are read in their own short transactions, so no
        connection is held while the caller works between items.
        """
        for page in self._pages(config, filter, before, limit):
            yield from page

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of ``config``'s checkpoint (or hand it to the
        recorder's ``hold``, which stores it later); returns its config."""
        self._check_open("put")
        params = self._codec.checkpoint_params(config, checkpoint, metadata)
        before_put = getattr(self.recorder, "before_put", None)
        if callable(before_put):
            before_put(params["thread_id"], params["checkpoint_ns"])
        if not self._held(params["thread_id"], params["checkpoint_ns"], None, self._checkpoints, (params,)):
            self._run(_WRITE_ONE, "put", ops.store_checkpoint, params, _ASYNCHRONOUS_COMMITS.get())
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
        """Store a task's writes; then, in the same transaction, hand them to the recorder.

        ``__error__``, ``__scheduled__``, ``__interrupt__`` and ``__resume__`` are upserted
        in their fixed slots; other writes are kept if already stored. If the recorder
        raises, nothing of the batch is stored and its exception propagates. A recorder's
        ``hold`` may keep the batch to store later (see ``WriteRecorder``).
        """
        self._check_open("put_writes")
        rows, (thread_id, checkpoint_ns, checkpoint_id) = self._codec.write_params(
            config, writes, task_id, task_path
        )
        batch = WriteBatch(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes)
        recorder = self.recorder
        wanted = recorder is not None and _wants(recorder, batch)
        if (recorder is None or not wanted or _one_append(recorder, batch)) and self._held(
            thread_id, checkpoint_ns, batch, self._writes, rows
        ):
            return
        if recorder is None or not wanted:
            mode = _WRITE if len(rows) > WRITES_PER_STATEMENT else _WRITE_ONE
            self._run(mode, "put_writes", ops.store_writes, rows, None, batch, _ASYNCHRONOUS_COMMITS.get())
            return
        if not (
            self._sql.postgres and _one_append(recorder, batch) and self._store_riding(rows, recorder, batch)
        ):
            # Not retried: what the recorder appends (events) must not be appended twice.
            with self._db.transaction("put_writes", write=True, with_connection=True) as tx:
                ops.store_writes(tx, self._sql, rows, recorder, batch)
        committed = getattr(recorder, "committed", None)
        if callable(committed):
            committed(batch)

    def _held(
        self,
        thread_id: str,
        checkpoint_ns: str,
        batch: WriteBatch | None,
        into: RowsInto,
        rows: Sequence[Any],
    ) -> bool:
        """Whether the recorder kept this save (``rows`` into ``into``) to store later (its
        optional ``hold``)."""
        hold = getattr(self.recorder, "hold", None)
        return callable(hold) and bool(hold(thread_id, checkpoint_ns, HeldRows(into, rows), batch))

    def _store_riding(self, rows: builtins.list[Any], recorder: WriteRecorder, batch: WriteBatch) -> bool:
        """PostgreSQL: store the batch in the statement of the one append its recorder makes, in
        autocommit (one round trip where a transaction takes four); ``False`` when that append
        logged nothing (nothing was stored: the caller stores the batch the usual way)."""
        if len(rows) > WRITES_PER_STATEMENT:
            return False
        ahead = NextAppend(batch.thread_id, ride=(gated_writes_upsert, len(rows), gated_writes_params(rows)))
        try:
            with self._db.transaction("put_writes", write=True, atomic=False, with_connection=True) as tx:
                # (``record`` takes ``ahead`` where ``one_append`` says yes: see WriteRecorder)
                cast(Any, recorder).record(tx.connection, batch, ahead)
                if not ahead.rode:  # the recorder appended nothing: the writes on their own
                    ops.store_writes(tx, self._sql, rows, None, batch)
        except RideNotTaken:
            return False
        return True

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of ``thread_id``, in all namespaces."""
        self._run(_WRITE, "delete_thread", ops.delete_thread, checked("thread_id", thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is in ``run_ids``."""
        ids = [checked("run_id", r) for r in _ids(run_ids, "run_ids")]
        if ids:
            self._run(_WRITE, "delete_for_runs", ops.delete_runs, ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread, all namespaces, into an empty thread.

        Raises:
            ValidationError: the target is the source or already has checkpoints.
        """
        source = checked("thread_id", source_thread_id)
        target = checked("thread_id", target_thread_id)
        self._run(_WRITE_ONCE, "copy_thread", ops.copy_thread, source, target)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Delete old checkpoints of ``thread_ids``, never one that owns a pending interrupt.

        ``keep_latest`` keeps each namespace's latest checkpoint, ``delete`` none; see
        :func:`wop_langgraph.store._saver_ops.prune` for exactly what "pending" means.
        Use :meth:`delete_thread` to remove a thread whatever it holds.

        Raises:
            ValidationError: unknown strategy, or a ``DeltaChannel`` thread whose history
                pruning would cut (nothing is pruned).
        """
        ids = [checked("thread_id", t) for t in _ids(thread_ids, "thread_ids")]
        if strategy not in ("keep_latest", "delete"):
            raise ValidationError(
                f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'",
                details={"path": "strategy"},
            )
        if ids:
            self._run(
                _WRITE, "prune", ops.prune, ids, "keep_latest" if strategy == "keep_latest" else "delete"
            )

    @property
    def _codec(self) -> Codec:
        # Built per call from self.serde: with_allowlist() clones the saver and swaps serde.
        return Codec(self.serde)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise StoreError(f"{what} on a closed saver; create a new one")

    def _run(
        self,
        mode: _Mode,
        what: str,
        op: Callable[Concatenate[Tx, Statements, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        self._check_open(what)
        try:
            with self._db.transaction(what, write=mode.write, atomic=mode.atomic) as tx:
                return op(tx, self._sql, *args, **kwargs)
        except ConnectionLost:
            # The pool pings only connections that sat idle (see from_url); one that died
            # since its last use shows up here, and a fresh connection gets one more go.
            if not mode.retry:
                raise
        with self._db.transaction(what, write=mode.write, atomic=mode.atomic) as tx:
            return op(tx, self._sql, *args, **kwargs)

    def _pages(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[builtins.list[CheckpointTuple]]:
        """``list`` one page at a time (``AsyncSQLModelSaver`` fetches each on a worker thread)."""
        configurable = (config or {}).get("configurable") or {}
        where: dict[str, str | None] = {
            name: None if configurable.get(name) is None else checked(name, configurable[name])
            for name in ("thread_id", "checkpoint_ns", "checkpoint_id")
        }
        before_id = get_checkpoint_id(before) if before else None
        remaining = limit
        after: tuple[str, str, str] | None = None
        while remaining is None or remaining > 0:
            size = LIST_PAGE_SIZE if remaining is None else min(remaining, LIST_PAGE_SIZE)
            query = self._sql.list_checkpoints(
                thread_id=where["thread_id"],
                checkpoint_ns=where["checkpoint_ns"],
                checkpoint_id=where["checkpoint_id"],
                metadata_filter=filter,
                before_id=None if before_id is None else checked("checkpoint_id", before_id),
                after_key=after,
                limit=size,
            )
            loaded = self._run(_READ, "list", ops.read_page, query)
            codec = self._codec
            yield [codec.checkpoint_tuple(row, writes) for row, writes in loaded]
            if len(loaded) < size:
                return
            last = loaded[-1][0]
            after = (last[2], last[0], last[1])
            if remaining is not None:
                remaining -= len(loaded)


def _ids(ids: Sequence[str], what: str) -> Sequence[str]:
    if isinstance(ids, str):
        raise ValidationError(f"{what} takes a list of ids, not one string", details={"path": what})
    return ids


def _one_append(recorder: WriteRecorder, batch: WriteBatch) -> bool:
    """Whether ``recorder`` records ``batch`` with at most one append to its run's log and
    nothing else (its optional ``one_append``)."""
    one_append = getattr(recorder, "one_append", None)
    return callable(one_append) and bool(one_append(batch))


def _wants(recorder: WriteRecorder, batch: WriteBatch) -> bool:
    """Whether ``recorder`` takes ``batch``: its own ``wants``, else its ``channels``."""
    wants = getattr(recorder, "wants", None)
    if callable(wants):
        return bool(wants(batch))
    return batch.touches(getattr(recorder, "channels", None))
