"""``python -m wop_langgraph.examples.<name>`` runs the example once and prints what happened."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("agent_inbox", ['"outcome": "sent"']),
        ("plain_interrupt", ['"city": "Lisbon"', '"seat": "aisle"']),
        ("functional_api", ['"channel": "blog"', "waits at 'publish_flow.review'"]),
        ("review", ['"decision": "accept"']),
        ("hitl_agent", ["hitl-agent: completed"]),
    ],
)
def test_an_example_run_as_a_script_prints_its_run(module: str, expected: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", f"wop_langgraph.examples.{module}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "waits at" in proc.stdout and "completed; outputs:" in proc.stdout, proc.stdout
    for text in expected:
        assert text in proc.stdout, (text, proc.stdout)
    assert list(tmp_path.iterdir()) == []  # its database was temporary
