"""``python -m wop_langgraph.examples.<name>``: run an example once, answering its interrupts.

Each example module without a script of its own calls :func:`walk` under ``__main__``: a host on
a temporary SQLite file, one run, every interrupt printed and answered with the example's
canned answer, and the run's outputs (``host.result``) printed at the end.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.pregel import Pregel

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["REVIEWER", "walk"]

REVIEWER = Principal("demo", "reviewer", frozenset({"runs:create", "approvals:respond"}))


def walk(
    workflow_id: str,
    graph: Pregel[Any, Any, Any, Any],
    inputs: Any,
    answer: Callable[[InterruptRecord], Any],
    **host_options: Any,
) -> dict[str, Any]:
    """Run ``graph`` once, printing each interrupt and ``answer(record)``; returns the outputs."""
    with tempfile.TemporaryDirectory() as folder:
        host = WopHost.from_url(f"sqlite:///{Path(folder) / 'example.db'}", **host_options)
        try:
            host.register(workflow_id, graph)
            run = host.create_run(workflow_id, inputs, owner=REVIEWER)
            run_id = run["runId"]
            print(f"{workflow_id}: run {run_id} is {run['status']}")
            while pending := host.pending_interrupts(run_id):
                record = pending[0]
                shown = {k: v for k, v in record.payload.items() if k in ("kind", "data")}
                print(f"  waits at {record.node_id!r}: {json.dumps(shown, default=str)[:300]}")
                value = answer(record)
                print(f"  answer: {json.dumps(value)}")
                status = host.resolve(run_id, record.node_id, value, REVIEWER)["status"]
                print(f"  -> {status}")
            outputs = host.result(run_id)
            print(f"{workflow_id}: {host.snapshot(run_id)['status']}; outputs:")
            print(json.dumps(outputs, indent=2, default=str))
            return outputs
        finally:
            host.saver.close()
