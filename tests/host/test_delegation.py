"""Delegated votes (host/delegation.py): a principal holding ``approvals:delegate`` votes for the
voter it names, once per named voter, eligibility checked for that voter; without the scope the
named voter is ignored (test_approvals.py::test_resume_voter_confers_no_identity)."""

from __future__ import annotations

import pytest

from tests.host._graphs import ALICE, approval_graph, count
from tests.host._support import HostFactory, events, footprint, of_type, only_pending, payloads, start
from wop_langgraph.host import Membership, Principal, WopHost
from wop_langgraph.protocol.errors import Forbidden, ValidationError

DELEGATE = frozenset({"approvals:respond", "approvals:delegate"})
MAILER = Principal("acme", "mailer", DELEGATE)
BOSS_BOT = Principal("acme", "boss-bot", DELEGATE, can_override=True)
BOB = Principal("acme", "bob", frozenset({"approvals:respond"}))
CAROL = Principal("acme", "carol", frozenset({"approvals:respond"}))


def accept(**named: str) -> dict[str, str]:
    return {"action": "accept", **named}


def test_a_delegate_counts_each_named_voter_once(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3, rejection_policy="majority"))
    assert host.resolve(run_id, "review", accept(voter="approver-1"), MAILER)["status"] == "waiting-approval"
    before = footprint(host, run_id)
    for repeat in (
        accept(voter="approver-1"),
        accept(decidedBy="approver-1"),
        {"action": "reject", "voter": "approver-1"},
    ):
        assert host.resolve(run_id, "review", repeat, MAILER)["status"] == "waiting-approval"
    assert footprint(host, run_id) == before  # one vote per named voter, whoever casts it again
    assert (
        host.resolve(run_id, "review", accept(decidedBy="approver-2"), MAILER)["status"] == "waiting-approval"
    )
    assert not of_type(events(host, run_id), "interrupt.resolved")
    assert host.resolve(run_id, "review", accept(voter="approver-3"), MAILER)["status"] == "completed"
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert resolved["resolvedBy"] == MAILER.subject()  # the delegate authenticated; the votes name voters
    assert [(v["voter"], v["delegate"]) for v in resolved["x-votes"]] == [
        ("approver-1", "mailer"),
        ("approver-2", "mailer"),
        ("approver-3", "mailer"),
    ]
    assert count("review:past") == 1


def test_majority_reject_by_named_voters_fails_the_run(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3, rejection_policy="majority"))
    reject = {"action": "reject"}
    assert host.resolve(run_id, "review", {**reject, "voter": "approver-1"}, MAILER)["status"] == (
        "waiting-approval"
    )
    assert host.resolve(run_id, "review", {**reject, "voter": "approver-2"}, MAILER)["status"] == "failed"
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert (resolved["decision"], resolved["reason"]) == ("rejected", "quorum-reject")


def test_a_delegated_vote_and_the_voters_own_are_one_vote(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2, approvers=["bob", "carol"]))
    assert host.resolve(run_id, "review", accept(voter="bob"), MAILER)["status"] == "waiting-approval"
    assert host.resolve(run_id, "review", accept(), BOB)["status"] == "waiting-approval"
    assert [(v["voter"], v.get("delegate")) for v in only_pending(host, run_id).votes] == [("bob", "mailer")]
    assert host.resolve(run_id, "review", accept(), CAROL)["status"] == "completed"
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert resolved["resolvedBy"]["subjectId"] == "carol"
    assert [v.get("delegate") for v in resolved["x-votes"]] == ["mailer", None]


def test_eligibility_is_checked_for_the_named_voter(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2, approvers=["bob", "carol"]))
    before = footprint(host, run_id)
    for value in (accept(voter="mallory"), accept(decidedBy="mallory"), accept()):  # the last: mailer itself
        with pytest.raises(Forbidden) as refused:
            host.resolve(run_id, "review", value, MAILER)
        assert refused.value.status == 403
    assert footprint(host, run_id) == before
    with pytest.raises(ValidationError):  # two different voters named
        host.resolve(run_id, "review", accept(voter="bob", decidedBy="carol"), MAILER)
    with pytest.raises(ValidationError):  # not a subjectId
        host.resolve(run_id, "review", accept(voter="bob carol"), MAILER)
    assert footprint(host, run_id) == before
    assert host.resolve(run_id, "review", accept(voter="bob", decidedBy="bob"), MAILER)["status"] == (
        "waiting-approval"
    )


def test_group_membership_is_resolved_for_the_named_voter(make_host: HostFactory) -> None:
    asked: list[str] = []

    def membership(principal: Principal) -> Membership:
        asked.append(principal.subject_id)
        return Membership(groups=frozenset({"reviewers"}) if principal.subject_id == "dave" else frozenset())

    host = make_host(ref_kinds=("principal", "group"), membership=membership)
    run_id, _ = start(host, approval_graph(required_approvals=2, group_refs=["reviewers"]))
    with pytest.raises(Forbidden):
        host.resolve(run_id, "review", accept(voter="erin"), MAILER)
    assert host.resolve(run_id, "review", accept(voter="dave"), MAILER)["status"] == "waiting-approval"
    assert asked == ["erin", "dave"]


def test_a_delegate_lends_no_override_to_the_voter_it_names(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=3, override_bypasses_quorum=True))
    assert host.resolve(run_id, "review", accept(voter="bob"), BOSS_BOT)["status"] == "waiting-approval"
    # Its own vote keeps its own override.
    assert host.resolve(run_id, "review", accept(), BOSS_BOT)["status"] == "completed"
    (resolved,) = payloads(events(host, run_id), "interrupt.resolved")
    assert resolved["decision"] == "overridden"


def test_without_the_scope_a_named_voter_is_the_caller(host: WopHost) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    for named in ("approver-1", "approver-2"):
        assert host.resolve(run_id, "review", accept(voter=named), ALICE)["status"] == "waiting-approval"
    assert [v["voter"] for v in only_pending(host, run_id).votes] == ["alice"]
