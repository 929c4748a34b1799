"""``request_approval(on_timeout="approve")`` is emitted as ``reject``, with one warning per node."""

from __future__ import annotations

import logging
import uuid
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from tests.host._graphs import ALICE
from tests.host._support import events, payloads, start
from tests.official import payload_errors
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import request_approval


class State(TypedDict, total=False):
    decision: str


def _graph(node: str) -> Any:
    def gate(state: State) -> State:
        decision = request_approval("doc", "text", "Go?", timeout=60, on_timeout="approve")
        return {"decision": decision.action}

    g = StateGraph(State)
    g.add_node(node, gate)
    g.add_edge(START, node)
    g.add_edge(node, END)
    return g.compile()


def test_approve_on_timeout_is_emitted_as_reject_and_warned_once_per_node(
    host: WopHost, caplog: pytest.LogCaptureFixture
) -> None:
    node = f"gate-{uuid.uuid4().hex[:12]}"  # a node id nothing else used: the warning is once per process
    with caplog.at_level(logging.WARNING, logger="wop_langgraph.nodes.approval"):
        runs = [start(host, _graph(node))[0] for _ in range(3)]
        # Resolving re-executes the node (a replay): still no second warning.
        host.resolve(runs[0], node, {"action": "accept"}, ALICE)
    for run_id in runs:
        (requested,) = payloads(events(host, run_id), "interrupt.requested")
        assert requested["data"]["onTimeout"] == "reject"
        assert payload_errors("interrupt.requested", requested) == []
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and node in r.getMessage()]
    assert len(warnings) == 1
    assert "reject" in warnings[0].getMessage()
