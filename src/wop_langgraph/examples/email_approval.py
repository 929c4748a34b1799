"""Send an approval by email to a local SMTP server, with a personal link for the reviewer.

Start a local SMTP server that prints what it receives, then the example::

    python -m aiosmtpd -n -l 127.0.0.1:1025          # terminal 1 (pip install aiosmtpd)
    python -m wop_langgraph.examples.email_approval  # terminal 2

The example registers a graph whose ``review`` node asks ``alice`` to approve a release, attaches
a :class:`~wop_langgraph.notify.Notifier` (directory: alice's address; email over the SMTP server;
links signed on ``--public-url``), creates a run, and delivers the outbox: the email (HTML with a
plain-text part) carries alice's personal link. Serve the same database with ``wop-langgraph
serve`` on that public URL and the link opens the review page.
"""

from __future__ import annotations

import argparse
import operator
import secrets
import sys
from collections.abc import Sequence
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wop_langgraph import request_approval
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.notify import Directory, EmailChannel, LinkSigner, Notifier, SmtpSettings
from wop_langgraph.tokens import SigningKeys

__all__ = ["WORKFLOW_ID", "build_graph", "main", "send_one"]

WORKFLOW_ID = "release-approval"


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def build_graph() -> CompiledStateGraph:  # type: ignore[type-arg]
    """``review`` (alice approves release 8 within a day) -> ``ship``."""

    def review(state: State) -> State:
        request_approval(
            "release-8",
            "release",
            "Ship release 8?",
            description="Release 8 adds exports and fixes two crashes.",
            artifact_data={"changes": ["CSV export", "crash fix in search", "crash fix in login"]},
            approvers=["alice"],
            timeout=24 * 3600,
        )
        return {"log": ["review"]}

    def ship(state: State) -> State:
        return {"log": ["ship"]}

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_node("ship", ship)
    builder.add_edge(START, "review")
    builder.add_edge("review", "ship")
    builder.add_edge("ship", END)
    return builder.compile()


def send_one(db_url: str, smtp: SmtpSettings, public_url: str, keys: SigningKeys, to: str) -> str:
    """Create a run that waits for alice, email her (at ``to``) her link; returns the run id."""
    host = WopHost.from_url(db_url)
    try:
        host.register(WORKFLOW_ID, build_graph())
        notifier = Notifier(
            Directory.from_mapping({"alice": {"email": to}}),
            email=EmailChannel(smtp),
            links=LinkSigner(keys, public_url),
        ).attach(host)
        run_id = str(host.create_run(WORKFLOW_ID, {}, owner=Principal("acme", "release-bot"))["runId"])
        notifier.deliver_due()
        for note in notifier.notifications(run_id):
            print(f"{note.purpose} to {note.recipient}: {note.state} {note.last_error or ''}".rstrip())
        return run_id
    finally:
        host.saver.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wop_langgraph.examples.email_approval")
    parser.add_argument("--db", default="sqlite:///email-approval.db", help="database URL")
    parser.add_argument("--smtp", default="127.0.0.1:1025", help="SMTP server host:port")
    parser.add_argument("--to", default="alice@example.test", help="alice's email address")
    parser.add_argument("--public-url", default="http://127.0.0.1:8000", help="origin of the links")
    parser.add_argument(
        "--signing-keys", help="kid=secret,... as WOP_SIGNING_KEYS (default: a fresh random key)"
    )
    args = parser.parse_args(argv)
    host, _, port = args.smtp.rpartition(":")
    keys = SigningKeys.parse(args.signing_keys or f"k1={secrets.token_hex(32)}")
    run_id = send_one(args.db, SmtpSettings(host, int(port)), args.public_url, keys, args.to)
    print(f"run {run_id} waits for alice; her link is in the email.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
