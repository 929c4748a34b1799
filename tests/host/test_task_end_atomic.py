"""A node's end is logged in the transaction of its writes: a crash cannot keep one without the other.

A process is SIGKILLed at the moment ``node.completed`` of the first node is inserted. Had the
event its own transaction after the writes', the writes would be stored and the event lost for
good (the node is not run again). In the writes' transaction, both are rolled back: a fresh
host runs the node again and logs its end once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from wop_langgraph.host import WopHost
from wop_langgraph.store.run_tables import runs_table

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

GRAPH = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class State(TypedDict, total=False):
    steps: list[str]

def prepare(state: State) -> State:
    return {"steps": [*state.get("steps", []), "prepare"]}

def finish(state: State) -> State:
    return {"steps": [*state.get("steps", []), "finish"]}

builder = StateGraph(State)
builder.add_node("prepare", prepare)
builder.add_node("finish", finish)
builder.add_edge(START, "prepare")
builder.add_edge("prepare", "finish")
builder.add_edge("finish", END)
graph = builder.compile()
"""

DIE_AT_THE_EVENT = """
import os, signal, sys
from sqlalchemy import event
from tests.host._graphs import ALICE
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import mint_tenant_id

host = WopHost.from_url(sys.argv[1])
host.register("two-steps", graph)

def die(conn, cursor, statement, parameters, context, executemany):
    if "INSERT INTO wop_events" in statement and "node.completed" in str(parameters):
        os.kill(os.getpid(), signal.SIGKILL)  # before the transaction commits

event.listen(host.engine, "before_cursor_execute", die)
# An id given out before the call: the run's row is committed before its graph starts (an id
# the call mints goes with the drive's first transaction: tests/host/test_create_held.py).
host.create_run("two-steps", {"steps": []}, owner=ALICE, run_id=mint_tenant_id("acme"))
"""


def test_a_crash_at_a_node_end_loses_neither_the_event_nor_the_step(db_url: str, tmp_path: Path) -> None:
    script = tmp_path / "die.py"
    script.write_text(GRAPH + DIE_AT_THE_EVENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    crashed = subprocess.run(
        [sys.executable, str(script), db_url], env=env, cwd=ROOT, capture_output=True, timeout=120
    )
    assert crashed.returncode == -9, crashed.stderr.decode()[-2000:]

    namespace: dict[str, object] = {}
    exec(GRAPH, namespace)
    host = WopHost.from_url(db_url)
    try:
        host.register("two-steps", namespace["graph"])  # type: ignore[arg-type]
        run_id = _only_run(host)
        host.recover()
        snapshot = host.snapshot(run_id)
        assert snapshot["status"] == "completed", snapshot
        log = host.events(run_id)
        assert log[-1]["type"] == "run.completed"
        assert log[-1]["payload"]["outputs"]["steps"] == ["prepare", "finish"]
        ends = Counter((e["type"], e["payload"].get("nodeId")) for e in log if e["type"].startswith("node."))
        assert ends[("node.completed", "prepare")] == 1, log
        assert ends[("node.completed", "finish")] == 1, log
        sequences = [e["sequence"] for e in log]
        assert sequences == list(range(len(log)))
    finally:
        host.saver.close()


def _only_run(host: WopHost) -> str:
    with host.engine.connect() as conn:
        ids = [str(r) for (r,) in conn.execute(select(runs_table.c.run_id))]
    assert len(ids) == 1, ids
    return ids[0]
