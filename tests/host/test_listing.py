"""``WopHost.list_runs`` and ``WopHost.answerable_interrupts`` (the library side of ``GET /runs`` and
``GET /interrupts``), on each backend: tenancy, filters, cursors, eligibility and deadlines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.host._graphs import ALICE, TENANT, approval_graph, clarification_graph
from tests.host._support import HostFactory
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.host.listing import MAX_PAGE_SIZE, decode_cursor, encode_cursor, page_size
from wop_langgraph.protocol.errors import ValidationError

BOB = Principal(TENANT, "bob", frozenset({"approvals:respond", "runs:create"}))
OTHER = Principal("globex", "olga", frozenset({"approvals:respond", "runs:create"}))


def _runs(host: WopHost, tenant: str = TENANT, **options: object) -> list[str]:
    """Every run id of the list, following cursors one run at a time."""
    ids: list[str] = []
    cursor = None
    while True:
        page = host.list_runs(tenant, cursor=cursor, limit=1, **options)  # type: ignore[arg-type]
        ids += [run["runId"] for run in page.runs]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


def test_list_runs_is_tenant_scoped_newest_first_and_filtered(host: WopHost) -> None:
    host.register("approve", approval_graph())
    host.register("bob-only", approval_graph(approvers=["bob"]))
    mine = [host.create_run("approve", {}, owner=ALICE, tags=["t1", "t2"])["runId"] for _ in range(3)]
    other = host.create_run("approve", {}, owner=OTHER, tags=["t1"])["runId"]
    gated = host.create_run("bob-only", {}, owner=ALICE, tags=["t2"])["runId"]
    host.resolve(mine[0], "review", {"action": "accept"}, ALICE)
    everything = _runs(host)
    assert everything == [gated, *reversed(mine)] and other not in everything
    assert _runs(host, "globex") == [other]
    assert _runs(host, status="completed") == [mine[0]]
    assert _runs(host, workflow_id="bob-only") == [gated]
    assert _runs(host, tags=["t1", "t2"]) == list(reversed(mine))
    assert _runs(host, tags=["t2"]) == everything
    assert _runs(host, tags=["t3"]) == []
    assert _runs(host, created_after=datetime.now(UTC) + timedelta(minutes=1)) == []
    assert _runs(host, created_before=datetime.now(UTC) + timedelta(minutes=1)) == everything
    page = host.list_runs(TENANT, limit=2)
    assert [r["runId"] for r in page.runs] == everything[:2] and page.next_cursor is not None
    assert page.runs[0] == host.snapshot(gated)  # the same snapshot as GET /runs/{id}
    rest = host.list_runs(TENANT, cursor=page.next_cursor)
    assert [r["runId"] for r in rest.runs] == everything[2:] and rest.next_cursor is None
    with pytest.raises(ValidationError):
        host.list_runs(TENANT, cursor="garbage")
    with pytest.raises(ValidationError):
        host.list_runs(TENANT, limit=0)


async def test_answerable_interrupts_apply_eligibility_votes_and_deadlines(make_host: HostFactory) -> None:
    now = [datetime.now(UTC)]
    host = make_host(clock=lambda: now[0])
    host.register("approve", approval_graph())
    host.register("bob-only", approval_graph(approvers=["bob"]))
    host.register("quorum", approval_graph(required_approvals=2))
    host.register("timed", clarification_graph(timeout=60))
    host.register("other", approval_graph())

    def create(workflow_id: str, owner: Principal = ALICE) -> str:
        now[0] += timedelta(seconds=1)  # one second apart: the list's order is creation order
        return str(host.create_run(workflow_id, {}, owner=owner)["runId"])

    open_gate, bobs, quorum, timed = (create(w) for w in ("approve", "bob-only", "quorum", "timed"))
    create("other", OTHER)

    def ids(principal: Principal, **options: object) -> list[str]:
        page = host.answerable_interrupts(principal, **options)  # type: ignore[arg-type]
        return [item.record.run_id for item in page.items]

    assert ids(ALICE) == [open_gate, quorum, timed]
    assert ids(BOB) == [open_gate, bobs, quorum, timed]
    assert ids(BOB, kind="clarification") == [timed]
    assert ids(BOB, workflow_id="bob-only") == [bobs]
    host.resolve(quorum, "review", {"action": "accept"}, ALICE)  # one vote of two
    assert ids(ALICE) == [open_gate, timed] and quorum in ids(BOB)
    now[0] += timedelta(seconds=61)  # past the clarification's deadline: an answer would time it out
    assert ids(BOB) == [open_gate, bobs, quorum]
    first = host.answerable_interrupts(BOB, limit=2)
    assert [i.workflow_id for i in first.items] == ["approve", "bob-only"] and first.next_cursor
    later = await host.aanswerable_interrupts(BOB, cursor=first.next_cursor, limit=2)
    assert [i.record.run_id for i in later.items] == [quorum] and later.next_cursor is None
    page = await host.alist_runs(TENANT, workflow_id="quorum")
    assert [r["runId"] for r in page.runs] == [quorum]


def test_cursors_and_page_sizes() -> None:
    moment = datetime(2026, 12, 6, 4, 5, 6, 789012, tzinfo=UTC)
    cursor = encode_cursor(moment, "acme/AAAAAAAAAAAAAAAAAAAAAA")
    assert decode_cursor(cursor, "acme") == (moment, "acme/AAAAAAAAAAAAAAAAAAAAAA")
    assert decode_cursor(cursor, "globex") == (moment, "globex/AAAAAAAAAAAAAAAAAAAAAA")  # the caller's own
    for bad in ("", "1.short", "x.AAAAAAAAAAAAAAAAAAAAAA", "01.AAAAAAAAAAAAAAAAAAAAAA"):
        with pytest.raises(ValidationError):
            decode_cursor(bad, "acme")
    assert page_size(None) == 50 and page_size(10_000) == MAX_PAGE_SIZE
