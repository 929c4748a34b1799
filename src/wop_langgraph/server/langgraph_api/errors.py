"""The LangGraph Server API's own refusals (in the OpenWOP error envelope, like every refusal)."""

from __future__ import annotations

from wop_langgraph.protocol.errors import WopError

__all__ = ["PendingInterrupts", "RunBusy", "ThreadBusy", "Unsupported"]


class ThreadBusy(WopError):
    """A run was asked for on a thread whose current run is still going (``multitask_strategy: reject``)."""

    code = "wop-langgraph.thread_busy"
    status = 409
    retryable = True


class PendingInterrupts(WopError):
    """The thread waits on interrupts the request does not answer (or answers ambiguously)."""

    code = "wop-langgraph.interrupts_pending"
    status = 409
    retryable = False


class Unsupported(WopError):
    """A LangGraph Server API option this host does not offer (yet); nothing was changed."""

    code = "wop-langgraph.unsupported"
    status = 422
    retryable = False


class RunBusy(WopError):
    """A run that has not ended was asked to be deleted (cancel it first)."""

    code = "wop-langgraph.run_busy"
    status = 409
    retryable = True
