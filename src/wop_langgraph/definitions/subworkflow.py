"""``core.subWorkflow``: start a child run of another workflow and wait for its terminal status.

Behaviour from spec/v2/core/execution.md §subWorkflow and the parent/child cancel fixtures
(conformance-interrupt-parent-child-cancel*.json):

- The child is created once per execution of the node (a replay finds it again by the parent
  link in the child's ``metadata.parent``: ``{runId, nodeId, cause: "core.subWorkflow"}``), owned
  by the parent's owner, with the node's inputs as its inputs.
- The parent node suspends with a ``custom`` interrupt (``customKind: openwop.subWorkflow``)
  until the child ends; the host then resolves it with ``{childRunId, childStatus}``.
  ``node.completed`` outputs carry ``childRunId`` and ``childStatus``.
- ``onChildFailure``: ``fail-parent`` (default) fails the node when the child did not complete;
  ``absorb`` continues. ``propagateCancellation`` (default true) cancels the child, with reason
  ``parent-cancelled``, when the parent is cancelled; its pending interrupts become unresolvable.
- Refused at load: ``waitForCompletion: false`` and a non-empty ``inputMapping`` /
  ``outputMapping`` (``validation_error``; mappings are not offered). At run time a child
  workflow the host has not loaded fails the node with ``node_config_invalid``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from wop_langgraph.definitions.model import NodeSpec
from wop_langgraph.definitions.node_types import NodeInvocation, NodeType
from wop_langgraph.definitions.orchestrator import dispatch_workers
from wop_langgraph.host.driver import TERMINAL_STATUSES
from wop_langgraph.nodes import custom_interrupt
from wop_langgraph.nodes.context import current_call
from wop_langgraph.protocol.errors import ValidationError, WopError
from wop_langgraph.protocol.principal import Principal
from wop_langgraph.store.engine import reading
from wop_langgraph.store.runs import tenant_runs_of

if TYPE_CHECKING:
    from wop_langgraph.host.runtime import WopHost

__all__ = ["SUB_WORKFLOW_KIND", "run_child", "settle_links", "sub_workflow_type"]

SUB_WORKFLOW_KIND = "openwop.subWorkflow"
_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["childRunId", "childStatus"],
    "properties": {
        "childRunId": {"type": "string"},
        "childStatus": {"enum": ["completed", "failed", "cancelled"]},
    },
}
_LINKER_SUBJECT = "wop-langgraph:subWorkflow"


class NodeConfigInvalid(WopError):
    """The node's configuration cannot run on this host (execution.md: ``node_config_invalid``)."""

    code = "node_config_invalid"
    status = 422
    retryable = False


class ChildRunFailed(WopError):
    """The child run ended without completing and the node does not absorb that."""

    code = "child_run_failed"
    status = 500
    retryable = False


def sub_workflow_type(host: WopHost) -> NodeType:
    """The ``core.subWorkflow`` node type, bound to the host that runs the child runs."""

    def run(invocation: NodeInvocation) -> Mapping[str, Any]:
        return _run_child(host, invocation)

    return NodeType(
        "core.subWorkflow", run, check=_check_config, source="spec/v2/core/execution.md §subWorkflow"
    )


def _check_config(spec: NodeSpec) -> None:
    config = spec.config
    if not isinstance(config.get("workflowId"), str) or not config["workflowId"]:
        raise ValidationError(f"node {spec.node_id!r}: core.subWorkflow needs config.workflowId")
    if config.get("waitForCompletion", True) is not True:
        raise ValidationError(f"node {spec.node_id!r}: waitForCompletion false is not supported")
    for mapping in ("inputMapping", "outputMapping"):
        if config.get(mapping):
            raise ValidationError(
                f"node {spec.node_id!r}: {mapping} is not supported by this host",
                details={"requiredCapability": f"subWorkflow.{mapping}"},
            )
    if config.get("onChildFailure", "fail-parent") not in ("fail-parent", "absorb"):
        raise ValidationError(f"node {spec.node_id!r}: onChildFailure is fail-parent or absorb")


def _run_child(host: WopHost, invocation: NodeInvocation) -> Mapping[str, Any]:
    config = invocation.config
    fail_parent = config.get("onChildFailure", "fail-parent") == "fail-parent"
    return run_child(host, invocation, str(config["workflowId"]), fail_parent=fail_parent)


def run_child(
    host: WopHost, invocation: NodeInvocation, child_workflow: str, *, fail_parent: bool
) -> Mapping[str, Any]:
    """Start (or find again) the node's child run of ``child_workflow`` and wait for its end.

    Returns ``{childRunId, childStatus}``; raises ``ChildRunFailed`` when it did not complete
    and ``fail_parent``, ``NodeConfigInvalid`` when the host has not loaded the workflow.
    """
    call = current_call()
    config = invocation.config
    if child_workflow not in host.registry:
        raise NodeConfigInvalid(
            f"node {invocation.node_id!r} starts workflow {child_workflow!r}, which this host has not loaded",
            details={"workflowId": child_workflow},
        )
    parent = host.snapshot(call.run_id)
    link = {
        "runId": parent["runId"],
        "nodeId": invocation.node_id,
        "cause": invocation.spec.type_id,  # core.subWorkflow, or core.dispatch for a worker
        "taskNs": call.task_ns,
        "propagateCancellation": bool(config.get("propagateCancellation", True)),
    }
    child_id = _existing_child(host, link, child_workflow) or _start_child(
        host, parent, child_workflow, link, invocation
    )
    status = host.snapshot(child_id)["status"]
    if status not in TERMINAL_STATUSES:
        answer = custom_interrupt(
            SUB_WORKFLOW_KIND,
            {"childRunId": child_id, "workflowId": child_workflow},
            resume_schema=_RESULT_SCHEMA,
        )
        status = answer["childStatus"]
    if status != "completed" and fail_parent:
        raise ChildRunFailed(
            f"child run {child_id} of workflow {child_workflow!r} ended {status}",
            details={"childRunId": child_id, "childStatus": status},
        )
    return {"childRunId": child_id, "childStatus": status}


def _existing_child(host: WopHost, link: Mapping[str, Any], workflow_id: str) -> str | None:
    """The child this execution already started (a replay of the node finds it again)."""
    for run_id, parent in _children(host, str(link["runId"]), [workflow_id]):
        if parent.get("taskNs") == link["taskNs"]:
            return run_id
    return None


def _start_child(
    host: WopHost,
    parent: Mapping[str, Any],
    workflow_id: str,
    link: Mapping[str, Any],
    invocation: NodeInvocation,
) -> str:
    # The child runs in its own thread: inside this node's thread LangGraph would take the
    # child's graph for a subgraph of the parent's (it reads the running config from context).
    owner = parent["owner"]["subject"]
    principal = Principal(tenant=parent["owner"]["tenant"], subject_id=owner["subjectId"])
    created: list[str] = []
    failure: list[BaseException] = []

    def create() -> None:
        try:
            snapshot = host.create_run(
                workflow_id,
                dict(invocation.inputs),
                owner=principal,
                metadata={"parent": dict(link)},
                wait=not host.has_workers,  # with workers, one of them drives the child
            )
            created.append(snapshot["runId"])
        except BaseException as exc:  # handed back to the node's thread
            failure.append(exc)

    worker = threading.Thread(target=create, name=f"subworkflow-{invocation.node_id}")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return created[0]


def _children(host: WopHost, parent_id: str, workflow_ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Runs of ``workflow_ids`` started by ``parent_id``, with their parent links."""
    with reading(host.engine) as conn:
        rows = tenant_runs_of(conn, parent_id.split("/", 1)[0], workflow_ids)
    found = []
    for row in rows:
        parent = row.run_metadata.get("parent") if isinstance(row.run_metadata, dict) else None
        if isinstance(parent, dict) and parent.get("runId") == parent_id:
            found.append((str(row.run_id), parent))
    return found


def _child_workflows(host: WopHost, workflow_id: str) -> list[str]:
    """The workflows a definition's ``core.subWorkflow`` nodes start (empty for other graphs)."""
    definition = host.registry.get(workflow_id).definition if workflow_id in host.registry else None
    nodes = definition.get("nodes", []) if definition else []
    children = [
        str(n["config"]["workflowId"])
        for n in nodes
        if isinstance(n, Mapping)
        and n.get("typeId") == "core.subWorkflow"
        and isinstance(n.get("config"), Mapping)
    ]
    if definition and any(isinstance(n, Mapping) and n.get("typeId") == "core.dispatch" for n in nodes):
        children.extend(w for w in dispatch_workers(definition) if w not in children)
    return children


def settle_links(host: WopHost, run_id: str) -> None:
    """Carry a run's end across its parent/child links; the host calls it after every change.

    A child that ended resolves its parent's waiting ``core.subWorkflow`` node; a parent that
    waits on a child that already ended is resolved too (whichever side settles last does it);
    a cancelled parent cancels its children that propagate cancellation.
    """
    if not any(_child_workflows(host, w) for w in host.registry.definition_ids()):
        return  # no parent/child links on this host: nothing to read
    snapshot = host.snapshot(run_id)
    if snapshot["status"] == "cancelled":
        children = _child_workflows(host, snapshot["workflowId"])
        for child_id, parent in _children(host, run_id, children) if children else []:
            if (
                parent.get("propagateCancellation", True)
                and host.snapshot(child_id)["status"] not in TERMINAL_STATUSES
            ):
                with _unless_settled():
                    host.cancel(child_id, reason="parent-cancelled", parent_run_id=run_id, wait=False)
    parent_link = (snapshot.get("metadata") or {}).get("parent")
    if snapshot["status"] in TERMINAL_STATUSES and isinstance(parent_link, dict):
        _deliver(host, str(parent_link.get("runId")), run_id, snapshot["status"])
    for record in host.pending_interrupts(run_id):
        data = record.payload.get("data", {})
        if data.get("customKind") == SUB_WORKFLOW_KIND:
            child_id = str(data.get("payload", {}).get("childRunId"))
            child_status = host.snapshot(child_id)["status"]
            if child_status in TERMINAL_STATUSES:
                _deliver(host, run_id, child_id, child_status)


def _deliver(host: WopHost, parent_id: str, child_id: str, child_status: str) -> None:
    """Resolve the parent's interrupt that waits for ``child_id`` (nothing if none is pending)."""
    for record in host.pending_interrupts(parent_id):
        data = record.payload.get("data", {})
        if (
            data.get("customKind") == SUB_WORKFLOW_KIND
            and data.get("payload", {}).get("childRunId") == child_id
        ):
            linker = Principal(
                tenant=parent_id.split("/", 1)[0],
                subject_id=_LINKER_SUBJECT,
                scopes=frozenset({"approvals:respond"}),
                kind="workload",
                lane="workload",
            )
            value = {"childRunId": child_id, "childStatus": child_status}
            with _unless_settled():
                host.resolve(
                    parent_id, record.node_id, value, linker, key=record.key, wait=not host.has_workers
                )


@contextmanager
def _unless_settled() -> Iterator[None]:
    """Run a link action; losing the race to another settler (a 409) is fine."""
    try:
        yield
    except WopError as exc:
        if exc.status != 409:
            raise
