"""Child process of ``test_create_held.py``: ``python -m tests.host._first_node_child <mode> <url>``.

It creates a run of :func:`first_node_graph` with ``wait=True`` (the run's id minted by the
call, so its row and ``run.started`` are held by the drive), and the graph's first node kills
the process with ``SIGKILL``:

* ``at-once``: as the node starts, before anything of the run is stored (nothing is stored on
  its own for a minute: ``FLUSH_AFTER_S``);
* ``later``: once the row has been stored on its own (the node ran past ``FLUSH_AFTER_S``); the
  run id goes to stdout first.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from sqlalchemy import select

from wop_langgraph.host import Principal, WopHost, held_writes
from wop_langgraph.store.run_tables import runs_table

WORKFLOW = "first-node"
ALICE = Principal("acme", "alice", frozenset({"runs:create", "runs:read", "approvals:respond"}))
#: Set in the child only: its first node kills it (the value is the mode).
KILL_ENV = "WOP_TEST_KILL_IN_FIRST_NODE"


class State(TypedDict, total=False):
    n: int
    answer: Any


def gated_graph(first: Callable[[State], State]) -> Pregel:
    """``first -> gate``: ``gate`` asks with LangGraph's own ``interrupt()``."""

    def gate(state: State) -> State:
        return {"answer": interrupt({"question": "go on?"})}

    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("gate", gate)
    g.add_edge(START, "first")
    g.add_edge("first", "gate")
    g.add_edge("gate", END)
    return g.compile()


def first_node_graph() -> Pregel:
    """:func:`gated_graph` whose first node kills the process where :data:`KILL_ENV` says."""

    def first(state: State) -> State:
        mode = os.environ.get(KILL_ENV)
        if mode is not None:
            run_id = get_config()["configurable"]["thread_id"]
            print(run_id, flush=True)
            if mode == "later":
                _wait_for_row(run_id)
            os.kill(os.getpid(), signal.SIGKILL)
        return {"n": state.get("n", 0) + 1}

    return gated_graph(first)


def _wait_for_row(run_id: str) -> None:
    """Until the run's row is stored (on its own, the node running past ``FLUSH_AFTER_S``)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with _HOST.engine.connect() as conn:
            if conn.execute(select(runs_table.c.run_id).where(runs_table.c.run_id == run_id)).first():
                return
        time.sleep(0.01)
    raise SystemExit("the run's row was not stored while its first node ran")


_HOST: WopHost


def main(argv: Sequence[str]) -> int:
    global _HOST
    mode, url = argv
    if mode == "at-once":
        held_writes.FLUSH_AFTER_S = 60.0
    elif mode != "later":
        raise SystemExit(f"unknown mode {mode!r}")
    os.environ[KILL_ENV] = mode
    _HOST = WopHost.from_url(url)
    _HOST.register(WORKFLOW, first_node_graph())
    _HOST.create_run(WORKFLOW, {"n": 0}, owner=ALICE)
    return 3  # unreachable: the first node kills the process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
