"""The same LangGraph SDK flows against ``wop-langgraph serve`` and against LangGraph's own
``langgraph dev`` (``langgraph-cli[inmem]``), both serving ``langgraph_compare/langgraph.json``;
prints what each server did and marks where they differ.

Flows (LangGraph's Python SDK, unchanged; raw HTTP where a status code is the observation): the
agent-chat-ui flow (stream ``values`` + ``messages-tuple`` to a ``HumanInTheLoopMiddleware``
interrupt, approve, a second turn; a batch with one call approved and one rejected), the Agent
Inbox flow (search interrupted threads by ``graph_id``, accept; ignore), regenerate and edit (runs
from a checkpoint), two interrupts answered
by id (and a plain value while both wait), eight concurrent resumes, cancel, ``enqueue``, and
the stream modes. Each observation is a value both servers are asked for; a differing value is
a difference in behaviour, not a guess. Not a test: it documents (docs/langgraph-api.md).

    python benchmarks/langgraph_dev_compare.py            # SQLite; --db URL for another database
"""

from __future__ import annotations

import argparse
import concurrent.futures
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from _reference import COMPARE_CONFIG, COMPARE_KEY, langgraph_dev, wop_serve

Observations = dict[str, Any]
HEADERS = {"x-api-key": COMPARE_KEY}
EMAIL = {"messages": [{"role": "user", "content": "email"}]}
APPROVE = {"decisions": [{"type": "approve"}]}


def _texts(values: Any, kind: str) -> list[str]:
    return [str(m["content"]) for m in (values or {}).get("messages", []) if m["type"] == kind]


def _executed(values: Any) -> list[str]:
    return sorted(
        str(m["name"])
        for m in (values or {}).get("messages", [])
        if m["type"] == "tool" and str(m["content"]).startswith("EXECUTED")
    )


def _settle(client: SyncLangGraphClient, thread_id: str) -> dict[str, Any]:
    """The thread once it is no longer busy (at most 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        thread = dict(client.threads.get(thread_id))
        if thread["status"] != "busy" or time.monotonic() > deadline:
            return thread
        time.sleep(0.1)


def chat_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(thread_id, "chat-agent", input=EMAIL, stream_mode=["values", "messages-tuple"])
    )
    thread = client.threads.get(thread_id)
    last_values = [p.data for p in parts if p.event == "values"][-1]
    done = client.runs.wait(thread_id, "chat-agent", command={"resume": APPROVE})
    second = client.runs.wait(
        thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "hello"}]}
    )
    return {
        "stream events": " ".join(dict.fromkeys(p.event for p in parts)),
        "last values is __interrupt__": "__interrupt__" in last_values,
        "thread status at interrupt": thread["status"],
        "pending interrupts": sum(len(v) for v in thread["interrupts"].values()),
        "metadata.graph_id": thread["metadata"].get("graph_id"),
        "approved tool ran": _executed(done),
        "second turn sees the first": _texts(second, "ai")[-1][:6],
        "runs on the thread": len(client.runs.list(thread_id)),
    }


def batch_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "chat-agent", input={"messages": [{"role": "user", "content": "batch"}]})
    decisions = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "keep it"}]}
    done = client.runs.wait(thread_id, "chat-agent", command={"resume": decisions})
    return {"executed (send_email approved, delete_file rejected)": _executed(done)}


def branch_flow(client: SyncLangGraphClient, api: str) -> Observations:
    """agent-chat-ui's regenerate and edit: runs from the parent checkpoint of the state a
    message first appears in (the thread's history)."""
    thread_id = client.threads.create()["thread_id"]
    for text in ("hello", "and again"):
        client.runs.wait(thread_id, "chat-agent", input={"messages": [{"role": "user", "content": text}]})
    history = client.threads.get_history(thread_id, limit=50)

    def parent_of_first(content: str) -> Any:
        seen = [s for s in history if any(m["content"] == content for m in s["values"].get("messages", []))]
        return seen[-1]["parent_checkpoint"]

    regenerated = client.runs.wait(
        thread_id, "chat-agent", input=None, checkpoint=parent_of_first("turn 2: you said 'and again'")
    )
    edited = client.runs.wait(
        thread_id,
        "chat-agent",
        input={"messages": [{"role": "user", "content": "hi"}]},
        checkpoint=parent_of_first("hello"),
    )
    return {
        "regenerate: the messages after": [str(m["content"])[:9] for m in regenerated["messages"]],
        "edit of the first: the messages after": [str(m["content"])[:9] for m in edited["messages"]],
        "thread status after": client.threads.get(thread_id)["status"],
    }


def inbox_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "inbox-email", input={"to": "ops@example.com", "body": "hi"})
    client.runs.join(thread_id, run["run_id"])
    found = client.threads.search(metadata={"graph_id": "inbox-email"}, status="interrupted", limit=100)
    thread = client.threads.get(thread_id)
    value = next(iter(thread["interrupts"].values()))[0]["value"]
    accepted = client.runs.wait(
        thread_id, "inbox-email", command={"resume": [{"type": "accept", "args": None}]}
    )
    ignored_id = client.threads.create()["thread_id"]
    client.runs.wait(ignored_id, "inbox-email", input={"to": "x@example.com", "body": "b"})
    client.threads.update_state(ignored_id, None, as_node="__end__")
    ignored = _settle(client, ignored_id)
    return {
        "listed by graph_id + interrupted": any(t["thread_id"] == thread_id for t in found),
        "interrupt value keys": sorted(value[0] if isinstance(value, list) else value),
        "accept outcome": accepted.get("outcome") if isinstance(accepted, dict) else accepted,
        "ignore: thread status": ignored["status"],
        "ignore: last run status": client.runs.list(ignored_id)[0]["status"],
        "ignore: pending interrupts": sum(len(v) for v in ignored["interrupts"].values()),
    }


def two_interrupts_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "two-questions", input={})
    client.runs.join(thread_id, run["run_id"])
    thread = client.threads.get(thread_id)
    pending = {i["value"]["question"]: i["id"] for docs in thread["interrupts"].values() for i in docs}
    plain = httpx.post(
        f"{api}/threads/{thread_id}/runs/wait",
        headers=HEADERS,
        json={"assistant_id": "two-questions", "command": {"resume": "x"}},
        timeout=60,
    )
    after_plain = _settle(client, thread_id)
    by_id = {pending["first?"]: "a", pending["second?"]: "b"} if len(pending) == 2 else {}
    answered = client.runs.wait(thread_id, "two-questions", command={"resume": by_id}, raise_error=False)
    return {
        "pending at once": len(pending),
        "plain value while two wait: HTTP": plain.status_code,
        "plain value: answer": str(plain.json())[:60],
        "plain value: thread status after": after_plain["status"],
        "answered by id": sorted((answered or {}).get("answers", []))
        if isinstance(answered, dict)
        else answered,
    }


def concurrent_resume_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "chat-agent", input=EMAIL)
    body = {"assistant_id": "chat-agent", "command": {"resume": APPROVE}}

    def resume(_: int) -> int:
        with httpx.Client(timeout=60) as http:
            return http.post(f"{api}/threads/{thread_id}/runs", headers=HEADERS, json=body).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = Counter(pool.map(resume, range(8)))
    time.sleep(1.0)
    thread = _settle(client, thread_id)
    statuses = Counter(r["status"] for r in client.runs.list(thread_id))
    return {
        "HTTP codes of 8 resumes": dict(sorted(codes.items())),
        "send_email executions": len(_executed(thread["values"])),
        "run statuses": dict(sorted(statuses.items())),
        "thread status after": thread["status"],
    }


def cancel_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "slow", input={})
    deadline = time.monotonic() + 10
    while client.runs.get(thread_id, run["run_id"])["status"] != "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.perf_counter()
    client.runs.cancel(thread_id, run["run_id"], wait=True)
    took = time.perf_counter() - started
    thread = _settle(client, thread_id)
    return {
        "run status after cancel": client.runs.get(thread_id, run["run_id"])["status"],
        "thread status after cancel": thread["status"],
        "node's result committed": "done" in (thread["values"] or {}),
        "cancel with wait took < 5 s": took < 5,
    }


def enqueue_flow(client: SyncLangGraphClient, api: str) -> Observations:
    thread_id = client.threads.create()["thread_id"]
    client.runs.create(thread_id, "journal", input={"entries": ["a"]})
    queued = client.runs.create(thread_id, "journal", input={"entries": ["b"]}, multitask_strategy="enqueue")
    rejected = httpx.post(
        f"{api}/threads/{thread_id}/runs",
        headers=HEADERS,
        json={"assistant_id": "journal", "input": {"entries": ["c"]}, "multitask_strategy": "reject"},
        timeout=60,
    )
    client.runs.join(thread_id, queued["run_id"])
    behind = client.threads.create()["thread_id"]
    client.runs.wait(behind, "chat-agent", input=EMAIL)
    waiting = client.runs.create(
        behind,
        "chat-agent",
        input={"messages": [{"role": "user", "content": "hello"}]},
        multitask_strategy="enqueue",
    )
    time.sleep(1.5)
    return {
        "queued run's status": queued["status"],
        "reject while one is queued: HTTP": rejected.status_code,
        "entries after both": client.threads.get(thread_id)["values"]["entries"],
        "behind an interrupt: queued run's status": client.runs.get(behind, waiting["run_id"])["status"],
        "behind an interrupt: thread status": client.threads.get(behind)["status"],
    }


def stream_modes_flow(client: SyncLangGraphClient, api: str) -> Observations:
    out: Observations = {}
    for mode in ("custom", "events", "debug", "messages", "tasks", "checkpoints", "updates"):
        graph, value = ("chat-agent", {"messages": [{"role": "user", "content": "hi"}]})
        if mode not in ("messages",):
            graph, value = "journal", {"entries": ["a"]}
        thread_id = client.threads.create()["thread_id"]
        events = [p.event for p in client.runs.stream(thread_id, graph, input=value, stream_mode=mode)]
        counts = Counter(e for e in events if e != "metadata")
        out[f"{mode}: events"] = dict(sorted(counts.items()))
    return out


FLOWS: list[tuple[str, Callable[[SyncLangGraphClient, str], Observations]]] = [
    ("chat", chat_flow),
    ("batch", batch_flow),
    ("branch", branch_flow),
    ("inbox", inbox_flow),
    ("two interrupts", two_interrupts_flow),
    ("concurrent resume", concurrent_resume_flow),
    ("cancel", cancel_flow),
    ("enqueue", enqueue_flow),
    ("stream modes", stream_modes_flow),
]


def observe(api: str) -> dict[str, Observations]:
    results: dict[str, Observations] = {}
    with get_sync_client(url=api, api_key=COMPARE_KEY) as client:
        for name, flow in FLOWS:
            try:
                results[name] = flow(client, api)
            except Exception as exc:  # a flow that breaks is itself an observation
                results[name] = {"flow failed": repr(exc)[:120]}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="the database of wop-langgraph serve (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wop-compare-") as folder:
        db = args.db or f"sqlite:///{folder}/compare.db"
        with wop_serve(COMPARE_CONFIG, db) as api:
            ours = observe(api)
    with langgraph_dev(COMPARE_CONFIG) as (api, _):
        theirs = observe(api)
    print(f"{'flow':<18} {'observation':<52} {'wop-langgraph serve':<34} {'langgraph dev':<34} same")
    differing = 0
    for name, _ in FLOWS:
        keys = list(dict.fromkeys([*ours.get(name, {}), *theirs.get(name, {})]))
        for key in keys:
            a, b = ours.get(name, {}).get(key, "-"), theirs.get(name, {}).get(key, "-")
            same = a == b
            differing += not same
            print(f"{name:<18} {key:<52} {a!s:<34} {b!s:<34} {'yes' if same else 'NO'}")
    print(f"{differing} observation(s) differ")


if __name__ == "__main__":
    main()
