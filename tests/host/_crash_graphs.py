"""Graphs for the worker crash tests, importable by ``wop-langgraph worker`` subprocesses.

``write`` and ``publish`` sleep a little (like model calls), so a SIGKILL at a random moment
lands before the first interrupt, inside a resumed node, or between a claim and its delivery.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from wop_langgraph import request_approval

WORKFLOW = "crash-review"


class State(TypedDict, total=False):
    log: list[str]
    decision: str


def write(state: State) -> dict[str, Any]:
    time.sleep(0.15)
    return {"log": ["write"]}


def review(state: State) -> dict[str, Any]:
    decision = request_approval("doc", "text/plain", "Publish?", artifact_data="draft")
    time.sleep(0.1)
    return {"decision": decision.action, "log": [*state["log"], "review"]}


def publish(state: State) -> dict[str, Any]:
    time.sleep(0.2)
    return {"log": [*state["log"], "publish"]}


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
