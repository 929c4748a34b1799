"""``Idempotency-Key`` for the server's POSTs (SPEC_NOTES §4), over the generic store records.

Records are keyed ``(tenant, endpoint, key)``. A replay answers the stored status and body with
``OpenWOP-Idempotent-Replay: true``; the same key with another request is ``409
idempotency_key_mismatch``; a duplicate while the first is running is ``409
idempotency_in_flight``. Only 2xx and non-retryable 4xx outcomes are stored; a refusal a retry
could fix (validation, auth, rate limit, 5xx) releases the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse

from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import (
    IdempotencyInFlight,
    IdempotencyKeyInvalid,
    IdempotencyKeyMismatch,
    WopError,
)
from wop_langgraph.store import idempotency as records
from wop_langgraph.store.engine import Connection, Engine

__all__ = ["KEY_PATTERN", "REPLAY_HEADER", "CompleteIn", "run_idempotent", "run_idempotent_atomic"]

KEY_PATTERN = re.compile(r"^[A-Za-z0-9._~-]{22,128}$")
REPLAY_HEADER = "OpenWOP-Idempotent-Replay"
_NEVER_STORED_CODES = frozenset({"validation_error", "idempotency_key_invalid"})
_NEVER_STORED_STATUSES = frozenset({401, 403, 429})

Outcome = tuple[int, dict[str, Any]]


def check_key(key: str | None) -> None:
    """Refuse a key outside the grammar (before anything else happens).

    Raises:
        IdempotencyKeyInvalid: the key is not ``^[A-Za-z0-9._~-]{22,128}$``.
    """
    if key is not None and not KEY_PATTERN.match(key):
        raise IdempotencyKeyInvalid(
            "Idempotency-Key must match ^[A-Za-z0-9._~-]{22,128}$ (e.g. a UUIDv4)",
            details={"header": "Idempotency-Key"},
        )


#: Stores a request's 2xx answer inside the transaction that commits what it did.
CompleteIn = Callable[[Connection, int, dict[str, Any]], None]


def run_idempotent(
    host: WopHost,
    *,
    tenant: str,
    endpoint: str,
    key: str | None,
    request_body: Any,
    action: Callable[[], Outcome],
) -> JSONResponse:
    """Run ``action`` at most once per ``(tenant, endpoint, key)`` and answer its outcome.

    Raises:
        IdempotencyKeyInvalid, IdempotencyKeyMismatch, IdempotencyInFlight: as above.
        WopError: whatever ``action`` raised (stored first when it is a final outcome).
    """
    return run_idempotent_atomic(
        host, tenant=tenant, endpoint=endpoint, key=key, request_body=request_body, action=lambda _: action()
    )


def run_idempotent_atomic(
    host: WopHost,
    *,
    tenant: str,
    endpoint: str,
    key: str | None,
    request_body: Any,
    action: Callable[[CompleteIn], Outcome],
) -> JSONResponse:
    """:func:`run_idempotent` for an action that can store its answer where it commits.

    ``action`` gets a :data:`CompleteIn` to call inside its transaction: then a process that
    dies after that commit, before answering, leaves the answer stored, and the client's retry
    replays it instead of doing the work a second time (a second run).
    """
    check_key(key)
    if key is None:
        status, body = action(_nothing_to_store)
        return JSONResponse(body, status_code=status)
    engine: Engine = host.engine
    digest = records.request_hash("POST", endpoint, request_body)
    with engine.begin() as conn:
        started = records.begin(
            conn, scope=tenant, endpoint=endpoint, key=key, digest=digest, now=host.clock()
        )
    if started.outcome is records.BeginOutcome.MISMATCH:
        raise IdempotencyKeyMismatch("this Idempotency-Key was already used with a different request")
    if started.outcome is records.BeginOutcome.IN_FLIGHT:
        raise IdempotencyInFlight("a request with this Idempotency-Key is still being processed")
    if started.outcome is records.BeginOutcome.REPLAY:
        assert started.response is not None
        stored = started.response
        return JSONResponse(
            stored.body, status_code=stored.status_code, headers={**stored.headers, REPLAY_HEADER: "true"}
        )
    stored_in_transaction = False

    def complete_in(conn: Connection, status: int, body: dict[str, Any]) -> None:
        nonlocal stored_in_transaction
        response = records.StoredResponse(status, {}, body)
        records.complete(conn, scope=tenant, endpoint=endpoint, key=key, response=response, now=host.clock())
        stored_in_transaction = True

    try:
        status, body = action(complete_in)
    except WopError as exc:
        if _stored(exc):
            _finish(host, tenant, endpoint, key, records.StoredResponse(exc.status, {}, exc.envelope()))
        else:
            _release(host, tenant, endpoint, key)
        raise
    except BaseException:
        _release(host, tenant, endpoint, key)
        raise
    if not stored_in_transaction:
        _finish(host, tenant, endpoint, key, records.StoredResponse(status, {}, body))
    return JSONResponse(body, status_code=status)


def _nothing_to_store(conn: Connection, status: int, body: dict[str, Any]) -> None:
    """:data:`CompleteIn` of a request without a key."""


def _stored(exc: WopError) -> bool:
    return (
        400 <= exc.status < 500
        and exc.code not in _NEVER_STORED_CODES
        and exc.status not in _NEVER_STORED_STATUSES
        and not exc.retryable
    )


def _finish(host: WopHost, tenant: str, endpoint: str, key: str, response: records.StoredResponse) -> None:
    with host.engine.begin() as conn:
        records.complete(conn, scope=tenant, endpoint=endpoint, key=key, response=response, now=host.clock())


def _release(host: WopHost, tenant: str, endpoint: str, key: str) -> None:
    with host.engine.begin() as conn:
        records.release(conn, scope=tenant, endpoint=endpoint, key=key)
