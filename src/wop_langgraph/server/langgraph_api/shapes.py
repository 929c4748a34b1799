"""LangGraph Server API documents (``Thread``, ``ThreadState``, ``Run``, ``Assistant``) from host facts.

Pure functions: they read nothing. The shapes are those the LangGraph SDKs parse
(``langgraph_sdk.schema``): a thread's ``status`` is derived from its current OpenWOP run, its
``interrupts`` are the pending interrupts of that run as LangGraph shows them
(``{task_id: [{id, value}]}``, the graph's own ``interrupt()`` value and LangGraph's interrupt id).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, Final

from langgraph.types import StateSnapshot

from wop_langgraph._clock import iso_z
from wop_langgraph.host.driver import jsonable
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.store.lg_threads import SEED_MARK, ThreadRow, ThreadRunRow

__all__ = [
    "ASSISTANT_NAMESPACE",
    "assistant_doc",
    "assistant_uuid",
    "interrupt_doc",
    "run_doc",
    "run_status",
    "state_doc",
    "thread_doc",
    "thread_status",
]

#: The namespace of the stable assistant id of a graph: ``uuid5(ASSISTANT_NAMESPACE, graph_id)``.
ASSISTANT_NAMESPACE: Final = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
_WAITING = "waiting-"


def assistant_uuid(graph_id: str) -> str:
    """The default assistant id of a registered graph (stable across restarts and replicas)."""
    return str(uuid.uuid5(ASSISTANT_NAMESPACE, graph_id))


def assistant_doc(graph_id: str, created_at: datetime) -> dict[str, Any]:
    """The ``Assistant`` of a registered graph: every graph is its own default assistant."""
    stamp = iso_z(created_at)
    return {
        "assistant_id": assistant_uuid(graph_id),
        "graph_id": graph_id,
        "name": graph_id,
        "description": None,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "version": 1,
        "created_at": stamp,
        "updated_at": stamp,
    }


def thread_status(run_status: str | None, queued: bool = False, behind: bool = False) -> str:
    """LangGraph's thread status for the OpenWOP status of the thread's current run (``queued``:
    the run still has work queued or being driven, so it is busy even if an interrupt already
    put it in a waiting status; ``behind``: enqueued runs wait to start, so a thread whose run
    ended is busy, while one whose run waits on interrupts stays ``interrupted``)."""
    if run_status in ("pending", "running") or (
        queued and run_status is not None and run_status.startswith(_WAITING)
    ):
        return "busy"
    if run_status is not None and run_status.startswith(_WAITING):
        return "interrupted"
    if behind:
        return "busy"
    if run_status == "failed":
        return "error"
    return "idle"  # no run yet, completed, cancelled


def run_status(status: str) -> str:
    """LangGraph's run status for an OpenWOP run status (a cancelled run is ``interrupted``, as there)."""
    if status.startswith(_WAITING) or status == "cancelled":
        return "interrupted"
    return {"completed": "success", "failed": "error"}.get(status, status)


def interrupt_doc(value: Any, interrupt_id: str) -> dict[str, Any]:
    """One ``Interrupt`` as LangGraph's server sends it."""
    return {"value": jsonable(value), "id": interrupt_id}


def _pending_interrupts(
    snapshot: StateSnapshot | None, pending: Collection[str]
) -> dict[str, list[dict[str, Any]]]:
    """``{task_id: [Interrupt]}`` of the interrupts still pending in OpenWOP terms."""
    found: dict[str, list[dict[str, Any]]] = {}
    if snapshot is None:
        return found
    for task in snapshot.tasks:
        docs = [interrupt_doc(i.value, i.id) for i in task.interrupts if i.id in pending]
        if docs:
            found[task.id] = docs
    return found


def _values(snapshot: StateSnapshot | None) -> Any:
    return {} if snapshot is None else jsonable(snapshot.values)


def thread_doc(row: ThreadRow, snapshot: StateSnapshot | None, pending: Collection[str]) -> dict[str, Any]:
    """The ``Thread``; ``snapshot``: the current run's state; ``pending``: its pending interrupt ids."""
    updated = max(row.updated_at, row.run_updated_at or row.updated_at)
    return {
        "thread_id": row.thread_id,
        "created_at": iso_z(row.created_at),
        "updated_at": iso_z(updated),
        "state_updated_at": iso_z(updated),
        "metadata": row.metadata,
        "status": thread_status(row.run_status, row.run_queued, row.runs_behind),
        "values": _values(snapshot),
        "interrupts": _pending_interrupts(snapshot, pending),
        "config": {},
        "error": None,
    }


def _checkpoint(thread_id: str, config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not config:
        return None
    configurable = config.get("configurable", {})
    return {
        "thread_id": thread_id,
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable.get("checkpoint_id"),
        "checkpoint_map": None,
    }


def state_doc(thread_id: str, snapshot: StateSnapshot | None, pending: Collection[str]) -> dict[str, Any]:
    """The ``ThreadState`` of ``snapshot`` (an empty state for a thread that has not run)."""
    if snapshot is None:
        return {
            "values": {},
            "next": [],
            "tasks": [],
            "checkpoint": None,
            "metadata": {},
            "created_at": None,
            "parent_checkpoint": None,
            "interrupts": [],
        }
    interrupts = _pending_interrupts(snapshot, pending)
    tasks = [
        {
            "id": task.id,
            "name": task.name,
            "path": list(task.path),
            "error": None if task.error is None else str(task.error),
            "interrupts": interrupts.get(task.id, []),
            "checkpoint": None,
            "state": None,
            "result": None if task.result is None else jsonable(task.result),
        }
        for task in snapshot.tasks
    ]
    metadata = {k: v for k, v in dict(snapshot.metadata or {}).items() if k != SEED_MARK}
    return {
        "values": _values(snapshot),
        "next": list(snapshot.next),
        "tasks": tasks,
        "checkpoint": _checkpoint(thread_id, snapshot.config),
        "metadata": jsonable(metadata),
        "created_at": snapshot.created_at,
        "parent_checkpoint": _checkpoint(thread_id, snapshot.parent_config),
        "interrupts": [doc for docs in interrupts.values() for doc in docs],
    }


def run_doc(row: ThreadRunRow) -> dict[str, Any]:
    """The ``Run`` of one of a thread's OpenWOP runs (``run_id`` is the run's id in path form)."""
    return {
        "run_id": project_id(row.run_id),
        "thread_id": row.thread_id,
        "assistant_id": row.assistant_id,
        "created_at": iso_z(row.created_at),
        "updated_at": iso_z(row.updated_at),
        "status": run_status(row.status),
        "metadata": row.metadata,
        "multitask_strategy": row.multitask_strategy,
        "kwargs": {},
    }
