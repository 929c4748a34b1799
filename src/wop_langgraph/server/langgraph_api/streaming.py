"""LangGraph SSE streams of a run, read from the store as the run's workers write it.

The run is driven by the host's workers (this process's or another's), never by the request, so
a stream is a reader: woken by each append to the run's OpenWOP event log (the same wake-ups as
``GET /runs/{runId}/events``), it reads the run's new checkpoints and emits, per requested mode,
what LangGraph's server would: ``values`` (the state after each step), ``updates`` (each task's
writes), ``messages`` for ``messages-tuple`` (each new message, whole: ``[message, metadata]``)
and ``messages/metadata`` + ``messages/complete`` for ``messages``; ``debug``, ``tasks``,
``checkpoints`` and ``events`` derived from the checkpoints (:mod:`.derived`); ``custom``: what
nodes write with ``get_stream_writer()``, relayed live from this process's drives
(:mod:`.relay`). When the run rests it ends with its interrupts (``values`` / ``updates`` with
``__interrupt__``) or an ``error`` event. The first event is always ``metadata`` ``{run_id,
thread_id}``.

Not emitted: token-by-token chunks (``messages/partial``; a model's tokens exist only inside the
process that drives the run), model and tool events in ``events``, and ``custom`` chunks of a
run driven by another process."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from fastapi import Request
from langgraph.types import StateSnapshot
from starlette.concurrency import run_in_threadpool

from wop_langgraph._clock import iso_z, utcnow
from wop_langgraph.host import Principal
from wop_langgraph.host.driver import jsonable
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server.langgraph_api.derived import (
    chain_event,
    checkpoint_payload,
    task_payload,
    task_result_payload,
)
from wop_langgraph.server.langgraph_api.service import LangGraphService, Started, is_resting
from wop_langgraph.server.state import ServerState
from wop_langgraph.store.appended import signals_for
from wop_langgraph.store.lg_threads import SEED_MARK

__all__ = ["KNOWN_MODES", "frames", "stream_modes", "wait_until_resting"]

#: Every mode LangGraph's server accepts; the silent ones are listed in the module docstring.
KNOWN_MODES: Final = frozenset(
    {"values", "updates", "messages-tuple", "messages", "custom", "events", "debug", "tasks", "checkpoints"}
)
_KEEP_ALIVE_SECONDS = 15.0
#: The longest wait between reads without a wake-up (another process's worker on SQLite
#: appends unannounced; a missed wake-up costs at most this).
_RECHECK_SECONDS = 1.0


def stream_modes(value: Any) -> list[str]:
    """The requested modes (``values`` when none).

    Raises:
        ValidationError: an unknown mode.
    """
    modes = [value] if isinstance(value, str) else list(value or ["values"])
    unknown = [m for m in modes if m not in KNOWN_MODES]
    if unknown or not all(isinstance(m, str) for m in modes):
        raise ValidationError(
            f"unknown stream mode(s) {unknown}; known: {', '.join(sorted(KNOWN_MODES))}",
            details={"field": "stream_mode"},
        )
    return modes


def _frame(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), ensure_ascii=False)}\n\n"


async def wait_until_resting(
    state: ServerState, service: LangGraphService, started: Started, timeout: float | None = None
) -> str:
    """Wait until the run waits on an interrupt or has ended (and no drive is left); its OpenWOP status."""
    host = state.host
    deadline = None if timeout is None else time.monotonic() + timeout
    with signals_for(host.engine).watch(started.run_id) as appended:
        while True:
            appended.arm()
            status = await run_in_threadpool(service.rest_status, started.run_id)
            if is_resting(status):
                return status
            remaining = (
                _RECHECK_SECONDS if deadline is None else min(_RECHECK_SECONDS, deadline - time.monotonic())
            )
            if remaining <= 0:
                return status
            await appended.wait(remaining)


class _Emitter:
    """Turns the run's new states into the frames of the requested modes."""

    def __init__(self, started: Started, modes: Sequence[str]) -> None:
        self.started = started
        self.modes = set(modes)
        self.seen_messages: set[str] = set()
        self.parent: StateSnapshot | None = None
        self.run_id = project_id(started.run_id)
        self.last_values: Any = None

    def base(self, snapshot: StateSnapshot | None) -> None:
        """The state before the run's new steps (its messages are not new)."""
        self.parent = snapshot
        if snapshot is not None:
            self.seen_messages.update(_message_ids(snapshot.values))

    def _meta(self, node: str | None, step: Any) -> dict[str, Any]:
        return {
            "langgraph_node": node,
            "langgraph_step": step,
            "thread_id": self.started.thread_id,
            "run_id": self.run_id,
        }

    def start(self) -> list[str]:
        """The frames before the run's first step (``events``: the graph's start)."""
        if "events" not in self.modes:
            return []
        meta = self._meta(None, None)
        return [
            _frame(
                "events",
                chain_event("on_chain_start", self.started.workflow_id, self.run_id, {"input": None}, meta),
            )
        ]

    def step(self, snapshot: StateSnapshot) -> list[str]:
        out: list[str] = []
        parent, self.parent = self.parent, snapshot
        metadata = snapshot.metadata or {}
        step = metadata.get("step")
        ran = [
            t
            for t in (parent.tasks if parent else ())
            if t.result is not None and not t.name.startswith("__")
        ]
        for task in ran:
            if "updates" in self.modes:
                out.append(_frame("updates", {task.name: jsonable(task.result)}))
            for mode, wrap in (("tasks", False), ("debug", True)):
                if mode in self.modes:
                    for kind, payload in (
                        ("task", task_payload(task)),
                        ("task_result", task_result_payload(task)),
                    ):
                        out.append(_frame(mode, _debug(kind, step, payload) if wrap else payload))
            if "events" in self.modes:
                meta = self._meta(task.name, step)
                state = {"input": jsonable(parent.values) if parent is not None else None}
                result = jsonable(task.result)
                for kind, data in (
                    ("on_chain_start", state),
                    ("on_chain_stream", {"chunk": result}),
                    ("on_chain_end", {"output": result, **state}),
                ):
                    out.append(_frame("events", chain_event(kind, task.name, task.id, data, meta)))
        if "checkpoints" in self.modes or "debug" in self.modes:
            payload = checkpoint_payload(self.started.thread_id, snapshot)
            if "checkpoints" in self.modes:
                out.append(_frame("checkpoints", payload))
            if "debug" in self.modes:
                out.append(_frame("debug", _debug("checkpoint", step, payload)))
        if metadata.get("source") == "input":
            return out  # the input is not applied yet: LangGraph shows the state from the next step
        self.last_values = jsonable(snapshot.values)
        if "values" in self.modes:
            out.append(_frame("values", self.last_values))
        if "messages-tuple" in self.modes or "messages" in self.modes:
            node = next((t.name for t in ran), None)
            for message in _messages(snapshot.values):
                ident = str(message.get("id"))
                if ident in self.seen_messages:
                    continue
                self.seen_messages.add(ident)
                if message.get("type") == "human":
                    continue  # the run's input, not the graph's output
                meta = self._meta(node, step)
                if "messages-tuple" in self.modes:
                    out.append(_frame("messages", [message, meta]))
                if "messages" in self.modes:  # whole messages: no messages/partial
                    out.append(_frame("messages/metadata", {ident: {"metadata": meta}}))
                    out.append(_frame("messages/complete", [message]))
        return out

    def custom(self, chunks: Sequence[Any]) -> list[str]:
        return [_frame("custom", chunk) for chunk in chunks] if "custom" in self.modes else []

    def rest(self, status: str, interrupts: list[dict[str, Any]], error: dict[str, Any] | None) -> list[str]:
        out: list[str] = []
        if interrupts:
            for mode in ("values", "updates"):
                if mode in self.modes:
                    out.append(_frame(mode, {"__interrupt__": interrupts}))
        if status == "completed" and "events" in self.modes:
            meta = self._meta(None, None)
            data = {"output": self.last_values}
            out.append(
                _frame(
                    "events", chain_event("on_chain_end", self.started.workflow_id, self.run_id, data, meta)
                )
            )
        if status == "failed":
            error = error or {}
            out.append(
                _frame("error", {"error": error.get("code", "error"), "message": error.get("message", "")})
            )
        return out


def _debug(kind: str, step: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """A ``debug`` item: LangGraph's wrapper of a ``checkpoints`` / ``tasks`` payload."""
    return {"type": kind, "step": step, "timestamp": iso_z(utcnow()), "payload": payload}


def _messages(values: Any) -> list[dict[str, Any]]:
    if not isinstance(values, dict):
        return []
    found = jsonable(values.get("messages") or [])
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []


def _message_ids(values: Any) -> set[str]:
    return {str(m.get("id")) for m in _messages(values)}


async def frames(
    request: Request,
    state: ServerState,
    service: LangGraphService,
    principal: Principal,
    started: Started,
    modes: Sequence[str],
    *,
    cancel_on_disconnect: bool = False,
) -> AsyncIterator[str]:
    """The run's SSE frames, from ``metadata`` until it rests."""
    yield _frame(
        "metadata", {"run_id": project_id(started.run_id), "thread_id": started.thread_id, "attempt": 1}
    )
    rested = False
    try:
        async for frame in _follow(request, state, service, principal, started, modes):
            yield frame
        rested = True
    finally:
        if not rested and cancel_on_disconnect:
            # The client left (Starlette cancels the response): with on_disconnect "cancel" the
            # run is cancelled too, off the loop, as the stream may already be torn down.
            threading.Thread(
                target=service.cancel_run_quietly, args=(started.run_id, principal), daemon=True
            ).start()


async def _follow(
    request: Request,
    state: ServerState,
    service: LangGraphService,
    principal: Principal,
    started: Started,
    modes: Sequence[str],
) -> AsyncIterator[str]:
    """The frames after ``metadata``, until the run rests (or the client has left)."""
    host = state.host
    emitter = _Emitter(started, modes)
    after = started.baseline
    first = True
    relay = service.relay
    custom_at = started.custom_after
    # The stream's slot was taken by the route before the response started (a refusal is a
    # 429, not a cut stream) and is given back by SlotStreamingResponse.
    with signals_for(host.engine).watch(started.run_id) as appended:
        last_sent = time.monotonic()
        while True:
            appended.arm()
            # Chunks first: those a node wrote before the step it saves (read next) was saved.
            custom_at, chunks = relay.after(started.run_id, custom_at)
            status, newer, base = await run_in_threadpool(service.progress, started, after)
            if first:
                emitter.base(base)
                for frame in emitter.start():
                    yield frame
                first = False
            elif base is not None:
                # The last step shown, read again: its tasks' results were perhaps not saved yet
                # when it was first read (they tell the next step's updates, tasks, events).
                emitter.parent = base
            for frame in emitter.custom(chunks):
                yield frame
                last_sent = time.monotonic()
            for snapshot in newer:
                after = str(snapshot.config["configurable"]["checkpoint_id"])
                if SEED_MARK in (snapshot.metadata or {}):
                    # Where an enqueued run began (the previous run's state): not its output.
                    emitter.base(snapshot)
                    continue
                step = emitter.step(snapshot)
                if step:
                    # The step's last frame carries its checkpoint id: a client that reconnects
                    # with it as Last-Event-ID (GET .../runs/{run}/stream) gets the steps after it.
                    step[-1] = f"id: {after}\n{step[-1]}"
                for frame in step:
                    yield frame
                    last_sent = time.monotonic()
            if is_resting(status):
                custom_at, chunks = relay.after(started.run_id, custom_at)
                for frame in emitter.custom(chunks):
                    yield frame
                interrupts = (
                    await run_in_threadpool(service.pending_docs, started)
                    if status.startswith("waiting-")
                    else []
                )
                error = None
                if status == "failed":
                    error = (await run_in_threadpool(host.snapshot, started.run_id)).get("error")
                for frame in emitter.rest(status, interrupts, error):
                    yield frame
                return
            if await request.is_disconnected():
                raise asyncio.CancelledError  # as when Starlette notices it first
            quiet = _KEEP_ALIVE_SECONDS - (time.monotonic() - last_sent)
            if quiet <= 0:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
                continue
            await appended.wait(min(quiet, _RECHECK_SECONDS))
