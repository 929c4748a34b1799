"""``WopHost``: the in-process OpenWOP host over registered LangGraph graphs (no HTTP).

Its public methods record facts and put runs on the durable queue, in one transaction each;
workers (:meth:`WopHost.start_workers`, ``wop-langgraph worker``, or the caller itself when it
asks to ``wait``) drive the graphs. All state lives in the store, so any number of hosts
(threads, processes, replicas) may share one database: exactly-once comes from the interrupt
claim, the queue's leases and LangGraph's strict resume, never from memory.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from langgraph.pregel import Pregel

from wop_langgraph._clock import iso_z, utcnow
from wop_langgraph.adapters.policy import ApprovalPolicy
from wop_langgraph.host.deadlines import DEFAULT_RECHECK_SECONDS, DeadlineTimer
from wop_langgraph.host.definition_support import DefinitionSupport
from wop_langgraph.host.driver import DriveSignal, jsonable
from wop_langgraph.host.execution import DEFAULT_LEASE_SECONDS, Executor, PendingClaim, RunOptions, run_option
from wop_langgraph.host.foreground import Foreground
from wop_langgraph.host.fork import fork_run
from wop_langgraph.host.listing import InterruptPage, RunPage, answerable_page, run_page, utc_bound
from wop_langgraph.host.proofs import Proofs
from wop_langgraph.host.registry import GraphRegistry
from wop_langgraph.host.replay import ForkAwareRecorder
from wop_langgraph.host.resolver import EnqueueHook, Resolver, ResolverSettings
from wop_langgraph.host.results import await_result, wait_result
from wop_langgraph.host.validation import require_storable
from wop_langgraph.host.worker import WorkerPool
from wop_langgraph.nodes.context import DEFAULT_ESCALATION_THRESHOLD
from wop_langgraph.protocol.errors import InterruptAlreadyResolved, NotFound, RunTerminal, ValidationError
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.protocol.jsonschema_check import validate_against_schema
from wop_langgraph.protocol.keys import tenant_of
from wop_langgraph.protocol.official import configurable_schema
from wop_langgraph.protocol.principal import MembershipResolver, Principal
from wop_langgraph.protocol.snapshot import RESULT_EXTENSION
from wop_langgraph.store.appended import signals_for
from wop_langgraph.store.engine import Connection, Engine, one_statement, reading
from wop_langgraph.store.events import NewEvent, append, read_events
from wop_langgraph.store.held import HeldWrite, stored_ahead
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    PendingFilter,
    cancel_pending,
    expired_pending,
    interrupts_of_run,
    next_deadline,
)
from wop_langgraph.store.run_queue import (
    CANCEL_CHANNEL,
    QUEUE_CHANNEL,
    Claim,
    ClaimedRun,
    created_queued,
    enqueue,
    notify,
    renew,
    unqueued_stragglers,
)
from wop_langgraph.store.runs import (
    RunFilter,
    cancel_run_row,
    get_run,
    insert_run_leading,
    insert_run_write,
    run_status,
)
from wop_langgraph.store.saver import SQLModelSaver
from wop_langgraph.store.statements import Reads

if TYPE_CHECKING:
    from wop_langgraph.proof.keys import ReceiptKeys
    from wop_langgraph.proof.verify import Report

__all__ = ["DEFAULT_ESCALATION_THRESHOLD", "WopHost"]

EVENT_LOG_SCHEMA_VERSION = 3


class WopHost:
    """An OpenWOP host for LangGraph graphs, over one database.

    Args:
        saver: the store; its recorder is set to this host's interrupt recorder.
        conversations: enable ``conversation.*`` node calls.
        credentials: enable ``request_credential``.
        ref_kinds: approver reference kinds honoured (``principal``, ``group``, ``role``).
        membership: resolves a principal's groups and roles at decision time.
        clock: the time source (injectable for tests and the timeout sweep).
        lease_seconds: how long a worker's lease on a run lasts without renewal, i.e. how soon
            another worker continues the run of a worker that died.
        deadline_recheck_seconds: the longest the host's deadline timer sleeps with no deadline
            in sight (interrupts recorded by other processes are seen within it).

    Deadlines fire by themselves: the host's timer (:mod:`~wop_langgraph.host.deadlines`),
    started with it and stopped by :meth:`close`, applies each pending interrupt's timeout when
    its deadline comes, and a host without workers then drives the run to rest on the timer's
    thread (set :attr:`drive_timeouts` to ``False`` where another process drives runs). A
    snapshot read after a deadline applies the run's due timeouts first, so it never shows a
    gate as waiting that can no longer be answered.

    Library calls wait by default (``wait=True``): they return when the run is at rest again
    (suspended on an interrupt, or ended), driving it on the calling thread unless a worker of
    this or another process already is. Pass ``wait=False`` to return at commit and let workers
    drive the run (:meth:`start_workers`); the HTTP server always does.
    """

    def __init__(
        self,
        saver: SQLModelSaver,
        *,
        conversations: bool = False,
        credentials: bool = False,
        ref_kinds: Iterable[str] = ("principal",),
        membership: MembershipResolver | None = None,
        clock: Callable[[], datetime] = utcnow,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        deadline_recheck_seconds: float = DEFAULT_RECHECK_SECONDS,
    ) -> None:
        self.saver = saver
        self.clock = clock
        recorder = ForkAwareRecorder(clock)  # InterruptRecorder + replay forks' recorded answers
        saver.recorder = recorder
        self._recorder = recorder
        self.engine: Engine = saver.engine
        self.registry = GraphRegistry(saver)
        recorder.approval_policy = self.registry.approval_policy
        self.options = RunOptions(conversations, credentials, DEFAULT_ESCALATION_THRESHOLD)
        self.ref_kinds = frozenset(ref_kinds)
        self.executor = Executor(self.engine, self.registry, self.options, clock, lease_seconds=lease_seconds)
        self._pool: WorkerPool | None = None
        #: The requests being answered in this process, which its workers let finish first.
        self.foreground = Foreground()
        signals_for(self.engine)  # appends wake event readers from the first commit on
        #: What WorkflowDefinitions add, once one is registered (:meth:`use_definitions`).
        self.definition_support: DefinitionSupport | None = None
        self.executor.after_drive.append(self._settle_links)
        #: Signed receipts and checkpoints (:meth:`use_receipt_keys`), export and verification.
        self.proofs = Proofs(self.engine, clock)
        self.executor.after_drive.append(self.proofs.issue)
        self.executor.on_release.append(self._enqueued)
        self._resolver = Resolver(
            ResolverSettings(self.engine, clock, self.ref_kinds, membership, self._enqueued, self.proofs)
        )
        self.membership = membership  # read by the server to check a link's approver at mint
        #: Whether the deadline timer drives the runs it timed out when this host has no workers.
        self.drive_timeouts = True
        self._owed: set[str] = set()  # timed out outside the timer (a snapshot), to drive
        self._owed_guard = threading.Lock()
        self._deadlines = DeadlineTimer(
            next_deadline=self._next_deadline,
            fire=self._apply_due,
            clock=clock,
            recheck_seconds=deadline_recheck_seconds,
            closed=lambda: saver.closed,
            periodic=self.proofs.checkpoint_waiting,
        )
        recorder.on_requested.append(lambda _conn, record: self._deadlines.consider(record.deadline))
        # Closing the store closes this host first: its timer's read (or a worker's pass) then
        # finishes on the open store instead of opening a connection after the engine is gone.
        saver.on_close.append(self.close)
        self._deadlines.start()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> WopHost:
        """A host over the database at ``url`` (schema created or upgraded)."""
        saver = SQLModelSaver.from_url(url)
        saver.setup()
        return cls(saver, **options)

    # -- graphs -----------------------------------------------------------------------------

    def register(
        self,
        workflow_id: str,
        graph: Pregel[Any, Any, Any, Any],
        *,
        rejection_routes: Mapping[str, str] | None = None,
        approvals: Mapping[str, ApprovalPolicy] | None = None,
    ) -> None:
        """Register a compiled graph under ``workflow_id``.

        Nodes may be ``def`` or ``async def``; a graph with async nodes is streamed with
        LangGraph's async API.

        Args:
            rejection_routes: node id -> node that a rejected approval in that node continues
                to (the explicit equivalent of an ``any_failed`` edge); without a route a
                rejection fails the node and the run with ``approval_rejected``.
            approvals: node id -> the quorum, approvers, rejection policy and timeout of the
                approvals that a bare ``interrupt()`` at that node becomes (Agent Inbox,
                ``HumanInTheLoopMiddleware``): code that has no place for them gets them here.
                Node API calls keep their own arguments.

        Raises:
            TypeError: ``graph`` is not compiled (a ``StateGraph`` builder: call ``.compile()``).
            ValidationError: an unknown node in either mapping, or a policy no approval can carry.
        """
        self.registry.register(workflow_id, graph, rejection_routes or {}, approval_policies=approvals)

    # -- workers ----------------------------------------------------------------------------

    def start_workers(
        self,
        concurrency: int = 4,
        *,
        poll_seconds: float = 1.0,
        sweep_seconds: float = 5.0,
        defer_seconds: float = 0.0,
    ) -> WorkerPool:
        """Start ``concurrency`` worker threads in this process (idempotent); returns the pool.

        Workers drive every queued run of the workflows registered here, and time out expired
        interrupts every ``sweep_seconds`` (0: never). With ``defer_seconds``, a worker about
        to take a run, or to go on to a sync graph's next step, first waits, at most that long,
        until no request counted in :attr:`foreground` is being answered (the HTTP server
        counts those that change something): the interpreter lock makes a driving worker slow
        every answer.
        """
        if self._pool is None:
            self._pool = WorkerPool(
                self.executor,
                concurrency,
                poll_seconds=poll_seconds,
                sweep=self.sweep_now,
                sweep_seconds=sweep_seconds,
                foreground=self.foreground,
                defer_seconds=defer_seconds,
            )
            self._pool.start()
        return self._pool

    def close(self, timeout: float = 30.0) -> None:
        """Stop the deadline timer and this process's workers (the store stays open; closing
        the store calls this first)."""
        self._deadlines.stop(timeout)
        self.stop_workers(timeout)

    def __enter__(self) -> WopHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> WopHost:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def stop_workers(self, timeout: float = 30.0) -> None:
        """Stop this process's workers after their current pass."""
        if self._pool is not None:
            self._pool.stop(timeout)
            self._pool = None
        self.executor.close()

    def run_until_idle(self) -> int:
        """Drive every queued run of the registered workflows here until none is left.

        Returns how many drives it made. For scripts, notebooks and tests without workers.
        """
        drives = 0
        while (claimed := self.executor.claim_next()) is not None:
            self.executor.drive(claimed)
            drives += 1
        return drives

    # -- hooks -------------------------------------------------------------------------------

    def on_interrupt_requested(self, hook: Callable[[Connection, InterruptRecord], None]) -> None:
        """Call ``hook(conn, record)`` for each new interrupt, in the transaction that records it
        (a branch fork's gate asked anew too; a replay's never): what it writes on ``conn``
        commits, or not, with the interrupt. It must not raise for a reason of its own."""
        self._recorder.on_requested.append(hook)

    def on_run_rested(self, hook: Callable[[str], None]) -> None:
        """Call ``hook(run_id)`` after each drive of a run in this process ends (the run waits,
        ended, or went back to the queue), on the driving thread."""
        self.executor.after_drive.append(hook)

    def on_run_ended(self, hook: Callable[[str, str], None]) -> None:
        """Call ``hook(run_id, status)`` when a run ends (``completed``, ``failed``, ``cancelled``):
        after the drive in this process that ended it, or after :meth:`cancel` here."""
        self.executor.after_end.append(hook)

    def use_definitions(self, support: DefinitionSupport) -> None:
        """Take on what WorkflowDefinitions add (``wop_langgraph.definitions`` hands it over when
        a definition is registered): channel projection in snapshots, sub-workflow links."""
        self.definition_support = support

    # -- runs -------------------------------------------------------------------------------

    def create_run(
        self,
        workflow_id: str,
        inputs: Any = None,
        *,
        owner: Principal,
        configurable: dict[str, Any] | None = None,
        callback_url: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        wait: bool = True,
        on_commit: Callable[[Connection, dict[str, Any]], None] | None = None,
        run_id: str | None = None,
        ahead: HeldWrite | None = None,
        checkpointed: bool = False,
    ) -> dict[str, Any]:
        """Create a run and queue it; returns its snapshot.

        With ``wait`` (the default) the call returns once the run is at rest: suspended on its
        first interrupt or ended. Without it, the run is ``pending`` until a worker takes it.
        ``on_commit`` is called with the new run's snapshot inside the transaction that
        creates it (to store something that must commit with the run, or not at all).
        ``ahead``: a write of the caller's in that transaction, sent ahead of the run's
        insert (on PostgreSQL in its round trip: it reads no result back
        before the insert has run; ``on_commit`` may read it). ``run_id`` is an id minted
        earlier for ``owner``'s tenant (``mint_tenant_id``), for a run whose id was given out
        before it could start; by default one is minted here. ``checkpointed``: ``on_commit``
        writes the run's first checkpoint (a LangGraph API thread's next run starts from a copy
        of the thread's state), which the graph then starts from, as from any run's.

        Raises:
            ValidationError: ``run_id`` names another tenant.
        """
        self.registry.get(workflow_id).require(
            conversations=self.options.conversations, credentials=self.options.credentials
        )
        if configurable is not None:
            self._check_configurable(configurable)
        inputs_doc = jsonable(inputs)
        require_storable(inputs_doc, "/inputs")
        require_storable({"metadata": metadata, "configurable": configurable, "tags": tags}, "")
        # An id minted here is known to no one until this call returns (see below).
        minted = run_id is None
        if run_id is None:
            run_id = mint_tenant_id(owner.tenant)
        elif tenant_of(run_id) != owner.tenant:
            raise ValidationError(
                "a run's id must be minted for its owner's tenant", details={"field": "runId"}
            )
        self._recorder.created_unforked(run_id)  # its interrupts need not look for a fork row
        now = self.clock()
        owner_doc = {"tenant": owner.tenant, "subject": owner.subject()}
        started: dict[str, Any] = {"workflowId": workflow_id, "owner": owner_doc}
        if inputs is not None:
            started["inputs"] = inputs_doc
        row = {
            "run_id": run_id,
            "workflow_id": workflow_id,
            "tenant": owner.tenant,
            "owner": owner_doc,
            "status": "pending",
            "inputs": inputs_doc,
            "configurable": configurable,
            "tags": tags,
            "run_metadata": metadata,
            "callback_url": callback_url,
            "created_at": now,
            "updated_at": now,
        }
        # A caller that waits drives the run itself: the run is inserted leased to this process
        # and running, so no claim, no read of the row and no status change follow.
        lease = Claim(run_id, self.executor.owner, 1) if wait else None
        if lease is not None:
            row["status"] = "running"
            if minted and on_commit is None and ahead is None:  # (so nothing is checkpointed)
                return self._create_held(row, NewEvent("run.started", started), now, lease, inputs_doc)
        hold = None
        postgres = self.engine.dialect.name == "postgresql"
        # On PostgreSQL the run's row, its NOTIFY and ``run.started`` are one statement: with
        # nothing else to commit with them, it runs in autocommit (one round trip, not four).
        connect = one_statement if postgres and on_commit is None and ahead is None else Engine.connect
        try:
            with (
                connect(self.engine) as conn,
                conn.begin(),
                stored_ahead(conn, [] if ahead is None else [ahead]),
            ):
                # The lease runs from here, once the transaction has the database (a SQLite
                # writer may have queued for it); from here on it is renewed, and a cancel
                # reaches the drive.
                leased_at = self.clock()
                queue = created_queued(now, lease=lease, lease_until=leased_at + self.executor.lease)
                if lease is not None:
                    hold = self.executor.adopt(lease)
                # Inserted queued (one statement, not insert + enqueue); a worker may drive an
                # unleased run the moment this commits, so the answer is what was committed.
                values = row | queue
                # Leased here, other processes' workers have nothing to take: no NOTIFY.
                notifies = postgres and lease is None
                leading = insert_run_leading(values, notify_channel=QUEUE_CHANNEL if notifies else None)
                # A run this caller drives is told of to no one until the drive's first commit,
                # which is synchronous and makes the run durable with it: no WAL flush of its own.
                asynchronously = lease is not None and connect is one_statement
                append(
                    conn,
                    run_id,
                    [NewEvent("run.started", started)],
                    now=now,
                    leading=leading,
                    asynchronously=asynchronously,
                )
                committed = SimpleNamespace(**row, current_node_id=None, error=None, completed_at=None)
                if on_commit is not None:
                    on_commit(conn, _snapshot_of(committed))
                if lease is not None and self.clock() - leased_at > self.executor.lease / 3:
                    # A slow transaction: the keeper cannot renew a row that is not committed
                    # (PostgreSQL), so the lease is renewed here, before the row is visible.
                    renew(conn, lease.owner, [run_id], until=self.clock() + self.executor.lease)
        except BaseException:
            if lease is not None and hold is not None:
                self.executor.forget(lease, hold)  # nothing was stored: a local hold only
            raise
        if lease is None:
            self._enqueued(run_id)
            return _snapshot_of(committed)
        # The first pass reads no checkpoint where the run has none: LangGraph is told so.
        saved = None if checkpointed else (None,)
        claimed = ClaimedRun(lease, workflow_id, "running", inputs_doc, configurable, fresh=True, saved=saved)
        return self._drive_created(claimed, hold)

    def _create_held(
        self, row: dict[str, Any], started: NewEvent, now: datetime, lease: Claim, inputs: Any
    ) -> dict[str, Any]:
        """:meth:`create_run` of a run this caller drives and no one else knows of yet (its id
        minted for it, nothing to store with it): its row and ``run.started`` are held by its
        drive and stored first with the drive's first transaction (the one that records its
        first interrupt or its end; on its own once held for ``FLUSH_AFTER_S``, should the
        first node run longer), which is synchronous and makes the run durable with it, where
        a transaction of their own cost a round trip (PostgreSQL) or a write transaction
        (SQLite) before the graph could start. Until then the run is in no list and no worker's
        queue; a process that dies first leaves nothing of it, as if it had died before the
        call. The lease (the row's, once stored) runs from here."""
        queue = created_queued(now, lease=lease, lease_until=self.clock() + self.executor.lease)
        created = (insert_run_write(row | queue), started, now)
        claimed = ClaimedRun(
            lease,
            row["workflow_id"],
            "running",
            inputs,
            row["configurable"],
            fresh=True,
            saved=(None,),
            created=created,
        )
        return self._drive_created(claimed, self.executor.adopt(lease))

    def _drive_created(self, claimed: ClaimedRun, hold: DriveSignal | None) -> dict[str, Any]:
        """Drive a run created here for this caller, under the lease it was created with; its
        snapshot at rest."""
        run_id = claimed.claim.run_id
        with self.foreground.aside():  # a request that drives its run is not counted meanwhile
            rested = self.executor.drive_claimed(run_id, claimed, hold)
        return _snapshot_of(rested) if rested is not None else self.snapshot(run_id)

    def fork(
        self,
        run_id: str,
        *,
        mode: str,
        from_seq: int | None = None,
        run_options_overlay: Mapping[str, Any] | None = None,
        principal: Principal,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Fork ``run_id`` (``mode`` ``replay`` or ``branch``) from ``from_seq``; see :mod:`.fork`.

        Events with ``sequence < from_seq`` are the fork's fixed history (``from_seq`` defaults
        to 0 for a replay and is required for a branch). Returns ``{runId, sourceRunId, fromSeq,
        mode, status}``; with ``wait`` the status is the fork's once it is at rest.

        Raises:
            ValidationError: bad mode or ``from_seq``, or an overlay on a replay.
            NotFound: no such run. ``IdTenantMismatch``: the run is another tenant's.
            ForkPointInvalid: ``from_seq`` is not in the log or lies past its terminal event.
        """
        result = fork_run(
            self,
            run_id,
            mode=mode,
            from_seq=from_seq,
            run_options_overlay=run_options_overlay,
            principal=principal,
        )
        if wait:
            self.executor.drive_until_idle(result["runId"])
            result = {**result, "status": self.snapshot(result["runId"])["status"]}
        return result

    def snapshot(self, run_id: str) -> dict[str, Any]:
        """The run's OpenWOP ``RunSnapshot``.

        A run waiting on an interrupt whose deadline has passed has that timeout applied
        first (the timer may not have woken yet): the snapshot never shows as answerable a
        gate that no answer can decide any more.
        """
        row = self._run_row(run_id)
        if row.status.startswith("waiting-") and self._time_out_due(run_id):
            row = self._run_row(run_id)
        snap = _snapshot_of(row)
        definition = (
            self.registry.get(row.workflow_id).definition if row.workflow_id in self.registry else None
        )
        support = self.definition_support
        if definition is not None and "channels" in definition and support is not None:
            channels = support.project_channels(definition, self.events(run_id))
            if channels:
                snap["channels"] = channels  # the channels it declares, folded from its log
        return snap

    def events(self, run_id: str, *, after: int = -1, limit: int | None = None) -> list[dict[str, Any]]:
        """The run's events with ``sequence > after``, as ``RunEventDoc`` dicts, in order."""
        self._run_row(run_id)
        with reading(self.engine) as conn:
            return [e.to_wire() for e in read_events(conn, run_id, after=after, limit=limit)]

    def result(self, run_id: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the run to complete and return its ``outputs`` (the graph's final state).

        Queued work of the run is driven on the calling thread when no worker holds it (as
        :meth:`create_run` does with ``wait=True``); a run waiting on an interrupt waits for
        someone to resolve it (another thread, process or HTTP caller), up to ``timeout`` seconds.

        Raises:
            NotFound: no such run.
            RunNotCompleted: the run failed (``error`` says why) or was cancelled.
            TimeoutError: the run had not ended after ``timeout`` seconds (``None``: no limit).
        """
        self._run_row(run_id)
        return wait_result(lambda: self._driven_snapshot(run_id), timeout)

    def list_runs(
        self,
        tenant: str,
        *,
        status: str | None = None,
        workflow_id: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        tags: Sequence[str] = (),
        cursor: str | None = None,
        limit: int | None = None,
    ) -> RunPage:
        """A page of ``tenant``'s runs (``RunSnapshot`` dicts), newest first.

        Filters combine (``tags``: runs carrying all of them; ``created_after`` inclusive,
        ``created_before`` exclusive). ``limit`` is clamped to 200 (default 50); pass the page's
        ``next_cursor`` as ``cursor`` for the next page (``None`` on the last).

        Raises:
            ValidationError: a malformed cursor, or a limit below 1.
        """
        where = RunFilter(status, workflow_id, utc_bound(created_after), utc_bound(created_before), tags)
        return run_page(self.engine, tenant, where, _snapshot_of, cursor=cursor, limit=limit)

    def answerable_interrupts(
        self,
        principal: Principal,
        *,
        workflow_id: str | None = None,
        kind: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> InterruptPage:
        """A page of the pending interrupts of ``principal``'s tenant that ``principal`` may
        answer now, oldest first: an approval gate only if it names them (or names no one) and
        they have not voted on it yet, and none whose deadline has passed.

        Raises:
            ValidationError: a malformed cursor, or a limit below 1.
        """
        where = PendingFilter(workflow_id, kind, utc_bound(created_after), utc_bound(created_before))
        return answerable_page(
            self.engine,
            principal,
            where,
            now=self.clock(),
            ref_kinds=self.ref_kinds,
            membership=self.membership,
            cursor=cursor,
            limit=limit,
        )

    def pending_interrupts(self, run_id: str) -> list[InterruptRecord]:
        """The run's interrupts still waiting for a resolution, oldest first."""
        with reading(self.engine) as conn:
            return interrupts_of_run(conn, run_id, statuses=["pending"])

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        """Every interrupt of the run, oldest first."""
        with reading(self.engine) as conn:
            return interrupts_of_run(conn, run_id)

    def cancel(
        self,
        run_id: str,
        *,
        reason: str | None = None,
        principal: Principal | None = None,
        parent_run_id: str | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Cancel a run: its pending interrupts become unresolvable; returns ``{runId, status}``.

        ``parent_run_id`` names the parent whose cancellation cascades here: ``run.cancelled``
        carries it as ``parentRunId`` (the official pairing with ``reason: parent-cancelled``).

        A run being driven is stopped: an async node is cancelled, a sync node at its next step
        boundary; ``run.cancelled`` is the last event of its log. With ``wait`` the call returns
        once no drive of the run is left in this process.

        Raises:
            RunTerminal: the run already completed, failed or was cancelled.
        """
        now = self.clock()
        with self.engine.begin() as conn:
            if not cancel_run_row(conn, run_id, now=now):
                status = run_status(conn, run_id)
                if status is None:
                    raise NotFound(f"no run {run_id!r}")
                raise RunTerminal(f"run {run_id!r} is already {status}", details={"runStatus": status})
            cancel_pending(conn, run_id, now=now)
            payload: dict[str, Any] = {}
            if reason:
                payload["reason"] = reason
            if principal is not None:
                payload["cancelledBy"] = principal.subject_id  # a string in runCancelled
            if parent_run_id is not None:
                payload["parentRunId"] = parent_run_id
            append(conn, run_id, [NewEvent("run.cancelled", payload)], now=now, close=True)
            notify(conn, CANCEL_CHANNEL, run_id)
        self.executor.cancel_local(run_id)
        self._settle_links(run_id)
        for ended in self.executor.after_end:
            ended(run_id, "cancelled")
        if wait:
            self.executor.wait_until_undriven(run_id)
        return {"runId": run_id, "status": "cancelled"}

    # -- interrupts -------------------------------------------------------------------------

    def resolve(
        self,
        run_id: str,
        node_id: str,
        resume_value: Any,
        principal: Principal,
        *,
        idempotency_key: str | None = None,
        key: str | None = None,
        wait: bool = True,
        on_decided: Callable[[Connection], None] | None = None,
        decided_write: HeldWrite | None = None,
        with_outputs: bool = False,
    ) -> dict[str, Any]:
        """Resolve (or vote on) the pending interrupt of ``node_id`` in ``run_id``.

        Returns ``{runId, nodeId, status}``: ``running`` when this call decided the gate (the
        run is queued), the waiting status for a vote that did not decide it. With ``wait`` the
        returned status is the run's once it is at rest again; with ``with_outputs`` too, a
        completed run adds its ``outputs`` (the graph's final state, as in its snapshot; a
        replayed request answers as the first did).
        ``on_decided(conn)`` is called in the transaction that decides the gate (or times it
        out), never for a vote that did not decide: what it writes commits with the decision,
        or not at all. ``decided_write``: likewise, a write that reads nothing back (a
        ``HeldWrite``); with ``wait``, on PostgreSQL it goes out in the round trip of the
        statement that decides (one round trip fewer), before the claim's outcome is read:
        a lost claim rolls it back with the rest. See
        :class:`~wop_langgraph.host.resolver.Resolver` for the contract.
        """
        # A caller that waits takes the lease where the decision queues the run, and drives it
        # without a claim of its own.
        decided = _both(on_decided, decided_write)
        lease = _LeaseAtDecision(self.executor, self.saver, on_decided, decided_write) if wait else None
        hook: EnqueueHook | None = lease if lease is not None else _on_decision(decided)
        try:
            result = self._resolver.resolve(
                run_id, node_id, resume_value, principal, idempotency_key=idempotency_key, key=key, hook=hook
            )
        except InterruptAlreadyResolved as exc:
            if lease is not None and (exc.details or {}).get("reason") == "timeout":
                # The late answer timed the gate out here: drive the run on past it.
                with self.foreground.aside():
                    self.executor.drive_claimed(run_id, lease.claimed, lease.hold)
            elif lease is not None:
                lease.hand_back()
            raise
        except BaseException:
            if lease is not None:
                lease.hand_back()
            raise
        if lease is not None and result["status"] == "running":
            with self.foreground.aside():
                rested = self.executor.drive_claimed(run_id, lease.claimed, lease.hold)
            if rested is not None:
                status, outputs = rested.status, rested.outputs  # as the drive wrote them: no read
            else:  # not driven by this call (a replayed request): as stored
                snap = self.snapshot(run_id)
                status = snap["status"]
                outputs = (snap.get("extensions") or {}).get(RESULT_EXTENSION, {}).get("outputs")
            result = {**result, "status": status}
            if with_outputs and status == "completed" and outputs is not None:
                result["outputs"] = outputs
        elif lease is not None:
            lease.hand_back()  # not expected: the lease is taken only where the run is queued
        return result

    def resolve_all(
        self, run_id: str, answers: Sequence[tuple[str, str | None, Any]], principal: Principal
    ) -> list[dict[str, Any]]:
        """Resolve several pending interrupts of ``run_id`` all or nothing, returning at commit.

        ``answers`` are ``(node_id, key, resume_value)`` (``key`` picks one of a node's
        interrupts, or ``None``). Each is checked as :meth:`resolve` checks one, in one
        transaction: if any is refused, none is applied. Workers drive the run on. See
        :meth:`~wop_langgraph.host.resolver.Resolver.resolve_all`.
        """
        return self._resolver.resolve_all(run_id, answers, principal)

    async def aresolve_all(
        self, run_id: str, answers: Sequence[tuple[str, str | None, Any]], principal: Principal
    ) -> list[dict[str, Any]]:
        """Async :meth:`resolve_all`."""
        return await asyncio.to_thread(self.resolve_all, run_id, answers, principal)

    def sweep(self, now: datetime | None = None, *, wait: bool = True) -> int:
        """Time out every pending interrupt whose deadline passed; returns how many.

        Approvals are resolved as rejected (``action: timeout``) whatever ``onTimeout`` says;
        other kinds expire and fail their node with ``interrupt_expired``. Safe to run from
        several processes at once: each interrupt is claimed by exactly one of them. A resolve
        that arrives after the deadline times the gate out itself: the sweep only makes the
        timeout visible sooner. With ``wait``, the runs are driven on (here, if no worker is).
        It also signs the periodic checkpoints of waiting runs that are due (see
        :meth:`use_receipt_keys`).
        """
        self.executor.reap_dead_local_leases()
        timed_out = self._resolver.sweep(now or self.clock())
        self.proofs.checkpoint_waiting()  # throttled: at most once per tenth of its interval
        if wait and timed_out:
            self.run_until_idle()
        return timed_out

    def sweep_now(self) -> int:
        """The workers' sweep: time out what is due and leave the driving to the workers."""
        return self.sweep(wait=False)

    def recover(self, *, wait: bool = True) -> int:
        """Queue every unfinished run that is neither queued nor waiting; returns how many.

        Runs are queued from the transaction that creates them and leave the queue only when a
        worker has driven them to rest, so after a crash they are still queued and their
        leases run out; this catches what an older version (or a database edited by hand) left.
        With ``wait`` the queued runs of the registered workflows are then driven here.
        """
        self.executor.reap_dead_local_leases()
        now = self.clock()
        with self.engine.begin() as conn:
            stragglers = unqueued_stragglers(conn)
            for run_id in stragglers:
                enqueue(conn, run_id, now=now)
        for run_id in stragglers:
            self._enqueued(run_id)
        if wait:
            return max(self.run_until_idle(), len(stragglers))
        return len(stragglers)

    # -- proofs -----------------------------------------------------------------------------

    def use_receipt_keys(self, keys: ReceiptKeys | None, *, checkpoint_every: float | None = None) -> None:
        """Sign decision receipts and checkpoints with ``keys`` from now on (``None``: stop).

        A run waiting for a person gets a fresh signed checkpoint of its log whenever its
        newest one is ``checkpoint_every`` seconds old (default 3600, or as set before), by
        the host's deadline timer and sweep (see :meth:`checkpoint_waiting`).

        Raises:
            ValueError: ``checkpoint_every`` is not positive.
        """
        self.proofs.use(keys, checkpoint_every)

    def checkpoint_waiting(self) -> int:
        """Sign a fresh checkpoint now for each waiting run whose newest checkpoint is older
        than the interval (as the timer does on its own); returns how many were signed."""
        return self.proofs.checkpoint_waiting(force=True)

    def verify(self, run_id: str) -> Report:
        """Check ``run_id``'s proof in place: its chain, receipts and checkpoints against this
        host's keys, and its interrupts against their receipts (see ``wop_langgraph.proof``).

        Raises:
            NotFound: no such run.
        """
        return self.proofs.verify(run_id)

    def export_proof(self, run_id: str) -> dict[str, Any]:
        """The self-contained proof bundle of ``run_id`` (events, receipts, checkpoints, keys).

        Raises:
            NotFound: no such run.
        """
        return self.proofs.export(run_id)

    async def averify(self, run_id: str) -> Report:
        """Async :meth:`verify`."""
        return await asyncio.to_thread(self.verify, run_id)

    async def acheckpoint_waiting(self) -> int:
        """Async :meth:`checkpoint_waiting`."""
        return await asyncio.to_thread(self.checkpoint_waiting)

    async def aexport_proof(self, run_id: str) -> dict[str, Any]:
        """Async :meth:`export_proof`."""
        return await asyncio.to_thread(self.export_proof, run_id)

    # -- async twins ------------------------------------------------------------------------

    async def acreate_run(self, workflow_id: str, inputs: Any = None, **options: Any) -> dict[str, Any]:
        """Async :meth:`create_run` (the event loop never waits on the database or the graph)."""
        return await asyncio.to_thread(self.create_run, workflow_id, inputs, **options)

    async def aresolve(
        self, run_id: str, node_id: str, resume_value: Any, principal: Principal, **options: Any
    ) -> dict[str, Any]:
        """Async :meth:`resolve`."""
        return await asyncio.to_thread(self.resolve, run_id, node_id, resume_value, principal, **options)

    async def afork(self, run_id: str, **options: Any) -> dict[str, Any]:
        """Async :meth:`fork`."""
        return await asyncio.to_thread(self.fork, run_id, **options)

    async def aresult(self, run_id: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Async :meth:`result`: woken by the run's end as it commits, not by polling."""
        await asyncio.to_thread(self._run_row, run_id)
        return await await_result(
            lambda: asyncio.to_thread(self._driven_snapshot, run_id),
            signals_for(self.engine).watch(run_id),
            timeout,
        )

    async def alist_runs(self, tenant: str, **options: Any) -> RunPage:
        """Async :meth:`list_runs`."""
        return await asyncio.to_thread(functools.partial(self.list_runs, tenant, **options))

    async def aanswerable_interrupts(self, principal: Principal, **options: Any) -> InterruptPage:
        """Async :meth:`answerable_interrupts`."""
        return await asyncio.to_thread(functools.partial(self.answerable_interrupts, principal, **options))

    async def asnapshot(self, run_id: str) -> dict[str, Any]:
        """Async :meth:`snapshot`."""
        return await asyncio.to_thread(self.snapshot, run_id)

    async def aevents(
        self, run_id: str, *, after: int = -1, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Async :meth:`events`."""
        return await asyncio.to_thread(self.events, run_id, after=after, limit=limit)

    async def acancel(self, run_id: str, **options: Any) -> dict[str, Any]:
        """Async :meth:`cancel`."""
        return await asyncio.to_thread(self.cancel, run_id, **options)

    async def asweep(self, now: datetime | None = None, **options: Any) -> int:
        """Async :meth:`sweep`."""
        return await asyncio.to_thread(self.sweep, now, **options)

    # -- internals --------------------------------------------------------------------------

    def _next_deadline(self) -> datetime | None:
        """The timer's next wake-up: now if a run is owed a drive, else the earliest deadline."""
        with self._owed_guard:
            if self._owed:
                return self.clock()
        with reading(self.engine) as conn:
            return next_deadline(conn)

    def _apply_due(self, now: datetime) -> int:
        """The timer's work: time out what is due, then drive the runs owed (without workers)."""
        timed_out = self._resolver.time_out_due(now)
        with self._owed_guard:
            owed = [*timed_out, *(r for r in self._owed if r not in timed_out)]
            self._owed.clear()
        if self.drive_timeouts and self._pool is None:
            for run_id in owed:
                claimed = self.executor.claim(run_id)  # None: another process drives it
                if claimed is not None:
                    self.executor.drive(claimed)
        return len(owed)

    def _time_out_due(self, run_id: str) -> bool:
        """Apply the run's due timeouts now, unless someone else (the timer) is; whether any was
        due. The timer drives the run on (see :meth:`_apply_due`)."""
        now = self.clock()
        with reading(self.engine) as conn:
            if not expired_pending(conn, now, limit=1, run_id=run_id):
                return False
        # Whoever times it out first, its commit is seen once this returns: a claim of the
        # interrupt waits for one in flight.
        if self._resolver.time_out_due(now, run_id=run_id):
            with self._owed_guard:
                self._owed.add(run_id)
            self._deadlines.poke()
        return True

    def _enqueued(self, run_id: str, wake: bool = True) -> None:
        """A transaction queued ``run_id`` and committed: wake a local worker (unless ``wake`` is
        false: the caller holds the run's lease and drives it)."""
        self.executor.touch(run_id)
        if wake and self._pool is not None:
            self._pool.wake()

    @property
    def has_workers(self) -> bool:
        """Whether worker threads of this host drive queued runs."""
        return self._pool is not None

    def _settle_links(self, run_id: str) -> None:
        """Carry the run's end across core.subWorkflow parent/child links (nothing to do on a
        host with no definitions: they hand over :attr:`definition_support` when registered)."""
        if self.definition_support is not None:
            self.definition_support.settle_links(self, run_id)

    def _check_configurable(self, configurable: dict[str, Any]) -> None:
        validate_against_schema(configurable, configurable_schema(), what="configurable")
        threshold = run_option(configurable, "escalationThreshold")
        if threshold is not None and threshold > 100:
            raise ValidationError(
                "configurable.run.escalationThreshold is a percentage from 0 to 100",
                details={"path": "/configurable/run/escalationThreshold"},
            )

    def _driven_snapshot(self, run_id: str) -> dict[str, Any]:
        """The run's snapshot, after driving its queued work here if this host has no workers
        (work a resolution queued while a waiter waits for the run's result)."""
        if not self.has_workers:
            self.executor.drive_until_idle(run_id)
        return self.snapshot(run_id)

    def _run_row(self, run_id: str) -> Any:
        self.executor.store_created(run_id)  # (a run created here whose drive may hold its row)
        with reading(self.engine) as conn:
            row = get_run(conn, run_id)
        if row is None:
            raise NotFound(f"no run {run_id!r}")
        return row


def _snapshot_of(row: Any) -> dict[str, Any]:
    """The ``RunSnapshot`` of a run row."""
    snap: dict[str, Any] = {
        "runId": row.run_id,
        "workflowId": row.workflow_id,
        "status": row.status,
        "owner": row.owner,
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "startedAt": iso_z(row.created_at),
    }
    if row.current_node_id and row.status.startswith("waiting-"):
        snap["currentNodeId"] = row.current_node_id
    if row.error:
        snap["error"] = {k: v for k, v in row.error.items() if k in ("code", "message", "details")}
    for name, value in (
        ("configurable", row.configurable),
        ("tags", row.tags),
        ("metadata", row.run_metadata),
    ):
        if value is not None:
            snap[name] = value
    if row.completed_at is not None:
        snap["completedAt"] = iso_z(row.completed_at)
    if row.status == "completed" and row.outputs is not None:
        # The closed v2 snapshot has no `outputs`; `extensions` is its seat for host state.
        snap["extensions"] = {RESULT_EXTENSION: {"outputs": row.outputs}}
    return snap


class _OnDecision:
    """Calls a caller's function in the deciding transaction (an ``EnqueueHook`` taking no lease)."""

    def __init__(self, call: Callable[[Connection], None]) -> None:
        self._call = call

    def reads(self, run_id: str) -> Reads | None:
        return None

    def queued(self, conn: Connection, run_id: str) -> None:
        self._call(conn)

    def committed(self) -> bool:
        return False


def _on_decision(call: Callable[[Connection], None] | None) -> EnqueueHook | None:
    return None if call is None else _OnDecision(call)


def _both(
    first: Callable[[Connection], None] | None, then: Callable[[Connection], None] | None
) -> Callable[[Connection], None] | None:
    """One call of ``first`` then ``then`` (either may be ``None``)."""
    if first is None or then is None:
        return first or then

    def both(conn: Connection) -> None:
        first(conn)
        then(conn)

    return both


class _LeaseAtDecision:
    """Takes a run's lease in the transaction that queues it (an ``EnqueueHook``).

    The claim counts only once that transaction has committed: only then is it held
    (``Executor.adopt``: renewed, reachable by cancel) and handed to the drive. A claim made
    in a transaction that rolled back never existed, and nothing is released for it. (If the
    commit's outcome is unknown, a lost connection, the claim is not held: the lease runs out
    and a worker continues the run.)
    """

    def __init__(
        self,
        executor: Executor,
        saver: object,
        also: Callable[[Connection], None] | None = None,
        riding: HeldWrite | None = None,
    ) -> None:
        self._executor = executor
        self._saver = saver
        self._also = also
        #: A write sent with the claim's reads (it reads nothing back), else run with ``also``.
        self._riding = riding
        self._pending: PendingClaim | None = None
        self._taken: ClaimedRun | None = None
        self.claimed: ClaimedRun | None = None
        self.hold: DriveSignal | None = None

    def reads(self, run_id: str) -> Reads | None:
        # The claim, with the work the drive is to deliver and the checkpoint it continues
        # from, read in the round trip of the statement that queues the run.
        self._pending = self._executor.claim_reads(run_id, self._saver)
        if self._pending is None:
            return None
        reads = self._pending.reads
        if self._riding is not None:
            # The caller's write goes in that round trip too (on PostgreSQL, a round trip of
            # its own less): if the claim is lost, the transaction rolls it back with the rest.
            reads.also, self._riding = (*reads.also, self._riding), None
        return reads

    def queued(self, conn: Connection, run_id: str) -> None:
        if self._also is not None:
            self._also(conn)
        if self._riding is not None:  # (no reads were asked for: a timeout)
            self._riding(conn)
        pending, self._pending = self._pending, None
        if pending is None:  # (a timeout queues the run without asking for reads)
            pending = self._executor.claim_reads(run_id, self._saver)
            if pending is None:
                return
        if pending.reads.rows is None:  # not run with the statement that queued the run
            pending.reads.run(conn)
        self._taken = pending.claimed()

    def committed(self) -> bool:
        if self._taken is not None:
            self.hold = self._executor.adopt(self._taken.claim)
            self.claimed, self._taken = self._taken, None
        return self.claimed is not None

    def hand_back(self) -> None:
        """Release a committed claim the caller will not drive (it failed after the commit)."""
        if self.claimed is not None and self.hold is not None:
            self._executor.release(self.claimed.claim, self.hold)
            self.claimed = self.hold = None
