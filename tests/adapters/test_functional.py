"""The Functional API under WopHost: ``@entrypoint`` / ``@task`` with every node call and every adapter."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from tests.adapters._support import outputs, refuse, resolve_then_recover
from tests.host._graphs import ALICE, loop_graph, two_asks_graph
from tests.host._support import HostFactory, events, only_pending, payloads, start
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import (
    ask,
    close_conversation,
    custom_interrupt,
    escalate_on_low_confidence,
    exchange,
    request_approval,
    request_credential,
    start_conversation,
    wait_for_event,
)

INBOX = {
    "action_request": {"action": "deploy", "args": {"env": "prod"}},
    "config": {"allow_accept": True, "allow_edit": True, "allow_respond": False, "allow_ignore": True},
    "description": "Deploy to production?",
}
#: What LangChain's ``HumanInTheLoopMiddleware`` raises (batched mode): one request per tool call.
TOOL_REVIEW = {
    "action_requests": [
        {"name": "send_email", "args": {"to": "ops@example.com"}, "description": "Mail the release notes"},
        {"name": "delete_file", "args": {"path": "/tmp/old.log"}},
    ],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]},
    ],
}
#: A plain value that is not a question: it stays ``custom``.
OFFER = {"offer": "lounge access", "price": 40}


@task
def approve() -> str:
    return request_approval("doc", "text/plain", "Ship it?", artifact_data="v1").action


@task
def clarify() -> dict[str, Any]:
    return ask([{"id": "q1", "question": "Which colour?", "schema": {"type": "string"}}])


@task
def await_event() -> dict[str, Any]:
    return wait_for_event("payment.settled", {"orderId": "o-1"})


@task
def escalate() -> Any:
    return escalate_on_low_confidence("triage-agent", "refund", 0.2)


@task
def custom() -> Any:
    return custom_interrupt("acme.pick", {"from": [1, 2]}, resume_schema={"type": "integer"})


@task
def chat() -> Any:
    conversation = start_conversation(title="Support")
    answer = exchange(conversation, "How can we help?", {"type": "string"})
    close_conversation(conversation, reason="done", turn_count=1)
    return answer


@task
def credential() -> str:
    return request_credential("github", ["repo"], "missing", "https://example.com/connect")


@task
def inbox() -> Any:
    return interrupt([INBOX])


@task
def plain_question() -> Any:
    return interrupt("Anything else?")


@task
def tool_review() -> Any:
    return interrupt(TOOL_REVIEW)


@task
def offer() -> Any:
    return interrupt(OFFER)


@entrypoint()
def workflow(inputs: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {
        "approve": approve().result(),
        "clarify": clarify().result(),
        "event": await_event().result(),
        "escalate": escalate().result(),
        "custom": custom().result(),
        "chat": chat().result(),
        "credential": credential().result(),
        "inbox": inbox().result(),
        "plain": plain_question().result(),
        "tools": tool_review().result(),
        "offer": offer().result(),
    }
    results["body"] = interrupt({"question": "Final check?", "options": ["go", "stop"]})
    return results


ANSWERS: list[tuple[str, str, Any, Any]] = [
    # (kind, node id, a bad resume value, the resume value)
    ("approval", "workflow.approve", {"action": "maybe"}, {"action": "accept"}),
    ("clarification", "workflow.clarify", {"answers": {"q1": 3}}, {"answers": {"q1": "blue"}}),
    ("external-event", "workflow.await_event", {"orderId": "o-2"}, {"orderId": "o-1", "amount": 5}),
    ("low-confidence", "workflow.escalate", {"decision": "x", "extra": 1}, {"decision": "escalated"}),
    ("custom", "workflow.custom", "two", 2),
    ("conversation.exchange", "workflow.chat", 5, "my order"),
    ("credential", "workflow.credential", {"outcome": "maybe"}, {"outcome": "authorized"}),
    # A bare interrupt in a @task is addressed as the node that called the task.
    ("approval", "workflow", [{"type": "response", "args": "no"}], [{"type": "accept", "args": None}]),
    ("clarification", "workflow", 7, "nothing"),
    ("approval", "workflow", {"decisions": [{"type": "approve"}]}, {"action": "accept"}),
    ("custom", "workflow", {"price": 2**64}, {"accepted": True}),
    ("clarification", "workflow", "maybe", "go"),
]


def test_every_node_call_and_adapter_works_in_tasks_with_stable_keys(make_host: HostFactory) -> None:
    host = make_host(conversations=True, credentials=True)
    run_id, _snapshot = start(host, workflow, {})
    seen: list[tuple[str, str]] = []
    for kind, node_id, bad, value in ANSWERS:
        (pending,) = host.pending_interrupts(run_id)
        assert (pending.kind, pending.node_id) == (kind, node_id)
        assert pending.key.startswith(f"{run_id}:{node_id}:")
        refuse(host, run_id, node_id, bad)
        seen.append((pending.key, pending.interrupt_id))
        host.resolve(run_id, node_id, value, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"
    assert outputs(host, run_id) == {
        "approve": "accept",
        "clarify": {"q1": "blue"},
        "event": {"orderId": "o-1", "amount": 5},
        "escalate": "escalated",
        "custom": 2,
        "chat": "my order",
        "credential": "authorized",
        "inbox": [{"type": "accept", "args": None}],
        "plain": "nothing",
        "tools": {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        "offer": {"accepted": True},
        "body": "go",
    }
    # The entrypoint re-ran from the top after every answer; no earlier question was asked again.
    docs = events(host, run_id)
    assert [(p["key"]) for p in payloads(docs, "interrupt.requested")] == [k for k, _ in seen]
    assert [(r.key, r.interrupt_id) for r in host.interrupts(run_id)] == seen
    assert len(payloads(docs, "conversation.opened")) == 1 and len(payloads(docs, "conversation.closed")) == 1
    assert len(payloads(docs, "agent.decided")) == 1


def test_recovery_after_a_claim_keeps_keys_across_the_entrypoint_re_execution(make_host: HostFactory) -> None:
    from tests.adapters._support import resolve_then_recover

    host = make_host(conversations=True, credentials=True)
    run_id, snapshot = start(host, workflow, {})
    host.resolve(run_id, "workflow.approve", {"action": "accept"}, ALICE)
    first_key = host.interrupts(run_id)[0].key
    second = resolve_then_recover(
        make_host, host, snapshot["workflowId"], workflow, run_id, {"answers": {"q1": "red"}}
    )
    (pending,) = second.pending_interrupts(run_id)
    assert pending.node_id == "workflow.await_event"
    assert [r.key for r in second.interrupts(run_id)][:2] == [first_key, f"{run_id}:workflow.clarify:0:0"]


def _open_executions(docs: list[dict[str, Any]]) -> list[str]:
    """Node executions the log opened (started/resumed) and never closed (completed/failed/suspended).

    A suspension closes the execution of its node or of an enclosing one (an interrupt raised in
    a ``@task`` suspends the entrypoint that called it too).
    """
    open_: list[str] = []
    for doc in docs:
        node = doc["payload"].get("nodeId")
        if doc["type"] in ("node.started", "node.resumed"):
            open_.append(node)
        elif doc["type"] in ("node.completed", "node.failed"):
            if node not in open_:
                return [f"{doc['type']} #{doc['sequence']} for {node!r} closes nothing"]
            open_.remove(node)
        elif doc["type"] == "node.suspended":
            closed = [n for n in open_ if node == n or node.startswith(n + ".")]
            if not closed:
                return [f"node.suspended #{doc['sequence']} for {node!r} closes nothing"]
            for name in closed:
                open_.remove(name)
    return open_


def test_the_event_log_closes_every_node_execution(host: WopHost) -> None:
    run_id, _ = start(host, workflow, {})
    for _, node_id, _, value in ANSWERS[:2]:
        host.resolve(run_id, node_id, value, ALICE)
    assert _open_executions(events(host, run_id)) == []


def test_graph_nodes_log_one_execution_per_visit_and_per_answer(host: WopHost) -> None:
    """A node visited again starts afresh; a node resumed twice (two asks) is resumed twice."""
    looped, _ = start(host, loop_graph(rounds=2))
    for answer in ("first", "second"):
        host.resolve(looped, "gate", {"answers": {"q": answer}}, ALICE)
    docs = events(host, looped)
    requested = [r.interrupt_id for r in host.interrupts(looped)]
    opened = [(d["type"], d["payload"].get("interruptId")) for d in docs if d["type"].startswith("node.")]
    assert opened == [
        ("node.started", None),
        ("node.suspended", requested[0]),
        ("node.resumed", requested[0]),
        ("node.completed", None),
        ("node.started", None),
        ("node.suspended", requested[1]),
        ("node.resumed", requested[1]),
        ("node.completed", None),
    ]
    asked, _ = start(host, two_asks_graph())
    host.resolve(asked, "form", {"answers": {"a": "x"}}, ALICE)
    host.resolve(asked, "form", {"answers": {"b": "y"}}, ALICE)
    docs = events(host, asked)
    assert [p["interruptId"] for p in payloads(docs, "node.resumed")] == [
        r.interrupt_id for r in host.interrupts(asked)
    ]
    assert _open_executions(docs) == []


# -- HumanInTheLoopMiddleware requests and plain custom values inside @task ---------------------


@task
def review_tools() -> dict[str, Any]:
    """What the middleware does with the answer: one outcome per tool call, from its decision."""
    response = interrupt(TOOL_REVIEW)
    ran: list[Any] = []
    for request, decision in zip(TOOL_REVIEW["action_requests"], response["decisions"], strict=True):
        if decision["type"] == "approve":
            ran.append([request["name"], request["args"]])
        elif decision["type"] == "edit":
            ran.append([decision["edited_action"]["name"], decision["edited_action"]["args"]])
        else:
            ran.append([request["name"], "rejected: " + decision.get("message", "")])
    return {"response": response, "ran": ran}


@task
def pick_extras(city: str) -> Any:
    return interrupt({**OFFER, "city": city})


@entrypoint()
def tools_flow(inputs: dict[str, Any]) -> dict[str, Any]:
    reviewed = review_tools().result()
    return {**reviewed, "extras": pick_extras(inputs["city"]).result()}


EDITED = {"to": "all@example.com", "subject": "1.0"}
NATIVE_EDIT = {
    "decisions": [
        {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}},
        {"type": "reject", "message": "keep the log"},
    ]
}
EXTRAS = {"accepted": True, "paid": 40}
REVIEW_RESUMES = [
    # (what the resolver sends, what the task's interrupt() returns = what Command(resume=...) gives)
    pytest.param(NATIVE_EDIT, NATIVE_EDIT, id="native-decisions"),
    pytest.param(
        {"action": "accept"}, {"decisions": [{"type": "approve"}, {"type": "approve"}]}, id="openwop-accept"
    ),
    pytest.param(
        {"action": "reject", "feedback": "not today"},
        {"decisions": [{"type": "reject", "message": "not today"}] * 2},
        id="openwop-reject",
    ),
    pytest.param(
        {"action": "edit-accept", "editedArtifactData": NATIVE_EDIT}, NATIVE_EDIT, id="openwop-edit-accept"
    ),
]


def _plain_langgraph_outputs(review_resume: Any) -> dict[str, Any]:
    """The same entrypoint under plain LangGraph, resumed with ``Command(resume=...)``."""
    graph = tools_flow.copy(update={"checkpointer": InMemorySaver()})
    config: Any = {"configurable": {"thread_id": "plain"}}
    (asked,) = graph.invoke({"city": "Lisbon"}, config)["__interrupt__"]
    assert asked.value == TOOL_REVIEW
    (asked,) = graph.invoke(Command(resume=review_resume), config)["__interrupt__"]
    assert asked.value == {**OFFER, "city": "Lisbon"}
    return dict(graph.invoke(Command(resume=EXTRAS), config))


@pytest.mark.parametrize(("sent", "delivered"), REVIEW_RESUMES)
def test_a_middleware_request_and_a_custom_value_in_tasks(host: WopHost, sent: Any, delivered: Any) -> None:
    run_id, snapshot = start(host, tools_flow, {"city": "Lisbon"})
    assert (snapshot["status"], snapshot["currentNodeId"]) == ("waiting-approval", "tools_flow")
    review = only_pending(host, run_id)
    assert (review.kind, review.node_id) == ("approval", "tools_flow")
    data = review.payload["data"]
    assert data["artifactType"] == "langchain.hitl-request"
    assert [(i["name"], i["args"], i["allowedDecisions"]) for i in data["artifactData"]["items"]] == [
        ("send_email", {"to": "ops@example.com"}, ["approve", "edit", "reject"]),
        ("delete_file", {"path": "/tmp/old.log"}, ["approve", "reject"]),
    ]
    refuse(host, run_id, "tools_flow", {"decisions": [{"type": "approve"}]}, "/resumeValue/decisions")
    not_allowed = {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/"}}}
    refuse(
        host,
        run_id,
        "tools_flow",
        {"decisions": [{"type": "approve"}, not_allowed]},
        "/resumeValue/decisions/1/type",
    )
    refuse(host, run_id, "tools_flow", {"action": "maybe"})

    assert host.resolve(run_id, "tools_flow", sent, ALICE)["status"] == "waiting-input"
    extras = only_pending(host, run_id)
    assert (extras.kind, extras.node_id) == ("custom", "tools_flow")
    assert extras.payload["data"] == {
        "customKind": "langgraph.interrupt",
        "payload": {**OFFER, "city": "Lisbon"},
    }
    assert host.snapshot(run_id)["status"] == "waiting-input"
    refuse(host, run_id, "tools_flow", {"accepted": True, "paid": 2**64}, "/resumeValue/paid")
    refuse(host, run_id, "tools_flow", float("nan"), "/resumeValue")

    assert host.resolve(run_id, "tools_flow", EXTRAS, ALICE)["status"] == "completed"
    result = outputs(host, run_id)
    assert result["response"] == delivered
    assert result["extras"] == EXTRAS  # a custom value reaches the task as sent
    assert result == _plain_langgraph_outputs(delivered)  # exactly what Command(resume=...) gives

    docs = events(host, run_id)
    assert _open_executions(docs) == []
    started = [p["nodeId"] for p in payloads(docs, "node.started")]
    completed = [p["nodeId"] for p in payloads(docs, "node.completed")]
    assert sorted(started) == sorted(completed) and "tools_flow" in completed
    # One request per question though the entrypoint re-ran after each answer; keys unchanged.
    rows = host.interrupts(run_id)
    assert [r.key for r in rows] == [review.key, extras.key]
    assert [p["key"] for p in payloads(docs, "interrupt.requested")] == [review.key, extras.key]
    assert [p["kind"] for p in payloads(docs, "interrupt.requested")] == ["approval", "custom"]
    (decided, _) = payloads(docs, "interrupt.resolved")
    assert decided["decision"] == ("rejected" if sent.get("action") == "reject" else "granted")


def test_recovery_after_a_claim_delivers_the_decisions_and_keeps_both_keys(make_host: HostFactory) -> None:
    host = make_host()
    run_id, snapshot = start(host, tools_flow, {"city": "Oslo"})
    review_key = only_pending(host, run_id).key
    assert review_key.startswith(f"{run_id}:tools_flow:")
    second = resolve_then_recover(make_host, host, snapshot["workflowId"], tools_flow, run_id, NATIVE_EDIT)
    extras = only_pending(second, run_id)
    assert extras.kind == "custom" and extras.payload["data"]["payload"]["city"] == "Oslo"
    assert [r.key for r in second.interrupts(run_id)] == [review_key, extras.key]
    # A second crash after the custom value's claim: the re-executed entrypoint keeps both keys.
    third = resolve_then_recover(make_host, second, snapshot["workflowId"], tools_flow, run_id, EXTRAS)
    assert third.snapshot(run_id)["status"] == "completed"
    assert [r.key for r in third.interrupts(run_id)] == [review_key, extras.key]
    result = outputs(third, run_id)
    assert result["response"] == NATIVE_EDIT and result["extras"] == EXTRAS
    assert result["ran"] == [["send_email", EDITED], ["delete_file", "rejected: keep the log"]]
    docs = events(third, run_id)
    assert [p["key"] for p in payloads(docs, "interrupt.requested")] == [review_key, extras.key]
    assert _open_executions(docs) == []


@pytest.mark.xfail(
    strict=True,
    reason=(
        "driver (host/driver.py): a bare interrupt() in a @task suspends with node.suspended of the "
        "entrypoint (where the interrupt is addressed), which does not close the call task's "
        "node.started (tools_flow.review_tools); the task is closed only by its node.completed after "
        "the answer, so while the run waits the log shows the task running"
    ),
)
def test_a_bare_interrupt_in_a_task_closes_the_task_at_the_suspension(host: WopHost) -> None:
    run_id, _ = start(host, tools_flow, {"city": "Lisbon"})
    assert _open_executions(events(host, run_id)) == []
