"""Drives one run's graph for a worker and turns what happens into OpenWOP run events.

One *pass* reads what the run needs (its first input, the resolutions committed for it, or
nothing but to continue from its last checkpoint after a crash), streams the graph in
LangGraph's ``tasks`` mode with ``durability="sync"`` (every step is saved before the next
begins: held in order, and stored by the next transaction that records something of the run,
see :mod:`.held_writes`) and strict resume (an unknown or already-consumed interrupt id is refused, never
applied to another question), then settles the run: waiting on its pending interrupts,
completed, or failed. Sync graphs stream on the worker's thread; graphs with ``async def``
nodes stream on an event loop of their own. Interrupt events are written by the store's
recorder inside the checkpoint transaction, and so is the event that ends one of the graph's
own node tasks (``node.completed`` / ``node.failed``, held with the task's writes and stored in
their transaction, so a crash cannot keep the writes and lose the event). The driver adds ``node.started`` /
``node.resumed`` as tasks start, the ends of call and ``Send`` tasks, and the run's terminal
event.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import enum
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_HIDDEN
from langgraph.errors import GraphRecursionError, UnknownInterruptError
from langgraph.pregel import Pregel
from langgraph.types import Command, StreamMode

from wop_langgraph._off_loop import OffLoop
from wop_langgraph.adapters import is_bare, to_node_value
from wop_langgraph.host._inline_saves import saving_inline
from wop_langgraph.host.errors_public import public_error
from wop_langgraph.host.foreground import at_step_boundary
from wop_langgraph.host.held_writes import HeldWrites, Taken
from wop_langgraph.host.recorder import InterruptRecorder
from wop_langgraph.kinds import custom_statuses, kind_of
from wop_langgraph.nodes.context import (
    CONTEXT_KEY,
    NODE_FAILED_CHANNEL,
    NODE_OUTPUTS_CHANNEL,
    NODE_TYPE_METADATA,
    RunContext,
)
from wop_langgraph.nodes.suspend import Delivery
from wop_langgraph.store.engine import Connection, Engine, one_statement, reading
from wop_langgraph.store.events import NewEvent, NextAppend, RunLogClosed, append
from wop_langgraph.store.held import HeldWrite
from wop_langgraph.store.interrupts import (
    InterruptRecord,
    consume_one_write,
    interrupts_of_run,
    mark_consumed,
    open_work,
)
from wop_langgraph.store.lg_threads import SEED_MARK
from wop_langgraph.store.recording import WriteBatch
from wop_langgraph.store.run_passes import (
    dequeue,
    end_gate,
    end_params,
    end_run,
    lock_run_log,
    logged_any,
    rest_at_oldest_interrupt,
    rest_params,
    rest_run,
    rested_row,
    resting_at_oldest_interrupt,
    start_pass,
)
from wop_langgraph.store.run_queue import Claim, ClaimedRun
from wop_langgraph.store.runs import TERMINAL_STATUSES
from wop_langgraph.store.statements import Reads

__all__ = ["TERMINAL_STATUSES", "DriveSignal", "GraphDriver", "Pass", "jsonable", "needs_async"]

STRICT_RESUME_KEY = "__pregel_strict_resume"
#: The ``typeId`` of every LangGraph node on ``node.started`` (required there; RFC 0107 grammar).
NODE_TYPE_ID = "langgraph.node"
#: LangGraph's trigger of a task it pushed: a ``Send``, or a ``@task`` called from a node.
_PUSH = "__pregel_push"
#: How a top-level node task's path starts in its writes (``~__pregel_pull, <node>``).
_PULL_PATH = "~__pregel_pull, "
#: How long a checkpoint (or the stream) waits for the transaction of a task's writes.
_END_RECORD_TIMEOUT_S = 10.0
#: The threads an async pass logs its task events on (a call may wait for a task's writes,
#: which the saver stores on threads of its own, never on these).
_TASK_EVENTS = OffLoop("wop-task-events", 32)

_log = logging.getLogger("wop_langgraph.driver")
#: No ``values`` chunk streamed (yet) in this pass.
_NO_VALUES: Any = object()


@dataclass(frozen=True)
class _Ended:
    """What :meth:`GraphDriver._settle` reads of a graph that ran to its end (as a
    ``StateSnapshot`` has it): its values, and neither next tasks nor interrupts."""

    values: Any
    next: tuple[str, ...] = ()
    interrupts: tuple[Any, ...] = ()


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON (pydantic models dumped, other objects as their ``str``)."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            return dump(mode="json")
        return str(obj)

    return json.loads(json.dumps(value, default=default))


class Pass(enum.Enum):
    """How a drive pass ended."""

    IDLE = "idle"  # the run left the queue: it waits on an interrupt, or it ended
    AGAIN = "again"  # more work arrived meanwhile (or a stale resume was sorted out): drive again
    LOST = "lost"  # the lease is gone (expired and taken, or the run vanished)


@dataclass
class DriveSignal:
    """Stops a drive from outside: set by a cancellation, seen at the next step boundary."""

    stop: threading.Event = field(default_factory=threading.Event)
    _task: asyncio.Task[Any] | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def cancel(self) -> None:
        """Stop the drive: an async node is cancelled at once, a sync one at its next step."""
        self.stop.set()
        with self._guard:
            if self._task is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> None:
        with self._guard:
            self._loop, self._task = loop, task
        if task is not None and self.stop.is_set():
            loop.call_soon_threadsafe(task.cancel)


def needs_async(graph: Pregel[Any, Any, Any, Any]) -> bool:
    """Whether ``graph`` (or a subgraph in it) has a node that only runs under the async API."""
    for node in graph.nodes.values():
        bound = node.bound
        if isinstance(bound, Pregel):
            if needs_async(bound):
                return True
        elif getattr(bound, "func", True) is None and getattr(bound, "afunc", None) is not None:
            return True
    return False


@dataclass
class _PassTasks:
    """What :meth:`GraphDriver._on_task` remembers while one pass streams."""

    resumed: Mapping[str, InterruptRecord]
    callers: dict[str, str] = field(default_factory=dict)  # running node tasks: id -> name
    names: dict[str, str] = field(default_factory=dict)  # started tasks: id -> the node id of their events
    #: (interrupt id, node id) already resumed: a later visit of the node in the pass starts afresh.
    answered: set[tuple[str, str]] = field(default_factory=set)
    #: Started node tasks whose end the transaction of their writes records.
    pulled: set[str] = field(default_factory=set)


@dataclass
class GraphDriver:
    """Executes passes of one run's graph against the store and records what they did."""

    engine: Engine
    graph: Pregel[Any, Any, Any, Any]
    context: RunContext
    clock: Callable[[], datetime]
    claim: Claim
    recursion_limit: int | None = None
    is_async: bool = False
    signal: DriveSignal = field(default_factory=DriveSignal)
    #: What this drive has not written yet: node starts, and its passes' saves (shared with
    #: what the run's nodes emit).
    held: HeldWrites | None = None
    #: Told each chunk the run's nodes write with ``get_stream_writer()`` (LangGraph's
    #: ``custom`` mode is streamed only when set).
    on_custom: Callable[[str, Any], None] | None = None
    _tasks: _PassTasks | None = field(default=None, init=False, repr=False)
    #: While streaming with our recorder: the node tasks whose ends the saver records.
    _ends: _TaskEnds | None = field(default=None, init=False, repr=False)
    #: The run's pending interrupts when the pass began.
    _pending_at_start: list[InterruptRecord] = field(default_factory=list, init=False, repr=False)
    #: The tasks of the pass's first step that finished before the pass.
    _finished_before: set[str] = field(default_factory=set, init=False, repr=False)
    #: Whether a task of the current pass suspended on an interrupt (its stream said so).
    _suspended: bool = field(default=False, init=False, repr=False)
    #: The graph's state as the current pass's last ``values`` chunk left it (see
    #: :meth:`_streams_final_state`); ``_NO_VALUES`` until one arrives.
    _final_values: Any = field(default=_NO_VALUES, init=False, repr=False)
    #: The run's row (its snapshot columns) as the pass that put it to rest left it, if one did.
    rested: Any = field(default=None, init=False, repr=False)
    #: The claim the current pass answers (the queue version it read), once it has one.
    _claim: Claim | None = field(default=None, init=False, repr=False)
    #: The run's row as the transaction of the pass's interrupt put it to rest, once committed
    #: (see :meth:`_rest_with_interrupt`).
    _rested_with_interrupt: Any = field(default=None, init=False, repr=False)
    #: Whether the current pass is the first of a run its claim created (no interrupt yet).
    _fresh: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.held is None:
            self.held = HeldWrites(self.engine, self.run_id)

    @property
    def run_id(self) -> str:
        return self.context.run_id

    @property
    def _held(self) -> HeldWrites:
        assert self.held is not None  # set in __post_init__
        return self.held

    def stop_holding(self) -> None:
        """The drive is over: store what a pass still holds (every pass stores what it held as
        it settles, so normally nothing), then stop holding."""
        if not self.signal.stop.is_set():
            self._held.flush()
        self._held.close()

    def _logging(self) -> AbstractContextManager[tuple[Connection, NextAppend]]:
        """A write transaction of this drive, which stores what the drive holds first (its
        events with the transaction's first append to the run's log: pass it what this yields
        with the connection)."""
        return self._held.logging()

    def drive_pass(self, first_input: Any, *, claimed: ClaimedRun | None = None) -> Pass:
        """One pass: find the work, stream the graph over it, settle the run.

        ``claimed``: the claim that began the drive, for its first pass. The statement that
        took it (a claim, or the insert of a run created leased) already started the pass: a
        pending run is running from it, and it read the queue version and the status.
        """
        self.rested = None
        self._suspended = False
        self._final_values = _NO_VALUES
        self._claim = self._rested_with_interrupt = None
        self._fresh = claimed is not None and claimed.fresh
        # What an earlier pass still holds (normally nothing) is stored before this one reads. A
        # run created by this claim reads nothing: what its creation holds (its row and
        # ``run.started``, see ``WopHost._create_held``) goes with the pass's first transaction.
        if not self._fresh:
            self._held.flush()
        if claimed is not None:
            claim, status = claimed.claim, claimed.status
            if self.signal.stop.is_set():  # cancelled between the claim and the drive
                return self._stopped(claim)
        else:
            started = self._start_pass()
            if started is None:
                return Pass.LOST
            version, status = started
            claim = Claim(self.claim.run_id, self.claim.owner, version)
        if status in TERMINAL_STATUSES:
            return self._stopped(claim)
        self._claim = claim
        config = self._config()
        undelivered: list[InterruptRecord] = []
        pending: list[InterruptRecord] = []
        saved = None
        if claimed is None or not claimed.fresh:  # a run created by this claim has neither yet
            if claimed is not None and claimed.work is not None:
                undelivered, pending = claimed.work  # read where the claim was taken
            else:
                with reading(self.engine) as conn:
                    undelivered, pending = open_work(conn, self.run_id)
            if claimed is not None and claimed.saved is not None:
                (saved,) = claimed.saved  # likewise (nothing saves the run but its lease holder)
            else:
                saved = self.graph.checkpointer.get_tuple(config)  # type: ignore[union-attr]
        elif claimed.saved is not None:
            (saved,) = claimed.saved  # none: created without one (else its creator wrote one)
        # Tasks of the saved step that finished already: LangGraph streams their start, but
        # does not run them again.
        self._finished_before = _finished_tasks(saved.pending_writes or []) if saved else set()
        if undelivered:
            values = {r.interrupt_id: _node_value(r) for r in undelivered}
            graph_input: Any = resume_command(undelivered, values)
        elif saved is None or SEED_MARK in (saved.metadata or {}):
            # A new run, or the next run of a LangGraph thread, whose first checkpoint is a copy
            # of where the thread's previous run ended (store/lg_threads.py): its input applies
            # on top of that state.
            graph_input = first_input if first_input is not None else {}
        elif pending:
            return self._settle(claim, config, [])  # nothing to run until someone answers
        else:
            graph_input = None  # continue from the last checkpoint (a crash interrupted a step)
        try:
            self._pending_at_start = pending
            known = saved is not None or (claimed is not None and claimed.saved is not None)
            with self._handing_over(config, saved, known):  # LangGraph's own read, as it starts
                failure = self._stream(graph_input, config, {r.task_id: r for r in undelivered})
        except UnknownInterruptError as exc:
            # Delivered before a crash: LangGraph consumed these already; continue from there.
            still_pending = set(getattr(exc, "pending_ids", ()) or ())
            consumed = [r.interrupt_id for r in undelivered if r.lg_interrupt_id not in still_pending]
            with self._logging() as (conn, _):
                mark_consumed(conn, consumed or [r.interrupt_id for r in undelivered], now=self.clock())
            return Pass.AGAIN
        except (RunLogClosed, asyncio.CancelledError):
            return self._stopped(claim)
        # The graph ran past the delivered resolutions: they are marked consumed in the
        # transaction that settles the pass.
        if self.signal.stop.is_set():
            return self._stopped(claim, undelivered)
        if failure is not None:
            error, failed_node = failure
            with self._logging() as (conn, ahead):
                self._mark_consumed(conn, undelivered)
                self._finish(
                    conn,
                    ahead,
                    claim,
                    "failed",
                    error=public_error(error, run_id=self.run_id, node_id=failed_node),
                    failed_node=failed_node,
                    breach=self._breach(error),
                )
            return Pass.IDLE
        return self._settle(claim, config, undelivered)

    # -- streaming ---------------------------------------------------------------------------

    def _config(self) -> RunnableConfig:
        configurable: dict[str, Any] = {
            "thread_id": self.run_id,
            CONTEXT_KEY: self.context,
            STRICT_RESUME_KEY: True,
        }
        config: RunnableConfig = {"configurable": configurable}
        if self.recursion_limit is not None:
            config["recursion_limit"] = self.recursion_limit
        return config

    def _stream(
        self, graph_input: Any, config: RunnableConfig, resumed: Mapping[str, InterruptRecord]
    ) -> tuple[BaseException, str | None] | None:
        """Stream the graph; returns the node's or graph's own failure, if it failed."""
        failed_node: str | None = None
        with self._recording_task_ends(), self._committing_asynchronously():
            if self.is_async:
                outcome: tuple[BaseException, str | None] | None = _run_coroutine(
                    self._astream(graph_input, config, resumed)
                )
                return outcome
            try:
                with saving_inline(self.graph.checkpointer):
                    chunks = self.graph.stream(
                        graph_input, config, stream_mode=self._stream_modes(), durability="sync"
                    )
                    for mode, chunk in chunks:
                        if mode == "values":
                            self._final_values = chunk
                            continue
                        if mode == "custom":
                            self._relay(chunk)
                            continue
                        failed_node = self._on_task(cast(Mapping[str, Any], chunk), resumed) or failed_node
                        if self.signal.stop.is_set():
                            break
                        at_step_boundary()  # a worker lets the requests being answered go first
            except (UnknownInterruptError, RunLogClosed):
                raise
            except Exception as exc:  # the node's or the graph's own failure ends the run
                return exc, failed_node
            return None

    def _handing_over(self, config: RunnableConfig, saved: Any, known: bool) -> AbstractContextManager[None]:
        """The run's latest checkpoint, when this pass ``known`` it (it read ``saved``, or the
        run was created with its claim and has none), handed to the stream's first read of it
        (our saver)."""
        hand = getattr(self.graph.checkpointer, "handing_over", None)
        return hand(config, saved) if known and callable(hand) else nullcontext()

    def _committing_asynchronously(self) -> AbstractContextManager[None]:
        """While streaming, the saves that record nothing (checkpoints) commit asynchronously
        (our saver, on PostgreSQL): whatever the pass records of them (a node's end, an
        interrupt, how it settles) is an ordinary commit after them, which makes them durable
        in the same flush."""
        commit = getattr(self.graph.checkpointer, "committing_asynchronously", None)
        return commit() if callable(commit) else nullcontext()

    def _stream_modes(self) -> list[StreamMode]:
        """``tasks`` (what the log records), ``values`` when they tell the final state, and
        ``custom`` when someone relays it."""
        modes: list[StreamMode] = ["tasks", "values"] if self._streams_final_state() else ["tasks"]
        if self.on_custom is not None:
            modes.append("custom")
        return modes

    def _relay(self, chunk: Any) -> None:
        """Hand a ``custom`` chunk on; a failing listener never fails the run."""
        if self.on_custom is not None:
            try:
                self.on_custom(self.run_id, chunk)
            except Exception:
                _log.exception("relaying a custom stream chunk failed")

    def _streams_final_state(self) -> bool:
        """Whether the last ``values`` chunk of a pass that ran to its end is the graph's final
        state, as ``get_state`` would read it (one read and LangGraph's next-task planning fewer
        per run).

        It is when the graph streams the channels its state shows (no output schema narrower
        than its state) and cannot stop before its end without an interrupt (no static
        breakpoint): a pass whose stream ended, with no task suspended, then ran to the end.
        """
        graph = self.graph
        return (
            graph.stream_channels_asis == graph.output_channels
            and not graph.interrupt_before_nodes
            and not graph.interrupt_after_nodes
        )

    @contextmanager
    def _recording_task_ends(self) -> Iterator[None]:
        """While streaming, have the saver's transactions record the ends of the graph's node tasks."""
        recorder = getattr(self.graph.checkpointer, "recorder", None)
        if not isinstance(recorder, InterruptRecorder):
            yield  # a store without our recorder: the stream records every end
            return
        self._ends = _TaskEnds(self, finished=self._finished_before, fresh=self._fresh)
        try:
            with recorder.task_writes(self.run_id, self._ends):
                yield
        finally:
            self._ends.close()
            self._ends = None

    def _node_of(self, batch: WriteBatch) -> str | None:
        """The node whose pulled task wrote ``batch``, if its end is logged with its writes."""
        if not batch.task_path.startswith(_PULL_PATH):
            return None  # a ``Send`` or a call task: its end is logged from the stream
        name = batch.task_path[len(_PULL_PATH) :]
        node = self.graph.nodes.get(name)
        if node is None or TAG_HIDDEN in (node.tags or ()):
            return None  # not a node of this graph, or one the stream hides (``__start__``)
        return name

    def _record_task_end(self, conn: Connection, batch: WriteBatch, ahead: NextAppend) -> None:
        """Log the end of a node task in the transaction that stores its writes (with what
        goes ``ahead`` of it)."""
        event = self._task_end(batch)
        if event is not None:
            with suppress(RunLogClosed):  # cancelled meanwhile
                append(conn, self.run_id, [event], now=self.clock(), once=True, ahead=ahead)

    def _task_end(self, batch: WriteBatch) -> NewEvent | None:
        """The event that ends the node task whose writes ``batch`` holds (with its stable id),
        if its writes tell of its end."""
        name = self._node_of(batch)
        if name is None:
            return None
        writes = batch.writes
        if any(channel == "__interrupt__" for channel, _ in writes):
            return None  # suspended: the interrupt's events close the execution
        error = next((value for channel, value in writes if channel == "__error__"), None)
        if isinstance(error, asyncio.CancelledError):
            return None  # the run was cancelled: nothing goes after its terminal event
        ended = self._end_event(name, batch.task_id, error, _single_writes(writes))
        return self._stable(ended, batch.task_id)

    async def _astream(
        self, graph_input: Any, config: RunnableConfig, resumed: Mapping[str, InterruptRecord]
    ) -> tuple[BaseException, str | None] | None:
        self.signal.attach(asyncio.get_running_loop(), asyncio.current_task())
        failed_node: str | None = None
        try:
            async for mode, chunk in self.graph.astream(
                graph_input, config, stream_mode=self._stream_modes(), durability="sync"
            ):
                if mode == "values":
                    self._final_values = chunk
                    continue
                if mode == "custom":
                    self._relay(chunk)
                    continue
                task = cast(Mapping[str, Any], chunk)
                failed_node = await _TASK_EVENTS.run(self._on_task, task, resumed) or failed_node
                if self.signal.stop.is_set():
                    break
        except (UnknownInterruptError, RunLogClosed, asyncio.CancelledError):
            raise
        except Exception as exc:
            return exc, failed_node
        finally:
            self.signal.attach(asyncio.get_running_loop(), None)
        return None

    def _on_task(self, chunk: Mapping[str, Any], resumed: Mapping[str, InterruptRecord]) -> str | None:
        """Append the event for one ``tasks``-mode chunk; returns the node's name if it failed.

        Every execution the log opens (``node.started`` / ``node.resumed``) is closed by
        ``node.completed``, ``node.failed`` or a ``node.suspended`` of it or of something it
        called. For the Functional API that means: a call task is named by its caller's path
        (``workflow.approve``, as the interrupts it raises are); the entrypoint re-executed after
        an answer is *resumed*, like the task that asked; a finished task whose saved result the
        re-execution replays opens nothing; and a task whose suspension was recorded before its
        start was streamed opens nothing either (the suspension already closed it).
        """
        tasks = self._pass_tasks(resumed)
        task_id = str(chunk["id"])
        if "error" not in chunk:  # a task starts
            name = self._task_name(tasks, chunk)
            tasks.names[task_id] = name
            if name == chunk["name"]:
                tasks.callers[task_id] = name
                if self._ends is not None and _PUSH not in (chunk.get("triggers") or ()):
                    tasks.pulled.add(task_id)
                    self._ends.expect(task_id)
            pulled = name == chunk["name"] and _PUSH not in (chunk.get("triggers") or ())
            self._on_start(task_id, name, name != chunk["name"], tasks, pulled=pulled)
            return None
        name = tasks.names.pop(task_id, "") or self._task_name(tasks, chunk)
        tasks.callers.pop(task_id, None)
        error = chunk["error"]
        if error is None and chunk.get("interrupts"):
            self._suspended = True
            return None
        if task_id in tasks.pulled:
            tasks.pulled.discard(task_id)
            # Its end is logged with its writes: let that commit come first, so that what is
            # logged next comes after it.
            if self._ends is not None and self._ends.wait_for(task_id):
                return name if error is not None else None
        result = chunk.get("result") or {}
        self._append_once(self._end_event(name, task_id, error, result), task_id)
        return name if error is not None else None

    def _end_event(self, name: str, task_id: str, error: Any, result: Any) -> NewEvent:
        """``node.completed`` or ``node.failed`` for a task that ended with ``error`` / ``result``."""
        if error is not None:
            return _node_failed(name, public_error(error, run_id=self.run_id, node_id=name))
        failed = result.get(NODE_FAILED_CHANNEL) if isinstance(result, Mapping) else None
        if isinstance(failed, dict) and name in failed:  # failed, and an edge admitting failure goes on
            return _node_failed(name, failed[name])
        if task_id in self.context.routed_rejections:
            # A rejected gate that continues on its route is still a failed source (interrupt.md).
            obj = {"code": "approval_rejected", "message": "the approval was rejected", "retryable": False}
            return _node_failed(name, obj)
        completed: dict[str, Any] = {"nodeId": name}
        outputs = result.get(NODE_OUTPUTS_CHANNEL) if isinstance(result, Mapping) else None
        if isinstance(outputs, dict) and isinstance(outputs.get(name), dict):
            completed["outputs"] = jsonable(outputs[name])
        return NewEvent("node.completed", completed, node_id=name)

    def _pass_tasks(self, resumed: Mapping[str, InterruptRecord]) -> _PassTasks:
        """The task bookkeeping of the current pass (each pass streams with its own ``resumed``)."""
        if self._tasks is None or self._tasks.resumed is not resumed:
            self._tasks = _PassTasks(resumed)
        return self._tasks

    def _task_name(self, tasks: _PassTasks, chunk: Mapping[str, Any]) -> str:
        """The node id a task's events carry: a graph node's name, or a call task under its caller.

        A ``@task`` called from a node is streamed under the function's name alone; its
        interrupts are addressed ``<caller>.<task>``, so its events are too. The caller is the
        node task running in this pass (an entrypoint runs alone in its step); with several
        running, the caller is unknown and the task keeps its own name.
        """
        name = str(chunk["name"])
        if name in self.graph.nodes or _PUSH not in (chunk.get("triggers") or ()):
            return name  # a node, or a ``Send`` to one
        callers = set(tasks.callers.values())
        return f"{callers.pop()}.{name}" if len(callers) == 1 else name

    def _on_start(self, task_id: str, name: str, is_call: bool, tasks: _PassTasks, *, pulled: bool) -> None:
        """Open the task's execution in the log, unless it is replayed or already suspended."""
        if pulled and not self.is_async:
            # A sync stream hands over a node task's start before the task runs: it cannot have
            # finished or suspended in this pass, only before it (a pending interrupt of it).
            if any(p.task_id == task_id or p.node_id.startswith(name + ".") for p in self._pending_at_start):
                return
            # Logged by the next transaction of the run (usually the one of the task's writes).
            self._held.hold(self._execution_event(task_id, name, tasks), self.clock())
            return
        closed = [_stable_event_id(self.run_id, task_id, kind) for kind in ("node.completed", "node.failed")]
        with self._logging() as (conn, ahead):
            # Taken in the order the recorder takes it: its suspension of this task is either
            # committed and seen below, or appended after what this opens.
            lock_run_log(conn, self.run_id)
            if logged_any(conn, closed):
                return  # a finished task's saved result, replayed by the entrypoint's re-execution
            caller_ids = set(tasks.callers) - {task_id}
            for pending in interrupts_of_run(conn, self.run_id, statuses=["pending"]):
                own = pending.task_id == task_id or pending.node_id.startswith(name + ".")
                # The calling node's copy of a call task's interrupt carries the caller's task id.
                if own or (is_call and pending.node_id == name and pending.task_id in caller_ids):
                    return  # it suspended before its start was streamed: the suspension closed it
            opened = self._execution_event(task_id, name, tasks)
            append(conn, self.run_id, [opened], now=self.clock(), once=True, ahead=ahead)

    def _execution_event(self, task_id: str, name: str, tasks: _PassTasks) -> NewEvent:
        """``node.resumed`` (re-executed to receive an answer) or ``node.started``, with its
        stable id."""
        record = tasks.resumed.get(task_id) or next(
            (r for r in tasks.resumed.values() if r.node_id == name or r.node_id.startswith(name + ".")),
            None,
        )
        if record is not None and (record.interrupt_id, name) not in tasks.answered:
            tasks.answered.add((record.interrupt_id, name))
            # Re-executed to receive an answer (its own, or one a task it calls asked for):
            # one execution per answer, so the stable id names the interrupt too.
            payload = {"nodeId": name, "interruptId": record.interrupt_id}
            resumed = NewEvent("node.resumed", payload, node_id=name)
            return self._stable(resumed, f"{task_id}|{record.interrupt_id}")
        payload = {"nodeId": name, "typeId": self._type_id(name)}
        return self._stable(NewEvent("node.started", payload, node_id=name), task_id)

    def _type_id(self, name: str) -> str:
        """The node's OpenWOP ``typeId`` when its graph names one (definitions), else ours."""
        metadata = getattr(self.graph.nodes.get(name), "metadata", None) or {}
        type_id = metadata.get(NODE_TYPE_METADATA)
        return type_id if isinstance(type_id, str) else NODE_TYPE_ID

    def _append_once(self, event: NewEvent, task_id: str) -> None:
        """Append a task event unless a pass before a crash already did (same task, same type).

        ``task_id`` may carry more than the task's id where one task has several such events.
        """
        event = self._stable(event, task_id)
        if not self._held.holding():
            with one_statement(self.engine) as conn, conn.begin():
                append(conn, self.run_id, [event], now=self.clock(), once=True)
            return
        with self._logging() as (conn, ahead):
            append(conn, self.run_id, [event], now=self.clock(), once=True, ahead=ahead)

    def _stable(self, event: NewEvent, task_id: str) -> NewEvent:
        """``event`` with the id it has whichever pass appends it (see :meth:`_append_once`)."""
        stable = _stable_event_id(self.run_id, task_id, event.type)
        return NewEvent(event.type, event.payload, node_id=event.node_id, event_id=stable)

    # -- settling ---------------------------------------------------------------------------

    def _start_pass(self) -> tuple[int, str] | None:
        """Mark the run ``running`` if it was ``pending``; the queue version this pass answers
        and the run's status (``None`` when this worker no longer holds the lease)."""
        return start_pass(self.engine, self.run_id, self.claim.owner)

    def _mark_consumed(self, conn: Connection, delivered: list[InterruptRecord]) -> None:
        """Mark the delivered resolutions as consumed: the graph ran past them."""
        if delivered:
            mark_consumed(conn, [r.interrupt_id for r in delivered], now=self.clock())

    def _settle(
        self, claim: Claim, config: RunnableConfig, delivered: list[InterruptRecord], state: Any = None
    ) -> Pass:
        """Leave the queue waiting on an interrupt, or end the run, or go again if work arrived.

        One transaction: the delivered resolutions are consumed, the run's open interrupts
        read, and the run either waits (if no work arrived meanwhile) or ends. The usual
        ends, a pass that suspended and one that completed the run, first try one statement
        that reads nothing before it (:meth:`_rest_at_once`, :meth:`_complete_at_once`);
        a pass whose interrupt's transaction put the run to rest already has nothing to do.
        """
        if self._rested_with_interrupt is not None:
            self.rested = self._rested_with_interrupt
            return Pass.IDLE
        if state is None and not self._suspended:
            if self._final_values is not _NO_VALUES:
                state = _Ended(self._final_values)  # what the stream ended with
            else:
                self._held.flush()  # the checkpoints the pass holds, for the read
                state = self.graph.get_state(config)
        # else: a task of this pass suspended, so the graph stopped at its interrupt; unless
        # its interrupt is not pending (not ours to answer), the state is not needed.
        now = self.clock()
        if self._suspended and not delivered and not self._held.holding() and self._rest_at_once(claim, now):
            return Pass.IDLE
        if (
            isinstance(state, _Ended)
            and len(delivered) <= 1
            and self._complete_at_once(claim, delivered, state.values, now)
        ):
            return Pass.IDLE
        needs_state = False
        with self._logging() as (conn, ahead):  # (what the pass still holds goes first)
            self._mark_consumed(conn, delivered)
            undelivered, pending = open_work(conn, self.run_id)
            if undelivered:
                return Pass.AGAIN  # a resolution committed while the graph ran
            if pending and (state is None or state.interrupts):
                first = pending[0]
                status = kind_of(first.payload).waiting_status
                self.rested = rest_run(conn, self._rest_params(claim, now), status=status, node=first.node_id)
                return Pass.IDLE if self.rested is not None else Pass.AGAIN
            if state is None:
                needs_state = True  # read outside the transaction, as above
            elif state.next:
                # Suspended with nothing an OpenWOP caller can resolve (a bare breakpoint).
                self._finish(conn, ahead, claim, "failed", error=_stuck_error(state.next))
                return Pass.IDLE
            else:
                self._finish(conn, ahead, claim, "completed", outputs=_outputs_of(state.values))
        if needs_state:
            return self._settle(claim, config, [], self.graph.get_state(config))
        return Pass.IDLE

    def _rest_at_once(self, claim: Claim, now: datetime) -> bool:
        """The usual end of a pass that suspended (nothing to consume, nothing held): the run
        waits on its oldest pending interrupt, in one statement with no read before it.

        ``False`` (nothing written) when a resolution awaits delivery, nothing is pending, or
        the lease moved: :meth:`_settle` then reads the run's work and decides as ever.
        """
        params = self._rest_params(claim, now)
        with one_statement(self.engine) as conn, conn.begin():
            self.rested = rest_at_oldest_interrupt(conn, params, custom_statuses())
        return self.rested is not None

    def _rest_with_interrupt(self, conn: Connection, batch: WriteBatch, resting: Reads | None = None) -> Any:
        """In the transaction that records the interrupt of ``batch``, put the run to rest as
        :meth:`_rest_at_once` would after the stream, when nothing of this pass can come after
        that transaction (:meth:`_resting_with_interrupt`); returns the run's row if it did.
        ``resting``: that rest, sent in the round trip of the interrupt's statement, if it ran
        there (its ``rows`` set): its outcome, with nothing more sent."""
        if resting is not None and resting.rows is not None:
            return rested_row(resting)
        params = self._resting_with_interrupt(batch)
        return None if params is None else rest_at_oldest_interrupt(conn, params, custom_statuses())

    def _resting_with_interrupt(self, batch: WriteBatch) -> dict[str, Any] | None:
        """The parameters of the rest that the transaction recording the interrupt of ``batch``
        can make, as :meth:`_rest_at_once` would after the stream (one commit, and its WAL
        flush, fewer), or ``None`` where something of this pass may come after that transaction.

        Nothing comes after it when the interrupting task is a node task of the top-level graph,
        streamed synchronously (every task of a step is streamed as started before any runs),
        and the only task of the pass not yet ended: LangGraph ends the pass with the step
        (``durability="sync"`` writes nothing more), and nothing is held that this transaction
        did not take. A pass that delivered resolutions consumes them as it settles, so it
        does not rest here. The statement changes nothing when a resolution awaits delivery or
        the queue version moved, as after the stream.
        """
        tasks, claim = self._tasks, self._claim
        if (
            self.is_async
            or claim is None
            or tasks is None
            or tasks.resumed
            or batch.checkpoint_ns
            or self._node_of(batch) is None
            or not any(channel == "__interrupt__" for channel, _ in batch.writes)
        ):
            return None
        # The ended tasks first, then the held: a task ends in the stream after its writes are
        # held (or committed), so a sibling seen ended has its writes taken by now or waiting.
        if list(tasks.names.copy()) != [batch.task_id] or self._held.waiting() or self.signal.stop.is_set():
            return None
        return self._rest_params(claim, self.clock())

    def _rest_params(self, claim: Claim, now: datetime) -> dict[str, Any]:
        """The parameters the rest statements share (see :func:`rest_params`)."""
        return rest_params(self.run_id, claim.owner, claim.version, now)

    def _complete_at_once(
        self, claim: Claim, delivered: list[InterruptRecord], values: Any, now: datetime
    ) -> bool:
        """The usual end of a pass that ran the graph to its end (at most one resolution to
        consume): the delivered resolution is consumed, the run completed and ``run.completed``
        appended in one statement, with no read before it; what the pass holds goes first, in
        the same transaction (its events in that statement).

        ``False`` when a resolution awaits delivery, the run ended meanwhile (cancelled) or
        its log is closed; the delivery is consumed all the same (as :meth:`_settle` would),
        and :meth:`_settle` reads the run's work and decides as ever.
        """
        outputs = _outputs_of(values)
        params = self._end_params(claim, "completed", outputs=outputs, now=now)
        consumed = consume_one_write(delivered[0].interrupt_id, now=now) if delivered else None
        if consumed is not None:
            params["end_consumed_id"] = delivered[0].interrupt_id
        gate = end_gate(params, consuming=consumed is not None)
        event = NewEvent("run.completed", {"outputs": outputs})
        holding = self._held.holding()
        try:
            # What the pass holds goes first, in the same transaction (its events in the statement).
            with self._logging() if holding else self._one_statement() as (conn, ahead):
                self.rested = append(
                    conn, self.run_id, [event], now=now, gate=gate, close=True, leading=consumed, ahead=ahead
                ).row
        except RunLogClosed:  # closed, or a held event logged before a crash: the usual way
            if not holding:
                raise
            self.rested = None
            return False
        return self.rested is not None

    @contextmanager
    def _one_statement(self) -> Iterator[tuple[Connection, NextAppend]]:
        """A write of one statement (in autocommit on PostgreSQL, see ``one_statement``), with
        nothing to go ahead of its append (as :meth:`_logging` yields it)."""
        with one_statement(self.engine) as conn, conn.begin():
            yield conn, NextAppend(self.run_id)

    def _stopped(self, claim: Claim, delivered: list[InterruptRecord] | None = None) -> Pass:
        """The run was cancelled while driven: drop it from the queue, write nothing more."""
        self._held.close()
        with self.engine.begin() as conn:
            self._mark_consumed(conn, delivered or [])
            dequeue(conn, claim.run_id, claim.owner)
        return Pass.IDLE

    def _end_params(
        self,
        claim: Claim,
        status: str,
        *,
        now: datetime,
        outputs: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        node: str | None = None,
    ) -> dict[str, Any]:
        """The parameters of :func:`end_run` (and of :func:`end_gate`) for this run."""
        return end_params(self.run_id, claim.owner, status, now=now, outputs=outputs, error=error, node=node)

    def _breach(self, error: BaseException) -> NewEvent | None:
        """``cap.breached`` when the run's own ``recursionLimit`` stopped the graph, else ``None``.

        LangGraph counts steps of this drive; a WorkflowDefinition runs one node per step, so
        for it the limit is a cap on node executions: ``limit`` ran, the next would have been
        execution ``limit + 1`` (the ``observed`` value at the breach).
        """
        if not isinstance(error, GraphRecursionError) or self.recursion_limit is None:
            return None
        limit = self.recursion_limit
        return NewEvent("cap.breached", {"kind": "node-executions", "limit": limit, "observed": limit + 1})

    def _finish(
        self,
        conn: Connection,
        ahead: NextAppend,
        claim: Claim,
        status: str,
        *,
        outputs: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        failed_node: str | None = None,
        breach: NewEvent | None = None,
    ) -> None:
        """End the run in ``conn``'s transaction: its row, the queue, the terminal event (after
        the ``breach`` of a cap that ended it, if any, and what goes ``ahead``)."""
        now = self.clock()
        node = failed_node if status == "failed" else None
        params = self._end_params(claim, status, outputs=outputs, error=error, node=node, now=now)
        self.rested = end_run(conn, params)  # out of the queue too
        if self.rested is None:
            dequeue(conn, claim.run_id, claim.owner)
            return  # cancelled meanwhile: the cancellation already wrote the terminal event
        if status == "completed":
            event = NewEvent("run.completed", {"outputs": outputs or {}})
        else:
            payload: dict[str, Any] = {"error": error}
            if failed_node is not None:
                payload["failedNodeId"] = failed_node
            event = NewEvent("run.failed", payload)
        told = [e for e in (breach, event) if e is not None]
        append(conn, self.run_id, told, now=now, close=True, ahead=ahead)


class _TaskEnds:
    """Logs the ends of a run's node tasks with their writes, and holds the run's saves.

    LangGraph stores a task's writes and the next checkpoint from background threads, neither
    waiting for the other. The checkpoint supersedes the writes: if it committed first and the
    process died before the writes did, the task would never run again and its end would be
    lost. So a checkpoint of the run waits until every started node task's writes, and with
    them its end, have committed or are held (held saves are stored in the order they came).
    """

    def __init__(self, driver: GraphDriver, *, finished: set[str], fresh: bool) -> None:
        self._driver = driver
        self._guard = threading.Condition()
        #: The run was created by this drive and no interrupt of it was recorded yet.
        self._fresh = fresh
        self._awaited: set[str] = set()
        self._committed: set[str] = set(finished)
        #: What a batch's transaction took of the held, until it commits (by ``id(batch)``).
        self._taken: dict[int, Taken] = {}
        #: The run's row as a batch's transaction put it to rest, until it commits (by ``id(batch)``).
        self._resting: dict[int, tuple[WriteBatch, Any]] = {}

    def expect(self, task_id: str) -> None:
        """A node task started: its end is to be logged with its writes (unless it finished)."""
        with self._guard:
            if task_id not in self._committed:
                self._awaited.add(task_id)

    def wait_for(self, task_id: str) -> bool:
        """Whether ``task_id``'s writes committed (waiting for them, bounded)."""
        with self._guard:
            return self._guard.wait_for(lambda: task_id in self._committed, _END_RECORD_TIMEOUT_S)

    def wants(self, batch: WriteBatch) -> bool:
        return self._driver._node_of(batch) is not None

    @contextmanager
    def opening(self, conn: Connection, batch: WriteBatch, ahead: NextAppend) -> Iterator[None]:
        try:
            with self._driver._held.first_in(
                conn, ahead
            ) as taken:  # what is held first: what follows is later
                if taken.held:
                    with self._guard:
                        self._taken[id(batch)] = taken
                yield
        except BaseException:
            # The batch's transaction will not commit (the held saves may fail as the block
            # ends, where they go when no statement took them): hold what it took again at
            # once (the saver may store the batch again, in a transaction that takes it anew).
            with self._guard:
                dropped = self._taken.pop(id(batch), None)
                self._resting.pop(id(batch), None)
            if dropped is not None:
                self._driver._held.settled(dropped, committed=False)
            raise

    def resting(self, batch: WriteBatch) -> Reads | None:
        params = self._driver._resting_with_interrupt(batch)
        return None if params is None else resting_at_oldest_interrupt(params, custom_statuses())

    def record(
        self, conn: Connection, batch: WriteBatch, ahead: NextAppend, resting: Reads | None = None
    ) -> None:
        self._driver._record_task_end(conn, batch, ahead)
        rested = self._driver._rest_with_interrupt(conn, batch, resting)
        if rested is not None:
            with self._guard:
                self._resting[id(batch)] = (batch, rested)

    def first_interrupt(self) -> bool:
        with self._guard:
            first, self._fresh = self._fresh, False
        return first

    def one_append(self, batch: WriteBatch) -> bool:
        # The held starts ride in the append of the task's end, or are appended on their own
        # when it logs none: one append either way.
        return True

    def committed(self, batch: WriteBatch) -> None:
        with self._guard:
            taken = self._taken.pop(id(batch), None)
            resting = self._resting.pop(id(batch), None)
        if resting is not None and resting[0] is batch:
            self._driver._rested_with_interrupt = resting[1]
        if taken is not None:
            self._driver._held.settled(taken, committed=True)
        if not batch.checkpoint_ns:  # (a subgraph's batch only carried what was held)
            self._written(batch.task_id)

    def hold(self, write: HeldWrite, batch: WriteBatch | None) -> bool:
        """Keep a save of the run with what the drive holds, a node task's writes with its end;
        they are stored in that order, so for what waits on them they are as good as stored."""
        driver = self._driver
        event = None if batch is None else driver._task_end(batch)
        if not driver._held.hold_write(write, event, driver.clock()):
            return False
        if batch is not None:
            self._written(batch.task_id)
        return True

    def _written(self, task_id: str) -> None:
        with self._guard:
            self._committed.add(task_id)
            self._awaited.discard(task_id)
            self._guard.notify_all()

    def close(self) -> None:
        """The stream ended: hold again what batches took that never committed."""
        with self._guard:
            taken, self._taken = list(self._taken.values()), {}
            self._resting.clear()
        for held in taken:
            self._driver._held.settled(held, committed=False)

    def before_checkpoint(self) -> None:
        with self._guard:
            # Bounded: a task that ends without writes (LangGraph writes none for a bubbling
            # ``ParentCommand``) must not hold the run forever.
            if not self._guard.wait_for(lambda: not self._awaited, _END_RECORD_TIMEOUT_S):
                _log.warning("run %s: no writes arrived for tasks %s", self._driver.run_id, self._awaited)
            self._awaited.clear()


def resume_command(delivered: list[InterruptRecord], values: Mapping[str, Any]) -> Command[Any]:
    """The strict ``Command(resume={langgraph_interrupt_id: delivery})`` for these interrupts."""
    return Command(resume={r.lg_interrupt_id: values[r.interrupt_id] for r in delivered})


#: Writes that tell what happened to a task; any other write is output (see LangGraph's
#: ``pregel._task_status``: a task finished if and only if it has an output write).
_CONTROL_WRITES = frozenset({"__interrupt__", "__resume__", "__error__", "__error_source_node__"})


def _finished_tasks(pending_writes: Sequence[tuple[str, str, Any]]) -> set[str]:
    """The ids of the tasks that finished, among a saved step's pending writes."""
    return {task_id for task_id, channel, _ in pending_writes if channel not in _CONTROL_WRITES}


def _single_writes(writes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """Channel -> value of the channels written once (as a ``tasks`` stream result holds them)."""
    values: dict[str, Any] = {}
    repeated: set[str] = set()
    for channel, value in writes:
        if channel in values:
            repeated.add(channel)
        values[channel] = value
    return {channel: value for channel, value in values.items() if channel not in repeated}


def _node_failed(name: str, error: dict[str, Any]) -> NewEvent:
    return NewEvent("node.failed", {"nodeId": name, "error": error, "attempts": 1}, node_id=name)


def _outputs_of(values: Any) -> dict[str, Any]:
    """The run's ``outputs``: the graph's final state as JSON (a non-dict state as ``value``)."""
    return jsonable(values) if isinstance(values, dict) else {"value": jsonable(values)}


def _node_value(record: InterruptRecord) -> Any:
    """What the node's ``interrupt()`` returns: a bare interrupt gets its native value."""
    if is_bare(record.payload):
        return to_node_value(record.payload, record.resolution or {}, record.resume_value)
    return _delivery(record).as_value()


def _delivery(record: InterruptRecord) -> Delivery:
    status = "expired" if record.status == "expired" else "resolved"
    return Delivery(status=status, resume_value=record.resume_value, resolution=record.resolution or {})


def _stable_event_id(run_id: str, task_id: str, event_type: str) -> str:
    return hashlib.sha256(f"{run_id}|{task_id}|{event_type}".encode()).hexdigest()[:32]


def _run_coroutine(coro: Any) -> Any:
    """Run ``coro`` to completion from sync code, on a loop of its own.

    A thread that already runs an event loop (a notebook cell) cannot start another, so there
    the coroutine runs on a short-lived thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="wop-async-drive") as pool:
        # In this context: what the pass set for its saves (see _stream) holds there too.
        return pool.submit(contextvars.copy_context().run, asyncio.run, coro).result()


def _stuck_error(next_nodes: tuple[str, ...]) -> dict[str, Any]:
    return {
        "code": "validation_error",
        "message": (
            f"the graph stopped before {', '.join(next_nodes)} without an OpenWOP interrupt "
            "(a static breakpoint?); use request_approval() or another node API call instead"
        ),
        "retryable": False,
    }
