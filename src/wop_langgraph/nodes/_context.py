"""What a node API call knows about where it runs: the run, the node path, the host's settings.

The host puts a :class:`RunContext` into the run's LangGraph config under
:data:`CONTEXT_KEY`; the node API reads it back with :func:`current_call`. Everything a
node call needs is derived from LangGraph's own config so that a replayed execution derives
exactly the same values.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_config

from wop_langgraph.protocol.errors import WopError

__all__ = [
    "CONTEXT_KEY",
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

#: State channel a node writes ``{nodeId: errorObject}`` to when it failed but the run goes on
#: (a definition's ``any_failed`` / ``all_complete`` edge): the host records ``node.failed``.
NODE_FAILED_CHANNEL = "__wop_node_failed"

#: LangGraph node metadata key naming the node's OpenWOP ``typeId`` (recorded on ``node.started``).
NODE_TYPE_METADATA = "openwop.typeId"

#: State channel a node writes ``{nodeId: outputs}`` to: the host records them on ``node.completed``.
NODE_OUTPUTS_CHANNEL = "__wop_outputs"


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
    """

    run_id: str
    escalation_threshold: float = 0.7
    conversations: bool = False
    credentials: bool = False
    rejection_routes: Mapping[str, str] = field(default_factory=dict)
    emit: Callable[[str, str, dict[str, Any], str], None] | None = None


@dataclass(frozen=True)
class NodeCall:
    """The context of one node API call: the run, the node path and the task namespace."""

    context: RunContext
    node_id: str
    task_ns: str
    task_name: str

    def emit(self, event_type: str, payload: dict[str, Any], *, discriminator: Any = None) -> None:
        """Append a node-level event once: a replay of this execution appends nothing new."""
        if self.context.emit is None:
            return
        event_id = stable_id(self.context.run_id, self.task_ns, event_type, discriminator)
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
    """The :class:`NodeCall` of the node running now.

    Raises:
        WopError: when called outside a node of a graph run by a :class:`WopHost`.
    """
    try:
        config = get_config()
    except RuntimeError as exc:
        raise _outside_node() from exc
    configurable = config.get("configurable", {})
    context = configurable.get(CONTEXT_KEY)
    if not isinstance(context, RunContext):
        raise _outside_node()
    task_ns = str(configurable.get("checkpoint_ns", ""))
    metadata = config.get("metadata", {})
    return NodeCall(
        context=context,
        node_id=node_path(task_ns) or str(metadata.get("langgraph_node", "")),
        task_ns=task_ns,
        task_name=str(metadata.get("langgraph_node", "")),
    )


def _outside_node() -> WopError:
    return WopError(
        "wop_langgraph node functions must be called inside a node of a graph run by WopHost "
        "(create_run/resolve); call them from the node body, not at import or from a tool thread"
    )
