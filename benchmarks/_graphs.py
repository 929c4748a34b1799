"""The graphs the run-engine benchmarks serve (``_graphs:WORKFLOWS``), in subprocesses too.

``WOP_BENCH_SLEEP`` (seconds, default 2) is how long the slow nodes of ``gate_then_sleep`` and
``sleep_first`` sleep; ``WOP_BENCH_STEP_SLEEP`` (default 0.2) is each node of ``sleepy_chain``.
Sleeping stands for I/O (a model or tool call): it holds a worker, not a core.
"""

from __future__ import annotations

import os
import time
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from wop_langgraph.nodes import request_approval

SLEEP = float(os.environ.get("WOP_BENCH_SLEEP", "2"))
STEP_SLEEP = float(os.environ.get("WOP_BENCH_STEP_SLEEP", "0.2"))


class State(TypedDict, total=False):
    n: int
    decision: str


def _prepare(state: State) -> State:
    return {"n": state.get("n", 0) + 1}


def _approve(state: State) -> State:
    return {"decision": request_approval("doc", "text", "Ship it?").action}


def _approve_plain(state: State) -> State:
    # What a LangGraph user writes: LangGraph's own interrupt() with a dict, resumed with
    # Command(resume={"action": ...}); no OpenWOP node API.
    answer = interrupt({"doc": "text", "prompt": "Ship it?", "actions": ["accept", "reject"]})
    return {"decision": answer["action"]}


def _finish(state: State) -> State:
    return {"n": state.get("n", 0) + 1}


def _slow(state: State) -> State:
    time.sleep(SLEEP)
    return {"n": state.get("n", 0) + 1}


def _step(state: State) -> State:
    time.sleep(STEP_SLEEP)
    return {"n": state.get("n", 0) + 1}


def chain(*nodes: tuple[str, Any]) -> Any:
    """A compiled graph running ``nodes`` (name, function) in order, without a checkpointer."""
    builder = StateGraph(State)
    previous = START
    for name, function in nodes:
        builder.add_node(name, function)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile()


def approval_builder(*, plain: bool = False) -> StateGraph[Any]:
    """prepare -> approve (an approval gate) -> finish: the full-path benchmark's graph.

    ``plain``: the gate is LangGraph's bare ``interrupt({...})`` (the graph a LangGraph user
    writes) instead of the node API's ``request_approval``.
    """
    builder = StateGraph(State)
    builder.add_node("prepare", _prepare)
    builder.add_node("approve", _approve_plain if plain else _approve)
    builder.add_node("finish", _finish)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "approve")
    builder.add_edge("approve", "finish")
    builder.add_edge("finish", END)
    return builder


WORKFLOWS = {
    "approval": approval_builder().compile(),
    "plain_approval": approval_builder(plain=True).compile(),
    # The node after the gate sleeps: a resolve must not wait for it.
    "gate_then_sleep": chain(("approve", _approve), ("work", _slow)),
    # The first node sleeps: POST /runs must not wait for it.
    "sleep_first": chain(("work", _slow), ("finish", _finish)),
    # I/O-bound steps: throughput should grow with worker processes.
    "sleepy_chain": chain(("a", _step), ("b", _step), ("c", _step)),
}
