"""``external-event``: a run waits for an event from a system, matched by its ``correlation``."""

from __future__ import annotations

from typing import Final

from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.waiting import ExternalEventPage
from wop_langgraph.nodes.questions import wait_for_event
from wop_langgraph.protocol.payloads import ExternalEventInterrupt
from wop_langgraph.protocol.resume_check import check_external_event
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["EXTERNAL_EVENT"]

EXTERNAL_EVENT: Final = InterruptKind(
    name="external-event",
    wire_kind="external-event",
    payload_model=ExternalEventInterrupt,
    waiting_status=waiting_status_for("external-event"),
    review=ExternalEventPage(),
    node_call=wait_for_event,
    resume_rule=check_external_event,
)
