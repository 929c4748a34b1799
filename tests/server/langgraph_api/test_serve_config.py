"""``wop-langgraph serve --config langgraph.json``: a LangGraph project served as ``langgraph dev`` would."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from tests.server.process import served
from wop_langgraph.langgraph_config import load_langgraph_config
from wop_langgraph.startup import StartupError

GRAPH_PY = """
import os
from typing import TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict, total=False):
    name: str
    greeting: str


GREETING = os.environ["PROJECT_GREETING"]  # read at import, from the project's env


def greet(state: State) -> dict:
    return {"greeting": f"{GREETING}, {state['name']}"}


builder = StateGraph(State)
builder.add_node("greet", greet)
builder.add_edge(START, "greet")
graph = builder.compile()
"""


def project(tmp_path: Path, env: object) -> Path:
    (tmp_path / "agent").mkdir(parents=True)
    (tmp_path / "agent" / "graph.py").write_text(GRAPH_PY, encoding="utf-8")
    (tmp_path / ".env").write_text("# the project's secrets\nPROJECT_GREETING='Hello'\n", encoding="utf-8")
    config = {
        "dependencies": ["."],
        "graphs": {"greeter": "./agent/graph.py:graph", "builder": "./agent/graph.py:builder"},
        "env": env,
    }
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_serve_config_serves_a_langgraph_project_with_its_env(tmp_path: Path, sqlite_url: str) -> None:
    config = project(tmp_path, ".env")
    with (
        served(sqlite_url, target=f"--config={config}") as base,
        get_sync_client(url=f"{base}/langgraph", api_key="alice-key") as client,
    ):
        assert {a["graph_id"] for a in client.assistants.search()} == {"greeter", "builder"}
        thread_id = client.threads.create()["thread_id"]
        outcome = client.runs.wait(thread_id, "greeter", input={"name": "Ada"})
        assert outcome == {"name": "Ada", "greeting": "Hello, Ada"}


def test_an_env_object_does_not_override_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROJECT_GREETING", raising=False)
    graphs = load_langgraph_config(project(tmp_path, {"PROJECT_GREETING": "Hi"}))
    assert set(graphs) == {"greeter", "builder"}  # the StateGraph builder is compiled
    assert graphs["builder"].invoke({"name": "Bo"}) == {"name": "Bo", "greeting": "Hi, Bo"}
    monkeypatch.setenv("PROJECT_GREETING", "Hey")
    again = load_langgraph_config(project(tmp_path / "again", {"PROJECT_GREETING": "Hi"}))
    assert os.environ["PROJECT_GREETING"] == "Hey"
    assert again["greeter"].invoke({"name": "Bo"})["greeting"] == "Hey, Bo"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read"),
        ('{"graphs": {}}', 'no "graphs"'),
        ('{"graphs": {"g": "nocolon"}}', "expected"),
        ('{"graphs": {"g": "./missing.py:graph"}}', "cannot import"),
        ('{"graphs": {"g": "json:dumps"}, "env": 3}', '"env" must be'),
    ],
)
def test_a_bad_config_is_refused_with_its_reason(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "langgraph.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StartupError, match=message):
        load_langgraph_config(path)
