"""Schemathesis against the served ``/openapi.json`` of a real server, on each backend: every check.

The document must describe the API exactly: no 5xx, no undocumented status, no schema-valid
request refused, no schema-violating request accepted, ``Allow`` right on ``OPTIONS``. The
example count and the seed are fixed so a run takes about a minute per database and fails the
same way twice.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.process import served

SEED = "20261202"
MAX_EXAMPLES = "25"
# A 413 is a refusal too: schemathesis's default list of "rejected" statuses lacks it.
CONFIG = """
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]
"""


def test_the_served_openapi_describes_the_api(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small limits keep the generated boundary cases (maxLength + 1, ...) fast to send.
    monkeypatch.setenv("WOP_MAX_BODY_BYTES", "65536")
    monkeypatch.setenv("WOP_MAX_STRING_CHARS", "2048")
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    with served(db_url) as base:
        command = [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(config),
            "run",
            f"{base}/openapi.json",
            "--checks",
            "all",
            "--header",
            "Authorization: Bearer alice-key",
            "--max-examples",
            MAX_EXAMPLES,
            "--seed",
            SEED,
            "--workers",
            "1",
            "--no-shrink",
            "--request-timeout",
            "30",
            "--report-dir",
            str(tmp_path / "report"),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    output = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, output
    assert "passed" in result.stdout and "Failures:" not in result.stdout, output
