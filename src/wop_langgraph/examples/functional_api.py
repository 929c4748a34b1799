"""The Functional API: an ``@entrypoint`` whose ``@task``s ask with node calls and bare ``interrupt()``.

Registered unchanged. The draft is approved through ``request_approval`` in a task (addressed
``publish_flow.review``); the channel question is a plain ``interrupt()`` in the entrypoint
(addressed ``publish_flow``). After each answer LangGraph re-executes the entrypoint from the
top: finished tasks return their saved results and earlier questions are not asked again.

    wop-langgraph serve wop_langgraph.examples.functional_api:workflows --db sqlite:///flow.db
"""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint, task
from langgraph.pregel import Pregel
from langgraph.types import interrupt

from wop_langgraph.nodes import request_approval

__all__ = ["WORKFLOW_ID", "publish_flow", "workflows"]

WORKFLOW_ID = "functional-publish"


@task
def draft(topic: str) -> str:
    """Write the draft (deterministic: no model needed)."""
    return f"We are happy to announce {topic}."


@task
def review(text: str) -> dict[str, Any]:
    """A reviewer accepts or edits the draft; a rejection fails the run."""
    decision = request_approval(
        "draft",
        "text/plain",
        "Publish this?",
        actions=["accept", "edit-accept", "reject"],
        artifact_data=text,
    )
    final = decision.edited_artifact_data if decision.action == "edit-accept" else text
    return {"text": final, "action": decision.action}


@entrypoint()
def publish_flow(inputs: dict[str, Any]) -> dict[str, Any]:
    """Draft, review, then ask where to publish."""
    reviewed = review(draft(inputs.get("topic", "our release")).result()).result()
    channel = interrupt({"question": "Where should it go?", "options": ["blog", "newsletter"]})
    return {**reviewed, "channel": channel}


def workflows() -> dict[str, Pregel[Any, Any, Any, Any]]:
    """``{workflowId: graph}`` for ``wop-langgraph serve``."""
    return {WORKFLOW_ID: publish_flow}


if __name__ == "__main__":
    from wop_langgraph.examples._walkthrough import walk

    # First the approval in the `review` task, then the channel question of the entrypoint.
    walk(
        WORKFLOW_ID,
        publish_flow,
        {"topic": "version 2"},
        lambda record: {"action": "accept"} if record.kind == "approval" else "blog",
    )
