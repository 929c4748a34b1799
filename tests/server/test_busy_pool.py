"""A burst of resolves while every worker is busy never starves the connection pool.

Thirty-two concurrent ``POST /runs/{runId}/interrupts/approve`` reach the served app while its
four in-process workers drive runs whose node after the gate sleeps. On SQLite a write queues on
the file's process-wide write lock while holding its pooled connection; a thread that took the
lock first and then waited for the pool (as the saver once did) waited on those very threads,
until the pool timeout turned a resolve into a 500. The pool here is small and its timeout
short, so the lock-order bug shows in seconds: every resolve must answer 200 well inside the
pool timeout, and no connection may stay checked out across a node's sleep.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from sqlalchemy import Engine, event

from tests.server.conftest import ALICE, at_rest, make_settings, serving
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import request_approval
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app
from wop_langgraph.store.saver import SQLModelSaver

CLIENTS = 32
WORKERS = 4
SLEEP = 0.5  # the node after the gate: stands for a model or tool call
# Pool and timeout small enough that a thread waiting for the pool while it holds what the
# pool's holders wait for fails in seconds; PostgreSQL's two LISTEN threads keep one each.
POOL_SIZE = 4
POOL_TIMEOUT = 5.0
RESOLVE_BOUND = 3.0  # seconds; well under POOL_TIMEOUT
# Threads that hold a connection for as long as they live, by design (PostgreSQL LISTEN).
LISTENERS = ("wop-listen", "wop-events-listen")


class _Checkouts:
    """Which pooled connections are checked out, since when, by which thread."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._guard = threading.Lock()
        self._out: dict[int, tuple[str, float]] = {}
        self.held_across_sleep: list[str] = []
        event.listen(engine, "checkout", self._checkout)
        event.listen(engine, "checkin", self._checkin)
        event.listen(engine, "detach", self._checkin)

    def _checkout(self, _dbapi: Any, record: Any, _proxy: Any) -> None:
        with self._guard:
            self._out[id(record)] = (threading.current_thread().name, time.monotonic())

    def _checkin(self, _dbapi: Any, record: Any, *_: Any) -> None:
        with self._guard:
            self._out.pop(id(record), None)

    def held_since(self, started: float) -> list[str]:
        """Threads holding a connection they checked out before ``started`` (listeners aside)."""
        with self._guard:
            return [
                f"{name} (for {time.monotonic() - since:.2f} s)"
                for name, since in self._out.values()
                if since < started and not name.startswith(LISTENERS)
            ]

    def remove(self) -> None:
        event.remove(self._engine, "checkout", self._checkout)
        event.remove(self._engine, "checkin", self._checkin)
        event.remove(self._engine, "detach", self._checkin)


class State(TypedDict, total=False):
    decision: str
    slept: bool


def gate_then_sleep(checkouts: _Checkouts) -> Any:
    """approve (an approval gate) -> work (sleeps SLEEP s, then checks nothing was held across it)."""

    def approve(state: State) -> State:
        return {"decision": request_approval("doc", "text", "Ship it?").action}

    def work(state: State) -> State:
        started = time.monotonic()
        time.sleep(SLEEP)
        checkouts.held_across_sleep.extend(checkouts.held_since(started))
        return {"slept": True}

    graph = StateGraph(State)
    graph.add_node("approve", approve)
    graph.add_node("work", work)
    graph.add_edge(START, "approve")
    graph.add_edge("approve", "work")
    graph.add_edge("work", END)
    return graph.compile()


@pytest.fixture
def busy_host(db_url: str) -> Iterator[tuple[WopHost, _Checkouts]]:
    saver = SQLModelSaver.from_url(db_url, pool_size=POOL_SIZE, max_overflow=0, pool_timeout=POOL_TIMEOUT)
    saver.setup()
    host = WopHost(saver)
    tracker = _Checkouts(host.engine)
    host.register("gate_then_sleep", gate_then_sleep(tracker))
    try:
        yield host, tracker
    finally:
        tracker.remove()
        saver.close()


async def test_concurrent_resolves_with_busy_workers_all_answer_200(
    busy_host: tuple[WopHost, _Checkouts], db_url: str
) -> None:
    host, checkouts = busy_host
    app = create_app(host, make_settings(db_url, workers=WORKERS))
    async with serving(app) as client:
        run_ids: list[str] = []
        for _ in range(CLIENTS):
            created = await client.post("/runs", json={"workflowId": "gate_then_sleep"}, headers=ALICE)
            assert created.status_code == 201, created.text
            run_ids.append(str(created.json()["runId"]))
        for run_id in run_ids:
            assert (await at_rest(client, run_id, timeout=60))["status"] == "waiting-approval"

        async def resolve(run_id: str) -> tuple[int, float, str]:
            started = time.perf_counter()
            response = await client.post(
                f"/runs/{project_id(run_id)}/interrupts/approve",
                json={"resumeValue": {"action": "accept"}},
                headers=ALICE,
            )
            return response.status_code, time.perf_counter() - started, response.text

        # The first resolves set workers driving runs (the node sleeps) while the rest still come in.
        answers = await asyncio.gather(*(resolve(run_id) for run_id in run_ids))
        failed = [(status, f"{seconds:.2f} s", text) for status, seconds, text in answers if status != 200]
        assert not failed, failed
        slowest = max(seconds for _, seconds, _ in answers)
        assert slowest < RESOLVE_BOUND, f"slowest resolve took {slowest:.2f} s"

        # Every run goes on past the sleeping node, and nothing held a connection across a sleep.
        for run_id in run_ids:
            assert (await at_rest(client, run_id, timeout=60))["status"] == "completed"
    assert checkouts.held_across_sleep == [], checkouts.held_across_sleep
