"""Plan an interrupt's notifications inside the transaction that records it.

Called by the interrupt recorder with the new interrupt (see ``InterruptRecorder.on_requested``):
the request to each recipient now, a reminder to each at every configured fraction of
``timeoutMs``, and, for an ``onTimeout: escalate`` approval, the escalation at the deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from wop_langgraph._clock import as_utc
from wop_langgraph.notify.directory import Directory
from wop_langgraph.notify.policy import NotifyPolicy
from wop_langgraph.notify.recipients import recipients_for
from wop_langgraph.protocol.principal import MembershipResolver
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.store.outbox import Planned, insert_planned
from wop_langgraph.store.runs import workflow_of

__all__ = ["Planner", "reminder_purpose"]

_log = logging.getLogger("wop_langgraph.notify")


def reminder_purpose(fraction: float) -> str:
    """The outbox purpose of the reminder at ``fraction`` of the timeout (``reminder-50``)."""
    return f"reminder-{round(fraction * 100)}"


class Planner:
    """Writes the outbox rows for new interrupts (an ``on_requested`` hook of the recorder)."""

    def __init__(
        self,
        directory: Directory,
        policy: NotifyPolicy,
        clock: Callable[[], datetime],
        *,
        ref_kinds: Collection[str],
        membership: MembershipResolver | None,
    ) -> None:
        self.directory = directory
        self.policy = policy
        self.clock = clock
        self.ref_kinds = ref_kinds
        self.membership = membership

    def __call__(self, conn: Connection, record: InterruptRecord) -> None:
        """Plan ``record``'s notifications; a failure here is logged and never blocks the run."""
        try:
            planned = self._plan(conn, record)
        except Exception:
            _log.exception("planning the notifications of %s failed; none will be sent", record.key)
            return
        try:
            # A savepoint: a failed insert must not abort the transaction that stores the interrupt.
            with conn.begin_nested():
                insert_planned(conn, planned, now=self.clock())
        except Exception:
            _log.exception("writing the notifications of %s failed; none will be sent", record.key)

    def _plan(self, conn: Connection, record: InterruptRecord) -> list[Planned]:
        workflow_id = workflow_of(conn, record.run_id) or ""
        now = self.clock()
        data = record.payload.get("data") or {}
        recipients = recipients_for(
            record.run_id,
            data,
            known=self.directory,
            membership=self.membership,
            ref_kinds=self.ref_kinds,
            default=self.policy.defaults_for(workflow_id),
        )
        planned = [self._row(record, r, "request", now) for r in recipients]
        deadline = as_utc(record.deadline) if record.deadline is not None else None
        timeout_ms = record.payload.get("timeoutMs")
        if deadline is not None and timeout_ms:
            for fraction in self.policy.reminders:
                due = as_utc(record.created_at) + timedelta(milliseconds=timeout_ms * fraction)
                planned += [self._row(record, r, reminder_purpose(fraction), due) for r in recipients]
            if record.kind == "approval" and data.get("onTimeout") == "escalate":
                targets = self.policy.escalation_for(workflow_id)
                planned += [self._row(record, r, "escalation", deadline) for r in targets]
        if not recipients:
            _log.warning("interrupt %s names nobody to notify and %r has no default", record.key, workflow_id)
        return planned

    def _row(self, record: InterruptRecord, recipient: str, purpose: str, due: datetime) -> Planned:
        # A subject the directory cannot reach is still planned: it becomes a visible dead letter.
        contact = self.directory.get(recipient)
        return Planned(
            run_id=record.run_id,
            interrupt_id=record.interrupt_id,
            interrupt_key=record.key,
            recipient=recipient,
            purpose=purpose,
            addresses=contact.addresses if contact is not None else [],
            due_at=due,
        )
