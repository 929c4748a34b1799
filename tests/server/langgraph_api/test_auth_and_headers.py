"""Keys, tenants and scopes of the OpenWOP surface on the LangGraph API; the headers its clients read."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError

from tests.server.langgraph_api.conftest import UI_ORIGIN, SdkFactory
from wop_langgraph.server.langgraph_api.shapes import assistant_uuid


def test_keys_tenants_and_scopes(base: str, sdk: SdkFactory) -> None:
    api = f"{base}/langgraph"
    assert httpx.get(f"{api}/info").status_code == 200  # agent-chat-ui's health check, keyless
    assert httpx.post(f"{api}/threads/search", json={}).status_code == 401
    assert httpx.post(f"{api}/threads/search", json={}, headers={"x-api-key": "nope"}).status_code == 401

    alice, bob, reader = sdk(), sdk("bob-key"), sdk("reader-key")
    thread_id = alice.threads.create(metadata={"owner": "alice"})["thread_id"]
    alice.runs.wait(thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "email"}]})
    with pytest.raises(NotFoundError):
        bob.threads.get(thread_id)  # another tenant's thread does not exist for bob
    assert thread_id not in {
        t["thread_id"] for t in bob.threads.search(metadata={"owner": "alice"}, limit=100)
    }
    resume = {"assistant_id": "chat-agent", "command": {"resume": {"decisions": [{"type": "approve"}]}}}
    assert (
        httpx.post(
            f"{api}/threads/{thread_id}/runs", json=resume, headers={"x-api-key": "bob-key"}
        ).status_code
        == 404
    )
    # rita may read acme's threads but not decide
    assert reader.threads.get(thread_id)["status"] == "interrupted"
    assert (
        httpx.post(
            f"{api}/threads/{thread_id}/runs", json=resume, headers={"x-api-key": "reader-key"}
        ).status_code
        == 403
    )
    assert alice.threads.get(thread_id)["status"] == "interrupted"  # nothing applied


def test_assistants_and_headers(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    api = f"{base}/langgraph"
    found = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
    assert {"chat-agent", "inbox-email", "two-questions", "slow"} <= set(found)
    assert found["chat-agent"]["assistant_id"] == assistant_uuid("chat-agent")
    assert client.assistants.get(assistant_uuid("slow"))["graph_id"] == "slow"
    assert client.assistants.get("slow")["assistant_id"] == assistant_uuid("slow")

    thread_id = client.threads.create()["thread_id"]
    body = {"assistant_id": "chat-agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    with httpx.stream(
        "POST", f"{api}/threads/{thread_id}/runs/stream", json=body, headers={"x-api-key": "alice-key"}
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        location = r.headers["content-location"]
        first = next(r.iter_lines())
    assert first == "event: metadata"
    assert location.startswith(f"/langgraph/threads/{thread_id}/runs/acme~2F")
    run_id = location.rsplit("/", 1)[1]
    assert client.runs.get(thread_id, run_id)["run_id"] == run_id
    openwop = httpx.get(f"{base}/runs/{run_id}", headers={"Authorization": "Bearer alice-key"})
    assert openwop.status_code == 200 and openwop.json()["workflowId"] == "chat-agent"  # the same run

    waited = httpx.post(f"{api}/threads/{thread_id}/runs/wait", json=body, headers={"x-api-key": "alice-key"})
    assert waited.headers["content-location"].startswith(f"/langgraph/threads/{thread_id}/runs/")

    preflight = httpx.options(
        f"{api}/threads/search",
        headers={
            "Origin": UI_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-api-key,content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == UI_ORIGIN
    cors = httpx.post(
        f"{api}/threads/{thread_id}/runs/wait",
        json=body,
        headers={"x-api-key": "alice-key", "Origin": UI_ORIGIN},
    )
    assert "content-location" in cors.headers["access-control-expose-headers"].lower()
    other = httpx.get(f"{api}/info", headers={"Origin": "http://elsewhere.example"})
    assert "access-control-allow-origin" not in other.headers
