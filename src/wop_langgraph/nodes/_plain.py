"""Suspending outside WopHost: LangGraph's own ``interrupt()``, with the OpenWOP payload as its value.

Under plain LangGraph (``graph.invoke``, LangGraph Studio, ``langgraph dev``) there is no
store to derive a key, no resolver to validate a resume value and no tally. So here:

* the interrupt's value is the OpenWOP payload itself (``kind``, ``data``, ``resumeSchema``,
  ``timeoutMs``, ``key``), the key derived from what LangGraph offers:
  ``<thread_id>:<nodeId>:<task id>:<position of the interrupt() in the task>``;
* the value given with ``Command(resume=...)`` is the plain OpenWOP resume value, checked by
  the host's own checks *inside* ``interrupt()`` (as its ``response_schema``), so a bad value
  raises the host's ``ValidationError`` before LangGraph records it: the interrupt stays
  pending and can be answered again;
* an approval is decided by that one value, counted by the host's own tally as one vote.

The result is a :class:`~wop_langgraph.nodes.settlement.Delivery`, exactly what the host would
have resumed with, and the node API function turns it into its result by the same code.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Annotated, Any

from langgraph.config import get_config
from langgraph.types import interrupt
from pydantic import BeforeValidator, WithJsonSchema

from wop_langgraph._clock import utcnow
from wop_langgraph.nodes._once import warn_once
from wop_langgraph.nodes.context import NodeCall
from wop_langgraph.nodes.settlement import Delivery
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.payloads import parse_interrupt_payload
from wop_langgraph.protocol.quorum import approval_resolution, tally, vote_of
from wop_langgraph.protocol.resume_check import RESUME_RULES, ResumeRule, check_with_rule, no_rule
from wop_langgraph.protocol.storable import require_storable

try:  # Marks an error as a refused resume value, so ToolNode re-raises it and the runner
    # lets sibling tasks finish (LangGraph >= 1.2.20 does this for its own response_schema).
    from langgraph.errors import _mark_invalid_resume
except ImportError:  # pragma: no cover - older LangGraph: the error still refuses the value

    def _mark_invalid_resume(error: BaseException) -> None:
        return None


__all__ = ["MAX_KEY_LENGTH", "note_host_only", "plain_key", "suspend_plain"]

MAX_KEY_LENGTH = 256
#: LangGraph's per-task scratchpad (private; pinned by ``langgraph>=1.2.20,<1.3``). Its resume
#: list holds one value per ``interrupt()`` of this task already answered.
_SCRATCHPAD_KEY = "__pregel_scratchpad"

_log = logging.getLogger("wop_langgraph.nodes")


def note_host_only(node_id: str, feature: str, message: str) -> None:
    """Warn (once per node and feature, in the log) that ``feature`` does less outside WopHost.

    For what plain LangGraph can carry but not honour (a timeout, a token profile): the call
    goes on, and says so, rather than silently doing less.
    """
    key = ("host-only", node_id, feature)
    warn_once(_log, key, "node %r: %s (enforced by WopHost only)", node_id, message)


def plain_key(call: NodeCall, position: int) -> str:
    """The OpenWOP key of an interrupt outside the host: stable on replay, new per execution.

    ``<thread_id>:<nodeId>:<task id>:<position>``; a task id is new for every execution of a
    node (a later visit, a ``Send``), the same when LangGraph replays the task. Hashed (as the
    host does) when longer than 256 characters.
    """
    last = call.task_ns.rsplit("|", 1)[-1]
    task_id = last.partition(":")[2] or hashlib.sha256(call.task_ns.encode()).hexdigest()[:32]
    key = f"{call.thread_id}:{call.node_id}:{task_id}:{position}"
    if len(key) <= MAX_KEY_LENGTH:
        return key
    return f"sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def suspend_plain(call: NodeCall, payload: dict[str, Any], rule: ResumeRule | None = None) -> Delivery:
    """Suspend with LangGraph's ``interrupt()`` and return the delivery the host would have made.

    ``rule`` is the resume rule of an added kind (the host finds it in its registry); the
    kinds OpenWOP specifies have theirs in :data:`RESUME_RULES`.

    Raises:
        ValidationError: the payload is malformed, or the resume value does not fit it.
    """
    keyed = {**payload, "key": plain_key(call, _position())}
    parse_interrupt_payload(keyed)
    rule = rule or RESUME_RULES.get(keyed["kind"], no_rule)
    while True:
        value = interrupt(keyed, response_schema=_resume_type(keyed, rule))
        parsed = check_with_rule(rule, keyed, value, utcnow())
        if parsed is None:
            return Delivery(status="resolved", resume_value=value, resolution={})
        if parsed.action == "ask":
            # A question about the artifact decides nothing: the host keeps the gate pending,
            # so ask again (same key) until a deciding value arrives.
            continue
        data = keyed["data"]
        outcome = tally(
            [vote_of("langgraph", parsed)],
            required_approvals=1,
            rejection_policy=str(data.get("rejectionPolicy", "single-veto")),
        )
        resolution = approval_resolution(outcome)
        return Delivery(status="resolved", resume_value=value, resolution=resolution)


def _position() -> int:
    """How many ``interrupt()`` calls of the running task were answered before this one."""
    scratchpad = get_config()["configurable"].get(_SCRATCHPAD_KEY)
    resume = getattr(scratchpad, "resume", None)
    return len(resume) if isinstance(resume, list) else 0


def _resume_type(payload: dict[str, Any], rule: ResumeRule) -> Any:
    """A pydantic type whose validation is the host's resume check of ``payload``.

    ``interrupt()`` validates a resume value against its ``response_schema`` before it records
    the value, so a refused value leaves the interrupt pending. The JSON schema LangGraph shows
    on the ``Interrupt`` (e.g. to LangGraph Studio) is the payload's ``resumeSchema``, if any.
    """

    def check(value: Any) -> Any:
        try:
            require_storable(value, "/resumeValue")
            check_with_rule(rule, payload, value, utcnow())
        except ValidationError as exc:
            _mark_invalid_resume(exc)
            raise
        return value

    return Annotated[Any, BeforeValidator(check), WithJsonSchema(payload.get("resumeSchema") or {})]
