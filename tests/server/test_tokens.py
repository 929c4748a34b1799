"""The token surface: mint, inspect, resolve by token, and every refusal; the reviewer page."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx
from fastapi import FastAPI

from tests.host._graphs import approval_graph
from tests.host._support import footprint
from tests.official import official_errors
from tests.server.conftest import (
    ACME_BOB,
    ALICE,
    MAILER,
    PUBLIC_URL,
    READER,
    assert_error,
    at_rest,
    make_settings,
    serving,
    started_run,
)
from tests.server.quorum_graphs import pair_graph
from wop_langgraph.host import Membership, Principal, WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app
from wop_langgraph.server.state import ServerState
from wop_langgraph.tokens import mint, verify


async def suspended(client: httpx.AsyncClient, workflow: str = "review") -> str:
    run_id, snapshot = await started_run(client, workflow)
    assert snapshot["status"] == "waiting-approval"
    return run_id


async def token_for(
    client: httpx.AsyncClient,
    run_id: str,
    node: str = "review",
    headers: dict[str, str] = ALICE,
    **body: object,
) -> dict[str, str]:
    response = await client.post(
        f"/runs/{project_id(run_id)}/interrupts/{node}/tokens", json=body, headers=headers
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_mint_inspect_resolve(client: httpx.AsyncClient, app: FastAPI) -> None:
    run_id = await suspended(client)
    minted = await token_for(client, run_id)
    assert minted["url"] == f"{PUBLIC_URL}/interrupts/{minted['token']}"
    assert "approver" not in minted
    state: ServerState = app.state.wop
    claims = verify(state.signing_keys, minted["token"], now=state.host.clock())
    assert claims.kid == "k2"
    assert claims.interrupt_id == state.host.pending_interrupts(run_id)[0].key
    inspected = await client.get(f"/interrupts/{minted['token']}")
    assert inspected.status_code == 200
    payload = inspected.json()
    assert payload["kind"] == "approval"
    assert official_errors("suspend-request.schema.json", payload) == []
    resolved = await client.post(f"/interrupts/{minted['token']}", json={"resumeValue": {"action": "accept"}})
    assert resolved.status_code == 200, resolved.text
    assert resolved.json() == {"runId": run_id, "nodeId": "review", "status": "running"}
    assert (await at_rest(client, run_id))["status"] == "waiting-input"
    again = await client.post(f"/interrupts/{minted['token']}", json={"resumeValue": {"action": "accept"}})
    assert_error(again, 409, "interrupt_already_resolved")
    assert_error(await client.get(f"/interrupts/{minted['token']}"), 409, "interrupt_already_resolved")
    events = (await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)).json()
    resolved_event = next(e for e in events["events"] if e["type"] == "interrupt.resolved")
    # An anonymous link (a single-approval gate) acts as the link itself.
    digest = hashlib.sha256(minted["token"].encode()).hexdigest()[:24]
    assert resolved_event["payload"]["resolvedBy"]["subjectId"] == f"token:{digest}"


async def test_links_for_two_approvers_count_two_votes_and_one_approver_one(
    client: httpx.AsyncClient,
) -> None:
    run_id = await suspended(client, "quorum")
    alices = [await token_for(client, run_id, approver="alice") for _ in range(3)]
    assert [m["approver"] for m in alices] == ["alice"] * 3
    vote = {"resumeValue": {"action": "accept"}}
    for link in alices:  # three links, one approver: one vote
        undecided = await client.post(f"/interrupts/{link['token']}", json=vote)
        assert undecided.status_code == 200, undecided.text
        assert undecided.json()["status"] == "waiting-approval"
    bobs = await token_for(client, run_id, headers=MAILER, approver="bob")
    decided = await client.post(f"/interrupts/{bobs['token']}", json=vote)
    assert decided.status_code == 200, decided.text
    assert decided.json()["status"] == "running"
    assert (await at_rest(client, run_id))["status"] == "completed"
    events = (await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)).json()
    resolved = next(e for e in events["events"] if e["type"] == "interrupt.resolved")["payload"]
    assert resolved["resolvedBy"] == {
        "issuer": "urn:wop-langgraph:interrupt-token",
        "subjectId": "bob",
        "tenant": "acme",
        "lane": "anonymous",
        "kind": "user",
    }


async def test_minting_for_a_gate_that_counts_votes_names_an_eligible_approver(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    run_id = await suspended(client, "quorum")
    wire = project_id(run_id)
    url = f"/runs/{wire}/interrupts/review/tokens"
    body = assert_error(await client.post(url, json={}, headers=ALICE), 400, "validation_error")
    assert body["details"] == {"field": "approver"}
    for bad in ("", "a b", "acme/alice", "x" * 257, "a\u0000"):
        assert_error(await client.post(url, json={"approver": bad}, headers=ALICE), 400, "validation_error")
    # alice may not mint bob's vote; bob may mint his own, a dispatcher anyone's.
    forbidden = assert_error(
        await client.post(url, json={"approver": "bob"}, headers=ALICE), 403, "forbidden"
    )
    assert forbidden["details"]["requiredScope"] == "approvals:delegate"
    assert (await client.post(url, json={"approver": "bob"}, headers=ACME_BOB)).status_code == 201
    assert (await client.post(url, json={"approver": "zoe"}, headers=MAILER)).status_code == 201
    # An inspect link needs no approver: it cannot vote.
    assert (await client.post(url, json={"intent": "inspect"}, headers=ALICE)).status_code == 201
    # A link that names no approver (as a foreign minter might make) cannot vote on such a gate.
    state: ServerState = app.state.wop
    record = state.host.pending_interrupts(run_id)[0]
    anonymous = mint(
        state.signing_keys, run_id=run_id, node_id="review", interrupt_id=record.key, now=state.host.clock()
    )
    refused = await client.post(f"/interrupts/{anonymous.token}", json={"resumeValue": {"action": "accept"}})
    assert_error(refused, 403, "forbidden")
    assert state.host.pending_interrupts(run_id)[0].votes in (None, [])


async def test_minting_for_an_approver_the_gate_does_not_name_is_refused(db_url: str) -> None:
    host = WopHost.from_url(db_url)
    host.register("pair", pair_graph())
    app = create_app(host, make_settings(db_url))
    try:
        async with serving(app, "http://t") as client:
            run_id = await suspended(client, "pair")
            url = f"/runs/{project_id(run_id)}/interrupts/review/tokens"
            for approver in ("mailer", "carol", "Alice"):
                body = assert_error(
                    await client.post(url, json={"approver": approver}, headers=MAILER), 403, "forbidden"
                )
                assert body["details"] == {"subjectId": approver}
            # Nothing was minted or voted: alice's own link still works and is a single vote.
            link = await token_for(client, run_id, approver="alice")
            vote = await client.post(
                f"/interrupts/{link['token']}", json={"resumeValue": {"action": "accept"}}
            )
            assert vote.json()["status"] == "waiting-approval"
    finally:
        host.saver.close()


async def test_a_links_approver_is_checked_for_eligibility_again_when_it_votes(db_url: str) -> None:
    """Eligibility is checked at mint and again at resolve: bob's link, minted while he is in the
    gate's group, is refused (403, nothing written) once he has left it, though his vote would
    decide the gate; back in the group, the same link decides it."""
    reviewers = {"alice", "bob"}

    def membership(principal: Principal) -> Membership:
        return Membership(
            groups=frozenset({"reviewers"}) if principal.subject_id in reviewers else frozenset()
        )

    host = WopHost.from_url(db_url, ref_kinds=("principal", "group"), membership=membership)
    host.register("group", approval_graph(required_approvals=2, group_refs=["reviewers"]))
    app = create_app(host, make_settings(db_url))
    try:
        async with serving(app) as client:
            run_id = await suspended(client, "group")
            wire = project_id(run_id)
            vote = {"resumeValue": {"action": "accept"}}
            first = await client.post(f"/runs/{wire}/interrupts/review", json=vote, headers=ALICE)
            assert first.status_code == 200 and first.json()["status"] == "waiting-approval", first.text
            # Minting checks eligibility now: carol is in no group, bob is.
            url = f"/runs/{wire}/interrupts/review/tokens"
            refused = await client.post(url, json={"approver": "carol"}, headers=MAILER)
            assert assert_error(refused, 403, "forbidden")["details"] == {"subjectId": "carol"}
            link = (await token_for(client, run_id, headers=MAILER, approver="bob"))["token"]
            reviewers.discard("bob")
            before = footprint(host, run_id)
            late = assert_error(await client.post(f"/interrupts/{link}", json=vote), 403, "forbidden")
            assert late["details"] == {"subjectId": "bob"}
            form = await client.post(
                f"/interrupts/{link}/form",
                content=b"action=accept",
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            assert form.status_code == 403, form.text
            assert footprint(host, run_id) == before  # no vote, no event, the gate still pending
            (gate,) = host.pending_interrupts(run_id)
            assert [v["voter"] for v in gate.votes or []] == ["alice"]
            assert (await at_rest(client, run_id))["status"] == "waiting-approval"
            reviewers.add("bob")
            decided = await client.post(f"/interrupts/{link}", json=vote)
            assert decided.status_code == 200 and decided.json()["status"] == "running", decided.text
            assert (await at_rest(client, run_id))["status"] == "completed"
    finally:
        host.saver.close()


async def test_without_a_public_url_no_link_is_built_on_the_host_header(db_url: str, host: WopHost) -> None:
    app = create_app(host, make_settings(db_url, public_url=None))
    async with serving(app, "http://evil.example") as client:
        run_id = await suspended(client)
        response = await client.post(
            f"/runs/{project_id(run_id)}/interrupts/review/tokens",
            json={},
            headers={**ALICE, "Host": "evil.example", "X-Forwarded-Host": "evil.example"},
        )
        body = assert_error(response, 422, "capability_not_provided")
        assert body["details"] == {"setting": "WOP_PUBLIC_URL"}
        assert "evil.example" not in response.text and "ow2." not in response.text


async def test_token_refusals(client: httpx.AsyncClient, app: FastAPI) -> None:
    run_id = await suspended(client)
    inspect_only = await token_for(client, run_id, intent="inspect")
    assert (await client.get(f"/interrupts/{inspect_only['token']}")).status_code == 200
    refused = await client.post(
        f"/interrupts/{inspect_only['token']}", json={"resumeValue": {"action": "accept"}}
    )
    assert_error(refused, 403, "forbidden")
    for bad in (
        "b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef",
        "ow2.hs256.nokid.b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef",
    ):
        assert_error(await client.get(f"/interrupts/{bad}"), 401, "interrupt_token_invalid")
        assert_error(
            await client.post(f"/interrupts/{bad}", json={"resumeValue": {}}), 401, "interrupt_token_invalid"
        )
    state: ServerState = app.state.wop
    record = state.host.pending_interrupts(run_id)[0]
    old = mint(
        state.signing_keys,
        run_id=run_id,
        node_id="review",
        interrupt_id=record.key,
        now=state.host.clock() - timedelta(hours=1),
    )
    assert_error(await client.get(f"/interrupts/{old.token}"), 410, "interrupt_expired")
    assert_error(
        await client.post(f"/interrupts/{old.token}", json={"resumeValue": {"action": "accept"}}),
        410,
        "interrupt_expired",
    )
    live = await token_for(client, run_id)
    bad_value = await client.post(f"/interrupts/{live['token']}", json={"resumeValue": {"action": "launch"}})
    assert_error(bad_value, 400, "validation_error")
    await client.post(f"/runs/{project_id(run_id)}/cancel", json={}, headers=ALICE)
    after_cancel = await client.post(
        f"/interrupts/{live['token']}", json={"resumeValue": {"action": "accept"}}
    )
    assert_error(after_cancel, 409, "interrupt_already_resolved")


async def test_mint_refusals(client: httpx.AsyncClient) -> None:
    run_id = await suspended(client)
    wire = project_id(run_id)
    assert_error(
        await client.post(f"/runs/{wire}/interrupts/review/tokens", json={}, headers=READER), 403, "forbidden"
    )
    assert_error(
        await client.post(f"/runs/{wire}/interrupts/nope/tokens", json={}, headers=ALICE), 404, "not_found"
    )
    assert_error(
        await client.post(f"/runs/{wire}/interrupts/review/tokens", json={"intent": "admin"}, headers=ALICE),
        400,
        "validation_error",
    )


async def test_token_expiry_is_capped_by_the_deadline(client: httpx.AsyncClient, app: FastAPI) -> None:
    run_id = await suspended(client, "timed")
    minted = await token_for(client, run_id, ttlSeconds=3600)
    state: ServerState = app.state.wop
    claims = verify(state.signing_keys, minted["token"], now=state.host.clock())
    deadline = state.host.pending_interrupts(run_id)[0].deadline
    assert deadline is not None
    assert claims.expires_at <= deadline.replace(tzinfo=claims.expires_at.tzinfo)


async def test_reviewer_page(client: httpx.AsyncClient) -> None:
    run_id = await suspended(client)
    minted = await token_for(client, run_id)
    page = await client.get(f"/interrupts/{minted['token']}", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "openwop-version" not in page.headers
    assert "Publish the draft?" in page.text and "<script" not in page.text
    assert f'action="/interrupts/{minted["token"]}/form#answer-accept"' in page.text
    done = await client.post(
        f"/interrupts/{minted['token']}/form",
        content=b"action=accept&feedback=looks+good",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert done.status_code == 200
    assert "Decision recorded: <strong>Accepted</strong>" in done.text
    assert (await at_rest(client, run_id))["status"] == "waiting-input"
    used = await client.get(f"/interrupts/{minted['token']}", headers={"Accept": "text/html"})
    assert used.status_code == 409
    assert "already answered" in used.text and "Traceback" not in used.text
    invalid = await client.get("/interrupts/not-a-token", headers={"Accept": "text/html"})
    assert invalid.status_code == 401 and "not valid" in invalid.text
    clarify = await token_for(client, run_id, node="clarify")
    form = await client.get(f"/interrupts/{clarify['token']}", headers={"Accept": "text/html"})
    assert "Which colour?" in form.text
    answered = await client.post(
        f"/interrupts/{clarify['token']}/form",
        content=b"answer.q1=blue",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answered.status_code == 200 and "<dt>Which colour?</dt><dd>blue</dd>" in answered.text


async def test_group_and_role_refs_a_host_does_not_honour_bind_nobody_at_mint(db_url: str) -> None:
    """A host without ``group``/``role`` ref kinds ignores ``approverGroupRefs`` /
    ``approverRoleRefs`` at mint as it does at resolve: the gate admits anyone, so an anonymous
    resolve link for it is minted (not refused 400), decides it, and a callback link could too."""
    host = WopHost.from_url(db_url)  # ref_kinds: principal only
    host.register("refs", approval_graph(group_refs=["reviewers"], role_refs=["admin"]))
    app = create_app(host, make_settings(db_url))
    try:
        async with serving(app) as client:
            run_id = await suspended(client, "refs")
            link = await token_for(client, run_id)  # no approver named
            assert "approver" not in link
            decided = await client.post(
                f"/interrupts/{link['token']}", json={"resumeValue": {"action": "accept"}}
            )
            assert decided.status_code == 200, decided.text
            assert (await at_rest(client, run_id))["status"] == "completed"
    finally:
        host.saver.close()
