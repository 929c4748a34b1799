"""Deterministic, model-free LangGraph graphs shared by the host tests, and child-process entry points.

Every builder returns a freshly compiled graph (no checkpointer: ``WopHost.register`` binds its
own store). Nodes count their side effects in a process-wide counter (:func:`bump`,
:func:`count`) so a test can prove that a node ran past its gate exactly once.

Run as a module, this file is the child process of the crash-recovery tests::

    python -m tests.host._graphs <mode> <database-url>

It creates an approval run, prints the run id on the first line of stdout, then resolves the gate
and kills itself with ``SIGKILL`` at the point ``mode`` names (see :func:`main`).
"""

from __future__ import annotations

import operator
import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, RetryPolicy, Send

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.execution import Executor
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

TENANT = "acme"
ALICE = Principal(TENANT, "alice", frozenset({"approvals:respond", "runs:create"}))

#: Set in a child process: the approval node SIGKILLs its process right after its gate returns.
KILL_AFTER_GATE_ENV = "WOP_TEST_KILL_AFTER_GATE"


class State(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]
    result: Any
    rounds: int
    conversation: str
    done: bool
    decision: Any
    confidence: float | None
    item: str


_COUNTS: Counter[str] = Counter()
_COUNTS_LOCK = threading.Lock()


def bump(name: str) -> None:
    """Count one side effect named ``name``."""
    with _COUNTS_LOCK:
        _COUNTS[name] += 1


def count(name: str) -> int:
    """How many times ``name`` was bumped since the last :func:`reset_counts`."""
    with _COUNTS_LOCK:
        return _COUNTS[name]


def reset_counts() -> None:
    with _COUNTS_LOCK:
        _COUNTS.clear()


# -- approvals -------------------------------------------------------------------------------


def approval_graph(
    *,
    retry: bool = False,
    flaky: bool = False,
    kill_hook: bool = False,
    routed: bool = False,
    **approval: Any,
) -> Pregel:
    """``write -> review -> publish``; ``review`` holds a ``request_approval`` gate.

    ``revise`` has no incoming edge: only a rejection route reaches it. ``approval`` is passed to
    ``request_approval`` (actions, quorum settings, approvers, timeout, ...). ``retry`` gives
    ``review`` a ``RetryPolicy(max_attempts=3, retry_on=Exception)``; ``flaky`` makes ``review``
    raise a ``RuntimeError`` once, after its gate returned. ``routed`` makes ``review`` choose its
    successor itself (``Command(goto="publish")``, no static edge), as a gate with a rejection
    route must.
    """

    def write(state: State) -> State:
        bump("write")
        return {"log": ["write"]}

    def review(state: State) -> State:
        bump("review:run")
        decision = request_approval(
            "doc-1", "document", "Publish the draft?", artifact_data={"text": "draft"}, **approval
        )
        if kill_hook and os.environ.get(KILL_AFTER_GATE_ENV):
            os.kill(os.getpid(), signal.SIGKILL)
        if flaky and count("review:flaked") == 0:
            bump("review:flaked")
            raise RuntimeError("a transient failure after the gate")
        bump("review:past")
        update: State = {
            "log": ["review"],
            "result": {
                "action": decision.action,
                "decision": decision.decision,
                "feedback": decision.feedback,
                "refineFeedback": decision.refine_feedback,
                "editedArtifactData": decision.edited_artifact_data,
            },
        }
        return Command(goto="publish", update=update) if routed else update  # type: ignore[return-value]

    def publish(state: State) -> State:
        bump("publish")
        return {"log": ["publish"]}

    def revise(state: State) -> State:
        bump("revise")
        return {"log": ["revise"]}

    g = StateGraph(State)
    g.add_node("write", write)
    if retry:
        policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=Exception)
        g.add_node("review", review, retry_policy=policy)
    else:
        g.add_node("review", review)
    g.add_node("publish", publish)
    g.add_node("revise", revise)
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    if not routed:
        g.add_edge("review", "publish")
    g.add_edge("publish", END)
    g.add_edge("revise", END)
    return g.compile()


def parallel_graph() -> Pregel:
    """``START -> left, right -> join``: two gates suspend in the same step."""

    def gate(name: str) -> Any:
        def node(state: State) -> State:
            decision = request_approval(f"art-{name}", "document", f"Approve {name}?")
            bump(f"{name}:past")
            return {"log": [f"{name}:{decision.action}"]}

        return node

    return fan_in_graph(gate)


def fan_in_graph(branch: Any) -> Pregel:
    """``START -> left, right -> join``: ``branch(name)`` is the node of each branch, which
    run in the same step; ``join`` counts itself and logs ``join``."""

    def join(state: State) -> State:
        bump("join")
        return {"log": ["join"]}

    g = StateGraph(State)
    g.add_node("left", branch("left"))
    g.add_node("right", branch("right"))
    g.add_node("join", join)
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge(["left", "right"], "join")
    g.add_edge("join", END)
    return g.compile()


def subgraph_graph() -> Pregel:
    """A parent node ``parent`` that is a compiled subgraph whose node ``child`` holds a gate."""

    def child(state: State) -> State:
        decision = request_approval("art-sub", "document", "Approve the child step?")
        bump("child:past")
        return {"log": [f"child:{decision.action}"]}

    inner = StateGraph(State)
    inner.add_node("child", child)
    inner.add_edge(START, "child")
    inner.add_edge("child", END)

    def after(state: State) -> State:
        bump("after")
        return {"log": ["after"]}

    g = StateGraph(State)
    g.add_node("parent", inner.compile())
    g.add_node("after", after)
    g.add_edge(START, "parent")
    g.add_edge("parent", "after")
    g.add_edge("after", END)
    return g.compile()


def send_graph(items: Sequence[str]) -> Pregel:
    """``Send`` fan-out: one ``worker`` task per item, each holding its own gate."""

    def fan_out(state: State) -> list[Send]:
        return [Send("worker", {"item": item}) for item in items]

    def worker(state: State) -> State:
        item = state["item"]
        decision = request_approval(f"art-{item}", "document", f"Approve {item}?")
        bump(f"worker:{item}:past")
        return {"log": [f"{item}:{decision.action}"]}

    g = StateGraph(State)
    g.add_node("worker", worker)
    g.add_conditional_edges(START, fan_out, ["worker"])
    g.add_edge("worker", END)
    return g.compile()


def breakpoint_graph() -> Pregel:
    """A graph compiled with a static breakpoint (``interrupt_before``)."""

    def step(state: State) -> State:
        return {"log": ["step"]}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g.compile(interrupt_before=["step"])


# -- keys and replay -------------------------------------------------------------------------

QUESTION = {"id": "q", "question": "What now?", "schema": {"type": "string"}}


def loop_graph(rounds: int = 2) -> Pregel:
    """``gate`` asks a question and loops back over an edge to itself ``rounds`` times."""

    def gate(state: State) -> State:
        bump("gate:run")
        answers = ask([QUESTION])
        bump("gate:past")
        return {"log": [answers["q"]], "rounds": state.get("rounds", 0) + 1}

    def again(state: State) -> str:
        return "gate" if state.get("rounds", 0) < rounds else END

    g = StateGraph(State)
    g.add_node("gate", gate)
    g.add_edge(START, "gate")
    g.add_conditional_edges("gate", again, ["gate", END])
    return g.compile()


def two_asks_graph() -> Pregel:
    """One node that asks two questions in a row (two interrupts in one execution)."""

    def form(state: State) -> State:
        first = ask([{"id": "a", "question": "First?", "schema": {"type": "string"}}])
        second = ask([{"id": "b", "question": "Second?", "schema": {"type": "string"}}])
        bump("form:past")
        return {"result": {"a": first["a"], "b": second["b"]}}

    g = StateGraph(State)
    g.add_node("form", form)
    g.add_edge(START, "form")
    g.add_edge("form", END)
    return g.compile()


# -- other kinds -----------------------------------------------------------------------------

CLARIFY_QUESTIONS = [
    {"id": "colour", "question": "Which colour?", "schema": {"type": "string", "enum": ["red", "blue"]}},
    {"id": "copies", "question": "How many copies?", "schema": {"type": "integer", "minimum": 1}},
]


def single_node(name: str, body: Any) -> Pregel:
    """``START -> name -> END`` where ``name`` runs ``body(state)`` and stores its result."""

    def node(state: State) -> State:
        bump(f"{name}:run")
        value = body(state)
        bump(f"{name}:past")
        return {"result": value}

    g = StateGraph(State)
    g.add_node(name, node)
    g.add_edge(START, name)
    g.add_edge(name, END)
    return g.compile()


def clarification_graph(timeout: float | None = None) -> Pregel:
    return single_node("clarify", lambda state: ask(CLARIFY_QUESTIONS, timeout=timeout))


def external_event_graph() -> Pregel:
    return single_node("wait", lambda state: wait_for_event("payment.settled", {"orderId": "o-1"}))


_FROM_STATE: Any = object()


def low_confidence_graph(threshold: float | None = None, confidence: Any = _FROM_STATE) -> Pregel:
    """``agent`` escalates ``state["decision"]``; its confidence comes from the state unless given
    here (``NaN`` cannot travel through run inputs, which are JSON)."""

    def body(state: State) -> Any:
        observed = state.get("confidence") if confidence is _FROM_STATE else confidence
        return escalate_on_low_confidence("triage-agent", state["decision"], observed, threshold)

    return single_node("agent", body)


def credential_graph() -> Pregel:
    return single_node(
        "connect",
        lambda state: request_credential(
            "github", ["repo"], "missing", "https://host.example/oauth/connect/github"
        ),
    )


CUSTOM_RESUME_SCHEMA = {
    "type": "object",
    "required": ["ok"],
    "properties": {"ok": {"type": "boolean"}},
    "additionalProperties": False,
}


def custom_graph() -> Pregel:
    return single_node(
        "custom",
        lambda state: custom_interrupt("acme.review-sheet", {"sheet": 7}, resume_schema=CUSTOM_RESUME_SCHEMA),
    )


OUTCOME_SCHEMA = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1}, "done": {"type": "boolean"}},
    "additionalProperties": False,
}


def chat_graph() -> Pregel:
    """A chat loop: one ``exchange`` per graph step, an edge back to ``chat`` until an outcome says done."""

    def chat(state: State) -> State:
        bump("chat:run")
        conversation = state.get("conversation") or start_conversation(title="Support")
        turns = len(state.get("log", []))
        outcome = exchange(conversation, f"Turn {turns}: anything else?", OUTCOME_SCHEMA)
        bump("chat:past")
        update: State = {"conversation": conversation, "log": [outcome["text"]]}
        if outcome.get("done"):
            close_conversation(conversation, reason="done", turn_count=turns + 1)
            update["done"] = True
        return update

    def route(state: State) -> str:
        return END if state.get("done") else "chat"

    g = StateGraph(State)
    g.add_node("chat", chat)
    g.add_edge(START, "chat")
    g.add_conditional_edges("chat", route, ["chat", END])
    return g.compile()


# -- child process -------------------------------------------------------------------------

WORKFLOW = "approval"


def main(argv: Sequence[str]) -> int:
    """Child process of the crash tests: ``<mode> <url>``.

    Modes:
        ``kill-after-claim``: resolve the gate; the claim commits, then the process SIGKILLs itself
            before the graph is resumed, holding the run's lease (``Executor.drive_claimed`` is
            replaced in this process only).
        ``kill-after-queue``: resolve the gate without waiting (as the HTTP API does): the claim
            commits and queues the run, unleased; then the process SIGKILLs itself.
        ``kill-in-node``: resolve the gate; the graph resumes and the review node SIGKILLs the
            process right after its gate returned, before the step is saved.
    """
    mode, url = argv
    host = WopHost.from_url(url)
    host.register(WORKFLOW, approval_graph(kill_hook=True))
    snapshot = host.create_run(WORKFLOW, {"log": []}, owner=ALICE)
    print(snapshot["runId"], flush=True)
    if mode == "kill-after-claim":

        def die(self: Executor, run_id: str, claimed: object, hold: object = None) -> None:
            os.kill(os.getpid(), signal.SIGKILL)

        Executor.drive_claimed = die  # type: ignore[method-assign]
    elif mode == "kill-in-node":
        os.environ[KILL_AFTER_GATE_ENV] = "1"
    elif mode == "kill-after-queue":
        host.resolve(
            snapshot["runId"], "review", {"action": "accept", "feedback": "ship it"}, ALICE, wait=False
        )
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    host.resolve(snapshot["runId"], "review", {"action": "accept", "feedback": "ship it"}, ALICE)
    return 3  # unreachable: the process is dead by now


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
