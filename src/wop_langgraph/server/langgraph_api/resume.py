"""Which pending interrupt each part of a ``command.resume`` answers (pure).

LangGraph accepts a plain resume value when exactly one interrupt waits, and
``{interrupt_id: value}`` for several. Here the same holds, with the ambiguity refused before
anything is applied: a plain value while several wait is ``409`` listing the pending ids (where
LangGraph itself raises inside the run), and an id that is not pending is ``409`` too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from wop_langgraph.server.langgraph_api.errors import PendingInterrupts
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["answers"]

#: LangGraph's interrupt ids: 32 lowercase hex digits (a hash of the task's namespace).
_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")


def answers(pending: Sequence[InterruptRecord], resume: Any) -> list[tuple[InterruptRecord, Any]]:
    """``(interrupt, value)`` for each interrupt the resume answers.

    Raises:
        PendingInterrupts: nothing is pending; a plain value while several are; an id that is not pending.
    """
    by_id = {record.lg_interrupt_id: record for record in pending}
    details = {"pendingInterruptIds": sorted(by_id)}
    if not pending:
        raise PendingInterrupts("no interrupt is pending on this thread", details=details)
    if (
        isinstance(resume, dict)
        and resume
        and all(isinstance(k, str) and _INTERRUPT_ID.fullmatch(k) for k in resume)
    ):
        unknown = sorted(set(resume) - set(by_id))
        if unknown:
            raise PendingInterrupts(
                f"interrupt(s) {', '.join(unknown)} are not pending on this thread",
                details={**details, "unknownInterruptIds": unknown},
            )
        return [(by_id[key], value) for key, value in resume.items()]
    if len(pending) > 1:
        raise PendingInterrupts(
            f"{len(pending)} interrupts are pending: answer them by id with command.resume = "
            "{interrupt_id: value, ...}",
            details=details,
        )
    return [(pending[0], resume)]
