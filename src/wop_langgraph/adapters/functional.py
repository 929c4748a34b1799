"""The Functional API (``@entrypoint`` / ``@task``): what the host must know to record it deterministically.

Node calls inside a ``@task`` need nothing special: their node id is the task's path
(``<entrypoint>.<task>``) and their key is stable across the entrypoint's re-execution, because
LangGraph gives a re-executed call the same task id. A *bare* ``interrupt()`` inside a ``@task``
is different: LangGraph writes it twice, once for the call task and once for the calling node's
task, in no fixed order, and only the calling node's copy says where it runs. The recorder keeps
that copy (:func:`recorded_by_caller`), so the interrupt is addressed as the calling node (the
entrypoint) with the same key on every run.
"""

from __future__ import annotations

from typing import Any

from wop_langgraph.nodes.suspend import ENVELOPE_MARK

__all__ = ["recorded_by_caller"]

_PUSH = "~__pregel_push"
_PULL = "~__pregel_pull"


def recorded_by_caller(task_path: str, value: Any) -> bool:
    """Whether this write of a bare interrupt is a call task's copy, to be left to its caller's copy.

    Args:
        task_path: the LangGraph task path of the write (``put_writes``' ``task_path``).
        value: the interrupt's value.
    """
    enveloped = isinstance(value, dict) and value.get(ENVELOPE_MARK) == 1
    # A call made from a node (PULL) task: the path of a push task names its caller's path.
    # A ``Send`` task's path has no PULL part and has no other copy: it is always recorded.
    return not enveloped and task_path.startswith(_PUSH) and _PULL in task_path
