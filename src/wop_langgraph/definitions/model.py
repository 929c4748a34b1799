"""A WorkflowDefinition read into the plan the compiler needs: nodes, incoming rules, sources, roots.

Only what execution depends on is interpreted (``nodes``, ``edges``, ``variables``,
``settings.maxLoopbackIterations``); everything else is kept verbatim in :attr:`Plan.document`.
A definition that cannot be executed faithfully is refused with a ``ValidationError`` naming the
member, never half-loaded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wop_langgraph.definitions.rules import TRIGGER_RULES
from wop_langgraph.protocol.errors import ValidationError

__all__ = ["RESERVED_PREFIX", "EdgeSpec", "NodeSpec", "Plan", "read_definition"]

#: State keys the compiled graph keeps for itself; no variable may start with it.
RESERVED_PREFIX = "__wop_"
# The OpenWOP nodeId grammar without ':' (LangGraph uses ':' and '|' in task namespaces).
_NODE_ID = re.compile(r"^[A-Za-z0-9._~-]{1,128}$")
_PORT_KINDS = frozenset({"static", "variable", "connection"})


@dataclass(frozen=True)
class NodeSpec:
    """One node as written: ``id``, ``typeId``, ``config``, input ports, and the whole document."""

    node_id: str
    type_id: str
    config: Mapping[str, Any]
    inputs: Mapping[str, Any]
    document: Mapping[str, Any]


@dataclass(frozen=True)
class EdgeSpec:
    """One edge: source, target and its trigger rule (``all_success`` when absent)."""

    edge_id: str
    source: str
    target: str
    rule: str


@dataclass(frozen=True)
class Plan:
    """What the compiled graph executes."""

    workflow_id: str
    nodes: Mapping[str, NodeSpec]
    edges: tuple[EdgeSpec, ...]
    rules: Mapping[str, str]
    sources: Mapping[str, tuple[str, ...]]
    targets: Mapping[str, tuple[str, ...]]
    roots: tuple[str, ...]  # nodes without incoming edges; the compiler refuses a plan without one
    variables: Mapping[str, Any]
    loop_cap: int | None
    document: Mapping[str, Any] = field(repr=False)


def read_definition(document: Any) -> Plan:
    """Read and check a WorkflowDefinition document.

    Raises:
        ValidationError: the document is not an executable definition (the message says which
            member and why).
    """
    if not isinstance(document, Mapping):
        raise _invalid("a WorkflowDefinition is a JSON object", "")
    workflow_id = document.get("id")
    if not isinstance(workflow_id, str) or not workflow_id:
        raise _invalid("the definition needs a string `id`", "/id")
    raw_nodes = document.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise _invalid("`nodes` must be a non-empty array", "/nodes")
    nodes: dict[str, NodeSpec] = {}
    for index, raw in enumerate(raw_nodes):
        spec = _read_node(raw, f"/nodes/{index}")
        if spec.node_id in nodes:
            raise _invalid(f"node id {spec.node_id!r} is used twice", f"/nodes/{index}/id")
        nodes[spec.node_id] = spec
    edges = tuple(_read_edge(raw, f"/edges/{i}", nodes) for i, raw in enumerate(document.get("edges") or []))
    rules: dict[str, str] = {}
    for edge in edges:
        if rules.setdefault(edge.target, edge.rule) != edge.rule:
            raise _invalid(
                f"the edges into node {edge.target!r} disagree on triggerRule ({rules[edge.target]} and "
                f"{edge.rule}); give every incoming edge of a node the same rule",
                f"/edges/{edges.index(edge)}/triggerRule",
            )
    sources = {n: tuple(dict.fromkeys(e.source for e in edges if e.target == n)) for n in nodes}
    targets = {n: tuple(dict.fromkeys(e.target for e in edges if e.source == n)) for n in nodes}
    roots = tuple(n for n in nodes if not sources[n])
    return Plan(
        workflow_id=workflow_id,
        nodes=nodes,
        edges=edges,
        rules={n: rules.get(n, "all_success") for n in nodes},
        sources=sources,
        targets=targets,
        roots=roots,
        variables=_read_variables(document.get("variables") or []),
        loop_cap=_loop_cap(document.get("settings")),
        document=document,
    )


def _read_node(raw: Any, path: str) -> NodeSpec:
    if not isinstance(raw, Mapping):
        raise _invalid("a node is a JSON object", path)
    node_id, type_id = raw.get("id"), raw.get("typeId")
    if not isinstance(node_id, str) or not _NODE_ID.fullmatch(node_id) or node_id.startswith("__"):
        raise _invalid(
            f"node id {node_id!r} must match ^[A-Za-z0-9._~-]{{1,128}}$ and not start with '__'", f"{path}/id"
        )
    if not isinstance(type_id, str) or not type_id:
        raise _invalid(f"node {node_id!r} needs a string `typeId`", f"{path}/typeId")
    config = raw.get("config", {})
    inputs = raw.get("inputs", {})
    if not isinstance(config, Mapping) or not isinstance(inputs, Mapping):
        raise _invalid(f"node {node_id!r}: `config` and `inputs` must be objects", path)
    for port, value in inputs.items():
        kind = value.get("type") if isinstance(value, Mapping) else None
        if kind not in _PORT_KINDS:
            raise _invalid(
                f"node {node_id!r} input {port!r}: port values of type {kind!r} are not supported "
                "(static, variable and connection are)",
                f"{path}/inputs/{port}",
            )
    if raw.get("disabled"):
        raise _invalid(f"node {node_id!r} is disabled; disabled nodes are not supported", f"{path}/disabled")
    return NodeSpec(node_id, type_id, dict(config), dict(inputs), raw)


def _read_edge(raw: Any, path: str, nodes: Mapping[str, NodeSpec]) -> EdgeSpec:
    if not isinstance(raw, Mapping):
        raise _invalid("an edge is a JSON object", path)
    source, target = raw.get("sourceNodeId"), raw.get("targetNodeId")
    for name, value in (("sourceNodeId", source), ("targetNodeId", target)):
        if value not in nodes:
            raise _invalid(f"edge {raw.get('id')!r}: {name} {value!r} is not a node of this workflow", path)
    rule = raw.get("triggerRule", "all_success")
    if rule not in TRIGGER_RULES:
        raise _invalid(f"edge {raw.get('id')!r}: unknown triggerRule {rule!r}", f"{path}/triggerRule")
    if "condition" in raw:
        raise _invalid(f"edge {raw.get('id')!r}: edge conditions are not supported", f"{path}/condition")
    return EdgeSpec(str(raw.get("id", "")), str(source), str(target), str(rule))


def _read_variables(raw: Any) -> dict[str, Any]:
    """Declared variables with their default values (``None`` when there is none)."""
    if not isinstance(raw, list):
        raise _invalid("`variables` must be an array", "/variables")
    variables: dict[str, Any] = {}
    for index, variable in enumerate(raw):
        name = variable.get("name") if isinstance(variable, Mapping) else None
        if not isinstance(name, str) or not name or name.startswith(RESERVED_PREFIX):
            raise _invalid(
                f"variable name {name!r} must be a non-empty string not starting with {RESERVED_PREFIX!r}",
                f"/variables/{index}/name",
            )
        variables[name] = variable.get("defaultValue")
    return variables


def _loop_cap(settings: Any) -> int | None:
    """``settings.maxLoopbackIterations`` when the definition sets it (no cap otherwise)."""
    if not isinstance(settings, Mapping) or "maxLoopbackIterations" not in settings:
        return None
    cap = settings["maxLoopbackIterations"]
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        raise _invalid(
            "settings.maxLoopbackIterations must be an integer >= 1", "/settings/maxLoopbackIterations"
        )
    return cap


def _invalid(message: str, path: str) -> ValidationError:
    return ValidationError(message, details={"path": path} if path else None)
