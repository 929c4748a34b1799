"""A run's result: the snapshot carries a completed run's ``outputs``; ``result``/``aresult`` wait for it.

The closed v2 snapshot has no ``outputs`` member; the outputs ride in its ``extensions`` seat
under ``wop-langgraph.result``. The key pattern below is the one of the official v2
``run-snapshot.schema.json`` (openwop/openwop-sdks ``schemas/v2``; not vendored here).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time

import pytest

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import HostFactory, events, payloads, start
from wop_langgraph.host import RunNotCompleted, WopHost
from wop_langgraph.protocol import RunSnapshot
from wop_langgraph.protocol.errors import NotFound
from wop_langgraph.protocol.snapshot import RESULT_EXTENSION

OFFICIAL_V2_EXTENSION_KEY = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9]*(-[a-z0-9]+)*$")
ACCEPT = {"action": "accept"}


def _resolve_later(host: WopHost, run_id: str, value: object, delay: float = 0.3) -> threading.Thread:
    def resolve() -> None:
        time.sleep(delay)
        host.resolve(run_id, "review", value, ALICE, wait=False)

    thread = threading.Thread(target=resolve)
    thread.start()
    return thread


def test_a_completed_snapshot_carries_the_outputs_and_result_returns_them(host: WopHost) -> None:
    run_id, waiting = start(host, approval_graph())
    assert waiting["status"] == "waiting-approval"
    assert "extensions" not in waiting  # no result before the end
    host.resolve(run_id, "review", ACCEPT, ALICE)
    snapshot = host.snapshot(run_id)
    assert snapshot["status"] == "completed"
    (completed,) = payloads(events(host, run_id), "run.completed")
    assert snapshot["extensions"] == {RESULT_EXTENSION: {"outputs": completed["outputs"]}}
    assert completed["outputs"]["log"] == ["write", "review", "publish"]
    assert OFFICIAL_V2_EXTENSION_KEY.fullmatch(RESULT_EXTENSION)
    assert RunSnapshot.from_wire(snapshot).to_wire() == snapshot  # the closed v2 shape takes it
    assert host.result(run_id) == completed["outputs"]
    assert host.result(run_id, timeout=0) == completed["outputs"]  # already there: no wait


def test_result_waits_for_a_resolution_from_elsewhere(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    with pytest.raises(TimeoutError, match=r"still waiting-approval after 0\.2 s"):
        host.result(run_id, timeout=0.2)
    resolver = _resolve_later(host, run_id, ACCEPT)
    try:
        outputs = host.result(run_id, timeout=60)
    finally:
        resolver.join()
    assert outputs["log"] == ["write", "review", "publish"]
    assert outputs["result"]["action"] == "accept"


def test_a_failed_or_cancelled_run_has_no_result(host: WopHost) -> None:
    failed, _ = start(host, approval_graph())
    host.resolve(failed, "review", {"action": "reject"}, ALICE)
    with pytest.raises(RunNotCompleted) as caught:
        host.result(failed)
    assert caught.value.status == "failed"
    assert caught.value.error is not None and caught.value.error["code"] == "approval_rejected"
    assert "approval_rejected" in str(caught.value)
    assert "extensions" not in host.snapshot(failed)

    cancelled, _ = start(host, approval_graph())
    host.cancel(cancelled)
    with pytest.raises(RunNotCompleted, match="ended cancelled") as caught:
        host.result(cancelled, timeout=5)
    assert caught.value.status == "cancelled"


def test_result_of_an_unknown_run_is_not_found(host: WopHost) -> None:
    with pytest.raises(NotFound):
        host.result("acme/no-such-run-0000000000")


async def test_aresult_is_woken_by_the_end(make_host: HostFactory) -> None:
    host = make_host()
    run_id, _ = start(host, approval_graph())
    with pytest.raises(TimeoutError):
        await host.aresult(run_id, timeout=0.2)
    resolver = _resolve_later(host, run_id, ACCEPT)
    try:
        outputs = await asyncio.wait_for(host.aresult(run_id), 60)
    finally:
        await asyncio.to_thread(resolver.join)
    assert outputs == host.snapshot(run_id)["extensions"][RESULT_EXTENSION]["outputs"]
    failed, _ = start(host, approval_graph())
    host.resolve(failed, "review", {"action": "reject"}, ALICE)
    with pytest.raises(RunNotCompleted):
        await host.aresult(failed)


def test_result_drives_a_run_nobody_drives(host: WopHost) -> None:
    """Created with ``wait=False`` and no workers: ``result`` drives it here, as ``wait=True`` would."""
    host.register("plain", approval_graph())
    run_id = host.create_run("plain", {}, owner=ALICE, wait=False)["runId"]
    with pytest.raises(TimeoutError, match="waiting-approval"):
        host.result(run_id, timeout=0.1)  # driven to its gate, then it waits
    host.resolve(run_id, "review", ACCEPT, ALICE, wait=False)
    assert host.result(run_id, timeout=60)["log"] == ["write", "review", "publish"]
