"""The outbox on a real host and database, with a real SMTP server and webhook receiver on loopback.

Planning is checked in the interrupt's own transaction (the rows exist as soon as the run is
suspended, before anything is sent); delivery, retries, dead letters, reminders and escalation
are driven by an injected clock through ``deliver_due``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.notify.conftest import Clock, Smtp, Webhook, body_html, body_text, free_port
from tests.notify.graphs import failing_beside_gate_graph, gate_graph
from wop_langgraph._clock import as_utc
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.inbox_tokens import verify_inbox
from wop_langgraph.notify import (
    Directory,
    EmailChannel,
    LinkSigner,
    Notifier,
    NotifyPolicy,
    SmtpSettings,
)
from wop_langgraph.protocol.egress import AllowList
from wop_langgraph.protocol.errors import InterruptTokenInvalid
from wop_langgraph.protocol.principal import Membership
from wop_langgraph.store.outbox import claim_due
from wop_langgraph.store.outbox_table import notifications_table
from wop_langgraph.store.run_tables import interrupts_table
from wop_langgraph.tokens import SigningKeys, verify

REPO = Path(__file__).resolve().parents[2]
KEYS = SigningKeys({"k1": "notify-secret-0123456789abcdef"})
PUBLIC = "https://wop.example.test"
OWNER = Principal(tenant="acme", subject_id="owner")
LINK = re.compile(r"https://wop\.example\.test/interrupts/(ow2\.[A-Za-z0-9._~-]+)")
INBOX = re.compile(r"https://wop\.example\.test/inbox/(owi1\.[A-Za-z0-9._~-]+)")


@pytest.fixture
def host(db_url: str, clock: Clock) -> Iterator[WopHost]:
    host = WopHost.from_url(db_url, clock=clock, ref_kinds=("principal", "group"), membership=_membership)
    try:
        yield host
    finally:
        host.saver.close()


def _membership(principal: Principal) -> Membership:
    return Membership(groups=frozenset({"ops"}) if principal.subject_id in ("carol", "dave") else frozenset())


def directory(smtp: Smtp | None = None, **apprise: str) -> Directory:
    entries: dict[str, Any] = {
        name: {"email": f"{name}@example.test"} for name in ("alice", "bob", "carol", "dave")
    }
    entries["erin"] = {"email": "erin@example.test"}
    for name, url in apprise.items():
        entries[name] = {"apprise": url}
    return Directory.from_mapping(entries)


def notifier(smtp: Smtp, host: WopHost, policy: NotifyPolicy | None = None, **options: Any) -> Notifier:
    made = Notifier(
        directory(smtp, **options.pop("apprise", {})),
        policy=policy or NotifyPolicy(backoff=timedelta(seconds=10)),
        email=EmailChannel(SmtpSettings(smtp.host, smtp.port, sender="wop@example.test")),
        links=LinkSigner(KEYS, PUBLIC),
        **options,
    )
    return made.attach(host)


def run(host: WopHost, workflow: str, **approval: Any) -> str:
    host.register(workflow, gate_graph(**approval))
    return str(host.create_run(workflow, {}, owner=OWNER)["runId"])


def links_in(text: str) -> list[str]:
    return LINK.findall(text)


def test_email_carries_a_personal_link_planned_in_the_interrupt_transaction(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host)
    run_id = run(host, "one", approvers=["alice"], timeout=3600)
    # Planned with the interrupt, before any delivery.
    planned = notes.notifications(run_id)
    assert [(n.recipient, n.purpose, n.state) for n in planned] == [("alice", "request", "pending")]
    assert smtp.mailbox.messages == []
    assert notes.deliver_due() == 1
    (mail,) = smtp.mailbox.to("alice@example.test")
    assert "Ship release 7?" in mail["Subject"] and "[one]" in mail["Subject"]
    text, html = body_text(mail), body_html(mail)
    for part in (run_id, "review", "login fix", "2026-01-05T10:00:00.000Z"):
        assert part in text
    assert "<b>fixes</b>" not in html and "&lt;b&gt;fixes&lt;/b&gt;" in html  # escaped, not injected
    (token,) = links_in(text)
    assert token in html
    claims = verify(KEYS, token, now=clock())
    assert claims.approver == "alice" and claims.intent == "resolve"
    assert claims.expires_at == host.pending_interrupts(run_id)[0].deadline.replace(
        tzinfo=claims.expires_at.tzinfo
    )
    assert notes.notifications(run_id)[0].state == "sent"
    assert notes.deliver_due() == 0  # sent once


def test_email_carries_the_recipients_inbox_link(host: WopHost, smtp: Smtp, clock: Clock) -> None:
    notes = notifier(smtp, host)
    run(host, "one", approvers=["alice", "bob"], timeout=3600)
    assert notes.deliver_due() == 2
    for name in ("alice", "bob"):
        (mail,) = smtp.mailbox.to(f"{name}@example.test")
        text, html = body_text(mail), body_html(mail)
        (inbox,) = INBOX.findall(text)
        assert "Everything waiting for you:" in text
        assert f'href="{PUBLIC}/inbox/{inbox}"' in html and "See everything waiting for you" in html
        claims = verify_inbox(KEYS, inbox, now=clock())
        assert (claims.tenant, claims.subject) == ("acme", name)
        assert claims.expires_at == clock() + NotifyPolicy().inbox_ttl
        with pytest.raises(InterruptTokenInvalid):  # it lists; it never answers
            verify(KEYS, inbox, now=clock())


def test_quorum_of_two_gets_two_distinct_links_and_group_members_are_told(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host)
    run_id = run(
        host, "quorum", approvers=["alice", "bob"], group_refs=["ops"], required_approvals=2, timeout=600
    )
    assert (
        notes.deliver_due() == 4
    )  # alice, bob, and ops members carol and dave (via the membership resolver)
    tokens = {}
    for name in ("alice", "bob", "carol", "dave"):
        (mail,) = smtp.mailbox.to(f"{name}@example.test")
        (token,) = links_in(body_text(mail))
        tokens[name] = token
        assert verify(KEYS, token, now=clock()).approver == name
    assert len(set(tokens.values())) == 4
    assert smtp.mailbox.to("erin@example.test") == []
    del run_id


def test_audience_is_told_and_gets_an_inspect_link_when_not_eligible(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host)
    run(host, "aud", approvers=["alice"], audience={"subjects": ["erin"]}, timeout=600)
    assert notes.deliver_due() == 1
    assert smtp.mailbox.to("alice@example.test") == []  # audience replaces the eligibility refs
    (token,) = links_in(body_text(smtp.mailbox.to("erin@example.test")[0]))
    claims = verify(KEYS, token, now=clock())
    assert (claims.approver, claims.intent) == ("erin", "inspect")


def test_workflow_default_when_the_gate_names_nobody(host: WopHost, smtp: Smtp) -> None:
    notes = notifier(smtp, host, NotifyPolicy(default_recipients={"open": ["bob"]}))
    run(host, "open", timeout=600)
    assert notes.deliver_due() == 1
    assert len(smtp.mailbox.to("bob@example.test")) == 1


def test_apprise_json_webhook_carries_the_link(
    host: WopHost, smtp: Smtp, webhook: Webhook, clock: Clock
) -> None:
    url = f"json://127.0.0.1:{webhook.port}/hook"
    notes = notifier(
        smtp, host, apprise={"alice": url}, allow=AllowList(loopback_http_ports=frozenset({webhook.port}))
    )
    run(host, "chat", approvers=["alice"], timeout=600)
    assert notes.deliver_due() == 1
    (body,) = webhook.bodies
    assert "Ship release 7?" in body["title"]
    (token,) = links_in(body["message"])
    assert verify(KEYS, token, now=clock()).approver == "alice"


def test_webhook_to_loopback_is_refused_by_the_egress_guard(
    host: WopHost, smtp: Smtp, webhook: Webhook
) -> None:
    notes = notifier(smtp, host, apprise={"alice": f"jsons://127.0.0.1:{webhook.port}/hook"})
    run_id = run(host, "guarded", approvers=["alice"], timeout=600)
    assert notes.deliver_due() == 0
    (dead,) = notes.dead_letters(run_id)
    assert "egress guard (loopback)" in (dead.last_error or "")
    assert dead.attempts == 1  # a refusal is permanent: no retries
    assert webhook.bodies == []
    assert host.snapshot(run_id)["status"] == "waiting-approval"


def test_unreachable_channel_retries_with_backoff_then_dead_letters(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    closed = Smtp(1, smtp.mailbox)  # nothing listens on port 1
    notes = notifier(closed, host, NotifyPolicy(attempts=3, backoff=timedelta(seconds=10)))
    run_id = run(host, "down", approvers=["alice"], timeout=3600)
    assert notes.deliver_due() == 0
    (row,) = notes.notifications(run_id)
    assert (row.state, row.attempts) == ("pending", 1)
    assert row.due_at.replace(tzinfo=None) == (clock() + timedelta(seconds=10)).replace(tzinfo=None)
    clock.advance(seconds=9)
    notes.deliver_due()
    assert notes.notifications(run_id)[0].attempts == 1  # not due yet
    clock.advance(seconds=1)
    notes.deliver_due()
    assert notes.notifications(run_id)[0].attempts == 2
    clock.advance(seconds=20)  # second backoff: 20 s
    notes.deliver_due()
    (dead,) = notes.dead_letters(run_id)
    assert dead.attempts == 3 and "SMTP 127.0.0.1:1" in (dead.last_error or "")
    # The run is unaffected: still waiting, and an answer by run still continues it.
    assert host.snapshot(run_id)["status"] == "waiting-approval"
    host.resolve(run_id, "review", {"action": "accept"}, Principal(tenant="acme", subject_id="alice"))
    assert host.snapshot(run_id)["status"] == "completed"


def test_reminders_fire_at_their_fractions_and_stop_when_resolved(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host, NotifyPolicy(reminders=(0.5, 0.9)))
    run_id = run(host, "remind", approvers=["alice"], timeout=100)
    assert notes.deliver_due() == 1
    clock.advance(seconds=49)
    assert notes.deliver_due() == 0
    clock.advance(seconds=1)
    assert notes.deliver_due() == 1  # at 50 %
    (_, reminder) = smtp.mailbox.to("alice@example.test")
    assert reminder["Subject"].startswith("[remind] Reminder")
    (token,) = links_in(body_text(reminder))
    assert verify(KEYS, token, now=clock()).expires_at <= clock() + timedelta(seconds=50)
    host.resolve(run_id, "review", {"action": "accept"}, Principal(tenant="acme", subject_id="alice"))
    clock.advance(seconds=45)
    assert notes.deliver_due() == 0  # the 90 % reminder is dropped: the gate was decided
    states = {n.purpose: n.state for n in notes.notifications(run_id)}
    assert states == {"request": "sent", "reminder-50": "sent", "reminder-90": "dropped"}
    assert len(smtp.mailbox.to("alice@example.test")) == 2


def test_escalation_fires_at_the_deadline_and_never_grants(host: WopHost, smtp: Smtp, clock: Clock) -> None:
    policy = NotifyPolicy(reminders=(0.5,), escalation_to={"*": ["erin"]})
    notes = notifier(smtp, host, policy)
    run_id = run(host, "esc", approvers=["alice"], timeout=60, on_timeout="escalate")
    assert notes.deliver_due() == 1
    clock.advance(seconds=59)
    notes.deliver_due()
    assert smtp.mailbox.to("erin@example.test") == []  # not before the deadline
    clock.advance(seconds=1)
    assert notes.deliver_due() == 1  # at the deadline, even before the sweep ran
    (mail,) = smtp.mailbox.to("erin@example.test")
    assert mail["Subject"].startswith("[esc] Escalation")
    assert links_in(body_text(mail)) == [] and "nothing was granted" in body_text(mail)
    host.sweep()
    snap = host.snapshot(run_id)
    assert snap["status"] == "failed"  # rejected by timeout, not extended, not granted
    resolved = [e for e in host.events(run_id) if e["type"] == "interrupt.resolved"]
    assert (resolved[0]["payload"]["action"], resolved[0]["payload"]["decision"]) == ("timeout", "rejected")
    assert not [e for e in host.events(run_id) if e["type"] == "approval.granted"]
    assert notes.deliver_due() == 0


def test_escalation_is_dropped_when_the_gate_is_decided_in_time(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host, NotifyPolicy(escalation_to={"*": ["erin"]}))
    run_id = run(host, "esc2", approvers=["alice"], timeout=60, on_timeout="escalate")
    host.resolve(run_id, "review", {"action": "accept"}, Principal(tenant="acme", subject_id="alice"))
    clock.advance(seconds=61)
    notes.deliver_due()
    assert smtp.mailbox.to("erin@example.test") == []
    assert {n.purpose: n.state for n in notes.notifications(run_id)}["escalation"] == "dropped"


def test_reminders_and_escalation_are_dropped_when_the_run_is_cancelled(
    host: WopHost, smtp: Smtp, webhook: Webhook, clock: Clock
) -> None:
    policy = NotifyPolicy(reminders=(0.5, 0.9), escalation_to={"*": ["erin"]})
    notes = notifier(
        smtp,
        host,
        policy,
        apprise={"erin": f"json://127.0.0.1:{webhook.port}/hook"},
        allow=AllowList(loopback_http_ports=frozenset({webhook.port})),
    )
    run_id = run(host, "cancel", approvers=["alice"], timeout=100, on_timeout="escalate")
    planned = {n.purpose: n.state for n in notes.notifications(run_id)}
    assert planned == {
        "request": "pending",
        "reminder-50": "pending",
        "reminder-90": "pending",
        "escalation": "pending",
    }
    assert notes.deliver_due() == 1  # the request
    clock.advance(seconds=10)
    host.cancel(run_id, reason="not needed", principal=OWNER)
    for seconds in (40, 40, 10, 30):  # past 50 %, 90 %, the deadline, and beyond
        clock.advance(seconds=seconds)
        assert notes.deliver_due() == 0
    assert len(smtp.mailbox.messages) == 1 and webhook.bodies == []
    ended = {n.purpose: (n.state, n.last_error) for n in notes.notifications(run_id)}
    assert ended == {
        "request": ("sent", None),
        "reminder-50": ("dropped", "the run is cancelled"),
        "reminder-90": ("dropped", "the run is cancelled"),
        "escalation": ("dropped", "the gate did not time out (it is cancelled)"),
    }


def test_a_request_not_yet_sent_when_the_run_is_cancelled_is_never_sent(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host, NotifyPolicy(reminders=(0.5,)))
    run_id = run(host, "cancel-early", approvers=["alice", "bob"], timeout=100)
    host.cancel(run_id, principal=OWNER)  # before the delivery loop came round
    assert notes.deliver_due() == 0
    clock.advance(seconds=60)
    assert notes.deliver_due() == 0
    assert smtp.mailbox.messages == []
    assert {(n.recipient, n.purpose, n.state) for n in notes.notifications(run_id)} == {
        (name, purpose, "dropped") for name in ("alice", "bob") for purpose in ("request", "reminder-50")
    }


def test_a_reminder_still_due_when_the_gate_times_out_is_dropped(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host, NotifyPolicy(reminders=(0.5, 0.9)))
    run_id = run(host, "remind-late", approvers=["alice"], timeout=100)
    assert notes.deliver_due() == 1
    clock.advance(seconds=50)
    assert notes.deliver_due() == 1  # the 50 % reminder: reminders do fire here
    clock.advance(seconds=50)  # the 90 % reminder was not sent in time (say the loop was down)
    assert host.sweep() == 1  # the gate times out and the run fails
    assert host.snapshot(run_id)["status"] == "failed"
    assert notes.deliver_due() == 0
    clock.advance(seconds=60)
    assert notes.deliver_due() == 0
    assert len(smtp.mailbox.to("alice@example.test")) == 2
    ended = {n.purpose: (n.state, n.last_error) for n in notes.notifications(run_id)}
    assert ended["reminder-90"] == ("dropped", "the run is failed")


def test_notifications_of_a_gate_whose_run_failed_beside_it_are_dropped(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    # A sibling node fails in the gate's step: the run fails while the gate itself stays pending,
    # so only the run's status tells the outbox that nobody should be asked any more.
    notes = notifier(smtp, host, NotifyPolicy(reminders=(0.5,), escalation_to={"*": ["erin"]}))

    def asked() -> bool:
        with host.engine.connect() as conn:
            return bool(conn.execute(select(func.count()).select_from(interrupts_table)).scalar())

    graph = failing_beside_gate_graph(asked, approvers=["alice"], timeout=100, on_timeout="escalate")
    host.register("broken-build", graph)
    run_id = str(host.create_run("broken-build", {}, owner=OWNER)["runId"])
    assert host.snapshot(run_id)["status"] == "failed"
    assert [i.status for i in host.interrupts(run_id)] == ["pending"]
    assert len(notes.notifications(run_id)) == 3  # request, reminder, escalation: planned with the gate
    for seconds in (0, 50, 50, 10):
        clock.advance(seconds=seconds)
        assert notes.deliver_due() == 0
    assert smtp.mailbox.messages == []
    ended = {n.purpose: (n.state, n.last_error) for n in notes.notifications(run_id)}
    assert ended == {
        "request": ("dropped", "the run is failed"),
        "reminder-50": ("dropped", "the run is failed"),
        "escalation": ("dropped", "the gate did not time out (it is pending)"),
    }


def test_a_replay_fork_never_notifies_its_replayed_gate_again_and_a_branch_does(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host, NotifyPolicy(reminders=(0.5,)))
    run_id = run(host, "forked", approvers=["alice"], timeout=100)
    assert notes.deliver_due() == 1
    host.resolve(run_id, "review", {"action": "accept"}, Principal(tenant="acme", subject_id="alice"))
    assert host.snapshot(run_id)["status"] == "completed"
    source = host.events(run_id)
    resolved_at = next(e["sequence"] for e in source if e["type"] == "interrupt.resolved")
    # From the start (the gate is asked again and answered from the record) and from the answer
    # (the gate is copied answered): neither plans nor sends anything.
    for from_seq in (0, resolved_at):
        forked = host.fork(run_id, mode="replay", from_seq=from_seq, principal=OWNER)
        assert forked["status"] == "completed"
        assert host.interrupts(forked["runId"])[0].status == "resolved"
        assert notes.notifications(forked["runId"]) == []
        assert notes.deliver_due() == 0
        clock.advance(seconds=60)  # past the reminder too
        assert notes.deliver_due() == 0
    assert len(smtp.mailbox.to("alice@example.test")) == 1
    # A branch from before the gate asks it anew: that is a new gate, and it is notified.
    review_started = next(e["sequence"] for e in source if e["type"] == "node.started")
    branch = host.fork(run_id, mode="branch", from_seq=review_started, principal=OWNER)
    assert branch["status"] == "waiting-approval"
    assert [(n.recipient, n.purpose) for n in notes.notifications(branch["runId"])] == [
        ("alice", "request"),
        ("alice", "reminder-50"),
    ]
    assert notes.deliver_due() == 1
    (_, mail) = smtp.mailbox.to("alice@example.test")
    assert branch["runId"] in body_text(mail)
    (token,) = links_in(body_text(mail))
    (gate,) = host.pending_interrupts(branch["runId"])
    claims = verify(KEYS, token, now=clock())
    assert (claims.run_id, claims.interrupt_id) == (branch["runId"], gate.key)


def test_a_replay_fork_of_a_waiting_gate_does_not_notify_it_again(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host)
    run_id = run(host, "forked-waiting", approvers=["alice"], timeout=100)
    assert notes.deliver_due() == 1
    asked_at = next(e["sequence"] for e in host.events(run_id) if e["type"] == "interrupt.requested")
    # From the start (asked again by the replayed node) and from the ask (copied, still pending).
    for from_seq in (0, asked_at):
        forked = host.fork(run_id, mode="replay", from_seq=from_seq, principal=OWNER)
        assert forked["status"] == "waiting-approval"
        assert notes.notifications(forked["runId"]) == []
        assert notes.deliver_due() == 0
    assert len(smtp.mailbox.to("alice@example.test")) == 1


def test_a_branch_fork_waiting_on_a_copied_gate_tells_its_reviewers(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    notes = notifier(smtp, host, NotifyPolicy(reminders=(0.5,)))
    run_id = run(host, "branched-waiting", approvers=["alice"], timeout=100)
    assert notes.deliver_due() == 1
    clock.advance(seconds=30)
    asked_at = next(e["sequence"] for e in host.events(run_id) if e["type"] == "interrupt.requested")
    branch = host.fork(run_id, mode="branch", from_seq=asked_at, principal=OWNER)
    assert branch["status"] == "waiting-approval"
    (gate,) = host.pending_interrupts(branch["runId"])
    assert gate.deadline is not None and as_utc(gate.deadline) == clock() + timedelta(seconds=100)
    planned = {n.purpose: n for n in notes.notifications(branch["runId"])}
    assert sorted(planned) == ["reminder-50", "request"]
    # The reminder falls halfway to the fork's own deadline, which restarted at the fork.
    assert as_utc(planned["reminder-50"].due_at) == clock() + timedelta(seconds=50)
    assert notes.deliver_due() == 1
    (_, mail) = smtp.mailbox.to("alice@example.test")
    (token,) = links_in(body_text(mail))
    claims = verify(KEYS, token, now=clock())
    assert (claims.run_id, claims.interrupt_id) == (branch["runId"], gate.key)
    # The link decides the fork's gate, not the source's.
    host.resolve(
        branch["runId"], "review", {"action": "accept"}, Principal(tenant="acme", subject_id="alice")
    )
    assert host.snapshot(branch["runId"])["status"] == "completed"
    assert host.snapshot(run_id)["status"] == "waiting-approval"


def test_replay_and_a_second_planner_never_plan_twice(host: WopHost, smtp: Smtp, db_url: str) -> None:
    notes = notifier(smtp, host)
    run_id = run(host, "once", approvers=["alice"], timeout=600)
    (record,) = host.pending_interrupts(run_id)
    planner = host.saver.recorder.on_requested[0]  # type: ignore[union-attr]
    with host.engine.begin() as conn:
        planner(conn, record)  # what a replayed or concurrent recorder would do
    with host.engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(notifications_table)).scalar()
    assert count == 1
    assert notes.deliver_due() == 1


def test_a_crash_between_the_interrupt_and_delivery_still_delivers_once(db_url: str, smtp: Smtp) -> None:
    child = subprocess.run(
        [sys.executable, "-m", "tests.notify.crash_child", db_url, str(smtp.port)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    run_id = child.stdout.strip()
    assert smtp.mailbox.messages == []
    # Another process (here: this one) recovers: the plan survived the crash with the interrupt.
    hosts = [WopHost.from_url(db_url) for _ in range(2)]
    try:
        assert hosts[0].snapshot(run_id)["status"] == "waiting-approval"
        notes = [notifier(smtp, h) for h in hosts]
        with ThreadPoolExecutor(2) as pool:  # two recovering processes race for the same row
            sent = list(pool.map(lambda n: n.deliver_due(), notes))
        assert sorted(sent) == [0, 1]
        assert len(smtp.mailbox.to("alice@example.test")) == 1
        assert [n.deliver_due() for n in notes] == [0, 0]
    finally:
        for h in hosts:
            h.saver.close()


def test_a_worker_dying_mid_send_is_retried_after_its_lease(host: WopHost, smtp: Smtp, clock: Clock) -> None:
    notes = notifier(smtp, host)
    run_id = run(host, "lease", approvers=["alice"], timeout=3600)
    with host.engine.begin() as conn:
        (claimed,) = claim_due(conn, now=clock(), lease=timedelta(minutes=2))  # then the worker "dies"
    assert claimed.state == "sending"
    assert notes.deliver_due() == 0  # the lease still holds
    clock.advance(minutes=2, seconds=1)
    assert notes.deliver_due() == 1
    (row,) = notes.notifications(run_id)
    assert (row.state, row.attempts) == ("sent", 2)
    assert len(smtp.mailbox.to("alice@example.test")) == 1


def test_a_failing_membership_resolver_never_blocks_the_run(db_url: str, smtp: Smtp) -> None:
    def broken(principal: Principal) -> Membership:
        raise RuntimeError("directory service down")

    host = WopHost.from_url(db_url, ref_kinds=("principal", "group"), membership=broken)
    try:
        notes = notifier(smtp, host)
        run_id = run(host, "broken", group_refs=["ops"], timeout=600)
        assert host.snapshot(run_id)["status"] == "waiting-approval"  # suspended, recorded, unharmed
        assert notes.notifications(run_id) == []
    finally:
        host.saver.close()


def test_unreachable_apprise_webhook_dead_letters_with_the_error(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    port = free_port()  # nothing listens here
    notes = notifier(
        smtp,
        host,
        NotifyPolicy(attempts=2, backoff=timedelta(seconds=5)),
        apprise={"alice": f"json://127.0.0.1:{port}/hook"},
        allow=AllowList(loopback_http_ports=frozenset({port})),
    )
    run_id = run(host, "chatdown", approvers=["alice"], timeout=600)
    assert notes.deliver_due() == 0
    clock.advance(seconds=5)
    assert notes.deliver_due() == 0
    (dead,) = notes.dead_letters(run_id)
    assert dead.attempts == 2
    assert (
        dead.last_error is not None
        and f"json://127.0.0.1:{port}: Apprise could not deliver" in dead.last_error
    )
    assert "/hook" not in dead.last_error  # addresses are redacted to scheme and host
    assert host.snapshot(run_id)["status"] == "waiting-approval"


def test_an_unexpected_error_at_delivery_is_retried_then_dead_lettered(
    db_url: str, smtp: Smtp, clock: Clock
) -> None:
    down = {"now": False}

    def flaky(principal: Principal) -> Membership:
        if down["now"]:
            raise RuntimeError("directory service down")
        return _membership(principal)

    host = WopHost.from_url(db_url, clock=clock, ref_kinds=("principal", "group"), membership=flaky)
    try:
        notes = notifier(smtp, host, NotifyPolicy(attempts=2, backoff=timedelta(seconds=5)))
        run_id = run(host, "flaky", group_refs=["ops"], timeout=600)
        down["now"] = True  # the link's eligibility check fails at delivery
        assert notes.deliver_due() == 0
        assert notes.notifications(run_id)[0].state == "pending"
        clock.advance(seconds=5)
        assert notes.deliver_due() == 0
        dead = notes.dead_letters(run_id)
        assert len(dead) == 2 and all(
            "internal: RuntimeError: directory service down" in (d.last_error or "") for d in dead
        )
        down["now"] = False
        assert host.snapshot(run_id)["status"] == "waiting-approval"
    finally:
        host.saver.close()


def test_a_webhook_redirect_is_never_followed(host: WopHost, smtp: Smtp, webhook: Webhook) -> None:
    target = Webhook()
    target.thread.start()
    try:
        webhook.redirect_to = f"http://127.0.0.1:{target.port}/elsewhere"
        ports = frozenset({webhook.port, target.port})
        notes = notifier(
            smtp,
            host,
            NotifyPolicy(attempts=1),
            apprise={"alice": f"json://127.0.0.1:{webhook.port}/hook?redirect=yes"},
            allow=AllowList(loopback_http_ports=ports),
        )
        run_id = run(host, "redirect", approvers=["alice"], timeout=600)
        assert notes.deliver_due() == 0
        assert len(webhook.bodies) == 1 and target.bodies == []
        (dead,) = notes.dead_letters(run_id)
        assert "Apprise could not deliver" in (dead.last_error or "")
    finally:
        target.server.shutdown()
        target.server.server_close()
