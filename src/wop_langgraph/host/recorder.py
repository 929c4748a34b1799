"""Turns LangGraph's ``__interrupt__`` writes into OpenWOP interrupts, inside the saver's transaction.

For each new LangGraph interrupt the recorder derives the OpenWOP key, inserts the interrupt
row, appends ``node.suspended`` and ``interrupt.requested`` (plus the kind's legacy alias) and
marks the run as waiting, all in the transaction that stores the write. A replayed execution,
or the copy LangGraph writes into a parent graph for a subgraph's interrupt, carries an
interrupt id the store already holds and records nothing.

While a run is driven, its driver also listens to the writes of the run's top-level tasks
(:meth:`InterruptRecorder.task_writes`), so that the event closing a task (``node.completed``
or ``node.failed``) commits in the transaction of the writes it describes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timedelta
from typing import Any, Protocol

from langgraph.types import Interrupt

from wop_langgraph._clock import utcnow
from wop_langgraph.adapters import payload_for
from wop_langgraph.adapters.functional import recorded_by_caller
from wop_langgraph.adapters.policy import ApprovalPolicy
from wop_langgraph.kinds import kind_of
from wop_langgraph.nodes.context import node_path
from wop_langgraph.nodes.suspend import ENVELOPE_MARK
from wop_langgraph.protocol.event_payloads import node_suspended_extensions
from wop_langgraph.protocol.keys import interrupt_id_for, interrupt_key
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.events import NewEvent, NextAppend, RunLogClosed, append
from wop_langgraph.store.held import HeldWrite
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    conflicting,
    insert_interrupt,
    inserting_gate,
    known_interrupts,
    mark_waiting,
    record_of,
    waiting_params,
)
from wop_langgraph.store.recording import WriteBatch
from wop_langgraph.store.run_passes import rested_row
from wop_langgraph.store.statements import Reads

__all__ = ["InterruptRecorder", "TaskWritesListener"]


class TaskWritesListener(Protocol):
    """Follows a run's top-level task writes (see :meth:`InterruptRecorder.task_writes`)."""

    def wants(self, batch: WriteBatch) -> bool:
        """Whether the batch needs :meth:`record` (others are stored without a transaction)."""

    def opening(self, conn: Connection, batch: WriteBatch, ahead: NextAppend) -> AbstractContextManager[None]:
        """Around what is recorded in the transaction of any of the run's batches (a subgraph's
        too); what it puts in ``ahead`` goes with the first append to the run's log made
        within."""

    def resting(self, batch: WriteBatch) -> Reads | None:
        """Asked, inside the transaction of a batch with one interrupt, before it is recorded:
        what to send in the round trip of the interrupt's own statement (the run's rest, say),
        or ``None``; handed back to :meth:`record`, run (its ``rows`` set) or not."""

    def record(
        self, conn: Connection, batch: WriteBatch, ahead: NextAppend, resting: Reads | None = None
    ) -> None:
        """Inside the batch's transaction, after its interrupts are recorded (its appends
        given ``ahead``); ``resting`` is what :meth:`resting` gave: its ``rows`` are set if it
        ran with the interrupt's statement, and ``None`` if not (then it is as if it never ran)."""

    def one_append(self, batch: WriteBatch) -> bool:
        """Whether its part in recording ``batch`` (:meth:`opening` and :meth:`record`) is at
        most one append to the run's log, and nothing else."""

    def committed(self, batch: WriteBatch) -> None:
        """After the transaction of any of the run's batches (a subgraph's too) committed."""

    def first_interrupt(self) -> bool:
        """Whether the run can hold no interrupt yet: the drive created it and nothing was
        recorded for it since. Asked before each interrupt is recorded; ``True`` at most once."""

    def before_checkpoint(self) -> None:
        """Before one of the run's top-level checkpoints is stored (may wait)."""

    def hold(self, write: HeldWrite, batch: WriteBatch | None) -> bool:
        """Whether it keeps a top-level save of the run (a checkpoint, or the writes of
        ``batch``) to store in the run's next transaction, in order with the rest."""


class InterruptRecorder:
    """A :class:`~wop_langgraph.store.recording.WriteRecorder` for OpenWOP interrupts."""

    #: Only batches with an interrupt concern the OpenWOP side.
    channels: frozenset[str] | None = frozenset({"__interrupt__"})

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self._clock = clock
        #: Called with each newly recorded interrupt, in the same transaction (the notification
        #: outbox plans its messages here, so they commit or roll back with the interrupt).
        self.on_requested: list[Callable[[Connection, InterruptRecord], None]] = []
        self._task_listeners: dict[str, TaskWritesListener] = {}
        #: (conn, run id, node id) -> the registered policy of a bare approval at that node.
        self.approval_policy: Callable[[Connection, str, str], ApprovalPolicy | None] | None = None

    @contextmanager
    def task_writes(self, run_id: str, listener: TaskWritesListener) -> Iterator[None]:
        """Hand the top-level task write batches and checkpoints of ``run_id`` to ``listener``."""
        self._task_listeners[run_id] = listener
        try:
            yield
        finally:
            if self._task_listeners.get(run_id) is listener:
                del self._task_listeners[run_id]

    def wants(self, batch: WriteBatch) -> bool:
        """Batches with an interrupt, and the top-level batches its listener asks for."""
        if batch.touches(self.channels):
            return True
        listener = None if batch.checkpoint_ns else self._task_listeners.get(batch.thread_id)
        return listener is not None and listener.wants(batch)

    def one_append(self, batch: WriteBatch) -> bool:
        """Whether :meth:`record` of ``batch`` is at most one append to its run's log: a top-level
        batch with no interrupt, whose listener says the same of its own part."""
        if batch.checkpoint_ns or batch.touches(self.channels):
            return False
        listener = self._task_listeners.get(batch.thread_id)
        return listener is not None and listener.one_append(batch)

    def stores_first(self, batch: WriteBatch) -> bool:
        """Whether :meth:`record` begins by storing what the run's drive holds (it does when a
        drive listens: its listener's ``opening``)."""
        return batch.thread_id in self._task_listeners

    def record(self, conn: Connection, batch: WriteBatch, ahead: NextAppend | None = None) -> None:
        """Record every interrupt in the batch's ``__interrupt__`` writes, then tell the listener.

        ``ahead``: what the saver sends with the batch's first append to the run's log (its
        writes, riding in the append's statement: see ``one_append``); the run's listener adds
        what the drive holds."""
        ahead = NextAppend(batch.thread_id) if ahead is None else ahead
        opening = self._task_listeners.get(batch.thread_id)
        with opening.opening(conn, batch, ahead) if opening is not None else nullcontext():
            interrupts = [
                item
                for value in batch.channel_values("__interrupt__")
                for item in value or ()
                if isinstance(item, Interrupt)
            ]
            listener = None if batch.checkpoint_ns else self._task_listeners.get(batch.thread_id)
            # PostgreSQL: what the listener writes after one interrupt (the run's rest) goes in
            # the round trip of the interrupt's statement.
            resting = None
            if listener is not None and len(interrupts) == 1 and conn.dialect.name == "postgresql":
                resting = listener.resting(batch)
            for item in interrupts:
                self._record_one(conn, batch, item, ahead, resting)
            if listener is not None:
                listener.record(conn, batch, ahead, resting)

    def committed(self, batch: WriteBatch) -> None:
        """Tell the run's listener that a batch it recorded has committed."""
        listener = self._task_listeners.get(batch.thread_id)
        if listener is not None:
            listener.committed(batch)

    def before_put(self, thread_id: str, checkpoint_ns: str) -> None:
        """Let the run's listener hold a top-level checkpoint back until its tasks' ends commit."""
        listener = None if checkpoint_ns else self._task_listeners.get(thread_id)
        if listener is not None:
            listener.before_checkpoint()

    def hold(self, thread_id: str, checkpoint_ns: str, write: HeldWrite, batch: WriteBatch | None) -> bool:
        """Let the run's listener keep a top-level save (a checkpoint; ``batch``: task writes with
        no interrupt) to store later; ``False`` when it does not (the saver stores it now)."""
        listener = None if checkpoint_ns else self._task_listeners.get(thread_id)
        return listener is not None and listener.hold(write, batch)

    def _record_one(
        self, conn: Connection, batch: WriteBatch, item: Interrupt, ahead: NextAppend, resting: Reads | None
    ) -> None:
        if recorded_by_caller(batch.task_path, item.value):
            return
        run_id = batch.thread_id
        # One narrow read of the run's interrupts answers every question below (replay? same
        # execution? visit index? free key?); the insert's conflict loop covers concurrent writers.
        # A run's first interrupt in the drive that created it has nothing to read.
        listener = self._task_listeners.get(run_id)
        first = listener is not None and listener.first_interrupt()
        known = [] if first else known_interrupts(conn, run_id)
        if any(row.lg_interrupt_id == item.id for row in known):
            return
        node_id, task_ns, payload = _unwrap(batch, item)
        if kind_of(payload).quorum and _is_bare(item) and self.approval_policy is not None:
            # The graph's code had no place for a quorum or approvers: registration supplies them.
            policy = self.approval_policy(conn, run_id, node_id)
            if policy is not None:
                payload = policy.apply(payload)
        kind = str(payload["kind"])
        same_execution = [row for row in known if row.checkpoint_ns == task_ns]
        if same_execution:
            visit_index, ordinal = same_execution[0].visit_index, len(same_execution)
        else:
            # The node's interrupts already resolved, cancelled or expired in this run.
            visit_index = sum(1 for row in known if row.node_id == node_id and row.status != "pending")
            ordinal = 0
        taken = {row.key for row in known}
        now = self._clock()
        timeout = payload.get("timeoutMs")
        waiting = waiting_params(run_id, kind_of(payload).waiting_status, node_id, now)
        collision = 0
        while True:
            key, collision = _free_key(taken, run_id, node_id, visit_index, ordinal, collision)
            record = InterruptRecord(
                interrupt_id=interrupt_id_for(run_id, item.id),
                run_id=run_id,
                node_id=node_id,
                key=key,
                lg_interrupt_id=item.id,
                task_id=batch.task_id,
                kind=kind,
                payload={**payload, "key": key},
                created_at=now,
                checkpoint_ns=task_ns,
                visit_index=visit_index,
                ordinal=ordinal,
                deadline=now + timedelta(milliseconds=timeout) if timeout else None,
                profiles=_profiles(item),
            )
            if conn.dialect.name == "postgresql":
                # The insert, the run's wait and the events: one statement (and ``resting``
                # in its round trip, the first time).
                stored, inserted = _record_and_log(conn, record, waiting, now, ahead, resting)
                if resting is not None and not inserted and rested_row(resting) is None:
                    resting.rows = None  # it rested nothing before the interrupt: as if not run
                resting = None
            else:
                stored, inserted = insert_interrupt(conn, record)
                if inserted:
                    # The run waits from the statement that tells of the interrupt.
                    told = _told(record)
                    append(conn, run_id, told, now=now, leading=mark_waiting(waiting), ahead=ahead)
            if inserted:
                break
            if stored.lg_interrupt_id == item.id:
                return  # the same interrupt, recorded meanwhile by a concurrent writer
            # A concurrent execution of the same node (``Send`` fan-out on PostgreSQL, where the
            # tasks' writes commit in parallel) took this key after our read: take the next one.
            taken.add(stored.key)
            collision += 1
        for hook in self.on_requested:
            hook(conn, stored)


def _told(record: InterruptRecord) -> list[NewEvent]:
    """The events that tell of a new interrupt: ``node.suspended``, ``interrupt.requested``
    (and the legacy alias of its kind)."""
    kind, payload = record.kind, record.payload
    declared = kind_of(payload)
    suspended = NewEvent(
        type="node.suspended",
        node_id=record.node_id,
        payload={
            "nodeId": record.node_id,
            "interruptId": record.interrupt_id,
            "kind": kind,
            "reason": declared.suspend_reason,
            "key": record.key,
            **node_suspended_extensions(kind, payload["data"]),
        },
    )
    events = [suspended, NewEvent(type="interrupt.requested", node_id=record.node_id, payload=payload)]
    if declared.requested_alias:  # a legacy name a host SHOULD also emit (SPEC_NOTES §7)
        events.append(NewEvent(type=declared.requested_alias, node_id=record.node_id, payload=payload))
    return events


def _record_and_log(
    conn: Connection,
    record: InterruptRecord,
    waiting: dict[str, Any],
    now: datetime,
    ahead: NextAppend,
    then: Reads | None,
) -> tuple[InterruptRecord, bool]:
    """PostgreSQL: insert ``record`` and, if it was new, put its run to wait and log its events
    (after what goes ``ahead``), in one statement, with ``then`` in its round trip, whatever it
    did; as :func:`insert_interrupt`, the stored record and whether it was new."""
    events = _told(record)
    try:
        row = append(
            conn, record.run_id, events, now=now, gate=inserting_gate(record, waiting), ahead=ahead, then=then
        ).row
    except RunLogClosed:
        # Stored, but nothing logged: an event to go first was logged already (a replay), or
        # the log is closed. The usual append tells which (and raises if it is closed).
        append(conn, record.run_id, events, now=now, ahead=ahead)
        return record, True
    if row is not None:
        return record_of(row), True
    return conflicting(conn, record), False


def _profiles(item: Interrupt) -> list[str] | None:
    """The interrupt profiles the node asked for (carried beside the payload), if any."""
    value = item.value
    if isinstance(value, dict) and value.get(ENVELOPE_MARK) == 1 and value.get("profiles"):
        return [str(p) for p in value["profiles"]]
    return None


def _is_bare(item: Interrupt) -> bool:
    """Whether the interrupt is a bare ``interrupt(value)`` (not a node API call)."""
    return not (isinstance(item.value, dict) and item.value.get(ENVELOPE_MARK) == 1)


def _unwrap(batch: WriteBatch, item: Interrupt) -> tuple[str, str, dict[str, Any]]:
    """(node id, task namespace, payload without key) of an interrupt."""
    value = item.value
    if isinstance(value, dict) and value.get(ENVELOPE_MARK) == 1:
        return str(value["nodeId"]), str(value["taskNs"]), dict(value["payload"])
    # A bare interrupt(value) from graph code that does not use the node API: the adapters
    # map what users already write (Agent Inbox, HITL middleware, questions) onto OpenWOP.
    node = batch.task_path.rsplit(", ", 1)[-1] if batch.task_path.startswith("~__pregel_pull") else "task"
    task_ns = "|".join(p for p in (batch.checkpoint_ns, f"{node}:{batch.task_id}") if p)
    return node_path(task_ns), task_ns, payload_for(value, item.response_schema)


def _free_key(
    taken: set[str], run_id: str, node_id: str, visit_index: int, ordinal: int, collision: int = 0
) -> tuple[str, int]:
    """The first key (and its collision index, from ``collision`` up) not in ``taken``.

    Parallel ``Send`` tasks of one node share a visit index and an ordinal; each gets its own key.
    Keys start with the run id, so the run's own keys are the only ones that can collide.
    """
    while True:
        key = interrupt_key(run_id, node_id, visit_index, ordinal, collision=collision)
        if key not in taken:
            return key, collision
        collision += 1
