"""A resumed pass reads its checkpoint once, a new run's first pass none; a pass that ran to its
end reads none for its outputs.

The driver hands the checkpoint it read before a pass to LangGraph's own first read of it (for
a run created with its claim: that it has none), and
it streams ``values`` beside ``tasks`` and takes the last one as the final state, instead of
``get_state`` after the stream (a checkpoint read and LangGraph's next-task planning),
whenever that chunk is what ``get_state`` would show: no output schema narrower than the
state, no static breakpoint. Otherwise it still asks ``get_state``, which reads afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from tests.host._graphs import ALICE, WORKFLOW, approval_graph
from tests.host._support import HostFactory, events, payloads
from tests.host.test_engine import async_review_graph
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import request_approval
from wop_langgraph.store import _saver_ops as saver_ops

ACCEPT = {"action": "accept"}


def outputs(host: WopHost, run_id: str) -> Any:
    """The ``outputs`` of the run's ``run.completed`` event."""
    (completed,) = payloads(events(host, run_id), "run.completed")
    return completed["outputs"]


@contextmanager
def checkpoint_reads() -> Iterator[list[int]]:
    """Counts the checkpoints the saver reads from the database (alone, or with a claim)."""
    calls = [0]
    original = saver_ops.loaded_of

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return original(*args)

    saver_ops.loaded_of = counted
    try:
        yield calls
    finally:
        saver_ops.loaded_of = original


class Private(TypedDict, total=False):
    draft: str
    decision: str


class Public(TypedDict, total=False):
    decision: str


def narrow_output_graph() -> Pregel:
    """``draft -> review``, whose output schema shows ``decision`` only."""

    def draft(state: Private) -> Private:
        return {"draft": "text"}

    def review(state: Private) -> Private:
        return {"decision": request_approval("doc", "document", "Ship it?").action}

    builder = StateGraph(Private, output_schema=Public)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    return builder.compile()


def test_a_resumed_pass_that_ran_to_its_end_reads_its_checkpoint_once(make_host: HostFactory) -> None:
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    with checkpoint_reads() as reads:
        result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
    assert result["status"] == "completed", result
    # The read with the resolution's claim, handed to LangGraph as its stream begins; a read
    # of LangGraph's own and a get_state after the stream would make three.
    assert reads[0] == 1
    config = {"configurable": {"thread_id": created["runId"]}}
    final = host.saver.get_tuple(config)
    assert final is not None
    state = final.checkpoint["channel_values"]
    shown = {key: value for key, value in state.items() if key in approval_graph().stream_channels_asis}
    assert outputs(host, created["runId"]) == shown
    assert shown["log"] == ["write", "review", "publish"]


@pytest.mark.parametrize("graph", [approval_graph, async_review_graph], ids=["sync", "async"])
def test_a_new_run_reads_no_checkpoint_before_it_suspends(
    make_host: HostFactory, graph: Callable[[], Pregel]
) -> None:
    # Created with its claim, the run has no checkpoint: LangGraph's first read is answered
    # with that, not read from the database (for an async graph, on the thread it reads from).
    host = make_host()
    host.register(WORKFLOW, graph())
    with checkpoint_reads() as reads:
        created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    assert created["status"] == "waiting-approval", created
    assert reads[0] == 0
    result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
    assert result["status"] == "completed", result
    assert outputs(host, created["runId"])["log"] == ["write", "review", "publish"]


def test_a_graph_with_a_narrower_output_schema_completes_with_its_whole_state(
    make_host: HostFactory,
) -> None:
    # Its ``values`` chunks show ``decision`` only; ``get_state`` (and so the run's outputs)
    # shows the whole state, as before.
    host = make_host()
    host.register(WORKFLOW, narrow_output_graph())
    created = host.create_run(WORKFLOW, {}, owner=ALICE)
    assert created["status"] == "waiting-approval", created
    with checkpoint_reads() as reads:
        result = host.resolve(created["runId"], "review", ACCEPT, ALICE)
    assert result["status"] == "completed", result
    assert outputs(host, created["runId"]) == {"draft": "text", "decision": "accept"}
    assert reads[0] == 2  # the driver's, and get_state's (which read the final state, not the handed one)


def test_a_resolve_that_drove_the_run_to_its_end_returns_its_outputs(make_host: HostFactory) -> None:
    # As the drive wrote them (the LangGraph API's runs/wait answers with them, reading nothing);
    # a resolve that only queues the run, or leaves it waiting, has none, and without
    # with_outputs (the OpenWOP answer, which an idempotent replay repeats) none is added.
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    assert "outputs" not in host.resolve(created["runId"], "review", ACCEPT, ALICE)
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    result = host.resolve(created["runId"], "review", ACCEPT, ALICE, with_outputs=True)
    assert result["status"] == "completed", result
    assert result["outputs"] == outputs(host, created["runId"])
    assert result["outputs"]["log"] == ["write", "review", "publish"]
    queued = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    left = host.resolve(queued["runId"], "review", ACCEPT, ALICE, wait=False, with_outputs=True)
    assert left["status"] == "running" and "outputs" not in left, left


def test_a_replayed_resolve_with_outputs_answers_as_the_first(make_host: HostFactory) -> None:
    # The replay is not driven by its call: its outputs come from the snapshot it reads.
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    created = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    key = "replay-with-outputs-0001"
    first = host.resolve(created["runId"], "review", ACCEPT, ALICE, idempotency_key=key, with_outputs=True)
    again = host.resolve(created["runId"], "review", ACCEPT, ALICE, idempotency_key=key, with_outputs=True)
    assert first == again and first["outputs"]["log"] == ["write", "review", "publish"], (first, again)
