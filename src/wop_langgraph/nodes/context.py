"""What a node API call knows about where it runs: the run, the node path, the host's settings.

The host puts a :class:`RunContext` into the run's LangGraph config under
:data:`CONTEXT_KEY`; the node API reads it back with :func:`current_call`. A graph run by
plain LangGraph (``graph.invoke``, LangGraph Studio, ``langgraph dev``) has no such context:
the call is then *plain* (``NodeCall.context is None``) and suspends with LangGraph's own
``interrupt()``. Everything a node call needs is derived from LangGraph's own config so that
a replayed execution derives exactly the same values.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from langgraph.config import get_config, get_stream_writer

from wop_langgraph.protocol.errors import ValidationError, WopError

__all__ = [
    "CONTEXT_KEY",
    "DEFAULT_ESCALATION_THRESHOLD",
    "NODE_FAILED_CHANNEL",
    "NODE_OUTPUTS_CHANNEL",
    "NODE_PATH_SEPARATOR",
    "NODE_TYPE_METADATA",
    "NodeCall",
    "RunContext",
    "current_call",
    "node_path",
    "stable_id",
]

#: Key of the :class:`RunContext` inside ``config["configurable"]``.
CONTEXT_KEY = "__wop_context"

#: The low-confidence threshold when neither the call nor the run sets one.
DEFAULT_ESCALATION_THRESHOLD = 0.7

#: State channel a node writes ``{nodeId: errorObject}`` to when it failed but the run goes on
#: (a definition's ``any_failed`` / ``all_complete`` edge): the host records ``node.failed``.
NODE_FAILED_CHANNEL = "__wop_node_failed"

#: LangGraph node metadata key naming the node's OpenWOP ``typeId`` (recorded on ``node.started``).
NODE_TYPE_METADATA = "openwop.typeId"

#: State channel a node writes ``{nodeId: outputs}`` to: the host records them on ``node.completed``.
NODE_OUTPUTS_CHANNEL = "__wop_outputs"


class ReplaySource(Protocol):
    """The source record a replay fork re-executes against (``wop_langgraph.host.fork.ReplayRecord``)."""

    def outcome(self, node_id: str) -> Mapping[str, Any] | None:
        """A side-effecting node's recorded outputs in a replay (``None``: not a replay, run it)."""

    def recorded_id(self, event_type: str, field: str, node_id: str, task_ns: str, minted: str) -> str:
        """The identifier the source recorded where ``minted`` would be minted now (``minted`` if none)."""

    def divergence(self, node_id: str, outputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The ``replay.diverged`` payload when a re-executed node's outcome differs from the record."""


@dataclass(frozen=True)
class RunContext:
    """Per-run settings and services the host hands to node API calls.

    Attributes:
        run_id: the OpenWOP run id (also the LangGraph ``thread_id``).
        escalation_threshold: the run's low-confidence threshold, 0..1.
        conversations: whether the host enables conversation interrupts.
        credentials: whether the host enables credential interrupts.
        rejection_routes: node id -> the node a rejected approval continues to.
        emit: appends node-level events (``agent.decided``, ``conversation.*``) to the run's
            log exactly once per ``eventId``; set by the host.
        routed_rejections: task ids of gates rejected onto their rejection route in this
            drive (the driver logs them as failed sources, not completions).
        replay: what a replay fork reads from its source's record (``host/fork.py``
            ``ReplayRecord``): side-effecting nodes' outcomes, recorded identifiers.
        recursion_limit: the run's ``configurable.run.recursionLimit`` when it set one: its
            runaway guard, which bounds a WorkflowDefinition's node executions.
    """

    run_id: str
    escalation_threshold: float = DEFAULT_ESCALATION_THRESHOLD
    conversations: bool = False
    credentials: bool = False
    rejection_routes: Mapping[str, str] = field(default_factory=dict)
    emit: Callable[[str, str, dict[str, Any], str], None] | None = None
    routed_rejections: set[str] = field(default_factory=set)
    replay: ReplaySource | None = None
    recursion_limit: int | None = None


@dataclass(frozen=True)
class NodeCall:
    """The context of one node API call: the run, the node path and the task namespace.

    Attributes:
        context: the host's :class:`RunContext`; ``None`` when plain LangGraph runs the graph.
        node_id: the OpenWOP node id (``parent.child`` inside a subgraph).
        task_ns: LangGraph's namespace of the running task (node names and task ids).
        task_name: the LangGraph node name.
        thread_id: LangGraph's ``thread_id`` (the run id under the host).
        configurable: LangGraph's ``configurable`` of the task, read outside the host only.
    """

    context: RunContext | None
    node_id: str
    task_ns: str
    task_name: str
    thread_id: str = ""
    configurable: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hosted(self) -> bool:
        """Whether a :class:`WopHost` runs this graph (else plain LangGraph does)."""
        return self.context is not None

    @property
    def run_id(self) -> str:
        """The OpenWOP run id under the host; LangGraph's thread id outside it."""
        return self.context.run_id if self.context is not None else self.thread_id

    def escalation_threshold(self) -> float:
        """The run's low-confidence threshold, 0..1.

        Under the host it comes from the run's ``configurable.run.escalationThreshold``; outside
        it from LangGraph's ``config["configurable"]["run"]["escalationThreshold"]``, read the
        same way (a percentage 0..100); else :data:`DEFAULT_ESCALATION_THRESHOLD`.
        """
        if self.context is not None:
            return self.context.escalation_threshold
        section = self.configurable.get("run")
        percent = section.get("escalationThreshold") if isinstance(section, Mapping) else None
        if percent is None:
            return DEFAULT_ESCALATION_THRESHOLD
        if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
            raise ValidationError(
                "configurable.run.escalationThreshold is a whole percentage from 0 to 100",
                details={"path": "/configurable/run/escalationThreshold"},
            )
        return percent / 100

    def rejection_route(self) -> str | None:
        """The node a rejected approval in this node continues to, if the host registered one."""
        if self.context is None:
            return None
        return self.context.rejection_routes.get(self.node_id)

    @property
    def task_id(self) -> str:
        """LangGraph's id of the task running this call (the last segment of its namespace)."""
        return self.task_ns.rsplit("|", 1)[-1].split(":", 1)[-1]

    def emit(self, event_type: str, payload: dict[str, Any], *, discriminator: Any = None) -> None:
        """Record a node-level event once: a replay of this execution appends nothing new.

        Under the host the event goes to the run's event log (deduplicated by ``eventId``).
        Outside it there is no event log: the event is written to LangGraph's ``custom``
        stream as ``{"type", "nodeId", "eventId", "payload"}``; a replayed execution writes it
        again with the same ``eventId``, so a consumer can drop the repeat.
        """
        event_id = stable_id(self.run_id, self.task_ns, event_type, discriminator)
        if self.context is None:
            writer = get_stream_writer()
            writer({"type": event_type, "nodeId": self.node_id, "eventId": event_id, "payload": payload})
            return
        if self.context.emit is not None:
            self.context.emit(event_type, self.node_id, payload, event_id)


#: Joins the node names of a subgraph path. The official nodeId grammar
#: (``^[A-Za-z0-9._~:-]{1,128}$``) admits no ``/``, so a subgraph's node is ``parent.child``.
NODE_PATH_SEPARATOR = "."


def node_path(task_ns: str) -> str:
    """The OpenWOP node id of a LangGraph task namespace: ``parent.child``, task ids stripped."""
    return NODE_PATH_SEPARATOR.join(part.split(":", 1)[0] for part in task_ns.split("|") if part)


def stable_id(*parts: Any) -> str:
    """A 32-hex id that is a pure function of ``parts`` (canonical JSON, SHA-256)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def current_call() -> NodeCall:
    """The :class:`NodeCall` of the node running now, under the host or plain LangGraph.

    Raises:
        WopError: when called outside a node of a running LangGraph graph.
    """
    try:
        config = get_config()
    except RuntimeError as exc:
        raise _outside_node() from exc
    configurable = config.get("configurable", {})
    context = configurable.get(CONTEXT_KEY)
    task_ns = str(configurable.get("checkpoint_ns", ""))
    metadata = config.get("metadata", {})
    return NodeCall(
        context=context if isinstance(context, RunContext) else None,
        node_id=node_path(task_ns) or str(metadata.get("langgraph_node", "")),
        task_ns=task_ns,
        task_name=str(metadata.get("langgraph_node", "")),
        thread_id=str(configurable.get("thread_id", "")),
        configurable=configurable,
    )


def _outside_node() -> WopError:
    return WopError(
        "wop_langgraph node functions must be called inside a node of a running LangGraph graph "
        "(graph.invoke, WopHost.create_run/resolve, LangGraph Studio); call them from the node "
        "body, not at import or from a thread the node started"
    )
