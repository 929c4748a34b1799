"""A new interrupt kind, declared in one module (``expense_kind.py``) and registered, driven
end to end: a real graph on a real host (each backend) behind the real app.

The node raises it; the run waits in the kind's own status; the reviewer page renders the
kind's form; a value its resume rule refuses is refused with ``validation_error`` (over the
API and through the form) and changes nothing; a good one resumes the run exactly once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, TypedDict
from urllib.parse import urlencode

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from tests.kinds.expense_kind import EXPENSE_CHECK, NAME, ExpenseClaim, ExpensePage, check_expense
from tests.server.conftest import ALICE, READER, assert_error, at_rest, make_settings, serving
from wop_langgraph.host import WopHost
from wop_langgraph.kinds import get_kind, kind_of, page_for, register, unregister
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HTML = {"Accept": "text/html"}
#: How often the node ran past its interrupt (per thread): a resume runs it on exactly once.
PASSED: dict[str, int] = {}


class State(TypedDict, total=False):
    approved: int


def claim(state: State, config: RunnableConfig) -> State:
    approved = check_expense(ExpenseClaim(amount=120, currency="EUR", purpose="Train to Lyon"))
    thread = config["configurable"]["thread_id"]
    PASSED[thread] = PASSED.get(thread, 0) + 1
    return {"approved": approved}


def _graph(checkpointer: Any = None) -> Any:
    builder = StateGraph(State)
    builder.add_node("claim", claim)
    builder.add_edge(START, "claim")
    builder.add_edge("claim", END)
    return builder.compile(checkpointer=checkpointer)


@pytest.fixture
def host(db_url: str) -> Iterator[WopHost]:
    host = WopHost.from_url(db_url)
    host.register("expenses", _graph())
    try:
        yield host
    finally:
        host.saver.close()


@pytest.fixture
async def client(host: WopHost, db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(create_app(host, make_settings(db_url))) as c:
        yield c


async def _events(client: httpx.AsyncClient, run_id: str, kind: str) -> list[dict[str, Any]]:
    response = await client.get(f"/runs/{project_id(run_id)}/events/poll?timeout=0", headers=READER)
    return [e["payload"] for e in response.json()["events"] if e["type"] == kind]


async def _unchanged(client: httpx.AsyncClient, run_id: str) -> None:
    snapshot = await at_rest(client, run_id)
    assert snapshot["status"] == "waiting-approval"
    assert await _events(client, run_id, "interrupt.resolved") == []
    assert await _events(client, run_id, "node.resumed") == []


async def test_a_kind_added_in_one_module_runs_end_to_end(client: httpx.AsyncClient) -> None:
    created = await client.post("/runs", json={"workflowId": "expenses"}, headers=ALICE)
    assert created.status_code == 201, created.text
    run_id = str(created.json()["runId"])

    # The node raised it; the run waits in the kind's status (a plain `custom` waits for input).
    snapshot = await at_rest(client, run_id)
    assert snapshot["status"] == "waiting-approval", snapshot
    (requested,) = await _events(client, run_id, "interrupt.requested")
    assert requested["kind"] == "custom" and requested["data"]["customKind"] == NAME
    assert kind_of(requested) is EXPENSE_CHECK
    (suspended,) = await _events(client, run_id, "node.suspended")
    assert suspended["reason"] == NAME

    # The reviewer page renders the kind's own form.
    minted = await client.post(f"/runs/{project_id(run_id)}/interrupts/claim/tokens", json={}, headers=ALICE)
    token = str(minted.json()["token"])
    page = await client.get(f"/interrupts/{token}", headers=HTML)
    assert page.status_code == 200
    assert "Expense claim: Train to Lyon" in page.text and "Claimed: 120 EUR" in page.text
    assert 'name="approvedAmount"' in page.text and "Approve this amount" in page.text

    # A value the kind's rule refuses (the schema alone admits it): refused, nothing changed.
    refused = await client.post(f"/interrupts/{token}", json={"resumeValue": {"approvedAmount": 500}})
    body = assert_error(refused, 400, "validation_error")
    assert body["details"]["path"] == "/resumeValue/approvedAmount"
    await _unchanged(client, run_id)
    # The same through the form: the page says why, beside the field.
    form = await client.post(
        f"/interrupts/{token}/form", content=urlencode({"approvedAmount": "500"}).encode(), headers=FORM
    )
    assert form.status_code == 400 and "more than the 120 claimed" in form.text
    await _unchanged(client, run_id)
    # A value the schema refuses, too.
    assert_error(
        await client.post(f"/interrupts/{token}", json={"resumeValue": {"approvedAmount": "lots"}}),
        400,
        "validation_error",
    )
    await _unchanged(client, run_id)

    # A good one (through the form) resumes the run exactly once.
    done = await client.post(
        f"/interrupts/{token}/form", content=urlencode({"approvedAmount": "95"}).encode(), headers=FORM
    )
    assert done.status_code == 200, done.text
    snapshot = await at_rest(client, run_id)
    assert snapshot["status"] == "completed", snapshot
    (resolved,) = await _events(client, run_id, "interrupt.resolved")
    assert resolved["resumeValue"] == {"approvedAmount": 95}
    assert len(await _events(client, run_id, "node.resumed")) == 1
    (completed,) = await _events(client, run_id, "run.completed")
    assert completed["outputs"]["approved"] == 95
    assert PASSED[run_id] == 1
    again = await client.post(f"/interrupts/{token}", json={"resumeValue": {"approvedAmount": 95}})
    assert again.status_code == 409 and again.json()["error"] == "interrupt_already_resolved"


def test_the_same_rule_applies_under_plain_langgraph() -> None:
    """No host, no registry: the node call carries the kind's rule, so a bad value is refused alike."""
    graph = _graph(InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "plain-expense"}}
    (asked,) = graph.invoke({}, config)["__interrupt__"]
    assert asked.value["data"] == {
        "customKind": NAME,
        "payload": {"amount": 120, "currency": "EUR", "purpose": "Train to Lyon"},
    }
    with pytest.raises(ValidationError) as refused:
        graph.invoke(Command(resume={"approvedAmount": 500}), config)
    assert refused.value.details == {"path": "/resumeValue/approvedAmount", "maximum": 120}
    assert graph.invoke(Command(resume={"approvedAmount": 60}), config)["approved"] == 60


def test_the_registry_refuses_a_taken_name_or_a_closed_kind() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(EXPENSE_CHECK)
    with pytest.raises(ValueError, match="already registered"):
        register(get_kind("approval").__class__(**{**_fields(EXPENSE_CHECK), "name": "approval"}))
    with pytest.raises(ValueError, match="rides 'custom'"):
        register(get_kind("approval").__class__(**{**_fields(EXPENSE_CHECK), "wire_kind": "approval"}))


def test_an_unregistered_custom_kind_is_the_generic_custom_kind() -> None:
    payload = {"kind": "custom", "key": "k", "data": {"customKind": NAME, "payload": {}}}
    assert isinstance(page_for(payload), ExpensePage)
    unregister(NAME)
    try:
        assert kind_of(payload) is get_kind("custom")
        assert not isinstance(page_for(payload), ExpensePage)
    finally:
        register(EXPENSE_CHECK)


def _fields(kind: Any) -> dict[str, Any]:
    return {name: getattr(kind, name) for name in kind.__dataclass_fields__}
