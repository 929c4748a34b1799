"""The benchmarks still run (tiny sizes): figures come from running them by hand, not from tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_saver_benchmark_runs_every_saver_and_reports_ratios() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "benchmarks/saver.py", "--iterations", "2", "--rounds", "1", "--warmup", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("SQLModelSaver[sqlite] / SqliteSaver", "SQLModelSaver[sqlite]+recorder / SqliteSaver"):
        assert name in proc.stdout
    if os.environ.get("WOP_TEST_POSTGRES_URL"):
        assert "SQLModelSaver[postgres]+recorder / PostgresSaver" in proc.stdout
