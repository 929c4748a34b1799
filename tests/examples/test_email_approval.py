"""The email example against a real SMTP server on loopback: alice's email carries her own link."""

from __future__ import annotations

import re
from pathlib import Path

from tests.notify.conftest import Smtp, body_text, smtp  # noqa: F401 (fixture)
from wop_langgraph._clock import utcnow
from wop_langgraph.examples.email_approval import main
from wop_langgraph.tokens import SigningKeys, verify

KEYS = "k1=example-secret-0123456789abcdef"


def test_the_example_emails_alice_her_personal_link(tmp_path: Path, smtp: Smtp) -> None:  # noqa: F811
    db = f"sqlite:///{tmp_path / 'example.db'}"
    argv = ["--db", db, "--smtp", f"{smtp.host}:{smtp.port}", "--signing-keys", KEYS]
    assert main([*argv, "--public-url", "https://wop.example.test"]) == 0
    (mail,) = smtp.mailbox.to("alice@example.test")
    assert "Ship release 8?" in mail["Subject"]
    (token,) = re.findall(r"https://wop\.example\.test/interrupts/(ow2\.[A-Za-z0-9._~-]+)", body_text(mail))
    assert verify(SigningKeys.parse(KEYS), token, now=utcnow()).approver == "alice"
