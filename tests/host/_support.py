"""Helpers for the host tests: start runs, read events validated against the official schemas."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph.pregel import Pregel
from sqlalchemy import select

from tests.host._graphs import ALICE
from tests.official import event_errors
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store.forks import fork_of
from wop_langgraph.store.run_tables import runs_table

_WORKFLOW_IDS = itertools.count()

#: The ``make_host`` fixture: ``make_host(**WopHost options) -> WopHost`` over the test's database.
HostFactory = Callable[..., WopHost]
_ROOT = Path(__file__).resolve().parents[2]


def killed_child(module: str, *args: str, env: Mapping[str, str]) -> str:
    """Run ``python -m module args...`` (from the repository's root, with ``env``) until it
    SIGKILLs itself; the first word it printed (a run id)."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=_ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout.split()[0]


def start(
    host: WopHost,
    graph: Pregel,
    inputs: Any = None,
    *,
    owner: Principal = ALICE,
    rejection_routes: dict[str, str] | None = None,
    **options: Any,
) -> tuple[str, dict[str, Any]]:
    """Register ``graph`` under a fresh workflow id and create a run of it; (runId, snapshot)."""
    workflow_id = f"wf-{next(_WORKFLOW_IDS)}"
    host.register(workflow_id, graph, rejection_routes=rejection_routes)
    snapshot = host.create_run(workflow_id, inputs if inputs is not None else {}, owner=owner, **options)
    return snapshot["runId"], snapshot


def events(host: WopHost, run_id: str, *, waive: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The run's events, each validated against the official schemas, numbered 0, 1, 2, ...

    Args:
        waive: regular expressions of schema errors to set aside (a known, reported conflict);
            every other error fails the test.
    """
    docs = host.events(run_id)
    for doc in docs:
        errors = [e for e in event_errors(doc) if not any(re.search(w, e) for w in waive)]
        assert not errors, f"{doc['type']} #{doc['sequence']} not valid against the official schemas:\n" + (
            "\n".join(errors)
        )
    assert [d["sequence"] for d in docs] == list(range(len(docs))), "sequences must be gap-free from 0"
    assert len({d["eventId"] for d in docs}) == len(docs), "eventIds must be unique"
    return docs


def of_type(docs: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["type"] == event_type]


def payloads(docs: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [d["payload"] for d in of_type(docs, event_type)]


def only_pending(host: WopHost, run_id: str, node_id: str | None = None) -> Any:
    """The single pending interrupt of the run (of ``node_id`` when given)."""
    pending = [r for r in host.pending_interrupts(run_id) if node_id is None or r.node_id == node_id]
    assert len(pending) == 1, [(r.node_id, r.key) for r in pending]
    return pending[0]


def check_run_invariants(host: WopHost, run_id: str, *, waive: Sequence[str] = ()) -> None:
    """What must hold for every run: valid events, one row per key, one request per interrupt."""
    docs = events(host, run_id, waive=waive)
    rows = host.interrupts(run_id)
    keys = Counter(r.key for r in rows)
    assert all(n == 1 for n in keys.values()), f"a key appears in several interrupt rows: {keys}"
    requested = Counter(p["key"] for p in payloads(docs, "interrupt.requested"))
    with host.engine.connect() as conn:
        fork = fork_of(conn, run_id)
    if fork is not None and fork.is_replay:
        # A replay answers the source's resolved gates from the record: those are never asked.
        rows_asked = [r for r in rows if r.key in requested]
        assert requested == Counter({r.key: 1 for r in rows_asked}), (
            "one interrupt.requested per asked interrupt"
        )
    else:
        assert requested == Counter({r.key: 1 for r in rows}), "exactly one interrupt.requested per interrupt"
    resolved = Counter(p["interruptId"] for p in payloads(docs, "interrupt.resolved"))
    assert all(n == 1 for n in resolved.values()), f"an interrupt was resolved twice: {resolved}"
    for row in rows:
        if row.status in ("resolved", "expired"):
            assert resolved[row.interrupt_id] == 1, f"{row.key} is {row.status} without interrupt.resolved"
        else:
            assert resolved[row.interrupt_id] == 0, f"{row.key} is {row.status} yet has interrupt.resolved"
    terminal = [d for d in docs if d["type"] in ("run.completed", "run.failed", "run.cancelled")]
    assert len(terminal) <= 1, [d["type"] for d in terminal]
    if terminal:
        assert terminal[0] is docs[-1] or all(
            d["type"] not in ("node.started", "node.resumed", "interrupt.requested")
            for d in docs[docs.index(terminal[0]) + 1 :]
        ), "nothing runs after the terminal event"


def all_run_ids(host: WopHost) -> list[str]:
    with host.engine.connect() as conn:
        return [row.run_id for row in conn.execute(select(runs_table.c.run_id))]


def footprint(host: WopHost, run_id: str) -> tuple[Any, ...]:
    """What a refused request must leave unchanged: events, status, interrupt rows and votes."""
    return (
        len(host.events(run_id)),
        host.snapshot(run_id)["status"],
        [(r.key, r.status, r.votes, r.resolved_at) for r in host.interrupts(run_id)],
    )
