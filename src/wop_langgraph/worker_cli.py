"""``wop-langgraph worker MODULE:ATTR --db URL``: a process that only drives queued runs.

Run any number of these (on this machine or others) against one PostgreSQL database, beside
``wop-langgraph serve --workers 0`` replicas that answer the API. Each takes queued runs of
the workflows it registers, holds a lease on each while it drives it, and stops cleanly on
SIGINT/SIGTERM (its leases then run out and other workers continue its runs). With
``WOP_NOTIFY_DIRECTORY`` set (the same ``WOP_NOTIFY_*`` settings as ``serve``), it also plans and
delivers notifications of the interrupts it records; with ``WOP_SIGNING_KEYS`` set, it delivers the
callbacks (``callbackUrl``) of the runs it drives. Its host's deadline timer applies timeouts when
they are due, whatever ``--sweep-seconds`` says. With ``WOP_RECEIPT_KEYS`` set (as for ``serve``:
every process over the database needs them), it signs the receipts of the timeouts it applies,
the checkpoints of the runs it drives and the periodic ones of waiting runs
(``WOP_RECEIPT_CHECKPOINT_SECONDS``).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from wop_langgraph._heap import freeze_startup_heap
from wop_langgraph.startup import (
    STARTUP_ERROR_STATUS,
    StartupError,
    check_database_url,
    load_workflows,
    open_host,
    redacted,
)

if TYPE_CHECKING:
    from wop_langgraph.host import WopHost
    from wop_langgraph.notify import Notifier
    from wop_langgraph.proof.keys import ReceiptKeys
    from wop_langgraph.server.callbacks import CallbackDelivery

__all__ = ["worker_main"]

COMMAND: Final = "wop-langgraph worker"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wop-langgraph worker",
        description="Drive queued runs of the given graphs (no HTTP).",
    )
    parser.add_argument(
        "target", help="MODULE:ATTR naming a compiled graph, a {workflowId: graph} dict, or a factory"
    )
    parser.add_argument("--db", dest="database_url", help="database URL (default: $WOP_DATABASE_URL)")
    parser.add_argument("--concurrency", type=int, default=4, help="worker threads (default 4)")
    parser.add_argument("--poll-seconds", type=float, default=1.0, help="idle poll interval (default 1)")
    parser.add_argument(
        "--sweep-seconds", type=float, default=5.0, help="timeout sweep interval, 0 for never (default 5)"
    )
    parser.add_argument(
        "--lease-seconds", type=float, default=15.0, help="lease lifetime without renewal (default 15)"
    )
    parser.add_argument("--conversations", action="store_true", help="enable conversation.* node calls")
    parser.add_argument("--credentials", action="store_true", help="enable request_credential")
    return parser


def worker_main(argv: Sequence[str] | None = None) -> int:
    """Run workers until SIGINT/SIGTERM; returns the exit status (2 for a configuration error,
    printed as one line naming the fix)."""
    args = build_parser().parse_args(argv)
    from wop_langgraph.log_redaction import install_log_redaction

    install_log_redaction()  # callbacks and notices carry live tokens: none may reach a log line

    url = args.database_url or os.environ.get("WOP_DATABASE_URL") or "sqlite:///wop.db"
    try:
        check_database_url(url, COMMAND)
        receipts = _receipt_keys()
        workflows = load_workflows(args.target, COMMAND)
        host = open_host(
            url,
            COMMAND,
            conversations=args.conversations,
            credentials=args.credentials,
            lease_seconds=args.lease_seconds,
        )
    except StartupError as exc:
        print(exc, file=sys.stderr)
        return STARTUP_ERROR_STATUS
    for workflow_id, graph in workflows.items():
        host.register(workflow_id, graph)
    if receipts is not None:
        host.use_receipt_keys(receipts[0], checkpoint_every=receipts[1])
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    notifier = _notifier(host)
    callbacks = _callbacks(host)
    freeze_startup_heap()
    host.recover(wait=False)
    host.start_workers(args.concurrency, poll_seconds=args.poll_seconds, sweep_seconds=args.sweep_seconds)
    print(
        f"{COMMAND}: {args.concurrency} worker(s) for {', '.join(sorted(workflows))} on {redacted(url)}",
        file=sys.stderr,
        flush=True,
    )
    try:
        stop.wait()
    finally:
        if notifier is not None:
            notifier.stop()
        if callbacks is not None:
            callbacks.stop()
        host.close()
        host.saver.close()
    return 0


def _receipt_keys() -> tuple[ReceiptKeys, float] | None:
    """The receipt keys and checkpoint interval of ``WOP_RECEIPT_KEYS``,
    ``WOP_RECEIPT_KEYS_REVOKED`` and ``WOP_RECEIPT_CHECKPOINT_SECONDS`` (``None``: unset).

    Raises:
        StartupError: a malformed key list, or an interval that is not a positive number.
    """
    text = os.environ.get("WOP_RECEIPT_KEYS", "").strip()
    if not text:
        return None
    from wop_langgraph.proof.keys import ReceiptKeys

    try:
        keys = ReceiptKeys.parse(text, revoked=os.environ.get("WOP_RECEIPT_KEYS_REVOKED", ""))
    except ValueError as exc:
        raise StartupError(f"{COMMAND}: WOP_RECEIPT_KEYS: {exc}") from None
    every = os.environ.get("WOP_RECEIPT_CHECKPOINT_SECONDS", "3600")
    try:
        seconds = float(every)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < math.inf:
        raise StartupError(
            f"{COMMAND}: WOP_RECEIPT_CHECKPOINT_SECONDS must be a positive number, not {every!r}"
        )
    return keys, seconds


def _callbacks(host: WopHost) -> CallbackDelivery | None:
    """With ``WOP_SIGNING_KEYS`` set (they sign callbacks), deliver the callbacks of the runs
    driven here: the process that drives a run sees it suspend (``serve --workers 0`` does not)."""
    if not os.environ.get("WOP_SIGNING_KEYS"):
        return None
    try:
        from wop_langgraph.server.callbacks import attach_callbacks
        from wop_langgraph.server.settings import Settings
    except ImportError:  # callbacks need the server extra's settings
        print("wop-langgraph worker: callbacks need the 'server' extra; not delivering them", file=sys.stderr)
        return None

    delivery = attach_callbacks(host, Settings())
    delivery.start()
    delivery.scan()  # suspensions recorded while no process delivered
    return delivery


def _notifier(host: WopHost) -> Notifier | None:
    """With ``WOP_NOTIFY_DIRECTORY`` set, plan and deliver notifications here too.

    Workers record the interrupts, so the outbox must be planned in their transactions.
    """
    if not os.environ.get("WOP_NOTIFY_DIRECTORY"):
        return None
    from wop_langgraph.server.notifying import notifier_from_settings
    from wop_langgraph.server.settings import Settings

    settings = Settings()
    notifier = notifier_from_settings(settings)
    if notifier is None:
        return None
    notifier.attach(host)
    notifier.start(settings.notify_poll_seconds)
    return notifier
