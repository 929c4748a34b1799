"""``wop-langgraph demo``: one approval, end to end, on an embedded SQLite file."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wop_langgraph.examples.review import build_review_graph
from wop_langgraph.host import Principal, WopHost

__all__ = ["run_demo"]


def run_demo(db_path: Path | None = None, *, out: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the review graph to its approval, resolve it, and print the event log.

    Returns the final snapshot.
    """
    folder = None
    if db_path is None:
        folder = tempfile.TemporaryDirectory(prefix="wop-demo-")
        db_path = Path(folder.name) / "runs.db"
    host = WopHost.from_url(f"sqlite:///{db_path}")
    try:
        host.register("announcement-review", build_review_graph())
        author = Principal(tenant="acme", subject_id="author@acme.test", scopes=frozenset({"runs:create"}))
        reviewer = Principal(
            tenant="acme", subject_id="reviewer@acme.test", scopes=frozenset({"approvals:respond"})
        )

        out(f"database: {db_path}")
        snapshot = host.create_run("announcement-review", {"topic": "wop-langgraph 0.1"}, owner=author)
        run_id = snapshot["runId"]
        out(f"\n1. created run {run_id}: status {snapshot['status']} at node {snapshot.get('currentNodeId')}")
        (pending,) = host.pending_interrupts(run_id)
        out(f"   pending interrupt: key={pending.key}")
        out(f"   payload: {json.dumps(pending.payload['data'], indent=None)}")

        out(f"\n2. resolve by run: POST /runs/{{runId}}/interrupts/{pending.node_id}  (no token needed)")
        answer = {"action": "accept", "feedback": "Ship it."}
        result = host.resolve(run_id, pending.node_id, answer, reviewer)
        out(f"   -> {result}")

        final = host.snapshot(run_id)
        out(f"\n3. run {final['status']}; outputs: {host.events(run_id)[-1]['payload'].get('outputs')}")
        out("\n4. event log:")
        out(format_events(host.events(run_id)))
        return final
    finally:
        host.saver.engine.dispose()
        if folder is not None:
            folder.cleanup()


def format_events(events: list[dict[str, Any]]) -> str:
    """The events as a fixed-width table: sequence, type, node, a short payload summary."""
    rows = [("seq", "type", "node", "details")]
    for event in events:
        rows.append((str(event["sequence"]), event["type"], event.get("nodeId") or "", _summary(event)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
    return "\n".join(lines)


def _summary(event: dict[str, Any]) -> str:
    payload = event["payload"]
    picked = {k: payload[k] for k in ("kind", "action", "decision", "reason", "key") if k in payload}
    if "error" in payload:
        picked["error"] = payload["error"].get("code")
    text = ", ".join(f"{k}={v}" for k, v in picked.items())
    return text[:100]
