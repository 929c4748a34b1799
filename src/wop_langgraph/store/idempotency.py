"""Idempotency records: one stored outcome per (scope, endpoint, caller key), kept >= 24 hours.

A request first :func:`begin`\\s its key. The outcome says whether to process it (the caller now
holds the key), replay a stored response, refuse a different request under the same key, or
refuse because the first request is still running. After processing, :func:`complete` stores a
final response, or :func:`release` forgets the key when the outcome must not be cached (errors
a retry could fix), so the next attempt runs again (SPEC_NOTES §4).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from wop_langgraph._clock import as_utc
from wop_langgraph.store.run_tables import idempotency_table

__all__ = [
    "IDEMPOTENCY_RETENTION",
    "IN_FLIGHT_LEASE",
    "Begin",
    "BeginOutcome",
    "StoredResponse",
    "begin",
    "complete",
    "purge_expired",
    "release",
    "request_hash",
]

#: How long a final outcome is kept (the spec's floor is 24 hours).
IDEMPOTENCY_RETENTION = timedelta(hours=24)
#: After this long an in-flight record is presumed abandoned by a crashed process. Requests answer
#: at commit (workers drive the graphs), so a live request never holds a key nearly this long.
IN_FLIGHT_LEASE = timedelta(seconds=15)

_table = idempotency_table


class BeginOutcome(Enum):
    """What the caller of :func:`begin` must do."""

    PROCESS = "process"
    REPLAY = "replay"
    MISMATCH = "mismatch"
    IN_FLIGHT = "in_flight"


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A final response kept for replay."""

    status_code: int
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True, slots=True)
class Begin:
    """The outcome of :func:`begin`, with the stored response when it is a replay."""

    outcome: BeginOutcome
    response: StoredResponse | None = None


def request_hash(method: str, path: str, body: Any) -> str:
    """A digest of the request: method, canonical path and canonical JSON body."""
    canonical = json.dumps([method.upper(), path, body], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def begin(conn: Connection, *, scope: str, endpoint: str, key: str, digest: str, now: datetime) -> Begin:
    """Take the key for this request, or say why not.

    Must run in its own short transaction, committed before the request is processed, so that
    a concurrent duplicate sees the in-flight record.
    """
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    fresh = {
        "scope": scope,
        "endpoint": endpoint,
        "key": key,
        "request_hash": digest,
        "state": "in_flight",
        "created_at": now,
        "expires_at": now + IN_FLIGHT_LEASE,
    }
    inserted = conn.execute(
        dialect.insert(_table)
        .values(**fresh)
        .on_conflict_do_nothing(index_elements=["scope", "endpoint", "key"])
        # SQLAlchemy keeps an INSERT's rowcount only when asked; without it psycopg reports -1.
        .execution_options(preserve_rowcount=True)
    ).rowcount
    if inserted == 1:
        return Begin(BeginOutcome.PROCESS)
    where = (_table.c.scope == scope, _table.c.endpoint == endpoint, _table.c.key == key)
    query = select(_table).where(*where)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    row = conn.execute(query).mappings().one()
    if as_utc(row["expires_at"]) <= as_utc(now):
        # An expired outcome or an abandoned in-flight lease: the key is free again.
        conn.execute(update(_table).where(*where).values(**fresh))
        return Begin(BeginOutcome.PROCESS)
    if row["request_hash"] != digest:
        return Begin(BeginOutcome.MISMATCH)
    if row["state"] == "in_flight":
        return Begin(BeginOutcome.IN_FLIGHT)
    return Begin(
        BeginOutcome.REPLAY,
        StoredResponse(
            status_code=int(row["status_code"]), headers=dict(row["headers"] or {}), body=row["body"]
        ),
    )


def complete(
    conn: Connection, *, scope: str, endpoint: str, key: str, response: StoredResponse, now: datetime
) -> None:
    """Store the final response of the request that holds the key."""
    conn.execute(
        update(_table)
        .where(_table.c.scope == scope, _table.c.endpoint == endpoint, _table.c.key == key)
        .values(
            state="done",
            status_code=response.status_code,
            headers=response.headers,
            body=response.body,
            expires_at=now + IDEMPOTENCY_RETENTION,
        )
    )


def release(conn: Connection, *, scope: str, endpoint: str, key: str) -> None:
    """Forget an in-flight key whose outcome must not be cached, so a retry runs again."""
    conn.execute(
        delete(_table).where(
            _table.c.scope == scope,
            _table.c.endpoint == endpoint,
            _table.c.key == key,
            _table.c.state == "in_flight",
        )
    )


def purge_expired(conn: Connection, now: datetime) -> int:
    """Delete records past their expiry; returns how many."""
    return int(conn.execute(delete(_table).where(_table.c.expires_at <= now)).rowcount)
