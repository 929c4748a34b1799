"""Runs queued runs: leases, drive passes, lease renewal, cancellation, waiting for rest.

An :class:`Executor` is what a worker (or a caller that asked to wait) uses to drive a run it
has claimed from the queue (:mod:`wop_langgraph.store.run_queue`). It keeps the leases this
process holds alive with one renewal statement for all of them (by run id), and stops the drives of runs
that were cancelled, here or in another process. Exactly-once never depends on it: the
interrupt claim and the strict resume hold even if two drives of one run ever overlapped.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from wop_langgraph.host.driver import DriveSignal, GraphDriver, Pass
from wop_langgraph.host.held_writes import HeldWrites
from wop_langgraph.host.registry import GraphRegistry
from wop_langgraph.host.replay import ReplayRecord
from wop_langgraph.nodes.context import RunContext
from wop_langgraph.store.engine import Connection, Engine, one_statement, reading
from wop_langgraph.store.events import NewEvent, RunLogClosed, append
from wop_langgraph.store.run_queue import (
    QUEUE_CHANNEL,
    Claim,
    ClaimedRun,
    any_claimable,
    cancelled_leases,
    claim_next,
    claim_reads,
    claim_run,
    claimed_from,
    free_leases,
    lease_owners,
    notify,
    renew,
)
from wop_langgraph.store.run_queue import release as release_lease
from wop_langgraph.store.runs import TERMINAL_STATUSES, queue_entry
from wop_langgraph.store.statements import Reads

__all__ = ["DEFAULT_LEASE_SECONDS", "Executor", "RunOptions", "run_option"]

#: How long a lease lasts without renewal: how soon another worker takes over a dead one's run.
DEFAULT_LEASE_SECONDS = 15.0


@dataclass(frozen=True)
class RunOptions:
    """What the host enables for the node API calls of every run."""

    conversations: bool = False
    credentials: bool = False
    default_escalation_threshold: float = 0.7


class Executor:
    """Claims and drives runs for one host process."""

    def __init__(
        self,
        engine: Engine,
        registry: GraphRegistry,
        options: RunOptions,
        clock: Callable[[], datetime],
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.engine = engine
        self.registry = registry
        self.options = options
        self.clock = clock
        self.lease = timedelta(seconds=lease_seconds)
        # One owner id per executor: renewals and cancellation checks are one statement each.
        self.owner = f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._active: dict[str, DriveSignal] = {}
        #: The latest drive of each run being driven here (a drive tells whether another
        #: began after it).
        self._last_drive: dict[str, int] = {}
        self._drive_tokens = itertools.count()
        #: What the drives of runs created here hold, while they may hold the run's own row
        #: (see :meth:`store_created`).
        self._creating: dict[str, HeldWrites] = {}
        self._guard = threading.Condition()
        self._keeper: threading.Thread | None = None
        self._closing = threading.Event()
        #: Called with a run id after each drive of it ends (callbacks, notifications).
        self.after_drive: list[Callable[[str], None]] = []
        #: Called with a run id and its terminal status after a drive that ended the run.
        self.after_end: list[Callable[[str, str], None]] = []
        #: Called with a run id handed back to the queue (wakes local workers).
        self.on_release: list[Callable[[str], None]] = []
        #: Called with a run id and each chunk its nodes write with ``get_stream_writer()``, as
        #: they write it, on the driving thread (nothing records them: a live relay's). Drives
        #: stream LangGraph's ``custom`` mode only while a listener is installed and, if
        #: :attr:`custom_wanted` has predicates, one of them wants the run's chunks.
        self.on_custom: list[Callable[[str, Any], None]] = []
        #: Whether a run's ``custom`` chunks are wanted now: streaming that mode makes LangGraph
        #: run every task on an executor thread, a hop a drive nobody listens to does not pay.
        self.custom_wanted: list[Callable[[str], bool]] = []

    # -- claiming ----------------------------------------------------------------------------

    def has_claimable(self) -> bool:
        """Whether a queued run of a registered workflow is free to claim: one indexed read.

        It takes no write lock (SQLite) and no row lock, so idle pollers cost next to nothing.
        """
        with reading(self.engine) as conn:
            return any_claimable(conn, workflow_ids=self.registry.workflow_ids(), now=self.clock())

    def claim_next(self) -> ClaimedRun | None:
        """Lease the longest-waiting queued run of a registered workflow, if any."""
        if not self.has_claimable():
            return None
        workflow_ids = self.registry.workflow_ids()
        with self.engine.begin() as conn:
            return claim_next(
                conn, owner=self.owner, workflow_ids=workflow_ids, now=self.clock(), lease=self.lease
            )

    def claim(self, run_id: str) -> ClaimedRun | None:
        """Lease ``run_id`` if it is queued and free, and of a workflow registered here."""
        with one_statement(self.engine) as conn, conn.begin():
            return self.claim_in(conn, run_id)

    def claim_in(self, conn: Connection, run_id: str) -> ClaimedRun | None:
        """:meth:`claim` in the caller's transaction (the one that queued the run)."""
        return claim_run(
            conn,
            run_id,
            owner=self.owner,
            workflow_ids=self.registry.workflow_ids(),
            now=self.clock(),
            lease=self.lease,
        )

    def claim_reads(self, run_id: str, saver: object = None) -> PendingClaim | None:
        """:meth:`claim` of ``run_id`` as reads to run in the caller's transaction, after the
        statement that queues the run (in its round trip on PostgreSQL), with the run's open
        work and, read by ``saver`` (our saver, which the run's graph saves with), its latest
        checkpoint; ``None``: nothing to claim here."""
        reading = getattr(saver, "reading_latest", None)
        answers: list[Callable[[], Any]] = []
        reads = claim_reads(
            run_id,
            owner=self.owner,
            workflow_ids=self.registry.workflow_ids(),
            now=self.clock(),
            lease=self.lease,
            also=[lambda conn: answers.append(reading(conn, run_id))] if callable(reading) else (),
        )
        return None if reads is None else PendingClaim(run_id, self.owner, reads, answers)

    # -- driving -----------------------------------------------------------------------------

    def drive(self, claimed: ClaimedRun) -> bool:
        """Drive a claimed run until it rests (waits on an interrupt, or ends) or is cancelled.

        Returns whether the drive left the run at rest (``False``: the lease was lost or
        handed back, and someone else continues).
        """
        return self._drive(claimed)[0]

    def adopt(self, claim: Claim) -> DriveSignal:
        """Hold ``claim`` until this process drives it; returns the hold (pass it to the drive).

        From now on the lease is renewed and a cancellation reaches the drive: call it as soon
        as the lease is taken (for a run inserted leased, inside the inserting transaction).
        """
        signal = DriveSignal()
        with self._guard:
            self._active[claim.run_id] = signal  # a drive of it that is ending drops only its own
        try:
            self._ensure_keeper()
        except BaseException:
            self._unhold(claim.run_id, signal)
            raise
        return signal

    def store_created(self, run_id: str) -> None:
        """Store what the drive of ``run_id`` holds now, if it is the drive that created the
        run and may still hold its row (``WopHost._create_held``): for a reader of the run on
        its drive's own path (a node that reads its run, a sub-workflow's parent) to find it,
        as it would once held ``FLUSH_AFTER_S``. Nothing to do for any other run."""
        with self._guard:
            held = self._creating.get(run_id)
        if held is not None:
            held.flush()

    def forget(self, claim: Claim, hold: DriveSignal) -> None:
        """Drop a hold whose lease was never stored (its transaction rolled back)."""
        self._unhold(claim.run_id, hold)

    def touch(self, run_id: str) -> None:
        """The run was queued again here: a row a drive of it wrote at rest is out of date."""
        with self._guard:
            if run_id in self._last_drive:
                self._last_drive[run_id] = next(self._drive_tokens)

    def _unhold(self, run_id: str, hold: DriveSignal) -> None:
        with self._guard:
            if self._active.get(run_id) is hold:
                del self._active[run_id]
            self._guard.notify_all()

    def _drive(self, claimed: ClaimedRun, hold: DriveSignal | None = None) -> tuple[bool, Any]:
        """:meth:`drive` (under ``hold``, if the claim was adopted), and the run's row as the
        drive left it at rest (``None`` if it wrote none, or if the run was driven or queued
        again here since)."""
        claim = claimed.claim
        signal = hold or DriveSignal()
        with self._guard:
            self._active[claim.run_id] = signal
            token = next(self._drive_tokens)
            self._last_drive[claim.run_id] = token
        self._ensure_keeper()
        at_rest, rested, same_drive = False, None, False
        try:
            if claimed.workflow_id not in self.registry:  # (claims filter by workflow already)
                self.release(claim, signal)  # another host, with that workflow, will take it
                return False, None
            driver = self._driver(claimed, signal)
            try:
                # The claim (or the insert that created the run leased) started the first pass
                # and read what it needs; later passes read afresh.
                outcome = driver.drive_pass(claimed.inputs, claimed=claimed)
                while outcome is Pass.AGAIN:
                    outcome = driver.drive_pass(claimed.inputs)
            finally:
                driver.stop_holding()
            at_rest, rested = outcome is Pass.IDLE, driver.rested
        except BaseException:
            self.release(claim, signal)
            raise
        finally:
            with self._guard:
                self._creating.pop(claim.run_id, None)
            self._unhold(claim.run_id, signal)
            try:
                for listener in self.after_drive:
                    listener(claim.run_id)
                status = getattr(rested, "status", None)
                if self.after_end and status in TERMINAL_STATUSES:
                    for ended in self.after_end:
                        ended(claim.run_id, str(status))
            finally:
                with self._guard:
                    # A listener may have driven or queued the run again (a subworkflow's
                    # result delivered to it): then the row this drive wrote is out of date.
                    same_drive = self._last_drive.get(claim.run_id) == token
                    if same_drive:
                        del self._last_drive[claim.run_id]
        return at_rest, rested if same_drive else None

    def drive_claimed(self, run_id: str, claimed: ClaimedRun | None, hold: DriveSignal | None = None) -> Any:
        """Drive ``run_id`` with the claim this caller took (if it did, under its ``hold``);
        return once the run is at rest.

        Returns the run's row as this drive left it at rest, when it knows it (``None``: read
        it).
        """
        if claimed is not None:
            at_rest, row = self._drive(claimed, hold)
            if at_rest:
                return row
        self.drive_until_idle(run_id)  # not ours, or handed back: wait for whoever holds it
        return None

    def drive_until_idle(self, run_id: str, *, poll_seconds: float = 0.05) -> None:
        """Return once ``run_id`` is at rest, driving it here whenever no one else holds it."""
        while True:
            claimed = self.claim(run_id)
            if claimed is not None:
                if self.drive(claimed):
                    return  # at rest (work that arrives from now on is the next caller's)
                continue
            with reading(self.engine) as conn:
                row = queue_entry(conn, run_id)
            if row is None or row.queued_at is None:
                return
            with self._guard:
                self._guard.wait(poll_seconds)

    @property
    def driving(self) -> frozenset[str]:
        """The runs this process drives, or holds a lease on to drive next."""
        with self._guard:
            return frozenset(self._active)

    def wait_until_undriven(self, run_id: str, timeout: float = 60.0) -> None:
        """Wait until this process no longer drives ``run_id`` (a cancelled drive winding down)."""
        with self._guard:
            self._guard.wait_for(lambda: run_id not in self._active, timeout)

    def reap_dead_local_leases(self) -> int:
        """Free the leases of dead processes of this machine at once, instead of at expiry.

        An owner id names its host and process; a lease whose process on this machine is gone
        can be taken over now (a restart after a crash). Leases of other machines, and of live
        processes, are left to expire. Only queued runs are looked at (a lease matters only
        while its run is queued), so the read goes through the queue's index, not every run.
        Returns how many owners were reaped.
        """
        prefix = self.owner.rsplit(":", 2)[0] + ":"
        with reading(self.engine) as conn:
            owners = lease_owners(conn, prefix)
        dead = [o for o in owners if o != self.owner and not _process_alive(o)]
        if not dead:
            return 0
        with self.engine.begin() as conn:
            freed = free_leases(conn, dead)
            for run_id in freed:  # announced like a released lease: workers need not poll for it
                notify(conn, QUEUE_CHANNEL, run_id)
        for run_id in freed:
            for listener in self.on_release:
                listener(run_id)
        return len(dead)

    def cancel_local(self, run_id: str) -> None:
        """Stop this process's drive of ``run_id``, if it has one."""
        with self._guard:
            signal = self._active.get(run_id)
        if signal is not None:
            signal.cancel()

    def wake_waiters(self) -> None:
        """Let callers waiting for a run to rest look again."""
        with self._guard:
            self._guard.notify_all()

    def close(self) -> None:
        """Stop renewing leases (call after the workers have stopped)."""
        self._closing.set()
        if self._keeper is not None:
            self._keeper.join(timeout=5)
            self._keeper = None

    def _driver(self, claimed: ClaimedRun, signal: DriveSignal) -> GraphDriver:
        run_id = claimed.claim.run_id
        registered = self.registry.get(claimed.workflow_id)
        threshold = run_option(claimed.configurable, "escalationThreshold")
        recursion_limit = run_option(claimed.configurable, "recursionLimit")
        held = HeldWrites(self.engine, run_id)
        if claimed.created is not None:  # the run's own row and run.started go first
            held.hold_write(*claimed.created)
            with self._guard:
                self._creating[run_id] = held
        context = RunContext(
            run_id=run_id,
            escalation_threshold=(
                self.options.default_escalation_threshold if threshold is None else threshold / 100
            ),
            conversations=self.options.conversations,
            credentials=self.options.credentials,
            rejection_routes=dict(registered.rejection_routes),
            emit=functools.partial(self._emit_once, run_id, held),
            replay=ReplayRecord(self.engine, run_id, flush=held.flush),
            recursion_limit=recursion_limit,
        )
        graph = registered.async_graph or registered.graph
        return GraphDriver(
            engine=self.engine,
            graph=graph,
            context=context,
            clock=self.clock,
            claim=claimed.claim,
            recursion_limit=recursion_limit,
            is_async=registered.is_async,
            signal=signal,
            held=held,
            on_custom=self._relay_custom if self._wants_custom(run_id) else None,
        )

    def _wants_custom(self, run_id: str) -> bool:
        if not self.on_custom:
            return False
        return not self.custom_wanted or any(wanted(run_id) for wanted in self.custom_wanted)

    def _relay_custom(self, run_id: str, chunk: Any) -> None:
        for listener in self.on_custom:
            listener(run_id, chunk)

    def _emit_once(
        self,
        run_id: str,
        held: HeldWrites,
        event_type: str,
        node_id: str,
        payload: dict[str, Any],
        event_id: str,
    ) -> None:
        """Append a node-level event unless an event with ``event_id`` exists (a replay), after
        what the drive holds (the emitting node's start among it)."""
        event = NewEvent(event_type, payload, node_id=node_id, event_id=event_id)
        try:
            with held.logging() as (conn, ahead):
                append(conn, run_id, [event], now=self.clock(), once=True, ahead=ahead)
        except RunLogClosed:
            return  # the run ended meanwhile: nothing is appended after its terminal event

    def release(self, claim: Claim, hold: DriveSignal) -> None:
        """Hand the run back to the queue: another worker (woken) or a later call drives it."""
        self._unhold(claim.run_id, hold)
        with self.engine.begin() as conn:
            released = release_lease(conn, claim)
            if released:
                notify(conn, QUEUE_CHANNEL, claim.run_id)
        if released:
            for listener in self.on_release:
                listener(claim.run_id)

    # -- leases ------------------------------------------------------------------------------

    def _ensure_keeper(self) -> None:
        with self._guard:
            if self._keeper is None or not self._keeper.is_alive():
                self._keeper = threading.Thread(target=self._keep_leases, name="wop-leases", daemon=True)
                self._keeper.start()

    def _keep_leases(self) -> None:
        """Renew this process's leases and stop drives of cancelled runs, a few times a lease."""
        interval = self.lease.total_seconds() / 3
        while not self._closing.wait(min(interval, 1.0)):
            with self._guard:
                active = list(self._active)
            if not active:
                continue
            try:
                with self.engine.begin() as conn:
                    renew(conn, self.owner, active, until=self.clock() + self.lease)
                    cancelled = cancelled_leases(conn, self.owner, active)
            except Exception:  # the database is briefly away: try again next round
                continue
            for run_id in cancelled:
                self.cancel_local(run_id)


def _process_alive(owner: str) -> bool:
    """Whether the process named in a lease owner id (``host:pid:nonce``) still runs here."""
    try:
        pid = int(owner.rsplit(":", 2)[1])
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (ValueError, IndexError, PermissionError):
        return True  # unreadable or not ours to signal: let the lease expire instead
    return True


def run_option(configurable: Any, name: str) -> Any:
    """``configurable.run.<name>`` of a run, or ``None``."""
    if not isinstance(configurable, Mapping):
        return None
    section = configurable.get("run")
    return section.get(name) if isinstance(section, Mapping) else None


@dataclass(frozen=True)
class PendingClaim:
    """A claim's reads (:meth:`Executor.claim_reads`), and what they took once they ran."""

    run_id: str
    owner: str
    reads: Reads
    #: The answer of the checkpoint read sent with them, if one was.
    answers: list[Callable[[], Any]]

    def claimed(self) -> ClaimedRun | None:
        """The claim taken (``None``: not queued, or held by another), with the run's open work
        and latest checkpoint."""
        claimed = claimed_from(self.run_id, self.owner, self.reads)
        if claimed is None or not self.answers:
            return claimed
        return dataclasses.replace(claimed, saved=(self.answers[0](),))
