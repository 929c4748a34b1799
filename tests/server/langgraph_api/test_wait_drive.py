"""A ``runs/wait`` drives its run to rest itself when a drive thread is free, and answers exactly what
the workers' path answers; with ``langgraph_wait_drives=0`` the workers drive it.

The graph records which thread ran each node: a worker's (``wop-worker-N``) or another (the
request's drive thread). Both paths end in the same answers, the same thread state and the same
OpenWOP event log, with the resolution recorded for the API key's principal.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from tests.server.conftest import make_settings, serving
from wop_langgraph.host import WopHost
from wop_langgraph.server import create_app

ALICE = {"x-api-key": "alice-key"}
ALICE_BEARER = {"Authorization": "Bearer alice-key"}


class State(TypedDict, total=False):
    to: str
    asked_on: str
    sent_on: str
    decision: str


def _ask(state: State) -> dict[str, Any]:
    on = threading.current_thread().name
    answer = interrupt({"send_to": state["to"], "asked_on": on})
    return {"asked_on": on, "decision": answer["action"]}


def _send(state: State) -> dict[str, Any]:
    return {"sent_on": threading.current_thread().name}


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", _ask)
    builder.add_node("send", _send)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "send")
    builder.add_edge("send", END)
    return builder.compile()


async def _cycle(client: httpx.AsyncClient) -> tuple[dict[str, Any], dict[str, Any], str, list[str]]:
    created = await client.post("/langgraph/threads", json={"metadata": {"k": "v"}}, headers=ALICE)
    assert created.status_code == 200, created.text
    thread = created.json()
    again = (await client.get(f"/langgraph/threads/{thread['thread_id']}", headers=ALICE)).json()
    assert again == thread  # the created thread's document is the one stored
    tid = thread["thread_id"]
    asked = await client.post(
        f"/langgraph/threads/{tid}/runs/wait",
        json={"assistant_id": "mail", "input": {"to": "ops@example.com"}},
        headers=ALICE,
        timeout=30,
    )
    assert asked.status_code == 200, asked.text
    run_path = asked.headers["content-location"].rsplit("/", 1)[-1]
    done = await client.post(
        f"/langgraph/threads/{tid}/runs/wait",
        json={"assistant_id": "mail", "command": {"resume": {"action": "send"}}},
        headers=ALICE,
        timeout=30,
    )
    assert done.status_code == 200, done.text
    poll = {"timeout": 0, "streamMode": "debug"}
    events = (await client.get(f"/runs/{run_path}/events/poll", params=poll, headers=ALICE_BEARER)).json()[
        "events"
    ]
    state = (await client.get(f"/langgraph/threads/{tid}", headers=ALICE)).json()
    assert state["status"] == "idle" and state["values"] == done.json()
    resolved = [e["payload"] for e in events if e["type"] == "interrupt.resolved"]
    assert len(resolved) == 1 and "alice" in str(resolved[0])
    return asked.json(), done.json(), tid, [e["type"] for e in events]


@pytest.mark.parametrize("wait_drives", [16, 0])
async def test_runs_wait_drives_its_run_when_a_drive_thread_is_free(db_url: str, wait_drives: int) -> None:
    host = WopHost.from_url(db_url)
    host.register("mail", _graph())
    try:
        settings = make_settings(db_url, workers=2, langgraph_wait_drives=wait_drives)
        async with serving(create_app(host, settings)) as client:
            asked, done, _, types = await _cycle(client)
    finally:
        host.saver.close()
    (pending,) = asked["__interrupt__"]
    assert pending["value"]["send_to"] == "ops@example.com" and pending["id"]
    assert done["decision"] == "send" and "__interrupt__" not in done
    # The ask node ran twice (to the interrupt, then again on the resume), send once.
    ran_on = (pending["value"]["asked_on"], done["asked_on"], done["sent_on"])
    assert [name.startswith("wop-worker-") for name in ran_on] == [not wait_drives] * 3
    assert types[0] == "run.started" and types[-1] == "run.completed"
    assert types.count("interrupt.requested") == 1 and types.count("interrupt.resolved") == 1


async def test_a_runs_wait_that_completed_its_run_answers_without_reading_its_state(db_url: str) -> None:
    # The drive hands back the final state it wrote (the run's outputs): the answer is that,
    # with no checkpoint read after the drive (the drive's own read, with its claim, is one).
    from tests.host.test_final_state import checkpoint_reads

    host = WopHost.from_url(db_url)
    host.register("mail", _graph())
    try:
        async with serving(create_app(host, make_settings(db_url, workers=2))) as client:
            created = await client.post("/langgraph/threads", json={}, headers=ALICE)
            tid = created.json()["thread_id"]
            url = f"/langgraph/threads/{tid}/runs/wait"
            asked = await client.post(
                url, json={"assistant_id": "mail", "input": {"to": "a@example.com"}}, headers=ALICE
            )
            assert "__interrupt__" in asked.json(), asked.text
            with checkpoint_reads() as reads:
                done = await client.post(
                    url,
                    json={"assistant_id": "mail", "command": {"resume": {"action": "send"}}},
                    headers=ALICE,
                )
            state = (await client.get(f"/langgraph/threads/{tid}/state", headers=ALICE)).json()
    finally:
        host.saver.close()
    assert done.status_code == 200, done.text
    assert done.json() == state["values"] and done.json()["decision"] == "send"
    assert reads[0] == 1


async def test_a_langgraph_run_that_suspends_is_not_looked_up_for_a_callback(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its runs are created with no callbackUrl (which never changes): the callback delivery
    # does not read the run's row to learn it, as it does for a run created elsewhere.
    from wop_langgraph.server import callbacks

    looked: list[str] = []
    original = callbacks.callback_url_of

    def counted(conn: Any, run_id: str) -> str | None:
        looked.append(run_id)
        return original(conn, run_id)

    monkeypatch.setattr(callbacks, "callback_url_of", counted)
    host = WopHost.from_url(db_url)
    host.register("mail", _graph())
    try:
        app = create_app(host, make_settings(db_url, workers=2))
        async with serving(app) as client:
            tid = (await client.post("/langgraph/threads", json={}, headers=ALICE)).json()["thread_id"]
            asked = await client.post(
                f"/langgraph/threads/{tid}/runs/wait",
                json={"assistant_id": "mail", "input": {"to": "a@example.com"}},
                headers=ALICE,
            )
            assert "__interrupt__" in asked.json(), asked.text
            run_id = asked.headers["content-location"].rsplit("/", 1)[-1].replace("~2F", "/")
            app.state.wop.delivery.deliver_run(run_id)  # a run created elsewhere is looked up
            await asyncio.sleep(0.3)  # (the delivery thread had its chance)
    finally:
        host.saver.close()
    assert looked == [run_id]


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_a_resume_reads_its_thread_and_the_pending_interrupts_in_one_round_trip(db_url: str) -> None:
    # What the resume answers is read with the thread (one pipeline), not after it.
    from tests.round_trips import statements

    host = WopHost.from_url(db_url)
    host.register("mail", _graph())
    try:
        app = create_app(host, make_settings(db_url, workers=2))
        (mount,) = [r for r in app.routes if getattr(r, "path", None) == "/langgraph"]
        service = mount.app.state.langgraph  # type: ignore[attr-defined]
        alice = app.state.wop.api_keys.principals["alice-key"]
        async with serving(app) as client:
            tid = (await client.post("/langgraph/threads", json={}, headers=ALICE)).json()["thread_id"]
            url = f"/langgraph/threads/{tid}/runs/wait"
            await client.post(url, json={"assistant_id": "mail", "input": {"to": "a@x.org"}}, headers=ALICE)
            with statements() as seen:
                row, pending = await asyncio.to_thread(service._thread_with_pending, alice, tid)
            resume = {"assistant_id": "mail", "command": {"resume": {"action": "send"}}}
            done = await client.post(url, json=resume, headers=ALICE)
    finally:
        host.saver.close()
    assert pending is not None and [r.run_id for r in pending] == [row.run_id]
    assert len(seen) == 2 and all(piped for _, _, piped in seen), seen
    assert done.json()["decision"] == "send"


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
async def test_a_run_the_request_created_answers_its_interrupts_without_reading_which_are_pending(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its drive raised them and none was answered: all of the state's are pending. A join of
    # the same run (not created by its request) still reads which are.
    host = WopHost.from_url(db_url)
    host.register("mail", _graph())
    reads: list[str] = []
    pending_interrupts = host.pending_interrupts

    def counted(run_id: str) -> Any:
        reads.append(run_id)
        return pending_interrupts(run_id)

    monkeypatch.setattr(host, "pending_interrupts", counted)
    try:
        app = create_app(host, make_settings(db_url, workers=2))
        async with serving(app) as client:
            tid = (await client.post("/langgraph/threads", json={}, headers=ALICE)).json()["thread_id"]
            asked = await client.post(
                f"/langgraph/threads/{tid}/runs/wait",
                json={"assistant_id": "mail", "input": {"to": "a@example.com"}},
                headers=ALICE,
            )
            assert reads == []
            location = asked.headers["content-location"]
            run_id = location.rsplit("/", 1)[-1].replace("~2F", "/")
            (stored,) = pending_interrupts(run_id)
            (doc,) = asked.json()["__interrupt__"]
            assert doc["id"] == stored.lg_interrupt_id
            assert doc["value"]["send_to"] == "a@example.com"
            run = (await client.get(f"/langgraph/threads/{tid}/runs", headers=ALICE)).json()[0]["run_id"]
            joined = await client.get(f"/langgraph/threads/{tid}/runs/{run}/join", headers=ALICE)
            assert joined.json()["__interrupt__"] == [doc]
            assert reads == [run_id]
    finally:
        host.saver.close()
