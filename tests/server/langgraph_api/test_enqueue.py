"""``multitask_strategy: "enqueue"``: a run created on a busy thread waits its turn (``pending``),
starts when the thread's current run has ended, in the order asked, and survives a restart."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError

from tests.conftest import BACKENDS, create_postgres_database, drop_postgres_database
from tests.server.langgraph_api.conftest import TARGET, SdkFactory, of_type, openwop_events
from tests.server.process import poll_until, served

ALICE = {"x-api-key": "alice-key"}
EMAIL = {"messages": [{"role": "user", "content": "email"}]}
APPROVE = {"resume": {"decisions": [{"type": "approve"}]}}


def _journal(entries: list[str]) -> dict[str, Any]:
    return {"entries": entries}


def test_enqueued_runs_wait_their_turn_and_run_in_the_order_asked(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    first = client.runs.create(thread_id, "journal", input=_journal(["a"]))
    second = client.runs.create(thread_id, "journal", input=_journal(["b"]), multitask_strategy="enqueue")
    third = client.runs.create(thread_id, "journal", input=_journal(["c"]), multitask_strategy="enqueue")
    assert second["status"] == "pending" and third["status"] == "pending"
    assert second["multitask_strategy"] == "enqueue"
    assert client.runs.get(thread_id, third["run_id"])["status"] == "pending"
    assert client.threads.get(thread_id)["status"] == "busy"
    with pytest.raises(ConflictError):  # reject while runs wait (LangGraph: a pending run is inflight)
        client.runs.create(thread_id, "journal", input=_journal(["x"]))

    client.runs.join(thread_id, third["run_id"])
    entries = client.threads.get(thread_id)["values"]["entries"]
    # each run began where the previous one ended, in the order they were asked for
    assert entries == ["a", "wrote:a", "b", "wrote:b", "c", "wrote:c"]
    runs = client.runs.list(thread_id)
    assert [r["run_id"] for r in runs] == [third["run_id"], second["run_id"], first["run_id"]]
    assert {r["status"] for r in runs} == {"success"}
    assert client.threads.get(thread_id)["status"] == "idle"
    # an enqueued run is an OpenWOP run with the id it was given when asked for
    assert openwop_events(base, second["run_id"])[0]["type"] == "run.started"


def test_an_enqueued_stream_shows_its_own_steps_once_its_turn_comes(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    client.runs.create(thread_id, "journal", input=_journal(["a"]))
    parts = list(
        client.runs.stream(
            thread_id, "journal", input=_journal(["b"]), multitask_strategy="enqueue", stream_mode="values"
        )
    )
    assert parts[0].event == "metadata"
    values = [p.data["entries"] for p in parts if p.event == "values"]
    # the state it began from (the first run's end) is not an event of this run
    assert values == [["a", "wrote:a", "b"], ["a", "wrote:a", "b", "wrote:b"]]


def test_an_enqueued_run_waits_behind_pending_interrupts_until_the_run_ends(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    first = client.runs.wait(thread_id, "chat-agent", input=EMAIL)
    assert "__interrupt__" in first
    queued = client.runs.create(
        thread_id,
        "chat-agent",
        input={"messages": [{"role": "user", "content": "hello"}]},
        multitask_strategy="enqueue",
    )
    assert queued["status"] == "pending"
    thread = client.threads.get(thread_id)
    assert thread["status"] == "interrupted" and thread["interrupts"]  # still answerable
    client.runs.wait(thread_id, "chat-agent", command=APPROVE)
    done: Any = client.runs.join(thread_id, queued["run_id"])
    texts = [m["content"] for m in done["messages"] if m["type"] == "ai"]
    assert texts[-1].startswith("turn 2")  # it saw the first turn, after the email was sent
    assert client.runs.get(thread_id, queued["run_id"])["status"] == "success"


def test_a_queued_run_starts_when_the_run_ahead_is_cancelled_on_the_openwop_surface(
    base: str, sdk: SdkFactory
) -> None:
    # Nothing on the LangGraph API's side sees this cancel: the queue's scan finds the turn.
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "chat-agent", input=EMAIL)
    [ahead] = client.runs.list(thread_id)
    queued = client.runs.create(thread_id, "journal", input=_journal(["b"]), multitask_strategy="enqueue")
    cancelled = httpx.post(
        f"{base}/runs/{ahead['run_id']}/cancel", headers={"Authorization": "Bearer alice-key"}, json={}
    )
    assert cancelled.status_code < 300, cancelled.text
    run = poll_until(
        lambda: client.runs.get(thread_id, queued["run_id"]),
        lambda r: r["status"] == "success",
        timeout=20,
        what="the queued run done",
    )
    assert run["status"] == "success"
    assert client.runs.get(thread_id, ahead["run_id"])["status"] == "interrupted"


def test_a_queued_run_cancelled_before_its_turn_never_starts(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    slow = client.runs.create(thread_id, "slow", input={})
    queued = client.runs.create(thread_id, "journal", input=_journal(["b"]), multitask_strategy="enqueue")
    client.runs.cancel(thread_id, queued["run_id"])
    assert client.runs.get(thread_id, queued["run_id"])["status"] == "interrupted"
    client.runs.cancel(thread_id, slow["run_id"], wait=True)
    thread = poll_until(lambda: client.threads.get(thread_id), lambda t: t["status"] == "idle", what="idle")
    assert "entries" not in thread["values"]
    assert client.runs.join(thread_id, queued["run_id"]) == {}
    unknown = httpx.get(f"{base}/runs/{queued['run_id']}", headers={"Authorization": "Bearer alice-key"})
    assert unknown.status_code == 404  # no OpenWOP run was ever created for it
    client.runs.delete(thread_id, queued["run_id"])
    assert [r["run_id"] for r in client.runs.list(thread_id)] == [slow["run_id"]]


def test_bad_enqueued_input_is_refused_and_nothing_is_queued(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    client.runs.create(thread_id, "slow", input={})
    url = f"{base}/langgraph/threads/{thread_id}/runs"
    for body in (
        {"assistant_id": "nope", "input": {}, "multitask_strategy": "enqueue"},
        {"assistant_id": "journal", "input": {}, "metadata": [1], "multitask_strategy": "enqueue"},
    ):
        assert httpx.post(url, headers=ALICE, json=body).status_code in (400, 404)
    assert len(client.runs.list(thread_id)) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_queued_run_survives_a_restart(backend: str, tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'wop.db'}" if backend == "sqlite" else create_postgres_database()
    try:
        with (
            served(url, target=TARGET) as base,
            get_sync_client(url=f"{base}/langgraph", api_key="alice-key") as client,
        ):
            thread_id = client.threads.create()["thread_id"]
            first = client.runs.wait(thread_id, "chat-agent", input=EMAIL)
            assert "__interrupt__" in first
            hello = {"messages": [{"role": "user", "content": "hello"}]}
            queued = client.runs.create(thread_id, "chat-agent", input=hello, multitask_strategy="enqueue")
        with (
            served(url, target=TARGET) as base,
            get_sync_client(url=f"{base}/langgraph", api_key="alice-key") as client,
        ):
            assert client.runs.get(thread_id, queued["run_id"])["status"] == "pending"
            client.runs.wait(thread_id, "chat-agent", command=APPROVE)
            done: Any = client.runs.join(thread_id, queued["run_id"])
            assert client.runs.get(thread_id, queued["run_id"])["status"] == "success"
            assert [m["content"] for m in done["messages"] if m["type"] == "ai"][-1].startswith("turn 2")
            events = openwop_events(base, queued["run_id"])
            assert of_type(events, "run.completed")
    finally:
        if backend == "postgres":
            drop_postgres_database(url)
