"""Definitions compiled to LangGraph and run by a real host: trigger rules, failures, skips, loops.

Custom node types (``test.*``) are registered on a copy of the default registry, as users do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.host._graphs import ALICE
from tests.host._support import HostFactory, events, payloads
from wop_langgraph.definitions import (
    NodeInvocation,
    NodeType,
    NodeTypeRegistry,
    UnknownNodeType,
    default_node_types,
    register_definition,
)
from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import CapabilityRequired, InternalError, ValidationError
from wop_langgraph.store.run_tables import runs_table

RAN: list[str] = []


class Boom(InternalError):
    code = "test_boom"  # a vendor-free code is fine inside node.failed / run.failed events
    retryable = False


def _record(invocation: NodeInvocation) -> Mapping[str, Any]:
    RAN.append(invocation.node_id)
    return {"ran": invocation.node_id, **invocation.inputs}


def _fail(invocation: NodeInvocation) -> Mapping[str, Any]:
    RAN.append(invocation.node_id)
    raise Boom(f"{invocation.node_id} broke")


def types() -> NodeTypeRegistry:
    registry = default_node_types()
    registry.register(NodeType("test.record", _record))
    registry.register(NodeType("test.fail", _fail))
    return registry


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def node(node_id: str, type_id: str = "test.record", **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "typeId": type_id,
        "name": node_id,
        "position": {"x": 0, "y": 0},
        "config": extra.pop("config", {}),
        "inputs": extra.pop("inputs", {}),
        **extra,
    }


def edge(source: str, target: str, rule: str | None = None) -> dict[str, Any]:
    doc = {"id": f"{source}-{target}", "sourceNodeId": source, "targetNodeId": target}
    if rule:
        doc["triggerRule"] = rule
    return doc


def definition(
    workflow_id: str, nodes: list[dict[str, Any]], edges: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {
        "id": workflow_id,
        "name": workflow_id,
        "version": "1.0",
        "nodes": nodes,
        "edges": edges,
        "triggers": [{"id": "manual", "type": "manual"}],
        "variables": extra.pop("variables", []),
        "metadata": {},
        "settings": extra.pop("settings", {}),
        **extra,
    }


def run(host: WopHost, doc: dict[str, Any], inputs: Any = None) -> tuple[str, dict[str, Any]]:
    register_definition(host, doc, types())
    snapshot = host.create_run(doc["id"], inputs or {}, owner=ALICE)
    return snapshot["runId"], snapshot


def test_a_join_waits_for_every_source_and_runs_once(host: WopHost) -> None:
    doc = definition(
        "diamond",
        [node("a"), node("b"), node("c"), node("d")],
        [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d")],
    )
    run_id, snapshot = run(host, doc)
    assert snapshot["status"] == "completed"
    assert RAN == ["a", "b", "c", "d"]
    started = [(p["nodeId"], p["typeId"]) for p in payloads(events(host, run_id), "node.started")]
    assert started == [(n, "test.record") for n in "abcd"]


def test_any_failed_edge_absorbs_a_failure_and_the_run_completes(host: WopHost) -> None:
    doc = definition(
        "routed",
        [node("a", "test.fail"), node("handler"), node("next")],
        [edge("a", "handler", "any_failed"), edge("a", "next")],
    )
    run_id, snapshot = run(host, doc)
    assert snapshot["status"] == "completed"
    assert RAN == ["a", "handler"]
    docs = events(host, run_id)
    (failed,) = payloads(docs, "node.failed")
    assert failed["nodeId"] == "a" and failed["error"]["code"] == "test_boom"
    assert payloads(docs, "node.skipped") == [
        {"nodeId": "next", "reason": "triggerRule all_success cannot be met"}
    ]
    assert "node.completed" not in [d["type"] for d in docs if d.get("nodeId") == "a"]


def test_no_admissible_continuation_fails_the_run_with_the_source_error(host: WopHost) -> None:
    doc = definition(
        "unrouted",
        [node("a", "test.fail"), node("b"), node("c")],
        [edge("a", "b", "all_success"), edge("a", "c", "none_failed")],
    )
    run_id, snapshot = run(host, doc)
    assert snapshot["status"] == "failed"
    assert snapshot["error"]["code"] == "test_boom"
    (failed_run,) = payloads(events(host, run_id), "run.failed")
    assert failed_run["failedNodeId"] == "a" and failed_run["error"]["code"] == "test_boom"
    assert RAN == ["a"]


def test_all_complete_runs_after_a_failure_and_a_success(host: WopHost) -> None:
    doc = definition(
        "complete",
        [node("a", "test.fail"), node("b"), node("join")],
        [edge("a", "join", "all_complete"), edge("b", "join", "all_complete")],
    )
    _, snapshot = run(host, doc)
    assert snapshot["status"] == "completed"
    assert RAN == ["a", "b", "join"]


def test_a_rejected_gate_satisfies_only_rules_that_admit_failure(host: WopHost) -> None:
    gate = node("gate", "core.approvalGate", config={"title": "Ship?", "actions": ["accept", "reject"]})
    doc = definition(
        "gated",
        [gate, node("ok"), node("rej"), node("end")],
        [
            edge("gate", "ok", "all_success"),
            edge("gate", "rej", "any_failed"),
            edge("ok", "end", "none_failed"),
            edge("rej", "end", "none_failed"),
        ],
    )
    rejected, snapshot = run(host, doc)
    assert snapshot["status"] == "waiting-approval"
    assert host.resolve(rejected, "gate", {"action": "reject"}, ALICE)["status"] == "completed"
    assert RAN == ["rej", "end"]
    docs = events(host, rejected)
    assert [p["error"]["code"] for p in payloads(docs, "node.failed")] == ["approval_rejected"]
    assert [p["nodeId"] for p in payloads(docs, "node.skipped")] == ["ok"]
    RAN.clear()
    accepted = host.create_run("gated", {}, owner=ALICE)["runId"]
    assert host.resolve(accepted, "gate", {"action": "accept"}, ALICE)["status"] == "completed"
    assert RAN == ["ok", "end"]


def test_max_loopback_iterations_bounds_a_cycle(host: WopHost) -> None:
    doc = definition(
        "loop",
        [node("start"), node("work"), node("again")],
        [edge("start", "work", "any_success"), edge("work", "again"), edge("again", "work", "any_success")],
        settings={"maxLoopbackIterations": 3},
    )
    run_id, snapshot = run(host, doc)
    assert snapshot["status"] == "completed"
    assert RAN == ["start"] + ["work", "again"] * 3
    reasons = [p["reason"] for p in payloads(events(host, run_id), "node.skipped")]
    assert "settings.maxLoopbackIterations (3) reached" in reasons


def test_a_run_recursion_limit_caps_node_executions_with_cap_breached(host: WopHost) -> None:
    # The run's own runaway guard bounds the cycle (settings.maxLoopbackIterations is authoring
    # metadata then, openwop#1748): seven executions run, the eighth breaches the cap.
    doc = definition(
        "guarded-loop",
        [node("start"), node("work"), node("again")],
        [edge("start", "work", "any_success"), edge("work", "again"), edge("again", "work", "any_success")],
        settings={"maxLoopbackIterations": 2},
    )
    register_definition(host, doc, types())
    guard = {"version": 1, "run": {"recursionLimit": 7}}
    snapshot = host.create_run("guarded-loop", {}, owner=ALICE, configurable=guard)
    assert snapshot["status"] == "failed" and snapshot["error"]["code"] == "recursion_limit_exceeded"
    assert RAN == ["start"] + ["work", "again"] * 3
    docs = events(host, snapshot["runId"])
    assert [d["type"] for d in docs].count("node.started") == 7
    assert payloads(docs, "cap.breached") == [{"kind": "node-executions", "limit": 7, "observed": 8}]
    assert [d["type"] for d in docs][-2:] == ["cap.breached", "run.failed"]
    assert "failedNodeId" not in payloads(docs, "run.failed")[0]


def test_inputs_come_from_variables_statics_and_other_nodes(host: WopHost) -> None:
    doc = definition(
        "ports",
        [
            node(
                "a",
                inputs={"x": {"type": "variable", "variableName": "x"}, "k": {"type": "static", "value": 7}},
            ),
            node("b", inputs={"fromA": {"type": "connection", "nodeId": "a", "outputKey": "x"}}),
        ],
        [edge("a", "b")],
        variables=[{"name": "x", "type": "number", "defaultValue": 1}],
    )
    run_id, snapshot = run(host, doc, {"x": 41})
    assert snapshot["status"] == "completed"
    outputs = host.events(run_id)[-1]["payload"]["outputs"]["__wop_outputs"]
    assert outputs == {"a": {"ran": "a", "x": 41, "k": 7}, "b": {"ran": "b", "fromA": 41}}


def test_unknown_node_type_is_refused_naming_it(host: WopHost) -> None:
    doc = definition("unknown", [node("a", "vendor.acme.publish")], [])
    with pytest.raises(UnknownNodeType, match=r"vendor\.acme\.publish") as caught:
        register_definition(host, doc, types())
    assert caught.value.details == {"typeId": "vendor.acme.publish", "nodeId": "a"}
    assert "unknown" not in host.registry


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            definition(
                "mixed", [node("a"), node("b"), node("c")], [edge("a", "c", "any_success"), edge("b", "c")]
            ),
            "disagree on triggerRule",
        ),
        (definition("cycle", [node("a"), node("b")], [edge("a", "b"), edge("b", "a")]), "no node can start"),
        (definition("dangling", [node("a")], [edge("a", "nowhere")]), "not a node of this workflow"),
        (definition("twice", [node("a"), node("a")], []), "used twice"),
        (
            definition(
                "cond",
                [node("a"), node("b")],
                [{**edge("a", "b"), "condition": {"type": "truthy", "left": "x"}}],
            ),
            "conditions are not supported",
        ),
        (
            definition(
                "profiled",
                [node("a", "core.approvalGate", config={"profile": "openwop-interrupt-quorum"})],
                [],
            ),
            "unknown interrupt profile",
        ),
    ],
)
def test_malformed_definitions_are_refused(host: WopHost, doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        register_definition(host, doc, types())


def test_conversation_workflow_is_refused_at_create_run_without_the_capability(
    make_host: HostFactory,
) -> None:
    doc = definition("talk", [node("convo", "core.conversationGate", config={"mockAutoResume": True})], [])
    plain = make_host()
    register_definition(plain, doc, types())
    with pytest.raises(CapabilityRequired) as caught:
        plain.create_run("talk", {}, owner=ALICE)
    assert (caught.value.status, caught.value.code) == (422, "capability_required")
    assert caught.value.details == {
        "requiredCapability": "conversationPrimitive",
        "offendingTypeId": "core.conversationGate",
        "nodeId": "convo",
    }
    with plain.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(runs_table)).scalar() == 0
    talking = make_host(conversations=True)
    register_definition(talking, doc, types())
    assert talking.create_run("talk", {}, owner=ALICE)["status"] == "completed"


def test_registry_refuses_duplicates_and_unknown_capabilities() -> None:
    registry = types()
    with pytest.raises(ValueError, match="already registered"):
        registry.register(NodeType("test.record", _record))
    with pytest.raises(ValueError, match="unknown capabilities"):
        NodeType("test.x", _record, requires=frozenset({"telepathy"}))
    assert "core.dispatch" not in registry
    with pytest.raises(UnknownNodeType, match="needs the host that runs its workers"):
        registry.get("core.dispatch")


def test_a_credential_node_type_is_refused_at_create_run_without_credentials(make_host: HostFactory) -> None:
    registry = types()
    registry.register(NodeType("vendor.acme.connect", _record, requires=frozenset({"credential"})))
    doc = definition("connect", [node("link", "vendor.acme.connect")], [])
    plain = make_host()
    register_definition(plain, doc, registry)
    with pytest.raises(CapabilityRequired) as caught:
        plain.create_run("connect", {}, owner=ALICE)
    assert caught.value.details == {
        "requiredCapability": "oauth.credentialInterrupt",
        "offendingTypeId": "vendor.acme.connect",
        "nodeId": "link",
    }
    enabled = make_host(credentials=True)
    register_definition(enabled, doc, registry)
    assert enabled.create_run("connect", {}, owner=ALICE)["status"] == "completed"


def test_an_unexpected_exception_is_recorded_without_its_text(host: WopHost) -> None:
    def leaky(invocation: NodeInvocation) -> Mapping[str, Any]:
        raise RuntimeError("password=hunter2")

    registry = types()
    registry.register(NodeType("test.leaky", leaky))
    doc = definition("leaky", [node("a", "test.leaky"), node("h")], [edge("a", "h", "any_failed")])
    register_definition(host, doc, registry)
    run_id = host.create_run("leaky", {}, owner=ALICE)["runId"]
    (failed,) = payloads(events(host, run_id), "node.failed")
    assert failed["error"] == {
        "code": "internal_error",
        "message": "the node raised RuntimeError",
        "retryable": False,
    }
