"""A late answer over HTTP times the gate out; it never grants (issue 9, point 1), with the sweep off.

The app is served in process with its lifespan (its workers drive the runs) and
``sweep_interval_seconds=0``: nothing but the resolve itself can notice the deadline. The host's
clock runs in real time shifted by an offset the test moves past the deadline, so "wait past the
deadline" takes no wall-clock time and cannot race a slow machine. Before each late answer the
test checks the gate is still pending, so a timeout seen afterwards was decided by that answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.host._graphs import approval_graph, count
from tests.host.conftest import _fresh_counts  # noqa: F401  (autouse: node counts start at 0 per test)
from tests.server.conftest import ACME_BOB, ALICE, READER, assert_error, at_rest, make_settings, serving
from wop_langgraph._clock import as_utc, utcnow
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app
from wop_langgraph.server.state import ServerState
from wop_langgraph.tokens import MintedToken, mint

TIMEOUT_SECONDS = 60
ACCEPT = {"resumeValue": {"action": "accept"}}


@dataclass
class ShiftedClock:
    """Real time plus ``offset``: the host's clock, moved forward by the test."""

    offset: timedelta = field(default_factory=timedelta)

    def __call__(self) -> datetime:
        return utcnow() + self.offset

    def pass_deadline(self) -> None:
        self.offset += timedelta(seconds=TIMEOUT_SECONDS + 1)


@dataclass
class Served:
    client: httpx.AsyncClient
    host: WopHost
    state: ServerState
    clock: ShiftedClock


@pytest.fixture
async def served(db_url: str) -> AsyncIterator[Served]:
    clock = ShiftedClock()
    host = WopHost.from_url(db_url, clock=clock)
    # write -> review (a 60 s gate) -> publish; "pair" needs both alice and bob.
    host.register("timed", approval_graph(timeout=TIMEOUT_SECONDS))
    host.register(
        "pair", approval_graph(timeout=TIMEOUT_SECONDS, required_approvals=2, approvers=["alice", "bob"])
    )
    settings = make_settings(db_url)
    assert settings.sweep_interval_seconds == 0  # the sweep is off: only a resolve sees the deadline
    app = create_app(host, settings)
    try:
        async with serving(app) as client:
            yield Served(client, host, app.state.wop, clock)
    finally:
        host.saver.close()


async def suspended(s: Served, workflow: str) -> str:
    response = await s.client.post("/runs", json={"workflowId": workflow}, headers=ALICE)
    assert response.status_code == 201, response.text
    run_id = str(response.json()["runId"])
    assert (await at_rest(s.client, run_id))["status"] == "waiting-approval"
    return run_id


async def run_events(s: Served, run_id: str) -> list[dict[str, Any]]:
    page = await s.client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)
    assert page.status_code == 200, page.text
    return list(page.json()["events"])


def resolutions(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d["payload"] for d in docs if d["type"] == "interrupt.resolved"]


def gate_still_pending(s: Served, run_id: str) -> None:
    """No sweep and no earlier request timed the gate out: it is pending, past its deadline."""
    (gate,) = s.host.pending_interrupts(run_id)
    assert gate.deadline is not None and as_utc(gate.deadline) <= s.clock()


async def assert_timed_out_and_nothing_granted(s: Served, run_id: str) -> dict[str, Any]:
    """One ``interrupt.resolved`` (timeout, rejected, by no one); the run failed; publish never ran."""
    snapshot = await at_rest(s.client, run_id)
    assert (snapshot["status"], snapshot["error"]["code"]) == ("failed", "approval_rejected"), snapshot
    docs = await run_events(s, run_id)
    (resolved,) = resolutions(docs)
    assert (resolved["action"], resolved["decision"], resolved["reason"]) == (
        "timeout",
        "rejected",
        "timeout",
    )
    assert "resolvedBy" not in resolved and "resumeValue" not in resolved
    assert [d for d in docs if d["type"] in ("approval.granted", "run.completed")] == []
    assert len([d for d in docs if d["type"] == "approval.rejected"]) == 1
    assert not [d for d in docs if d.get("nodeId") == "publish" or d["payload"].get("nodeId") == "publish"]
    assert count("review:past") == 0 and count("publish") == 0
    assert [r.status for r in s.host.interrupts(run_id)] == ["expired"]
    return resolved


async def test_a_late_resolve_by_run_times_the_gate_out(served: Served) -> None:
    s = served
    run_id = await suspended(s, "timed")
    url = f"/runs/{project_id(run_id)}/interrupts/review"
    s.clock.pass_deadline()
    gate_still_pending(s, run_id)
    late = assert_error(
        await s.client.post(url, json=ACCEPT, headers=ALICE), 409, "interrupt_already_resolved"
    )
    assert late["details"] == {"reason": "timeout"}
    await assert_timed_out_and_nothing_granted(s, run_id)
    # A retry is answered the same way and writes nothing more.
    assert_error(await s.client.post(url, json=ACCEPT, headers=ALICE), 409, "interrupt_already_resolved")
    assert len(resolutions(await run_events(s, run_id))) == 1


async def test_a_link_minted_before_the_deadline_is_refused_after_it(served: Served) -> None:
    """A link's expiry is capped at the gate's deadline: used late it is ``410 interrupt_expired``.

    The refusal comes from the token, before the resolver, so it writes nothing; the gate stays
    pending (past its deadline) until something reads the run: a read past the deadline applies
    the timeout (it never shows the gate answerable), and the answer by run is refused.
    """
    s = served
    run_id = await suspended(s, "timed")
    minted = await s.client.post(
        f"/runs/{project_id(run_id)}/interrupts/review/tokens", json={}, headers=ALICE
    )
    assert minted.status_code == 201, minted.text
    token = minted.json()["token"]
    s.clock.pass_deadline()
    assert_error(await s.client.post(f"/interrupts/{token}", json=ACCEPT), 410, "interrupt_expired")
    form = await s.client.post(
        f"/interrupts/{token}/form",
        content=b"action=accept",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 410, form.text
    gate_still_pending(s, run_id)
    assert [r["reason"] for r in resolutions(await run_events(s, run_id))] == ["timeout"]
    assert count("publish") == 0
    url = f"/runs/{project_id(run_id)}/interrupts/review"
    assert_error(await s.client.post(url, json=ACCEPT, headers=ALICE), 409, "interrupt_already_resolved")
    await assert_timed_out_and_nothing_granted(s, run_id)


def uncapped_link(s: Served, run_id: str, key: str, approver: str | None = None) -> MintedToken:
    """A review link signed with the server's keys whose expiry is not capped at the deadline."""
    return mint(
        s.state.signing_keys,
        run_id=run_id,
        node_id="review",
        interrupt_id=key,
        now=s.clock(),
        ttl=timedelta(hours=1),
        approver=approver,
    )


async def test_a_late_resolve_by_a_link_that_outlives_the_deadline_times_the_gate_out(served: Served) -> None:
    """A link whose expiry is not capped (minted with the host's keys by another minter) reaches
    the resolver after the deadline: the deadline decided there times the gate out (409)."""
    s = served
    run_id = await suspended(s, "timed")
    (gate,) = s.host.pending_interrupts(run_id)
    link = uncapped_link(s, run_id, gate.key)
    s.clock.pass_deadline()
    gate_still_pending(s, run_id)
    late = assert_error(
        await s.client.post(f"/interrupts/{link.token}", json=ACCEPT), 409, "interrupt_already_resolved"
    )
    assert late["details"] == {"reason": "timeout"}
    await assert_timed_out_and_nothing_granted(s, run_id)
    assert_error(
        await s.client.post(f"/interrupts/{link.token}", json=ACCEPT), 409, "interrupt_already_resolved"
    )


@pytest.mark.parametrize("surface", ["run", "token"])
async def test_a_late_vote_does_not_release_a_quorum_gate(served: Served, surface: str) -> None:
    """2 of [alice, bob]: alice votes in time, bob after the deadline; the gate times out (rejected)."""
    s = served
    run_id = await suspended(s, "pair")
    url = f"/runs/{project_id(run_id)}/interrupts/review"
    in_time = await s.client.post(url, json=ACCEPT, headers=ALICE)
    assert in_time.status_code == 200, in_time.text
    assert in_time.json()["status"] == "waiting-approval"
    (gate,) = s.host.pending_interrupts(run_id)
    assert [v["voter"] for v in gate.votes or []] == ["alice"]
    # bob's own link, its expiry not capped at the deadline (so the resolver, not the token, decides)
    bobs_link = uncapped_link(s, run_id, gate.key, approver="bob").token
    s.clock.pass_deadline()
    gate_still_pending(s, run_id)
    if surface == "run":
        late = await s.client.post(url, json=ACCEPT, headers=ACME_BOB)
    else:
        late = await s.client.post(f"/interrupts/{bobs_link}", json=ACCEPT)
    assert assert_error(late, 409, "interrupt_already_resolved")["details"] == {"reason": "timeout"}
    await assert_timed_out_and_nothing_granted(s, run_id)
    (record,) = s.host.interrupts(run_id)
    assert [v["voter"] for v in record.votes or []] == ["alice"]  # bob's late vote was never counted
