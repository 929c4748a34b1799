"""LangChain ``create_agent`` + ``HumanInTheLoopMiddleware`` under WopHost: one item per tool call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware

from tests.adapters._support import outputs, refuse, resolve_then_recover
from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, only_pending, payloads, start
from wop_langgraph.examples import hitl_agent
from wop_langgraph.examples.hitl_agent import build_agent
from wop_langgraph.host import WopHost

NODE = "HumanInTheLoopMiddleware.after_model"
ASK = {"messages": [{"role": "user", "content": "Announce the release and clean up"}]}
EMAIL = {"to": "ops@example.com", "subject": "Release"}
EDITED_EMAIL = {"to": "all@example.com", "subject": "Release 1.0"}


@pytest.fixture(autouse=True)
def _no_tools_ran() -> Iterator[None]:
    hitl_agent.SENT.clear()
    yield
    hitl_agent.SENT.clear()


def tool_results(host: WopHost, run_id: str) -> dict[str, str]:
    """Each tool call's result message, by tool name (from the run's final messages)."""
    return {m["name"]: m["content"] for m in outputs(host, run_id)["messages"] if m.get("type") == "tool"}


def test_one_approval_lists_every_gated_tool_call_as_an_item(host: WopHost) -> None:
    run_id, snapshot = start(host, build_agent(), ASK)
    assert snapshot["status"] == "waiting-approval" and snapshot["currentNodeId"] == NODE
    gate = only_pending(host, run_id)
    data = gate.payload["data"]
    assert gate.kind == "approval" and data["actions"] == ["accept", "reject", "edit-accept"]
    assert data["title"] == "Review 2 tool calls: send_email, delete_file"
    items = data["artifactData"]["items"]
    assert [(i["name"], i["args"], i["allowedDecisions"]) for i in items] == [
        ("send_email", EMAIL, ["approve", "edit", "reject"]),
        ("delete_file", {"path": "/tmp/old.log"}, ["approve", "edit", "reject"]),
    ]
    assert hitl_agent.SENT == []  # nothing runs before the review


@pytest.mark.parametrize(
    ("resume", "ran", "decision"),
    [
        ({"action": "accept"}, ["send_email", "delete_file"], "granted"),
        ({"decisions": [{"type": "approve"}, {"type": "approve"}]}, ["send_email", "delete_file"], "granted"),
        ({"action": "reject", "feedback": "not today"}, [], "rejected"),
        (
            {
                "decisions": [
                    {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED_EMAIL}},
                    {"type": "reject", "message": "keep the log"},
                ]
            },
            ["send_email"],
            "granted",
        ),
        (
            {
                "action": "edit-accept",
                "editedArtifactData": {
                    "decisions": [
                        {"type": "approve"},
                        {
                            "type": "edit",
                            "edited_action": {"name": "delete_file", "arguments": {"path": "/tmp/x.log"}},
                        },
                    ]
                },
            },
            ["send_email", "delete_file"],
            "granted",
        ),
    ],
)
def test_each_tool_call_gets_its_own_decision(
    host: WopHost, resume: Any, ran: list[str], decision: str
) -> None:
    run_id, _ = start(host, build_agent(), ASK)
    assert host.resolve(run_id, NODE, resume, ALICE)["status"] == "completed"
    assert sorted(s["tool"] for s in hitl_agent.SENT) == sorted(ran)  # the tools run in parallel
    results = tool_results(host, run_id)
    if "decisions" in resume and resume["decisions"][0]["type"] == "edit":
        assert hitl_agent.SENT == [{"tool": "send_email", **EDITED_EMAIL}]
        assert "keep the log" in results["delete_file"]
    if resume.get("action") == "reject":
        assert all("not today" in text for text in results.values())
    if resume.get("action") == "edit-accept":
        assert {"tool": "delete_file", "path": "/tmp/x.log"} in hitl_agent.SENT
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert resolved["decision"] == decision


def test_each_decision_is_checked_against_what_its_call_allows(host: WopHost) -> None:
    only_email = {"send_email": {"allowed_decisions": ["approve", "edit"]}}
    agent = build_agent(only_email, tool_calls=[{"name": "send_email", "args": EMAIL}])
    run_id, _ = start(host, agent, ASK)
    gate = only_pending(host, run_id)
    assert gate.payload["data"]["actions"] == ["accept", "edit-accept"]  # no reject: not allowed for the call
    refuse(host, run_id, NODE, {"action": "reject"}, "/resumeValue/action")
    refuse(host, run_id, NODE, {"decisions": [{"type": "reject"}]}, "/resumeValue/decisions/0/type")
    refuse(host, run_id, NODE, {"decisions": []}, "/resumeValue/decisions")
    refuse(host, run_id, NODE, {"decisions": [{"type": "edit", "edited_action": {"name": "send_email"}}]})
    refuse(
        host,
        run_id,
        NODE,
        {"decisions": [{"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/"}}}]},
        "/resumeValue/decisions/0/edited_action/name",
    )
    assert host.resolve(run_id, NODE, {"decisions": [{"type": "approve"}]}, ALICE)["status"] == "completed"


class _SchemaMiddleware(HumanInTheLoopMiddleware):  # type: ignore[type-arg]
    """Sends ``args_schema`` in each review config (the field exists; the stock middleware leaves it out)."""

    def _create_action_and_config(self, tool_call: Any, config: Any, state: Any, runtime: Any) -> Any:
        action, review = super()._create_action_and_config(tool_call, config, state, runtime)
        if "args_schema" in config:
            review = {**review, "args_schema": config["args_schema"]}
        return action, review


def test_an_edit_failing_args_schema_is_refused(host: WopHost) -> None:
    from langchain.agents import create_agent

    schema = {"type": "object", "required": ["to"], "properties": {"to": {"type": "string", "pattern": "@"}}}
    gate = {"allowed_decisions": ["approve", "edit"], "args_schema": schema}
    model = hitl_agent.ScriptedToolModel(tool_calls=[{"name": "send_email", "args": EMAIL}])
    agent = create_agent(
        model, tools=[hitl_agent.send_email], middleware=[_SchemaMiddleware({"send_email": gate})]
    )
    run_id, _ = start(host, agent, ASK)
    gate = only_pending(host, run_id)
    assert gate.payload["data"]["artifactData"]["items"][0]["argsSchema"] == schema
    bad_edit = {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "nobody"}}}
    refuse(host, run_id, gate.node_id, {"decisions": [bad_edit]})
    good_edit = {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "a@b.c", "subject": "s"}},
    }
    assert host.resolve(run_id, gate.node_id, {"decisions": [good_edit]}, ALICE)["status"] == "completed"
    assert hitl_agent.SENT == [{"tool": "send_email", "to": "a@b.c", "subject": "s"}]


def test_per_call_mode_is_one_approval_per_tool_call(host: WopHost) -> None:
    from langchain.agents import create_agent

    model = hitl_agent.ScriptedToolModel(tool_calls=[{"name": "send_email", "args": EMAIL}])
    middleware = HumanInTheLoopMiddleware(
        {"send_email": {"allowed_decisions": ["approve", "reject"]}}, interrupt_mode="per_call"
    )
    agent = create_agent(model, tools=[hitl_agent.send_email], middleware=[middleware])
    run_id, _ = start(host, agent, ASK)
    gate = only_pending(host, run_id)
    assert gate.payload["data"]["artifactType"] == "langchain.tool-approval"
    assert gate.payload["data"]["actions"] == ["accept", "reject", "edit-accept"]
    assert gate.payload["data"]["artifactData"]["items"][0]["allowedDecisions"] == ["approve", "reject"]
    refuse(
        host, run_id, gate.node_id, {"type": "edit", "edited_action": {"name": "send_email", "args": EMAIL}}
    )
    assert (
        host.resolve(run_id, gate.node_id, {"type": "reject", "message": "no"}, ALICE)["status"]
        == "completed"
    )
    assert hitl_agent.SENT == []
    assert "no" in tool_results(host, run_id)["send_email"]


def test_recovery_delivers_the_decisions_and_keeps_the_key(make_host: HostFactory) -> None:
    host = make_host()
    run_id, snapshot = start(host, build_agent(), ASK)
    key = only_pending(host, run_id).key
    decisions = {"decisions": [{"type": "approve"}, {"type": "reject"}]}
    second = resolve_then_recover(make_host, host, snapshot["workflowId"], build_agent(), run_id, decisions)
    assert second.snapshot(run_id)["status"] == "completed"
    assert [s["tool"] for s in hitl_agent.SENT] == ["send_email"]
    assert [r.key for r in second.interrupts(run_id)] == [key] == [f"{run_id}:{NODE}:0:0"]
