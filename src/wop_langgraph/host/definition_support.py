"""What OpenWOP WorkflowDefinitions add to a host, handed to it by ``wop_langgraph.definitions``.

The host runs any registered graph and knows nothing of definitions; registering a definition
(:func:`wop_langgraph.definitions.register_definition`) hands the host these functions, so the
dependency runs one way (definitions -> host) and a host without definitions pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wop_langgraph.host.runtime import WopHost

__all__ = ["DefinitionSupport"]


@dataclass(frozen=True, slots=True)
class DefinitionSupport:
    """The definition features the host calls.

    Attributes:
        project_channels: ``(definition, events) -> channels``: the snapshot's ``channels``,
            folded from the run's ``RunEventDoc`` dicts (empty when it projects none).
        settle_links: ``(host, run_id)``: carry the run's end across ``core.subWorkflow``
            parent/child links; called after every drive and cancellation.
    """

    project_channels: Callable[[Mapping[str, Any], list[dict[str, Any]]], dict[str, Any]]
    settle_links: Callable[[WopHost, str], None]
