"""``compile_definition``: an OpenWOP WorkflowDefinition as a LangGraph ``StateGraph``.

Every definition node becomes one graph node that runs its node type and then settles the
schedule (:mod:`~wop_langgraph.definitions.schedule`): it returns ``Command(goto=next)`` for
the next ready node, so routing follows the edges' trigger rules, not static LangGraph edges. The
state holds the declared variables (the run's inputs, over their defaults), every node's latest
outputs, and the schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.errors import GraphBubbleUp
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from wop_langgraph.definitions.model import NodeSpec, Plan, read_definition
from wop_langgraph.definitions.node_types import NodeInvocation, NodeType, NodeTypeRegistry
from wop_langgraph.definitions.schedule import initial_schedule, settle
from wop_langgraph.nodes.context import (
    NODE_FAILED_CHANNEL,
    NODE_OUTPUTS_CHANNEL,
    NODE_TYPE_METADATA,
    current_call,
    stable_id,
)
from wop_langgraph.protocol.errors import ValidationError, WopError

__all__ = ["OUTPUTS_CHANNEL", "SCHEDULE_CHANNEL", "CompiledDefinition", "compile_definition"]

OUTPUTS_CHANNEL = NODE_OUTPUTS_CHANNEL
SCHEDULE_CHANNEL = "__wop_schedule"


@dataclass(frozen=True)
class CompiledDefinition:
    """A compiled definition: the graph to register, the capabilities its runs need, the plan."""

    workflow_id: str
    graph: CompiledStateGraph[Any, Any, Any, Any]
    requires: Mapping[str, Mapping[str, str]]  # capability -> {offendingTypeId, nodeId}
    plan: Plan

    @property
    def document(self) -> Mapping[str, Any]:
        """The definition exactly as loaded."""
        return self.plan.document


def compile_definition(document: Any, node_types: NodeTypeRegistry) -> CompiledDefinition:
    """Compile a WorkflowDefinition with the node types of ``node_types``.

    Raises:
        ValidationError: the definition is malformed, or a node's config is refused by its type.
        UnknownNodeType: a node uses a ``typeId`` the registry lacks (the error names it).
    """
    plan = read_definition(document)
    types = {n: node_types.get(s.type_id, node_id=n) for n, s in plan.nodes.items()}
    # Without a node free of incoming edges, a loop headed by an entry type (a supervisor) starts.
    starts = plan.roots or tuple(n for n, t in types.items() if t.entry)
    if not starts:
        raise ValidationError(
            "every node has an incoming edge, so no node can start the run", details={"path": "/edges"}
        )
    for node_id, spec in plan.nodes.items():
        check = types[node_id].check
        if check is not None:
            check(spec)
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(_state_schema(plan))
    for node_id, spec in plan.nodes.items():
        builder.add_node(
            node_id, _node_function(plan, spec, types[node_id]), metadata={NODE_TYPE_METADATA: spec.type_id}
        )
    builder.add_edge(START, starts[0])
    requires: dict[str, Mapping[str, str]] = {}
    for node_id, node_type in types.items():
        for capability in sorted(node_type.requires):
            requires.setdefault(capability, {"offendingTypeId": node_type.type_id, "nodeId": node_id})
    return CompiledDefinition(plan.workflow_id, builder.compile(), requires, plan)


def _merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    return {**(left or {}), **(right or {})}


def _state_schema(plan: Plan) -> type:
    fields: dict[str, Any] = {name: Any for name in plan.variables}
    fields[OUTPUTS_CHANNEL] = Annotated[dict[str, Any], _merge]
    fields[NODE_FAILED_CHANNEL] = Annotated[dict[str, Any], _merge]
    fields[SCHEDULE_CHANNEL] = dict[str, Any]
    schema: type = TypedDict(f"{_class_name(plan.workflow_id)}State", fields, total=False)  # type: ignore[misc]
    return schema


def _class_name(workflow_id: str) -> str:
    return (
        "".join(part.capitalize() for part in workflow_id.replace(".", "-").split("-") if part.isalnum())
        or "W"
    )


def _node_function(plan: Plan, spec: NodeSpec, node_type: NodeType) -> Any:
    def run_node(state: dict[str, Any]) -> Command[Any]:
        variables = {name: state.get(name, default) for name, default in plan.variables.items()}
        outputs_by_node: Mapping[str, Any] = state.get(OUTPUTS_CHANNEL) or {}
        schedule = state.get(SCHEDULE_CHANNEL) or initial_schedule(plan, spec.node_id)
        context = current_call().context
        guarded = context is not None and context.recursion_limit is not None
        try:
            inputs = _resolve_inputs(spec, variables, outputs_by_node)
            recorded = _replayed_effect(spec.node_id) if node_type.side_effecting else None
            if recorded is not None:
                outputs = dict(recorded)  # a replay never performs the effect again
            else:
                invocation = NodeInvocation(
                    spec, inputs, variables, outputs_by_node, plan.sources[spec.node_id]
                )
                outputs = dict(node_type.run(invocation) or {})
        except GraphBubbleUp:
            raise  # an interrupt (or a Command for a parent graph) is not a failure
        except Exception as exc:
            if not node_type.side_effecting:  # a side effect's failure is the record's
                _check_divergence(spec.node_id, None)
            step = settle(plan, schedule, spec.node_id, "failed", guarded=guarded)
            if not step.absorbed:
                raise  # no edge admits the failure: the run fails with the node's error
            _record_skips(step.skipped)
            update = {
                SCHEDULE_CHANNEL: step.schedule,
                NODE_FAILED_CHANNEL: {spec.node_id: _error_object(exc)},
            }
            return Command(goto=_goto(step.next_node), update=update)
        if recorded is None:
            _check_divergence(spec.node_id, outputs)
        if node_type.ends_run is not None and node_type.ends_run(outputs):
            # The node ends the run: nothing downstream is scheduled (a loop's exit).
            return Command(goto=[], update={OUTPUTS_CHANNEL: {spec.node_id: outputs}})
        step = settle(plan, schedule, spec.node_id, "success", guarded=guarded)
        _record_skips(step.skipped)
        update = {SCHEDULE_CHANNEL: step.schedule, OUTPUTS_CHANNEL: {spec.node_id: outputs}}
        return Command(goto=_goto(step.next_node), update=update)

    run_node.__name__ = f"run_{spec.node_id}"
    return run_node


def _goto(node: str | None) -> list[str]:
    return [node] if node is not None else []


def _resolve_inputs(
    spec: NodeSpec, variables: Mapping[str, Any], outputs: Mapping[str, Any]
) -> dict[str, Any]:
    """The node's input ports as values: static values, run variables, other nodes' outputs."""
    resolved: dict[str, Any] = {}
    for port, ref in spec.inputs.items():
        kind = ref["type"]
        if kind == "static":
            resolved[port] = ref.get("value")
        elif kind == "variable":
            name = ref.get("variableName")
            if name in variables and variables[name] is not None:
                resolved[port] = variables[name]
            elif not ref.get("optional", False) and name not in variables:
                raise ValidationError(
                    f"node {spec.node_id!r} input {port!r} reads variable {name!r}, which the workflow "
                    "does not declare"
                )
        elif kind == "connection":
            source = outputs.get(ref.get("nodeId"), {})
            if ref.get("outputKey") in source:
                resolved[port] = source[ref["outputKey"]]
            elif not ref.get("optional", False):
                raise ValidationError(
                    f"node {spec.node_id!r} input {port!r}: node {ref.get('nodeId')!r} has produced no "
                    f"output {ref.get('outputKey')!r}"
                )
    return resolved


def _replayed_effect(node_id: str) -> Mapping[str, Any] | None:
    """In a replay fork, the node's recorded outputs (or its recorded failure, raised); else ``None``."""
    context = current_call().context
    if context is None or context.replay is None:
        return None
    return context.replay.outcome(node_id)


def _check_divergence(node_id: str, outputs: Mapping[str, Any] | None) -> None:
    """In a replay fork, log ``replay.diverged`` when this execution's outcome differs from the record.

    The run continues either way (replay.md §Divergence). Pure nodes only: a side-effecting node
    takes its outcome from the record and cannot differ.
    """
    call = current_call()
    context = call.context
    if context is None or context.replay is None:
        return
    payload = context.replay.divergence(node_id, outputs)
    if payload is not None:
        call.emit("replay.diverged", payload, discriminator="replay.diverged")


def _record_skips(skipped: tuple[tuple[str, str], ...]) -> None:
    """Append ``node.skipped`` once per skipped node (a replay of this execution appends nothing)."""
    if not skipped:
        return
    call = current_call()
    context = call.context
    if context is None or context.emit is None:
        return  # plain LangGraph: no event log
    for node_id, reason in skipped:
        event_id = stable_id(context.run_id, call.task_ns, "node.skipped", node_id)
        context.emit("node.skipped", node_id, {"nodeId": node_id, "reason": reason}, event_id)


def _error_object(exc: Exception) -> dict[str, Any]:
    if isinstance(exc, WopError):
        return exc.error_object()
    # An unexpected exception's text may carry internals: the event names only its type.
    return {"code": "internal_error", "message": f"the node raised {type(exc).__name__}", "retryable": False}
