"""Deliver due outbox rows: decide whether each still matters, render, send, record the outcome.

A request or reminder is sent only while its interrupt is pending and its run live; otherwise
it is ``dropped`` (a resolved gate needs no reminder). An escalation is sent only when the gate
reached its deadline undecided (timed out, or pending past its deadline before the sweep ran);
it carries no link, since the gate is rejected and nothing can grant it any more. A failed send
is retried with exponential backoff until the policy's attempts are spent, then it is ``dead``
with the error recorded. Addresses that already accepted the message are not sent to again.
Each address goes to the first of the settings' :class:`~wop_langgraph.notify.channel.Channels`
that accepts it; an address none accepts is a permanent failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

from wop_langgraph._clock import as_utc
from wop_langgraph.notify.channel import Channels, SendError, redact
from wop_langgraph.notify.links import LinkSigner
from wop_langgraph.notify.message import Message, build_message
from wop_langgraph.notify.policy import NotifyPolicy
from wop_langgraph.notify.templates import Templates
from wop_langgraph.protocol.principal import MembershipResolver
from wop_langgraph.store.engine import Engine, reading
from wop_langgraph.store.interrupts import InterruptRecord, get_interrupt
from wop_langgraph.store.outbox import Notification, claim_due, settle
from wop_langgraph.store.runs import TERMINAL_STATUSES, status_and_workflow

__all__ = ["DispatchSettings", "Dispatcher"]

_log = logging.getLogger("wop_langgraph.notify")


@dataclass(frozen=True)
class DispatchSettings:
    """What the dispatcher needs: channels, links, templates, the rules and the host's view of eligibility."""

    engine: Engine
    clock: Callable[[], datetime]
    policy: NotifyPolicy
    templates: Templates
    channels: Channels
    links: LinkSigner | None
    ref_kinds: Collection[str]
    membership: MembershipResolver | None


class Dispatcher:
    """Sends what is due in the outbox (any number of processes may run one)."""

    def __init__(self, settings: DispatchSettings) -> None:
        self.s = settings

    def deliver_due(self, now: datetime | None = None, *, limit: int = 50) -> tuple[int, int]:
        """Claim and handle up to ``limit`` due notifications; returns (how many claimed, how many sent)."""
        now = now or self.s.clock()
        with self.s.engine.begin() as conn:
            claimed = claim_due(conn, now=now, lease=self.s.policy.lease, limit=limit)
        sent = 0
        for item in claimed:
            try:
                sent += self._handle(item, now)
            except Exception as exc:  # a bug (a template, a resolver) must not stop the loop
                _log.exception("notification %s failed unexpectedly", item.notification_id)
                self._fail(item, now, f"internal: {type(exc).__name__}: {exc}", False, item.delivered or [])
        return len(claimed), sent

    def _handle(self, item: Notification, now: datetime) -> int:
        with reading(self.s.engine) as conn:
            record = get_interrupt(conn, item.interrupt_id)
            run = status_and_workflow(conn, item.run_id)
        if record is None or run is None:
            self._settle(item, "dropped", now, "the interrupt or its run no longer exists")
            return 0
        why_not = _irrelevant(item.purpose, record, str(run.status), now)
        if why_not:
            self._settle(item, "dropped", now, why_not)
            return 0
        if not item.addresses:
            self._settle(item, "dead", now, f"the directory has no address for {item.recipient!r}")
            return 0
        message = self._message(item, record, str(run.workflow_id), now)
        done = list(item.delivered or [])
        errors: list[str] = []
        permanent = True
        for address in item.addresses:
            if address in done:
                continue
            try:
                self.s.channels.send(address, message)
                done.append(address)
            except SendError as exc:
                errors.append(f"{redact(address)}: {exc}")
                permanent = permanent and exc.permanent
            except Exception as exc:  # a channel's bug: retried, and the other addresses still go
                _log.exception("a channel failed unexpectedly on %s", redact(address))
                errors.append(f"{redact(address)}: internal: {type(exc).__name__}: {exc}")
                permanent = False
        if not errors:
            self._settle(item, "sent", now, None, done)
            return 1
        self._fail(item, now, "; ".join(errors), permanent, done)
        return 0

    def _fail(self, item: Notification, now: datetime, error: str, permanent: bool, done: list[str]) -> None:
        """Retry after the backoff, or make a dead letter when retrying cannot help or attempts ran out."""
        if permanent or item.attempts >= self.s.policy.attempts:
            _log.warning("notification %s is a dead letter: %s", item.notification_id, error)
            self._settle(item, "dead", now, error, done)
        else:
            retry_at = now + self.s.policy.backoff * 2 ** (item.attempts - 1)
            self._settle(item, "pending", now, error, done, retry_at)

    def _message(
        self, item: Notification, record: InterruptRecord, workflow_id: str, now: datetime
    ) -> Message:
        link = None
        if self.s.links is not None and item.purpose != "escalation":
            link = self.s.links.link(
                record,
                item.recipient,
                now=now,
                ttl=self.s.policy.link_ttl,
                ref_kinds=self.s.ref_kinds,
                membership=self.s.membership,
            )
        inbox = None
        if self.s.links is not None:
            inbox = self.s.links.inbox(record, item.recipient, now=now, ttl=self.s.policy.inbox_ttl)
        return build_message(
            self.s.templates,
            inbox=inbox,
            record=record,
            workflow_id=workflow_id,
            purpose=item.purpose,
            recipient=item.recipient,
            link=link,
            deadline=as_utc(record.deadline) if record.deadline is not None else None,
        )

    def _settle(
        self,
        item: Notification,
        state: str,
        now: datetime,
        error: str | None,
        delivered: list[str] | None = None,
        due_at: datetime | None = None,
    ) -> None:
        with self.s.engine.begin() as conn:
            settle(
                conn,
                item.notification_id,
                state=state,
                now=now,
                error=error,
                delivered=delivered,
                due_at=due_at,
            )


def _irrelevant(purpose: str, record: InterruptRecord, run_status: str, now: datetime) -> str | None:
    """Why a notification should no longer be sent (``None``: send it)."""
    deadline = as_utc(record.deadline) if record.deadline is not None else None
    if purpose == "escalation":
        timed_out = record.status == "expired" or (
            record.status == "resolved" and (record.resolution or {}).get("action") == "timeout"
        )
        overdue = record.status == "pending" and deadline is not None and deadline <= now
        if timed_out or (overdue and run_status not in TERMINAL_STATUSES):
            return None
        return f"the gate did not time out (it is {record.status})"
    if run_status in TERMINAL_STATUSES:
        return f"the run is {run_status}"
    if record.status != "pending":
        return f"the interrupt is {record.status}"
    if deadline is not None and deadline <= now:
        return "the interrupt's deadline has passed"
    return None
