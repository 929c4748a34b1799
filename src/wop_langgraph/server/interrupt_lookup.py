"""Find the interrupt a request addresses and check it can still be acted on."""

from __future__ import annotations

from datetime import datetime, timedelta

from wop_langgraph._clock import as_utc
from wop_langgraph.host import WopHost
from wop_langgraph.host.driver import TERMINAL_STATUSES
from wop_langgraph.protocol.errors import InterruptAlreadyResolved, InterruptExpired, NotFound
from wop_langgraph.store.engine import reading
from wop_langgraph.store.interrupts import InterruptRecord, get_interrupt_by_key
from wop_langgraph.tokens import MintedToken, SigningKeys, TokenClaims, mint

__all__ = ["mint_for", "pending_at_node", "pending_for_token"]


def pending_at_node(host: WopHost, run_id: str, node_id: str) -> InterruptRecord:
    """The pending interrupt of ``node_id`` in ``run_id``.

    Raises:
        NotFound: no such run, or the node never raised an interrupt.
        InterruptAlreadyResolved: the run finished, or the node's interrupts are all settled.
    """
    status = host.snapshot(run_id)["status"]
    records = [r for r in host.interrupts(run_id) if r.node_id == node_id]
    if not records:
        raise NotFound(f"node {node_id!r} of run {run_id!r} has no interrupt")
    if status in TERMINAL_STATUSES:
        raise InterruptAlreadyResolved(
            f"run {run_id!r} is {status}; its interrupts can no longer be resolved",
            details={"runStatus": status},
        )
    pending = [r for r in records if r.is_pending]
    if not pending:
        raise InterruptAlreadyResolved(f"the interrupt at node {node_id!r} was already {records[-1].status}")
    return pending[0]


def pending_for_token(host: WopHost, claims: TokenClaims) -> InterruptRecord:
    """The interrupt a verified token names, if it is still pending and its run still live.

    Raises:
        NotFound: the interrupt is unknown here (a token of another database).
        InterruptAlreadyResolved: it was resolved, timed out or cancelled, or its run finished.
    """
    with reading(host.engine) as conn:
        record = get_interrupt_by_key(conn, claims.interrupt_id)
    if record is None or record.run_id != claims.run_id or record.node_id != claims.node_id:
        raise NotFound("the interrupt this token names is not known to this host")
    status = host.snapshot(record.run_id)["status"]
    if status in TERMINAL_STATUSES:
        raise InterruptAlreadyResolved(
            f"the run is {status}; its interrupts can no longer be resolved", details={"runStatus": status}
        )
    if not record.is_pending:
        raise InterruptAlreadyResolved(f"the interrupt was already {record.status}")
    return record


def mint_for(
    keys: SigningKeys,
    record: InterruptRecord,
    *,
    intent: str,
    now: datetime,
    ttl: timedelta,
    approver: str | None = None,
) -> MintedToken:
    """A token for ``record`` whose ``interruptId`` is the interrupt's key, capped at its deadline.

    ``approver`` (already checked by the caller) is the subject the token votes as.

    Raises:
        InterruptExpired: the interrupt's deadline has passed.
    """
    deadline = as_utc(record.deadline) if record.deadline is not None else None
    if deadline is not None and deadline <= now:
        raise InterruptExpired("the interrupt's deadline has passed")
    return mint(
        keys,
        run_id=record.run_id,
        node_id=record.node_id,
        interrupt_id=record.key,
        intent="inspect" if intent == "inspect" else "resolve",
        now=now,
        ttl=ttl,
        not_after=deadline,
        approver=approver,
    )
