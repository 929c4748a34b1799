"""Running the real console command in a child process, with chosen modules made unimportable.

Extras are made missing by ``tests/cli/blocked/sitecustomize.py`` (put first on the child's
``PYTHONPATH``), which refuses to import the named modules as if they were not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BLOCKER = Path(__file__).resolve().parent / "blocked"


def _console_script() -> list[str]:
    script = Path(sys.executable).parent / "wop-langgraph"
    return [str(script)] if script.exists() else [sys.executable, "-m", "wop_langgraph.cli"]


def _run(
    argv: list[str],
    *,
    block: str = "",
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` without the caller's ``WOP_*`` variables (``env`` adds some back)."""
    child = {k: v for k, v in os.environ.items() if not k.startswith("WOP_")}
    child["PYTHONPATH"] = os.pathsep.join([str(BLOCKER), str(REPO / "src")])
    child["WOP_TEST_BLOCK_IMPORTS"] = block
    child.update(env or {})
    return subprocess.run(
        argv, env=child, cwd=cwd or REPO, capture_output=True, text=True, timeout=120, check=False
    )
