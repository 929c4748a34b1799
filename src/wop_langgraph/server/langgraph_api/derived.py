"""The payloads of LangGraph's ``debug``, ``tasks``, ``checkpoints`` and ``events`` stream modes,
derived from a run's checkpoints (pure).

The run is driven elsewhere (a worker), so what a stream can show is what was checkpointed: a
step's tasks with their results, and the state after it. These payloads have LangGraph's shapes
(``langgraph.pregel.debug``; LangChain's ``astream_events`` v2 for ``events``) with what a
checkpoint does not keep left empty: a task's ``input`` and ``triggers``; in ``events`` only the
graph's ``on_chain_start`` / ``on_chain_end`` and its nodes' ``on_chain_start`` /
``on_chain_stream`` / ``on_chain_end`` (no model or tool events, no tokens), a node's start sent
with its end, once the step is saved.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import PregelTask, StateSnapshot

from wop_langgraph.host.driver import jsonable
from wop_langgraph.store.lg_threads import SEED_MARK

__all__ = ["chain_event", "checkpoint_payload", "task_payload", "task_result_payload"]


def task_payload(task: PregelTask) -> dict[str, Any]:
    """A ``tasks`` / ``debug`` ``task`` payload (its input and triggers are not checkpointed)."""
    return {"id": task.id, "name": task.name, "input": None, "triggers": []}


def task_result_payload(task: PregelTask) -> dict[str, Any]:
    """A ``tasks`` / ``debug`` ``task_result`` payload."""
    return {
        "id": task.id,
        "name": task.name,
        "error": None if task.error is None else str(task.error),
        "result": jsonable(task.result) if task.result is not None else {},
        "interrupts": [],
    }


def _config(thread_id: str, config: Any) -> dict[str, Any] | None:
    if not config:
        return None
    configurable = config.get("configurable", {})
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint_id": configurable.get("checkpoint_id"),
        }
    }


def checkpoint_payload(thread_id: str, snapshot: StateSnapshot) -> dict[str, Any]:
    """A ``checkpoints`` / ``debug`` ``checkpoint`` payload (``thread_id``: the API's thread)."""
    metadata = {k: v for k, v in dict(snapshot.metadata or {}).items() if k != SEED_MARK}
    return {
        "config": _config(thread_id, snapshot.config),
        "parent_config": _config(thread_id, snapshot.parent_config),
        "values": jsonable(snapshot.values),
        "metadata": jsonable(metadata),
        "next": list(snapshot.next),
        "tasks": [
            {
                "id": task.id,
                "name": task.name,
                "interrupts": [{"id": i.id, "value": jsonable(i.value)} for i in task.interrupts],
                "state": None,
            }
            for task in snapshot.tasks
        ],
    }


def chain_event(
    kind: str, name: str, run_id: str, data: dict[str, Any], metadata: dict[str, Any]
) -> dict[str, Any]:
    """One ``events`` item: ``on_chain_start`` / ``_stream`` / ``_end`` of the graph or of a node."""
    return {
        "event": kind,
        "name": name,
        "run_id": run_id,
        "tags": [],
        "metadata": metadata,
        "data": data,
        "parent_ids": [],
    }
