"""OpenWOP interrupt keys and ids, derived from where an interrupt stands in its run.

A key names one ``interrupt()`` of one execution of one node: ``<runId>:<nodeId>:<visit>:<ordinal>``,
where *visit* counts the node's interrupts in this run that were already settled when the
execution began, and *ordinal* is the call's position inside the execution. Keys are recorded
when first derived and looked up on replay, never recomputed, so a crash or a replay finds the
same key while a later visit over an edge gets a new one.
"""

from __future__ import annotations

import hashlib

__all__ = ["MAX_KEY_LENGTH", "interrupt_id_for", "interrupt_key", "tenant_of"]

MAX_KEY_LENGTH = 256


def interrupt_key(run_id: str, node_id: str, visit_index: int, ordinal: int, *, collision: int = 0) -> str:
    """The key of an interrupt; hashed when the readable form would pass 256 characters.

    Args:
        collision: 0, or n > 0 for the n-th concurrent execution of the same node at the same
            visit (``Send`` fan-out), which must not share a key with its siblings.
    """
    key = f"{run_id}:{node_id}:{visit_index}:{ordinal}"
    if collision:
        key = f"{key}:{collision}"
    if len(key) <= MAX_KEY_LENGTH:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"sha256:{digest}"


def tenant_of(run_id: str) -> str:
    """The tenant segment of a tenant-bound run id (``local`` for a bare LangGraph thread id)."""
    tenant, sep, _ = run_id.partition("/")
    return tenant if sep and tenant else "local"


def interrupt_id_for(run_id: str, lg_interrupt_id: str) -> str:
    """The tenant-bound OpenWOP ``interruptId`` of a LangGraph interrupt in a run."""
    opaque = hashlib.sha256(f"{run_id}\x00{lg_interrupt_id}".encode()).hexdigest()[:32]
    return f"{tenant_of(run_id)}/{opaque}"
