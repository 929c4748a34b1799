"""Replay while a fork runs: recorded answers, recorded side-effect outcomes, divergence.

A replay fork (``host/fork.py``) re-executes its source's workflow against the record
(replay.md): :class:`ForkAwareRecorder` answers a gate the source answered from the record
instead of asking it, and :class:`ReplayRecord` gives side-effecting node types their recorded
outcome (or fails them closed), recorded identifiers, and ``replay.diverged`` payloads. What is a
fork is read from ``wop_run_forks``, never from the events.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from langgraph.types import Interrupt

from wop_langgraph.adapters.functional import recorded_by_caller
from wop_langgraph.host.recorder import InterruptRecorder, _unwrap
from wop_langgraph.host.resolver import _claim_in
from wop_langgraph.nodes.context import stable_id
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.protocol.keys import interrupt_id_for, interrupt_key
from wop_langgraph.store.engine import Connection, Engine, reading
from wop_langgraph.store.events import NextAppend, last_sequence, read_events
from wop_langgraph.store.forks import ForkRecord, fork_of, node_outcomes_logged
from wop_langgraph.store.interrupts import InterruptRecord, insert_interrupt, interrupts_of_run
from wop_langgraph.store.recording import WriteBatch
from wop_langgraph.store.statements import Reads

__all__ = ["ForkAwareRecorder", "RecordedFailure", "ReplayRecord", "ReplaySourceMissing", "redeliver"]


class ReplaySourceMissing(WopError):
    """A side-effecting node in a replay has no recorded outcome in the source (fails closed)."""

    code = "replay_source_missing"
    status = 409
    retryable = False


class RecordedFailure(WopError):
    """A side-effecting node's recorded failure, raised again in a replay exactly as recorded."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        recorded: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, details=details)
        self.recorded = dict(recorded) if recorded is not None else None

    @classmethod
    def of(cls, recorded: Mapping[str, Any]) -> RecordedFailure:
        """The failure a source run recorded (its ``node.failed`` error object)."""
        return cls(str(recorded.get("message") or "the recorded execution failed"), recorded=recorded)

    def error_object(self) -> dict[str, Any]:
        return dict(self.recorded) if self.recorded is not None else super().error_object()


def redeliver(conn: Connection, row: InterruptRecord, source: InterruptRecord, now: datetime) -> None:
    """Answer the fork's ``row`` with the source's recorded answer (``interrupt.resolved`` copies it).

    Never decided again: the decision, action, reason, votes and resolver are the source's.
    """
    status = "expired" if source.status == "expired" else "resolved"
    _claim_in(
        conn, row, source.resume_value, dict(source.resolution or {}), source.resolved_by, now, status=status
    )


class _ForkLookup:
    """``fork_of`` with a bounded per-process cache (a run's fork row never changes)."""

    def __init__(self) -> None:
        self._known: dict[str, ForkRecord | None] = {}

    def get(self, conn: Connection, run_id: str) -> ForkRecord | None:
        if run_id in self._known:
            return self._known[run_id]
        found = fork_of(conn, run_id)
        self._remember(run_id, found)
        return found

    def _remember(self, run_id: str, found: ForkRecord | None) -> None:
        if len(self._known) > 10_000:
            self._known.clear()
        self._known[run_id] = found


class ForkAwareRecorder(InterruptRecorder):
    """The interrupt recorder, answering a replay fork's gates from the source's record.

    In a replay fork, an interrupt the source resolved (or timed out) at the same place is not
    asked: the fork's row is claimed at once with the source's answer and only
    ``interrupt.resolved`` (and its alias) is logged; the driver then resumes the node with it.
    Everything else is recorded as usual.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._forks = _ForkLookup()
        self._quiet = threading.local()
        self.on_requested = _QuietHooks(self._quiet)

    def created_unforked(self, run_id: str) -> None:
        """``run_id`` was created as a plain run: it has no fork row, and never will."""
        self._forks._remember(run_id, None)

    def _record_one(
        self, conn: Connection, batch: WriteBatch, item: Interrupt, ahead: NextAppend, resting: Reads | None
    ) -> None:
        fork = self._forks.get(conn, batch.thread_id)
        if fork is None or not fork.is_replay or recorded_by_caller(batch.task_path, item.value):
            super()._record_one(conn, batch, item, ahead, resting)
            return
        known = interrupts_of_run(conn, fork.run_id)
        if any(r.lg_interrupt_id == item.id for r in known):
            return  # a replayed execution of an interrupt the fork already holds
        node_id, task_ns, payload = _unwrap(batch, item)
        same = [r for r in known if r.checkpoint_ns == task_ns]
        if same:
            visit_index, ordinal = same[0].visit_index, len(same)
        else:
            visit_index, ordinal = sum(1 for r in known if r.node_id == node_id and not r.is_pending), 0
        source = _source_interrupt(conn, fork.source_run_id, item.id, node_id, payload, known)
        if source is None or source.status not in ("resolved", "expired"):
            # Asked again. A gate the source asked too was notified then: not a second time.
            self._quiet.on = source is not None
            try:
                super()._record_one(conn, batch, item, ahead, resting)
            finally:
                self._quiet.on = False
            return
        key = interrupt_key(fork.run_id, node_id, visit_index, ordinal)
        row = InterruptRecord(
            interrupt_id=interrupt_id_for(fork.run_id, item.id),
            run_id=fork.run_id,
            node_id=node_id,
            key=key,
            lg_interrupt_id=item.id,
            task_id=batch.task_id,
            kind=str(payload["kind"]),
            payload={**payload, "key": key},
            created_at=self._clock(),
            checkpoint_ns=task_ns,
            visit_index=visit_index,
            ordinal=ordinal,
            votes=source.votes,
        )
        stored, inserted = insert_interrupt(conn, row)
        if inserted:
            ahead.append_left(conn)  # what goes first, before the resolution's events
            redeliver(conn, stored, source, self._clock())


def _source_interrupt(
    conn: Connection,
    source_id: str,
    lg_id: str,
    node_id: str,
    payload: Mapping[str, Any],
    fork_rows: list[InterruptRecord],
) -> InterruptRecord | None:
    """The source's interrupt that this one re-asks, if any.

    The same LangGraph id (the fork re-runs a step of the copied checkpoint), else the node's
    first source interrupt with the same payload that no interrupt of the fork stands for yet:
    the n-th visit of a loop maps to the n-th, ``Send`` siblings to theirs.
    """
    rows = interrupts_of_run(conn, source_id, node_id=node_id)
    same = next((r for r in rows if r.lg_interrupt_id == lg_id), None)
    if same is not None:
        return same
    free = list(rows)
    for mine in (r for r in fork_rows if r.node_id == node_id):
        taken = next((r for r in free if r.lg_interrupt_id == mine.lg_interrupt_id), None) or next(
            (r for r in free if _sans_key(r.payload) == _sans_key(mine.payload)), None
        )
        if taken is not None:
            free.remove(taken)
    return next((r for r in free if _sans_key(r.payload) == _sans_key(payload)), None)


def _sans_key(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "key"}


class _QuietHooks(list[Callable[[Connection, InterruptRecord], None]]):
    """The recorder's ``on_requested`` hooks, silent on a thread whose flag is set."""

    def __init__(self, flag: threading.local) -> None:
        super().__init__()
        self._flag = flag

    def __iter__(self) -> Iterator[Callable[[Connection, InterruptRecord], None]]:
        if getattr(self._flag, "on", False):
            return iter(())
        return super().__iter__()


class ReplayRecord:
    """What a replay fork reads from its source's record while it runs (replay.md).

    Outside a replay fork every method answers "run live" (``None``, the minted id).

    * :meth:`outcome` (side-effecting node types, called by the definition compiler): the node
      never runs; it takes the source's ``n``-th recorded outcome, where ``n`` is one more than the
      node's ``node.completed`` / ``node.failed`` events so far in the fork (inherited prefix
      included), raises the recorded failure, or fails closed with ``replay_source_missing``.
    * :meth:`recorded_id`: identifiers a node mints for recorded facts (a ``conversationId``) are
      the source's, never new ones.
    """

    def __init__(self, engine: Engine, run_id: str, *, flush: Callable[[], None] | None = None) -> None:
        """``flush``: stores what the drive holds of the run (its log read after it is complete)."""
        self._engine, self._run_id = engine, run_id
        self._flush = flush
        self._fork: ForkRecord | None = None
        self._looked = False

    def _replay(self) -> ForkRecord | None:
        """The replay fork this run is, if it is one; then the drive's held events are logged
        first, so that what counts them reads them all."""
        if not self._looked:
            with reading(self._engine) as conn:
                self._fork, self._looked = fork_of(conn, self._run_id), True
        fork = self._fork if self._fork is not None and self._fork.is_replay else None
        if fork is not None and self._flush is not None:
            self._flush()
        return fork

    def outcome(self, node_id: str) -> Mapping[str, Any] | None:
        ended = ("node.completed", "node.failed")
        fork = self._replay()
        if fork is None:
            return None
        with reading(self._engine) as conn:
            so_far = node_outcomes_logged(conn, self._run_id, node_id)
            outcomes = read_events(conn, fork.source_run_id, types=ended)
        recorded = [e for e in outcomes if e.node_id == node_id]
        n = int(so_far) + 1
        if len(recorded) < n:
            raise ReplaySourceMissing(
                f"node {node_id!r} is side-effecting and run {fork.source_run_id!r} recorded no outcome "
                f"for its execution {n}; a replay never performs the effect",
                details={"sourceRunId": fork.source_run_id, "nodeId": node_id, "n": n},
            )
        outcome = recorded[n - 1]
        if outcome.type == "node.failed":
            raise RecordedFailure.of(
                outcome.payload.get("error") or {"code": "internal_error", "retryable": False}
            )
        outputs = outcome.payload.get("outputs")
        return dict(outputs) if isinstance(outputs, Mapping) else {}

    def divergence(self, node_id: str, outputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The ``replay.diverged`` payload when a re-executed node's outcome differs from the record.

        ``outputs`` is what the node returned, ``None`` when it failed. The node's ``n``-th
        outcome in the source is compared (``n`` as in :meth:`outcome`); ``None`` outside a
        replay or when they agree.
        """
        ended = ("node.completed", "node.failed")
        fork = self._replay()
        if fork is None:
            return None
        with reading(self._engine) as conn:
            so_far = node_outcomes_logged(conn, self._run_id, node_id)
            recorded = [e for e in read_events(conn, fork.source_run_id, types=ended) if e.node_id == node_id]
            source_end = last_sequence(conn, fork.source_run_id)
        n = int(so_far) + 1
        payload: dict[str, Any] = {"sourceRunId": fork.source_run_id, "divergencePoint": "node.completed"}
        if len(recorded) < n:
            # The source's log ended (cancelled, failed elsewhere) before this outcome.
            return {**payload, "atSequence": max(source_end, 0), "divergenceKind": "extra"}
        original = recorded[n - 1]
        payload.update(atSequence=original.sequence, originalEventId=original.event_id)
        if (original.type == "node.failed") != (outputs is None):
            return {**payload, "divergenceKind": "type-mismatch"}
        if outputs is not None and _json(original.payload.get("outputs") or {}) != _json(outputs):
            return {**payload, "divergenceKind": "output"}
        return None

    def recorded_id(self, event_type: str, field: str, node_id: str, task_ns: str, minted: str) -> str:
        """The ``field`` of the source's matching ``event_type`` event of ``node_id``, else ``minted``.

        The match is the node's next such event: the ``n``-th, where ``n - 1`` are in the fork's
        log already, unless this execution logged one of the source's ids already (a replayed
        execution asks again and gets the same id). The event's once-only id is derived as
        ``NodeCall.emit`` derives it.
        """
        fork = self._replay()
        if fork is None:
            return minted
        with reading(self._engine) as conn:
            source = [
                e for e in read_events(conn, fork.source_run_id, types=[event_type]) if e.node_id == node_id
            ]
            mine = [e for e in read_events(conn, self._run_id, types=[event_type]) if e.node_id == node_id]
        recorded = [str(e.payload.get(field)) for e in source if isinstance(e.payload.get(field), str)]
        own = {e.event_id for e in mine}
        for value in recorded:
            if stable_id(self._run_id, task_ns, event_type, value) in own:
                return value
        return recorded[len(mine)] if len(mine) < len(recorded) else minted


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
