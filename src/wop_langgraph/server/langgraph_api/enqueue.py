"""``multitask_strategy: "enqueue"``: a run created on a busy thread waits its turn, durably.

The run gets its id at the request (``pending`` in ``runs.get``) and is stored as a queued row
(:mod:`wop_langgraph.store.lg_queue`). Its turn comes when the thread's current OpenWOP run has
ended (completed, failed or cancelled) and the runs queued before it have started: a run
waiting on an interrupt has not ended (its interrupts are answered on it), so a queued run
waits behind it, where LangGraph's server would start it and drop the interrupts.

:meth:`RunQueue.promote` starts a thread's next queued run in one transaction (take the row,
create the OpenWOP run with the id given out, move the thread, seed the state): exactly one
promoter wins, in any process. It is called where a turn may have come (after a cancel through
this API, after this process drove a run to rest, right after a run is queued) and by a daemon
thread every second, which also starts, after a restart, what was queued before it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Final

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store.engine import Connection, IntegrityError, reading
from wop_langgraph.store.lg_queue import QueuedRun, next_queued, ready_threads, take_queued
from wop_langgraph.store.lg_threads import get_thread, seed_checkpoint, start_thread_run
from wop_langgraph.store.runs import TERMINAL_STATUSES

__all__ = ["ENQUEUE", "RunQueue"]

ENQUEUE: Final = "enqueue"
_log = logging.getLogger("wop_langgraph.server")
_SCAN_SECONDS = 1.0


class _Lost(Exception):
    """Another promoter (or a cancel) took the queued run first: nothing was created."""


def owner_of(queued: QueuedRun) -> Principal:
    """The requester of a queued run, as the run's owner (its Subject, no scopes: it only owns)."""
    owner = queued.owner
    return Principal(
        tenant=queued.tenant,
        subject_id=str(owner["subjectId"]),
        kind=str(owner.get("kind", "user")),
        lane=str(owner.get("lane", "api-key")),
        issuer=str(owner.get("issuer", Principal.issuer)),
    )


class RunQueue:
    """Starts enqueued runs when their turn comes (see the module docstring)."""

    def __init__(self, host: WopHost, assistant_uuid: Any) -> None:
        self.host = host
        self._assistant_uuid = assistant_uuid
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Whether queued runs may exist: a drive's end wakes the scan only then (no work on
        # the hot path of a host that never queues); the periodic scan sets it for others'.
        self._maybe_queued = False
        host.executor.after_drive.append(self._drove)

    def start(self) -> None:
        """Start the daemon scan (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="wop-lg-enqueue", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def queued(self) -> None:
        """A run was queued: scans wake on drives' ends from now on."""
        self._maybe_queued = True

    def poke(self) -> None:
        """Scan now (a run may have ended)."""
        self._wake.set()

    def _drove(self, _run_id: str) -> None:
        if self._maybe_queued:
            self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(_SCAN_SECONDS)
            self._wake.clear()
            if self._stop.is_set() or self.host.saver.closed:
                return
            try:
                self.promote_ready()
            except Exception:
                _log.exception("starting enqueued runs failed; the next scan tries again")

    def promote_ready(self) -> int:
        """Start the next queued run of every thread whose turn came; returns how many started."""
        with reading(self.host.engine) as conn:
            threads = ready_threads(conn)
        if threads:
            self._maybe_queued = True
        return sum(1 for thread_id in threads if self.promote(thread_id) is not None)

    def promote(self, thread_id: str) -> str | None:
        """Start the thread's next queued run if its turn came; its run id, or ``None`` (not its
        turn, nothing queued, or another promoter won)."""
        with reading(self.host.engine) as conn:
            row = get_thread(conn, thread_id)
            queued = next_queued(conn, thread_id)
        if row is None or queued is None:
            return None
        if row.run_id is not None and row.run_status not in TERMINAL_STATUSES:
            return None
        previous = row.run_id
        metadata = {**row.metadata}
        metadata.setdefault("graph_id", queued.graph_id)
        metadata.setdefault("assistant_id", self._assistant_uuid(queued.graph_id))

        def on_commit(conn: Connection, snapshot: dict[str, Any]) -> None:
            # One transaction: exactly one promoter takes the row and moves the thread.
            now = self.host.clock()
            if not take_queued(conn, queued.run_id) or not start_thread_run(
                conn,
                thread_id,
                expected_run_id=previous,
                run_id=queued.run_id,
                metadata=metadata,
                assistant_id=queued.assistant_id,
                run_metadata=queued.metadata,
                multitask_strategy=ENQUEUE,
                now=now,
                listed_at=queued.created_at,  # listed where it was asked for
            ):
                raise _Lost  # (rolls back the take and, on PostgreSQL, the listing)
            if previous is not None:
                seed_checkpoint(conn, previous, queued.run_id)

        try:
            self.host.create_run(
                queued.graph_id,
                queued.input,
                owner=owner_of(queued),
                wait=False,
                on_commit=on_commit,
                run_id=queued.run_id,
            )
        except (_Lost, IntegrityError):
            return None  # a concurrent promoter created it (or a cancel came first)
        return queued.run_id
