"""core.subWorkflow on a real host: child runs, completion, failure, cancel cascade, no second child."""

from __future__ import annotations

from typing import Any

import pytest

from tests.definitions.test_compile import definition, node, types
from tests.host._graphs import ALICE
from tests.host._support import events, payloads
from wop_langgraph.definitions import register_definition
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import InterruptAlreadyResolved, ValidationError

GATE = node("gate", "core.approvalGate", config={"title": "Child?", "actions": ["accept", "reject"]})


def parent(child: str, **config: Any) -> dict[str, Any]:
    return definition(
        "parent", [node("spawn", "core.subWorkflow", config={"workflowId": child, **config})], []
    )


def child_of(host: WopHost, parent_id: str) -> str:
    (record,) = host.pending_interrupts(parent_id)
    child: str = record.payload["data"]["payload"]["childRunId"]
    return child


@pytest.fixture
def linked(host: WopHost) -> WopHost:
    register_definition(host, definition("child", [GATE], []), types())
    register_definition(host, parent("child"), types())
    return host


def test_the_child_completes_and_the_parent_records_it(linked: WopHost) -> None:
    parent_id = linked.create_run("parent", {}, owner=ALICE)["runId"]
    assert linked.snapshot(parent_id)["status"] == "waiting-input"
    child_id = child_of(linked, parent_id)
    assert linked.snapshot(child_id)["metadata"]["parent"]["runId"] == parent_id
    linked.resolve(child_id, "gate", {"action": "accept"}, ALICE)
    assert linked.snapshot(parent_id)["status"] == "completed"
    (completed,) = payloads(events(linked, parent_id), "node.completed")
    assert completed["outputs"] == {"childRunId": child_id, "childStatus": "completed"}
    (resolved,) = payloads(events(linked, parent_id), "interrupt.resolved")
    assert resolved["resolvedBy"]["subjectId"] == "wop-langgraph:subWorkflow"
    assert len([r for r in _runs(linked) if r != parent_id]) == 1  # the resumed node made no second child


def test_a_failed_child_fails_the_parent_unless_absorbed(linked: WopHost) -> None:
    parent_id = linked.create_run("parent", {}, owner=ALICE)["runId"]
    linked.resolve(child_of(linked, parent_id), "gate", {"action": "reject"}, ALICE)
    assert linked.snapshot(parent_id)["error"]["code"] == "child_run_failed"
    register_definition(linked, {**parent("child", onChildFailure="absorb"), "id": "absorbing"}, types())
    absorbing = linked.create_run("absorbing", {}, owner=ALICE)["runId"]
    linked.resolve(child_of(linked, absorbing), "gate", {"action": "reject"}, ALICE)
    assert linked.snapshot(absorbing)["status"] == "completed"


def test_cancelling_the_parent_cancels_the_child(linked: WopHost) -> None:
    parent_id = linked.create_run("parent", {}, owner=ALICE)["runId"]
    child_id = child_of(linked, parent_id)
    linked.cancel(parent_id)
    assert linked.snapshot(child_id)["status"] == "cancelled"
    # The official runCancelled pairs the cascade's reason with the parent that initiated it.
    assert payloads(events(linked, child_id), "run.cancelled") == [
        {"reason": "parent-cancelled", "parentRunId": parent_id}
    ]
    with pytest.raises(InterruptAlreadyResolved):
        linked.resolve(child_id, "gate", {"action": "accept"}, ALICE)


def test_without_propagation_the_child_outlives_the_parent(linked: WopHost) -> None:
    register_definition(linked, {**parent("child", propagateCancellation=False), "id": "detached"}, types())
    parent_id = linked.create_run("detached", {}, owner=ALICE)["runId"]
    child_id = child_of(linked, parent_id)
    linked.cancel(parent_id)
    assert linked.snapshot(child_id)["status"] == "waiting-approval"
    linked.resolve(child_id, "gate", {"action": "accept"}, ALICE)
    assert linked.snapshot(parent_id)["status"] == "cancelled"


def test_a_child_that_completes_at_once_does_not_suspend_the_parent(host: WopHost) -> None:
    register_definition(host, definition("quick", [node("a")], []), types())
    register_definition(host, parent("quick"), types())
    assert host.create_run("parent", {}, owner=ALICE)["status"] == "completed"


def test_an_unloaded_child_workflow_fails_the_node(host: WopHost) -> None:
    register_definition(host, parent("missing"), types())
    snapshot = host.create_run("parent", {}, owner=ALICE)
    assert (snapshot["status"], snapshot["error"]["code"]) == ("failed", "node_config_invalid")


@pytest.mark.parametrize(
    "config", [{"inputMapping": {"a": "b"}}, {"waitForCompletion": False}, {"onChildFailure": "ignore"}]
)
def test_unsupported_config_is_refused_at_load(host: WopHost, config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        register_definition(host, parent("child", **config), types())


def _runs(host: WopHost) -> list[str]:
    from tests.host._support import all_run_ids

    return all_run_ids(host)
