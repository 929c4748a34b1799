"""A pass's saves are held and stored by the next transaction that records something of the run.

While a pass streams, the saver hands the run's top-level saves (each checkpoint, each task's
writes, with the end of the node task they close) to the drive, which keeps them in order with
the held node starts. The next transaction of the run (an interrupt, the pass's end, what a node
emits) stores them first, on PostgreSQL in one pipeline; a node that runs longer than
``FLUSH_AFTER_S`` finds what came before it stored on its own meanwhile. A crash loses only
what was held, which is what a crash before those saves would have lost: the run continues
from its last stored checkpoint and runs the lost steps again, each end logged once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from sqlalchemy import select

from tests.host._graphs import ALICE, WORKFLOW, approval_graph
from tests.host._support import HostFactory
from tests.host.test_engine import until
from tests.round_trips import statements
from wop_langgraph.host import WopHost, held_writes
from wop_langgraph.store.run_tables import runs_table

ROOT = Path(__file__).resolve().parents[2]
ACCEPT = {"action": "accept", "feedback": "ship it"}


def _saves(seen: list[tuple[str, bool, bool]]) -> list[tuple[str, bool, bool]]:
    return [
        s
        for s in seen
        if s[0].startswith(("INSERT INTO wop_checkpoints ", "INSERT INTO wop_checkpoint_writes "))
    ]


def test_a_pass_stores_its_saves_in_the_transaction_that_settles_it(
    make_host: HostFactory, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("psycopg's statements are traced (SQLite: see the tests that follow)")
    # Nothing stored on its own, however slow the machine: only by the pass's transactions.
    monkeypatch.setattr(held_writes, "FLUSH_AFTER_S", 60.0)
    host = make_host()
    host.register(WORKFLOW, approval_graph())
    host.create_run(WORKFLOW, {"log": []}, owner=ALICE)  # warm the pool and the statement caches
    with statements() as created:
        snap = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    assert snap["status"] == "waiting-approval"
    with statements() as resolved:
        assert host.resolve(snap["runId"], "review", ACCEPT, ALICE)["status"] == "completed"
    for seen in (created, resolved):
        saves = _saves(seen)
        # No save in autocommit: each rides in a transaction that records something of the run,
        # the checkpoints (two each way at least) in one statement, in one pipeline with the
        # writes.
        assert saves and all(in_tx for _, in_tx, _ in saves), saves
        checkpoints = [s for s in saves if s[0].startswith("INSERT INTO wop_checkpoints ")]
        assert len(checkpoints) == 1 and checkpoints[0][2], checkpoints
        values = checkpoints[0][0].split(" VALUES ", 1)[1].split(" ON CONFLICT ", 1)[0]
        assert values.count("), (") + 1 >= 2, checkpoints
        # The writes of the task that stopped the pass (its interrupt, its resume) go with them.
        assert all(piped for _, _, piped in saves), saves
        # And so does the statement after them (the interrupt's read of the run's interrupts,
        # the pass's gated end): the saves cost no round trip of their own.
        last = max(i for i, s in enumerate(seen) if s in saves)
        after = seen[last + 1]
        assert after not in saves and after[2], (after, seen)
    # The statement that decides the gate and queues the run, then the caller's claim of the
    # run with the reads of its open work and latest checkpoint, in one pipeline: the drive
    # reads neither again.
    reads = [i for i, s in enumerate(resolved) if s[0].startswith("WITH cp AS")]
    assert len(reads) == 1, resolved
    decision, claim, work, read = resolved[reads[0] - 3 : reads[0] + 1]
    assert decision[0].startswith("WITH") and "wop_events" in decision[0], resolved
    assert claim[0].startswith("UPDATE wop_runs") and work[0].startswith("SELECT wop_interrupts"), resolved
    assert all(in_tx and piped for _, in_tx, piped in (decision, claim, work, read)), resolved
    ends = [e["nodeId"] for e in host.events(snap["runId"]) if e["type"] == "node.completed"]
    assert ends == ["write", "review", "publish"]


class _State(TypedDict, total=False):
    steps: list[str]


def _quick_then_held(running: threading.Event, release: threading.Event) -> Any:
    def quick(state: _State) -> _State:
        return {"steps": ["quick"]}

    def slow(state: _State) -> _State:
        running.set()
        assert release.wait(30)
        return {"steps": [*state["steps"], "slow"]}

    builder = StateGraph(_State)
    builder.add_node("quick", quick)
    builder.add_node("slow", slow)
    builder.add_edge(START, "quick")
    builder.add_edge("quick", "slow")
    builder.add_edge("slow", END)
    return builder.compile()


def test_what_precedes_a_node_that_runs_longer_is_stored_while_it_runs(make_host: HostFactory) -> None:
    running, release = threading.Event(), threading.Event()
    host = make_host()
    host.register("held", _quick_then_held(running, release))
    host.start_workers(1, poll_seconds=0.05, sweep_seconds=0)
    try:
        run_id = host.create_run("held", {}, owner=ALICE, wait=False)["runId"]
        assert running.wait(15)
        config = {"configurable": {"thread_id": run_id}}

        def stored() -> bool:
            saved = host.saver.get_tuple(config)  # a read of the database
            types = [(e["type"], e.get("nodeId")) for e in host.events(run_id)]
            return (
                saved is not None
                and saved.checkpoint["channel_values"].get("steps") == ["quick"]
                and ("node.completed", "quick") in types
                and ("node.started", "slow") in types
            )

        until(stored, what="quick's end, the checkpoint after it and slow's start")
        assert ("node.completed", "slow") not in [(e["type"], e.get("nodeId")) for e in host.events(run_id)]
        release.set()
        until(lambda: host.snapshot(run_id)["status"] == "completed", what="the end")
        assert host.events(run_id)[-1]["payload"]["outputs"]["steps"] == ["quick", "slow"]
    finally:
        release.set()
        host.stop_workers()


GRAPH = """
import os, signal
from pathlib import Path
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class State(TypedDict, total=False):
    steps: list[str]

RAN = Path(os.environ["WOP_HELD_RAN"])

def prepare(state: State) -> State:
    with RAN.open("a") as ran:
        ran.write("prepare\\n")
    return {"steps": ["prepare"]}

def finish(state: State) -> State:
    if os.environ.get("WOP_HELD_DIE"):
        os.kill(os.getpid(), signal.SIGKILL)  # prepare's end and the step after it still held
    return {"steps": [*state["steps"], "finish"]}

builder = StateGraph(State)
builder.add_node("prepare", prepare)
builder.add_node("finish", finish)
builder.add_edge(START, "prepare")
builder.add_edge("prepare", "finish")
builder.add_edge("finish", END)
graph = builder.compile()
"""

DIE_WHILE_HELD = """
import sys
from tests.host._graphs import ALICE
from wop_langgraph.host import WopHost, held_writes
from wop_langgraph.protocol.ids import mint_tenant_id

held_writes.FLUSH_AFTER_S = 60.0  # nothing stored on its own: held until the next transaction
host = WopHost.from_url(sys.argv[1])
host.register("two-steps", graph)
# An id given out before the call: the run's row is committed before its graph starts (an id
# the call mints goes with the drive's first transaction, held too: tests/host/test_create_held.py).
host.create_run("two-steps", {"steps": []}, owner=ALICE, run_id=mint_tenant_id("acme"))
"""


def test_a_crash_loses_only_held_saves_and_the_run_does_those_steps_again(
    db_url: str, tmp_path: Path
) -> None:
    script, ran = tmp_path / "die.py", tmp_path / "ran.txt"
    script.write_text(GRAPH + DIE_WHILE_HELD)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "WOP_HELD_RAN": str(ran),
    }
    crashed = subprocess.run(
        [sys.executable, str(script), db_url],
        env={**env, "WOP_HELD_DIE": "1"},
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    assert crashed.returncode == -9, crashed.stderr.decode()[-2000:]

    os.environ["WOP_HELD_RAN"] = str(ran)
    try:
        namespace: dict[str, object] = {}
        exec(GRAPH, namespace)
    finally:
        del os.environ["WOP_HELD_RAN"]
    host = WopHost.from_url(db_url)
    try:
        host.register("two-steps", namespace["graph"])  # type: ignore[arg-type]
        with host.engine.connect() as conn:
            (run_id,) = [str(r) for (r,) in conn.execute(select(runs_table.c.run_id))]
        before = [(e["type"], e.get("nodeId")) for e in host.events(run_id)]
        assert ("node.completed", "prepare") not in before, before  # it was held when the process died
        host.recover()
        assert host.snapshot(run_id)["status"] == "completed"
        log = host.events(run_id)
        assert log[-1]["payload"]["outputs"]["steps"] == ["prepare", "finish"]
        assert ran.read_text().split() == ["prepare", "prepare"]  # its lost step ran again
        ends = Counter((e["type"], e.get("nodeId")) for e in log if e["type"] == "node.completed")
        assert ends == {("node.completed", "prepare"): 1, ("node.completed", "finish"): 1}, log
        assert [e["sequence"] for e in log] == list(range(len(log)))
    finally:
        host.saver.close()
