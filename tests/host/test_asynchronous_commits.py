"""A pass's checkpoints commit asynchronously; what it records, synchronously (PostgreSQL).

Inside a pass the saves that record nothing (checkpoints, writes no event goes with) commit
without waiting for the WAL flush (``SaverBase.committing_asynchronously``). Everything the
pass records for others to see (events, interrupts, the run's row) commits as before, after
them, and so makes them durable in the same flush.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.pregel import Pregel

from tests.host._graphs import ALICE, WORKFLOW, approval_graph
from tests.host._support import HostFactory
from tests.host.test_engine import async_review_graph
from tests.round_trips import round_trips
from wop_langgraph.host import WopHost

SWITCH = "set_config('synchronous_commit', 'off', true)"
ACCEPT = {"action": "accept", "feedback": "ship it"}
_RECORDS = ("wop_events", "wop_interrupts", "wop_runs")


def _postgres_host(make_host: HostFactory, db_url: str, graph: Pregel[Any, Any, Any, Any]) -> WopHost:
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite's commits do not wait for a flush in any case")
    host = make_host()
    host.register(WORKFLOW, graph)
    return host


def _cycle(host: WopHost) -> None:
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    assert created["status"] == "waiting-approval", created
    result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
    assert result["status"] == "completed", result


def _assert_split(sent: list[str]) -> None:
    checkpoints = [s for s in sent if s.startswith("INSERT INTO wop_checkpoints ")]
    recorded = [s for s in sent if any(table in s for table in _RECORDS)]
    assert len(checkpoints) >= 4 and all(s.endswith(SWITCH) for s in checkpoints), checkpoints
    assert recorded and not any(SWITCH in s for s in recorded), recorded


@pytest.mark.parametrize("graph", [approval_graph, async_review_graph], ids=["sync", "async"])
def test_a_pass_commits_checkpoints_asynchronously_and_records_synchronously(
    make_host: HostFactory, db_url: str, graph: Any
) -> None:
    host = _postgres_host(make_host, db_url, graph())
    with round_trips() as sent:
        _cycle(host)
    _assert_split(sent)


def test_an_async_graph_driven_from_a_running_loop_keeps_it(make_host: HostFactory, db_url: str) -> None:
    # A notebook cell: the pass's event loop runs on a thread of its own, in the caller's context.
    host = _postgres_host(make_host, db_url, async_review_graph())

    async def cell() -> None:
        _cycle(host)

    with round_trips() as sent:
        asyncio.run(cell())
    _assert_split(sent)
