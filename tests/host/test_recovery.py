"""A process killed with SIGKILL after claiming an interrupt: recovery delivers the persisted value once."""

from __future__ import annotations

import os
from unittest.mock import ANY

import pytest

from tests.host._graphs import KILL_AFTER_GATE_ENV, WORKFLOW, approval_graph, count
from tests.host._support import HostFactory, events, killed_child, payloads

pytestmark = pytest.mark.slow


def _child(mode: str, url: str) -> str:
    """Run the child until it SIGKILLs itself; returns the run id it printed."""
    env = {k: v for k, v in os.environ.items() if k != KILL_AFTER_GATE_ENV}
    return killed_child("tests.host._graphs", mode, url, env=env)


@pytest.mark.parametrize("mode", ["kill-after-claim", "kill-after-queue", "kill-in-node"])
def test_sigkill_after_claim_then_recover_completes_once(
    make_host: HostFactory, db_url: str, mode: str
) -> None:
    run_id = _child(mode, db_url)

    # A host that does not serve the workflow leaves the run alone (it must not fail start-up).
    other = make_host()
    assert other.recover() == 0
    assert other.interrupts(run_id)[0].consumed_at is None

    host = make_host()
    host.register(WORKFLOW, approval_graph())
    (gate,) = host.interrupts(run_id)
    assert gate.status == "resolved"
    assert gate.consumed_at is None
    assert gate.resume_value == {"action": "accept", "feedback": "ship it", "decidedAt": ANY}
    assert host.snapshot(run_id)["status"] not in ("completed", "failed", "cancelled")

    assert host.recover() == 1
    snapshot = host.snapshot(run_id)
    assert snapshot["status"] == "completed", snapshot
    docs = events(host, run_id)
    (completed,) = payloads(docs, "run.completed")
    assert completed["outputs"]["result"]["feedback"] == "ship it"
    assert completed["outputs"]["log"] == ["write", "review", "publish"]
    assert len(payloads(docs, "interrupt.requested")) == 1
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert resolved["interruptId"] == gate.interrupt_id
    assert resolved["resumeValue"] == gate.resume_value  # normalised: decidedAt stamped on receipt
    # In this (parent) process the node ran past its gate exactly once, and published once.
    assert count("review:past") == 1
    assert count("publish") == 1
    assert host.interrupts(run_id)[0].consumed_at is not None
    assert host.recover() == 0
