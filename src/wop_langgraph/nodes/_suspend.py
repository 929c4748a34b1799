"""The one place where a node suspends: wrap an OpenWOP payload, call ``interrupt()``, unwrap.

The value handed to LangGraph's ``interrupt()`` is an :data:`ENVELOPE_MARK`-tagged dict with
the node path, the task namespace and the payload (without its key: the store derives the key
when it records the interrupt). The value the host resumes with is a *delivery*: the
resolution as the host decided it (see :class:`Delivery`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langgraph.types import interrupt

from wop_langgraph.nodes._context import NodeCall, current_call
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.protocol.payloads import parse_interrupt_payload

__all__ = ["DELIVERY_MARK", "ENVELOPE_MARK", "Delivery", "suspend", "timeout_ms"]

ENVELOPE_MARK = "__wop_interrupt__"
DELIVERY_MARK = "__wop_delivery__"


@dataclass(frozen=True)
class Delivery:
    """How the host resolved an interrupt, as the node receives it.

    Attributes:
        status: ``resolved`` (someone answered, or a timed-out approval was rejected) or
            ``expired`` (a non-approval interrupt's timeout passed).
        resume_value: the caller's validated ``resumeValue`` (or the host's, for a timeout).
        resolution: what the host recorded on ``interrupt.resolved`` (``action``, ``decision``,
            ``reason``, ...).
    """

    status: str
    resume_value: Any
    resolution: dict[str, Any]

    def as_value(self) -> dict[str, Any]:
        """The JSON value the host resumes the graph with."""
        return {
            DELIVERY_MARK: 1,
            "status": self.status,
            "resumeValue": self.resume_value,
            "resolution": self.resolution,
        }

    @classmethod
    def from_value(cls, value: Any) -> Delivery:
        """Read a delivery back; anything else was not resumed by a WopHost."""
        if not isinstance(value, dict) or value.get(DELIVERY_MARK) != 1:
            raise WopError(
                "this interrupt was resumed without WopHost.resolve (a raw Command(resume=...)); "
                "resolve OpenWOP interrupts through the host so they are validated and recorded"
            )
        return cls(
            status=value["status"], resume_value=value.get("resumeValue"), resolution=value["resolution"]
        )


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
) -> Delivery:
    """Suspend the current node with an OpenWOP interrupt of ``kind`` and return its delivery."""
    call = call or current_call()
    payload: dict[str, Any] = {"kind": kind, "data": data}
    if resume_schema is not None:
        payload["resumeSchema"] = resume_schema
    millis = timeout_ms(timeout)
    if millis:
        payload["timeoutMs"] = millis
    # Refuse a malformed payload here, in the node, before anything is recorded: the store
    # adds the key later, so validate with a placeholder one.
    parse_interrupt_payload({**payload, "key": "pending"})
    envelope = {ENVELOPE_MARK: 1, "nodeId": call.node_id, "taskNs": call.task_ns, "payload": payload}
    return Delivery.from_value(interrupt(envelope))
