"""Fork a run (``POST /runs/{runId}:fork``): a new run that starts from a recorded point of another.

The fork is an ordinary run (own row, LangGraph thread and event log) plus a ``wop_run_forks``
row. ``fromSeq`` is mapped onto LangGraph's checkpoints: the fork thread gets a copy of the
latest source checkpoint whose earlier steps' tasks logged everything before ``fromSeq``, with
the pending writes of the tasks that had finished before ``fromSeq`` (and the interrupt writes
of those still waiting). The checkpoint keeps its id, so LangGraph derives the same task and
interrupt ids in the fork as in the source, and the driver's once-only event ids line up with
the copied history. Events ``< fromSeq`` are copied (same order and payloads; run-bound ids
re-minted for the fork), and so are the interrupts asked before ``fromSeq``.

Replay (replay.md): a gate the source resolved at or after ``fromSeq`` is answered from the
record (``interrupt.resolved`` copies decision, action, reason, resolvedBy; no new
``interrupt.requested``), and a side-effecting node takes the source's recorded outcome keyed
``(sourceRunId, nodeId, n)`` or fails closed with ``replay_source_missing``
(``host/replay.py``). Branch: the same fixed history, then new facts: gates ask again and
effects run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from langgraph.types import Interrupt

from wop_langgraph.host.recorder import InterruptRecorder
from wop_langgraph.host.replay import redeliver
from wop_langgraph.nodes.suspend import ENVELOPE_MARK
from wop_langgraph.protocol.errors import IdTenantMismatch, NotFound, ValidationError, WopError
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.protocol.keys import interrupt_id_for
from wop_langgraph.protocol.principal import Principal
from wop_langgraph.store.engine import Connection, Engine
from wop_langgraph.store.events import NewEvent, StoredEvent, append, read_events
from wop_langgraph.store.fork_copy import (
    checkpoint_row,
    copy_checkpoint,
    copy_write,
    insert_fork_run,
    latest_checkpoint_writing,
    root_checkpoints,
    root_task_ids,
    writes_of,
)
from wop_langgraph.store.forks import ForkMode, ForkRecord, insert_fork
from wop_langgraph.store.interrupts import InterruptRecord, insert_interrupt, interrupts_of_run
from wop_langgraph.store.run_queue import enqueue
from wop_langgraph.store.runs import get_run

if TYPE_CHECKING:
    from wop_langgraph.host.runtime import WopHost

__all__ = ["ForkPointInvalid", "fork_run"]

_TERMINAL_EVENTS = ("run.completed", "run.failed", "run.cancelled")
_RESUME = "__resume__"
#: What asking appends after ``node.suspended``, in the same transaction (host/recorder.py).
_ASKING = ("interrupt.requested", "approval.requested", "clarification.requested")
#: What answering appends after ``interrupt.resolved`` (host/resolver.py ``_claim_in``).
_ANSWERING = ("approval.granted", "approval.rejected", "approval.overridden", "clarification.resolved")
_INTERRUPT = "__interrupt__"
#: The run options a branch may overlay (run-options.schema.json).
_OVERLAY_FIELDS = {"configurable", "tags", "metadata"}


class ForkPointInvalid(WopError):
    """``fromSeq`` is not in the source's log, or lies past its terminal event."""

    code = "fork_point_invalid"
    status = 422
    retryable = False


# -- creating a fork --------------------------------------------------------------------------


def fork_run(
    host: WopHost,
    run_id: str,
    *,
    mode: str,
    from_seq: int | None,
    run_options_overlay: Mapping[str, Any] | None,
    principal: Principal,
) -> dict[str, Any]:
    """Create the fork of ``run_id`` and queue it; returns ``{runId, sourceRunId, fromSeq, mode, status}``.

    Raises:
        ValidationError: a bad mode, a missing or negative ``fromSeq`` for a branch, an overlay
            on a replay, or an overlay outside ``{configurable, tags, metadata}``.
        IdTenantMismatch: the run id names another tenant than the caller's.
        NotFound: no such run.
        ForkPointInvalid: ``fromSeq`` is not in the source's log or lies past its terminal event.
    """
    fork_mode = _checked_mode(mode)
    overlay = dict(run_options_overlay or {})
    if fork_mode == "replay" and overlay:
        raise ValidationError(
            "runOptionsOverlay is for branch forks only", details={"field": "runOptionsOverlay"}
        )
    if from_seq is None:
        if fork_mode == "branch":
            raise ValidationError("a branch fork needs fromSeq", details={"field": "fromSeq"})
        from_seq = 0
    if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 0:
        raise ValidationError("fromSeq must be an integer >= 0", details={"field": "fromSeq"})
    unknown = set(overlay) - _OVERLAY_FIELDS
    if unknown:
        raise ValidationError(
            f"runOptionsOverlay has unknown members {sorted(unknown)}", details={"field": "runOptionsOverlay"}
        )
    if run_id.partition("/")[0] != principal.tenant:
        raise IdTenantMismatch("the run id names another tenant than the caller's")
    if overlay.get("configurable") is not None:
        host._check_configurable(overlay["configurable"])
    now = host.clock()
    with _one_snapshot(host.engine) as conn:
        source = get_run(conn, run_id)
        if source is None:
            raise NotFound(f"no run {run_id!r}")
        host.registry.get(source.workflow_id)  # a fork needs the graph to drive
        events = read_events(conn, run_id)
        _check_point(events, from_seq)
        fork_id = mint_tenant_id(principal.tenant)
        record = ForkRecord(fork_id, run_id, fork_mode, from_seq)
        insert_fork_run(conn, source, fork_id, overlay, now)
        insert_fork(conn, record, now=now)
        copier = _Copier(conn, source.run_id, fork_id, events, from_seq, now, host.saver.serde)
        recorder = host.saver.recorder
        if isinstance(recorder, InterruptRecorder):
            copier.on_requested = list(recorder.on_requested)
        copier.copy(replay=fork_mode == "replay")
        enqueue(conn, fork_id, now=now)
        created = get_run(conn, fork_id)
        status = str(created.status) if created is not None else "pending"
    host._enqueued(fork_id)
    return {"runId": fork_id, "sourceRunId": run_id, "fromSeq": from_seq, "mode": fork_mode, "status": status}


@contextmanager
def _one_snapshot(engine: Engine) -> Iterator[Connection]:
    """A write transaction that reads one snapshot of the source (its log and its checkpoints).

    The source may still be running: on PostgreSQL ``REPEATABLE READ`` keeps a checkpoint
    written after the log was read out of the mapping. SQLite's ``BEGIN IMMEDIATE`` already
    excludes every writer.
    """
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


def _checked_mode(mode: str) -> ForkMode:
    if mode == "replay":
        return "replay"
    if mode == "branch":
        return "branch"
    raise ValidationError("mode must be 'replay' or 'branch'", details={"field": "mode"})


def _check_point(events: list[StoredEvent], from_seq: int) -> None:
    """``fromSeq`` must name an event of the log at or before its terminal event."""
    terminal = next((e.sequence for e in events if e.type in _TERMINAL_EVENTS), None)
    last = events[-1].sequence if events else -1
    if from_seq > last:
        raise ForkPointInvalid(
            f"fromSeq {from_seq} is not in the source's log (its last sequence is {last})",
            details={"fromSeq": from_seq, "lastSequence": last},
        )
    if terminal is not None and from_seq > terminal:
        raise ForkPointInvalid(
            f"fromSeq {from_seq} lies past the source's terminal event at {terminal}",
            details={"fromSeq": from_seq, "terminalSequence": terminal},
        )


def _under_task(record: InterruptRecord, task_id: str) -> bool:
    """Whether the interrupt was raised by ``task_id`` or inside it (a subgraph it runs)."""
    return record.task_id == task_id or any(
        p.endswith(":" + task_id) for p in record.checkpoint_ns.split("|")
    )


def _stable(run_id: str, task_id: str, event_type: str) -> str:
    """The driver's once-only event id of a task event (host/driver.py ``_stable_event_id``)."""
    return hashlib.sha256(f"{run_id}|{task_id}|{event_type}".encode()).hexdigest()[:32]


def _fresh_id(fork_id: str, source_event_id: str) -> str:
    return hashlib.sha256(f"{fork_id}|{source_event_id}".encode()).hexdigest()[:32]


@dataclass
class _Task:
    """A LangGraph task of the source and the sequences of its node events."""

    task_id: str
    sequences: list[int]
    finished_at: int | None  # sequence of its node.completed / node.failed


class _Copier:
    """Copies the fixed history of one fork inside the transaction that creates it."""

    def __init__(
        self,
        conn: Connection,
        source_id: str,
        fork_id: str,
        events: list[StoredEvent],
        from_seq: int,
        now: datetime,
        serde: Any,
    ) -> None:
        self.serde = serde
        self.conn, self.source_id, self.fork_id = conn, source_id, fork_id
        self.events, self.from_seq, self.now = events, from_seq, now
        self.seq_of = {e.event_id: e.sequence for e in events}
        self.interrupts = interrupts_of_run(conn, source_id)
        self.new_ids: dict[str, str] = {}  # source event id -> fork event id
        self.renamed: dict[str, str] = {}  # source interrupt keys and ids -> the fork's
        self.in_resume: set[str] = set()  # source interrupts whose answers the copied __resume__ holds
        self.replay = False
        #: Told of each gate a branch fork asks anew (the notification outbox plans its messages).
        self.on_requested: list[Callable[[Connection, InterruptRecord], None]] = []

    def copy(self, *, replay: bool) -> None:
        self.replay = replay
        asked = self._asked_before()
        for record in asked:
            self.renamed[record.key] = _fork_key(record.key, self.source_id, self.fork_id)
            self.renamed[record.interrupt_id] = interrupt_id_for(self.fork_id, record.lg_interrupt_id)
        tasks = self._tasks()
        self._copy_checkpoint(tasks, asked)
        self._copy_events(tasks)
        self._copy_interrupts(tasks, asked, replay=replay)

    # -- what the source did before fromSeq -----------------------------------------------------

    def _event_seq(self, event_type: str, interrupt_id: str) -> int | None:
        for e in self.events:
            if e.type == event_type and e.payload.get("interruptId") == interrupt_id:
                return e.sequence
        return None

    def _asked_before(self) -> list[InterruptRecord]:
        """The source's interrupts whose ``node.suspended`` is fixed history."""
        asked = []
        for record in self.interrupts:
            seq = self._event_seq("node.suspended", record.interrupt_id)
            if seq is not None and seq < self.from_seq:
                asked.append(record)
        return asked

    def _tasks(self) -> dict[str, _Task]:
        """Every task with writes on a root checkpoint of the source, with its node events."""
        task_ids = root_task_ids(self.conn, self.source_id)
        tasks: dict[str, _Task] = {}
        for task_id in task_ids:
            seqs: list[int] = []
            finished: int | None = None
            for kind in ("node.started", "node.completed", "node.failed"):
                seq = self.seq_of.get(_stable(self.source_id, task_id, kind))
                if seq is not None:
                    seqs.append(seq)
                    if kind != "node.started":
                        finished = seq if finished is None else min(finished, seq)
            for record in self.interrupts:
                if record.task_id != task_id:
                    continue
                resumed = self.seq_of.get(
                    _stable(self.source_id, f"{task_id}|{record.interrupt_id}", "node.resumed")
                )
                suspended = self._event_seq("node.suspended", record.interrupt_id)
                seqs.extend(s for s in (resumed, suspended) if s is not None)
            tasks[task_id] = _Task(task_id, seqs, finished)
        return tasks

    # -- checkpoint ------------------------------------------------------------------------------

    def _copy_checkpoint(self, tasks: Mapping[str, _Task], asked: list[InterruptRecord]) -> None:
        """Copy the checkpoint ``fromSeq`` maps to, with the writes that are fixed history.

        Steps run in order and a step's tasks log their events before the next step starts, so
        the chosen checkpoint is the latest one all of whose earlier steps' tasks logged every
        event before ``fromSeq``. With ``fromSeq`` 0 nothing is copied: the fork starts afresh.
        """
        if self.from_seq == 0:
            return
        rows = root_checkpoints(self.conn, self.source_id)
        chosen: Any = None
        for index, row in enumerate(rows):
            chosen = row
            own = self._writes(row.checkpoint_id)
            if not all(
                max(tasks[w.task_id].sequences, default=-1) < self.from_seq for w in own if w.task_id in tasks
            ):
                # The state before this step is gone when older checkpoints were pruned (a
                # thread's history starts with its input checkpoint, step -1).
                if index == 0 and (row.metadata or {}).get("step", -1) != -1:
                    chosen = None
                break
        if chosen is None:
            raise ForkPointInvalid(
                f"the state of run {self.source_id!r} at fromSeq {self.from_seq} is no longer stored "
                "(its checkpoints were pruned or deleted)",
                details={"sourceRunId": self.source_id, "fromSeq": self.from_seq},
            )
        copy_checkpoint(self.conn, chosen, self.fork_id)
        for write in self._writes(chosen.checkpoint_id):
            task = tasks.get(write.task_id)
            # A task without node events (the input, channel bookkeeping) is state, not an execution.
            done = (
                task is None
                or not task.sequences
                or (task.finished_at is not None and task.finished_at < self.from_seq)
            )
            copied = dict(write._mapping)
            copied["thread_id"] = self.fork_id
            if not done and not self._waiting_write(write, copied, asked):
                continue  # the task runs again in the fork and writes this anew
            copy_write(self.conn, copied)
        self._copy_subgraphs(tasks, asked)

    def _waiting_write(self, write: Any, copied: dict[str, Any], asked: list[InterruptRecord]) -> bool:
        """Fill ``copied`` with what a task waiting at ``fromSeq`` keeps of ``write``; False: nothing."""
        if write.channel == _INTERRUPT:
            under = [r for r in asked if _under_task(r, write.task_id)]
            if under:
                copied["type"], copied["blob"] = self._interrupt_write(write, under)
                return True
        elif write.channel == _RESUME:
            resumed = self._resume_write(write, [r for r in asked if r.task_id == write.task_id])
            if resumed is not None:
                copied["type"], copied["blob"] = resumed
                return True
        return False

    def _copy_subgraphs(self, tasks: Mapping[str, _Task], asked: list[InterruptRecord]) -> None:
        """Copy the subgraph checkpoints that hold an interrupt asked before ``fromSeq``.

        A subgraph keeps its own checkpoints under its parent task's namespace; the one whose
        writes hold the next task of the interrupt's path is copied at each level, so the
        subgraph resumes where it waited instead of starting again.
        """
        done_ns: set[tuple[str, str]] = set()
        for record in asked:
            parts = record.checkpoint_ns.split("|")
            root = tasks.get(parts[0].rsplit(":", 1)[-1])
            if len(parts) < 2 or (
                root is not None and root.finished_at is not None and root.finished_at < self.from_seq
            ):
                continue
            for level in range(1, len(parts)):
                ns, next_task = "|".join(parts[:level]), parts[level].rsplit(":", 1)[-1]
                holder = latest_checkpoint_writing(self.conn, self.source_id, ns, next_task)
                if holder is None or (ns, holder) in done_ns:
                    continue
                done_ns.add((ns, holder))
                row = checkpoint_row(self.conn, self.source_id, ns, holder)
                if row is None:
                    continue
                copy_checkpoint(self.conn, row, self.fork_id)
                writes = writes_of(self.conn, self.source_id, holder, ns, ordered=False)
                for write in writes:
                    copied = dict(write._mapping)
                    copied["thread_id"] = self.fork_id
                    if write.task_id == next_task and not self._waiting_write(write, copied, asked):
                        continue
                    copy_write(self.conn, copied)

    def _resume_write(self, write: Any, asked: list[InterruptRecord]) -> tuple[str, bytes] | None:
        """The task's ``__resume__`` write cut to the answers the fork must not deliver again.

        LangGraph matches resume values to a task's interrupts by their order and takes one new
        answer per run of the task. The driver delivers one answer (the last given before
        ``fromSeq``, or the source's later one a replay re-delivers); the answers before it stay
        in this list, and the fork records them as consumed.
        """
        ordered = sorted(asked, key=lambda r: r.ordinal)
        answered: list[InterruptRecord] = []
        for record in ordered:
            at = self._event_seq("interrupt.resolved", record.interrupt_id)
            if at is None or at >= self.from_seq:
                break
            answered.append(record)
        later = ordered[len(answered) :]
        redelivered = self.replay and any(r.status in ("resolved", "expired") for r in later[:1])
        kept = answered if redelivered else answered[:-1]
        if not kept:
            return None
        try:
            values = self.serde.loads_typed((write.type, write.blob))
        except Exception:
            return None
        if not isinstance(values, list) or len(values) < len(kept):
            return None
        self.in_resume.update(r.interrupt_id for r in kept)
        kind, blob = self.serde.dumps_typed(values[: len(kept)])
        return str(kind), bytes(blob)

    def _interrupt_write(self, write: Any, asked: list[InterruptRecord]) -> tuple[str, bytes]:
        """The task's ``__interrupt__`` write holding exactly its interrupts asked before ``fromSeq``.

        The stored write holds the task's latest interrupts only (a later ``interrupt()`` of the
        same execution replaces it), so the earlier ones are rebuilt from their rows: LangGraph
        needs their ids pending to resume them; the values are the node API's envelopes.
        """
        try:
            stored = self.serde.loads_typed((write.type, write.blob))
        except Exception:  # unreadable: rebuild every item from the rows
            stored = []
        items = {
            i.id: i
            for i in (stored if isinstance(stored, (list, tuple)) else [stored])
            if isinstance(i, Interrupt)
        }
        rebuilt = [
            items.get(r.lg_interrupt_id)
            or Interrupt(
                value={
                    ENVELOPE_MARK: 1,
                    "nodeId": r.node_id,
                    "taskNs": r.checkpoint_ns,
                    "payload": {k: v for k, v in r.payload.items() if k != "key"},
                    **({"profiles": r.profiles} if r.profiles else {}),
                },
                id=r.lg_interrupt_id,
            )
            for r in sorted(asked, key=lambda r: r.ordinal)
        ]
        kind, blob = self.serde.dumps_typed(rebuilt)
        return str(kind), bytes(blob)

    def _writes(self, checkpoint_id: str) -> list[Any]:
        return writes_of(self.conn, self.source_id, checkpoint_id)

    # -- events and interrupts -------------------------------------------------------------------

    def _copy_events(self, tasks: Mapping[str, _Task]) -> None:
        """Copy events ``< fromSeq``; with ``fromSeq`` 0 the fork opens with the source's ``run.started``."""
        for task_id in tasks:
            for kind in ("node.started", "node.completed", "node.failed"):
                self.new_ids[_stable(self.source_id, task_id, kind)] = _stable(self.fork_id, task_id, kind)
            for record in self.interrupts:
                if record.task_id == task_id and record.interrupt_id in self.renamed:
                    old = _stable(self.source_id, f"{task_id}|{record.interrupt_id}", "node.resumed")
                    fork_iid = self.renamed[record.interrupt_id]
                    self.new_ids[old] = _stable(self.fork_id, f"{task_id}|{fork_iid}", "node.resumed")
        copied = [e for e in self.events if e.sequence < self.from_seq]
        if not copied:
            copied = [e for e in self.events if e.type == "run.started"][:1]
        news = [
            NewEvent(
                e.type,
                _renamed(e.payload, self.renamed),
                node_id=e.node_id,
                causation_id=self._causation(e.causation_id),
                schema_version=e.schema_version,
                event_id=self.new_ids.get(e.event_id) or _fresh_id(self.fork_id, e.event_id),
            )
            for e in copied
        ]
        append(self.conn, self.fork_id, news, now=self.now)

    def _causation(self, causation_id: str | None) -> str | None:
        if causation_id is None or causation_id not in self.seq_of:
            return causation_id
        return self.new_ids.get(causation_id) or _fresh_id(self.fork_id, causation_id)

    def _copy_interrupts(
        self, tasks: Mapping[str, _Task], asked: list[InterruptRecord], *, replay: bool
    ) -> None:
        """Copy the interrupts asked before ``fromSeq``; re-deliver or re-open their answers."""
        for record in asked:
            resolved_at = self._event_seq("interrupt.resolved", record.interrupt_id)
            answered_before = resolved_at is not None and resolved_at < self.from_seq
            task = tasks.get(record.task_id)
            consumed = (
                task is not None and task.finished_at is not None and task.finished_at < self.from_seq
            ) or record.interrupt_id in self.in_resume
            key = self.renamed[record.key]
            row = replace(
                record,
                interrupt_id=self.renamed[record.interrupt_id],
                run_id=self.fork_id,
                key=key,
                payload={**record.payload, "key": key},
                status="pending",
                votes=None,
                resume_value=None,
                resolution=None,
                resolved_by=None,
                resolved_at=None,
                consumed_at=None,
            )
            if answered_before:
                # Fixed history: answered in the copied prefix (delivered again unless consumed).
                row = replace(
                    row,
                    status=record.status,
                    votes=record.votes,
                    resume_value=record.resume_value,
                    resolution=_renamed(record.resolution, self.renamed),
                    resolved_by=record.resolved_by,
                    resolved_at=record.resolved_at,
                    consumed_at=self.now if consumed else None,
                )
                insert_interrupt(self.conn, row)
                self._finish_group(record, _ANSWERING, "interruptId", record.interrupt_id)
            elif replay and record.status in ("resolved", "expired"):
                insert_interrupt(self.conn, replace(row, votes=record.votes))
                redeliver(self.conn, row, record, self.now)
            else:
                # Asked, not yet answered in the fork: a branch (or a replay of a gate the source
                # never answered) waits for a new answer; its deadline restarts now.
                timeout = record.payload.get("timeoutMs")
                deadline = self.now + timedelta(milliseconds=timeout) if timeout else None
                stored, _ = insert_interrupt(self.conn, replace(row, created_at=self.now, deadline=deadline))
                self._finish_group(record, _ASKING, "key", record.key)
                if not replay:
                    # A branch asks anew: its reviewers hear of the fork's own gate (the source's
                    # links resolve the source). A replay never notifies a second time.
                    for hook in self.on_requested:
                        hook(self.conn, stored)

    def _finish_group(self, record: InterruptRecord, types: tuple[str, ...], field: str, value: str) -> None:
        """Re-emit the rest of an event group that ``fromSeq`` fell inside.

        Asking (``node.suspended``, ``interrupt.requested``, its legacy alias) and answering
        (``interrupt.resolved``, its alias) each append their events together; a fork point
        between them copies the first ones, and re-executing the step emits the others.
        """
        rest = [
            e
            for e in self.events
            if e.sequence >= self.from_seq and e.type in types and e.payload.get(field) == value
        ]
        news = [
            NewEvent(
                e.type,
                _renamed(e.payload, self.renamed),
                node_id=e.node_id,
                event_id=_fresh_id(self.fork_id, e.event_id),
            )
            for e in rest
        ]
        append(self.conn, self.fork_id, news, now=self.now)


def _fork_key(key: str, source_id: str, fork_id: str) -> str:
    """The fork's key for a source key: the run id prefix swapped (keys start with the run id)."""
    prefix = f"{source_id}:"
    if key.startswith(prefix):
        candidate = f"{fork_id}:{key[len(prefix) :]}"
        if len(candidate) <= 256:
            return candidate
    return "sha256:" + hashlib.sha256(f"{fork_id}\x00{key}".encode()).hexdigest()


def _renamed(value: Any, names: Mapping[str, str]) -> Any:
    """``value`` with every string that is a source interrupt key or id replaced by the fork's."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value
