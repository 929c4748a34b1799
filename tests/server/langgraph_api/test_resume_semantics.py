"""Where the two protocols meet: interrupts answered by id, exactly-once resumes under concurrency,
busy threads, cancel; every refusal before anything is applied."""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, UnprocessableEntityError

from tests.server.langgraph_api.conftest import SdkFactory, dump, of_type, openwop_events, tool_results
from tests.server.process import poll_until

ALICE = {"x-api-key": "alice-key"}


def test_two_pending_interrupts_are_answered_by_id_and_a_plain_value_is_refused(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "two-questions", input={})
    client.runs.join(thread_id, run["run_id"])
    thread = client.threads.get(thread_id)
    pending = {i["value"]["question"]: i["id"] for found in thread["interrupts"].values() for i in found}
    assert set(pending) == {"first?", "second?"} and len(set(pending.values())) == 2

    url = f"{base}/langgraph/threads/{thread_id}/runs"
    refused = httpx.post(
        url, headers=ALICE, json={"assistant_id": "two-questions", "command": {"resume": "x"}}
    )
    assert refused.status_code == 409 and refused.json()["error"] == "wop-langgraph.interrupts_pending"
    assert sorted(refused.json()["details"]["pendingInterruptIds"]) == sorted(pending.values())
    stale = httpx.post(
        url, headers=ALICE, json={"assistant_id": "two-questions", "command": {"resume": {"0" * 32: "x"}}}
    )
    assert stale.status_code == 409
    assert client.threads.get(thread_id)["interrupts"] == thread["interrupts"]  # nothing applied

    resume = {pending["first?"]: "a", pending["second?"]: "b"}
    outcome: Any = client.runs.wait(thread_id, "two-questions", command={"resume": resume})
    assert sorted(outcome["answers"]) == ["first=a", "second=b"]
    assert client.threads.get(thread_id)["status"] == "idle"
    assert len(of_type(openwop_events(base, run["run_id"]), "interrupt.resolved")) == 2


def test_concurrent_resumes_apply_exactly_once(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "email"}]}
        )
    )
    run_id = parts[0].data["run_id"]
    assert client.threads.get(thread_id)["status"] == "interrupted"
    body = {"assistant_id": "chat-agent", "command": {"resume": {"decisions": [{"type": "approve"}]}}}

    def resume(_: int) -> int:
        with httpx.Client(timeout=60) as http:
            return http.post(
                f"{base}/langgraph/threads/{thread_id}/runs", headers=ALICE, json=body
            ).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(resume, range(8)))
    assert statuses == [200] + [409] * 7
    client.runs.join(thread_id, run_id)
    values = client.threads.get(thread_id)["values"]
    executed = [m for m in values["messages"] if m["type"] == "tool"]
    assert len(executed) == 1 and tool_results(values)["send_email"].startswith("EXECUTED")
    assert len(of_type(openwop_events(base, run_id), "interrupt.resolved")) == 1


def test_a_busy_thread_refuses_a_second_run_and_cancel_stops_the_run(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "slow", input={})
    poll_until(lambda: client.threads.get(thread_id)["status"], lambda s: s == "busy", what="busy thread")
    with pytest.raises(ConflictError):
        client.runs.create(thread_id, "slow", input={})  # multitask_strategy reject (the default here)
    with pytest.raises(UnprocessableEntityError):
        client.runs.create(thread_id, "slow", input={}, multitask_strategy="rollback")
    started = time.monotonic()
    client.runs.cancel(thread_id, run["run_id"], wait=True)
    assert time.monotonic() - started < 20  # the 30 s node was stopped, not waited for
    assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    thread = client.threads.get(thread_id)
    assert thread["status"] == "idle" and "done" not in thread["values"]
    assert [e["type"] for e in openwop_events(base, run["run_id"])][-1] == "run.cancelled"
    assert len(client.runs.list(thread_id)) == 1  # the refused runs left nothing behind


def test_new_input_while_interrupted_is_refused_until_the_interrupt_is_answered(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "email"}]})
    with pytest.raises(ConflictError):
        client.runs.create(thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "hi"}]})
    assert client.threads.get(thread_id)["status"] == "interrupted"
    with pytest.raises(ConflictError):  # nothing to resume on a thread that does not wait
        client.runs.create(client.threads.create()["thread_id"], "chat-agent", command={"resume": "x"})


def test_a_failed_run_ends_its_stream_with_an_error_and_the_thread_is_in_error(
    base: str, sdk: SdkFactory
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(thread_id, "broken", input={}, stream_mode=["values", "updates"]))
    assert parts[0].event == "metadata" and parts[-1].event == "error"
    assert parts[-1].data["message"]  # the OpenWOP run's public error
    assert client.threads.get(thread_id)["status"] == "error"
    assert client.runs.get(thread_id, parts[0].data["run_id"])["status"] == "error"
    # a thread in error takes new input; runs.wait raises the run's error as the SDK does with LangGraph's
    with pytest.raises(Exception, match="internal_error: node 'fail' failed"):
        client.runs.wait(thread_id, "broken", input={})
    assert len(client.runs.list(thread_id)) == 2


@pytest.mark.parametrize(("on_disconnect", "after"), [("cancel", "interrupted"), ("continue", "running")])
def test_a_client_that_leaves_a_stream_cancels_the_run_only_if_it_asked(
    base: str, sdk: SdkFactory, on_disconnect: str, after: str
) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    body = {"assistant_id": "slow", "input": {}, "on_disconnect": on_disconnect}
    url = f"{base}/langgraph/threads/{thread_id}/runs/stream"
    with httpx.stream("POST", url, json=body, headers=ALICE) as response:
        assert next(response.iter_lines()) == "event: metadata"
        run_id = response.headers["content-location"].rsplit("/", 1)[1]
    status = poll_until(
        lambda: client.runs.get(thread_id, run_id)["status"], lambda s: s == after, timeout=10, what=after
    )
    assert status == after
    if after == "running":
        time.sleep(1.5)  # the server noticed the disconnect by now, and left the run alone
        assert client.runs.get(thread_id, run_id)["status"] == "running"
        client.runs.cancel(thread_id, run_id, wait=True)


def _gate_ids(client: Any, thread_id: str) -> dict[str, str]:
    thread = client.threads.get(thread_id)
    found = [i for docs in thread["interrupts"].values() for i in docs]
    return {("legal" if "legal" in dump(i["value"]) else "finance"): i["id"] for i in found}


def test_a_batch_resume_with_one_bad_answer_applies_nothing(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "two-gates", input={})
    client.runs.join(thread_id, run["run_id"])
    ids = _gate_ids(client, thread_id)
    assert set(ids) == {"legal", "finance"}
    before = client.threads.get(thread_id)
    url = f"{base}/langgraph/threads/{thread_id}/runs"
    for bad in ({"action": "explode"}, {"action": "accept", "feedback": 3}):
        resume = {ids["legal"]: {"action": "accept"}, ids["finance"]: bad}
        refused = httpx.post(
            url, headers=ALICE, json={"assistant_id": "two-gates", "command": {"resume": resume}}
        )
        assert 400 <= refused.status_code < 500 and refused.status_code != 409, refused.text
    after = client.threads.get(thread_id)
    assert after["status"] == "interrupted" and after["interrupts"] == before["interrupts"]
    assert not of_type(openwop_events(base, run["run_id"]), "interrupt.resolved")  # neither applied

    resume = {ids["legal"]: {"action": "accept"}, ids["finance"]: {"decisions": [{"type": "approve"}]}}
    outcome: Any = client.runs.wait(thread_id, "two-gates", command={"resume": resume})
    assert sorted(outcome["decisions"]) == ["finance=accept", "legal=accept"]


def test_concurrent_batch_resumes_apply_one_batch_whole(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "two-questions", input={})
    client.runs.join(thread_id, run["run_id"])
    thread = client.threads.get(thread_id)
    pending = {i["value"]["question"]: i["id"] for found in thread["interrupts"].values() for i in found}

    def resume(n: int) -> tuple[int, int]:
        # half the callers list the ids in the other order (lock order must not deadlock)
        order = ["first?", "second?"] if n % 2 else ["second?", "first?"]
        body = {"assistant_id": "two-questions", "command": {"resume": {pending[q]: f"v{n}" for q in order}}}
        with httpx.Client(timeout=60) as http:
            status = http.post(f"{base}/langgraph/threads/{thread_id}/runs", headers=ALICE, json=body)
            return status.status_code, n

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(resume, range(8)))
    statuses = sorted(code for code, _ in results)
    assert statuses == [200] + [409] * 7, results
    winner = next(n for code, n in results if code == 200)
    outcome: Any = client.runs.join(thread_id, run["run_id"])
    assert sorted(outcome["answers"]) == [f"first=v{winner}", f"second=v{winner}"]  # one batch, whole
    assert len(of_type(openwop_events(base, run["run_id"]), "interrupt.resolved")) == 2
