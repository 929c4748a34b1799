"""Which pending interrupt each part of a ``command.resume`` answers (pure).

LangGraph accepts a plain resume value when exactly one interrupt waits, and
``{interrupt_id: value}`` for several. Here the same holds, with the ambiguity refused before
anything is applied: a plain value while several wait is ``409`` listing the pending ids (where
LangGraph itself raises inside the run), and an id that is not pending is ``409`` too.

An OpenWOP approval gate (``request_approval``) takes its own resume value (``{"action":
"accept"}``, ...) or the ``HumanInTheLoopMiddleware`` decision shape that agent-chat-ui sends,
``{"decisions": [decision]}`` with one decision (:func:`approval_resume`); the host then checks
the translated value like any resolve (the gate's actions, ``resumeSchema``, eligibility).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from wop_langgraph.adapters import is_bare
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.server.langgraph_api.errors import PendingInterrupts
from wop_langgraph.store.interrupts import InterruptRecord

__all__ = ["answers", "approval_resume"]

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


def approval_resume(record: InterruptRecord, value: Any) -> Any:
    """The OpenWOP resume value for ``value`` answering ``record``: a middleware decision
    (``approve``; ``reject`` with ``message?``; ``edit`` with ``edited_action.args``) on a
    ``request_approval`` gate becomes ``accept`` / ``reject`` with ``feedback`` / ``edit-accept``
    with ``editedArtifactData``; anything else is unchanged (bare interrupts have their own
    adapters, applied by the host).

    Raises:
        ValidationError: a decision list that is not exactly one known decision.
    """
    if record.kind != "approval" or is_bare(record.payload):
        return value
    if not (isinstance(value, dict) and set(value) == {"decisions"}):
        return value
    decisions = value["decisions"]
    if not isinstance(decisions, list) or len(decisions) != 1 or not isinstance(decisions[0], dict):
        raise ValidationError(
            "an approval gate takes exactly one decision: {decisions: [{type: ...}]}",
            details={"field": "command.resume.decisions"},
        )
    decision = decisions[0]
    kind = decision.get("type")
    message = decision.get("message")
    if message is not None and not isinstance(message, str):
        raise ValidationError("a decision's message is a string", details={"field": "message"})
    if kind == "approve":
        return {"action": "accept"}
    if kind == "reject":
        return {"action": "reject", "feedback": message} if message else {"action": "reject"}
    edited = decision.get("edited_action")
    if kind == "edit" and isinstance(edited, dict) and "args" in edited:
        return {"action": "edit-accept", "editedArtifactData": edited["args"]}
    raise ValidationError(
        "an approval gate's decision is approve, reject (message?) or edit (edited_action.args)",
        details={"field": "command.resume.decisions/0"},
    )
