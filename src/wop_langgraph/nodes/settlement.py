"""How an interrupt was settled, as the node receives it: the one input of every node API result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wop_langgraph.protocol.errors import WopError

__all__ = ["DELIVERY_MARK", "Delivery"]

DELIVERY_MARK = "__wop_delivery__"


@dataclass(frozen=True)
class Delivery:
    """How an interrupt was settled, as the node receives it.

    The host resumes the graph with one (:meth:`as_value`); outside the host the node API
    builds one from the plain resume value. Either way the node API function turns it into
    its result by the same code.

    Attributes:
        status: ``resolved`` (someone answered, or a timed-out approval was rejected) or
            ``expired`` (a non-approval interrupt's timeout passed; only the host has timers).
        resume_value: the caller's validated ``resumeValue`` (or the host's, for a timeout).
        resolution: what the host recorded on ``interrupt.resolved`` (``action``, ``decision``,
            ``reason``, ...); ``{}`` for kinds other than approval.
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
