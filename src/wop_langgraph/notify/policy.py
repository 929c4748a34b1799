"""What an operator decides about notifications: defaults, reminders, escalation, retries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

__all__ = ["NotifyPolicy"]


@dataclass(frozen=True)
class NotifyPolicy:
    """Host-wide notification rules.

    Attributes:
        default_recipients: workflow id -> subjects told when a gate names nobody (``"*"``
            applies to every workflow without its own entry).
        escalation_to: workflow id (or ``"*"``) -> subjects told when an ``onTimeout:
            escalate`` gate reaches its deadline (the gate still resolves rejected).
        reminders: fractions of ``timeoutMs`` at which recipients are reminded while the
            interrupt is still pending (e.g. ``(0.5, 0.9)``); only interrupts with a deadline.
        attempts: delivery attempts per notification before it becomes a dead letter.
        backoff: the wait after the first failed attempt; doubled after each further one.
        lease: how long a worker may take to send one notification before another may retry.
        link_ttl: lifetime of a personal link when the interrupt has no deadline (a deadline
            always caps it).
        inbox_ttl: lifetime of the inbox link each message carries (it lists, never answers).
    """

    default_recipients: Mapping[str, Sequence[str]] = field(default_factory=dict)
    escalation_to: Mapping[str, Sequence[str]] = field(default_factory=dict)
    reminders: Sequence[float] = ()
    attempts: int = 5
    backoff: timedelta = timedelta(seconds=30)
    lease: timedelta = timedelta(minutes=2)
    link_ttl: timedelta = timedelta(days=3)
    inbox_ttl: timedelta = timedelta(days=7)

    def __post_init__(self) -> None:
        if any(not 0 < f < 1 for f in self.reminders):
            raise ValueError("NotifyPolicy.reminders: fractions of the timeout strictly between 0 and 1")
        if self.attempts < 1:
            raise ValueError("NotifyPolicy.attempts: at least 1")

    def defaults_for(self, workflow_id: str) -> list[str]:
        """The default recipients of ``workflow_id``."""
        return list(self.default_recipients.get(workflow_id, self.default_recipients.get("*", ())))

    def escalation_for(self, workflow_id: str) -> list[str]:
        """Whom ``workflow_id``'s escalating gates notify at their deadline."""
        return list(self.escalation_to.get(workflow_id, self.escalation_to.get("*", ())))
