"""The one place where a node suspends: build an OpenWOP payload, call ``interrupt()``, unwrap.

Under the host, the value handed to LangGraph's ``interrupt()`` is an
:data:`ENVELOPE_MARK`-tagged dict with the node path, the task namespace and the payload
(without its key: the store derives the key when it records the interrupt), and the host
resumes with a *delivery*: the resolution as the host decided it (see :class:`Delivery`).

Outside the host (plain LangGraph), :mod:`wop_langgraph.nodes._plain` suspends with the bare
OpenWOP payload and turns the plain resume value into the same :class:`Delivery`, so every
node API function turns a delivery into its result by one code path, wherever it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from langgraph.types import interrupt

from wop_langgraph.nodes._plain import note_host_only, suspend_plain
from wop_langgraph.nodes.context import NodeCall, current_call
from wop_langgraph.nodes.settlement import DELIVERY_MARK, Delivery
from wop_langgraph.protocol.payloads import parse_interrupt_payload
from wop_langgraph.protocol.resume_check import ResumeRule
from wop_langgraph.protocol.secret_schemas import refuse_secret_schemas

__all__ = ["AUTH_REQUIRED", "DELIVERY_MARK", "ENVELOPE_MARK", "PROFILES", "Delivery", "suspend", "timeout_ms"]

ENVELOPE_MARK = "__wop_interrupt__"

#: interrupt-profiles.md: only a bearer credential with ``approvals:respond`` may resolve the
#: interrupt; its signed-token surface can inspect it but not resolve it.
AUTH_REQUIRED = "openwop-interrupt-auth-required"
#: The interrupt profiles a node may ask for (the others are host-wide, or not implemented).
PROFILES = frozenset({AUTH_REQUIRED})


def timeout_ms(timeout: timedelta | float | None) -> int | None:
    """A timeout (timedelta or seconds) as whole milliseconds; ``None`` or 0 means no timer."""
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if seconds < 0:
        raise ValueError("a timeout cannot be negative")
    return round(seconds * 1000)


def suspend(
    kind: str,
    data: dict[str, Any],
    *,
    resume_schema: dict[str, Any] | None = None,
    timeout: timedelta | float | None = None,
    call: NodeCall | None = None,
    profiles: Sequence[str] = (),
    resume_rule: ResumeRule | None = None,
) -> Delivery:
    """Suspend the current node with an OpenWOP interrupt of ``kind`` and return its delivery.

    ``profiles`` (names in :data:`PROFILES`) travel beside the payload, not in it (the payload
    is the closed wire shape), and are stored with the interrupt. Outside the host there is no
    token surface for them to restrict and no sweep to enforce a timeout: both are logged as
    host-only (once per node) and the interrupt waits until it is resumed. ``resume_rule`` (an
    added kind's, :mod:`wop_langgraph.kinds`) judges the resume value there as the host would.

    Raises:
        ValidationError: the payload is malformed or one of its schemas asks for a secret
            (before anything is recorded), or, outside the host, the resume value does not fit
            the interrupt (the interrupt stays pending).
    """
    call = call or current_call()
    payload: dict[str, Any] = {"kind": kind, "data": data}
    if resume_schema is not None:
        payload["resumeSchema"] = resume_schema
    millis = timeout_ms(timeout)
    if millis:
        payload["timeoutMs"] = millis
    refuse_secret_schemas(payload)
    if not call.hosted:
        if millis:
            note_host_only(
                call.node_id,
                "timeout",
                f"timeoutMs={millis} is carried in the payload but nothing expires the interrupt "
                "under plain LangGraph; it waits until resumed",
            )
        for profile in sorted(set(profiles)):
            note_host_only(
                call.node_id,
                profile,
                f"profile {profile!r} has no effect under plain LangGraph (there are no signed "
                "tokens to restrict)",
            )
        return suspend_plain(call, payload, resume_rule)
    # Refuse a malformed payload here, in the node, before anything is recorded: the store
    # adds the key later, so validate with a placeholder one.
    parse_interrupt_payload({**payload, "key": "pending"})
    envelope = {ENVELOPE_MARK: 1, "nodeId": call.node_id, "taskNs": call.task_ns, "payload": payload}
    if profiles:
        envelope["profiles"] = sorted(set(profiles))
    return Delivery.from_value(interrupt(envelope))
