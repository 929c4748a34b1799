"""Quorum identity over HTTP (a real uvicorn server, the official client): one person is one vote.

A vote's identity is the authenticated principal, or the approver a link was minted for; nothing
in a resume value (``voter``, ``decidedBy``) confers identity, except for a key holding
``approvals:delegate`` (mailer), whose vote counts for the voter it names. Every vote counts once,
whatever its action. The gates (tests/server/quorum_graphs.py): ``pair``, two approvals from
``[alice, bob]``; ``pair-edit``, the same offering every action; ``trio``, three of anyone, majority.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from openwop_client import OpenwopClient
from openwop_client.types import CreateRunRequest, ResolveInterruptRequest

from tests.conftest import BACKENDS, create_postgres_database, drop_postgres_database
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id

pytestmark = pytest.mark.slow

TARGET = "tests.server.quorum_graphs:WORKFLOWS"
KEYS = {"alice": "alice-key", "bob": "acme-bob-key", "mailer": "mailer-key", "reader": "reader-key"}


@pytest.fixture(scope="module", params=BACKENDS)
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server per backend for the module (start-up is the slow part); each test makes its own runs."""
    if request.param == "sqlite":
        with served(f"sqlite:///{tmp_path_factory.mktemp('quorum') / 'wop.db'}", target=TARGET) as url:
            yield url
        return
    database = create_postgres_database()
    try:
        with served(database, target=TARGET) as url:
            yield url
    finally:
        drop_postgres_database(database)


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[who]}"}


def client(base: str, who: str) -> OpenwopClient:
    return OpenwopClient(base, KEYS[who])


def wait_for(
    base: str, run_id: str, ready: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    """The run's snapshot once ``ready`` holds for it (bounded poll; the API may answer at commit)."""
    deadline = time.monotonic() + timeout
    while True:
        snapshot: dict[str, Any] = httpx.get(
            f"{base}/runs/{project_id(run_id)}", headers=auth("reader"), timeout=30
        ).json()
        if ready(snapshot) or time.monotonic() > deadline:
            return snapshot
        time.sleep(0.05)


def start(base: str, workflow: str = "pair") -> str:
    created = client(base, "alice").runs_create(
        CreateRunRequest(workflowId=workflow, inputs={}), idempotency_key=str(uuid.uuid4())
    )
    snapshot = wait_for(base, created.runId, lambda s: s["status"] == "waiting-approval")
    assert snapshot["status"] == "waiting-approval", snapshot
    return created.runId


def mint(base: str, run_id: str, minter: str, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{base}/runs/{project_id(run_id)}/interrupts/review/tokens",
        json=body,
        headers=auth(minter),
        timeout=30,
    )


def link_for(base: str, run_id: str, minter: str, approver: str) -> str:
    response = mint(base, run_id, minter, approver=approver)
    assert response.status_code == 201, response.text
    assert response.json()["approver"] == approver
    return str(response.json()["token"])


def resolved_events(base: str, run_id: str) -> list[dict[str, Any]]:
    page = httpx.get(
        f"{base}/runs/{project_id(run_id)}/events/poll?timeout=0", headers=auth("reader"), timeout=30
    ).json()
    return [e["payload"] for e in page["events"] if e["type"] == "interrupt.resolved"]


def assert_still_open(base: str, run_id: str) -> None:
    snapshot = wait_for(base, run_id, lambda s: s["status"] != "waiting-approval", timeout=0.5)
    assert snapshot["status"] == "waiting-approval", snapshot
    assert resolved_events(base, run_id) == []


ACCEPT = ResolveInterruptRequest(resumeValue={"action": "accept"})


def test_one_approver_is_one_vote_across_links_and_surfaces(base: str) -> None:
    run_id = start(base)
    alice = client(base, "alice")
    assert alice.interrupts_resolve_by_run(run_id, "review", ACCEPT).status == "waiting-approval"
    links = [link_for(base, run_id, "alice", "alice") for _ in range(3)]
    links.append(link_for(base, run_id, "mailer", "alice"))  # a dispatcher's link for alice is hers too
    for token in links:
        assert alice.interrupts_inspect_by_token(token).kind == "approval"
        answer = alice.interrupts_resolve_by_token(token, ACCEPT, idempotency_key=str(uuid.uuid4()))
        assert answer["status"] == "waiting-approval"
    form = httpx.post(
        f"{base}/interrupts/{links[0]}/form",
        content=b"action=accept",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timeout=30,
    )
    assert form.status_code == 200
    again = alice.interrupts_resolve_by_run(run_id, "review", ACCEPT, idempotency_key=str(uuid.uuid4()))
    assert again.status == "waiting-approval"
    assert_still_open(base, run_id)
    # alice cannot mint bob's vote; bob's own vote decides.
    assert mint(base, run_id, "alice", approver="bob").status_code == 403
    assert client(base, "bob").interrupts_resolve_by_run(run_id, "review", ACCEPT).status in (
        "running",
        "completed",
    )
    assert wait_for(base, run_id, lambda s: s["status"] == "completed")["status"] == "completed"
    (resolved,) = resolved_events(base, run_id)
    assert resolved["resolvedBy"]["subjectId"] == "bob"


def test_two_links_for_two_approvers_count_two_votes(base: str) -> None:
    run_id = start(base)
    for_alice, for_bob = link_for(base, run_id, "mailer", "alice"), link_for(base, run_id, "mailer", "bob")
    anyone = client(base, "reader")  # the token is the only credential on this surface
    assert anyone.interrupts_resolve_by_token(for_alice, ACCEPT)["status"] == "waiting-approval"
    assert anyone.interrupts_resolve_by_token(for_bob, ACCEPT)["status"] in ("running", "completed")
    assert wait_for(base, run_id, lambda s: s["status"] == "completed")["status"] == "completed"
    (resolved,) = resolved_events(base, run_id)
    assert (resolved["decision"], resolved["resolvedBy"]["subjectId"]) == ("granted", "bob")
    assert resolved["resolvedBy"]["issuer"] == "urn:wop-langgraph:interrupt-token"


def test_minting_for_a_non_eligible_or_unnamed_approver_is_refused(base: str) -> None:
    run_id = start(base)
    for minter, body, status, code in [
        ("mailer", {"approver": "carol"}, 403, "forbidden"),  # not in [alice, bob]
        ("mailer", {"approver": "mailer"}, 403, "forbidden"),  # the dispatcher itself is no approver
        ("alice", {"approver": "bob"}, 403, "forbidden"),  # another approver, without approvals:delegate
        ("alice", {}, 400, "validation_error"),  # a vote-counting gate needs a named approver
        ("alice", {"approver": "alice\n"}, 400, "validation_error"),
    ]:
        response = mint(base, run_id, minter, **body)
        assert (response.status_code, response.json()["error"]) == (status, code), (
            minter,
            body,
            response.text,
        )
    assert_still_open(base, run_id)


def test_200_parallel_mints_are_200_distinct_tokens_and_one_vote(base: str) -> None:
    run_id = start(base)
    with httpx.Client(timeout=60) as http, ThreadPoolExecutor(max_workers=16) as pool:

        def mint_one(_: int) -> httpx.Response:
            return http.post(
                f"{base}/runs/{project_id(run_id)}/interrupts/review/tokens",
                json={"approver": "alice"},
                headers=auth("alice"),
            )

        responses = list(pool.map(mint_one, range(200)))
        assert [r.status_code for r in responses] == [201] * 200
        tokens = [r.json()["token"] for r in responses]
        assert len(set(tokens)) == 200
        assert len({r.json()["url"] for r in responses}) == 200

        def vote(token: str) -> httpx.Response:
            return http.post(f"{base}/interrupts/{token}", json={"resumeValue": {"action": "accept"}})

        answers = list(pool.map(vote, tokens[:50]))
    assert {a.status_code for a in answers} == {200}
    assert {a.json()["status"] for a in answers} == {"waiting-approval"}
    assert_still_open(base, run_id)


# --- needs the resolver to take a vote's identity from the principal only ----------------------


@pytest.mark.parametrize(
    "spoof",
    [{"voter": "bob"}, {"decidedBy": "bob"}, {"voter": "bob", "decidedBy": "bob"}],
    ids=["voter", "decidedBy", "both"],
)
def test_resume_fields_confer_no_identity(base: str, spoof: dict[str, str]) -> None:
    """The resolver counts ``principal.subject_id`` only: a ``resumeValue.voter`` or ``decidedBy``
    naming bob does not make alice's vote count as bob's, so the gate is not released."""
    run_id = start(base)
    alice = client(base, "alice")
    by_run = alice.interrupts_resolve_by_run(run_id, "review", ResolveInterruptRequest({"action": "accept"}))
    assert by_run.status == "waiting-approval"
    spoofed = ResolveInterruptRequest(resumeValue={"action": "accept", **spoof})
    # By run, as alice, claiming to be bob.
    alice.interrupts_resolve_by_run(run_id, "review", spoofed, idempotency_key=str(uuid.uuid4()))
    assert_still_open(base, run_id)
    # By a link minted for alice, claiming to be bob.
    alice.interrupts_resolve_by_token(link_for(base, run_id, "alice", "alice"), spoofed)
    assert_still_open(base, run_id)
    # The first vote by token claiming another identity: still alice's single vote.
    fresh = start(base)
    alice.interrupts_resolve_by_token(link_for(base, fresh, "alice", "alice"), spoofed)
    alice.interrupts_resolve_by_run(fresh, "review", spoofed)
    assert_still_open(base, fresh)


# --- every vote counts once, whatever its action; delegation ---------------------------------

EDIT = {"action": "edit-accept", "editedArtifactData": {"text": "alice's edit"}}
REFINE = {"action": "refine", "refineFeedback": {"scope": "whole", "text": "shorter"}}


@pytest.mark.parametrize("single", [EDIT, REFINE], ids=["edit-accept", "refine"])
def test_one_persons_edit_accept_or_refine_never_releases_a_quorum(base: str, single: dict[str, Any]) -> None:
    """By run, by her own link, and the first vote by link: alice's edit-accept or refine is her
    one vote of the two ``pair-edit`` needs, never the gate's decision."""
    alice = client(base, "alice")
    value = ResolveInterruptRequest(resumeValue=single)
    run_id = start(base, "pair-edit")
    assert alice.interrupts_resolve_by_run(run_id, "review", value).status == "waiting-approval"
    assert_still_open(base, run_id)
    by_link = alice.interrupts_resolve_by_token(link_for(base, run_id, "alice", "alice"), value)
    assert by_link["status"] == "waiting-approval"
    assert_still_open(base, run_id)
    first_by_link = start(base, "pair-edit")
    answer = alice.interrupts_resolve_by_token(link_for(base, first_by_link, "alice", "alice"), value)
    assert answer["status"] == "waiting-approval"
    assert_still_open(base, first_by_link)
    # bob's accept is the second vote: it grants after an edit (delivering alice's edit), and
    # after a refine it is one grant of the two needed.
    status = client(base, "bob").interrupts_resolve_by_run(run_id, "review", ACCEPT).status
    if single is REFINE:
        assert status == "waiting-approval"
        assert_still_open(base, run_id)
        return
    assert status in ("running", "completed")
    assert wait_for(base, run_id, lambda s: s["status"] == "completed")["status"] == "completed"
    (resolved,) = resolved_events(base, run_id)
    assert (resolved["action"], resolved["editedArtifactData"]) == ("edit-accept", EDIT["editedArtifactData"])
    assert [(v["voter"], v["action"]) for v in resolved["x-votes"]] == [
        ("alice", "edit-accept"),
        ("bob", "accept"),
    ]


def test_majority_reject_then_edit_accept_does_not_grant(base: str) -> None:
    run_id = start(base, "trio")
    alice, bob = client(base, "alice"), client(base, "bob")
    reject = ResolveInterruptRequest(resumeValue={"action": "reject"})
    assert alice.interrupts_resolve_by_run(run_id, "review", reject).status == "waiting-approval"
    assert (
        bob.interrupts_resolve_by_run(run_id, "review", ResolveInterruptRequest(resumeValue=EDIT)).status
        == "waiting-approval"
    )
    assert_still_open(base, run_id)


def vote_for(voter: str, action: str = "accept") -> ResolveInterruptRequest:
    return ResolveInterruptRequest(resumeValue={"action": action, "voter": voter})


def test_a_delegate_votes_once_for_each_named_voter(base: str) -> None:
    """mailer holds approvals:delegate: its votes count for the voters it names, eligibility
    checked for each; the same voter twice (or by the voter's own key) is one vote."""
    run_id = start(base)
    mailer = client(base, "mailer")
    assert mailer.interrupts_resolve_by_run(run_id, "review", vote_for("alice")).status == "waiting-approval"
    assert mailer.interrupts_resolve_by_run(run_id, "review", vote_for("alice")).status == "waiting-approval"
    assert client(base, "alice").interrupts_resolve_by_run(run_id, "review", ACCEPT).status == (
        "waiting-approval"
    )
    # A link mailer minted for alice votes as alice whatever voter it names: still her one vote.
    answer = client(base, "reader").interrupts_resolve_by_token(
        link_for(base, run_id, "mailer", "alice"), vote_for("bob")
    )
    assert answer["status"] == "waiting-approval"
    assert_still_open(base, run_id)
    refused = httpx.post(
        f"{base}/runs/{project_id(run_id)}/interrupts/review",
        json={"resumeValue": {"action": "accept", "voter": "carol"}},  # not in [alice, bob]
        headers=auth("mailer"),
        timeout=30,
    )
    assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")
    assert_still_open(base, run_id)
    assert mailer.interrupts_resolve_by_run(run_id, "review", vote_for("bob")).status in (
        "running",
        "completed",
    )
    assert wait_for(base, run_id, lambda s: s["status"] == "completed")["status"] == "completed"
    (resolved,) = resolved_events(base, run_id)
    assert resolved["resolvedBy"]["subjectId"] == "mailer"
    assert [(v["voter"], v["delegate"]) for v in resolved["x-votes"]] == [
        ("alice", "mailer"),
        ("bob", "mailer"),
    ]
