"""Fixtures for the server tests: a host on each backend, the app, and an httpx client over it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.official import official_errors
from tests.server.graphs import WORKFLOWS
from wop_langgraph.host import WopHost
from wop_langgraph.server import Settings, create_app

SIGNING_KEYS = "k2=second-secret-0123456789abcdef,k1=first-secret-0123456789abcdef"
API_KEYS = ";".join(
    [
        "alice-key=acme:alice:runs:create+runs:read+runs:cancel+approvals:respond",
        "reader-key=acme:rita:runs:read",
        "bob-key=globex:bob:runs:create+runs:read+runs:cancel+approvals:respond",
        # acme's second reviewer, and a dispatcher that mints each reviewer's own link
        "acme-bob-key=acme:bob:runs:read+approvals:respond",
        "mailer-key=acme:mailer:runs:read+approvals:respond+approvals:delegate",
    ]
)
ALICE = {"Authorization": "Bearer alice-key"}
READER = {"Authorization": "Bearer reader-key"}
BOB = {"Authorization": "Bearer bob-key"}
ACME_BOB = {"Authorization": "Bearer acme-bob-key"}
MAILER = {"Authorization": "Bearer mailer-key"}
PUBLIC_URL = "https://wop.example.test"
V2 = {"OpenWOP-Version": "2"}


def make_settings(db_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": db_url,
        "signing_keys": SIGNING_KEYS,
        "api_keys": API_KEYS,
        "sweep_interval_seconds": 0,
        "public_url": PUBLIC_URL,
        **overrides,
    }
    return Settings(**values)


def make_host(db_url: str) -> WopHost:
    host = WopHost.from_url(db_url)
    for workflow_id, graph in WORKFLOWS.items():
        host.register(workflow_id, graph)
    return host


@pytest.fixture
def host(db_url: str) -> Iterator[WopHost]:
    host = make_host(db_url)
    try:
        yield host
    finally:
        host.saver.close()


@pytest.fixture
def app(host: WopHost, db_url: str) -> FastAPI:
    return create_app(host, make_settings(db_url))


@asynccontextmanager
async def serving(app: FastAPI, base_url: str = "http://testserver") -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` served with its lifespan: its workers drive runs as in production."""
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url=base_url) as c,
    ):
        yield c


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app, served with its lifespan."""
    async with serving(app) as c:
        yield c


RESTING = frozenset({"completed", "failed", "cancelled"}) | {
    "waiting-approval",
    "waiting-input",
    "waiting-external",
}


async def at_rest(
    client: httpx.AsyncClient, run_id: str, headers: dict[str, str] | None = None, timeout: float = 15.0
) -> dict[str, Any]:
    """The run's snapshot once no worker drives it (waiting on an interrupt, or ended).

    The API answers at commit, so a test reads the run's next resting state by polling its
    snapshot, as a client would (bounded by ``timeout``).
    """
    path = "/runs/" + run_id.replace("/", "~2F")
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        response = await client.get(path, headers=headers or ALICE)
        assert response.status_code == 200, response.text
        snapshot: dict[str, Any] = response.json()
        if snapshot["status"] in RESTING:
            return snapshot
        assert asyncio.get_running_loop().time() < deadline, f"run {run_id} still {snapshot['status']}"
        await asyncio.sleep(0.02)


async def started_run(
    client: httpx.AsyncClient, workflow: str = "review", headers: dict[str, str] | None = None, **body: Any
) -> tuple[str, dict[str, Any]]:
    """Create a run; return its id and its snapshot once at rest.

    Checks the answer is the one given at commit (201, ``pending`` or ``running``).
    """
    response = await client.post("/runs", json={"workflowId": workflow, **body}, headers=headers or ALICE)
    assert response.status_code == 201, response.text
    assert response.json()["status"] in ("pending", "running"), response.text
    run_id = str(response.json()["runId"])
    return run_id, await at_rest(client, run_id, headers)


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is the official error envelope with ``code``, ``status`` and the version header."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers.get("openwop-version") == "2.0"
    body: dict[str, Any] = response.json()
    problems = official_errors("error-envelope.schema.json", body)
    assert not problems, problems
    assert body["error"] == code, body
    return body
