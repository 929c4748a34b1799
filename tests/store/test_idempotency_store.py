"""Idempotency records: process once, replay the stored response, refuse mismatches and duplicates."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from tests.store._workers import BARRIER_TIMEOUT_S

from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.idempotency import (
    IDEMPOTENCY_RETENTION,
    IN_FLIGHT_LEASE,
    Begin,
    BeginOutcome,
    StoredResponse,
    begin,
    complete,
    purge_expired,
    release,
    request_hash,
)
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.run_tables import idempotency_table

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
TENANT = "acme"
ENDPOINT = "POST /v1/runs"
DIGEST = request_hash("POST", "/v1/runs", {"workflowId": "approve-expense", "inputs": {"amount": 12}})
OTHER_DIGEST = request_hash("POST", "/v1/runs", {"workflowId": "approve-expense", "inputs": {"amount": 13}})
RESPONSE = StoredResponse(
    status_code=201,
    headers={"Location": "/v1/runs/acme/run-0123456789abcdef", "Content-Type": "application/json"},
    body={"runId": "acme/run-0123456789abcdef", "status": "running", "nested": [1, {"a": None}]},
)

PROCESS, REPLAY, MISMATCH, IN_FLIGHT = (
    BeginOutcome.PROCESS,
    BeginOutcome.REPLAY,
    BeginOutcome.MISMATCH,
    BeginOutcome.IN_FLIGHT,
)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url, pool_size=25, max_overflow=0)
    upgrade(eng)
    try:
        yield eng
    finally:
        eng.dispose()


def start(
    engine: Engine, key: str = "k1", *, digest: str = DIGEST, at: datetime = NOW, scope: str = TENANT
) -> Begin:
    with engine.begin() as conn:
        return begin(conn, scope=scope, endpoint=ENDPOINT, key=key, digest=digest, now=at)


def finish(
    engine: Engine, key: str = "k1", *, at: datetime = NOW, response: StoredResponse = RESPONSE
) -> None:
    with engine.begin() as conn:
        complete(conn, scope=TENANT, endpoint=ENDPOINT, key=key, response=response, now=at)


def records(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(idempotency_table)).scalar_one())


def test_first_begin_processes(engine: Engine) -> None:
    assert start(engine) == Begin(PROCESS)
    assert records(engine) == 1


def test_duplicate_while_in_flight_is_refused(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    assert start(engine, at=NOW + timedelta(seconds=1)) == Begin(IN_FLIGHT)
    assert start(engine, at=NOW + IN_FLIGHT_LEASE - timedelta(seconds=1)) == Begin(IN_FLIGHT)


def test_completed_request_replays_its_response(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    finish(engine, at=NOW + timedelta(seconds=2))
    replay = start(engine, at=NOW + timedelta(seconds=3))
    assert replay.outcome is REPLAY
    assert replay.response == RESPONSE
    assert replay.response is not None
    assert replay.response.status_code == 201
    assert replay.response.headers["Location"] == "/v1/runs/acme/run-0123456789abcdef"
    assert replay.response.body == RESPONSE.body
    # Replaying is read-only: it replays again, the same.
    assert start(engine, at=NOW + timedelta(hours=1)) == replay


def test_replay_of_an_error_response_without_headers(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    finish(engine, response=StoredResponse(status_code=409, headers={}, body=None))
    assert start(engine) == Begin(REPLAY, StoredResponse(status_code=409, headers={}, body=None))


def test_other_request_under_the_same_key_is_a_mismatch(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    assert start(engine, digest=OTHER_DIGEST) == Begin(MISMATCH)
    finish(engine)
    assert start(engine, digest=OTHER_DIGEST) == Begin(MISMATCH)
    # The mismatch did not disturb the stored outcome.
    assert start(engine) == Begin(REPLAY, RESPONSE)


def test_release_frees_the_key(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    with engine.begin() as conn:
        release(conn, scope=TENANT, endpoint=ENDPOINT, key="k1")
    assert records(engine) == 0
    # The retry may even differ: the released attempt left no outcome to mismatch against.
    assert start(engine, digest=OTHER_DIGEST) == Begin(PROCESS)
    assert start(engine, digest=OTHER_DIGEST) == Begin(IN_FLIGHT)


def test_release_keeps_a_completed_outcome(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    finish(engine)
    with engine.begin() as conn:
        release(conn, scope=TENANT, endpoint=ENDPOINT, key="k1")
    assert start(engine) == Begin(REPLAY, RESPONSE)


def test_abandoned_in_flight_record_is_taken_over_after_its_lease(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    taken_at = NOW + IN_FLIGHT_LEASE
    assert start(engine, digest=OTHER_DIGEST, at=taken_at) == Begin(PROCESS)
    # The new holder's request now owns the key: its lease and its digest.
    assert start(engine, digest=OTHER_DIGEST, at=taken_at + timedelta(seconds=1)) == Begin(IN_FLIGHT)
    assert start(engine, at=taken_at + timedelta(seconds=1)) == Begin(MISMATCH)


def test_expired_outcome_processes_again(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    finish(engine)
    after_expiry = NOW + IDEMPOTENCY_RETENTION + timedelta(seconds=1)
    assert start(engine, digest=OTHER_DIGEST, at=after_expiry) == Begin(PROCESS)
    assert start(engine, digest=OTHER_DIGEST, at=after_expiry) == Begin(IN_FLIGHT)
    assert records(engine) == 1


def test_completed_outcome_is_kept_at_least_24_hours(engine: Engine) -> None:
    assert timedelta(hours=24) <= IDEMPOTENCY_RETENTION
    assert start(engine).outcome is PROCESS
    done_at = NOW + timedelta(minutes=1)
    finish(engine, at=done_at)
    almost = done_at + timedelta(hours=23, minutes=59)
    with engine.begin() as conn:
        assert purge_expired(conn, almost) == 0
    assert start(engine, at=almost) == Begin(REPLAY, RESPONSE)
    assert start(engine, at=done_at + timedelta(hours=24)) == Begin(PROCESS)


def test_purge_expired_removes_only_expired_records(engine: Engine) -> None:
    assert start(engine, "fresh").outcome is PROCESS
    finish(engine, "fresh")
    assert start(engine, "old", at=NOW - timedelta(hours=3)).outcome is PROCESS
    finish(engine, "old", at=NOW - timedelta(hours=3))
    assert start(engine, "abandoned", at=NOW).outcome is PROCESS
    assert start(engine, "running", at=NOW + timedelta(hours=22)).outcome is PROCESS
    assert records(engine) == 4

    purge_at = NOW + timedelta(hours=22)
    with engine.begin() as conn:
        # "old" expired at now+21h, "abandoned" at now+2min; "fresh" lives to now+24h.
        assert purge_expired(conn, purge_at) == 2
    assert records(engine) == 2
    assert start(engine, "fresh", at=purge_at) == Begin(REPLAY, RESPONSE)
    assert start(engine, "running", at=purge_at) == Begin(IN_FLIGHT)
    with engine.begin() as conn:
        assert purge_expired(conn, purge_at) == 0
    assert records(engine) == 2


def test_keys_are_isolated_by_scope_endpoint_and_key(engine: Engine) -> None:
    assert start(engine).outcome is PROCESS
    finish(engine)
    assert start(engine, scope="globex") == Begin(PROCESS)
    assert start(engine, scope="globex") == Begin(IN_FLIGHT)
    assert start(engine, "k2") == Begin(PROCESS)
    with engine.begin() as conn:
        other = begin(conn, scope=TENANT, endpoint="POST /v1/other", key="k1", digest=DIGEST, now=NOW)
    assert other == Begin(PROCESS)
    assert start(engine) == Begin(REPLAY, RESPONSE)


def test_request_hash() -> None:
    body: dict[str, Any] = {"workflowId": "wf", "inputs": {"a": 1, "b": [1, 2]}}
    reordered = {"inputs": {"b": [1, 2], "a": 1}, "workflowId": "wf"}
    digest = request_hash("POST", "/v1/runs", body)
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert request_hash("POST", "/v1/runs", reordered) == digest
    assert request_hash("post", "/v1/runs", body) == digest
    different = {
        request_hash("POST", "/v1/runs", {**body, "workflowId": "other"}),
        request_hash("POST", "/v1/runs", {"workflowId": "wf", "inputs": {"a": 1, "b": [2, 1]}}),
        request_hash("POST", "/v1/runs", None),
        request_hash("POST", "/v1/runs/acme/x", body),
        request_hash("PUT", "/v1/runs", body),
        request_hash("POST", "/v1/runs", {"workflowId": "wf", "inputs": {"a": "1", "b": [1, 2]}}),
    }
    assert digest not in different
    assert len(different) == 6


def test_racing_begins_on_a_new_key_process_once(engine: Engine) -> None:
    racers = 20
    barrier = threading.Barrier(racers)
    outcomes: list[BeginOutcome] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def racer() -> None:
        try:
            with engine.connect() as conn:
                barrier.wait(BARRIER_TIMEOUT_S)
                with conn.begin():
                    outcome = begin(
                        conn, scope=TENANT, endpoint=ENDPOINT, key="race", digest=DIGEST, now=NOW
                    ).outcome
            with lock:
                outcomes.append(outcome)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=racer) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(o.value for o in outcomes) == sorted([PROCESS.value] + [IN_FLIGHT.value] * (racers - 1))
    assert records(engine) == 1
