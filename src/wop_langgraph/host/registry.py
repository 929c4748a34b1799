"""Registered workflows: compiled graphs bound to the host's store, with their rejection routes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.pregel import Pregel
from langgraph.types import RetryPolicy

from wop_langgraph.adapters.policy import ApprovalPolicy
from wop_langgraph.host.driver import needs_async
from wop_langgraph.protocol.errors import ApprovalRejected, CapabilityRequired, NotFound, ValidationError
from wop_langgraph.store.engine import Connection
from wop_langgraph.store.runs import workflow_of
from wop_langgraph.store.saver import AsyncSQLModelSaver, SQLModelSaver

__all__ = ["CAPABILITY_KEYS", "GraphRegistry", "RegisteredGraph", "require_compiled"]

#: The discovery key of each host capability a workflow may need.
CAPABILITY_KEYS = {"conversation": "conversationPrimitive", "credential": "oauth.credentialInterrupt"}
_WORKFLOW_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~:-")


def require_compiled(graph: object, what: str) -> Pregel[Any, Any, Any, Any]:
    """``graph`` if it is a compiled graph (a ``Pregel``: ``StateGraph.compile()``, ``@entrypoint``).

    Raises:
        TypeError: a ``StateGraph`` builder that was not compiled (the message says to call
            ``.compile()``), or anything else that is not a graph.
    """
    if isinstance(graph, Pregel):
        return graph
    if hasattr(graph, "compile") and hasattr(graph, "add_node"):
        raise TypeError(
            f"{what} is a {type(graph).__name__} that was not compiled; call .compile() on it and register "
            "the result (without a checkpointer: the host brings its own)"
        )
    raise TypeError(f"{what} is a {type(graph).__name__}, not a compiled graph (StateGraph(...).compile())")


@dataclass(frozen=True)
class RegisteredGraph:
    """A workflow: its graph (bound to the store) and where rejected approvals continue.

    A graph with ``async def`` nodes (``is_async``) is streamed with LangGraph's async API, for
    which ``async_graph`` is bound to the async twin of the same store.
    ``requires`` maps each host capability its runs need (``conversation``, ``credential``) to
    what names the need in a refusal (``offendingTypeId``, ``nodeId``);
    ``definition`` is the OpenWOP WorkflowDefinition it was compiled from, if any.
    ``approval_policies`` configure the approvals of bare ``interrupt()`` values (adapters).
    """

    workflow_id: str
    graph: Pregel[Any, Any, Any, Any]
    rejection_routes: Mapping[str, str] = field(default_factory=dict)
    is_async: bool = False
    async_graph: Pregel[Any, Any, Any, Any] | None = None
    requires: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    definition: Mapping[str, Any] | None = None
    #: node id -> the policy merged into the approvals that adapters build at that node.
    approval_policies: Mapping[str, ApprovalPolicy] = field(default_factory=dict)

    def require(self, *, conversations: bool, credentials: bool) -> None:
        """Refuse a run of this workflow on a host without a capability it needs.

        Raises:
            CapabilityRequired: ``422 capability_required``; ``details.requiredCapability`` names the
                capability key, ``offendingTypeId`` / ``nodeId`` the node that needs it.
        """
        enabled = {"conversation": conversations, "credential": credentials}
        for capability, where in sorted(self.requires.items()):
            if enabled.get(capability, False):
                continue
            flag = {"conversation": "conversations=True", "credential": "credentials=True"}.get(
                capability, ""
            )
            raise CapabilityRequired(
                f"workflow {self.workflow_id!r} needs the {capability} capability, which this host has not "
                f"enabled (WopHost({flag}))",
                details={"requiredCapability": CAPABILITY_KEYS.get(capability, capability), **where},
            )


class GraphRegistry:
    """Workflow id -> graph, for one host."""

    def __init__(self, saver: SQLModelSaver) -> None:
        self._saver = saver
        self._async_saver: AsyncSQLModelSaver | None = None
        self._graphs: dict[str, RegisteredGraph] = {}

    def _async_twin(self) -> AsyncSQLModelSaver:
        """The async saver over the same engine, serializer and recorder (made once)."""
        if self._async_saver is None:
            self._async_saver = AsyncSQLModelSaver(
                self._saver.engine, serde=self._saver.serde, recorder=self._saver.recorder
            )
        return self._async_saver

    def register(
        self,
        workflow_id: str,
        graph: Pregel[Any, Any, Any, Any],
        rejection_routes: Mapping[str, str],
        *,
        requires: Mapping[str, Mapping[str, str]] | None = None,
        definition: Mapping[str, Any] | None = None,
        approval_policies: Mapping[str, ApprovalPolicy] | None = None,
    ) -> None:
        """Bind ``graph`` to the store and register it.

        Static breakpoints (``interrupt_before`` / ``interrupt_after``) are refused: they
        suspend without a payload no OpenWOP caller could resolve. Every node's retry policy is
        wrapped so that an ``ApprovalRejected`` is never retried.
        """
        if not workflow_id or len(workflow_id) > 128 or not set(workflow_id) <= _WORKFLOW_ID_CHARS:
            raise ValidationError(f"workflowId {workflow_id!r} must match ^[A-Za-z0-9._~:-]{{1,128}}$")
        graph = require_compiled(graph, f"the graph of {workflow_id!r}")
        if graph.interrupt_before_nodes or graph.interrupt_after_nodes:
            raise ValidationError(
                "static breakpoints (interrupt_before/interrupt_after) cannot be resolved through OpenWOP; "
                "call request_approval() (or another node API function) inside the node instead"
            )
        unknown = sorted((set(rejection_routes) | set(rejection_routes.values())) - set(graph.nodes))
        if unknown:
            raise ValidationError(f"rejection routes name unknown nodes: {', '.join(unknown)}")
        _refuse_fixed_successors(graph, rejection_routes)
        policies = dict(approval_policies or {})
        # A node id names a top-level node, or a node of its subgraph as ``parent.child``.
        unknown = sorted(node for node in policies if node.split(".", 1)[0] not in graph.nodes)
        if unknown:
            raise ValidationError(f"approval policies name unknown nodes: {', '.join(unknown)}")
        for policy in policies.values():
            policy.check()
        nodes = {
            name: node.copy({"retry_policy": _never_retry_rejection(node.retry_policy)})
            for name, node in graph.nodes.items()
        }
        bound = graph.copy(update={"checkpointer": self._saver, "nodes": nodes})
        is_async = needs_async(graph)
        async_bound = (
            graph.copy(update={"checkpointer": self._async_twin(), "nodes": nodes}) if is_async else None
        )
        self._graphs[workflow_id] = RegisteredGraph(
            workflow_id,
            bound,
            dict(rejection_routes),
            requires=dict(requires or {}),
            definition=definition,
            is_async=is_async,
            async_graph=async_bound,
            approval_policies=policies,
        )

    def workflow_ids(self) -> list[str]:
        """The registered workflow ids."""
        return list(self._graphs)

    def get(self, workflow_id: str) -> RegisteredGraph:
        """The registered workflow, or ``NotFound``."""
        try:
            return self._graphs[workflow_id]
        except KeyError:
            raise NotFound(f"no workflow {workflow_id!r} is registered") from None

    def definition_ids(self) -> list[str]:
        """Ids of the workflows registered from an OpenWOP WorkflowDefinition, sorted."""
        return sorted(w for w, g in self._graphs.items() if g.definition is not None)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self._graphs

    def approval_policy(self, conn: Connection, run_id: str, node_id: str) -> ApprovalPolicy | None:
        """The policy registered for approvals that adapters build at ``node_id`` of ``run_id``.

        Reads the run's workflow inside the caller's transaction, and only when some workflow
        has a policy at all.
        """
        if not any(g.approval_policies for g in self._graphs.values()):
            return None
        workflow_id = workflow_of(conn, run_id)
        registered = self._graphs.get(str(workflow_id))
        return None if registered is None else registered.approval_policies.get(node_id)


def _refuse_fixed_successors(graph: Pregel[Any, Any, Any, Any], routes: Mapping[str, str]) -> None:
    """Refuse a routed gate that has static or conditional outgoing edges.

    LangGraph adds a ``Command``'s ``goto`` to a node's edges instead of replacing them, so a
    rejection routed to ``revise`` would also run the gate's ordinary successor: a rejected gate
    must satisfy no ordinary edge (interrupt.md §Rejection). Such a gate chooses its successor
    itself: it returns ``Command(goto=...)`` on success.
    """
    builder = getattr(graph, "builder", None)
    if builder is None:
        return
    for node in routes:
        fixed = sorted(end for start, end in getattr(builder, "edges", ()) if start == node)
        if fixed or getattr(builder, "branches", {}).get(node):
            raise ValidationError(
                f"node {node!r} has a rejection route, so it must choose its own successor: remove its "
                f"edges ({', '.join(fixed) or 'conditional'}) and return Command(goto=...) on success"
            )


def _never_retry_rejection(policy: Any) -> Any:
    """``policy`` with ``ApprovalRejected`` excluded from what it retries."""
    if policy is None:
        return None
    if isinstance(policy, RetryPolicy):
        return _guard(policy)
    return [_guard(p) for p in policy]


def _guard(policy: RetryPolicy) -> RetryPolicy:
    original = policy.retry_on

    def retry_on(exc: Exception) -> bool:
        if isinstance(exc, ApprovalRejected):
            return False
        if isinstance(original, type):
            return isinstance(exc, original)
        if isinstance(original, (list, tuple)):
            return isinstance(exc, tuple(original))
        return bool(original(exc))  # type: ignore[operator]

    return policy._replace(retry_on=retry_on)
