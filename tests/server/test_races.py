"""Exactly-once over real processes: two concurrent HTTP resolves, 100 times.

On SQLite both requests go to one uvicorn process; on PostgreSQL to two processes sharing one
database. Each race must end with exactly one 200 and one ``409 interrupt_already_resolved``, one
``interrupt.resolved`` carrying the winner's value, one resume, and the run in the state the
winner's value leads to.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.server.conftest import ALICE
from tests.server.process import rested, served
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow
RACES = 100


@pytest.fixture
def servers(db_url: str) -> Iterator[tuple[str, str]]:
    if db_url.startswith("sqlite"):
        with served(db_url) as base:
            yield base, base
        return
    with served(db_url) as first, served(db_url) as second:
        yield first, second


def race(
    clients: tuple[httpx.Client, httpx.Client], run_id: str, actions: tuple[str, str]
) -> list[tuple[int, str, str]]:
    """Two resolves released together; each value is told apart by its feedback."""
    barrier = threading.Barrier(2)

    def resolve(index: int) -> tuple[int, str, str]:
        value = {"action": actions[index], "feedback": f"from-{index}"}
        barrier.wait()
        response = clients[index].post(
            f"/runs/{project_id(run_id)}/interrupts/review", json={"resumeValue": value}
        )
        body = response.json()
        return response.status_code, f"from-{index}", body.get("error") or body.get("status")

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(resolve, (0, 1)))


def run_races(servers: tuple[str, str], actions: tuple[str, str]) -> None:
    with (
        httpx.Client(base_url=servers[0], headers=ALICE, timeout=60) as a,
        httpx.Client(base_url=servers[1], headers=ALICE, timeout=60) as b,
    ):
        for _ in range(RACES):
            created = a.post("/runs", json={"workflowId": "approve"})
            assert created.status_code == 201, created.text
            run_id = created.json()["runId"]
            assert rested(a, run_id)["status"] == "waiting-approval"
            outcomes = race((a, b), run_id, actions)
            assert sorted(status for status, _, _ in outcomes) == [200, 409], outcomes
            winner = next(origin for status, origin, _ in outcomes if status == 200)
            assert next(code for status, _, code in outcomes if status == 409) == "interrupt_already_resolved"
            assert next(code for status, _, code in outcomes if status == 200) == "running"  # at commit
            final = rested(a, run_id)
            events = a.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}).json()["events"]
            resolved = [e for e in events if e["type"] == "interrupt.resolved"]
            resumed = [e for e in events if e["type"] == "node.resumed"]
            assert len(resolved) == 1 and len(resumed) == 1, [e["type"] for e in events]
            value = resolved[0]["payload"]["resumeValue"]
            assert value["feedback"] == winner, (outcomes, value)
            expected = "completed" if value["action"] == "accept" else "failed"
            assert resolved[0]["payload"]["action"] == value["action"], resolved[0]["payload"]
            assert final["status"] == expected


def test_concurrent_resolves_are_exactly_once(servers: tuple[str, str]) -> None:
    run_races(servers, ("accept", "accept"))


def test_concurrent_conflicting_decisions_keep_the_winners_value(servers: tuple[str, str]) -> None:
    run_races(servers, ("accept", "reject"))
