"""The README's LangGraph SDK example, run as written against a served process."""

from __future__ import annotations

import subprocess
import sys

from tests.server.process import served
from tests.test_readme import python_example

KEYS = "dev-key=acme:me:runs:create+runs:read+runs:cancel+approvals:respond"


def test_the_readme_sdk_example_runs(sqlite_url: str) -> None:
    code = python_example("langgraph_sdk_client.py")
    env = {"WOP_API_KEYS": KEYS}
    with served(sqlite_url, target="wop_langgraph.examples.hitl_agent:workflows", extra_env=env) as base:
        code = code.replace("http://localhost:2024", base)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "metadata" and "values" in lines
    assert lines[-1].startswith("Done: User rejected the tool call for `delete_file` with reason: keep it")
    assert (
        "sent to ops@example.com" in lines[-1] and "deleted" not in lines[-1]
    )  # the rejected call never ran
