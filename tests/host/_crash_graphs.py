"""Graphs for the worker crash tests, importable by ``wop-langgraph worker`` subprocesses.

``write`` and ``publish`` sleep a little (like model calls), wide enough windows for a test to
kill a worker before the first interrupt or in the node after the gate. ``review`` records the
decision it received (action and feedback), so a test can tell which resolution was delivered.

With ``WOP_CRASH_DELIVERY_DELAY`` (seconds) set, a worker process that imports this module
pauses that long after it has claimed a run with a committed resolution and before it hands the
value to the graph: the real path, with a window wide enough to kill the worker inside it.
"""

from __future__ import annotations

import os
import time
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from wop_langgraph import request_approval
from wop_langgraph.host import driver

WORKFLOW = "crash-review"


class State(TypedDict, total=False):
    log: list[str]
    decision: str
    feedback: str | None


def write(state: State) -> dict[str, Any]:
    time.sleep(0.4)
    return {"log": ["write"]}


def review(state: State) -> dict[str, Any]:
    decision = request_approval("doc", "text/plain", "Publish?", artifact_data="draft")
    time.sleep(0.1)
    return {"decision": decision.action, "feedback": decision.feedback, "log": [*state["log"], "review"]}


def publish(state: State) -> dict[str, Any]:
    time.sleep(0.4)
    return {"log": [*state["log"], "publish"]}


def _widen_delivery_window(seconds: float) -> None:
    deliver = driver.resume_command

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return deliver(*args, **kwargs)

    driver.resume_command = slow  # looked up at call time by GraphDriver.drive_pass


if os.environ.get("WOP_CRASH_DELIVERY_DELAY"):
    _widen_delivery_window(float(os.environ["WOP_CRASH_DELIVERY_DELAY"]))


def graph() -> Pregel[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("review", review)
    builder.add_node("publish", publish)
    builder.add_edge(START, "write")
    builder.add_edge("write", "review")
    builder.add_edge("review", "publish")
    builder.add_edge("publish", END)
    return builder.compile()


WORKFLOWS = {WORKFLOW: graph()}
