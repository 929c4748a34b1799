"""The host's proofs of its runs: receipts signed in the transaction that records a decision
or a counted vote, checkpoints signed as drives end and, periodically, of runs that wait;
bundles exported, runs verified in place (see :mod:`wop_langgraph.proof`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from wop_langgraph._clock import as_utc
from wop_langgraph.proof.keys import PublicKeys, ReceiptKeys
from wop_langgraph.proof.verify import Report
from wop_langgraph.protocol.errors import NotFound
from wop_langgraph.store.engine import Connection, Engine, reading
from wop_langgraph.store.events import StoredEvent
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.store.proof_bundle import export_bundle, verify_stored
from wop_langgraph.store.receipt_issuing import issue_decision, issue_receipts, issue_vote, refresh_checkpoint
from wop_langgraph.store.receipts import waiting_unrefreshed
from wop_langgraph.store.runs import get_run

__all__ = ["DEFAULT_CHECKPOINT_SECONDS", "Proofs"]

_log = logging.getLogger(__name__)

#: How old a waiting run's newest checkpoint may grow before the host signs a fresh one. An
#: hour bounds what an auditor cannot tell about a waiting run (whether its log still ends
#: where it did) to an hour, for one signature (~0.1 ms) and one small row per waiting run
#: per hour; a fresh one replaces the last periodic one of the same head, so a run waiting a
#: month keeps two checkpoints of its head, not 720.
DEFAULT_CHECKPOINT_SECONDS = 3600.0
#: Runs refreshed per transaction-sized batch, and batches per pass: a backlog (keys newly
#: configured, a host that was down) is caught up over several passes, never in one long one.
_BATCH = 100
_BATCHES_PER_PASS = 10
#: The periodic pass looks at most this often (and at least every tenth of the interval).
_LONGEST_PASS_GAP = timedelta(seconds=60)


class Proofs:
    """Receipts of one host's runs, signed with ``keys`` (none issued while it is ``None``)."""

    def __init__(self, engine: Engine, clock: Callable[[], datetime]) -> None:
        self._engine = engine
        self._clock = clock
        self.keys: ReceiptKeys | None = None
        #: A waiting run's newest checkpoint is re-signed once it is this old.
        self.checkpoint_every = timedelta(seconds=DEFAULT_CHECKPOINT_SECONDS)
        self._next_pass: datetime | None = None
        self._pass_lock = threading.Lock()

    def use(self, keys: ReceiptKeys | None, checkpoint_every: float | None = None) -> None:
        """Sign with ``keys`` (``None``: stop); ``checkpoint_every`` seconds, if given, between
        a waiting run's checkpoints.

        Raises:
            ValueError: ``checkpoint_every`` is not positive.
        """
        if checkpoint_every is not None:
            if not checkpoint_every > 0:
                raise ValueError("checkpoint_every must be a positive number of seconds")
            self.checkpoint_every = timedelta(seconds=checkpoint_every)
            self._next_pass = None
        self.keys = keys

    def public_keys(self) -> PublicKeys:
        """The verification keys (empty without receipt keys)."""
        return PublicKeys({}) if self.keys is None else self.keys.public()

    def decided_in(self, conn: Connection, interrupt: InterruptRecord, logged: StoredEvent) -> None:
        """Sign, in ``conn``'s transaction (the one recording it), the receipts of the decision
        on ``interrupt`` that the ``interrupt.resolved`` ``logged`` records. A failure to sign
        fails the decision: a committed decision always has its receipt."""
        keys = self.keys
        if keys is not None:
            issue_decision(conn, interrupt, logged, keys, now=self._clock())

    def voted_in(self, conn: Connection, interrupt: InterruptRecord, vote: Mapping[str, Any]) -> None:
        """Sign, in ``conn``'s transaction (the one recording it), the receipt of ``vote``
        counted on ``interrupt`` without deciding it."""
        keys = self.keys
        if keys is not None:
            issue_vote(conn, interrupt, vote, keys, now=self._clock())

    def issue(self, run_id: str) -> None:
        """After a drive: checkpoint ``run_id``'s head and sign what its log holds without a
        receipt (decisions recorded while no key was configured, a replay fork's copied
        answers). Never raises: the next drive's end issues what a failure left out."""
        if self.keys is None:
            return
        try:
            with self._engine.begin() as conn:
                issue_receipts(conn, run_id, self.keys, now=self._clock())
        except Exception:  # a checkpoint must not fail the drive it follows
            _log.exception("issuing the receipts of run %s failed; the next drive's end retries", run_id)

    def checkpoint_waiting(self, *, force: bool = False) -> int:
        """Sign a fresh checkpoint of each run waiting for a person whose newest checkpoint is
        older than :attr:`checkpoint_every`; returns how many were signed here.

        Run from the host's periodic work (its deadline timer and sweep). Without keys it costs
        nothing; otherwise at most one pass per tenth of the interval (one minute at most, or
        ``force``), each one indexed read when no run waits. Safe from several processes over
        one database: see :func:`~wop_langgraph.store.receipt_issuing.refresh_checkpoint`.
        """
        keys = self.keys
        if keys is None:
            return 0
        now = as_utc(self._clock())
        with self._pass_lock:
            if not force and self._next_pass is not None and now < self._next_pass:
                return 0
            self._next_pass = now + min(self.checkpoint_every / 10, _LONGEST_PASS_GAP)
        older_than = now - self.checkpoint_every
        signed = 0
        for _ in range(_BATCHES_PER_PASS):
            with reading(self._engine) as conn:
                due = waiting_unrefreshed(conn, older_than, limit=_BATCH)
            before = signed
            for run_id in due:
                with self._engine.begin() as conn:
                    found = refresh_checkpoint(conn, run_id, keys, now=now, older_than=older_than)
                signed += found is not None
            if len(due) < _BATCH or signed == before:
                break  # all seen (or none could be refreshed: the next pass looks again)
        return signed

    def export(self, run_id: str) -> dict[str, Any]:
        """The proof bundle of ``run_id``. Raises NotFound: no such run."""
        with reading(self._engine) as conn:
            if get_run(conn, run_id) is None:
                raise NotFound(f"run {run_id!r} not found")
            return export_bundle(conn, run_id, self.public_keys(), now=self._clock())

    def verify(self, run_id: str) -> Report:
        """Verify ``run_id`` in place against this host's keys. Raises NotFound: no such run."""
        with reading(self._engine) as conn:
            if get_run(conn, run_id) is None:
                raise NotFound(f"run {run_id!r} not found")
            return verify_stored(conn, run_id, self.public_keys(), now=self._clock())
