"""A new interrupt kind, declared in this one module: ``expense-check``.

A reviewer approves an expense claim up to the amount claimed. Everything the kind is lives
here: its payload model (:class:`ExpenseClaim`), the status its run waits in
(``waiting-approval``, where a ``custom`` interrupt would wait for input), its resume rule
(an approved amount, never more than claimed), the node call that raises it
(:func:`check_expense`) and its reviewer form (:class:`ExpensePage`); :data:`EXPENSE_CHECK`
declares them together and :func:`wop_langgraph.kinds.register` adds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from html import escape
from typing import Any, Final, cast

from pydantic import BaseModel, Field

from wop_langgraph.kinds import InterruptKind, register
from wop_langgraph.kinds.review.base import GatePage, data_of, form_error, form_html, render_fields
from wop_langgraph.kinds.review.fields import Field as FormField
from wop_langgraph.kinds.review.fields import Form, read_fields
from wop_langgraph.nodes import custom_interrupt
from wop_langgraph.protocol.errors import ValidationError

NAME: Final = "expense-check"
RESUME_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["approvedAmount"],
    "properties": {"approvedAmount": {"type": "integer", "minimum": 0}},
}


class ExpenseClaim(BaseModel):
    """What the interrupt carries (``data.payload``)."""

    amount: int = Field(gt=0)
    currency: str = Field(min_length=3, max_length=3)
    purpose: str = Field(min_length=1)


def check_expense(claim: ExpenseClaim) -> int:
    """Node call: wait for a reviewer to approve ``claim``; returns the amount approved."""
    # The rule travels with the call too, for plain LangGraph (no host, no registry there).
    answer = custom_interrupt(
        NAME, claim.model_dump(), resume_schema=RESUME_SCHEMA, resume_rule=never_more_than_claimed
    )
    approved: int = answer["approvedAmount"]
    return approved


def never_more_than_claimed(payload: Mapping[str, Any], value: Any, received_at: datetime) -> None:
    """Resume rule (beyond the schema): the approved amount is at most the amount claimed."""
    claimed = cast(ExpenseClaim, EXPENSE_CHECK.data_of(payload))
    approved = value.get("approvedAmount") if isinstance(value, dict) else None
    if isinstance(approved, int) and approved > claimed.amount:
        raise ValidationError(
            f"approvedAmount {approved} is more than the {claimed.amount} claimed",
            details={"path": "/resumeValue/approvedAmount", "maximum": claimed.amount},
        )


_AMOUNT = FormField("approvedAmount", "Amount approved", schema={"type": "integer", "minimum": 0})


class ExpensePage(GatePage):
    """Review form: the claim, and one field for the amount approved."""

    def title(self, payload: Mapping[str, Any]) -> str:
        return f"Expense claim: {data_of(payload)['payload']['purpose']}"

    def describe(self, payload: Mapping[str, Any]) -> str:
        claim = data_of(payload)["payload"]
        return f'<p class="lead">Claimed: {claim["amount"]} {escape(claim["currency"])}</p>'

    def forms(
        self, post_to: str, payload: Mapping[str, Any], form: Form | None, errors: Mapping[str, str]
    ) -> str:
        body = form_error(errors) + render_fields([_AMOUNT], form, errors)
        return form_html(post_to, "approve", body, button="Approve this amount")

    def value(self, payload: Mapping[str, Any], form: Form) -> Any:
        return read_fields([_AMOUNT], form, prefix="")

    def field_for_path(self, payload: Mapping[str, Any], path: str) -> str:
        return "approvedAmount" if path == "/resumeValue/approvedAmount" else ""


EXPENSE_CHECK: Final = register(
    InterruptKind(
        name=NAME,
        payload_model=ExpenseClaim,
        waiting_status="waiting-approval",
        resume_rule=never_more_than_claimed,
        node_call=check_expense,
        review=ExpensePage(),
    )
)
