"""Deadlines and callbacks in a split deployment: ``serve --workers 0`` with the sweep off, and
the processes that drive runs.

Timeouts are applied by the hosts' own deadline timers (the serve process's and the workers'),
not by a sweep; callbacks are delivered by whichever process drives the run (the serve process
never sees a worker's run suspend). The run's state is read from the database directly: an
API read past a deadline would apply the timeout itself and prove nothing about the timers.
"""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from sqlalchemy import create_engine, select

from tests.host._graphs import ALICE as ALICE_OWNER
from tests.server.conftest import ALICE, make_settings
from tests.server.graphs import WORKFLOWS
from tests.server.process import served, worker_process
from tests.server.test_background import Receiver
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.egress import AllowList
from wop_langgraph.server.callbacks import attach_callbacks
from wop_langgraph.store.run_tables import runs_table

TARGET = "tests.server.graphs:WORKFLOWS"


def stored_status(db_url: str, run_id: str) -> str:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return str(
                conn.execute(select(runs_table.c.status).where(runs_table.c.run_id == run_id)).scalar()
            )
    finally:
        engine.dispose()


@pytest.mark.slow
def test_timeouts_fire_with_workers_0_the_sweep_off_and_no_worker_sweep(db_url: str) -> None:
    with (
        served(db_url, target=TARGET, sweep=0, extra_args=["--workers", "0"]) as base,
        worker_process(db_url, target=TARGET, concurrency=1, extra_args=["--sweep-seconds", "0"]),
    ):
        created = httpx.post(
            f"{base}/runs",
            json={"workflowId": "timed"},
            headers={**ALICE, "Idempotency-Key": str(uuid.uuid4())},
            timeout=30,
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        deadline = time.monotonic() + 30
        while (status := stored_status(db_url, run_id)) != "failed":  # the 1.5 s gate times out
            assert time.monotonic() < deadline, f"the run stayed {status}: no timer applied the timeout"
            time.sleep(0.1)


def test_the_process_that_drives_the_run_delivers_its_callback(db_url: str) -> None:
    # Two hosts over one database, as `serve --workers 0` and `wop-langgraph worker`: the API
    # host only records the run; the driving host (its workers) sees it suspend and delivers.
    receiver = Receiver([200])
    api = WopHost.from_url(db_url)
    driving = WopHost.from_url(db_url)
    for workflow_id, graph in WORKFLOWS.items():
        api.register(workflow_id, graph)
        driving.register(workflow_id, graph)
    allow = AllowList(loopback_http_ports=frozenset({receiver.port}))
    delivery = attach_callbacks(driving, make_settings(db_url, callback_allow=allow))
    delivery.start()
    driving.start_workers(1, poll_seconds=0.2)
    try:
        url = f"http://127.0.0.1:{receiver.port}/hook"
        snapshot = api.create_run("approve", {}, owner=ALICE_OWNER, callback_url=url, wait=False)
        assert receiver.arrived.wait(30), "no callback arrived"
        (_, raw), *_ = receiver.received
        body = json.loads(raw)
        assert (body["runId"], body["nodeId"]) == (snapshot["runId"], "review")
    finally:
        driving.close()
        api.close()
        delivery.stop()
        receiver.close()
        driving.saver.close()
        api.saver.close()
