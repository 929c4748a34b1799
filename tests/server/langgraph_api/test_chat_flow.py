"""agent-chat-ui's flow through LangGraph's Python SDK: stream ``values`` + ``messages-tuple``, an
interrupt of ``HumanInTheLoopMiddleware``, approve / edit / reject, a second turn, and a batch of
two tool calls with one approved and one rejected (the rejected one never executes)."""

from __future__ import annotations

from typing import Any

from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.schema import StreamPart

from tests.server.langgraph_api.conftest import SdkFactory, of_type, openwop_events, tool_results
from tests.server.langgraph_api.graphs import EMAIL, FILE
from wop_langgraph.server.langgraph_api.shapes import assistant_uuid

GRAPH = "chat-agent"


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def stream(client: SyncLangGraphClient, thread_id: str, **options: Any) -> tuple[list[StreamPart], list[Any]]:
    """One ``runs.stream`` as ``useStream`` sends it; the parts and the run metadata the SDK read."""
    created: list[Any] = []
    parts = list(
        client.runs.stream(
            thread_id,
            GRAPH,
            stream_mode=["values", "messages-tuple"],
            stream_subgraphs=True,
            stream_resumable=True,
            on_disconnect="continue",
            on_run_created=created.append,
            **options,
        )
    )
    return parts, created


def last_values(parts: list[StreamPart]) -> dict[str, Any]:
    return next(p.data for p in reversed(parts) if p.event == "values" and "__interrupt__" not in p.data)


def test_a_conversation_through_runs_wait_sees_the_earlier_turns(sdk: SdkFactory) -> None:
    """``runs.wait`` drives its run in the request: a turn after the first starts from the state
    the thread's previous run left (it once started afresh there, forgetting the conversation)."""
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH, input=say("hello"))
    answered = client.runs.wait(thread_id, GRAPH, input=say("and again"))
    texts = [m["content"] for m in answered["messages"]]
    assert texts == ["hello", "turn 1: you said 'hello'", "and again", "turn 2: you said 'and again'"]
    assert client.threads.get_state(thread_id)["values"] == answered


def test_a_conversation_ends_alike_through_runs_wait_and_runs_stream(sdk: SdkFactory) -> None:
    """``runs.wait`` drives its runs in the request, ``runs.stream`` leaves them to the workers:
    the same turns, an interrupt and its approval among them, leave the same thread."""
    client = sdk()

    def converse(waiting: bool) -> tuple[list[tuple[str, str]], str, int]:
        thread_id = client.threads.create()["thread_id"]
        for step in (
            {"input": say("hello")},
            {"input": say("send an email")},
            {"command": {"resume": {"decisions": [{"type": "approve"}]}}},
            {"input": say("thanks")},
        ):
            if waiting:
                client.runs.wait(thread_id, GRAPH, **step)
            else:
                stream(client, thread_id, **step)
        values = client.threads.get_state(thread_id)["values"]
        said = [(m["type"], str(m["content"])) for m in values["messages"]]
        return said, client.threads.get(thread_id)["status"], len(client.runs.list(thread_id))

    waited = converse(True)
    assert waited == converse(False)
    said, status, runs = waited
    assert [kind for kind, _ in said] == ["human", "ai", "human", "ai", "tool", "ai", "human", "ai"]
    assert said[-1] == ("ai", "turn 3: you said 'thanks'") and said[4][1].startswith("EXECUTED send_email")
    assert (status, runs) == ("idle", 3)  # the resume continued its run


def test_a_conversation_streams_turns_that_see_the_earlier_ones(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create(metadata={"source": "chat"})["thread_id"]
    parts, created = stream(client, thread_id, input=say("hello"))
    assert parts[0].event == "metadata"
    run_id = parts[0].data["run_id"]
    assert parts[0].data["thread_id"] == thread_id
    assert created[0]["run_id"] == run_id and created[0]["thread_id"] == thread_id  # Content-Location
    assert last_values(parts)["messages"][-1]["content"] == "turn 1: you said 'hello'"
    streamed = [p.data[0] for p in parts if p.event == "messages"]
    assert [(m["type"], m["id"]) for m in streamed] == [("ai", "ai-echo-1")]
    assert streamed[0]["content"] == "turn 1: you said 'hello'"

    parts, _ = stream(client, thread_id, input=say("and again"))
    second_run = parts[0].data["run_id"]
    # a client that lost the stream after its first step rejoins it with Last-Event-ID
    first_step = next(p.id for p in parts if p.id)
    rejoined = list(client.runs.join_stream(thread_id, second_run, last_event_id=first_step))
    assert [p.data for p in rejoined if p.event == "values"] == [
        p.data for p in parts if p.event == "values"
    ][1:]
    assert second_run != run_id  # a new input is a new OpenWOP run of the same thread
    texts = [m["content"] for m in last_values(parts)["messages"]]
    assert texts == ["hello", "turn 1: you said 'hello'", "and again", "turn 2: you said 'and again'"]
    thread = client.threads.get(thread_id)
    assert thread["status"] == "idle" and thread["interrupts"] == {}
    assert thread["metadata"] == {"source": "chat", "graph_id": GRAPH, "assistant_id": assistant_uuid(GRAPH)}
    assert [r["run_id"] for r in client.runs.list(thread_id)] == [second_run, run_id]
    history = client.threads.get_history(thread_id, limit=3)
    assert len(history) == 3 and history[0]["values"] == thread["values"]
    older = history[2]["checkpoint"]["checkpoint_id"]
    assert client.threads.get_state(thread_id, checkpoint_id=older)["values"] == history[2]["values"]
    drawn = client.assistants.get_graph(GRAPH)
    assert {"model", "tools"} <= {node["id"] for node in drawn["nodes"]}


def test_approve_edit_and_reject_a_tool_call(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    parts, _ = stream(client, thread_id, input=say("send the email"))
    run_id = parts[0].data["run_id"]
    (interrupt,) = next(
        p.data["__interrupt__"] for p in parts if p.event == "values" and "__interrupt__" in p.data
    )
    request = interrupt["value"]
    assert request["action_requests"][0]["name"] == "send_email"
    assert request["action_requests"][0]["args"] == EMAIL
    assert request["review_configs"] == [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]}
    ]

    thread = client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    assert [i for found in thread["interrupts"].values() for i in found] == [interrupt]
    state = client.threads.get_state(thread_id)
    assert state["interrupts"] == [interrupt]
    assert [i for task in state["tasks"] for i in task["interrupts"]] == [interrupt]
    assert "EXECUTED" not in str(thread["values"])  # nothing ran before the review

    edited = {"to": "all@example.com", "subject": "Edited"}
    decision = {"type": "edit", "edited_action": {"name": "send_email", "args": edited}}
    parts, created = stream(client, thread_id, input={}, command={"resume": {"decisions": [decision]}})
    assert parts[0].data["run_id"] == run_id == created[0]["run_id"]  # the same OpenWOP run, resumed
    results = tool_results(last_values(parts))
    assert list(results) == ["send_email"]  # the middleware prefixes a note on the edit
    assert results["send_email"].endswith("EXECUTED send_email to=all@example.com subject=Edited")
    assert client.threads.get(thread_id)["status"] == "idle"

    events = openwop_events(base, run_id)
    (requested,) = of_type(events, "interrupt.requested")
    (suspended,) = of_type(events, "node.suspended")
    (resolved,) = of_type(events, "interrupt.resolved")
    assert requested["kind"] == "approval" and resolved["interruptId"] == suspended["interruptId"]
    assert "alice" in str(resolved["resolvedBy"])

    # A rejection in a later turn: the tool never runs, the model is told why.
    parts, _ = stream(client, thread_id, input=say("email them again"))
    parts, _ = stream(
        client, thread_id, command={"resume": {"decisions": [{"type": "reject", "message": "no"}]}}
    )
    contents = [m["content"] for m in last_values(parts)["messages"] if m["type"] == "tool"]
    assert contents[0].endswith("EXECUTED send_email to=all@example.com subject=Edited")
    assert len(contents) == 2 and "no" in contents[1] and "EXECUTED" not in contents[1]


def test_a_batch_with_one_call_approved_and_one_rejected_runs_only_the_approved_one(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    parts, _ = stream(client, thread_id, input=say("batch: email and clean up"))
    (interrupt,) = next(
        p.data["__interrupt__"] for p in parts if p.event == "values" and "__interrupt__" in p.data
    )
    assert [(a["name"], a["args"]) for a in interrupt["value"]["action_requests"]] == [
        ("send_email", EMAIL),
        ("delete_file", FILE),
    ]
    decisions = [{"type": "approve"}, {"type": "reject", "message": "keep the log"}]
    parts, _ = stream(client, thread_id, command={"resume": {"decisions": decisions}})
    values = last_values(parts)
    results = tool_results(values)
    assert results["send_email"] == "EXECUTED send_email to=ops@example.com subject=Release"
    assert "keep the log" in results["delete_file"] and "EXECUTED" not in results["delete_file"]
    assert "EXECUTED delete_file" not in str(values)
    assert values["messages"][-1]["content"].startswith("Done: ")
