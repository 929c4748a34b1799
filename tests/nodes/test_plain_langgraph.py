"""The node API under plain LangGraph: the interrupt LangGraph shows, resume forms, what is host-only."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import is_invalid_resume
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from tests.host._graphs import ALICE, CUSTOM_RESUME_SCHEMA, State
from tests.host._support import HostFactory
from tests.host.nine_kinds import turn
from tests.nodes import _graphs as g
from tests.nodes._trace import plain_config, without_key
from wop_langgraph.host import Membership, Principal
from wop_langgraph.nodes import close_conversation, request_approval, start_conversation
from wop_langgraph.protocol.errors import CapabilityRequired, ValidationError, WopError
from wop_langgraph.protocol.payloads import parse_interrupt_payload

BOB = Principal(ALICE.tenant, "bob", ALICE.scopes)


def test_outside_a_graph_the_node_api_says_where_to_call_it() -> None:
    with pytest.raises(WopError, match="inside a node of a running LangGraph graph"):
        request_approval("doc-1", "document", "Publish?")


def test_the_interrupt_value_is_the_openwop_payload_with_a_key_from_langgraph() -> None:
    graph = g.build("form", g.two_asks, checkpointer=InMemorySaver())
    config = plain_config("thread-7")
    (first,) = graph.invoke({}, config)["__interrupt__"]
    parse_interrupt_payload(first.value)  # a valid OpenWOP payload, key included
    assert first.value["kind"] == "clarification"
    thread, node, task_id, position = first.value["key"].split(":")
    assert (thread, node, position) == ("thread-7", "form", "0")
    # The same execution replays its first ask and asks the second one: same task, next position.
    (second,) = graph.invoke(Command(resume={"answers": {"a": "x"}}), config)["__interrupt__"]
    assert second.value["key"] == f"thread-7:form:{task_id}:1"
    assert second.id != first.id


def test_a_later_visit_of_a_node_gets_a_new_key_and_a_refused_value_keeps_it() -> None:
    graph = g.build("gate", g.loop_ask, checkpointer=InMemorySaver(), again=g.loop_again)
    config = plain_config()
    (first,) = graph.invoke({}, config)["__interrupt__"]
    with pytest.raises(ValidationError):
        graph.invoke(Command(resume={"answers": {"q": 1}}), config)
    (still,) = graph.get_state(config).interrupts
    assert (still.id, still.value) == (first.id, first.value)
    (second,) = graph.invoke(Command(resume={"answers": {"q": "one"}}), config)["__interrupt__"]
    assert second.value["key"] != first.value["key"]
    assert second.value["key"].endswith(":0")


def test_a_refused_value_is_marked_as_an_invalid_resume_for_langgraph() -> None:
    """ToolNode re-raises such an error instead of handing it to the model as a tool error."""
    graph = g.build("custom", g.custom, checkpointer=InMemorySaver())
    config = plain_config()
    (interrupt,) = graph.invoke({}, config)["__interrupt__"]
    assert interrupt.response_schema == CUSTOM_RESUME_SCHEMA
    with pytest.raises(ValidationError) as refused:
        graph.invoke(Command(resume={"ok": "yes"}), config)
    assert is_invalid_resume(refused.value)
    assert refused.value.details is not None and refused.value.details["path"] == "/ok"


def test_resume_by_interrupt_id_is_checked_the_same_way_and_can_carry_an_empty_object() -> None:
    """``Command(resume={})`` is an empty resume *map* to LangGraph; ``{id: {}}`` sends ``{}``."""
    graph = g.build("agent", g.low_confidence, checkpointer=InMemorySaver())
    config = plain_config()
    (interrupt,) = graph.invoke({"decision": "refund", "confidence": 0.2}, config)["__interrupt__"]
    with pytest.raises(ValidationError, match="bogus"):
        graph.invoke(Command(resume={interrupt.id: {"bogus": 1}}), config)
    graph.invoke(Command(resume={}), config)  # resumes nothing
    assert graph.get_state(config).interrupts == (interrupt,)
    assert graph.invoke(Command(resume={interrupt.id: {}}), config)["result"] == "refund"


@pytest.mark.parametrize(
    ("options", "capability"),
    [
        ({"required_approvals": 2}, "approvalQuorum"),
        ({"approvers": ["alice"]}, "approverEligibility"),
        ({"group_refs": ["reviewers"]}, "approverEligibility"),
        ({"role_refs": ["editor"]}, "approverEligibility"),
    ],
)
def test_what_needs_the_host_is_refused_outside_it(
    options: dict[str, Any], capability: str, make_host: HostFactory
) -> None:
    graph = g.build("review", g.approval(**options), checkpointer=InMemorySaver())
    config = plain_config()
    with pytest.raises(CapabilityRequired, match=r"needs? WopHost") as refused:
        graph.invoke({}, config)
    assert refused.value.details == {"capability": capability, "requires": "WopHost"}
    assert not graph.get_state(config).interrupts, "refused at the call: nothing was asked"

    # The same graph object gets the whole contract from the host.
    host = make_host(ref_kinds=("principal", "group", "role"), membership=_member)
    host.register("review", graph)
    run_id = host.create_run("review", {}, owner=ALICE)["runId"]
    assert host.snapshot(run_id)["status"] == "waiting-approval"
    host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    if options.get("required_approvals") == 2:
        assert host.snapshot(run_id)["status"] == "waiting-approval", "one vote of two"
        host.resolve(run_id, "review", {"action": "accept"}, BOB)
    assert host.snapshot(run_id)["status"] == "completed"


def _member(principal: Principal) -> Membership:
    return Membership(groups=frozenset({"reviewers"}), roles=frozenset({"editor"}))


def test_a_timeout_is_carried_but_not_enforced_outside_the_host(caplog: pytest.LogCaptureFixture) -> None:
    graph = g.build("clarify_later", g.clarification(timeout=0.001), checkpointer=InMemorySaver())
    config = plain_config()
    with caplog.at_level(logging.WARNING, logger="wop_langgraph.nodes"):
        (interrupt,) = graph.invoke({}, config)["__interrupt__"]
        assert interrupt.value["timeoutMs"] == 1
        time.sleep(0.01)
        answers = {"colour": "blue", "copies": 1}
        assert graph.invoke(Command(resume={"answers": answers}), config)["result"] == answers
    # It says so (once per node, not again when LangGraph replays the node to resume it).
    (said,) = [r.getMessage() for r in caplog.records]
    assert "'clarify_later'" in said and "timeoutMs=1" in said and "enforced by WopHost only" in said


def test_an_auth_required_profile_says_it_has_no_effect_outside_the_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    graph = g.build(
        "review_strict", g.approval(profile="openwop-interrupt-auth-required"), checkpointer=InMemorySaver()
    )
    config = plain_config()
    with caplog.at_level(logging.WARNING, logger="wop_langgraph.nodes"):
        graph.invoke({}, config)
        decided = graph.invoke(Command(resume={"action": "accept"}), config)["result"]
    assert decided["decision"] == "granted"
    (said,) = [r.getMessage() for r in caplog.records]
    assert "'review_strict'" in said and "openwop-interrupt-auth-required" in said and "no effect" in said


def test_node_events_go_to_langgraphs_custom_stream() -> None:
    graph = g.build("chat", g.chat, checkpointer=InMemorySaver(), again=g.chat_again)
    config = plain_config()
    events = [c for c in graph.stream({}, config, stream_mode="custom")]
    assert [e["type"] for e in events] == ["conversation.opened"]
    (opened,) = events
    assert opened["nodeId"] == "chat"
    conversation = opened["payload"]["conversationId"]
    (interrupt,) = graph.get_state(config).interrupts
    assert interrupt.value["data"]["conversationId"] == conversation
    events = list(graph.stream(Command(resume={"text": "bye", "done": True}), config, stream_mode="custom"))
    closed = [e for e in events if e["type"] == "conversation.closed"]
    assert [e["payload"] for e in closed] == [
        {"conversationId": conversation, "reason": "done", "turnCount": 1}
    ]

    agent = g.build("agent", g.low_confidence, checkpointer=InMemorySaver())
    (decided,) = agent.stream({"decision": "refund", "confidence": 0.9}, plain_config(), stream_mode="custom")
    assert decided["type"] == "agent.decided"
    assert decided["payload"] == {"agentId": "triage-agent", "decision": "refund", "confidence": 0.9}


@pytest.mark.parametrize(("percent", "suspends"), [(80, True), (70, False), (None, False)])
def test_escalation_threshold_from_langgraphs_configurable(percent: int | None, suspends: bool) -> None:
    graph = g.build("agent", g.low_confidence, checkpointer=InMemorySaver())
    config = plain_config()
    if percent is not None:
        config["configurable"]["run"] = {"escalationThreshold": percent}
    out = graph.invoke({"decision": "refund", "confidence": 0.75}, config)
    assert ("__interrupt__" in out) is suspends
    if suspends:
        assert out["__interrupt__"][0].value["data"]["threshold"] == 0.8


@pytest.mark.parametrize("bad", [150, 0.7, -1, "70", True])
def test_a_bad_escalation_threshold_in_configurable_is_refused(bad: Any) -> None:
    graph = g.build("agent", g.low_confidence, checkpointer=InMemorySaver())
    config = plain_config()
    config["configurable"]["run"] = {"escalationThreshold": bad}
    with pytest.raises(ValidationError, match="escalationThreshold"):
        graph.invoke({"decision": "refund", "confidence": 0.75}, config)


def test_a_gate_inside_a_subgraph_is_named_parent_dot_child_in_both_worlds(make_host: HostFactory) -> None:
    inner = StateGraph(State)
    inner.add_node("child", g.approval())
    inner.add_edge(START, "child")
    inner.add_edge("child", END)
    outer = StateGraph(State)
    outer.add_node("parent", inner.compile())
    outer.add_edge(START, "parent")
    outer.add_edge("parent", END)
    graph = outer.compile(checkpointer=InMemorySaver())

    config = plain_config("thread-sub")
    (asked,) = graph.invoke({}, config)["__interrupt__"]
    assert asked.value["key"].startswith("thread-sub:parent.child:")
    accept = {"action": "accept", "decidedAt": "2026-12-02T10:00:00.000Z"}
    plain = graph.invoke(Command(resume=accept), config)
    assert plain["result"]["decision"] == "granted"

    host = make_host()
    host.register("sub", graph)
    run_id = host.create_run("sub", {}, owner=ALICE)["runId"]
    (pending,) = host.pending_interrupts(run_id)
    assert pending.node_id == "parent.child"
    assert without_key(pending.payload) == without_key(asked.value)
    host.resolve(run_id, "parent.child", accept, ALICE)
    (completed,) = [e for e in host.events(run_id) if e["type"] == "run.completed"]
    assert completed["payload"]["outputs"] == plain


def test_waiting_conversation_calls_under_plain_langgraph() -> None:
    """``conversation.start`` and ``conversation.close`` suspend with their OpenWOP payloads and
    take the other party's ConversationTurn, checked as under the host."""

    def body(state: State) -> Any:
        conversation = start_conversation(title="Help", wait_for_join=True)
        close_conversation(conversation, reason="done", confirm=True)
        return {"result": conversation}

    graph = g.build("chat", body, checkpointer=InMemorySaver())
    config = plain_config()
    (joining,) = graph.invoke({}, config)["__interrupt__"]
    parse_interrupt_payload(joining.value)
    assert joining.value["kind"] == "conversation.start"
    assert joining.value["data"]["title"] == "Help"
    with pytest.raises(ValidationError):
        graph.invoke(Command(resume={"text": "hi"}), config)
    (closing,) = graph.invoke(Command(resume=turn(0, "hi")), config)["__interrupt__"]
    assert closing.value["kind"] == "conversation.close"
    assert closing.value["data"] == {
        "conversationId": joining.value["data"]["conversationId"],
        "reason": "done",
    }
    result = graph.invoke(Command(resume=turn(1, "bye")), config)
    assert result["result"] == joining.value["data"]["conversationId"]
