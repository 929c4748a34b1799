"""Scale-out exactly-once: 2 API replicas (``serve --workers 0``) + 2 worker processes, one PostgreSQL.

Each trial creates a run, waits until a worker has suspended it at its gate, then releases two
resolves of that one interrupt together, one to each replica, by run or by token (both surfaces
in turn). Exactly one is answered 200 and the other 409 ``interrupt_already_resolved``; the log
holds one ``interrupt.resolved`` carrying the winner's value; and the graph, driven by whichever
worker took the run, outputs exactly the value the winner sent. Trials: ``WOP_SCALEOUT_RACES``
(default 100).
"""

from __future__ import annotations

import functools
import os
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.server.conftest import ALICE, RESTING
from tests.server.process import poll_until, served, worker_process
from tests.server.race_graphs import WORKFLOW
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow

TARGET = "tests.server.race_graphs:WORKFLOWS"
RACES = int(os.environ.get("WOP_SCALEOUT_RACES", "100"))
#: Which surface each contender uses, trial after trial.
SURFACES = (("run", "run"), ("run", "token"), ("token", "token"))


@pytest.fixture
def deployment(postgres_url: str) -> Iterator[tuple[str, str]]:
    """Two API-only replicas and two worker processes on one database; the replicas' URLs."""
    with ExitStack() as stack:
        first = stack.enter_context(served(postgres_url, target=TARGET, extra_args=["--workers", "0"]))
        second = stack.enter_context(served(postgres_url, target=TARGET, extra_args=["--workers", "0"]))
        for _ in range(2):
            stack.enter_context(
                worker_process(postgres_url, target=TARGET, extra_args=["--poll-seconds", "0.5"])
            )
        yield first, second


def snapshot(client: httpx.Client, run_id: str) -> dict[str, Any]:
    response = client.get(f"/runs/{project_id(run_id)}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def value_of(index: int, trial: int) -> dict[str, Any]:
    """Contender ``index``'s resume value: told apart by feedback; odd trials also by action."""
    if index == 1 and trial % 2:
        return {
            "action": "edit-accept",
            "feedback": f"from-1-{trial}",
            "editedArtifactData": f"edited-{trial}",
        }
    return {"action": "accept", "feedback": f"from-{index}-{trial}"}


def race(clients: tuple[httpx.Client, httpx.Client], run_id: str, trial: int) -> list[tuple[int, str]]:
    """Two resolves of the run's gate, released together; (status, error code or run status) each."""
    surfaces = SURFACES[trial % len(SURFACES)]
    urls = []
    for client, surface in zip(clients, surfaces, strict=True):
        if surface == "run":
            urls.append(f"/runs/{project_id(run_id)}/interrupts/review")
        else:
            minted = client.post(f"/runs/{project_id(run_id)}/interrupts/review/tokens", json={})
            assert minted.status_code == 201, minted.text
            urls.append(f"/interrupts/{minted.json()['token']}")
    barrier = threading.Barrier(2)

    def resolve(index: int) -> tuple[int, str]:
        body = {"resumeValue": value_of(index, trial)}
        barrier.wait()
        response = clients[index].post(urls[index], json=body)
        answer = response.json()
        return response.status_code, str(answer.get("error") or answer.get("status"))

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(resolve, (0, 1)))


def test_concurrent_resolves_over_replicas_and_worker_processes(deployment: tuple[str, str]) -> None:
    wins: Counter[str] = Counter()
    with (
        httpx.Client(base_url=deployment[0], headers=ALICE, timeout=120) as a,
        httpx.Client(base_url=deployment[1], headers=ALICE, timeout=120) as b,
    ):
        for trial in range(RACES):
            created = a.post("/runs", json={"workflowId": WORKFLOW})
            assert created.status_code == 201, created.text
            run_id = created.json()["runId"]
            waiting = poll_until(
                functools.partial(snapshot, b, run_id),
                lambda s: s["status"] in RESTING,
                timeout=120,
                what="the gate",
            )
            assert waiting["status"] == "waiting-approval", waiting
            outcomes = race((a, b), run_id, trial)
            assert sorted(status for status, _ in outcomes) == [200, 409], (trial, outcomes)
            winner = next(i for i, (status, _) in enumerate(outcomes) if status == 200)
            assert outcomes[winner][1] == "running", outcomes  # answered at commit
            assert outcomes[1 - winner][1] == "interrupt_already_resolved", outcomes
            sent = value_of(winner, trial)
            final = poll_until(
                functools.partial(snapshot, a, run_id),
                lambda s: s["status"] in RESTING - {"waiting-approval"},
                timeout=120,
                what="the end of the run",
            )
            assert final["status"] == "completed", final
            events = b.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}).json()["events"]
            kinds = Counter(e["type"] for e in events)
            assert kinds["interrupt.requested"] == 1 and kinds["interrupt.resolved"] == 1, kinds
            assert kinds["node.resumed"] == 1 and kinds["run.completed"] == 1, kinds
            (resolved,) = [e for e in events if e["type"] == "interrupt.resolved"]
            logged = resolved["payload"]["resumeValue"]
            assert {k: logged.get(k) for k in sent} == sent, (
                trial,
                outcomes,
                logged,
            )  # + the host's decidedAt
            (completed,) = [e for e in events if e["type"] == "run.completed"]
            received = completed["payload"]["outputs"]["received"]
            expected = {
                "action": sent["action"],
                "feedback": sent["feedback"],
                "edited": sent.get("editedArtifactData"),
            }
            assert received == expected, (trial, outcomes, received)
            wins[f"{'ab'[winner]}:{SURFACES[trial % len(SURFACES)][winner]}"] += 1
    print(f"\n{RACES} races over 2 replicas + 2 worker processes; winners by replica:surface {dict(wins)}")
