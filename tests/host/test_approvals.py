"""Approval gates: accept, reject (failing, not retried, or routed), refine, edit-accept, quorum."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.host._graphs import ALICE, approval_graph, count, reset_counts
from tests.host._support import HostFactory, events, footprint, of_type, only_pending, payloads, start
from wop_langgraph.host import Membership, Principal, WopHost
from wop_langgraph.protocol.errors import Forbidden, InterruptAlreadyResolved, ValidationError

BOB = Principal("acme", "bob", frozenset({"approvals:respond"}))
CAROL = Principal("acme", "carol", frozenset({"approvals:respond"}))
DAVE = Principal("acme", "dave", frozenset({"approvals:respond"}))
ERIN = Principal("acme", "erin", frozenset({"approvals:respond"}))
MALLORY = Principal("acme", "mallory", frozenset({"approvals:respond"}))
BOSS = Principal("acme", "boss", frozenset({"approvals:respond"}), can_override=True)
ALL_ACTIONS = ["accept", "reject", "refine", "edit-accept", "ask"]


def outputs(host: WopHost, run_id: str) -> dict[str, Any]:
    (completed,) = payloads(events(host, run_id), "run.completed")
    result: dict[str, Any] = completed["outputs"]
    return result


def resolved(host: WopHost, run_id: str) -> dict[str, Any]:
    (payload,) = payloads(events(host, run_id), "interrupt.resolved")
    return payload


def assert_rejected_run(host: WopHost, run_id: str) -> None:
    docs = events(host, run_id)
    failed = payloads(docs, "node.failed")
    assert [p["nodeId"] for p in failed] == ["review"]
    assert failed[0]["error"]["code"] == "approval_rejected"
    assert failed[0]["error"]["retryable"] is False
    (run_failed,) = payloads(docs, "run.failed")
    assert run_failed["error"]["code"] == "approval_rejected"
    assert run_failed["failedNodeId"] == "review"
    assert docs[-1]["type"] == "run.failed"
    snapshot = host.snapshot(run_id)
    assert snapshot["status"] == "failed"
    assert snapshot["error"]["code"] == "approval_rejected"
    assert count("review:past") == 0
    assert count("publish") == 0


def test_accept_continues(host: WopHost) -> None:
    run_id, snapshot = start(host, approval_graph())
    assert snapshot["status"] == "waiting-approval"
    assert snapshot["currentNodeId"] == "review"
    gate = only_pending(host, run_id)
    assert gate.payload["data"]["actions"] == ["accept", "reject"]

    result = host.resolve(run_id, "review", {"action": "accept", "feedback": "fine"}, ALICE)
    assert result == {
        "runId": run_id,
        "nodeId": "review",
        "status": "completed",
        "outputs": outputs(host, run_id),
    }
    out = outputs(host, run_id)
    assert out["log"] == ["write", "review", "publish"]
    assert out["result"]["decision"] == "granted"
    assert out["result"]["feedback"] == "fine"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["decision"], payload["kind"]) == ("accept", "granted", "approval")
    assert payload["resolvedBy"] == ALICE.subject()
    docs = events(host, run_id)
    assert len(of_type(docs, "approval.granted")) == 1
    assert len(of_type(docs, "approval.requested")) == 1
    assert count("review:past") == 1
    assert count("publish") == 1


def test_reject_without_route_fails_node_and_run(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    result = host.resolve(run_id, "review", {"action": "reject", "feedback": "no"}, ALICE)
    assert result["status"] == "failed"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["decision"]) == ("reject", "rejected")
    assert_rejected_run(host, run_id)


def test_reject_is_never_retried_under_a_retry_policy(make_host: HostFactory) -> None:
    host = make_host()
    plain, _ = start(host, approval_graph())
    host.resolve(plain, "review", {"action": "reject"}, ALICE)
    executions_without_retry = count("review:run")
    reset_counts()
    run_id, _ = start(host, approval_graph(retry=True))
    host.resolve(run_id, "review", {"action": "reject"}, ALICE)
    assert count("review:run") == executions_without_retry == 2  # the first run and the resumed one
    assert_rejected_run(host, run_id)
    (failed,) = payloads(events(host, run_id), "node.failed")
    assert failed.get("attempts", 1) == 1


def test_retry_policy_still_retries_ordinary_errors_without_asking_again(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(retry=True, flaky=True))
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE)["status"] == "completed"
    assert count("review:flaked") == 1  # the first attempt after the gate failed ...
    assert count("review:past") == 1  # ... the retry got the same answer and went on
    docs = events(host, run_id)
    assert len(payloads(docs, "interrupt.requested")) == 1
    assert not payloads(docs, "node.failed")
    assert count("publish") == 1


def test_rejection_route_continues_at_the_named_node(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(routed=True), rejection_routes={"review": "revise"})
    result = host.resolve(run_id, "review", {"action": "reject"}, ALICE)
    assert result["status"] == "completed"
    assert count("revise") == 1
    assert count("publish") == 0  # the rejected gate satisfies no ordinary edge
    assert outputs(host, run_id)["log"] == ["write", "revise"]
    payload = resolved(host, run_id)
    assert payload["decision"] == "rejected"
    docs = events(host, run_id)
    assert not payloads(docs, "run.failed")
    # A rejected gate is a failed source, even when its route continues the run (interrupt.md).
    (failed,) = payloads(docs, "node.failed")
    assert failed["nodeId"] == "review"
    assert (failed["error"]["code"], failed["error"]["retryable"]) == ("approval_rejected", False)
    assert "review" not in [p["nodeId"] for p in payloads(docs, "node.completed")]


def test_routed_gate_accepting_continues_on_its_own_path(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(routed=True), rejection_routes={"review": "revise"})
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE)["status"] == "completed"
    assert (count("publish"), count("revise")) == (1, 0)


def test_rejection_route_on_a_gate_with_a_static_edge_is_refused(make_host: HostFactory) -> None:
    # A static edge would fire on rejection too (LangGraph adds a Command's goto to static edges).
    host = make_host()
    with pytest.raises(ValidationError, match="Command"):
        host.register("wf", approval_graph(), rejection_routes={"review": "revise"})


def test_rejection_route_to_an_unknown_node_is_refused(make_host: HostFactory) -> None:
    host = make_host()
    with pytest.raises(ValidationError):
        host.register("wf", approval_graph(routed=True), rejection_routes={"review": "nowhere"})


def test_refine_delivers_refine_feedback(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(actions=ALL_ACTIONS))
    feedback = {"scope": "section", "sectionPath": "$.text", "text": "shorter"}
    host.resolve(run_id, "review", {"action": "refine", "refineFeedback": feedback}, ALICE)
    assert outputs(host, run_id)["result"]["refineFeedback"] == feedback
    assert outputs(host, run_id)["result"]["action"] == "refine"
    payload = resolved(host, run_id)
    assert payload["action"] == "refine"
    assert payload["refineFeedback"] == feedback


def test_refine_without_feedback_is_refused(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(actions=ALL_ACTIONS))
    before = footprint(host, run_id)
    with pytest.raises(ValidationError):
        host.resolve(run_id, "review", {"action": "refine"}, ALICE)
    assert footprint(host, run_id) == before


def test_edit_accept_delivers_edited_artifact_data(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(actions=ALL_ACTIONS))
    edited = {"text": "edited draft", "n": [1, 2]}
    host.resolve(run_id, "review", {"action": "edit-accept", "editedArtifactData": edited}, ALICE)
    out = outputs(host, run_id)
    assert out["result"]["editedArtifactData"] == edited
    assert out["result"]["decision"] == "granted"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["editedArtifactData"]) == ("edit-accept", edited)
    assert count("publish") == 1


INVALID_APPROVAL_RESUMES: list[Any] = [
    {"action": "refine", "refineFeedback": {"scope": "whole"}},  # not among this gate's actions
    {"action": "timeout"},  # host-internal, never from a caller
    {"action": "approve"},
    {"action": "accept", "bogus": 1},
    {"action": "accept", "decidedAt": "yesterday"},
    {"feedback": "no action"},
    "accept",
    None,
]


def test_invalid_approval_resume_changes_nothing(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph())
    before = footprint(host, run_id)
    for value in INVALID_APPROVAL_RESUMES:
        with pytest.raises(ValidationError) as info:
            host.resolve(run_id, "review", value, ALICE)
        assert (info.value.status, info.value.code) == (400, "validation_error"), value
        assert footprint(host, run_id) == before, value
    assert only_pending(host, run_id).votes in (None, [])
    assert host.snapshot(run_id)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", {"action": "accept"}, ALICE)["status"] == "completed"


def test_timeout_action_is_refused_even_when_offered_actions_are_all(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(actions=ALL_ACTIONS))
    with pytest.raises(ValidationError):
        host.resolve(run_id, "review", {"action": "timeout"}, ALICE)
    only_pending(host, run_id)


def test_ask_keeps_the_gate_suspended(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(actions=ALL_ACTIONS))
    before = footprint(host, run_id)
    result = host.resolve(run_id, "review", {"action": "ask", "feedback": "why?"}, ALICE)
    assert result["status"] == "waiting-approval"
    assert footprint(host, run_id)[1:] == before[1:]
    assert not of_type(events(host, run_id), "interrupt.resolved")
    host.resolve(run_id, "review", {"action": "accept"}, ALICE)
    assert host.snapshot(run_id)["status"] == "completed"


# -- quorum ----------------------------------------------------------------------------------


def test_quorum_first_vote_waits_second_decides(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    first = host.resolve(run_id, "review", {"action": "accept"}, BOB)
    assert first == {"runId": run_id, "nodeId": "review", "status": "waiting-approval"}
    assert not of_type(events(host, run_id), "interrupt.resolved")
    assert [v["voter"] for v in only_pending(host, run_id).votes] == ["bob"]
    assert count("review:past") == 0

    second = host.resolve(run_id, "review", {"action": "accept"}, CAROL)
    assert second["status"] == "completed"
    payload = resolved(host, run_id)
    assert payload["decision"] == "granted"
    assert payload["resolvedBy"]["subjectId"] == "carol"
    assert count("review:past") == 1
    # The deciding vote is recorded with the claim: the resolved gate keeps every vote.
    (gate,) = host.interrupts(run_id)
    assert [v["voter"] for v in gate.votes or []] == ["bob", "carol"]


def test_repeat_vote_by_the_same_voter_is_idempotent(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    host.resolve(run_id, "review", {"action": "accept"}, BOB)
    before = footprint(host, run_id)
    again = host.resolve(run_id, "review", {"action": "accept"}, BOB)
    assert again["status"] == "waiting-approval"
    assert footprint(host, run_id) == before
    assert len(only_pending(host, run_id).votes) == 1
    host.resolve(run_id, "review", {"action": "accept"}, CAROL)
    assert host.snapshot(run_id)["status"] == "completed"


def test_resume_voter_confers_no_identity(host: WopHost) -> None:
    """One principal cannot fill a quorum by naming other voters (or a decidedBy) in the value."""
    run_id, _ = start(host, approval_graph(required_approvals=2))
    for value in (
        {"action": "accept", "voter": "v1"},
        {"action": "accept", "voter": "v2"},
        {"action": "accept", "voter": "bob", "decidedBy": "bob"},
    ):
        assert host.resolve(run_id, "review", value, ALICE)["status"] == "waiting-approval"
    assert [v["voter"] for v in only_pending(host, run_id).votes] == ["alice"]
    assert host.resolve(run_id, "review", {"action": "accept", "voter": "alice"}, BOB)["status"] == (
        "completed"
    )
    assert resolved(host, run_id)["resumeValue"]["voter"] == "alice"  # recorded as sent, opaque


def test_single_veto_rejects_at_once(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2, rejection_policy="single-veto"))
    result = host.resolve(run_id, "review", {"action": "reject"}, BOB)
    assert result["status"] == "failed"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["decision"]) == ("reject", "rejected")
    assert_rejected_run(host, run_id)


def test_single_veto_is_the_default(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3))
    host.resolve(run_id, "review", {"action": "accept"}, BOB)
    assert host.resolve(run_id, "review", {"action": "reject"}, CAROL)["status"] == "failed"


def test_majority_rejection_needs_more_than_half(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3, rejection_policy="majority"))
    assert host.resolve(run_id, "review", {"action": "reject"}, BOB)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", {"action": "accept"}, DAVE)["status"] == "waiting-approval"
    assert not of_type(events(host, run_id), "interrupt.resolved")
    assert host.resolve(run_id, "review", {"action": "reject"}, CAROL)["status"] == "failed"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["decision"], payload["reason"]) == (
        "reject",
        "rejected",
        "quorum-reject",
    )
    assert_rejected_run(host, run_id)


EDIT_BOB = {"text": "bob's edit"}
EDIT_CAROL = {"text": "carol's edit"}
FEEDBACK_BOB = {"scope": "whole", "text": "shorter"}
FEEDBACK_CAROL = {"scope": "items", "itemIds": ["p2"]}


def edit(data: Any) -> dict[str, Any]:
    return {"action": "edit-accept", "editedArtifactData": data}


def refine(feedback: dict[str, Any]) -> dict[str, Any]:
    return {"action": "refine", "refineFeedback": feedback}


@pytest.mark.parametrize("single", [edit(EDIT_BOB), refine(FEEDBACK_BOB)], ids=["edit-accept", "refine"])
def test_one_reviewers_edit_accept_or_refine_never_releases_a_quorum(
    host: WopHost, single: dict[str, Any]
) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2, actions=ALL_ACTIONS))
    assert host.resolve(run_id, "review", single, BOB)["status"] == "waiting-approval"
    # Any further answer of bob's is his one vote again, whatever its action.
    for again in (edit(EDIT_CAROL), refine(FEEDBACK_CAROL), {"action": "accept"}):
        assert host.resolve(run_id, "review", again, BOB)["status"] == "waiting-approval"
    assert not of_type(events(host, run_id), "interrupt.resolved")
    assert count("review:past") == 0
    assert [v["voter"] for v in only_pending(host, run_id).votes] == ["bob"]
    assert host.resolve(run_id, "review", {"action": "accept"}, CAROL)["status"] == (
        "completed" if single["action"] == "edit-accept" else "waiting-approval"
    )


def test_a_refine_is_a_vote_that_does_not_grant(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2, actions=ALL_ACTIONS))
    host.resolve(run_id, "review", refine(FEEDBACK_BOB), BOB)
    assert host.resolve(run_id, "review", {"action": "accept"}, CAROL)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", {"action": "accept"}, DAVE)["status"] == "completed"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["decision"]) == ("accept", "granted")
    assert [(v["voter"], v["action"]) for v in payload["x-votes"]] == [
        ("bob", "refine"),
        ("carol", "accept"),
        ("dave", "accept"),
    ]
    assert payload["x-votes"][0]["refineFeedback"] == FEEDBACK_BOB


def test_refines_reaching_the_quorum_return_the_artifact(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2, actions=ALL_ACTIONS))
    host.resolve(run_id, "review", refine(FEEDBACK_BOB), BOB)
    assert host.resolve(run_id, "review", refine(FEEDBACK_CAROL), CAROL)["status"] == "completed"
    result = outputs(host, run_id)["result"]
    assert (result["action"], result["decision"]) == ("refine", None)
    assert result["refineFeedback"] == FEEDBACK_CAROL
    payload = resolved(host, run_id)
    assert [v["refineFeedback"] for v in payload["x-votes"]] == [FEEDBACK_BOB, FEEDBACK_CAROL]


def test_several_edits_deliver_the_last_and_record_every_one(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3, actions=ALL_ACTIONS))
    host.resolve(run_id, "review", edit(EDIT_BOB), BOB)
    host.resolve(run_id, "review", edit(EDIT_CAROL), CAROL)
    # The vote that completes the quorum edits nothing: the last edit made is delivered.
    assert host.resolve(run_id, "review", {"action": "accept"}, DAVE)["status"] == "completed"
    result = outputs(host, run_id)["result"]
    assert (result["action"], result["decision"]) == ("edit-accept", "granted")
    assert result["editedArtifactData"] == EDIT_CAROL
    payload = resolved(host, run_id)
    assert (payload["action"], payload["editedArtifactData"]) == ("edit-accept", EDIT_CAROL)
    assert payload["resumeValue"]["action"] == "accept"  # the deciding vote, as sent
    assert payload["resolvedBy"]["subjectId"] == "dave"
    assert [v.get("editedArtifactData") for v in payload["x-votes"]] == [EDIT_BOB, EDIT_CAROL, None]
    (gate,) = host.interrupts(run_id)
    assert gate.votes == payload["x-votes"]


def test_majority_reject_then_edit_accept_does_not_grant(host: WopHost) -> None:
    run_id, _ = start(
        host, approval_graph(required_approvals=3, rejection_policy="majority", actions=ALL_ACTIONS)
    )
    assert host.resolve(run_id, "review", {"action": "reject"}, BOB)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", edit(EDIT_CAROL), CAROL)["status"] == "waiting-approval"
    assert not of_type(events(host, run_id), "interrupt.resolved")
    assert host.resolve(run_id, "review", {"action": "reject"}, DAVE)["status"] == "failed"
    assert (resolved(host, run_id)["decision"], resolved(host, run_id)["reason"]) == (
        "rejected",
        "quorum-reject",
    )


def test_concurrent_edits_are_counted_once_each_in_the_deciding_transaction(host: WopHost) -> None:
    """Six reviewers edit at once on a gate needing three: the count is read, extended and decided
    under the interrupt row's hold, so exactly three votes decide (none lost, none counted twice),
    the other three find the gate closed (409), and the delivered edit is the third vote's."""
    run_id, _ = start(host, approval_graph(required_approvals=3, actions=ALL_ACTIONS))
    threads = 6
    barrier = threading.Barrier(threads)
    outcomes: dict[str, Any] = {}
    lock = threading.Lock()

    def reviewer(index: int) -> None:
        who = Principal("acme", f"editor-{index}", frozenset({"approvals:respond"}))
        barrier.wait(30)
        try:
            result: Any = host.resolve(run_id, "review", edit({"by": who.subject_id}), who, wait=False)
        except Exception as exc:
            result = exc
        with lock:
            outcomes[who.subject_id] = result

    workers = [threading.Thread(target=reviewer, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    host.run_until_idle()
    assert host.snapshot(run_id)["status"] == "completed"
    payload = resolved(host, run_id)
    counted = [v["voter"] for v in payload["x-votes"]]
    assert len(counted) == len(set(counted)) == 3
    assert payload["editedArtifactData"] == {"by": counted[-1]}
    assert payload["resolvedBy"]["subjectId"] == counted[-1]
    for voter, outcome in outcomes.items():
        if voter in counted:
            assert isinstance(outcome, dict), outcome
        else:
            assert isinstance(outcome, InterruptAlreadyResolved), outcome
    assert count("review:past") == 1


def test_override_bypasses_quorum(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3, override_bypasses_quorum=True))
    # Without the override right, an accept is one ordinary vote.
    assert host.resolve(run_id, "review", {"action": "accept"}, BOB)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", {"action": "accept"}, BOSS)["status"] == "completed"
    payload = resolved(host, run_id)
    assert (payload["action"], payload["decision"]) == ("accept", "overridden")
    assert payload["resolvedBy"]["subjectId"] == "boss"
    assert len(of_type(events(host, run_id), "approval.overridden")) == 1
    assert outputs(host, run_id)["result"]["decision"] == "overridden"


def test_override_right_without_override_flag_is_an_ordinary_vote(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    assert host.resolve(run_id, "review", {"action": "accept"}, BOSS)["status"] == "waiting-approval"


# -- eligibility -----------------------------------------------------------------------------


def test_principal_not_in_approvers_list_is_forbidden(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(approvers=["bob", "carol"]))
    before = footprint(host, run_id)
    with pytest.raises(Forbidden) as info:
        host.resolve(run_id, "review", {"action": "accept"}, MALLORY)
    assert (info.value.status, info.value.code) == (403, "forbidden")
    assert footprint(host, run_id) == before
    assert host.snapshot(run_id)["status"] == "waiting-approval"
    # A voter name in the body does not make an ineligible caller eligible.
    with pytest.raises(Forbidden):
        host.resolve(run_id, "review", {"action": "accept", "voter": "bob"}, MALLORY)
    assert host.resolve(run_id, "review", {"action": "accept"}, BOB)["status"] == "completed"


MEMBERSHIP = {
    "dave": Membership(groups=frozenset({"reviewers"})),
    "erin": Membership(roles=frozenset({"admin"})),
}


def membership(principal: Principal) -> Membership:
    return MEMBERSHIP.get(principal.subject_id, Membership())


@pytest.mark.parametrize(
    ("ref_kinds", "eligible"),
    [
        (("principal",), {"bob"}),
        (("principal", "group"), {"bob", "dave"}),
        (("principal", "role"), {"bob", "erin"}),
        (("principal", "group", "role"), {"bob", "dave", "erin"}),
    ],
)
def test_group_and_role_refs_bind_only_when_the_host_honours_them(
    make_host: HostFactory, ref_kinds: tuple[str, ...], eligible: set[str]
) -> None:
    host = make_host(ref_kinds=ref_kinds, membership=membership)
    # A quorum no one reaches here: an eligible vote is recorded, an ineligible one refused.
    graph = approval_graph(
        required_approvals=4, approvers=["bob"], group_refs=["reviewers"], role_refs=["admin"]
    )
    run_id, _ = start(host, graph)
    for who in (MALLORY, BOB, DAVE, ERIN):
        before = footprint(host, run_id)
        if who.subject_id in eligible:
            assert host.resolve(run_id, "review", {"action": "accept"}, who)["status"] == "waiting-approval"
        else:
            with pytest.raises(Forbidden):
                host.resolve(run_id, "review", {"action": "accept"}, who)
            assert footprint(host, run_id) == before
    voters = {v["voter"] for v in only_pending(host, run_id).votes or []}
    assert voters == eligible


def test_membership_is_consulted_at_decision_time(make_host: HostFactory) -> None:
    asked: list[str] = []

    def resolver(principal: Principal) -> Membership:
        asked.append(principal.subject_id)
        return membership(principal)

    host = make_host(ref_kinds=("principal", "group"), membership=resolver)
    run_id, _ = start(host, approval_graph(group_refs=["reviewers"]))
    assert asked == []
    host.resolve(run_id, "review", {"action": "accept"}, DAVE)
    assert asked == ["dave"]


# -- concurrency -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("same_principal", [False, True], ids=["distinct-voters", "same-voter"])
def test_concurrent_resolves_have_exactly_one_winner(host: WopHost, same_principal: bool) -> None:
    run_id, _ = start(host, approval_graph())
    threads = 8
    barrier = threading.Barrier(threads)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def racer(index: int) -> None:
        who = ALICE if same_principal else Principal("acme", f"racer-{index}")
        barrier.wait(30)
        try:
            result: Any = host.resolve(run_id, "review", {"action": "accept"}, who)
        except Exception as exc:
            result = exc
        with lock:
            outcomes.append(result)

    workers = [threading.Thread(target=racer, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert len(outcomes) == threads
    wins = [o for o in outcomes if isinstance(o, dict)]
    losses = [o for o in outcomes if not isinstance(o, dict)]
    assert len(wins) == 1, outcomes
    assert all(isinstance(o, InterruptAlreadyResolved) for o in losses), losses
    assert host.snapshot(run_id)["status"] == "completed"
    assert count("review:past") == 1
    assert count("publish") == 1
    assert len(payloads(events(host, run_id), "interrupt.resolved")) == 1
