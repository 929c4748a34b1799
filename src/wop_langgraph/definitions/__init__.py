"""OpenWOP WorkflowDefinitions on LangGraph: node types by ``typeId``, edges with trigger rules.

host = WopHost.from_url("sqlite:///runs.db")
report = load_definitions(host, "fixtures/")         # or register_definition(host, doc)
types = default_node_types()                         # extend with your own node types
types.register(NodeType("vendor.acme.publish", publish, side_effecting=True))
"""

from wop_langgraph.definitions.compiler import CompiledDefinition, compile_definition
from wop_langgraph.definitions.core_types import default_node_types
from wop_langgraph.definitions.loader import LoadReport, load_definitions, register_definition
from wop_langgraph.definitions.node_types import NodeInvocation, NodeType, NodeTypeRegistry, UnknownNodeType
from wop_langgraph.definitions.rules import TRIGGER_RULES, Verdict, decide

__all__ = [
    "TRIGGER_RULES",
    "CompiledDefinition",
    "LoadReport",
    "NodeInvocation",
    "NodeType",
    "NodeTypeRegistry",
    "UnknownNodeType",
    "Verdict",
    "compile_definition",
    "decide",
    "default_node_types",
    "load_definitions",
    "register_definition",
]
