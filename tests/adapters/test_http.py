"""Every adapter shape over a real uvicorn server, driven by the official ``openwop_client``.

Each test waits for the state it expects by polling (bounded): the server may answer a create
or a resolve before the run has suspended again.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from html import unescape
from typing import Any

import httpx
import pytest
from openwop_client import OpenwopClient, WopError
from openwop_client.types import CreateRunRequest, ResolveInterruptRequest

from tests.official import official_errors
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow

ALICE = {"Authorization": "Bearer alice-key"}
HTML = {"Accept": "text/html"}


@pytest.fixture
def base_url(db_url: str) -> Iterator[str]:
    with served(db_url, target="tests.adapters.graphs:WORKFLOWS") as base:
        yield base


@pytest.fixture
def alice(base_url: str) -> OpenwopClient:
    return OpenwopClient(base_url, "alice-key")


def wait_for(client: OpenwopClient, run_id: str, status: str, node: str | None = None) -> None:
    """Poll the snapshot until the run has ``status`` (at ``node``), for at most 30 s."""
    deadline = time.monotonic() + 30
    while True:
        snapshot = client.runs_get(run_id)
        if snapshot.status == status and (node is None or snapshot.currentNodeId == node):
            return
        assert time.monotonic() < deadline, (snapshot.status, snapshot.currentNodeId)
        time.sleep(0.1)


def create(client: OpenwopClient, workflow_id: str, inputs: dict[str, Any]) -> str:
    created = client.runs_create(
        CreateRunRequest(workflowId=workflow_id, inputs=inputs), idempotency_key=str(uuid.uuid4())
    )
    return created.runId


def mint(base_url: str, run_id: str, node: str) -> str:
    response = httpx.post(
        f"{base_url}/runs/{project_id(run_id)}/interrupts/{node}/tokens", json={}, headers=ALICE
    )
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


def refused_unchanged(client: OpenwopClient, run_id: str, call: Any) -> None:
    """``call`` fails with 400 validation_error, and the run's log and status do not move."""
    before = (client.runs_poll_events(run_id).lastSequence, client.runs_get(run_id).status)
    with pytest.raises(WopError) as caught:
        call()
    assert caught.value.status == 400, caught.value.raw_text
    assert caught.value.envelope is not None and caught.value.envelope.error == "validation_error"
    assert (
        official_errors("error-envelope.schema.json", httpx.Response(200, text=caught.value.raw_text).json())
        == []
    )
    assert (client.runs_poll_events(run_id).lastSequence, client.runs_get(run_id).status) == before


def final_outputs(client: OpenwopClient, run_id: str) -> dict[str, Any]:
    wait_for(client, run_id, "completed")
    events = client.runs_poll_events(run_id).events
    (completed,) = [e for e in events if e.type == "run.completed"]
    assert len([e for e in events if e.type == "interrupt.requested"]) == len(
        [e for e in events if e.type == "interrupt.resolved"]
    )
    return dict(completed.payload["outputs"])


def page(base_url: str, token: str) -> str:
    response = httpx.get(f"{base_url}/interrupts/{token}", headers=HTML)
    assert response.status_code == 200, response.text
    return response.text


def submit(base_url: str, token: str, fields: dict[str, str], said: str = "your answer was recorded") -> str:
    """Post the reviewer form; the page confirms what was recorded (``said``)."""
    response = httpx.post(f"{base_url}/interrupts/{token}/form", data=fields)
    assert response.status_code == 200, response.text
    assert said in response.text
    return response.text


def option(html: str, field: str, label: str) -> str:
    """The value the page's radio button ``label`` of ``field`` submits (options go by index; a
    label's words before a colon, ``Edit: run it with...``, name it)."""
    radios = re.findall(r'<input type="radio" name="([^"]+)" value="([^"]*)"[^>]*>\s*([^<]*)</label>', html)
    (value,) = [
        v
        for name, v, text in radios
        if unescape(name) == field and unescape(text).strip().split(":")[0].lower() == label.lower()
    ]
    return value


def test_agent_inbox_over_http(base_url: str, alice: OpenwopClient) -> None:
    run_id = create(alice, "inbox-email", {"to": "ops@example.com", "body": "Release today"})
    wait_for(alice, run_id, "waiting-approval", "review")
    token = mint(base_url, run_id, "review")
    inspected = alice.interrupts_inspect_by_token(token)
    assert inspected.kind == "approval" and inspected.data["artifactId"] == "send_email"
    assert inspected.data["actions"] == ["accept", "edit-accept", "refine", "reject"]
    html = page(base_url, token)
    assert "Send this email to ops@example.com?" in html and "Release today" in html
    bad = ResolveInterruptRequest(resumeValue=[{"type": "edit", "args": "nope"}])
    refused_unchanged(alice, run_id, lambda: alice.interrupts_resolve_by_token(token, bad))
    respond = {"action": "refine", "text": "Wait for QA"}  # Agent Inbox "respond"
    submit(base_url, token, respond, said="your decision was recorded")
    assert final_outputs(alice, run_id)["outcome"] == "reviewer said: Wait for QA"

    second = create(alice, "inbox-email", {"to": "ops@example.com", "body": "Hi"})
    wait_for(alice, second, "waiting-approval", "review")
    edited = {"to": "team@example.com", "body": "Hi all"}
    native = [{"type": "edit", "args": {"action": "send_email", "args": edited}}]
    alice.interrupts_resolve_by_run(second, "review", ResolveInterruptRequest(resumeValue=native))
    assert final_outputs(alice, second)["sent"] == edited


def test_hitl_middleware_over_http(base_url: str, alice: OpenwopClient) -> None:
    node = "HumanInTheLoopMiddleware.after_model"
    run_id = create(alice, "hitl-agent", {"messages": [{"role": "user", "content": "Ship it"}]})
    wait_for(alice, run_id, "waiting-approval", node)
    token = mint(base_url, run_id, node)
    inspected = alice.interrupts_inspect_by_token(token)
    assert [i["name"] for i in inspected.data["artifactData"]["items"]] == ["send_email", "delete_file"]
    html = page(base_url, token)
    assert "send_email" in html and "/tmp/old.log" in html
    one_decision = ResolveInterruptRequest(resumeValue={"decisions": [{"type": "approve"}]})
    refused_unchanged(alice, run_id, lambda: alice.interrupts_resolve_by_run(run_id, node, one_decision))
    refused_unchanged(alice, run_id, lambda: alice.interrupts_resolve_by_token(token, one_decision))
    decisions = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "keep it"}]}
    alice.interrupts_resolve_by_token(token, ResolveInterruptRequest(resumeValue=decisions))
    tools = {
        m["name"]: m["content"] for m in final_outputs(alice, run_id)["messages"] if m.get("type") == "tool"
    }
    assert tools["send_email"] == "sent to ops@example.com" and "keep it" in tools["delete_file"]

    second = create(alice, "hitl-agent", {"messages": [{"role": "user", "content": "Ship it"}]})
    wait_for(alice, second, "waiting-approval", node)
    token = mint(base_url, second, node)
    html = page(base_url, token)
    reject_all = {
        f"item.{i}.{member}": value
        for i in (0, 1)
        for member, value in (
            ("decision", option(html, f"item.{i}.decision", "reject")),
            ("message", "not now"),
        )
    }
    rejected = submit(base_url, token, reject_all, said="your decisions were recorded")
    assert rejected.count("rejected: not now") == 2
    tools = {
        m["name"]: m["content"] for m in final_outputs(alice, second)["messages"] if m.get("type") == "tool"
    }
    assert all("not now" in text for text in tools.values()) and len(tools) == 2

    # The page decides each tool call on its own: edit one call's arguments, reject the other.
    third = create(alice, "hitl-agent", {"messages": [{"role": "user", "content": "Ship it"}]})
    wait_for(alice, third, "waiting-approval", node)
    token = mint(base_url, third, node)
    html = page(base_url, token)
    assert 'name="item.0.decision"' in html and 'name="item.1.args.path"' in html
    edit, reject = option(html, "item.0.decision", "edit"), option(html, "item.1.decision", "reject")
    before = (alice.runs_poll_events(third).lastSequence, alice.runs_get(third).status)
    undecided = {"item.0.decision": edit, "item.0.args.to": "x@example.com", "item.0.args.subject": "R"}
    response = httpx.post(f"{base_url}/interrupts/{token}/form", data=undecided)
    assert response.status_code == 400 and 'id="error-item.1.decision"' in response.text, response.text
    assert 'value="x@example.com"' in response.text  # the form comes back as the reviewer left it
    assert (alice.runs_poll_events(third).lastSequence, alice.runs_get(third).status) == before
    decided = {
        "item.0.decision": edit,
        "item.0.args.to": "team@example.com",
        "item.0.args.subject": "Release",
        "item.1.decision": reject,
        "item.1.message": "keep the log",
    }
    submit(base_url, token, decided, said="your decisions were recorded")
    tools = {
        m["name"]: m["content"] for m in final_outputs(alice, third)["messages"] if m.get("type") == "tool"
    }
    # The middleware tells the agent its call was edited, then gives the tool's answer.
    assert tools["send_email"].endswith("Tool response:\nsent to team@example.com")
    assert "keep the log" in tools["delete_file"]


def test_plain_interrupt_over_http(base_url: str, alice: OpenwopClient) -> None:
    run_id = create(alice, "plain-trip", {})
    wait_for(alice, run_id, "waiting-input", "where")
    token = mint(base_url, run_id, "where")
    assert alice.interrupts_inspect_by_token(token).kind == "clarification"
    html = page(base_url, token)
    assert "Which city are you flying to?" in html
    bad = ResolveInterruptRequest(resumeValue=42)
    refused_unchanged(alice, run_id, lambda: alice.interrupts_resolve_by_token(token, bad))
    submit(base_url, token, {"answer.answer": "Lisbon"})
    wait_for(alice, run_id, "waiting-input", "seat")
    refused_unchanged(
        alice,
        run_id,
        lambda: alice.interrupts_resolve_by_run(
            run_id, "seat", ResolveInterruptRequest(resumeValue="middle")
        ),
    )
    alice.interrupts_resolve_by_run(run_id, "seat", ResolveInterruptRequest(resumeValue="aisle"))
    wait_for(alice, run_id, "waiting-input", "extras")
    extras = mint(base_url, run_id, "extras")
    assert "lounge access" in page(base_url, extras)
    alice.interrupts_resolve_by_token(extras, ResolveInterruptRequest(resumeValue={"accepted": False}))
    assert final_outputs(alice, run_id) == {"city": "Lisbon", "seat": "aisle", "extras": {"accepted": False}}


def test_functional_api_over_http(base_url: str, alice: OpenwopClient) -> None:
    run_id = create(alice, "functional-publish", {"topic": "v2"})
    wait_for(alice, run_id, "waiting-approval", "publish_flow.review")
    token = mint(base_url, run_id, "publish_flow.review")
    assert "We are happy to announce v2." in page(base_url, token)
    bad = ResolveInterruptRequest(resumeValue={"action": "edit-accept"})
    refused_unchanged(alice, run_id, lambda: alice.interrupts_resolve_by_token(token, bad))
    edited = ResolveInterruptRequest(
        resumeValue={"action": "edit-accept", "editedArtifactData": "v2 is out."}
    )
    alice.interrupts_resolve_by_token(token, edited)
    wait_for(alice, run_id, "waiting-input", "publish_flow")
    channel = mint(base_url, run_id, "publish_flow")
    html = page(base_url, channel)
    assert "Where should it go?" in html
    refused_unchanged(
        alice,
        run_id,
        lambda: alice.interrupts_resolve_by_run(
            run_id, "publish_flow", ResolveInterruptRequest(resumeValue="tv")
        ),
    )
    submit(base_url, channel, {"answer.answer": option(html, "answer.answer", "blog")})
    assert final_outputs(alice, run_id) == {"text": "v2 is out.", "action": "edit-accept", "channel": "blog"}
    keys = [
        e.payload["key"] for e in alice.runs_poll_events(run_id).events if e.type == "interrupt.requested"
    ]
    assert keys == [f"{run_id}:publish_flow.review:0:0", f"{run_id}:publish_flow:0:0"]
