"""Agent Inbox's flow through LangGraph's Python SDK: list interrupted threads by ``metadata.graph_id``
(and ``assistant_id``), read each ``HumanInterrupt``, then accept / edit / respond / ignore."""

from __future__ import annotations

from typing import Any

from langgraph_sdk.client import SyncLangGraphClient

from tests.server.langgraph_api.conftest import SdkFactory, of_type, openwop_events
from wop_langgraph.examples.agent_inbox import WORKFLOW_ID as GRAPH
from wop_langgraph.server.langgraph_api.shapes import assistant_uuid


def waiting_thread(client: SyncLangGraphClient, to: str) -> tuple[str, str]:
    """A thread whose run waits on its ``HumanInterrupt`` (a background run, joined); its id and run id."""
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, GRAPH, input={"to": to, "body": f"hello {to}"})
    outcome: Any = client.runs.join(thread_id, run["run_id"])
    assert "__interrupt__" in outcome
    return thread_id, run["run_id"]


def answer(client: SyncLangGraphClient, thread_id: str, response: dict[str, Any]) -> dict[str, Any]:
    """Submit a ``HumanResponse`` as Agent Inbox does (``runs.create``, ``command.resume``); the outcome."""
    run = client.runs.create(thread_id, GRAPH, command={"resume": [response]})
    outcome: dict[str, Any] = client.runs.join(thread_id, run["run_id"])  # type: ignore[assignment]
    return outcome


def test_the_inbox_lists_interrupted_threads_and_each_answer_reaches_the_graph(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    threads = {to: waiting_thread(client, to) for to in ("ann", "ben", "cat", "dan")}
    mine = {thread_id for thread_id, _ in threads.values()}

    listed = client.threads.search(metadata={"graph_id": GRAPH}, status="interrupted", limit=100)
    assert mine <= {t["thread_id"] for t in listed}
    by_uuid = client.threads.search(metadata={"assistant_id": assistant_uuid(GRAPH)}, status="interrupted")
    assert mine <= {t["thread_id"] for t in by_uuid}
    ann = next(t for t in listed if t["thread_id"] == threads["ann"][0])
    (interrupts,) = ann["interrupts"].values()
    (interrupt,) = interrupts
    (request,) = interrupt["value"]  # the graph's own [HumanInterrupt], as LangGraph shows it
    assert request["action_request"] == {"action": "send_email", "args": {"to": "ann", "body": "hello ann"}}
    assert request["config"]["allow_ignore"] is True and request["description"] == "Send this email to ann?"
    state = client.threads.get_state(threads["ann"][0])
    assert state["tasks"][-1]["interrupts"][-1] == interrupt  # Agent Inbox's fallback read

    assert answer(client, threads["ann"][0], {"type": "accept", "args": None})["outcome"] == "sent"
    edited = answer(
        client,
        threads["ben"][0],
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "ben", "body": "edited"}}},
    )
    assert edited["outcome"] == "sent-edited" and edited["sent"] == {"to": "ben", "body": "edited"}
    responded = answer(client, threads["cat"][0], {"type": "response", "args": "not this week"})
    assert responded["outcome"] == "reviewer said: not this week"

    # "ignore": the run ends, cancelled, and leaves the inbox.
    dan, dan_run = threads["dan"]
    client.threads.update_state(dan, None, as_node="__end__")
    assert client.threads.get(dan)["status"] == "idle"
    assert client.runs.get(dan, dan_run)["status"] == "interrupted"  # LangGraph's word for a cancelled run
    assert of_type(openwop_events(base, dan_run), "run.cancelled")
    still = client.threads.search(metadata={"graph_id": GRAPH}, status="interrupted", limit=100)
    assert not mine & {t["thread_id"] for t in still}
    for to in ("ann", "ben", "cat"):
        thread_id, run_id = threads[to]
        assert client.threads.get(thread_id)["status"] == "idle"
        (resolved,) = of_type(openwop_events(base, run_id), "interrupt.resolved")
        assert "alice" in str(resolved["resolvedBy"])


def test_search_pages_and_sorts(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    marker = {"batch": "paging"}
    made = [client.threads.create(metadata=marker)["thread_id"] for _ in range(3)]
    newest_first = client.threads.search(metadata=marker, limit=10)
    assert [t["thread_id"] for t in newest_first] == made[::-1]
    assert [t["status"] for t in newest_first] == ["idle"] * 3
    oldest_first = client.threads.search(
        metadata=marker, sort_by="created_at", sort_order="asc", limit=2, offset=1
    )
    assert [t["thread_id"] for t in oldest_first] == made[1:]
    assert client.threads.search(metadata={"batch": "nothing-like-it"}) == []
