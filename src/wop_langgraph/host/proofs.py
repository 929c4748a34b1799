"""The host's proofs of its runs: receipts issued as decisions commit and as drives end,
bundles exported, runs verified in place (see :mod:`wop_langgraph.proof`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from wop_langgraph.proof.keys import PublicKeys, ReceiptKeys
from wop_langgraph.proof.verify import Report
from wop_langgraph.protocol.errors import NotFound
from wop_langgraph.store.engine import Engine, reading
from wop_langgraph.store.proof_bundle import export_bundle, verify_stored
from wop_langgraph.store.receipt_issuing import issue_receipts
from wop_langgraph.store.runs import get_run

__all__ = ["Proofs"]

_log = logging.getLogger(__name__)


class Proofs:
    """Receipts of one host's runs, signed with ``keys`` (none issued while it is ``None``)."""

    def __init__(self, engine: Engine, clock: Callable[[], datetime]) -> None:
        self._engine = engine
        self._clock = clock
        self.keys: ReceiptKeys | None = None

    def public_keys(self) -> PublicKeys:
        """The verification keys (empty without receipt keys)."""
        return PublicKeys({}) if self.keys is None else self.keys.public()

    def issue(self, run_id: str) -> None:
        """Sign what ``run_id`` lacks. Never raises: the next drive's end issues what a failure
        left out (the log itself is already chained)."""
        if self.keys is None:
            return
        try:
            with self._engine.begin() as conn:
                issue_receipts(conn, run_id, self.keys, now=self._clock())
        except Exception:  # a proof must not fail the decision it proves
            _log.exception("issuing the receipts of run %s failed; the next drive's end retries", run_id)

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
