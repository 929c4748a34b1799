"""Fork and replay (``WopHost.fork``) on real graphs, on SQLite and PostgreSQL.

Replay re-delivers the source's recorded answers (no new ``interrupt.requested``, the
resolution copied, rejection and timeout derived from the record) and never performs a
side effect again; a branch asks again and runs effects. ``fromSeq`` is checked against the log.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.host._graphs import ALICE, approval_graph, count
from tests.host._support import events, of_type, payloads, start
from wop_langgraph.definitions import NodeInvocation, NodeType, default_node_types, register_definition
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.fork import ForkPointInvalid
from wop_langgraph.protocol.errors import (
    IdTenantMismatch,
    InterruptAlreadyResolved,
    NotFound,
    ValidationError,
)

EVE = Principal("other", "eve", frozenset({"runs:create", "runs:read"}))
_ASKED = ("interrupt.requested", "approval.requested", "node.suspended")


def seq_of(docs: list[dict[str, Any]], event_type: str, index: int = 0) -> int:
    return int(of_type(docs, event_type)[index]["sequence"])


def rejected_run(host: WopHost) -> tuple[str, list[dict[str, Any]]]:
    run_id, _ = start(host, approval_graph())
    host.resolve(run_id, "review", {"action": "reject", "feedback": "not yet"}, ALICE)
    assert host.snapshot(run_id)["status"] == "failed"
    return run_id, events(host, run_id)


def assert_copied_resolution(source: dict[str, Any], fork: dict[str, Any], *fields: str) -> None:
    for name in fields:
        assert fork.get(name) == source.get(name), name


def assert_fails_like_a_rejection(host: WopHost, fork_id: str) -> list[dict[str, Any]]:
    docs = events(host, fork_id)
    (node_failed,) = payloads(docs, "node.failed")
    assert (node_failed["nodeId"], node_failed["error"]["code"]) == ("review", "approval_rejected")
    assert node_failed["error"]["retryable"] is False
    (run_failed,) = payloads(docs, "run.failed")
    assert (run_failed["failedNodeId"], run_failed["error"]["code"]) == ("review", "approval_rejected")
    assert host.snapshot(fork_id)["error"]["code"] == "approval_rejected"
    return docs


def test_replay_at_the_resolution_derives_the_rejection_from_the_record(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    from_seq = seq_of(source, "interrupt.resolved")
    forked = host.fork(source_id, mode="replay", from_seq=from_seq, principal=ALICE)
    fork_id = forked["runId"]
    assert fork_id != source_id and forked["sourceRunId"] == source_id
    assert (forked["mode"], forked["fromSeq"], forked["status"]) == ("replay", from_seq, "failed")

    docs = assert_fails_like_a_rejection(host, fork_id)
    # The fixed history is the source's, event for event.
    assert [d["type"] for d in docs[:from_seq]] == [d["type"] for d in source[:from_seq]]
    assert [d["payload"].get("nodeId") for d in docs[:from_seq]] == [
        d["payload"].get("nodeId") for d in source[:from_seq]
    ]
    assert docs[0]["payload"]["owner"] == source[0]["payload"]["owner"]
    assert not [d for d in docs[from_seq:] if d["type"] in _ASKED]
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert_copied_resolution(
        payloads(source, "interrupt.resolved")[0], resolved, "action", "decision", "reason"
    )
    assert resolved["resolvedBy"] == payloads(source, "interrupt.resolved")[0]["resolvedBy"]
    assert count("write") == 1  # before fromSeq: fixed history, not run again
    assert count("publish") == 0
    (gate,) = host.interrupts(fork_id)
    assert gate.key.startswith(fork_id + ":") and gate.status == "resolved"
    assert host.snapshot(fork_id)["owner"] == host.snapshot(source_id)["owner"]
    with pytest.raises(InterruptAlreadyResolved):
        host.resolve(fork_id, "review", {"action": "accept"}, ALICE)


def test_replay_from_the_start_never_asks_the_resolved_gate_again(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    forked = host.fork(source_id, mode="replay", principal=ALICE)  # fromSeq defaults to 0
    assert forked["fromSeq"] == 0
    docs = assert_fails_like_a_rejection(host, forked["runId"])
    assert not [d for d in docs if d["type"] in _ASKED]
    assert [d["type"] for d in docs][:2] == ["run.started", "node.started"]
    (resolved,) = payloads(docs, "interrupt.resolved")
    assert_copied_resolution(
        payloads(source, "interrupt.resolved")[0], resolved, "action", "decision", "reason"
    )
    assert count("write") == 2  # a pure node re-executes live in a replay


def test_replay_of_a_timed_out_gate_copies_the_timeout(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(timeout=60))
    assert host.sweep(now=datetime.now(UTC) + timedelta(hours=1)) == 1
    source = events(host, run_id)
    recorded = payloads(source, "interrupt.resolved")[0]
    assert (recorded["action"], recorded["decision"], recorded["reason"]) == (
        "timeout",
        "rejected",
        "timeout",
    )

    for from_seq in (seq_of(source, "interrupt.resolved"), 0):
        forked = host.fork(run_id, mode="replay", from_seq=from_seq, principal=ALICE)
        docs = assert_fails_like_a_rejection(host, forked["runId"])
        assert not [d for d in docs[from_seq:] if d["type"] in _ASKED]
        (resolved,) = payloads(docs, "interrupt.resolved")
        assert_copied_resolution(recorded, resolved, "action", "decision", "reason", "resolvedBy")
        assert "resolvedBy" not in resolved
        (gate,) = host.interrupts(forked["runId"])
        assert gate.status == "expired"
        with pytest.raises(InterruptAlreadyResolved):
            host.resolve(forked["runId"], "review", {"action": "accept"}, ALICE)
    # The fork's gate was never asked, so no sweep can time it out again.
    assert host.sweep(now=datetime.now(UTC) + timedelta(hours=2)) == 0


def test_branch_asks_again_and_takes_a_new_answer(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    from_seq = seq_of(source, "interrupt.resolved")
    forked = host.fork(source_id, mode="branch", from_seq=from_seq, principal=ALICE)
    fork_id = forked["runId"]
    assert forked["status"] == "waiting-approval"
    assert host.snapshot(fork_id)["currentNodeId"] == "review"
    (gate,) = host.pending_interrupts(fork_id)
    assert gate.key.startswith(fork_id + ":")
    done = host.resolve(fork_id, "review", {"action": "accept"}, ALICE)
    assert done["status"] == "completed"
    docs = events(host, fork_id)
    assert payloads(docs, "interrupt.resolved")[0]["action"] == "accept"
    assert count("publish") == 1
    assert host.snapshot(source_id)["status"] == "failed"  # the source is untouched
    assert len(events(host, source_id)) == len(source)


def test_branch_before_the_gate_asks_it_anew(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    from_seq = seq_of(source, "node.started", 1)  # review's start: write is fixed history
    forked = host.fork(source_id, mode="branch", from_seq=from_seq, principal=ALICE)
    docs = events(host, forked["runId"])
    assert forked["status"] == "waiting-approval"
    assert len(payloads(docs, "interrupt.requested")) == 1
    assert seq_of(docs, "interrupt.requested") >= from_seq
    assert count("write") == 1


def test_branch_overlay_replaces_run_options(host: WopHost) -> None:
    source_id, _source = rejected_run(host)
    forked = host.fork(
        source_id,
        mode="branch",
        from_seq=1,
        run_options_overlay={"tags": ["retry"], "metadata": {"why": "second look"}},
        principal=ALICE,
    )
    snapshot = host.snapshot(forked["runId"])
    assert (snapshot["tags"], snapshot["metadata"]) == (["retry"], {"why": "second look"})


def test_fork_points_and_requests_are_checked(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    terminal = seq_of(source, "run.failed")
    assert terminal == len(source) - 1
    with pytest.raises(ForkPointInvalid) as past:
        host.fork(source_id, mode="replay", from_seq=terminal + 1, principal=ALICE)
    assert (past.value.status, past.value.code) == (422, "fork_point_invalid")
    with pytest.raises(ValidationError):
        host.fork(source_id, mode="replay", from_seq=1, run_options_overlay={"tags": ["x"]}, principal=ALICE)
    with pytest.raises(ValidationError):
        host.fork(source_id, mode="branch", principal=ALICE)
    with pytest.raises(ValidationError):
        host.fork(source_id, mode="rerun", from_seq=1, principal=ALICE)
    with pytest.raises(ValidationError):
        host.fork(source_id, mode="branch", from_seq=-1, principal=ALICE)
    with pytest.raises(NotFound):
        host.fork(source_id + "x", mode="replay", principal=ALICE)
    with pytest.raises(IdTenantMismatch):
        host.fork(source_id, mode="replay", principal=EVE)
    # The terminal event itself is a valid point: the fork ends as the source did.
    forked = host.fork(source_id, mode="replay", from_seq=terminal, principal=ALICE)
    assert forked["status"] == "failed"

    waiting_id, _ = start(host, approval_graph())
    last = len(events(host, waiting_id)) - 1
    with pytest.raises(ForkPointInvalid):
        host.fork(waiting_id, mode="branch", from_seq=last + 1, principal=ALICE)


# -- side effects ----------------------------------------------------------------------------------

FIRED: list[str] = []


def _charge(invocation: NodeInvocation) -> dict[str, Any]:
    FIRED.append(invocation.node_id)
    if invocation.inputs.get("fail"):
        raise ValidationError("the card was declined")
    return {"charged": len(FIRED)}


def _effect_definition(workflow_id: str) -> dict[str, Any]:
    return {
        "id": workflow_id,
        "name": "charge then approve",
        "version": "1.0",
        "nodes": [
            {"id": "charge", "typeId": "test.charge", "config": {}, "inputs": {}},
            {
                "id": "gate",
                "typeId": "core.approvalGate",
                "config": {"title": "Ship it?"},
                "inputs": {},
            },
        ],
        "edges": [{"id": "e1", "sourceNodeId": "charge", "targetNodeId": "gate"}],
        "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
        "variables": [],
    }


def _effect_host(host: WopHost, workflow_id: str) -> None:
    types = default_node_types()
    types.register(NodeType("test.charge", _charge, side_effecting=True))
    register_definition(host, _effect_definition(workflow_id), types)


def test_replay_never_fires_a_side_effect_and_branch_does(host: WopHost) -> None:
    FIRED.clear()
    _effect_host(host, "charge-flow")
    source_id = host.create_run("charge-flow", {}, owner=ALICE)["runId"]
    host.resolve(source_id, "gate", {"action": "accept"}, ALICE)
    source = events(host, source_id)
    assert FIRED == ["charge"]
    recorded = next(p for p in payloads(source, "node.completed") if p["nodeId"] == "charge")

    replayed = host.fork(source_id, mode="replay", principal=ALICE)
    assert replayed["status"] == "completed"
    assert FIRED == ["charge"]  # not performed again
    docs = events(host, replayed["runId"])
    mine = next(p for p in payloads(docs, "node.completed") if p["nodeId"] == "charge")
    assert mine["outputs"] == recorded["outputs"] == {"charged": 1}

    branched = host.fork(source_id, mode="branch", from_seq=1, principal=ALICE)
    assert branched["status"] == "waiting-approval"
    assert FIRED == ["charge", "charge"]  # a branch's effects are new facts


def test_replay_fails_closed_without_a_recorded_outcome(host: WopHost) -> None:
    FIRED.clear()
    _effect_host(host, "charge-flow-2")
    source_id = host.create_run("charge-flow-2", {}, owner=ALICE, wait=False)["runId"]
    host.cancel(source_id)  # cancelled before any worker ran the effect
    assert FIRED == []
    forked = host.fork(source_id, mode="replay", principal=ALICE)
    assert forked["status"] == "failed"
    assert FIRED == []
    docs = events(host, forked["runId"])
    (failed,) = payloads(docs, "node.failed")
    assert (failed["nodeId"], failed["error"]["code"]) == ("charge", "replay_source_missing")
    assert failed["error"]["retryable"] is False
    assert host.snapshot(forked["runId"])["error"]["code"] == "replay_source_missing"


def _loop_definition(workflow_id: str) -> dict[str, Any]:
    """start -> charge -> wait (core.delay) -> back to charge, so charge executes twice."""
    return {
        "id": workflow_id,
        "name": "charge, wait, charge again",
        "version": "1.0",
        "nodes": [
            {"id": "start", "typeId": "core.noop", "config": {}, "inputs": {}},
            {"id": "charge", "typeId": "test.charge", "config": {}, "inputs": {}},
            {
                "id": "wait",
                "typeId": "core.delay",
                "config": {},
                "inputs": {"delayMs": {"type": "static", "value": 20}},
            },
        ],
        "edges": [
            {"id": "e1", "sourceNodeId": "start", "targetNodeId": "charge", "triggerRule": "any_success"},
            {"id": "e2", "sourceNodeId": "charge", "targetNodeId": "wait"},
            {"id": "e3", "sourceNodeId": "wait", "targetNodeId": "charge", "triggerRule": "any_success"},
        ],
        "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
        "variables": [],
        "settings": {"maxLoopbackIterations": 2},
    }


def _outcomes(docs: list[dict[str, Any]], node_id: str) -> list[tuple[str, Any]]:
    return [
        (d["type"], d["payload"].get("outputs"))
        for d in docs
        if d.get("nodeId") == node_id and d["type"] in ("node.completed", "node.failed")
    ]


def test_replay_resolves_each_execution_of_a_looped_effect_by_its_ordinal(host: WopHost) -> None:
    FIRED.clear()
    types = default_node_types()
    types.register(NodeType("test.charge", _charge, side_effecting=True))
    register_definition(host, _loop_definition("charge-loop"), types)
    source_id = host.create_run("charge-loop", {}, owner=ALICE)["runId"]
    assert host.snapshot(source_id)["status"] == "completed"
    assert FIRED == ["charge", "charge"]
    source = events(host, source_id)
    # One recorded outcome per execution, each its own.
    assert _outcomes(source, "charge") == [
        ("node.completed", {"charged": 1}),
        ("node.completed", {"charged": 2}),
    ]
    assert _outcomes(source, "wait") == [("node.completed", {}), ("node.completed", {})]

    replayed = host.fork(source_id, mode="replay", principal=ALICE)  # from the start
    assert replayed["status"] == "completed"
    assert FIRED == ["charge", "charge"]  # neither execution performed again
    docs = events(host, replayed["runId"])
    # Execution n takes the n-th recorded outcome: the second gets {"charged": 2}, not the first's.
    assert _outcomes(docs, "charge") == _outcomes(source, "charge")
    # The timer re-executed live both times, with the recorded outcome (nothing diverged).
    assert _outcomes(docs, "wait") == _outcomes(source, "wait")
    assert [d.get("nodeId") for d in docs if d["type"] == "node.started"] == [
        d.get("nodeId") for d in source if d["type"] == "node.started"
    ]
    assert not payloads(docs, "replay.diverged")
    assert not payloads(docs, "node.failed")
    assert payloads(docs, "run.completed")[0]["outputs"] == payloads(source, "run.completed")[0]["outputs"]


def test_every_fork_point_of_an_accepted_run_replays_to_the_same_end(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    source = events(host, run_id)
    outputs = payloads(source, "run.completed")[0]["outputs"]
    answered = seq_of(source, "interrupt.resolved")
    for from_seq in range(len(source)):
        replayed = host.fork(run_id, mode="replay", from_seq=from_seq, principal=ALICE)
        assert replayed["status"] == "completed", from_seq
        docs = events(host, replayed["runId"])
        assert payloads(docs, "run.completed")[0]["outputs"] == outputs, from_seq
        if from_seq >= answered:  # the question is fixed history: the log is the source's, type for type
            assert [d["type"] for d in docs] == [d["type"] for d in source], from_seq
            assert [d.get("nodeId") for d in docs] == [d.get("nodeId") for d in source], from_seq
        else:
            assert not [d for d in docs[from_seq:] if d["type"] in _ASKED], from_seq

        branched = host.fork(run_id, mode="branch", from_seq=from_seq, principal=ALICE)
        expected = "completed" if from_seq > answered else "waiting-approval"
        assert branched["status"] == expected, from_seq


DRAWS: list[int] = []


def _draw(invocation: NodeInvocation) -> dict[str, Any]:
    DRAWS.append(len(DRAWS) + 1)
    return {"value": DRAWS[-1]}


def test_a_replayed_node_with_another_outcome_is_reported_and_the_run_goes_on(host: WopHost) -> None:
    DRAWS.clear()
    types = default_node_types()
    types.register(NodeType("test.draw", _draw))  # pure, but not deterministic
    document = {
        "id": "draw-flow",
        "name": "draw",
        "version": "1.0",
        "nodes": [
            {"id": "draw", "typeId": "test.draw", "config": {}, "inputs": {}},
            {"id": "done", "typeId": "core.noop", "config": {}, "inputs": {}},
        ],
        "edges": [{"id": "e1", "sourceNodeId": "draw", "targetNodeId": "done"}],
        "triggers": [{"id": "manual", "type": "manual", "enabled": True}],
        "variables": [],
    }
    register_definition(host, document, types)
    source_id = host.create_run("draw-flow", {}, owner=ALICE)["runId"]
    source = events(host, source_id)
    original = next(d for d in source if d["type"] == "node.completed" and d["nodeId"] == "draw")

    replayed = host.fork(source_id, mode="replay", principal=ALICE)
    assert replayed["status"] == "completed"  # divergence is reported, never fatal
    docs = events(host, replayed["runId"])
    (diverged,) = payloads(docs, "replay.diverged")
    assert diverged == {
        "sourceRunId": source_id,
        "atSequence": original["sequence"],
        "originalEventId": original["eventId"],
        "divergenceKind": "output",
        "divergencePoint": "node.completed",
    }
    assert DRAWS == [1, 2]

    # A replay whose node draws what the source drew reports nothing.
    DRAWS.clear()  # the next draw is 1 again, as recorded
    again = host.fork(source_id, mode="replay", principal=ALICE)
    assert not payloads(events(host, again["runId"]), "replay.diverged")


async def test_afork_is_the_async_twin(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    forked = await host.afork(
        source_id, mode="replay", from_seq=seq_of(source, "interrupt.resolved"), principal=ALICE
    )
    assert forked["status"] == "failed"
    assert (await host.asnapshot(forked["runId"]))["error"]["code"] == "approval_rejected"


def test_a_fork_point_whose_state_was_pruned_is_refused(host: WopHost) -> None:
    source_id, source = rejected_run(host)
    host.saver.prune([source_id])  # keeps only the latest checkpoint
    with pytest.raises(ForkPointInvalid) as refused:
        host.fork(source_id, mode="branch", from_seq=1, principal=ALICE)
    assert refused.value.details == {"sourceRunId": source_id, "fromSeq": 1}
    # A point the latest checkpoint still covers forks as before; so does a replay from the start.
    assert (
        host.fork(source_id, mode="replay", from_seq=len(source) - 1, principal=ALICE)["status"] == "failed"
    )
    assert host.fork(source_id, mode="replay", principal=ALICE)["status"] == "failed"


def _answer_all(host: WopHost, run_id: str) -> None:
    """Answer every pending interrupt (accept an approval, answer a question) until the run ends."""
    for _ in range(20):
        pending = host.pending_interrupts(run_id)
        if not pending:
            return
        gate = pending[0]
        if gate.kind == "approval":
            value: Any = {"action": "accept"}
        else:
            value = {"answers": {q["id"]: "yes" for q in gate.payload["data"]["questions"]}}
        host.resolve(run_id, gate.node_id, value, ALICE, key=gate.key)
    raise AssertionError("the run kept asking")


@pytest.mark.parametrize("name", ["parallel", "subgraph", "send", "loop", "two_asks"])
def test_every_fork_point_of_other_topologies(host: WopHost, name: str) -> None:
    from tests.host import _graphs

    graph = {
        "parallel": _graphs.parallel_graph,
        "subgraph": _graphs.subgraph_graph,
        "send": lambda: _graphs.send_graph(["a", "b"]),
        "loop": _graphs.loop_graph,
        "two_asks": _graphs.two_asks_graph,
    }[name]()
    run_id, _ = start(host, graph)
    _answer_all(host, run_id)
    source = events(host, run_id)
    assert host.snapshot(run_id)["status"] == "completed"
    outputs = payloads(source, "run.completed")[0]["outputs"]
    for from_seq in range(len(source)):
        replayed = host.fork(run_id, mode="replay", from_seq=from_seq, principal=ALICE)
        assert replayed["status"] == "completed", (name, from_seq)
        docs = events(host, replayed["runId"])
        assert payloads(docs, "run.completed")[0]["outputs"] == outputs, (name, from_seq)
        assert not [d for d in docs[from_seq:] if d["type"] == "interrupt.requested"], (name, from_seq)

        branched = host.fork(run_id, mode="branch", from_seq=from_seq, principal=ALICE)
        _answer_all(host, branched["runId"])
        assert host.snapshot(branched["runId"])["status"] == "completed", (name, from_seq)
