"""The README's first command: the demo runs an approval end to end on embedded SQLite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from wop_langgraph.demo import format_events, run_demo


def test_demo_resolves_the_approval_and_completes(tmp_path: Path) -> None:
    lines: list[str] = []
    final = run_demo(tmp_path / "demo.db", out=lines.append)
    assert final["status"] == "completed"
    text = "\n".join(lines)
    assert "status waiting-approval at node review" in text
    for event_type in ("interrupt.requested", "interrupt.resolved", "node.resumed", "run.completed"):
        assert event_type in text
    assert (tmp_path / "demo.db").exists()


def test_demo_console_script_exits_zero(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "wop_langgraph.cli", "demo", "--db", str(tmp_path / "cli.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "run completed" in proc.stdout


def test_event_table_lists_every_event_in_order() -> None:
    events = [
        {"sequence": 0, "type": "run.started", "payload": {}},
        {
            "sequence": 1,
            "type": "node.failed",
            "nodeId": "review",
            "payload": {"error": {"code": "approval_rejected"}},
        },
    ]
    table = format_events(events).splitlines()
    assert table[0].split() == ["seq", "type", "node", "details"]
    assert table[1].split()[:2] == ["0", "run.started"]
    assert table[2].split() == ["1", "node.failed", "review", "error=approval_rejected"]
