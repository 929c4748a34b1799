"""One graph, written with the node API, gives the same results under plain LangGraph and WopHost.

Every node API function is run by plain LangGraph (``graph.invoke`` and ``graph.ainvoke``, on
``InMemorySaver`` and on our SQLModel savers over a SQLite file) and the very same compiled graph
object is registered with :class:`WopHost`. Both are fed the same resume values, valid and
invalid; at every step they must suspend with the same payloads, refuse the same values with the
same ``ValidationError`` (message and path), and end with the same state or the same error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.host._support import HostFactory
from tests.nodes import _graphs as g
from tests.nodes._trace import Step, arun_plain, plain_config, run_host, run_plain
from wop_langgraph.store.saver import AsyncSQLModelSaver, SQLModelSaver

APPROVAL_BAD: list[Any] = [
    {"action": "nope"},
    {"action": "accept", "extra": 1},
    "accept",
    {"action": "timeout"},
    {"action": "refine"},
    {"action": "accept", "decidedAt": "yesterday"},
    {"action": "accept", "feedback": float("nan")},
]
ALL_ACTIONS = ["accept", "reject", "refine", "edit-accept", "ask"]
GOOD_ANSWERS = {"answers": {"colour": "red", "copies": 2}}


@dataclass(frozen=True)
class Scenario:
    """A node body, its input, the resume values sent in order and what must come of them."""

    body: g.Body
    values: list[Any]
    refused: int
    outcome: str
    result: Any = None
    inputs: dict[str, Any] = field(default_factory=dict)
    again: Callable[[g.State], bool] | None = None
    suspensions: int = 1
    state: dict[str, Any] = field(default_factory=dict)
    message: str = ""


#: Deciding values carry their decidedAt: the host stamps one on receipt when it is missing (and
#: records the stamped value), plain LangGraph passes the value through as given.
DECIDED_AT = "2026-12-02T10:00:00.000Z"

SCENARIOS: dict[str, Scenario] = {
    "approval-accept": Scenario(
        g.approval(),
        [*APPROVAL_BAD, {"action": "accept", "feedback": "ship it", "decidedAt": DECIDED_AT}],
        refused=len(APPROVAL_BAD),
        outcome="completed",
        result={
            "action": "accept",
            "decision": "granted",
            "feedback": "ship it",
            "refine_feedback": None,
            "edited_artifact_data": None,
            "votes": None,  # a single vote: no vote list
            "resume_value": {"action": "accept", "feedback": "ship it", "decidedAt": DECIDED_AT},
        },
    ),
    "approval-reject": Scenario(
        g.approval(),
        [{"action": "reject", "feedback": "no"}],
        refused=0,
        outcome="failed",
        result="approval_rejected",
        message="was rejected (reject)",
    ),
    # A malformed payload is refused in the node, before anything is asked, in both worlds.
    "approval-malformed-payload": Scenario(
        g.approval(actions=["accept", "approve-twice"]),
        [],
        refused=0,
        outcome="failed",
        result="validation_error",
        message="interrupt payload is invalid at /data/actions/1",
        suspensions=0,
    ),
    "approval-majority-reject": Scenario(
        g.approval(rejection_policy="majority"),
        [{"action": "reject"}],
        refused=0,
        outcome="failed",
        result="approval_rejected",
        message="was rejected (quorum-reject)",
    ),
    "approval-ask-then-edit": Scenario(
        g.approval(actions=ALL_ACTIONS, description="Check the wording.", timeout=3600, on_timeout="reject"),
        [
            {"action": "ask", "feedback": "why now?"},
            {"action": "edit-accept"},
            {
                "action": "edit-accept",
                "editedArtifactData": {"text": "better"},
                "decidedBy": "anyone",
                "decidedAt": DECIDED_AT,
            },
        ],
        refused=1,
        outcome="completed",
        result={
            "action": "edit-accept",
            "decision": "granted",
            "feedback": None,
            "refine_feedback": None,
            "edited_artifact_data": {"text": "better"},
            "votes": None,  # a single vote: no vote list
            "resume_value": {
                "action": "edit-accept",
                "editedArtifactData": {"text": "better"},
                "decidedBy": "anyone",
                "decidedAt": DECIDED_AT,
            },
        },
        suspensions=2,
    ),
    "approval-refine": Scenario(
        g.approval(actions=["accept", "refine"]),
        [
            {"action": "refine", "refineFeedback": {"scope": "bogus"}},
            {"action": "reject"},
            {
                "action": "refine",
                "refineFeedback": {"scope": "section", "sectionPath": "$.text", "text": "shorter"},
                "decidedAt": DECIDED_AT,
            },
        ],
        refused=2,
        outcome="completed",
        result={
            "action": "refine",
            "decision": None,
            "feedback": None,
            "refine_feedback": {"scope": "section", "sectionPath": "$.text", "text": "shorter"},
            "edited_artifact_data": None,
            "votes": None,  # a single vote: no vote list
            "resume_value": {
                "action": "refine",
                "refineFeedback": {"scope": "section", "sectionPath": "$.text", "text": "shorter"},
                "decidedAt": DECIDED_AT,
            },
        },
    ),
    "clarification": Scenario(
        g.clarification(),
        [
            {"answers": {"colour": "green", "copies": 2}},
            {"answers": {"colour": "red", "copies": 0}},
            {"answers": {"colour": "red"}},
            {"answers": {"colour": "red", "copies": 2, "extra": 1}},
            {"colour": "red", "copies": 2},
            GOOD_ANSWERS,
        ],
        refused=5,
        outcome="completed",
        result=GOOD_ANSWERS["answers"],
    ),
    "clarification-with-timeout": Scenario(
        g.clarification(timeout=3600),
        [GOOD_ANSWERS],
        refused=0,
        outcome="completed",
        result=GOOD_ANSWERS["answers"],
    ),
    "external-event": Scenario(
        g.external_event,
        [{"orderId": "o-2"}, ["o-1"], {"orderId": "o-1", "amount": 5}],
        refused=2,
        outcome="completed",
        result={"orderId": "o-1", "amount": 5},
    ),
    "low-confidence-replaced": Scenario(
        g.low_confidence,
        [{"decision": "x", "bogus": 1}, {"ratify": "yes"}, {"decision": "refund-half"}],
        refused=2,
        outcome="completed",
        result="refund-half",
        inputs={"decision": "refund", "confidence": 0.4},
    ),
    "low-confidence-ratified": Scenario(
        g.low_confidence,
        [{"ratify": True}],
        refused=0,
        outcome="completed",
        result="refund",
        inputs={"decision": "refund", "confidence": 0.4},
    ),
    "confident-agent": Scenario(
        g.low_confidence,
        [],
        refused=0,
        outcome="completed",
        result="refund",
        inputs={"decision": "refund", "confidence": 0.9},
        suspensions=0,
    ),
    "credential": Scenario(
        g.credential,
        [{"outcome": "maybe"}, {"outcome": "authorized", "token": "t"}, {"outcome": "declined"}],
        refused=2,
        outcome="completed",
        result="declined",
    ),
    "custom": Scenario(
        g.custom,
        [{"ok": "yes"}, {"ok": True, "more": 1}, {"ok": True}],
        refused=2,
        outcome="completed",
        result={"ok": True},
    ),
    "conversation": Scenario(
        g.chat,
        [{"text": ""}, {"text": "hi"}, {"text": "hi", "mood": 1}, {"text": "bye", "done": True}],
        refused=2,
        outcome="completed",
        again=g.chat_again,
        suspensions=2,
        state={"log": ["hi", "bye"], "done": True},
    ),
    "two-asks-in-one-node": Scenario(
        g.two_asks,
        [{"answers": {"a": 1}}, {"answers": {"a": "x"}}, {"answers": {"a": "y"}}, {"answers": {"b": "z"}}],
        refused=2,
        outcome="completed",
        result={"a": "x", "b": "z"},
        suspensions=2,
    ),
    "node-visited-twice": Scenario(
        g.loop_ask,
        [{"answers": {"q": "one"}}, {"answers": {"q": 2}}, {"answers": {"q": "two"}}],
        refused=1,
        outcome="completed",
        again=g.loop_again,
        suspensions=2,
        state={"log": ["one", "two"], "rounds": 2},
    ),
}

_CONVERSATION_ID = re.compile(r"^conv-[0-9a-f]{32}$")


def normalized(value: Any) -> Any:
    """``value`` with conversation ids (derived from the run's own ids) replaced by one marker."""
    if isinstance(value, str) and _CONVERSATION_ID.match(value):
        return "conv-*"
    if isinstance(value, (list, tuple)):
        return [normalized(v) for v in value]
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    return value


def check_expected(scenario: Scenario, trace: list[Step]) -> None:
    """The trace holds what the scenario promises, whichever way the graph ran."""
    kinds = [step[0] for step in trace]
    assert kinds.count("refused") == scenario.refused, trace
    assert kinds.count("suspended") == scenario.suspensions, trace
    assert kinds[-1] == scenario.outcome, trace
    for step in trace:
        if step[0] == "refused":
            assert step[2]["path"].startswith("/resumeValue") or step[2].get("schema"), step
            assert step[3], "a refused value leaves the interrupt pending"
    if scenario.outcome == "failed":
        assert trace[-1][1]["code"] == scenario.result
        assert scenario.message in trace[-1][1]["message"]
    elif scenario.result is not None:
        assert trace[-1][1]["result"] == scenario.result
    for name, expected in scenario.state.items():
        assert trace[-1][1][name] == expected, name


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_same_graph_same_results_everywhere(
    name: str, make_host: HostFactory, sqlmodel_saver: SQLModelSaver, async_sqlmodel_saver: AsyncSQLModelSaver
) -> None:
    scenario = SCENARIOS[name]
    memory = InMemorySaver()
    graph = g.build(name, scenario.body, checkpointer=memory, again=scenario.again)
    plain = run_plain(graph, scenario.inputs, scenario.values, plain_config())
    check_expected(scenario, plain)

    # The very same compiled object, registered unchanged, gets the same results from the host.
    host = make_host(conversations=True, credentials=True)
    _, hosted = run_host(host, graph, scenario.inputs, scenario.values)
    assert normalized(hosted) == normalized(plain)
    assert graph.checkpointer is memory, "registering must not change the user's graph"

    twins = {
        "sync on SQLModelSaver": run_plain(
            g.build(name, scenario.body, checkpointer=sqlmodel_saver, again=scenario.again),
            scenario.inputs,
            scenario.values,
            plain_config(),
        ),
        "async on InMemorySaver": await arun_plain(
            g.build(name, scenario.body, is_async=True, checkpointer=InMemorySaver(), again=scenario.again),
            scenario.inputs,
            scenario.values,
            plain_config(),
        ),
        "async on AsyncSQLModelSaver": await arun_plain(
            g.build(
                name, scenario.body, is_async=True, checkpointer=async_sqlmodel_saver, again=scenario.again
            ),
            scenario.inputs,
            scenario.values,
            plain_config(),
        ),
    }
    for label, trace in twins.items():
        assert normalized(trace) == normalized(hosted), label
