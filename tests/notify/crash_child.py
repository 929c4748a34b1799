"""A host process that suspends a run on a notifying gate, then dies (SIGKILL) before delivering.

Usage: ``python -m tests.notify.crash_child DB_URL SMTP_PORT``.
"""

from __future__ import annotations

import os
import signal
import sys

from tests.notify.graphs import WORKFLOWS
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.notify import Directory, EmailChannel, Notifier, SmtpSettings


def main(db_url: str, smtp_port: int) -> None:
    host = WopHost.from_url(db_url)
    host.register("release", WORKFLOWS["release"])
    Notifier(
        Directory.from_mapping({"alice": {"email": "alice@example.test"}}),
        email=EmailChannel(SmtpSettings("127.0.0.1", smtp_port)),
    ).attach(host)  # plans in the interrupt's transaction; its delivery thread is never started
    snapshot = host.create_run("release", {}, owner=Principal(tenant="acme", subject_id="owner"))
    print(snapshot["runId"], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
