"""``custom`` with no registered ``customKind``: any value its ``resumeSchema`` admits."""

from __future__ import annotations

from typing import Final

from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.answers import AnswerPage
from wop_langgraph.nodes.questions import custom_interrupt
from wop_langgraph.protocol.payloads import CustomInterrupt
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["CUSTOM"]

CUSTOM: Final = InterruptKind(
    name="custom",
    wire_kind="custom",
    payload_model=CustomInterrupt,
    waiting_status=waiting_status_for("custom"),
    review=AnswerPage(),
    node_call=custom_interrupt,
)
