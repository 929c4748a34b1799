"""The LangGraph Server API's operations, each one or more host operations (blocking; routes run them
on the thread pool).

A LangGraph thread is a sequence of OpenWOP runs (:mod:`wop_langgraph.store.lg_threads`): a new
input starts the thread's next OpenWOP run (``WopHost.create_run``, whose transaction also moves
the thread to it and seeds its state with where the previous run ended); a ``command.resume``
resolves the current run's pending interrupts (``WopHost.resolve``: the claim, eligibility,
deadline and audit of any resolve); a cancel or Agent Inbox's "ignore" cancels the current run
(``WopHost.cancel``). A LangGraph run is the OpenWOP run it started or resumed: same id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, Final

from anyio import CapacityLimiter
from langgraph.pregel import Pregel
from langgraph.types import StateSnapshot

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.driver import jsonable
from wop_langgraph.host.validation import require_storable
from wop_langgraph.protocol.errors import NotFound, RunTerminal, ValidationError
from wop_langgraph.protocol.ids import mint_tenant_id, unproject_id
from wop_langgraph.protocol.snapshot import RESULT_EXTENSION
from wop_langgraph.server.langgraph_api.enqueue import ENQUEUE, RunQueue
from wop_langgraph.server.langgraph_api.errors import PendingInterrupts, RunBusy, ThreadBusy, Unsupported
from wop_langgraph.server.langgraph_api.relay import CustomRelay
from wop_langgraph.server.langgraph_api.resume import answers, approval_resume
from wop_langgraph.server.langgraph_api.shapes import (
    assistant_uuid,
    interrupt_doc,
    state_doc,
    thread_doc,
    thread_status,
)
from wop_langgraph.store.engine import Connection, one_statement, reading
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.store.lg_queue import (
    QueuedRun,
    cancel_queued,
    forget_queued,
    insert_queued,
    queued_of_thread,
    queued_status,
)
from wop_langgraph.store.lg_threads import (
    ThreadRow,
    ThreadRunRow,
    ThreadRunStart,
    delete_thread,
    get_thread,
    hide_thread_run,
    insert_thread,
    run_rest,
    run_with_checkpoint,
    runs_of_thread,
    seed_checkpoint,
    tenant_threads,
    thread_run,
    thread_with_pending,
    touch_thread,
)

__all__ = ["END", "LangGraphService", "Started"]

END = "__end__"
_RESTING_PREFIX = "waiting-"
_TERMINAL = ("completed", "failed", "cancelled")
_THREAD_ID_MAX = 128
_SORT_KEYS = ("thread_id", "status", "created_at", "updated_at")


@dataclass(frozen=True)
class Started:
    """A LangGraph run that a request started (a new OpenWOP run) or resumed (the thread's current one).

    ``baseline`` is the run's latest checkpoint id before the request: a stream shows what
    comes after it. ``rested``: the OpenWOP status the run rested in, when the request drove it
    to rest itself (``None``: a worker drives it); ``outcome``: then also what ``runs/wait``
    answers (:meth:`LangGraphService.outcome`), read in the same call. ``outputs``: the final
    state the drive wrote, when it completed the run (the host hands it back). ``created``: the
    request created the run (so, resting from its own drive, none of its interrupts was
    answered yet).
    """

    thread_id: str
    run_id: str
    workflow_id: str
    baseline: str | None
    #: How many ``custom`` chunks the run had written before the request (not shown again).
    custom_after: int = 0
    rested: str | None = None
    outcome: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    created: bool = False


def is_resting(status: str) -> bool:
    """Whether an OpenWOP run status is at rest (waiting on an interrupt, or ended)."""
    return status.startswith(_RESTING_PREFIX) or status in _TERMINAL


_BUSY: Final = "running"


def _contains(document: Any, pattern: Any) -> bool:
    """JSON containment, as LangGraph's ``metadata`` / ``values`` filters read it."""
    if isinstance(pattern, Mapping):
        return isinstance(document, Mapping) and all(
            key in document and _contains(document[key], value) for key, value in pattern.items()
        )
    return bool(document == pattern)


class LangGraphService:
    """The LangGraph Server API over one :class:`WopHost`.

    ``wait_drives``: how many ``runs/wait`` requests may drive their run to rest themselves at
    once (the library's ``wait=True`` path: the run is inserted, or decided, already leased
    here and driven in the request's call, without a hand-off to a worker, a claim or reads of
    its status), each in a thread of its own limiter (:attr:`drive_limiter`), so that they never
    take the threads other requests are answered on. Beyond that, and with ``0`` (a server
    whose runs are driven by ``worker`` processes), the run is queued for the workers like any
    other and the request waits for it.

    ``created_without_callback(run_id)`` is told of each run this service is about to create
    (none has a ``callbackUrl``), before it exists (the callback delivery then need not read
    the run's row when it suspends).
    """

    def __init__(
        self,
        host: WopHost,
        *,
        wait_drives: int = 0,
        created_without_callback: Callable[[str], None] | None = None,
    ) -> None:
        self.host = host
        self._created_without_callback = created_without_callback
        self.drive_limiter = CapacityLimiter(wait_drives) if wait_drives > 0 else None
        #: Starts enqueued runs when their turn comes (its scan is started by the app).
        self.queue = RunQueue(host, assistant_uuid)
        #: ``custom`` chunks of the runs this process drives, for their streams.
        self.relay = CustomRelay(host.engine)
        host.executor.on_custom.append(self.relay.publish)
        host.executor.custom_wanted.append(self.relay.wants)
        #: When the assistants (the registered graphs) were created, as far as clients can tell.
        self.started_at = host.clock()

    # -- assistants ----------------------------------------------------------------------------

    def graph_ids(self) -> list[str]:
        return self.host.registry.workflow_ids()

    def graph_id(self, assistant_id: str) -> str:
        """The registered graph an assistant id names (its name, or its stable UUID).

        Raises:
            NotFound: no such graph.
        """
        if assistant_id in self.host.registry:
            return assistant_id
        for graph_id in self.graph_ids():
            if assistant_uuid(graph_id) == assistant_id:
                return graph_id
        raise NotFound(f"no assistant {assistant_id!r}: give a registered graph's name or its assistant_id")

    def _graph(self, workflow_id: str) -> Pregel[Any, Any, Any, Any]:
        return self.host.registry.get(workflow_id).graph

    # -- threads -------------------------------------------------------------------------------

    def thread(self, principal: Principal, thread_id: str) -> ThreadRow:
        """The caller's thread; another tenant's is as missing as one that never existed.

        Raises:
            NotFound: no such thread for this caller.
        """
        with reading(self.host.engine) as conn:
            row = get_thread(conn, thread_id)
        return _own(row, principal, thread_id)

    def _thread_with_pending(
        self, principal: Principal, thread_id: str
    ) -> tuple[ThreadRow, list[InterruptRecord] | None]:
        """:meth:`thread`, and the pending interrupts of its current run, in one read; ``None``
        when that read found none, or found another run current (the caller reads them itself:
        an empty answer cannot tell whose run it was).

        Raises:
            NotFound: no such thread for this caller.
        """
        # (begun: on PostgreSQL, still in autocommit, the two go out in one pipeline)
        with reading(self.host.engine) as conn, conn.begin():
            row, pending = thread_with_pending(conn, thread_id)
        mine = _own(row, principal, thread_id)
        ours = pending and all(r.run_id == mine.run_id for r in pending)
        return mine, (pending if ours else None)

    def create_thread(
        self, principal: Principal, thread_id: str | None, metadata: Any, if_exists: str | None
    ) -> dict[str, Any]:
        """``POST /threads``; an existing id is ``409`` unless ``if_exists`` is ``do_nothing``.

        Raises:
            ValidationError: a bad id or metadata.
            ThreadBusy: the id is taken.
        """
        tid = thread_id or str(uuid.uuid4())
        if not isinstance(tid, str) or not 0 < len(tid) <= _THREAD_ID_MAX or "/" in tid:
            raise ValidationError(
                f"thread_id must be a string of 1 to {_THREAD_ID_MAX} characters without '/'",
                details={"field": "thread_id"},
            )
        meta = self._metadata(metadata)
        now = self.host.clock()
        # An id minted here (a random UUID) is free: only a given one is looked up first, and
        # the insert alone is one statement (on PostgreSQL one round trip, in autocommit).
        existing = None
        if thread_id is None:
            with one_statement(self.host.engine) as conn, conn.begin():
                insert_thread(conn, tid, principal.tenant, meta, now=now)
        else:
            with self.host.engine.begin() as conn:
                existing = get_thread(conn, tid)
                if existing is None:
                    insert_thread(conn, tid, principal.tenant, meta, now=now)
        if existing is not None:
            if if_exists == "do_nothing" and existing.tenant == principal.tenant:
                return self.thread_doc(existing)
            raise ThreadBusy(f"thread {tid!r} already exists", details={"thread_id": tid})
        # The row as inserted (no run yet): nothing to read back.
        row = ThreadRow(
            thread_id=tid,
            tenant=principal.tenant,
            metadata=meta,
            run_id=None,
            created_at=now,
            updated_at=now,
            run_status=None,
            run_updated_at=None,
            workflow_id=None,
        )
        return thread_doc(row, None, set())

    @staticmethod
    def _metadata(metadata: Any) -> dict[str, Any]:
        if metadata is None:
            return {}
        if not isinstance(metadata, dict):
            raise ValidationError("metadata must be an object", details={"field": "metadata"})
        require_storable(metadata, "/metadata")
        return metadata

    def current_state(self, row: ThreadRow) -> tuple[StateSnapshot | None, set[str]]:
        """The state of the thread's current run, and the LangGraph ids of its pending interrupts."""
        if row.run_id is None or row.workflow_id is None:
            return None, set()
        snapshot = self._graph(row.workflow_id).get_state({"configurable": {"thread_id": row.run_id}})
        pending: set[str] = set()
        if (row.run_status or "").startswith(_RESTING_PREFIX):
            pending = {r.lg_interrupt_id for r in self.host.pending_interrupts(row.run_id)}
        return snapshot, pending

    def thread_doc(self, row: ThreadRow) -> dict[str, Any]:
        snapshot, pending = self.current_state(row)
        return thread_doc(row, snapshot, pending)

    def search(self, principal: Principal, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``POST /threads/search``: containment on ``metadata`` / ``values``, ``status``, paging, sort."""
        metadata, values, status = body.get("metadata"), body.get("values"), body.get("status")
        limit, offset = (
            _bounded(body.get("limit", 10), "limit", 1, 1000),
            _bounded(body.get("offset", 0), "offset", 0, 10**9),
        )
        sort_by = body.get("sort_by") or "updated_at"
        if sort_by not in _SORT_KEYS:
            raise ValidationError(
                f"sort_by must be one of {', '.join(_SORT_KEYS)}", details={"field": "sort_by"}
            )
        descending = (body.get("sort_order") or "desc") != "asc"
        with reading(self.host.engine) as conn:
            rows = tenant_threads(conn, principal.tenant)
        rows = [
            r
            for r in rows
            if (metadata is None or _contains(r.metadata, metadata))
            and (status is None or thread_status(r.run_status, r.run_queued, r.runs_behind) == status)
        ]

        def key(row: ThreadRow) -> Any:
            if sort_by == "status":
                return thread_status(row.run_status, row.run_queued, row.runs_behind)
            if sort_by == "updated_at":
                return max(row.updated_at, row.run_updated_at or row.updated_at)
            return getattr(row, sort_by)

        rows.sort(key=key, reverse=descending)
        if values is None:
            return [self.thread_doc(r) for r in rows[offset : offset + limit]]
        docs = (self.thread_doc(r) for r in rows)
        return [d for d in docs if _contains(d["values"], values)][offset : offset + limit]

    def state(self, principal: Principal, thread_id: str) -> dict[str, Any]:
        """``GET /threads/{id}/state``."""
        row = self.thread(principal, thread_id)
        snapshot, pending = self.current_state(row)
        return state_doc(thread_id, snapshot, pending)

    def state_at(self, principal: Principal, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
        """``GET /threads/{id}/state/{checkpoint_id}``: the thread's state at one of its checkpoints.

        Raises:
            NotFound: no such checkpoint in the thread's runs.
        """
        row = self.thread(principal, thread_id)
        _, pending = self.current_state(row)
        with reading(self.host.engine) as conn:
            runs = runs_of_thread(conn, thread_id)
        for run in runs:
            configurable = {"thread_id": run.run_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}
            snapshot = self._graph(run.workflow_id).get_state({"configurable": configurable})
            if snapshot.created_at is not None:
                return state_doc(thread_id, snapshot, pending if run.run_id == row.run_id else ())
        raise NotFound(f"no checkpoint {checkpoint_id!r} on thread {thread_id!r}")

    def history(
        self, principal: Principal, thread_id: str, limit: int, before: str | None
    ) -> list[dict[str, Any]]:
        """``POST /threads/{id}/history``: the thread's states newest first, across its runs."""
        row = self.thread(principal, thread_id)
        _, pending = self.current_state(row)
        with reading(self.host.engine) as conn:
            runs = runs_of_thread(conn, thread_id)
        states: list[dict[str, Any]] = []
        seen: set[str] = set()
        passed = before is None
        for run in runs:
            graph = self._graph(run.workflow_id)
            for snapshot in graph.get_state_history({"configurable": {"thread_id": run.run_id}}):
                checkpoint_id = str(snapshot.config["configurable"]["checkpoint_id"])
                if checkpoint_id in seen:
                    continue  # a run's first checkpoint is a copy of its predecessor's last
                seen.add(checkpoint_id)
                if not passed:
                    passed = checkpoint_id == before
                    continue
                states.append(state_doc(thread_id, snapshot, pending if run.run_id == row.run_id else ()))
                if len(states) >= limit:
                    return states
        return states

    # -- runs ----------------------------------------------------------------------------------

    def patch_thread(self, principal: Principal, thread_id: str, metadata: Any) -> dict[str, Any]:
        """``PATCH /threads/{id}``: merge ``metadata`` into the thread's."""
        row = self.thread(principal, thread_id)
        merged = {**row.metadata, **self._metadata(metadata)}
        with self.host.engine.begin() as conn:
            touch_thread(conn, thread_id, now=self.host.clock(), metadata=merged)
        return self.thread_doc(self.thread(principal, thread_id))

    def delete(self, principal: Principal, thread_id: str) -> None:
        """``DELETE /threads/{id}``: cancel its current run if it has not ended, then forget the thread."""
        row = self.thread(principal, thread_id)
        if row.run_id is not None and row.run_status not in _TERMINAL:
            self.cancel_run_quietly(row.run_id, principal)
        with self.host.engine.begin() as conn:
            delete_thread(conn, thread_id)

    def runs(self, principal: Principal, thread_id: str) -> list[ThreadRunRow]:
        """The thread's runs newest first, with those still queued (or cancelled before they started)."""
        self.thread(principal, thread_id)
        with reading(self.host.engine) as conn:
            # Queued first: a run that starts between the two reads is then among the started.
            waiting = [_queued_row(q) for q in queued_of_thread(conn, thread_id)]
            started = runs_of_thread(conn, thread_id, listed_only=True)
        ids = {r.run_id for r in started}
        rows = started + [r for r in waiting if r.run_id not in ids]
        return sorted(rows, key=lambda r: (r.created_at, r.run_id), reverse=True)

    def delete_run(self, principal: Principal, thread_id: str, wire_run_id: str) -> None:
        """``DELETE /threads/{id}/runs/{run}``: hide an ended run from the thread's run routes.

        Only an ended run (completed, failed, cancelled) can be deleted: a pending, running or
        waiting one is ``409`` (cancel it first), since a waiting run is the one a resume
        continues. The OpenWOP run, its event log (the audit trail) and the thread's checkpoints
        are kept; the run is gone from ``runs.list`` / ``runs.get`` / ``join`` / ``stream``.

        Raises:
            NotFound: no such run (or it was deleted already).
            RunBusy: the run has not ended.
        """
        run = self.run(principal, thread_id, wire_run_id)
        if run.status not in _TERMINAL:  # an ended run never starts again: no race with the hide
            raise RunBusy(
                f"run {wire_run_id!r} has not ended ({run.status}): cancel it before deleting it",
                details={"run_id": wire_run_id, "status": run.status},
            )
        with self.host.engine.begin() as conn:
            if run.multitask_strategy == ENQUEUE and queued_status(conn, run.run_id) is not None:
                forget_queued(conn, run.run_id)  # cancelled before it started: no OpenWOP run
                return
            hidden = hide_thread_run(conn, run.run_id, deleted_by=principal.subject_id, now=self.host.clock())
        if not hidden:
            raise NotFound(f"no run {wire_run_id!r} on thread {thread_id!r}")

    def run(self, principal: Principal, thread_id: str, wire_run_id: str) -> ThreadRunRow:
        """One run of the caller's thread, by its id in path form.

        Raises:
            NotFound: no such thread for this caller, or no such run on it.
        """
        self.thread(principal, thread_id)
        try:
            run_id = unproject_id(wire_run_id)
        except ValidationError:
            raise NotFound(f"no run {wire_run_id!r} on thread {thread_id!r}") from None
        with reading(self.host.engine) as conn:
            # Queued first: the transaction that starts a queued run removes its row, so a
            # run that starts between the two reads is found by the second.
            queued = queued_of_thread(conn, thread_id, run_id)
            found = _queued_row(queued[0]) if queued else thread_run(conn, thread_id, run_id)
        if found is None:
            raise NotFound(f"no run {wire_run_id!r} on thread {thread_id!r}")
        return found

    def start(
        self,
        principal: Principal,
        thread_id: str,
        body: Mapping[str, Any],
        *,
        wait: bool = False,
        drive: bool = False,
        custom: bool = False,
    ) -> Started:
        """``POST /threads/{id}/runs[/stream|/wait]``: start the thread's next run, or resume it.

        ``wait`` (``runs/wait``): the caller waits for the run to rest and reads only its outcome
        (no stream baseline is read); with ``drive`` too, this call drives the run to rest and
        reads the outcome (``Started.rested``, ``Started.outcome``; a resume answering several
        interrupts is left to the workers). ``custom``: the caller streams the ``custom`` mode:
        the run is watched (:meth:`CustomRelay.watch`) before it is started or resumed, and the
        stream unwatches it when it ends (an error here unwatches it at once).

        Raises:
            NotFound: no such thread (without ``if_not_exists: create``) or assistant.
            ThreadBusy: the thread's current run is still going (``multitask_strategy: reject``).
            PendingInterrupts: new input while interrupts wait, or a resume that does not fit them.
            Unsupported: an option this host does not offer.
        """
        _refuse_unsupported(body)
        graph_id = self.graph_id(_required_str(body, "assistant_id"))
        command = body.get("command")
        branch = _branch_point(body)
        if branch is not None and command is not None:
            raise Unsupported(
                "checkpoint with command is not supported: a resume answers the thread's current run",
                details={"field": "checkpoint"},
            )
        # A resume answers the current run's pending interrupts: read with the thread.
        pending: list[InterruptRecord] | None = None
        try:
            if isinstance(command, dict) and "resume" in command:
                row, pending = self._thread_with_pending(principal, thread_id)
            else:
                row = self.thread(principal, thread_id)
        except NotFound:
            if body.get("if_not_exists") != "create":
                raise
            self.create_thread(principal, thread_id, None, "do_nothing")
            row = self.thread(principal, thread_id)
        drive = wait and drive
        # The run a streamed custom mode watches: the current one for a resume, else a new id.
        watched = (
            (row.run_id if command is not None else mint_tenant_id(principal.tenant)) if custom else None
        )
        if watched is not None:
            self.relay.watch(watched)
        try:
            if command is not None:
                started = self._command(principal, row, command, wait=wait, drive=drive, pending=pending)
            else:
                started = self._next_run(
                    principal, row, graph_id, body, drive=drive, run_id=watched, branch=branch
                )
        except BaseException:
            if watched is not None:
                self.relay.unwatch(watched)
            raise
        if started.rested is not None and is_resting(started.rested):
            started = replace(started, outcome=self.outcome(started))
        return started

    def _command(
        self,
        principal: Principal,
        row: ThreadRow,
        command: Any,
        *,
        wait: bool,
        drive: bool,
        pending: list[InterruptRecord] | None = None,
    ) -> Started:
        """A ``command``: resume the current run's interrupts (``pending``: as read with
        ``row``, if they were), or end it (``goto``)."""
        if not isinstance(command, dict):
            raise ValidationError("command must be an object", details={"field": "command"})
        if command.get("update") is not None:
            raise Unsupported(
                "command.update is not supported: state changes go through the graph's own nodes"
            )
        goto = command.get("goto")
        status = _effective(row)
        if status in ("pending", "running"):
            raise ThreadBusy(f"thread {row.thread_id!r} is busy", details={"thread_id": row.thread_id})
        if row.run_id is None or row.workflow_id is None or not status.startswith(_RESTING_PREFIX):
            raise PendingInterrupts(
                f"thread {row.thread_id!r} has no pending interrupt to resume",
                details={"thread_id": row.thread_id},
            )
        baseline = None if wait else self.latest_checkpoint(row.workflow_id, row.run_id)
        custom_after = self.relay.position(row.run_id)
        rested = None
        outputs: dict[str, Any] | None = None
        touched: list[bool] = []
        if goto is not None:
            if goto not in (END, [END]) or "resume" in command:
                raise Unsupported('command.goto is supported only as "__end__" (end the interrupted run)')
            self.host.cancel(
                row.run_id, reason="ended by command.goto __end__", principal=principal, wait=False
            )
        elif "resume" in command:
            # Every value is translated (and a bad one refused) before anything is applied, and
            # the host applies them all or none (one transaction): a refused answer leaves the
            # others pending, and of two concurrent batches one wins whole.
            if pending is None:
                pending = self.host.pending_interrupts(row.run_id)
            resolves = [
                (record.node_id, record.key, approval_resume(record, value))
                for record, value in answers(pending, command["resume"])
            ]
            if len(resolves) == 1:
                # The decision is driven here when the caller drives (the common case); the
                # thread is marked updated in the deciding transaction (in the round trip of
                # the statement that decides, on PostgreSQL: the write reads nothing back).
                node_id, key, value = resolves[0]

                def touch(conn: Connection) -> None:
                    touched.append(True)
                    touch_thread(conn, row.thread_id, now=self.host.clock())

                result = self.host.resolve(
                    row.run_id,
                    node_id,
                    value,
                    principal,
                    key=key,
                    wait=drive,
                    decided_write=touch,
                    with_outputs=True,
                )
                if drive:
                    rested, outputs = str(result["status"]), result.get("outputs")
            else:
                # Several decisions are applied whole; the run is left to the workers.
                self.host.resolve_all(row.run_id, resolves, principal)
        else:
            raise ValidationError("command needs resume or goto", details={"field": "command"})
        if not touched:  # (a vote that did not decide, several decisions, a cancel)
            with one_statement(self.host.engine) as conn, conn.begin():
                touch_thread(conn, row.thread_id, now=self.host.clock())
        if goto is not None:
            self.queue.promote(row.thread_id)  # the next enqueued run's turn
        return Started(
            row.thread_id, row.run_id, row.workflow_id, baseline, custom_after, rested, outputs=outputs
        )

    def _next_run(
        self,
        principal: Principal,
        row: ThreadRow,
        graph_id: str,
        body: Mapping[str, Any],
        *,
        drive: bool,
        run_id: str | None = None,
        branch: str | None = None,
    ) -> Started:
        """A new input: the thread's next run, from the state its current run left, or from
        its checkpoint ``branch`` (agent-chat-ui's regenerate and edit)."""
        if body.get("multitask_strategy") == ENQUEUE:
            if branch is not None:
                raise Unsupported(
                    "checkpoint with multitask_strategy enqueue is not supported",
                    details={"field": "checkpoint"},
                )
            return self._enqueue(principal, row, graph_id, body, run_id=run_id)
        status = _effective(row)
        if status in ("pending", "running") or row.runs_behind:
            raise ThreadBusy(
                f"thread {row.thread_id!r} is busy (multitask_strategy reject)",
                details={"thread_id": row.thread_id},
            )
        if status.startswith(_RESTING_PREFIX):
            raise PendingInterrupts(
                f"thread {row.thread_id!r} waits on interrupts: resume them with command.resume, or end "
                "the run "
                'with POST /threads/{thread_id}/state {"values": null, "as_node": "__end__"}',
                details={"thread_id": row.thread_id},
            )
        previous = source = row.run_id
        if branch is not None:
            with reading(self.host.engine) as conn:
                source = run_with_checkpoint(conn, row.thread_id, branch)
            if source is None:
                raise NotFound(f"no checkpoint {branch!r} on thread {row.thread_id!r}")
        run_metadata = self._metadata(body.get("metadata"))
        assistant_id = assistant_uuid(graph_id)
        thread_metadata = {**row.metadata}
        thread_metadata.setdefault("graph_id", graph_id)
        thread_metadata.setdefault("assistant_id", assistant_id)
        seeded: list[str | None] = []
        strategy = body.get("multitask_strategy") or "reject"

        run_id = run_id or mint_tenant_id(principal.tenant)
        # In the transaction that creates the run, sent ahead of its insert (on PostgreSQL in
        # its round trip): exactly one input starts the next run.
        start = ThreadRunStart(
            row.thread_id,
            expected_run_id=previous,
            run_id=run_id,
            metadata=thread_metadata,
            assistant_id=assistant_id,
            run_metadata=run_metadata,
            multitask_strategy=strategy,
            now=self.host.clock(),
        )

        def on_commit(conn: Connection, snapshot: dict[str, Any]) -> None:
            if not start.won():
                raise ThreadBusy(  # (rolls the run and its listing back)
                    f"thread {row.thread_id!r} started another run meanwhile",
                    details={"thread_id": row.thread_id},
                )
            copied = seed_checkpoint(conn, source, run_id, checkpoint_id=branch) if source else None
            if branch is not None and copied is None:  # (found above; a guard, never expected)
                raise NotFound(f"no checkpoint {branch!r} on thread {row.thread_id!r}")
            seeded.append(copied)

        if self._created_without_callback is not None:
            self._created_without_callback(run_id)
        created = self.host.create_run(
            graph_id,
            body.get("input"),
            owner=principal,
            wait=drive,
            on_commit=on_commit,
            run_id=run_id,
            ahead=start,
            checkpointed=source is not None,
        )
        rested = str(created["status"]) if drive else None
        outputs = (
            (created.get("extensions") or {}).get(RESULT_EXTENSION, {}).get("outputs") if drive else None
        )
        return Started(
            row.thread_id,
            created["runId"],
            graph_id,
            seeded[0] if seeded else None,
            rested=rested,
            outputs=outputs,
            created=True,
        )

    def _enqueue(
        self,
        principal: Principal,
        row: ThreadRow,
        graph_id: str,
        body: Mapping[str, Any],
        *,
        run_id: str | None = None,
    ) -> Started:
        """``multitask_strategy: enqueue``: queue the run behind the thread's current one (and
        behind the runs queued before it); it starts at once if its turn has come."""
        self.host.registry.get(graph_id).require(
            conversations=self.host.options.conversations, credentials=self.host.options.credentials
        )
        inputs = jsonable(body.get("input"))
        require_storable(inputs, "/input")
        run_metadata = self._metadata(body.get("metadata"))
        run_id = run_id or mint_tenant_id(principal.tenant)
        now = self.host.clock()
        with self.host.engine.begin() as conn:
            insert_queued(
                conn,
                run_id,
                row.thread_id,
                tenant=principal.tenant,
                owner=principal.subject(),
                graph_id=graph_id,
                assistant_id=assistant_uuid(graph_id),
                inputs=inputs,
                metadata=run_metadata,
                now=now,
            )
        self.queue.queued()
        self.queue.promote(row.thread_id)  # the thread may be free (or become free meanwhile)
        return Started(row.thread_id, run_id, graph_id, None)

    def _never_started(self, run_id: str) -> bool:
        """Whether the run was cancelled before it started (such a run never starts)."""
        with reading(self.host.engine) as conn:
            return queued_status(conn, run_id) == "cancelled"

    def latest_checkpoint(self, workflow_id: str, run_id: str) -> str | None:
        saved = self._graph(workflow_id).checkpointer.get_tuple(  # type: ignore[union-attr]
            {"configurable": {"thread_id": run_id, "checkpoint_ns": ""}}
        )
        return None if saved is None else str(saved.config["configurable"]["checkpoint_id"])

    def ignore(self, principal: Principal, thread_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /threads/{id}/state``: only ``{values: null, as_node: "__end__"}`` (Agent Inbox's
        "ignore"), which ends the interrupted run as cancelled.

        Raises:
            Unsupported: any other state update.
        """
        if body.get("values") is not None or body.get("as_node") != END:
            raise Unsupported(
                'only {"values": null, "as_node": "__end__"} (end an interrupted run) is supported; '
                "state changes go through the graph's own nodes"
            )
        row = self.thread(principal, thread_id)
        if row.run_id is not None and (row.run_status or "").startswith(_RESTING_PREFIX):
            self.host.cancel(row.run_id, reason="ignored", principal=principal, wait=False)
            with self.host.engine.begin() as conn:
                touch_thread(conn, thread_id, now=self.host.clock())
            self.queue.promote(thread_id)  # the next enqueued run's turn
            row = self.thread(principal, thread_id)
        snapshot, _ = self.current_state(row)
        config = snapshot.config if snapshot is not None else None
        configurable = dict((config or {}).get("configurable", {}))
        return {
            "checkpoint": {
                "thread_id": thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": configurable.get("checkpoint_id"),
                "checkpoint_map": None,
            }
        }

    def cancel(self, principal: Principal, thread_id: str, wire_run_id: str) -> None:
        """``POST /threads/{id}/runs/{run}/cancel``: cancel the OpenWOP run (idempotent once ended)."""
        run = self.run(principal, thread_id, wire_run_id)
        if run.status in _TERMINAL:
            return
        with self.host.engine.begin() as conn:
            if run.multitask_strategy == ENQUEUE and cancel_queued(conn, run.run_id, now=self.host.clock()):
                return  # cancelled before it started: it never will
        with suppress(RunTerminal):  # it ended meanwhile (or started and was cancelled by another)
            self.host.cancel(
                run.run_id, reason="cancelled through the LangGraph API", principal=principal, wait=False
            )
        with self.host.engine.begin() as conn:
            touch_thread(conn, thread_id, now=self.host.clock())
        self.queue.promote(thread_id)  # the next enqueued run's turn

    def cancel_run_quietly(self, run_id: str, principal: Principal) -> None:
        """Cancel a run whose streaming client left with ``on_disconnect: cancel`` (if not ended)."""
        with suppress(RunTerminal, NotFound):
            self.host.cancel(run_id, reason="the client disconnected", principal=principal, wait=False)

    def outcome(self, started: Started) -> dict[str, Any]:
        """What ``runs.wait`` / ``join`` answer once the run rests: the state's values, with
        ``__interrupt__`` while it waits and ``__error__`` when it failed (as LangGraph's server).

        The status the request's own drive rested in (``Started.rested``) is taken as it is,
        unless the run failed (the snapshot has the error); a run it completed answers with the
        final state the drive wrote (``Started.outputs``), read again only where that is not
        what ``get_state`` shows (a graph whose state is one value, not a dict)."""
        # A run this request drove (``rested``) has started: only another's may never have.
        if started.rested is None and self._never_started(started.run_id):
            return {}  # cancelled before it started: it has no state of its own
        if (
            started.rested == "completed"
            and started.outputs is not None
            and not isinstance(self._graph(started.workflow_id).stream_channels_asis, str)
        ):
            return dict(started.outputs)
        status: dict[str, Any] = (
            {"status": started.rested}
            if started.rested is not None and started.rested != "failed"
            else self.host.snapshot(started.run_id)
        )
        snapshot = self._graph(started.workflow_id).get_state({"configurable": {"thread_id": started.run_id}})
        values: dict[str, Any] = dict(jsonable(snapshot.values)) if isinstance(snapshot.values, dict) else {}
        if status["status"].startswith(_RESTING_PREFIX):
            # A run this request created and drove to rest has only the interrupts its drive
            # raised, none answered: all of the state's are pending (no read of which are).
            fresh = started.created and started.rested is not None
            values["__interrupt__"] = self._pending_docs(started, snapshot, all_pending=fresh)
        if status["status"] == "failed":
            error = status.get("error") or {}
            values["__error__"] = {"error": error.get("code", "error"), "message": error.get("message", "")}
        return values

    def pending_docs(self, started: Started) -> list[dict[str, Any]]:
        """The run's pending interrupts as LangGraph ``Interrupt`` documents."""
        snapshot = self._graph(started.workflow_id).get_state({"configurable": {"thread_id": started.run_id}})
        return self._pending_docs(started, snapshot)

    def _pending_docs(
        self, started: Started, snapshot: StateSnapshot, *, all_pending: bool = False
    ) -> list[dict[str, Any]]:
        raised = [i for t in snapshot.tasks for i in t.interrupts]
        if not all_pending:
            pending = {r.lg_interrupt_id for r in self.host.pending_interrupts(started.run_id)}
            raised = [i for i in raised if i.id in pending]
        return [interrupt_doc(i.value, i.id) for i in raised]

    def rest_status(self, run_id: str) -> str:
        """The run's OpenWOP status, ``running`` while a waiting run is still being driven.

        Raises:
            NotFound: no such run.
        """
        with reading(self.host.engine) as conn:
            # Queued first (enqueued, not started): a run that starts between the two reads
            # is found by the second.
            waiting = queued_status(conn, run_id)
            found = None if waiting is not None else run_rest(conn, run_id)
        if waiting is not None:
            return "pending" if waiting == "queued" else "cancelled"
        if found is None:
            raise NotFound(f"no run {run_id!r}")
        status, queued = found
        return _BUSY if queued and status.startswith(_RESTING_PREFIX) else status

    def progress(
        self, started: Started, after: str | None
    ) -> tuple[str, list[StateSnapshot], StateSnapshot | None]:
        """The run's OpenWOP status (read first), its states after checkpoint ``after`` oldest first,
        and the state at ``after`` itself (``None`` when there is none)."""
        status = self.rest_status(started.run_id)
        newer: list[StateSnapshot] = []
        base: StateSnapshot | None = None
        history: Iterator[StateSnapshot] = self._graph(started.workflow_id).get_state_history(
            {"configurable": {"thread_id": started.run_id}}
        )
        for snapshot in history:
            checkpoint_id = str(snapshot.config["configurable"]["checkpoint_id"])
            if after is not None and checkpoint_id <= after:
                base = snapshot if checkpoint_id == after else None
                break
            newer.append(snapshot)
        newer.reverse()
        return status, newer, base


def _queued_row(queued: QueuedRun) -> ThreadRunRow:
    """An enqueued run that has not started, as a thread's run (``pending``, or ``cancelled``)."""
    return ThreadRunRow(
        queued.run_id,
        queued.thread_id,
        queued.assistant_id,
        queued.metadata,
        ENQUEUE,
        queued.created_at,
        "pending" if queued.status == "queued" else "cancelled",
        queued.updated_at,
        queued.graph_id,
    )


def _own(row: ThreadRow | None, principal: Principal, thread_id: str) -> ThreadRow:
    """``row`` if it is the caller's thread; another tenant's is as missing as one that never existed.

    Raises:
        NotFound: no such thread for this caller.
    """
    if row is None or row.tenant != principal.tenant:
        raise NotFound(f"no thread {thread_id!r}")
    return row


def _effective(row: ThreadRow) -> str:
    """The current run's status as a LangGraph client sees it: a waiting run still being driven is running."""
    status = row.run_status or ""
    return _BUSY if row.run_queued and status.startswith(_RESTING_PREFIX) else status


def _required_str(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{name} is required", details={"field": name})
    return value


def _bounded(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"{name} must be an integer from {low} to {high}", details={"field": name})
    return value


def _branch_point(body: Mapping[str, Any]) -> str | None:
    """The checkpoint a new run starts from (``checkpoint.checkpoint_id``, or ``checkpoint_id``),
    as agent-chat-ui sends it to regenerate a reply or edit a message; ``None`` for none.

    Raises:
        ValidationError: not an object, or an id that is not a string.
        Unsupported: a subgraph's checkpoint (``checkpoint_ns`` other than ``""``).
    """
    found = body.get("checkpoint_id")
    checkpoint = body.get("checkpoint")
    if checkpoint is not None:
        if not isinstance(checkpoint, dict):
            raise ValidationError("checkpoint must be an object", details={"field": "checkpoint"})
        if checkpoint.get("checkpoint_ns") not in (None, ""):
            raise Unsupported(
                "a subgraph's checkpoint (checkpoint_ns) is not supported: give a root checkpoint",
                details={"field": "checkpoint.checkpoint_ns"},
            )
        found = checkpoint.get("checkpoint_id", found)
    if found is None:
        return None
    if not isinstance(found, str) or not found:
        raise ValidationError("checkpoint_id must be a non-empty string", details={"field": "checkpoint_id"})
    return found


def _refuse_unsupported(body: Mapping[str, Any]) -> None:
    """Refuse, before anything changes, the run options this host does not offer."""
    strategy = body.get("multitask_strategy")
    if strategy not in (None, "reject", ENQUEUE):
        raise Unsupported(
            f"multitask_strategy {strategy!r} is not supported; use 'reject' (the default here) or 'enqueue'",
            details={"field": "multitask_strategy"},
        )
    for name in ("interrupt_before", "interrupt_after"):
        if body.get(name):
            raise Unsupported(
                f"{name} is not supported: static breakpoints have no payload an OpenWOP resolver could "
                "answer; call interrupt() (or a node API function) inside the node",
                details={"field": name},
            )
    for name in ("after_seconds", "webhook"):
        if body.get(name):
            raise Unsupported(f"{name} is not supported yet", details={"field": name})
    if body.get("if_not_exists") not in (None, "create", "reject"):
        raise ValidationError(
            "if_not_exists must be 'create' or 'reject'", details={"field": "if_not_exists"}
        )
