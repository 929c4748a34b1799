"""``WopHost``: the in-process OpenWOP host over registered LangGraph graphs (no HTTP).

It creates runs, drives their graphs, answers snapshots and event reads, cancels runs, resolves
interrupts exactly once, times out expired ones and recovers after a crash. All state lives in
the store, so any number of hosts (threads, processes, replicas) may share one database:
exactly-once comes from the interrupt claim and the per-run lock, never from memory.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.errors import UnknownInterruptError
from langgraph.pregel import Pregel
from sqlalchemy import Engine, select, update

from wop_langgraph._clock import iso_z, utcnow
from wop_langgraph.adapters import is_bare, to_node_value
from wop_langgraph.host.driver import TERMINAL_STATUSES, GraphDriver, jsonable, resume_command
from wop_langgraph.host.locks import RunLocks
from wop_langgraph.host.principal import MembershipResolver, Principal
from wop_langgraph.host.recorder import InterruptRecorder
from wop_langgraph.host.registry import GraphRegistry
from wop_langgraph.host.resolver import Resolver
from wop_langgraph.host.validation import require_json
from wop_langgraph.nodes._context import RunContext
from wop_langgraph.nodes._suspend import Delivery
from wop_langgraph.protocol.errors import NotFound, RunTerminal, ValidationError
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.protocol.jsonschema_check import validate_against_schema
from wop_langgraph.protocol.official import configurable_schema
from wop_langgraph.store.events import NewEvent, append_events, read_events
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    cancel_pending,
    interrupts_of_run,
    mark_consumed,
    resolved_unconsumed,
)
from wop_langgraph.store.run_tables import events_table, runs_table
from wop_langgraph.store.saver import SQLModelSaver

__all__ = ["DEFAULT_ESCALATION_THRESHOLD", "WopHost"]

DEFAULT_ESCALATION_THRESHOLD = 0.7
EVENT_LOG_SCHEMA_VERSION = 3


@dataclass(frozen=True)
class HostOptions:
    """What the host enables beyond approvals, clarifications, external events and custom."""

    conversations: bool = False
    credentials: bool = False
    ref_kinds: frozenset[str] = frozenset({"principal"})


class WopHost:
    """An OpenWOP host for LangGraph graphs, over one database.

    Args:
        saver: the store; its recorder is set to this host's interrupt recorder.
        conversations: enable ``conversation.*`` node calls.
        credentials: enable ``request_credential``.
        ref_kinds: approver reference kinds honoured (``principal``, ``group``, ``role``).
        membership: resolves a principal's groups and roles at decision time.
        clock: the time source (injectable for tests and the timeout sweep).
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
    ) -> None:
        self.saver = saver
        self.clock = clock
        self.options = HostOptions(conversations, credentials, frozenset(ref_kinds))
        saver.recorder = InterruptRecorder(clock)
        self.engine: Engine = saver.engine
        self.registry = GraphRegistry(saver)
        self._locks = RunLocks(self.engine)
        self._resolver = Resolver(self, membership)

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
    ) -> None:
        """Register a compiled graph under ``workflow_id``.

        Args:
            rejection_routes: node id -> node that a rejected approval in that node continues
                to (the explicit equivalent of an ``any_failed`` edge); without a route a
                rejection fails the node and the run with ``approval_rejected``.
        """
        self.registry.register(workflow_id, graph, rejection_routes or {})

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
    ) -> dict[str, Any]:
        """Create a run, drive it to its first suspension or its end, and return its snapshot."""
        self.registry.get(workflow_id)
        if configurable is not None:
            self._check_configurable(configurable)
        inputs_doc = jsonable(inputs)
        require_json(inputs_doc, "/inputs")
        require_json(metadata, "/metadata")
        run_id = mint_tenant_id(owner.tenant)
        now = self.clock()
        owner_doc = {"tenant": owner.tenant, "subject": owner.subject()}
        started: dict[str, Any] = {"workflowId": workflow_id, "owner": owner_doc}
        if inputs is not None:
            started["inputs"] = inputs_doc
        with self.engine.begin() as conn:
            conn.execute(
                runs_table.insert().values(
                    run_id=run_id,
                    workflow_id=workflow_id,
                    tenant=owner.tenant,
                    owner=owner_doc,
                    status="running",
                    inputs=inputs_doc,
                    configurable=configurable,
                    tags=tags,
                    run_metadata=metadata,
                    callback_url=callback_url,
                    created_at=now,
                    updated_at=now,
                )
            )
            append_events(conn, run_id, [NewEvent("run.started", started)], now=now)
        self._drive(run_id, first_input=inputs if inputs is not None else {})
        return self.snapshot(run_id)

    def snapshot(self, run_id: str) -> dict[str, Any]:
        """The run's OpenWOP ``RunSnapshot``."""
        row = self._run_row(run_id)
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
        return snap

    def events(self, run_id: str, *, after: int = -1, limit: int | None = None) -> list[dict[str, Any]]:
        """The run's events with ``sequence > after``, as ``RunEventDoc`` dicts, in order."""
        self._run_row(run_id)
        with self.engine.connect() as conn:
            return [e.to_wire() for e in read_events(conn, run_id, after=after, limit=limit)]

    def pending_interrupts(self, run_id: str) -> list[InterruptRecord]:
        """The run's interrupts still waiting for a resolution, oldest first."""
        with self.engine.connect() as conn:
            return interrupts_of_run(conn, run_id, statuses=["pending"])

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        """Every interrupt of the run, oldest first."""
        with self.engine.connect() as conn:
            return interrupts_of_run(conn, run_id)

    def cancel(
        self, run_id: str, *, reason: str | None = None, principal: Principal | None = None
    ) -> dict[str, Any]:
        """Cancel a run: its pending interrupts become unresolvable; returns ``{runId, status}``.

        Raises:
            RunTerminal: the run already completed, failed or was cancelled.
        """
        now = self.clock()
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(runs_table)
                .where(runs_table.c.run_id == run_id, runs_table.c.status.not_in(TERMINAL_STATUSES))
                .values(status="cancelled", current_node_id=None, updated_at=now, completed_at=now)
            ).rowcount
            if not changed:
                row = conn.execute(select(runs_table.c.status).where(runs_table.c.run_id == run_id)).first()
                if row is None:
                    raise NotFound(f"no run {run_id!r}")
                raise RunTerminal(
                    f"run {run_id!r} is already {row.status}", details={"runStatus": row.status}
                )
            cancel_pending(conn, run_id, now=now)
            payload: dict[str, Any] = {}
            if reason:
                payload["reason"] = reason
            if principal is not None:
                payload["cancelledBy"] = principal.subject_id  # a string in runCancelled
            append_events(conn, run_id, [NewEvent("run.cancelled", payload)], now=now)
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
    ) -> dict[str, Any]:
        """Resolve (or vote on) the pending interrupt of ``node_id`` in ``run_id``.

        Returns ``{runId, nodeId, status}`` with the run's status afterwards. See
        :class:`~wop_langgraph.host.resolver.Resolver` for the contract.
        """
        return self._resolver.resolve(
            run_id, node_id, resume_value, principal, idempotency_key=idempotency_key, key=key
        )

    def sweep(self, now: datetime | None = None) -> int:
        """Time out every pending interrupt whose deadline passed; returns how many.

        Approvals are resolved as rejected (``action: timeout``) whatever ``onTimeout`` says;
        other kinds expire and fail their node with ``interrupt_expired``. Safe to run from
        several processes at once: each interrupt is claimed by exactly one of them.
        """
        return self._resolver.sweep(now or self.clock())

    def recover(self) -> int:
        """Deliver every resolution that was claimed but never reached its graph; returns runs driven.

        Runs of workflows this host has not registered are left for a host that has them.
        """
        with self.engine.connect() as conn:
            runs = sorted({r.run_id for r in resolved_unconsumed(conn)})
        driven = 0
        for run_id in runs:
            if self._run_row(run_id).workflow_id in self.registry:
                self._drive(run_id)
                driven += 1
        return driven

    # -- internals --------------------------------------------------------------------------

    def _drive(self, run_id: str, first_input: Any = None) -> None:
        """Run the graph while this process holds the run's lock and there is work to do."""
        graph_input = first_input
        while True:
            with self._locks.hold(run_id) as held:
                if not held:
                    return  # the holder delivers our committed resolution before it lets go
                while True:
                    row = self._run_row(run_id)
                    if row.status in TERMINAL_STATUSES:
                        return
                    with self.engine.connect() as conn:
                        undelivered = resolved_unconsumed(conn, run_id)
                    if graph_input is None and not undelivered:
                        break
                    self._run_once(row, graph_input, undelivered)
                    graph_input = None
            with self.engine.connect() as conn:
                if not resolved_unconsumed(conn, run_id):
                    return

    def _run_once(self, row: Any, graph_input: Any, undelivered: list[InterruptRecord]) -> None:
        registered = self.registry.get(row.workflow_id)
        driver = GraphDriver(
            engine=self.engine,
            graph=registered.graph,
            context=self._context(row, registered.rejection_routes),
            clock=self.clock,
            recursion_limit=_run_option(row.configurable, "recursionLimit"),
        )
        if graph_input is None:
            values = {r.interrupt_id: _node_value(r) for r in undelivered}
            graph_input = resume_command(undelivered, values)
        try:
            driver.run(graph_input, undelivered)
        except UnknownInterruptError as exc:
            # Delivered before a crash, but not marked: LangGraph already consumed these.
            pending_ids = set(getattr(exc, "pending_ids", ()) or ())
            consumed = [r.interrupt_id for r in undelivered if r.lg_interrupt_id not in pending_ids]
            with self.engine.begin() as conn:
                mark_consumed(conn, consumed or [r.interrupt_id for r in undelivered], now=self.clock())

    def _context(self, row: Any, routes: Mapping[str, str]) -> RunContext:
        threshold = _run_option(row.configurable, "escalationThreshold")
        return RunContext(
            run_id=row.run_id,
            escalation_threshold=DEFAULT_ESCALATION_THRESHOLD if threshold is None else threshold / 100,
            conversations=self.options.conversations,
            credentials=self.options.credentials,
            rejection_routes=dict(routes),
            emit=functools.partial(self._emit_once, row.run_id),
        )

    def _emit_once(
        self, run_id: str, event_type: str, node_id: str, payload: dict[str, Any], event_id: str
    ) -> None:
        """Append a node-level event unless an event with ``event_id`` exists (a replay)."""
        with self.engine.begin() as conn:
            seen = conn.execute(
                select(events_table.c.sequence).where(events_table.c.event_id == event_id)
            ).first()
            if seen is None:
                event = NewEvent(event_type, payload, node_id=node_id, event_id=event_id)
                append_events(conn, run_id, [event], now=self.clock())

    def _check_configurable(self, configurable: dict[str, Any]) -> None:
        validate_against_schema(configurable, configurable_schema(), what="configurable")
        threshold = _run_option(configurable, "escalationThreshold")
        if threshold is not None and threshold > 100:
            raise ValidationError(
                "configurable.run.escalationThreshold is a percentage from 0 to 100",
                details={"path": "/configurable/run/escalationThreshold"},
            )

    def _run_row(self, run_id: str) -> Any:
        with self.engine.connect() as conn:
            row = conn.execute(select(runs_table).where(runs_table.c.run_id == run_id)).first()
        if row is None:
            raise NotFound(f"no run {run_id!r}")
        return row


def _run_option(configurable: Any, name: str) -> Any:
    if not isinstance(configurable, dict):
        return None
    section = configurable.get("run")
    return section.get(name) if isinstance(section, dict) else None


def _node_value(record: InterruptRecord) -> Any:
    """What the node's ``interrupt()`` returns: a bare interrupt gets its native value."""
    if is_bare(record.payload):
        return to_node_value(record.payload, record.resolution or {}, record.resume_value)
    return _delivery(record).as_value()


def _delivery(record: InterruptRecord) -> Delivery:
    status = "expired" if record.status == "expired" else "resolved"
    return Delivery(status=status, resume_value=record.resume_value, resolution=record.resolution or {})
