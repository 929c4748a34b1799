"""Runs a registered graph for one run and turns what happens into OpenWOP run events.

The driver streams the graph in LangGraph's ``tasks`` mode with ``durability="sync"`` (every
step is saved before the next begins, so a crash loses no resolved step) and strict resume (an
unknown or already-consumed interrupt id is refused, never applied to another question).
Interrupt events are written by the store's recorder inside the checkpoint transaction; the
driver adds ``node.started`` / ``node.resumed`` / ``node.completed`` / ``node.failed`` and the
run's terminal event, and settles the run's status from the saved state.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError, UnknownInterruptError
from langgraph.pregel import Pregel
from langgraph.types import Command
from sqlalchemy import Engine, update

from wop_langgraph.host.errors_public import public_error
from wop_langgraph.nodes._context import CONTEXT_KEY, RunContext
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.protocol.payloads import InterruptKind
from wop_langgraph.protocol.snapshot import waiting_status_for
from wop_langgraph.store.events import NewEvent, append_events
from wop_langgraph.store.interrupts import InterruptRecord, interrupts_of_run, mark_consumed
from wop_langgraph.store.run_tables import runs_table

__all__ = ["TERMINAL_STATUSES", "GraphDriver", "jsonable"]

TERMINAL_STATUSES = ("completed", "failed", "cancelled")
STRICT_RESUME_KEY = "__pregel_strict_resume"
#: The ``typeId`` of every LangGraph node on ``node.started`` (required there; RFC 0107 grammar).
NODE_TYPE_ID = "langgraph.node"


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON (pydantic models dumped, other objects as their ``str``)."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            return dump(mode="json")
        return str(obj)

    return json.loads(json.dumps(value, default=default))


def error_object(exc: BaseException) -> dict[str, Any]:
    """The OpenWOP error object for an exception raised by a node or the graph."""
    if isinstance(exc, WopError):
        return exc.error_object()
    if isinstance(exc, GraphRecursionError):
        return {
            "code": "recursion_limit_exceeded",
            "message": str(exc) or "recursion limit",
            "retryable": False,
        }
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip() or type(exc).__name__
    return {"code": "internal_error", "message": message, "retryable": False}


@dataclass
class GraphDriver:
    """Executes one run's graph against the store and records what it did."""

    engine: Engine
    graph: Pregel[Any, Any, Any, Any]
    context: RunContext
    clock: Callable[[], datetime]
    recursion_limit: int | None = None

    def run(self, graph_input: Any, delivered: list[InterruptRecord]) -> None:
        """Run the graph from ``graph_input`` until it suspends, completes or fails."""
        resumed_tasks = {r.task_id: r for r in delivered}
        configurable: dict[str, Any] = {
            "thread_id": self.context.run_id,
            CONTEXT_KEY: self.context,
            STRICT_RESUME_KEY: True,
        }
        config: RunnableConfig = {"configurable": configurable}
        if self.recursion_limit is not None:
            config["recursion_limit"] = self.recursion_limit
        failed_node: str | None = None
        try:
            for chunk in self.graph.stream(graph_input, config, stream_mode="tasks", durability="sync"):
                failed_node = self._on_task(chunk, resumed_tasks) or failed_node
        except UnknownInterruptError:
            raise  # nothing ran: the caller sorts out which ids LangGraph already consumed
        except Exception as exc:  # the node's or the graph's own failure ends the run
            self._consumed(delivered)
            self._fail(exc, failed_node)
            return
        self._consumed(delivered)
        self._settle(config)

    def _consumed(self, delivered: list[InterruptRecord]) -> None:
        """Mark the delivered resolutions as consumed: the graph ran past them."""
        if delivered:
            with self.engine.begin() as conn:
                mark_consumed(conn, [r.interrupt_id for r in delivered], now=self.clock())

    def _on_task(self, chunk: Mapping[str, Any], resumed: Mapping[str, InterruptRecord]) -> str | None:
        """Append the event for one ``tasks``-mode chunk; returns the node's name if it failed."""
        name = str(chunk["name"])
        if "error" not in chunk:  # a task starts
            record = resumed.get(str(chunk["id"]))
            if record is not None:
                payload = {"nodeId": name, "interruptId": record.interrupt_id}
                self._append(NewEvent("node.resumed", payload, node_id=name))
            else:
                payload = {"nodeId": name, "typeId": NODE_TYPE_ID}
                self._append(NewEvent("node.started", payload, node_id=name))
            return None
        if chunk["error"] is not None:
            error = chunk["error"]
            obj = public_error(error, run_id=self.context.run_id, node_id=name)
            self._append(NewEvent("node.failed", {"nodeId": name, "error": obj, "attempts": 1}, node_id=name))
            return name
        if not chunk.get("interrupts"):
            self._append(NewEvent("node.completed", {"nodeId": name}, node_id=name))
        return None

    def _settle(self, config: RunnableConfig) -> None:
        """Set the run's status from the saved state: waiting on an interrupt, or completed."""
        state = self.graph.get_state(config)
        now = self.clock()
        with self.engine.begin() as conn:
            pending = interrupts_of_run(conn, self.context.run_id, statuses=["pending"])
            if state.interrupts and pending:
                first = pending[0]
                conn.execute(
                    update(runs_table)
                    .where(
                        runs_table.c.run_id == self.context.run_id,
                        runs_table.c.status.not_in(TERMINAL_STATUSES),
                    )
                    .values(
                        status=waiting_status_for(cast(InterruptKind, first.kind)),
                        current_node_id=first.node_id,
                        updated_at=now,
                    )
                )
                return
            if state.next:
                # Suspended with nothing an OpenWOP caller can resolve (a bare breakpoint).
                self._finish(conn, "failed", now, error=_stuck_error(state.next))
                return
            outputs = (
                jsonable(state.values)
                if isinstance(state.values, dict)
                else {"value": jsonable(state.values)}
            )
            self._finish(conn, "completed", now, outputs=outputs)

    def _fail(self, exc: BaseException, failed_node: str | None) -> None:
        error = public_error(exc, run_id=self.context.run_id, node_id=failed_node)
        with self.engine.begin() as conn:
            self._finish(conn, "failed", self.clock(), error=error, failed_node=failed_node)

    def _finish(
        self,
        conn: Any,
        status: str,
        now: datetime,
        *,
        outputs: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        failed_node: str | None = None,
    ) -> None:
        changed = conn.execute(
            update(runs_table)
            .where(runs_table.c.run_id == self.context.run_id, runs_table.c.status.not_in(TERMINAL_STATUSES))
            .values(
                status=status,
                outputs=outputs,
                error=error,
                current_node_id=failed_node if status == "failed" else None,
                updated_at=now,
                completed_at=now,
            )
        ).rowcount
        if not changed:
            return  # cancelled meanwhile: the cancellation already wrote the terminal event
        if status == "completed":
            event = NewEvent("run.completed", {"outputs": outputs or {}})
        else:
            payload: dict[str, Any] = {"error": error}
            if failed_node is not None:
                payload["failedNodeId"] = failed_node
            event = NewEvent("run.failed", payload)
        append_events(conn, self.context.run_id, [event], now=now)

    def _append(self, event: NewEvent) -> None:
        with self.engine.begin() as conn:
            append_events(conn, self.context.run_id, [event], now=self.clock())


def resume_command(delivered: list[InterruptRecord], values: Mapping[str, Any]) -> Command[Any]:
    """The strict ``Command(resume={langgraph_interrupt_id: delivery})`` for these interrupts."""
    return Command(resume={r.lg_interrupt_id: values[r.interrupt_id] for r in delivered})


def _text_error(error: Any) -> dict[str, Any]:
    return {"code": "internal_error", "message": str(error) or "node failed", "retryable": False}


def _stuck_error(next_nodes: tuple[str, ...]) -> dict[str, Any]:
    return {
        "code": "validation_error",
        "message": (
            f"the graph stopped before {', '.join(next_nodes)} without an OpenWOP interrupt "
            "(a static breakpoint?); use request_approval() or another node API call instead"
        ),
        "retryable": False,
    }
