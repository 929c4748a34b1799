"""Channels of one's own, through the real outbox on each database.

A ``Pager`` here is a user's channel (it keeps what it was given in a list), registered with
``Notifier(channels=[...])``: it must receive the notification planned with the interrupt,
be asked before the built-in channels, and have its failures retried or dead-lettered by the
same rules as email. The email beside it goes to a real SMTP server on loopback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.notify.conftest import Clock, Smtp, wait_until
from tests.notify.graphs import gate_graph
from tests.notify.pager import Pager
from tests.server.conftest import ALICE, READER
from tests.server.process import served
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.notify import (
    Channel,
    Channels,
    Directory,
    EmailChannel,
    LinkSigner,
    Message,
    Notifier,
    NotifyPolicy,
    SendError,
    SmtpSettings,
)
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.tokens import SigningKeys, verify

KEYS = SigningKeys({"k1": "notify-secret-0123456789abcdef"})
OWNER = Principal(tenant="acme", subject_id="owner")
LINK = re.compile(r"https://wop\.example\.test/interrupts/(ow2\.[A-Za-z0-9._~-]+)")


@pytest.fixture
def host(db_url: str, clock: Clock) -> Iterator[WopHost]:
    host = WopHost.from_url(db_url, clock=clock)
    try:
        yield host
    finally:
        host.saver.close()


def notifier(host: WopHost, smtp: Smtp | None, *channels: Channel, **contact: Any) -> Notifier:
    made = Notifier(
        Directory.from_mapping({"alice": contact}),
        policy=NotifyPolicy(attempts=3, backoff=timedelta(seconds=10)),
        email=EmailChannel(SmtpSettings(smtp.host, smtp.port)) if smtp is not None else None,
        links=LinkSigner(KEYS, "https://wop.example.test"),
        channels=channels,
    )
    return made.attach(host)


def run(host: WopHost, workflow: str) -> str:
    host.register(workflow, gate_graph(approvers=["alice"], timeout=3600))
    return str(host.create_run(workflow, {}, owner=OWNER)["runId"])


def test_a_registered_channel_receives_the_notification_beside_email(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    pager = Pager()
    notes = notifier(host, smtp, pager, email="alice@example.test", other=["pager:alice-7"])
    run_id = run(host, "paged")
    assert pager.sent == []  # planned with the interrupt, sent by the delivery pass
    assert notes.deliver_due() == 1
    ((address, message),) = pager.sent
    assert address == "pager:alice-7" and "Ship release 7?" in message.subject
    (token,) = LINK.findall(message.text)
    assert message.link is not None and token in message.link
    assert verify(KEYS, token, now=clock()).approver == "alice"  # the same personal link as email
    assert len(smtp.mailbox.to("alice@example.test")) == 1
    (row,) = notes.notifications(run_id)
    assert row.state == "sent" and row.delivered == ["mailto:alice@example.test", "pager:alice-7"]
    assert notes.deliver_due() == 0 and len(pager.sent) == 1  # exactly once


def test_a_registered_channel_is_asked_before_the_built_in_ones(host: WopHost, smtp: Smtp) -> None:
    # Apprise would take any scheme:// URL (and fail here: it knows no slack-bot://);
    # the user's channel, asked first, takes it.
    bot = Pager(prefix="slack-bot://", name="slack")
    notes = notifier(host, smtp, bot, apprise=["slack-bot://T0/C1"])
    assert [c.name for c in notes.channels] == ["slack", "email", "apprise"]
    run(host, "routed")
    assert notes.deliver_due() == 1
    assert [a for a, _ in bot.sent] == ["slack-bot://T0/C1"]


def test_an_address_no_channel_accepts_is_a_dead_letter_at_once(host: WopHost, smtp: Smtp) -> None:
    notes = notifier(host, smtp, Pager(), other=["sms:+15550100"])
    run_id = run(host, "unrouted")
    assert notes.deliver_due() == 0
    (dead,) = notes.dead_letters(run_id)
    assert dead.attempts == 1  # nothing a retry could change
    assert dead.last_error == "sms:…: no channel accepts this address (channels: pager, email, apprise)"
    assert host.snapshot(run_id)["status"] == "waiting-approval"  # the run is never affected


def test_email_without_an_smtp_server_is_a_dead_letter_that_says_so(host: WopHost) -> None:
    notes = notifier(host, None, email="alice@example.test")
    run_id = run(host, "no-smtp")
    assert notes.deliver_due() == 0
    (dead,) = notes.dead_letters(run_id)
    assert dead.attempts == 1
    assert dead.last_error == "mailto:alice@example.test: no SMTP server is configured for email"


def test_a_channels_transient_failure_is_retried_and_the_other_address_is_not_sent_again(
    host: WopHost, smtp: Smtp, clock: Clock
) -> None:
    pager = Pager(failures=[SendError("pager gateway busy"), RuntimeError("a bug in the channel")])
    notes = notifier(host, smtp, pager, email="alice@example.test", other=["pager:alice-7"])
    run_id = run(host, "flaky-pager")
    assert notes.deliver_due() == 0
    (row,) = notes.notifications(run_id)
    assert (row.state, row.attempts, row.delivered) == ("pending", 1, ["mailto:alice@example.test"])
    assert row.last_error == "pager:…: pager gateway busy"
    clock.advance(seconds=10)
    assert notes.deliver_due() == 0  # any exception other than SendError counts as transient
    (row,) = notes.notifications(run_id)
    assert (row.state, row.attempts) == ("pending", 2)
    assert row.last_error == "pager:…: internal: RuntimeError: a bug in the channel"
    clock.advance(seconds=20)
    assert notes.deliver_due() == 1
    assert [a for a, _ in pager.sent] == ["pager:alice-7"]
    assert len(smtp.mailbox.to("alice@example.test")) == 1  # delivered once, on the first pass
    assert notes.notifications(run_id)[0].state == "sent"


def test_a_channels_permanent_failure_is_a_dead_letter_at_once(host: WopHost) -> None:
    pager = Pager(failures=[SendError("no such pager", permanent=True)])
    notes = notifier(host, None, pager, other=["pager:nobody"])
    run_id = run(host, "bad-pager")
    assert notes.deliver_due() == 0
    (dead,) = notes.dead_letters(run_id)
    assert (dead.attempts, dead.last_error) == (1, "pager:…: no such pager")


def test_an_object_that_is_not_a_channel_is_refused() -> None:
    class NoAccepts:
        name = "half"

        def send(self, address: str, message: Message) -> None:
            pass

    with pytest.raises(TypeError, match="is not a Channel"):
        Channels([NoAccepts()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="is not a Channel"):
        Notifier(Directory(), channels=[NoAccepts()])  # type: ignore[list-item]


def test_the_directory_reads_other_addresses_and_refuses_bad_ones() -> None:
    directory = Directory.from_mapping({"alice": {"email": "a@example.test", "other": "pager:a"}})
    contact = directory.get("alice")
    assert contact is not None and contact.addresses == ["mailto:a@example.test", "pager:a"]
    with pytest.raises(ValueError, match="other of 'alice' must be a string or a list of strings"):
        Directory.from_mapping({"alice": {"other": [7]}})


@pytest.mark.slow  # a server process
def test_a_served_channel_named_by_the_environment_carries_a_link_that_answers(
    tmp_path: Path, smtp: Smtp
) -> None:
    pages = tmp_path / "pages.jsonl"
    env = {
        "WOP_NOTIFY_DIRECTORY": json.dumps({"alice": {"other": ["pager:alice-7"]}}),
        "WOP_NOTIFY_CHANNELS": "tests.notify.pager:FilePager",
        "WOP_TEST_PAGER_FILE": str(pages),
        "WOP_NOTIFY_POLL_SECONDS": "0.2",
    }
    with served(
        f"sqlite:///{tmp_path / 'wop.db'}", target="tests.notify.graphs:WORKFLOWS", extra_env=env
    ) as base:
        created = httpx.post(f"{base}/runs", json={"workflowId": "release"}, headers=ALICE, timeout=60)
        assert created.status_code == 201, created.text
        run_id = str(created.json()["runId"])
        wait_until(lambda: pages.exists() and pages.read_text(), "a page")
        (page,) = [json.loads(line) for line in pages.read_text().splitlines()]
        assert page["address"] == "pager:alice-7" and "Ship release 7?" in page["subject"]
        assert page["link"].startswith(f"{base}/interrupts/") and page["link"] in page["text"]
        answered = httpx.post(page["link"], json={"resumeValue": {"action": "accept"}}, timeout=30)
        assert answered.status_code == 200, answered.text

        def status() -> str:
            response = httpx.get(f"{base}/runs/{project_id(run_id)}", headers=READER, timeout=30)
            return str(response.json()["status"])

        wait_until(lambda: status() == "completed", "the run to complete")
    assert smtp.mailbox.messages == []  # no SMTP configured, and nothing was an email
