"""What a run's failure shows its clients: a code and a message written for them, nothing raw.

A node's exception text, its traceback and LangGraph's task id (which LangGraph appends to the
exception as a note) describe the host's internals; they go to the server log under a
correlation id, and the run snapshot and events carry only ``{code, message, retryable,
details: {correlationId}}``. Errors the project raises on purpose (:class:`WopError`) already
carry a message meant for clients and are passed through.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from typing import Any, Final

from langgraph.errors import GraphRecursionError

from wop_langgraph.protocol.errors import WopError

__all__ = ["public_error"]

_log = logging.getLogger("wop_langgraph.host.errors")
_CORRELATION_ATTRIBUTE: Final = "_wop_correlation_id"


def public_error(error: object, *, run_id: str | None = None, node_id: str | None = None) -> dict[str, Any]:
    """The OpenWOP error object (``_errorObject``) a client may see for ``error``.

    ``error`` is what a node or the graph raised (LangGraph may also report a bare value). The
    first mapping of an unexpected exception logs it, with its traceback, at ERROR under a fresh
    correlation id; mapping the same exception again (the node's ``node.failed`` and then the
    run's ``run.failed``) reuses that id and logs nothing more.
    """
    if isinstance(error, WopError):
        return error.error_object()
    if isinstance(error, GraphRecursionError):
        return {
            "code": "recursion_limit_exceeded",
            "message": "the run took more steps than its recursion limit allows",
            "retryable": False,
        }
    correlation_id = _correlation_id(error, run_id=run_id, node_id=node_id)
    where = f"node {node_id!r}" if node_id else "the run"
    return {
        "code": "internal_error",
        "message": f"{where} failed with an unexpected error; the host's log has the details",
        "retryable": False,
        "details": {"correlationId": correlation_id},
    }


def _correlation_id(error: object, *, run_id: str | None, node_id: str | None) -> str:
    known = getattr(error, _CORRELATION_ATTRIBUTE, None)
    if isinstance(known, str):
        return known
    correlation_id = secrets.token_hex(8)
    # A value without a __dict__ (a bare string) cannot keep its id: it is logged again if seen again.
    with contextlib.suppress(AttributeError, TypeError):
        setattr(error, _CORRELATION_ATTRIBUTE, correlation_id)
    exc_info = error if isinstance(error, BaseException) else None
    _log.error(
        "run %s node %s failed (correlationId %s): %r",
        run_id or "?",
        node_id or "?",
        correlation_id,
        error,
        exc_info=exc_info,
    )
    return correlation_id
