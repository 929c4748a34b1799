"""Load every ``*.json`` WorkflowDefinition of a folder into a host, each under its own ``id``.

A file that cannot be run (malformed, or using a node type the host lacks) is refused with a
reason naming the problem, and the others load regardless: one bad fixture never keeps a host
from starting.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wop_langgraph.definitions.channels import project_channels
from wop_langgraph.definitions.compiler import CompiledDefinition, compile_definition
from wop_langgraph.definitions.core_types import default_node_types
from wop_langgraph.definitions.node_types import NodeTypeRegistry
from wop_langgraph.definitions.orchestrator import dispatch_type
from wop_langgraph.definitions.subworkflow import settle_links, sub_workflow_type
from wop_langgraph.host.definition_support import DefinitionSupport
from wop_langgraph.protocol.errors import ValidationError

if TYPE_CHECKING:
    from wop_langgraph.host.runtime import WopHost

__all__ = ["LoadReport", "load_definitions", "register_definition"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadReport:
    """What a folder load did: the workflow ids registered and, per refused file, why."""

    loaded: tuple[str, ...]
    refused: Mapping[str, str]


def with_host_types(host: WopHost, node_types: NodeTypeRegistry) -> NodeTypeRegistry:
    """``node_types`` plus the types bound to ``host`` (``core.subWorkflow``, ``core.dispatch``)
    it does not have its own of."""
    missing = [t for t in (sub_workflow_type(host), dispatch_type(host)) if t.type_id not in node_types]
    if not missing:
        return node_types
    bound = node_types.copy()
    for node_type in missing:
        bound.register(node_type)
    return bound


#: What definitions add to a host that runs them (channels in snapshots, sub-workflow links).
_SUPPORT = DefinitionSupport(project_channels=project_channels, settle_links=settle_links)


def register_definition(
    host: WopHost, document: object, node_types: NodeTypeRegistry | None = None
) -> CompiledDefinition:
    """Compile one WorkflowDefinition and register it on ``host`` under its ``id``.

    Raises:
        ValidationError: the definition is refused (``UnknownNodeType`` names a missing type).
    """
    compiled = compile_definition(document, with_host_types(host, node_types or default_node_types()))
    host.use_definitions(_SUPPORT)
    host.registry.register(
        compiled.workflow_id, compiled.graph, {}, requires=compiled.requires, definition=compiled.document
    )
    return compiled


def load_definitions(
    host: WopHost, folder: str | os.PathLike[str], node_types: NodeTypeRegistry | None = None
) -> LoadReport:
    """Register every ``*.json`` definition in ``folder`` (sorted by file name) on ``host``.

    Raises:
        FileNotFoundError: ``folder`` is not a directory.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"no definitions folder at {root}")
    types = with_host_types(host, node_types or default_node_types())
    loaded: list[str] = []
    refused: dict[str, str] = {}
    for path in sorted(root.glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            workflow_id = document.get("id") if isinstance(document, dict) else None
            if workflow_id in loaded:
                raise ValidationError(f"workflow id {workflow_id!r} is defined by an earlier file too")
            compiled = register_definition(host, document, types)
        except (ValidationError, ValueError) as exc:  # JSONDecodeError is a ValueError
            refused[path.name] = str(exc)
            logger.warning("definition %s refused: %s", path.name, exc)
            continue
        loaded.append(compiled.workflow_id)
    return LoadReport(tuple(loaded), refused)
