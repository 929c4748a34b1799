"""``client.runs.delete``: an ended run leaves the thread's run routes; a run that has not ended is
``409``; the OpenWOP run and its event log (the audit trail) stay, and so does the thread's state."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.server.langgraph_api.conftest import SdkFactory, openwop_events
from tests.server.process import poll_until


def test_an_ended_run_is_deleted_from_the_thread_but_not_from_the_audit_trail(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    first = client.runs.create(
        thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    client.runs.join(thread_id, first["run_id"])
    second = client.runs.create(
        thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "again"}]}
    )
    client.runs.join(thread_id, second["run_id"])
    values_before = client.threads.get_state(thread_id)["values"]
    events_before = openwop_events(base, first["run_id"])

    with pytest.raises(NotFoundError):
        sdk("bob-key").runs.delete(thread_id, first["run_id"])  # another tenant's run does not exist
    reader = httpx.delete(
        f"{base}/langgraph/threads/{thread_id}/runs/{first['run_id']}", headers={"x-api-key": "reader-key"}
    )
    assert reader.status_code == 403  # deleting needs runs:cancel
    client.runs.delete(thread_id, first["run_id"])

    assert [r["run_id"] for r in client.runs.list(thread_id)] == [second["run_id"]]
    with pytest.raises(NotFoundError):
        client.runs.get(thread_id, first["run_id"])
    with pytest.raises(NotFoundError):
        client.runs.delete(thread_id, first["run_id"])  # once
    # the audit trail and the thread's state and history are untouched
    assert openwop_events(base, first["run_id"]) == events_before
    assert client.threads.get_state(thread_id)["values"] == values_before
    assert len(client.threads.get_history(thread_id, limit=100)) >= 2


def test_a_run_that_has_not_ended_is_not_deleted(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "slow", input={})
    poll_until(lambda: client.threads.get(thread_id)["status"], lambda s: s == "busy", what="busy thread")
    with pytest.raises(ConflictError):
        client.runs.delete(thread_id, run["run_id"])
    assert client.runs.get(thread_id, run["run_id"])["status"] in ("pending", "running")

    interrupted = client.threads.create()["thread_id"]
    waiting = client.runs.wait(
        interrupted, "chat-agent", input={"messages": [{"role": "user", "content": "email"}]}
    )
    assert "__interrupt__" in waiting
    [pending] = client.runs.list(interrupted)
    with pytest.raises(ConflictError):
        client.runs.delete(interrupted, pending["run_id"])  # a resume continues this run
    assert client.threads.get(interrupted)["status"] == "interrupted"

    client.runs.cancel(thread_id, run["run_id"], wait=True)
    client.runs.delete(thread_id, run["run_id"])
    assert client.runs.list(thread_id) == []
    assert [e["type"] for e in openwop_events(base, run["run_id"])][-1] == "run.cancelled"
