"""Run a graph through a list of resume values, by plain LangGraph or by WopHost, and record what
an observer sees at every step, in one comparable shape.

A trace is a list of steps:

* ``("suspended", [payload without key, ...])``: the run waits on these interrupts;
* ``("refused", message, details, [payload, ...])``: the resume value got ``ValidationError``
  and the run still waits on the same interrupts;
* ``("completed", state)``: the run finished with this state (as JSON);
* ``("failed", {code, message, details?})``: a node failed the run with this error.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph.types import Command, StateSnapshot

from tests.host._graphs import ALICE
from wop_langgraph.host import WopHost
from wop_langgraph.host.driver import jsonable
from wop_langgraph.protocol.errors import ValidationError, WopError

Step = tuple[Any, ...]
_WORKFLOWS = itertools.count()


def without_key(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "key"}


def plain_config(thread_id: str | None = None) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id or f"thread-{uuid.uuid4().hex}"}}


def _plain_step(state: StateSnapshot) -> Step:
    if state.interrupts:
        return ("suspended", [without_key(i.value) for i in state.interrupts])
    return ("completed", jsonable(state.values))


def _error(exc: WopError) -> dict[str, Any]:
    return {k: v for k, v in exc.error_object().items() if k in ("code", "message", "details")}


def _refused_or_failed(exc: WopError, state: StateSnapshot) -> Step:
    """A refused resume value leaves the run waiting; any other error failed it."""
    if isinstance(exc, ValidationError) and state.interrupts:
        return ("refused", exc.message, exc.details, _plain_step(state)[1])
    return ("failed", _error(exc))


def _commands(inputs: Any, values: Sequence[Any]) -> list[Any]:
    return [inputs, *(Command(resume=value) for value in values)]


def run_plain(graph: Pregel, inputs: Any, values: Sequence[Any], config: RunnableConfig) -> list[Step]:
    """Run ``graph`` with ``graph.invoke``, resuming with ``Command(resume=value)`` for each value."""
    trace: list[Step] = []
    for command in _commands(inputs, values):
        try:
            graph.invoke(command, config)
        except WopError as exc:
            trace.append(_refused_or_failed(exc, graph.get_state(config)))
            if trace[-1][0] == "failed":
                break
            continue
        trace.append(_plain_step(graph.get_state(config)))
        if trace[-1][0] == "completed":
            break
    return trace


async def arun_plain(graph: Pregel, inputs: Any, values: Sequence[Any], config: RunnableConfig) -> list[Step]:
    """:func:`run_plain` with ``graph.ainvoke``."""
    trace: list[Step] = []
    for command in _commands(inputs, values):
        try:
            await graph.ainvoke(command, config)
        except WopError as exc:
            trace.append(_refused_or_failed(exc, await graph.aget_state(config)))
            if trace[-1][0] == "failed":
                break
            continue
        trace.append(_plain_step(await graph.aget_state(config)))
        if trace[-1][0] == "completed":
            break
    return trace


def _host_step(host: WopHost, run_id: str) -> Step:
    snapshot = host.snapshot(run_id)
    if snapshot["status"] == "completed":
        (completed,) = [e for e in host.events(run_id) if e["type"] == "run.completed"]
        return ("completed", completed["payload"]["outputs"])
    if snapshot["status"] == "failed":
        return ("failed", snapshot["error"])
    return ("suspended", [without_key(r.payload) for r in host.pending_interrupts(run_id)])


def run_host(host: WopHost, graph: Pregel, inputs: Any, values: Sequence[Any]) -> tuple[str, list[Step]]:
    """Register ``graph`` itself, create a run and resolve its pending interrupt with each value."""
    workflow_id = f"portable-{next(_WORKFLOWS)}"
    host.register(workflow_id, graph)
    run_id = host.create_run(workflow_id, inputs, owner=ALICE)["runId"]
    trace = [_host_step(host, run_id)]
    for value in values:
        if trace[-1][0] in ("completed", "failed"):
            break
        (pending,) = host.pending_interrupts(run_id)
        try:
            host.resolve(run_id, pending.node_id, value, ALICE)
        except ValidationError as exc:
            trace.append(("refused", exc.message, exc.details, _host_step(host, run_id)[1]))
            continue
        trace.append(_host_step(host, run_id))
    return run_id, trace
