"""Node types by ``typeId``: what a definition's node does when it runs, in a registry users extend.

A node type is a plain function of a :class:`NodeInvocation` returning the node's outputs. It runs
inside a LangGraph node of a graph driven by a ``WopHost``, so it may call the node API
(``request_approval``, ``ask``, ``wait_for_event`` ...) to suspend. An exception fails the node;
the definition's edges decide whether the run continues (``any_failed`` / ``all_complete``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from wop_langgraph.definitions.model import NodeSpec
from wop_langgraph.protocol.errors import ValidationError

__all__ = ["CAPABILITIES", "NodeInvocation", "NodeType", "NodeTypeRegistry", "UnknownNodeType"]

#: Host capabilities a node type may require (``WopHost(conversations=..., credentials=...)``).
CAPABILITIES = frozenset({"conversation", "credential"})


@dataclass(frozen=True)
class NodeInvocation:
    """One execution of a node: its spec, resolved input ports and the run's variables.

    ``outputs`` holds every node's latest outputs so far (a supervisor reads its own last turn,
    a dispatch its supervisor's decision), ``sources`` the nodes with an edge into this one.
    """

    spec: NodeSpec
    inputs: Mapping[str, Any]
    variables: Mapping[str, Any]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @property
    def node_id(self) -> str:
        return self.spec.node_id

    @property
    def config(self) -> Mapping[str, Any]:
        return self.spec.config


NodeFunction = Callable[[NodeInvocation], Mapping[str, Any] | None]
ConfigCheck = Callable[[NodeSpec], None]


@dataclass(frozen=True)
class NodeType:
    """A node type.

    Attributes:
        type_id: the ``typeId`` it implements (``core.noop``, ``vendor.acme.publish``).
        run: executes one node; returns its outputs (``None`` for none).
        requires: host capabilities a run of a workflow using it needs (``conversation``,
            ``credential``); a run is refused at creation when the host lacks one.
        side_effecting: it acts on the world outside the run's log (replay must not re-fire it).
        check: validates a node's ``config`` at load; raises ``ValidationError``.
        source: where its behaviour is specified (for readers of the registry).
        entry: it may start a run though edges lead into it (a supervisor heads the loop it
            forms with its dispatch); used only when the definition has no node without one.
        ends_run: given the node's outputs, whether the run ends after it (a dispatch that
            carries out a ``terminate`` decision), whatever edges leave it.
    """

    type_id: str
    run: NodeFunction
    requires: frozenset[str] = frozenset()
    side_effecting: bool = False
    check: ConfigCheck | None = None
    source: str = field(default="", compare=False)
    entry: bool = False
    ends_run: Callable[[Mapping[str, Any]], bool] | None = None

    def __post_init__(self) -> None:
        unknown = self.requires - CAPABILITIES
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}")


class UnknownNodeType(ValidationError):
    """A definition names a ``typeId`` this host has no implementation for."""


class NodeTypeRegistry:
    """``typeId`` -> :class:`NodeType`; copy the default one and add your own types."""

    def __init__(self, types: Mapping[str, NodeType] | None = None) -> None:
        self._types: dict[str, NodeType] = dict(types or {})
        self._refused: dict[str, str] = {}

    def register(self, node_type: NodeType, *, replace: bool = False) -> None:
        """Add a node type; an existing ``typeId`` is replaced only with ``replace=True``."""
        if node_type.type_id in self._types and not replace:
            raise ValueError(f"node type {node_type.type_id!r} is already registered (pass replace=True)")
        self._refused.pop(node_type.type_id, None)
        self._types[node_type.type_id] = node_type

    def refuse(self, type_id: str, reason: str) -> None:
        """Name a type this host deliberately does not run, with the reason given at load."""
        self._types.pop(type_id, None)
        self._refused[type_id] = reason

    def get(self, type_id: str, *, node_id: str = "") -> NodeType:
        """The node type, or ``UnknownNodeType`` naming it (and why, when it is refused on purpose)."""
        found = self._types.get(type_id)
        if found is not None:
            return found
        where = f"node {node_id!r} uses " if node_id else ""
        reason = self._refused.get(type_id, "this host has no implementation of it")
        raise UnknownNodeType(
            f"{where}node type {type_id!r}, which this host does not run: {reason}",
            details={"typeId": type_id, **({"nodeId": node_id} if node_id else {})},
        )

    def copy(self) -> NodeTypeRegistry:
        """An independent registry with the same types and refusals."""
        clone = NodeTypeRegistry(self._types)
        clone._refused = dict(self._refused)
        return clone

    def __contains__(self, type_id: object) -> bool:
        return type_id in self._types

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._types))
