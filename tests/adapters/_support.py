"""Helpers for the adapter tests: run to suspension, crash after a claim, read the run's outputs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, footprint, only_pending, payloads
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import ValidationError


def outputs(host: WopHost, run_id: str) -> dict[str, Any]:
    """The run's outputs, from its ``run.completed`` event."""
    (completed,) = payloads(events(host, run_id), "run.completed")
    return dict(completed["outputs"])


def refuse(host: WopHost, run_id: str, node_id: str, value: Any, path: str | None = None) -> None:
    """A resolve with ``value`` is a ``validation_error`` and changes nothing."""
    before = footprint(host, run_id)
    with pytest.raises(ValidationError) as caught:
        host.resolve(run_id, node_id, value, ALICE)
    if path is not None:
        assert (caught.value.details or {}).get("path", "").startswith(path), caught.value.details
    assert footprint(host, run_id) == before


def resolve_then_recover(
    make_host: HostFactory, host: WopHost, workflow_id: str, graph: Any, run_id: str, value: Any
) -> WopHost:
    """Resolve as if the process died right after the claim; a new host recovers the run.

    Returns the new host. Asserts the key and interrupt id survive and only one
    ``interrupt.requested`` was ever written for the gate.
    """
    gate = only_pending(host, run_id)
    host.resolve(run_id, gate.node_id, value, ALICE, wait=False)  # committed, then the process "dies"
    (claimed,) = [r for r in host.interrupts(run_id) if r.interrupt_id == gate.interrupt_id]
    assert claimed.status == "resolved" and claimed.consumed_at is None
    second = make_host()
    second.register(workflow_id, graph)
    assert second.recover() == 1
    docs = events(second, run_id)
    requested = [p for p in payloads(docs, "interrupt.requested") if p["key"] == gate.key]
    assert len(requested) == 1
    (resolved,) = [p for p in payloads(docs, "interrupt.resolved") if p["interruptId"] == gate.interrupt_id]
    assert resolved["interruptId"] == gate.interrupt_id
    return second
