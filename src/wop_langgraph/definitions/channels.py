"""A definition's declared ``channels``, projected onto its run's snapshot (``RunSnapshot.channels``).

A WorkflowDefinition may declare typed channels (``channels: {name: {schema, reducer}}``). The
host keeps one of them: ``conversation`` with the ``message`` reducer, the conversation log of the
run folded message by message from its ``conversation.*`` events, in log order. Being a fold of
the log, a replay fork that reproduces the conversation projects it byte for byte
(conformance-conversation-replay). Other declared channels have nothing written to them by this
host and are not projected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["CONVERSATION_CHANNEL", "declares_channels", "project_channels"]

CONVERSATION_CHANNEL = "conversation"
_PREFIX = "conversation."


def declares_channels(definition: Mapping[str, Any] | None) -> bool:
    """Whether ``definition`` declares a channel this host projects."""
    return bool(_projected(definition))


def project_channels(
    definition: Mapping[str, Any] | None, events: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """The snapshot's ``channels``: each projected channel with what the run wrote to it.

    ``events`` are the run's ``RunEventDoc`` dicts in log order. A channel nothing was written to
    is left out (an empty object means no channel has content).
    """
    names = _projected(definition)
    if not names:
        return {}
    messages = [
        {"type": doc["type"], "nodeId": doc.get("nodeId"), **dict(doc.get("payload") or {})}
        for doc in events
        if str(doc.get("type", "")).startswith(_PREFIX)
    ]
    return {CONVERSATION_CHANNEL: messages} if messages else {}


def _projected(definition: Mapping[str, Any] | None) -> list[str]:
    channels = (definition or {}).get("channels")
    if not isinstance(channels, Mapping):
        return []
    spec = channels.get(CONVERSATION_CHANNEL)
    if isinstance(spec, Mapping) and spec.get("reducer") == "message":
        return [CONVERSATION_CHANNEL]
    return []
