"""``langgraph.json``: LangGraph's CLI accepts it, and each graph it names loads as ``langgraph dev``
loads it (a file path and an attribute) and runs in both worlds: LangGraph's own resume flow, as
LangGraph Studio drives it, and WopHost."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from langgraph.types import Command
from langgraph_cli.config import validate_config_file

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.protocol.errors import ValidationError

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "langgraph.json"
ALICE = Principal("acme", "alice", frozenset({"approvals:respond", "runs:create"}))
EDIT = {"action": "edit-accept", "editedArtifactData": "We ship v2 today."}


def load_graph(spec: str) -> Any:
    """Import ``./path/to/file.py:attr`` relative to the config file, as ``langgraph dev`` does."""
    path, _, attr = spec.partition(":")
    module_spec = importlib.util.spec_from_file_location(f"lg_graph_{Path(path).stem}", CONFIG.parent / path)
    assert module_spec is not None and module_spec.loader is not None, spec
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, attr)


def test_langgraph_cli_validates_the_config() -> None:
    config = validate_config_file(CONFIG)
    assert set(config["graphs"]) == {"announcement-review"}
    assert config["dependencies"] == ["."]


def test_langgraph_cli_resolves_the_graph_path_into_the_package(tmp_path: Path) -> None:
    """``langgraph dockerfile`` resolves every graph path against the dependencies (no Docker needed)."""
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1"}  # the CLI phones home otherwise
    cli = Path(sys.executable).with_name("langgraph")
    done = subprocess.run(
        [str(cli), "dockerfile", "-c", str(CONFIG), str(tmp_path / "Dockerfile")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [x for x in (tmp_path / "Dockerfile").read_text().splitlines() if "LANGSERVE_GRAPHS" in x]
    graphs = json.loads(line.split("=", 1)[1].strip("'"))
    assert graphs["announcement-review"].endswith("/src/wop_langgraph/examples/review.py:graph")


@pytest.mark.parametrize("graph_id", json.loads(CONFIG.read_text())["graphs"])
def test_each_graph_loads_and_runs_in_studio_and_on_the_host(graph_id: str, sqlite_url: str) -> None:
    graph = load_graph(json.loads(CONFIG.read_text())["graphs"][graph_id])
    assert isinstance(graph, Pregel)
    assert graph.checkpointer is None, "langgraph dev binds its own checkpointer"

    # As LangGraph Studio drives it: the interrupt shows the OpenWOP payload; resume with a value.
    studio = graph.copy(update={"checkpointer": InMemorySaver()})
    config: Any = {"configurable": {"thread_id": "studio-1"}}
    (interrupt,) = studio.invoke({"topic": "v2"}, config)["__interrupt__"]
    assert interrupt.value["kind"] == "approval"
    assert interrupt.value["data"]["artifactData"] == "We are happy to announce v2."  # the text itself
    with pytest.raises(ValidationError, match="not allowed"):
        studio.invoke(Command(resume={"action": "refine", "refineFeedback": {"scope": "whole"}}), config)
    plain = studio.invoke(Command(resume=EDIT), config)
    assert plain["published"] == "We ship v2 today."

    host = WopHost.from_url(sqlite_url)
    try:
        host.register(graph_id, graph)
        run_id = host.create_run(graph_id, {"topic": "v2"}, owner=ALICE)["runId"]
        host.resolve(run_id, "review", EDIT, ALICE)
        (completed,) = [e for e in host.events(run_id) if e["type"] == "run.completed"]
        assert completed["payload"]["outputs"] == plain
    finally:
        host.saver.close()
