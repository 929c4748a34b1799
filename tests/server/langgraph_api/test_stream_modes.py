"""The stream modes beyond ``values`` / ``updates`` / ``messages-tuple``, through the Python SDK:
``custom`` (a node's ``get_stream_writer()`` chunks, relayed live), ``debug`` / ``tasks`` /
``checkpoints`` and ``events`` (derived from the checkpoints), ``messages`` (whole messages)."""

from __future__ import annotations

from typing import Any

from tests.server.langgraph_api.conftest import SdkFactory


def _stream(client: Any, graph: str, value: Any, modes: list[str]) -> list[tuple[str, Any]]:
    thread_id = client.threads.create()["thread_id"]
    return [(p.event, p.data) for p in client.runs.stream(thread_id, graph, input=value, stream_mode=modes)]


def test_custom_chunks_arrive_in_order_before_the_step_that_wrote_them(base: str, sdk: SdkFactory) -> None:
    parts = _stream(sdk(), "journal", {"entries": ["a"]}, ["custom", "values"])
    assert parts[0][0] == "metadata"
    custom = [data for event, data in parts if event == "custom"]
    assert custom == [{"progress": "writing a"}, {"progress": "wrote a"}]
    events = [event for event, _ in parts]
    last_values = max(i for i, e in enumerate(events) if e == "values")
    assert events.index("custom") < last_values  # written during the step, before its state
    assert parts[last_values][1] == {"entries": ["a", "wrote:a"]}


def test_a_resumed_stream_shows_only_the_chunks_written_after_it(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    list(client.runs.stream(thread_id, "journal", input={"entries": ["a"]}, stream_mode="custom"))
    second = list(client.runs.stream(thread_id, "journal", input={"entries": ["b"]}, stream_mode="custom"))
    assert [p.data for p in second if p.event == "custom"] == [
        {"progress": "writing b"},
        {"progress": "wrote b"},
    ]


def test_debug_tasks_and_checkpoints_are_derived_from_the_saved_steps(base: str, sdk: SdkFactory) -> None:
    parts = _stream(sdk(), "journal", {"entries": ["a"]}, ["debug", "tasks", "checkpoints", "updates"])
    # a step read before its task's writes were saved is read again for them
    assert [data for event, data in parts if event == "updates"] == [{"write": {"entries": ["wrote:a"]}}]
    debug = [data for event, data in parts if event == "debug"]
    kinds = [d["type"] for d in debug]
    assert {"checkpoint", "task", "task_result"} <= set(kinds)
    assert kinds.index("task") < kinds.index("task_result")
    result = next(d for d in debug if d["type"] == "task_result")
    assert result["payload"]["name"] == "write" and result["payload"]["result"] == {"entries": ["wrote:a"]}
    final = [d for d in debug if d["type"] == "checkpoint"][-1]["payload"]
    assert final["values"] == {"entries": ["a", "wrote:a"]} and final["next"] == []
    assert final["config"]["configurable"]["thread_id"] == parts[0][1]["thread_id"]
    tasks = [data for event, data in parts if event == "tasks"]
    assert [t["name"] for t in tasks] == ["write", "write"] and "result" in tasks[1]
    checkpoints = [data for event, data in parts if event == "checkpoints"]
    assert checkpoints[-1] == final


def test_events_show_each_node_and_the_graph_as_agent_inbox_reads_them(base: str, sdk: SdkFactory) -> None:
    parts = _stream(sdk(), "journal", {"entries": ["a"]}, ["events"])
    events = [data for event, data in parts if event == "events"]
    names = [(e["event"], e["name"]) for e in events]
    # as langgraph dev sends them (its graph's input aside: not kept here)
    assert names == [
        ("on_chain_start", "journal"),
        ("on_chain_start", "write"),
        ("on_chain_stream", "write"),
        ("on_chain_end", "write"),
        ("on_chain_end", "journal"),
    ]
    node_start = events[1]
    assert node_start["metadata"]["langgraph_node"] == "write"  # what Agent Inbox shows as progress
    assert node_start["data"]["input"] == {"entries": ["a"]}
    assert events[2]["data"]["chunk"] == {"entries": ["wrote:a"]}
    assert events[-1]["data"]["output"] == {"entries": ["a", "wrote:a"]}


def test_messages_mode_sends_each_new_message_whole(base: str, sdk: SdkFactory) -> None:
    hello = {"messages": [{"role": "user", "content": "hello"}]}
    parts = _stream(sdk(), "chat-agent", hello, ["messages"])
    kinds = [event for event, _ in parts if event.startswith("messages")]
    assert kinds == ["messages/metadata", "messages/complete"]
    [complete] = [data for event, data in parts if event == "messages/complete"]
    assert complete[0]["type"] == "ai" and complete[0]["content"].startswith("turn 1")
    [metadata] = [data for event, data in parts if event == "messages/metadata"]
    assert metadata[complete[0]["id"]]["metadata"]["langgraph_node"] == "model"
