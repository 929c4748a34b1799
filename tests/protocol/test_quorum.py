"""Vote counting (protocol/quorum.py): every vote counts once, whatever its action.

A gate needing N approvals is released only by N granting votes (``accept``, ``edit-accept``)
or an override; a ``refine`` is a vote that does not grant (N refines return the artifact);
rejects follow the rejection policy. The recorded side is judged by the official schema.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.official import payload_errors
from wop_langgraph.protocol.event_payloads import InterruptResolved
from wop_langgraph.protocol.quorum import VOTES_MEMBER, Tally, Vote, approval_resolution, tally

EDIT_1 = {"editedArtifactData": {"text": "alice's"}}
EDIT_2 = {"editedArtifactData": {"text": "bob's"}}
REFINE_1 = {"refineFeedback": {"scope": "whole", "text": "shorter"}}
REFINE_2 = {"refineFeedback": {"scope": "section", "sectionPath": "$.intro"}}


def vote(voter: str, action: str, detail: dict[str, Any] | None = None, **kw: Any) -> Vote:
    return Vote(voter, action, detail=detail or {}, **kw)


@pytest.mark.parametrize(
    "first",
    [vote("alice", "edit-accept", EDIT_1), vote("alice", "refine", REFINE_1), vote("alice", "accept")],
    ids=["edit-accept", "refine", "accept"],
)
def test_one_vote_never_decides_a_quorum_of_two(first: Vote) -> None:
    assert tally([first], required_approvals=2) == Tally(decided=False)


def test_reject_then_edit_accept_under_majority_of_three_is_undecided() -> None:
    votes = [vote("alice", "reject"), vote("bob", "edit-accept", EDIT_2)]
    assert not tally(votes, required_approvals=3, rejection_policy="majority").decided
    third = [*votes, vote("carol", "accept")]
    assert not tally(third, required_approvals=3, rejection_policy="majority").decided
    rejected = [*votes, vote("carol", "reject")]
    outcome = tally(rejected, required_approvals=3, rejection_policy="majority")
    assert (outcome.action, outcome.decision, outcome.reason) == ("reject", "rejected", "quorum-reject")


def test_granting_votes_reach_the_quorum_and_the_last_edit_is_delivered() -> None:
    votes = [vote("alice", "edit-accept", EDIT_1), vote("bob", "edit-accept", EDIT_2)]
    outcome = tally(votes, required_approvals=2)
    assert (outcome.action, outcome.decision, dict(outcome.detail)) == ("edit-accept", "granted", EDIT_2)
    # A plain accept completing the quorum keeps the earlier edit: a grant never drops an edit.
    kept = tally([vote("alice", "edit-accept", EDIT_1), vote("bob", "accept")], required_approvals=2)
    assert (kept.action, dict(kept.detail)) == ("edit-accept", EDIT_1)
    plain = tally([vote("alice", "accept"), vote("bob", "accept")], required_approvals=2)
    assert (plain.action, plain.decision, dict(plain.detail)) == ("accept", "granted", {})


def test_refines_return_the_artifact_only_at_the_quorum() -> None:
    one = [vote("alice", "refine", REFINE_1), vote("bob", "accept")]
    assert not tally(one, required_approvals=2).decided  # one grant, one refine: nothing yet
    two = [vote("alice", "refine", REFINE_1), vote("bob", "refine", REFINE_2)]
    outcome = tally(two, required_approvals=2)
    assert (outcome.action, outcome.decision, dict(outcome.detail)) == ("refine", None, REFINE_2)
    # A refine does not grant: with two grants after it, the gate is granted, not refined.
    mixed = [vote("alice", "refine", REFINE_1), vote("bob", "accept"), vote("carol", "accept")]
    assert tally(mixed, required_approvals=2).decision == "granted"


def test_single_veto_still_rejects_on_one_reject() -> None:
    outcome = tally([vote("alice", "edit-accept", EDIT_1), vote("bob", "reject")], required_approvals=3)
    assert (outcome.action, outcome.decision, outcome.reason) == ("reject", "rejected", None)


def test_override_releases_alone_only_where_the_gate_allows_it() -> None:
    boss = vote("boss", "edit-accept", EDIT_1, override=True)
    outcome = tally([boss], required_approvals=3, override_bypasses_quorum=True)
    assert (outcome.action, outcome.decision, dict(outcome.detail)) == ("edit-accept", "overridden", EDIT_1)
    assert not tally([boss], required_approvals=3).decided  # counts once
    refine = vote("boss", "refine", REFINE_1, override=True)
    assert not tally([refine], required_approvals=3, override_bypasses_quorum=True).decided


def test_single_approval_gates_decide_on_their_one_vote() -> None:
    assert tally([vote("a", "refine", REFINE_1)]).action == "refine"
    assert tally([vote("a", "edit-accept", EDIT_1)]).decision == "granted"
    assert tally([vote("a", "reject")], rejection_policy="majority").decision == "rejected"


ACTIONS = st.sampled_from(["accept", "edit-accept", "refine", "reject"])


@given(
    st.lists(ACTIONS, min_size=1, max_size=8), st.integers(1, 5), st.sampled_from(["single-veto", "majority"])
)
def test_a_grant_needs_as_many_granting_votes_as_required(
    actions: list[str], required: int, policy: str
) -> None:
    votes = [
        vote(f"v{i}", a, EDIT_1 if a == "edit-accept" else REFINE_1 if a == "refine" else None)
        for i, a in enumerate(actions)
    ]
    outcome = tally(votes, required_approvals=required, rejection_policy=policy)
    if outcome.decision == "granted":
        assert sum(a in ("accept", "edit-accept") for a in actions) >= required
    if outcome.action == "refine":
        assert actions.count("refine") >= required
    if outcome.decision == "rejected" and policy == "majority":
        assert actions.count("reject") > required / 2


def test_every_vote_and_edit_is_recorded_on_interrupt_resolved() -> None:
    votes = [
        vote("alice", "edit-accept", EDIT_1),
        vote("bob", "edit-accept", EDIT_2, delegate="mailer"),
    ]
    resolution = approval_resolution(tally(votes, required_approvals=2), votes, required_approvals=2)
    assert resolution[VOTES_MEMBER] == [
        {"voter": "alice", "action": "edit-accept", "override": False, **EDIT_1},
        {"voter": "bob", "action": "edit-accept", "override": False, **EDIT_2, "delegate": "mailer"},
    ]
    assert resolution["editedArtifactData"] == EDIT_2["editedArtifactData"]
    payload = {"nodeId": "review", "interruptId": "acme/0123456789abcdef0", "kind": "approval", **resolution}
    assert payload_errors("interrupt.resolved", payload) == []  # x-votes: the payload's hatch
    assert InterruptResolved.from_wire(payload).to_wire()[VOTES_MEMBER] == resolution[VOTES_MEMBER]
    # A single-approval gate decided by its own voter records no vote list.
    one = [vote("alice", "accept")]
    assert VOTES_MEMBER not in approval_resolution(tally(one), one)


def test_votes_read_back_as_written() -> None:
    for written in (
        vote("a", "refine", REFINE_1),
        vote("b", "edit-accept", {"editedArtifactData": None}, delegate="m"),
    ):
        assert Vote.from_json(written.as_json()) == written
    assert Vote.from_json({"voter": "old", "action": "accept", "override": False}) == vote("old", "accept")
