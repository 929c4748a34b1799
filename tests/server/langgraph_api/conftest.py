"""A real ``wop-langgraph serve`` process per backend (shared by a module's tests), and its clients.

Every test makes threads of its own, so one server per module and backend is enough; the
clients are LangGraph's own Python SDK (``langgraph_sdk``), unchanged, pointed at ``/langgraph``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import BACKENDS, create_postgres_database, drop_postgres_database
from tests.server.process import served

TARGET = "tests.server.langgraph_api.graphs:WORKFLOWS"
UI_ORIGIN = "http://chat-ui.example.test"


@pytest.fixture(scope="module", params=BACKENDS)
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's base URL (the OpenWOP surface; the LangGraph API is at ``/langgraph``)."""
    env = {"WOP_LANGGRAPH_CORS_ORIGINS": UI_ORIGIN}
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('langgraph') / 'wop.db'}"
        with served(url, target=TARGET, extra_env=env) as found:
            yield found
        return
    url = create_postgres_database()
    try:
        with served(url, target=TARGET, extra_env=env) as found:
            yield found
    finally:
        drop_postgres_database(url)


SdkFactory = Callable[..., SyncLangGraphClient]


@pytest.fixture
def sdk(base: str) -> Iterator[SdkFactory]:
    """Makes LangGraph's Python SDK clients as a user would (``api_key`` goes in ``x-api-key``),
    closed after the test."""
    made: list[SyncLangGraphClient] = []

    def make(key: str = "alice-key") -> SyncLangGraphClient:
        client = get_sync_client(url=f"{base}/langgraph", api_key=key)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def openwop_events(base: str, run_id: str, key: str = "alice-key") -> list[dict[str, Any]]:
    """The OpenWOP event log of a LangGraph run (its id is the OpenWOP run id in path form)."""
    response = httpx.get(
        f"{base}/runs/{run_id}/events/poll",
        params={"timeout": 0, "streamMode": "debug"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.text
    return list(response.json()["events"])


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in events if e["type"] == kind]


def messages(values: dict[str, Any]) -> list[dict[str, Any]]:
    return list(values.get("messages", []))


def tool_results(values: dict[str, Any]) -> dict[str, str]:
    """Each tool message's text, by tool name, of the values' messages."""
    return {m["name"]: str(m["content"]) for m in messages(values) if m["type"] == "tool"}


def dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
