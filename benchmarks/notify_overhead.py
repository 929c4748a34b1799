"""What notifications cost: planning in the interrupt's transaction, and sending an email.

Interleaved rounds on SQLite: each round creates ``--runs`` runs that suspend on a two-approver
gate, once on a host without a notifier and once with one (the order alternates per round), then
delivers the planned emails (two per run, each with a personal link) to a loopback aiosmtpd.
Prints the median of the per-round figures::

    PYTHONPATH=src:. python benchmarks/notify_overhead.py --runs 100 --rounds 5
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from typing import Any

from aiosmtpd.controller import Controller
from tests.notify.graphs import gate_graph

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.notify import Directory, EmailChannel, LinkSigner, Notifier, SmtpSettings
from wop_langgraph.tokens import SigningKeys


class _Sink:
    received = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        _Sink.received += 1
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _round(runs: int, notify: bool, port: int) -> tuple[float, float]:
    """(ms per create_run, ms per delivered email or 0)."""
    host = WopHost.from_url(f"sqlite:///{tempfile.mkdtemp()}/bench.db")
    try:
        host.register("wf", gate_graph(approvers=["alice", "bob"], required_approvals=2, timeout=3600))
        notifier = None
        if notify:
            notifier = Notifier(
                Directory.from_mapping({"alice": {"email": "a@x.test"}, "bob": {"email": "b@x.test"}}),
                email=EmailChannel(SmtpSettings("127.0.0.1", port)),
                links=LinkSigner(SigningKeys({"k1": "benchmark-secret-0123456789"}), "https://wop.test"),
            ).attach(host)
        start = time.perf_counter()
        for _ in range(runs):
            host.create_run("wf", {}, owner=Principal("acme", "owner"))
        create_ms = (time.perf_counter() - start) / runs * 1000
        if notifier is None:
            return create_ms, 0.0
        before = _Sink.received
        start = time.perf_counter()
        notifier.deliver_due()
        sent = _Sink.received - before
        return create_ms, (time.perf_counter() - start) / max(sent, 1) * 1000
    finally:
        host.saver.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    port = _free_port()
    controller = Controller(_Sink(), hostname="127.0.0.1", port=port)
    controller.start()
    plain: list[float] = []
    notified: list[float] = []
    email: list[float] = []
    try:
        for index in range(args.rounds):
            order = (False, True) if index % 2 == 0 else (True, False)
            for notify in order:
                create_ms, email_ms = _round(args.runs, notify, port)
                (notified if notify else plain).append(create_ms)
                if notify:
                    email.append(email_ms)
    finally:
        controller.stop()
    ratios = [n / p for n, p in zip(notified, plain, strict=True)]
    print(f"create_run to a 2-approver gate, SQLite, {args.runs} runs x {args.rounds} rounds (medians):")
    print(f"  without notifier {statistics.median(plain):.2f} ms/run")
    print(
        f"  with notifier    {statistics.median(notified):.2f} ms/run (ratio {statistics.median(ratios):.3f})"
    )
    print(f"  email with a personal link to loopback SMTP: {statistics.median(email):.2f} ms/email")


if __name__ == "__main__":
    main()
