"""Per-run execution locks: at most one process drives a run's graph at a time.

LangGraph has no per-thread lock of its own (LANGGRAPH_NOTES §0.5), so two resumes of one
thread at once would both run. The lock is taken without waiting: a caller that does not get it
leaves its (already committed) resolution to the holder, which looks for undelivered
resolutions again before letting go. The lock dies with its process, so a crash never leaves a
run locked: PostgreSQL session advisory locks end with the session, ``flock`` locks with the
file descriptor.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Engine, text

__all__ = ["RunLocks"]


class RunLocks:
    """Non-blocking, process-crash-safe locks keyed by run id, for one database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._local: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        database = engine.url.database
        self._folder: Path | None = None
        if engine.dialect.name == "sqlite" and database not in (None, "", ":memory:"):
            self._folder = Path(f"{database}.locks")

    @contextlib.contextmanager
    def hold(self, run_id: str) -> Iterator[bool]:
        """Try to lock ``run_id``; yields whether this caller holds the lock."""
        local = self._local_lock(run_id)
        if not local.acquire(blocking=False):
            yield False
            return
        try:
            with self._process_lock(run_id) as held:
                yield held
        finally:
            local.release()

    def _local_lock(self, run_id: str) -> threading.Lock:
        with self._guard:
            return self._local.setdefault(run_id, threading.Lock())

    @contextlib.contextmanager
    def _process_lock(self, run_id: str) -> Iterator[bool]:
        digest = hashlib.sha256(run_id.encode()).digest()
        if self._engine.dialect.name == "postgresql":
            key = int.from_bytes(digest[:8], "big", signed=True)
            with self._engine.connect() as conn:
                held = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
                conn.commit()
                try:
                    yield held
                finally:
                    if held:
                        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                        conn.commit()
            return
        if self._folder is None:
            yield True  # a private in-memory database: one process by construction
            return
        self._folder.mkdir(exist_ok=True)
        fd = os.open(self._folder / f"{digest.hex()[:32]}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
