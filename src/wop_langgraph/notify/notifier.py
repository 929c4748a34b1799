"""``Notifier``: tell reviewers about interrupts, through the durable outbox.

Attach it to a host before runs start::

    notifier = Notifier(Directory.from_mapping({"alice": {"email": "alice@example.com"}}),
                        email=EmailChannel(SmtpSettings("smtp.example.com", 587, starttls=True)),
                        links=LinkSigner(keys, "https://wop.example.com"))
    notifier.attach(host)
    notifier.start()          # a delivery thread beside the workers

Planning happens in the transaction that records each interrupt (so a crash can never lose a
notification or plan it twice); sending happens on the delivery thread, or in any process that
calls :meth:`deliver_due` over the same database.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from wop_langgraph.notify.channel import Channel, Channels
from wop_langgraph.notify.channels import AppriseChannel, EmailChannel, builtin_channels
from wop_langgraph.notify.directory import Directory
from wop_langgraph.notify.dispatch import Dispatcher, DispatchSettings
from wop_langgraph.notify.links import LinkSigner
from wop_langgraph.notify.planner import Planner
from wop_langgraph.notify.policy import NotifyPolicy
from wop_langgraph.notify.templates import Templates
from wop_langgraph.protocol.egress import AllowList
from wop_langgraph.store.engine import reading
from wop_langgraph.store.outbox import Notification, dead_letters, notifications_of_run

if TYPE_CHECKING:
    from wop_langgraph.host import WopHost

__all__ = ["Notifier"]

_log = logging.getLogger("wop_langgraph.notify")


class Notifier:
    """Plans notifications for a host's interrupts and delivers them.

    Args:
        directory: subject -> addresses.
        policy: defaults, reminders, escalation targets, retries.
        email: the SMTP channel (``None``: email addresses become dead letters).
        links: signs personal links (``None``: messages say where to answer instead).
        templates: the message templates.
        allow: test-only egress allowance for loopback webhook receivers.
        channels: your own :class:`~wop_langgraph.notify.channel.Channel` objects, asked in
            order before email and Apprise (the first that accepts an address sends to it).

    Attributes:
        channels: every channel, in the order addresses are routed through them.
    """

    def __init__(
        self,
        directory: Directory,
        *,
        policy: NotifyPolicy | None = None,
        email: EmailChannel | None = None,
        links: LinkSigner | None = None,
        templates: Templates | None = None,
        allow: AllowList | None = None,
        channels: Sequence[Channel] = (),
    ) -> None:
        self.directory = directory
        self.policy = policy or NotifyPolicy()
        self.email = email
        self.links = links
        self.templates = templates or Templates()
        self.apprise = AppriseChannel(allow=allow)
        self.channels = Channels([*channels, *builtin_channels(email, self.apprise)])
        self._host: WopHost | None = None
        self._dispatcher: Dispatcher | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, host: WopHost) -> Notifier:
        """Plan notifications for ``host``'s new interrupts; wake the delivery loop after each drive."""
        if self._host is not None:
            raise RuntimeError("this Notifier is already attached to a host")
        self._host = host
        planner = Planner(
            self.directory, self.policy, host.clock, ref_kinds=host.ref_kinds, membership=host.membership
        )
        host.on_interrupt_requested(planner)
        host.on_run_rested(lambda _run_id: self._wake.set())
        self._dispatcher = Dispatcher(
            DispatchSettings(
                engine=host.engine,
                clock=host.clock,
                policy=self.policy,
                templates=self.templates,
                channels=self.channels,
                links=self.links,
                ref_kinds=host.ref_kinds,
                membership=host.membership,
            )
        )
        return self

    def deliver_due(self, now: datetime | None = None) -> int:
        """Send every notification due at ``now`` (default: the host's clock); returns how many were sent."""
        dispatcher = self._require()
        total, batch = 0, 50
        while True:
            claimed, sent = dispatcher.deliver_due(now, limit=batch)
            total += sent
            if claimed < batch:
                return total

    def dead_letters(self, run_id: str | None = None) -> list[Notification]:
        """Notifications that could not be delivered (``last_error`` says why), newest first."""
        host = self._require_host()
        with reading(host.engine) as conn:
            return dead_letters(conn, run_id=run_id)

    def notifications(self, run_id: str) -> list[Notification]:
        """Every notification planned for ``run_id`` and its state."""
        host = self._require_host()
        with reading(host.engine) as conn:
            return notifications_of_run(conn, run_id)

    def start(self, poll_seconds: float = 1.0) -> None:
        """Start the delivery thread (idempotent): it sends what is due every ``poll_seconds``."""
        self._require()
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(poll_seconds,), name="wop-notify", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the delivery thread after its current pass."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self, poll_seconds: float) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.deliver_due()
            except Exception:
                _log.exception("notification delivery failed; it will run again")
            self._wake.wait(poll_seconds)

    def _require(self) -> Dispatcher:
        if self._dispatcher is None:
            raise RuntimeError("attach the Notifier to a host first (notifier.attach(host))")
        return self._dispatcher

    def _require_host(self) -> WopHost:
        if self._host is None:
            raise RuntimeError("attach the Notifier to a host first (notifier.attach(host))")
        return self._host
